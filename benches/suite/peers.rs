//! The peers, run live: the project's own programs in benches/peers/ (CPython for W1,
//! PyTorch eager and `torch.compile`, NumPy and JAX for the rest), each variant in its
//! own process. CPython is the machine's `python3`; the torch and jax peers need a
//! Python that imports them, named by `$KILN_PEERS_PYTHON` (docs/BENCHMARKS.md). Without
//! it their rows say so and are skipped; nothing is read from recorded figures.

use crate::child;
use crate::outcome::{self, Outcome};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What a peer program needs to run.
#[derive(Clone, Copy, PartialEq)]
enum Needs {
    /// The machine's python3 (no packages).
    CPython,
    /// `$KILN_PEERS_PYTHON` with torch and numpy.
    Torch,
    /// `$KILN_PEERS_PYTHON` with jax too.
    Jax,
}

/// One peer process: `python benches/peers/<program> <args>` reports `sample`.
struct Job {
    sample: &'static str,
    needs: Needs,
    program: &'static str,
    args: &'static [&'static str],
}

const fn job(
    sample: &'static str,
    needs: Needs,
    program: &'static str,
    args: &'static [&'static str],
) -> Job {
    Job {
        sample,
        needs,
        program,
        args,
    }
}

use Needs::{CPython, Jax, Torch};

const JOBS: &[Job] = &[
    job("w1_fib", CPython, "w1.py", &["w1_fib"]),
    job("w1_loop", CPython, "w1.py", &["w1_loop"]),
    job("w1_micrograd", CPython, "w1.py", &["w1_micrograd"]),
    job("w2_numpy", Torch, "w2_tiny.py", &["numpy"]),
    job("w2_torch_grad", Torch, "w2_tiny.py", &["torch_grad"]),
    job("w3_torch_eager", Torch, "w3_gelu.py", &["torch_eager"]),
    job("w3_torch_compile", Torch, "w3_gelu.py", &["torch_compile"]),
    job("w3_jax_jit", Jax, "w3_gelu.py", &["jax_jit"]),
    job("w4_torch_512", Torch, "w4_matmul.py", &["512"]),
    job("w4_torch_1024", Torch, "w4_matmul.py", &["1024"]),
    job(
        "w5_torch_eager_sgd",
        Torch,
        "w5_mlp.py",
        &["torch_eager", "sgd"],
    ),
    job(
        "w5_torch_eager_adam",
        Torch,
        "w5_mlp.py",
        &["torch_eager", "adam"],
    ),
    job(
        "w5_torch_compile_func_sgd",
        Torch,
        "w5_mlp.py",
        &["torch_compile_func", "sgd"],
    ),
    job(
        "w5_torch_compile_func_adam",
        Torch,
        "w5_mlp.py",
        &["torch_compile_func", "adam"],
    ),
    job("w7_torch_eager", Torch, "w7_rnn.py", &["torch_eager"]),
    job("w7_jax_jit_scan", Jax, "w7_rnn.py", &["jax_jit_scan"]),
    job("w8_torch_eager", Torch, "w8_gpt.py", &["torch_eager"]),
    job("w8_torch_compile", Torch, "w8_gpt.py", &["torch_compile"]),
    job("w8_jax_jit", Jax, "w8_gpt.py", &["jax_jit"]),
    job("w9_torch_eager", Torch, "w9_cnn.py", &["torch_eager"]),
    job("w9_torch_compile", Torch, "w9_cnn.py", &["torch_compile"]),
    job("w9_jax_jit", Jax, "w9_cnn.py", &["jax_jit"]),
    job(
        "w10_torch_eager",
        Torch,
        "w10_generate.py",
        &["torch_eager"],
    ),
    job(
        "w10_torch_compile",
        Torch,
        "w10_generate.py",
        &["torch_compile"],
    ),
    job("w10_jax_jit", Jax, "w10_generate.py", &["jax_jit"]),
];

/// The interpreters the peers run on.
pub struct Pythons {
    cpython: PathBuf,
    /// `$KILN_PEERS_PYTHON` when it imports torch, and whether it imports jax too.
    torch: Option<(PathBuf, bool)>,
    /// Why there is no torch python.
    why_not: String,
}

impl Pythons {
    pub fn find() -> Pythons {
        let cpython = real_python("python3");
        let (torch, why_not) = match std::env::var_os("KILN_PEERS_PYTHON") {
            None => (
                None,
                "skipped: no peers venv (set KILN_PEERS_PYTHON)".to_string(),
            ),
            Some(p) => {
                let py = PathBuf::from(p);
                if imports(&py, "torch, numpy") {
                    let jax = imports(&py, "jax");
                    (Some((py, jax)), String::new())
                } else {
                    let why = format!(
                        "skipped: KILN_PEERS_PYTHON={} does not import torch and numpy",
                        py.display()
                    );
                    (None, why)
                }
            }
        };
        if !why_not.is_empty() {
            println!("peers: torch/jax {why_not}");
        }
        Pythons {
            cpython,
            torch,
            why_not,
        }
    }

    /// The interpreter for `needs`, or why the job is skipped.
    fn for_job(&self, needs: Needs) -> Result<&Path, String> {
        match (needs, &self.torch) {
            (CPython, _) => Ok(&self.cpython),
            (_, None) => Err(self.why_not.clone()),
            (Jax, Some((_, false))) => Err("skipped: the peers venv has no jax".into()),
            (_, Some((py, _))) => Ok(py),
        }
    }

    /// `python3 -c pass` (W6's peer).
    pub fn cpython(&self) -> &Path {
        &self.cpython
    }
}

/// The interpreter `python3` resolves to (`sys.executable`): a version manager's shim
/// (pyenv's is a shell script) would add its own start-up to every run.
fn real_python(name: &str) -> PathBuf {
    Command::new(name)
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|p| !p.is_empty())
        .map_or_else(|| PathBuf::from(name), PathBuf::from)
}

/// Whether `py` can import `modules` ("torch, numpy").
fn imports(py: &Path, modules: &str) -> bool {
    Command::new(py)
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs every peer job whose workload is wanted; outcomes by sample name.
pub fn run_all(
    root: &Path,
    pythons: &Pythons,
    want: &dyn Fn(&str) -> bool,
    out: &mut BTreeMap<String, Outcome>,
) {
    for j in JOBS.iter().filter(|j| want(&crate::workload_of(j.sample))) {
        run_one(root, pythons, j, &[j.sample], out);
    }
    if want("W12") {
        let j = job("w12_torch", Torch, "w12_ops.py", &[]);
        run_one(root, pythons, &j, crate::w12::TORCH, out);
    }
}

/// Runs one peer process that reports `samples`.
fn run_one(
    root: &Path,
    pythons: &Pythons,
    j: &Job,
    samples: &[&str],
    out: &mut BTreeMap<String, Outcome>,
) {
    let py = match pythons.for_job(j.needs) {
        Ok(py) => py,
        Err(why) => {
            for s in samples {
                out.insert(s.to_string(), Outcome::Skipped(why.clone()));
            }
            return;
        }
    };
    eprintln!("peers: {} {} {}", py.display(), j.program, j.args.join(" "));
    let mut cmd = Command::new(py);
    cmd.arg(root.join("benches/peers").join(j.program))
        .args(j.args)
        .current_dir(root);
    match child::run(&mut cmd) {
        Ok(f) => outcome::outcomes(&f, samples, out),
        Err(e) => {
            for s in samples {
                out.insert(s.to_string(), Outcome::Failed(e.clone()));
            }
        }
    }
}
