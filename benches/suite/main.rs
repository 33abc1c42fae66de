//! The BENCH.md suite: runs Kiln's workloads (benches/w*.dl) through the real `kiln`
//! binary and the peers' programs (benches/peers/) live, each variant in its own process,
//! and prints a table of figures, peak RSS, ratios and targets.
//!
//! `cargo bench --bench suite [-- W1 W8 ...]`
//!
//! Every workload checks its result before it is timed: a wrong result shows as FAILED
//! CHECK, never as a time. CPython (the machine's `python3`) runs W1 and W6 always; the
//! torch, NumPy and JAX peers run when `$KILN_PEERS_PYTHON` names a Python that imports
//! them, and their rows say "skipped" otherwise (docs/BENCHMARKS.md). Each run's peak
//! RSS comes from `wait4`'s rusage of its process. W3 also reports the compiled call's
//! minor page faults per call in steady state and its optimize + codegen time.

mod child;
mod outcome;
mod peers;
mod rows;
mod table;
mod w12;

use outcome::{Outcome, Sample};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The workload of a variant or sample name: `w10_eager` -> `W10`.
pub fn workload_of(name: &str) -> String {
    name.split('_').next().unwrap_or("").to_uppercase()
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let kiln = PathBuf::from(env!("CARGO_BIN_EXE_kiln"));
    let wanted: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a.starts_with('W'))
        .collect();
    let want = |w: &str| wanted.is_empty() || wanted.iter().any(|x| x == w);

    let mut kiln_results = BTreeMap::new();
    for v in rows::VARIANTS.iter().filter(|v| want(&workload_of(v.run))) {
        eprintln!("kiln: {} ({})", v.script, v.run);
        let mut cmd = Command::new(&kiln);
        cmd.arg(root.join("benches").join(v.script))
            .env("KILN_BENCH_ONLY", v.run)
            .current_dir(&root);
        match child::run(&mut cmd) {
            Ok(f) => outcome::outcomes(&f, v.samples, &mut kiln_results),
            Err(e) => {
                kiln_results.insert(v.run.to_string(), Outcome::Failed(e));
            }
        }
    }
    let pythons = peers::Pythons::find();
    let mut peer_results = BTreeMap::new();
    if want("W6") {
        let k = time_command(&kiln, &["-c", "print(1)"], 20);
        kiln_results.insert("w6_print".to_string(), k);
        let p = time_command(pythons.cpython(), &["-c", "pass"], 20);
        peer_results.insert("w6_python".to_string(), p);
    }
    peers::run_all(&root, &pythons, &want, &mut peer_results);
    let w3_extra = want("W3").then(|| w3_steady_state(&kiln));
    table::print(&kiln_results, &peer_results, &want);
    table::print_details(&kiln_results, &peer_results);
    if let Some(line) = w3_extra {
        println!("\n{line}");
    }
    if want("W11") {
        w11_table(&root, &kiln);
    }
}

/// W11, ordinary Python programs against CPython 3.11 live: benches/w11/run.sh times
/// each program interleaved with python3 and prints the ratios and their geometric mean.
/// With `KILN_BENCH_CG=1` and valgrind on the PATH it also prints run.sh's `CG=1` table:
/// callgrind instruction counts per program (noise-free figures for before/after).
fn w11_table(root: &Path, kiln: &Path) {
    println!("\nW11: benches/w11/*.py, Kiln vs CPython 3.11 (live)");
    if !run_w11(root, kiln, false) {
        println!("W11: benches/w11/run.sh failed (is python3 on the PATH?)");
    }
    if std::env::var_os("KILN_BENCH_CG").is_some_and(|v| v == "1") {
        println!("\nW11: callgrind instruction counts (KILN_BENCH_CG=1)");
        if !has_valgrind() {
            println!("W11: callgrind counts skipped (valgrind is not on the PATH)");
        } else if !run_w11(root, kiln, true) {
            println!("W11: CG=1 benches/w11/run.sh failed");
        }
    }
}

/// Runs benches/w11/run.sh on `kiln` (in its callgrind mode when `cg`); true on success.
fn run_w11(root: &Path, kiln: &Path, cg: bool) -> bool {
    let mut cmd = Command::new("bash");
    cmd.arg(root.join("benches/w11/run.sh")).env("KILN", kiln);
    if cg {
        cmd.env("CG", "1");
    } else {
        cmd.env_remove("CG");
    }
    cmd.status().is_ok_and(|s| s.success())
}

/// True when `valgrind --version` runs.
fn has_valgrind() -> bool {
    Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A compiled-GELU loop of `calls` calls (the W3 function and data).
fn w3_loop_script(calls: usize) -> String {
    format!(
        "def gelu(x):\n    return 0.5 * x * (1 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)))\n\
         x = linspace(-4, 4, 4 * 1024 * 1024)\ncgelu = compile(gelu)\n\
         for i in range({calls}):\n    y = cgelu(x)\n"
    )
}

/// Minor page faults of one `kiln -c` run (GNU time's %R), and its stderr.
fn faults_of(kiln: &Path, script: &str) -> Option<(f64, String)> {
    let o = Command::new("/usr/bin/time")
        .args(["-f", "minflt=%R"])
        .arg(kiln)
        .args(["-c", script])
        .env("KILN_LOG", "compile")
        .output()
        .ok()?;
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    let f = err
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("minflt="))?
        .trim()
        .parse()
        .ok()?;
    Some((f, err))
}

/// W3 compiled in steady state: (faults of 45 calls - faults of 5 calls) / 40, and the
/// optimize + codegen time KILN_LOG=compile reports.
fn w3_steady_state(kiln: &Path) -> String {
    let (few, many) = (5, 45);
    let (Some((a, _)), Some((b, log))) = (
        faults_of(kiln, &w3_loop_script(few)),
        faults_of(kiln, &w3_loop_script(many)),
    ) else {
        return "W3 compiled steady state: not measured (needs /usr/bin/time)".into();
    };
    let codegen = log
        .lines()
        .find_map(|l| l.split("(optimize + codegen ").nth(1))
        .and_then(|r| r.split(')').next())
        .unwrap_or("?");
    format!(
        "W3 compiled: {:.2} minor page faults per call in steady state (runs of {many} and \
         {few} calls differenced: a fresh 16 MB output per call would show ~4096, |x| < 1 is \
         run-to-run noise); optimize + codegen {codegen}",
        (b - a) / (many - few) as f64
    )
}

/// Wall time of a whole command (process start-up included), `runs` times after 3
/// warm-ups; the peak RSS is the largest of the runs'.
fn time_command(exe: &Path, args: &[&str], runs: usize) -> Outcome {
    let mut samples = Vec::new();
    let mut rss: f64 = 0.0;
    for i in 0..runs + 3 {
        let t0 = Instant::now();
        let r = child::run(Command::new(exe).args(args));
        let dt = t0.elapsed().as_secs_f64();
        match r {
            Ok(f) if f.success => rss = rss.max(f.peak_rss_mb),
            Ok(f) => return Outcome::Failed(format!("{} {args:?}: {}", exe.display(), f.status)),
            Err(e) => return Outcome::Failed(e),
        }
        if i >= 3 {
            samples.push(dt);
        }
    }
    samples.sort_by(f64::total_cmp);
    Outcome::Measured(Sample {
        median: samples[samples.len() / 2],
        min: samples[0],
        max: samples[samples.len() - 1],
        extra: BTreeMap::new(),
        peak_rss_mb: Some(rss),
    })
}
