//! The BENCH.md suite: runs Kiln's workloads (benches/w*.dl) through the real `kiln`
//! binary, runs or reads the peers' figures, and prints a table of ratios and targets.
//!
//! `cargo bench -p kiln-cli --bench suite [-- W1 W2 ...]`
//!
//! Peers: W1 (plain CPython) always runs live. When a venv with torch exists
//! (`$PEERS_VENV`, default `~/.cache/kiln-peers/venv`, e.g. the one
//! `shared/bench/peers/setup.sh` builds), the torch peers run live too: W3 torch eager
//! and W4 torch matmul (benches/peers/torch_live.py), W5 torch eager and
//! torch.compile(func) SGD/Adam (the peers' own w5_mlp.py), W7 torch eager (w7_rnn.py)
//! and, when the venv has jax too, W3 jax.jit and torch.compile (w3_gelu.py) and W7
//! jax.jit lax.scan; the table says "live". Every other figure is the one recorded on
//! this machine type in `shared/bench/peers/results/` ("recorded"). An absolute target
//! (BENCH.md's figure for the reference machine) against a live peer is judged as a
//! ratio, as BENCH.md asks: the target over the recorded peer figure (W7 compiled:
//! 10,000 / 10,271 = 0.974x of live jax.jit). W3 also reports the compiled call's minor page faults per call in
//! steady state and its optimize + codegen time.

use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// One timed variant: median/min/max seconds plus extra figures (`us_per_op=...`).
#[derive(Debug, Clone, Default)]
struct Sample {
    median: f64,
    min: f64,
    max: f64,
    extra: BTreeMap<String, f64>,
}

/// Which figure of a sample a row compares, and which direction is better.
#[derive(Clone, Copy)]
enum Metric {
    /// Seconds, lower is better.
    Seconds,
    /// An extra key, lower is better (us/op, ms).
    Lower(&'static str),
    /// An extra key, higher is better (GFLOP/s, steps/s).
    Higher(&'static str),
}

/// A row of the table: Kiln's variant, the peer it is compared with, and the target.
struct Row {
    workload: &'static str,
    kiln: &'static str,
    peer_file: &'static str,
    peer: &'static str,
    metric: Metric,
    /// The target as a ratio of the peer's figure (time ratios: Kiln/peer <= target;
    /// throughput ratios: Kiln/peer >= target), or an absolute bound when `absolute`.
    target: f64,
    absolute: bool,
}

const ROWS: &[Row] = &[
    row(
        "W1",
        "w1_fib",
        "W1_live",
        "fib(27)",
        Metric::Seconds,
        0.5,
        false,
    ),
    row(
        "W1",
        "w1_loop",
        "W1_live",
        "float loop 3M (in function)",
        Metric::Seconds,
        0.5,
        false,
    ),
    row(
        "W1",
        "w1_micrograd",
        "W1_live",
        "micrograd",
        Metric::Seconds,
        0.5,
        false,
    ),
    row(
        "W2",
        "w2_eager",
        "W2",
        "numpy 16xf32",
        Metric::Lower("us_per_op"),
        0.25,
        true,
    ),
    row(
        "W2",
        "w2_grad",
        "W2",
        "torch requires_grad",
        Metric::Lower("us_per_op"),
        0.5,
        true,
    ),
    row(
        "W3",
        "w3_compiled",
        "W3",
        "jax.jit literal",
        Metric::Lower("ms"),
        1.3,
        true,
    ),
    row(
        "W3",
        "w3_compiled",
        "W3",
        "torch.compile (inductor) literal",
        Metric::Lower("ms"),
        1.0,
        false,
    ),
    row(
        "W3",
        "w3_eager",
        "W3_malloc_notrim",
        "torch eager literal",
        Metric::Lower("ms"),
        1.0,
        false,
    ),
    row(
        "W4",
        "w4_matmul_512",
        "W4",
        "torch (MKL) n=512",
        Metric::Higher("GFLOPs"),
        0.9,
        false,
    ),
    row(
        "W4",
        "w4_matmul_1024",
        "W4",
        "torch (MKL) n=1024",
        Metric::Higher("GFLOPs"),
        0.9,
        false,
    ),
    row(
        "W5",
        "w5_compiled_sgd",
        "W5_torch_compile_func_sgd",
        "sgd",
        Metric::Higher("steps_per_s"),
        2000.0,
        true,
    ),
    row(
        "W5",
        "w5_compiled_adam",
        "W5_torch_compile_func_adam",
        "adam",
        Metric::Higher("steps_per_s"),
        1200.0,
        true,
    ),
    row(
        "W5",
        "w5_eager_sgd",
        "W5_torch_eager_sgd",
        "sgd",
        Metric::Higher("steps_per_s"),
        1.0,
        false,
    ),
    row(
        "W5",
        "w5_eager_adam",
        "W5_torch_eager_adam",
        "adam",
        Metric::Higher("steps_per_s"),
        1.0,
        false,
    ),
    row(
        "W6",
        "w6_print",
        "W6",
        "python -c pass",
        Metric::Seconds,
        0.005,
        true,
    ),
    row(
        "W7",
        "w7_eager",
        "W7_torch_eager",
        "torch_eager",
        Metric::Higher("seq_per_s"),
        2500.0,
        true,
    ),
    row(
        "W7",
        "w7_compiled",
        "W7_jax_jit_scan",
        "jax_jit_scan",
        Metric::Higher("seq_per_s"),
        10000.0,
        true,
    ),
    row(
        "W9",
        "w9_eager",
        "W9_torch_eager",
        "torch_eager",
        Metric::Higher("steps_per_s"),
        1.0,
        false,
    ),
    row(
        "W9",
        "w9_compiled",
        "W9_torch_compile",
        "torch_compile",
        Metric::Higher("steps_per_s"),
        1.0,
        false,
    ),
];

#[allow(clippy::too_many_arguments)]
const fn row(
    workload: &'static str,
    kiln: &'static str,
    peer_file: &'static str,
    peer: &'static str,
    metric: Metric,
    target: f64,
    absolute: bool,
) -> Row {
    Row {
        workload,
        kiln,
        peer_file,
        peer,
        metric,
        target,
        absolute,
    }
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
    for script in workload_scripts(&root.join("benches")) {
        let name = script.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let workload = name.split('_').next().unwrap_or("").to_uppercase();
        if want(&workload) {
            run_kiln_script(&kiln, &root, &script, &mut kiln_results);
        }
    }
    if want("W6") {
        let s = time_command(&kiln, &["-c", "print(1)"], 20);
        kiln_results.insert("w6_print".to_string(), s);
    }

    let peers = Peers::prepare(&root);
    let mut peer_files = BTreeMap::new();
    if want("W1") {
        if let Some(f) = peers.run_live_w1() {
            peer_files.insert("W1_live".to_string(), f);
        }
    }
    peers.run_live_torch(&root, &want, &mut peer_files);
    let w3_extra = want("W3").then(|| w3_steady_state(&kiln));
    print_table(&kiln_results, &peers, &mut peer_files, &want);
    if let Some(line) = w3_extra {
        println!("\n{line}");
    }
    if want("W11") {
        w11_table(&root, &kiln);
    }
}

/// W11, ordinary Python programs against CPython 3.11 live: benches/w11/run.sh times
/// each program interleaved with python3 and prints the ratios and their geometric mean
/// (`CG=1` in the environment: callgrind instruction counts instead).
fn w11_table(root: &Path, kiln: &Path) {
    println!("\nW11: benches/w11/*.py, Kiln vs CPython 3.11 (live)");
    let ok = Command::new("bash")
        .arg(root.join("benches/w11/run.sh"))
        .env("KILN", kiln)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        println!("W11: benches/w11/run.sh failed (is python3 on the PATH?)");
    }
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

/// benches/w*.dl, sorted by name.
fn workload_scripts(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.retain(|p| {
        p.extension().is_some_and(|e| e == "dl")
            && p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with('w'))
    });
    v.sort();
    v
}

/// Runs one workload script and collects its `BENCH` lines.
fn run_kiln_script(kiln: &Path, root: &Path, script: &Path, out: &mut BTreeMap<String, Sample>) {
    eprintln!("kiln: running {}", script.display());
    let res = Command::new(kiln).arg(script).current_dir(root).output();
    let Ok(o) = res else {
        eprintln!("  could not start {}", kiln.display());
        return;
    };
    let stdout = String::from_utf8_lossy(&o.stdout);
    for line in stdout.lines() {
        if let Some((name, s)) = parse_bench_line(line) {
            out.insert(name, s);
        } else if !line.trim().is_empty() {
            eprintln!("  {line}");
        }
    }
    if !o.status.success() {
        eprintln!(
            "  FAILED ({}):\n{}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// `BENCH name median=.. min=.. max=.. k=v ...` -> (name, Sample).
fn parse_bench_line(line: &str) -> Option<(String, Sample)> {
    let mut it = line.strip_prefix("BENCH ")?.split_whitespace();
    let name = it.next()?.to_string();
    let mut s = Sample::default();
    for kv in it {
        let (k, v) = kv.split_once('=')?;
        let v: f64 = v.parse().ok()?;
        match k {
            "median" => s.median = v,
            "min" => s.min = v,
            "max" => s.max = v,
            _ => {
                s.extra.insert(k.to_string(), v);
            }
        }
    }
    Some((name, s))
}

/// Wall time of a whole command (process start-up included), `runs` times after 3 warm-ups.
fn time_command(exe: &Path, args: &[&str], runs: usize) -> Sample {
    let mut samples = Vec::new();
    for i in 0..runs + 3 {
        let t0 = Instant::now();
        let ok = Command::new(exe)
            .args(args)
            .output()
            .is_ok_and(|o| o.status.success());
        let dt = t0.elapsed().as_secs_f64();
        if !ok {
            eprintln!("  {} {:?} failed", exe.display(), args);
            return Sample::default();
        }
        if i >= 3 {
            samples.push(dt);
        }
    }
    samples.sort_by(f64::total_cmp);
    Sample {
        median: samples[samples.len() / 2],
        min: samples[0],
        max: samples[samples.len() - 1],
        extra: BTreeMap::new(),
    }
}

/// The peers' programs (copied to a scratch dir so their results can be written).
struct Peers {
    dir: Option<PathBuf>,
    recorded: PathBuf,
}

impl Peers {
    fn prepare(root: &Path) -> Peers {
        let src = std::env::var_os("KILN_PEERS_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join("../shared/bench/peers"));
        let scratch = root.join("target/bench-peers");
        let _ = std::fs::remove_dir_all(&scratch);
        if !src.is_dir() {
            eprintln!(
                "peers: no peer programs at {} (set KILN_PEERS_DIR to a copy of the \
                 benchmark peers, docs/BENCHMARKS.md); only Kiln's own figures are shown",
                src.display()
            );
            return Peers {
                dir: None,
                recorded: src.join("results"),
            };
        }
        let copied = Command::new("cp")
            .arg("-r")
            .arg(&src)
            .arg(&scratch)
            .status()
            .is_ok_and(|s| s.success());
        if copied {
            let _ = Command::new("chmod")
                .args(["-R", "u+w"])
                .arg(&scratch)
                .status();
        }
        Peers {
            dir: copied.then_some(scratch),
            recorded: src.join("results"),
        }
    }

    /// W1 needs only CPython: run it live with the machine's python3.
    fn run_live_w1(&self) -> Option<Json> {
        let dir = self.dir.as_ref()?;
        eprintln!("peers: running w1_bench.py with python3 (live)");
        let ok = Command::new("python3")
            .arg("w1_bench.py")
            .arg("live")
            .env("BENCH_MAX_WAIT", "2")
            .current_dir(dir)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("  python3 w1_bench.py failed; using recorded W1 figures");
            return None;
        }
        read_json(&dir.join("results/W1_live_t2.json"))
    }

    /// The python of a venv with torch (`$PEERS_VENV` or ~/.cache/kiln-peers/venv).
    fn torch_python() -> Option<PathBuf> {
        let venv = std::env::var_os("PEERS_VENV")
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/kiln-peers/venv"))
            })?;
        let py = venv.join("bin/python");
        Self::imports(&py, "torch").then_some(py)
    }

    /// Whether `py` can import `module`.
    fn imports(py: &Path, module: &str) -> bool {
        Command::new(py)
            .args(["-c", &format!("import {module}")])
            .output()
            .is_ok_and(|o| o.status.success())
    }

    /// Runs `py args` in the peers' scratch dir (2 threads, short quiet-wait) and reads
    /// the results file it writes.
    fn run_py(&self, py: &Path, args: &[&Path], result: &str) -> Option<Json> {
        let dir = self.dir.as_ref()?;
        eprintln!("peers: running {args:?} with {} (live)", py.display());
        let ok = Command::new(py)
            .args(args)
            .env("BENCH_MAX_WAIT", "2")
            .env("BENCH_THREADS", "2")
            .current_dir(dir)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("  failed; using recorded figures");
            return None;
        }
        read_json(&dir.join("results").join(result))
    }

    /// The torch peers, live, filed under the peer files the table's rows name.
    fn run_live_torch(
        &self,
        root: &Path,
        want: &dyn Fn(&str) -> bool,
        out: &mut BTreeMap<String, Json>,
    ) {
        let Some(py) = Self::torch_python() else {
            eprintln!(
                "peers: no venv with torch ($PEERS_VENV); torch figures are the recorded ones"
            );
            return;
        };
        let script = root.join("benches/peers/torch_live.py");
        let (w3, w4) = (Path::new("W3"), Path::new("W4"));
        let mut jobs: Vec<(&str, Vec<&Path>, String)> = Vec::new();
        if want("W3") {
            jobs.push((
                "W3_malloc_notrim",
                vec![&script, w3],
                "W3_torch_live_t2.json".into(),
            ));
            // With jax too, the peers' own W3 program: live jax.jit and torch.compile.
            if Self::imports(&py, "jax") {
                jobs.push(("W3", vec![Path::new("w3_gelu.py")], "W3_t2.json".into()));
            }
        }
        if want("W4") {
            jobs.push(("W4", vec![&script, w4], "W4_torch_live_t2.json".into()));
        }
        let w5 = Path::new("w5_mlp.py");
        let eager = Path::new("torch_eager");
        let (sgd, adam) = (Path::new("sgd"), Path::new("adam"));
        let compiled = Path::new("torch_compile_func");
        if want("W5") {
            for (opt, name) in [(sgd, "sgd"), (adam, "adam")] {
                for (mode, m) in [(eager, "torch_eager"), (compiled, "torch_compile_func")] {
                    let file = format!("W5_{m}_{name}");
                    jobs.push(("", vec![w5, mode, opt], format!("{file}_t2.json")));
                }
            }
        }
        let (w7, scan) = (Path::new("w7_rnn.py"), Path::new("jax_jit_scan"));
        if want("W7") {
            jobs.push(("", vec![w7, eager], "W7_torch_eager_t2.json".into()));
            if Self::imports(&py, "jax") {
                jobs.push(("", vec![w7, scan], "W7_jax_jit_scan_t2.json".into()));
            }
        }
        for (key, args, result) in jobs {
            if let Some(j) = self.run_py(&py, &args, &result) {
                let key = if key.is_empty() {
                    result.trim_end_matches("_t2.json").to_string()
                } else {
                    key.to_string()
                };
                out.insert(key, j);
            }
        }
    }

    /// A recorded results file (`W2` -> results/W2_t2.json).
    fn recorded(&self, file: &str) -> Option<Json> {
        if file == "W6" {
            return read_json(&self.recorded.join("W6.json"));
        }
        let name = if file == "W1_live" { "W1_pyenv" } else { file };
        read_json(&self.recorded.join(format!("{name}_t2.json")))
    }
}

fn read_json(p: &Path) -> Option<Json> {
    serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok()
}

/// Finds the record whose name contains `needle` and returns it as a Sample.
fn peer_sample(file: &Json, needle: &str) -> Option<Sample> {
    if let Some(results) = file.get("results").and_then(Json::as_array) {
        // hyperfine JSON (W6)
        let r = results
            .iter()
            .find(|r| r["command"].as_str().is_some_and(|c| c.contains(needle)))?;
        return Some(Sample {
            median: r["median"].as_f64()?,
            min: r["min"].as_f64()?,
            max: r["max"].as_f64()?,
            extra: BTreeMap::new(),
        });
    }
    let recs = file.get("records")?.as_array()?;
    let r = recs
        .iter()
        .find(|r| r["name"].as_str().is_some_and(|n| n.contains(needle)))?;
    let obj = r.as_object()?;
    let extra = obj
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
        .collect();
    Some(Sample {
        median: r["median"].as_f64().unwrap_or(f64::NAN),
        min: r["min"].as_f64().unwrap_or(f64::NAN),
        max: r["max"].as_f64().unwrap_or(f64::NAN),
        extra,
    })
}

fn figure(s: &Sample, m: Metric) -> Option<f64> {
    match m {
        Metric::Seconds => Some(s.median),
        Metric::Lower(k) | Metric::Higher(k) => s.extra.get(k).copied(),
    }
}

fn print_table(
    kiln: &BTreeMap<String, Sample>,
    peers: &Peers,
    live: &mut BTreeMap<String, Json>,
    want: &dyn Fn(&str) -> bool,
) {
    println!();
    println!(
        "| workload | kiln variant | kiln (median [min, max]) | peer | peer figure | ratio | target | met |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for r in ROWS.iter().filter(|r| want(r.workload)) {
        let k = kiln.get(r.kiln);
        let kf = k.and_then(|s| figure(s, r.metric));
        let (pf, src) = match live.get(r.peer_file) {
            Some(j) => (peer_sample(j, r.peer), "live"),
            None => (
                peers
                    .recorded(r.peer_file)
                    .and_then(|j| peer_sample(&j, r.peer)),
                "recorded",
            ),
        };
        let pfig = pf.as_ref().and_then(|s| figure(s, r.metric));
        let ratio = match (kf, pfig) {
            (Some(a), Some(b)) if b != 0.0 => Some(a / b),
            _ => None,
        };
        // An absolute target against a live peer: the target's ratio to the recorded
        // peer figure (BENCH.md compares ratios; the recorded machine is not this one).
        let recorded = peers
            .recorded(r.peer_file)
            .and_then(|j| peer_sample(&j, r.peer))
            .and_then(|s| figure(&s, r.metric));
        let live_target = match (src, recorded) {
            ("live", Some(rec)) if r.absolute && rec != 0.0 => Some(r.target / rec),
            _ => None,
        };
        let met = kf.map(|v| meets(r, v, ratio, live_target));
        println!(
            "| {} | {} | {} | {} ({}) | {} | {} | {} | {} |",
            r.workload,
            r.kiln,
            k.map_or("not run".into(), |s| show(s, r.metric)),
            r.peer,
            src,
            pfig.map_or("-".into(), |v| format!("{v:.4}")),
            ratio.map_or("-".into(), |v| format!("{v:.3}x")),
            target_text(r, live_target),
            match met {
                Some(true) => "yes",
                Some(false) => "NO",
                None => "-",
            }
        );
    }
}

/// Whether Kiln's figure `v` meets the row's target: its ratio to the peer when the
/// target is relative, or when it is absolute and the peer ran live (`live_target`:
/// the absolute target over the recorded peer figure); else the absolute figure.
fn meets(r: &Row, v: f64, ratio: Option<f64>, live_target: Option<f64>) -> bool {
    let higher = matches!(r.metric, Metric::Higher(_));
    let at_least = |a: f64, b: f64| if higher { a >= b } else { a <= b };
    match (r.absolute, live_target) {
        (true, None) => at_least(v, r.target),
        (true, Some(t)) => ratio.is_some_and(|q| at_least(q, t)),
        (false, _) => ratio.is_some_and(|q| at_least(q, r.target)),
    }
}

fn show(s: &Sample, m: Metric) -> String {
    match m {
        Metric::Seconds => format!("{:.4} s [{:.4}, {:.4}]", s.median, s.min, s.max),
        Metric::Lower(k) | Metric::Higher(k) => match s.extra.get(k) {
            Some(v) => format!(
                "{v:.4} {k} ({:.4} s [{:.4}, {:.4}])",
                s.median, s.min, s.max
            ),
            None => format!("{:.4} s (no {k})", s.median),
        },
    }
}

fn target_text(r: &Row, live_target: Option<f64>) -> String {
    let unit = match r.metric {
        Metric::Seconds => "s",
        Metric::Lower(k) | Metric::Higher(k) => k,
    };
    let rel = if matches!(r.metric, Metric::Higher(_)) {
        ">="
    } else {
        "<="
    };
    if let (true, Some(t)) = (r.absolute, live_target) {
        format!("{rel} {} {unit} ({rel} {t:.3}x live peer)", r.target)
    } else if r.absolute {
        format!("{rel} {} {unit}", r.target)
    } else {
        format!("{rel} {}x peer", r.target)
    }
}
