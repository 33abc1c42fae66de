//! Differential tests of `@compile`: every tests/compile/*.dl program runs eagerly
//! (compilation off) and compiled; the printed outputs must agree token by token, numbers
//! within 1e-5 relative (programs print full-precision `.tolist()` values). Compiled
//! runs must really have captured and replayed graphs (checked through each compiled
//! global's cache), unless the file says `allow-fallback`; the model zoo (tests/zoo:
//! whole train steps of small models) runs the same way. A line
//! `# expect-captures: NAME N` pins how many captures NAME makes (symbolic shapes); a
//! line `# grad: A, B` appends the `.grad` of globals A and B after the run, so the
//! gradients compiled autograd computed are compared with eager's too. A line
//! `# rel: X` tightens the tolerance to X (float64 programs use 1e-12).

mod common;

use kiln::compile::capture::cache::EntryKind;
use kiln::{Engine, Value};
use std::path::{Path, PathBuf};

/// The programs of tests/compile and of the model zoo, tests/zoo (`KILN_DIFF_ONLY=NAME`
/// keeps those whose file name contains NAME, for working on one).
fn programs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out: Vec<PathBuf> = ["tests/compile", "tests/zoo"]
        .iter()
        .flat_map(|d| {
            std::fs::read_dir(root.join(d))
                .map(|rd| rd.flatten().map(|e| e.path()).collect::<Vec<_>>())
                .unwrap_or_default()
        })
        .collect();
    out.retain(|p| p.extension().is_some_and(|x| x == "dl"));
    if let Ok(only) = std::env::var("KILN_DIFF_ONLY") {
        out.retain(|p| {
            p.file_name()
                .is_some_and(|f| f.to_string_lossy().contains(&only))
        });
    }
    out.sort();
    out
}

/// (name, captures, hits, graph versions, eager versions) of each compiled global.
fn compiled_globals(e: &Engine) -> Vec<(String, u64, u64, usize, usize)> {
    let mut out = Vec::new();
    for (name, v) in e.globals() {
        if let Value::Compiled(cf) = &v {
            let c = cf.cache.borrow();
            let graphs = c
                .entries
                .iter()
                .filter(|x| matches!(x.kind, EntryKind::Graph(_)))
                .count();
            let eager = c.entries.len() - graphs;
            out.push((name, c.stats.captures, c.stats.hits, graphs, eager));
        }
    }
    out
}

/// Splits output into tokens: numbers and other runs, separated by spaces and brackets.
fn tokens(s: &str) -> Vec<&str> {
    s.split(|c: char| c.is_whitespace() || "[](),".contains(c))
        .filter(|t| !t.is_empty())
        .collect()
}

/// A program's tolerances: relative (its `# rel: X` line, else 1e-5) and absolute (its
/// `# abs: X` line, else 0: for values that are small differences of numbers near 1,
/// whose float32 rounding is absolute, not relative to the result).
#[derive(Clone, Copy)]
struct Tol {
    rel: f64,
    abs: f64,
}

fn directive(src: &str, key: &str) -> Option<f64> {
    src.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().parse().ok())
}

fn tolerance(src: &str) -> Tol {
    Tol {
        rel: directive(src, "# rel:").unwrap_or(1e-5),
        abs: directive(src, "# abs:").unwrap_or(0.0),
    }
}

fn rel(rel: f64) -> Tol {
    Tol { rel, abs: 0.0 }
}

/// True when `a` and `b` have the same tokens, numbers equal within the tolerances.
fn agree(a: &str, b: &str, tol: Tol) -> bool {
    let (ta, tb) = (tokens(a), tokens(b));
    ta.len() == tb.len()
        && ta
            .iter()
            .zip(tb.iter())
            .all(|(x, y)| match (x.parse::<f64>(), y.parse::<f64>()) {
                (Ok(p), Ok(q)) => {
                    let d = (p - q).abs();
                    d <= tol.rel * p.abs().max(q.abs()) || d <= tol.abs || p == q
                }
                _ => x == y,
            })
}

#[test]
fn comparison_tolerance() {
    assert!(agree("[1.0, 2.5] x", "[1.000000001, 2.5] x", rel(1e-5)));
    assert!(!agree("[1.0, 2.5]", "[1.0001, 2.5]", rel(1e-5)));
    assert!(!agree("a 1.0", "b 1.0", rel(1e-5)));
    assert!(!agree("1.0", "1.0 2.0", rel(1e-5)));
    let tight = tolerance("# rel: 1e-12\n");
    assert_eq!((tight.rel, tight.abs), (1e-12, 0.0));
    assert!(!agree("0.1", "0.10000000001", tight));
    let floor = tolerance("# abs: 1e-7\n");
    assert_eq!((floor.rel, floor.abs), (1e-5, 1e-7));
    assert!(agree("-0.00188613", "-0.00188616", floor));
    assert!(!agree("-0.00188613", "-0.00188616", rel(1e-5)));
    assert!(!agree("-0.0018", "-0.0019", floor));
    let plain = tolerance("print(1)\n");
    assert_eq!((plain.rel, plain.abs), (1e-5, 0.0));
}

#[test]
fn compiled_programs_match_eager() {
    let progs = programs();
    assert!(
        progs.len() >= 4 || std::env::var("KILN_DIFF_ONLY").is_ok(),
        "tests/compile has {} programs",
        progs.len()
    );
    for p in progs {
        let (_, eager) = run(&p, false);
        let (e, compiled) = run(&p, true);
        let src = std::fs::read_to_string(&p).unwrap_or_default();
        assert!(
            agree(&eager, &compiled, tolerance(&src)),
            "{}: compiled output differs:\n{eager}\n---\n{compiled}",
            p.display()
        );
        assert!(!eager.contains("Error"), "{}: {eager}", p.display());
        let globals = compiled_globals(&e);
        assert!(!globals.is_empty(), "{}: no compiled function", p.display());
        for (name, captures, _, _, _) in &globals {
            let want = format!("# expect-captures: {name} ");
            if let Some(line) = src.lines().find(|l| l.starts_with(&want)) {
                let n: u64 = line[want.len()..].trim().parse().unwrap_or(u64::MAX);
                assert_eq!(*captures, n, "{}: {name} captures", p.display());
            }
        }
        if src.contains("allow-fallback") {
            continue;
        }
        for (name, captures, hits, graphs, eager_n) in globals {
            assert!(
                captures >= 1 && graphs >= 1,
                "{}: {name} never captured",
                p.display()
            );
            assert_eq!(eager_n, 0, "{}: {name} fell back to eager", p.display());
            assert!(hits >= 1, "{}: {name} never replayed", p.display());
        }
    }
}

/// The whole suite under the eager check (`KILN_CHECK=1`): every replayed call's
/// returned tensors, in-place writes and `.grad`s equal an eager rerun's, and the
/// program's output (eager's, under the check) is unchanged. A program marked
/// `no-eager-check` prints values that legitimately differ between summation orders.
#[test]
fn programs_pass_the_eager_check() {
    for p in programs() {
        let src = std::fs::read_to_string(&p).unwrap_or_default();
        if src.contains("no-eager-check") {
            continue;
        }
        let (_, eager) = common::run_captured(None, Some(&p), false);
        let (e, checked) = common::run_captured_with(None, Some(&p), |e| {
            e.set_compile(true);
            e.set_compile_check(true);
        });
        assert!(
            !checked.contains("@compile check"),
            "{}: {checked}",
            p.display()
        );
        assert!(
            agree(&eager, &checked, tolerance(&src)),
            "{}: output under the check differs:\n{eager}\n---\n{checked}",
            p.display()
        );
        let replayed = compiled_globals(&e).iter().any(|g| g.2 >= 1);
        let may_fall_back = src.contains("allow-fallback");
        assert!(
            replayed || may_fall_back,
            "{}: nothing replayed",
            p.display()
        );
    }
}

/// The harness detects a planted difference: a program whose compiled version would
/// print something else must fail the comparison. We plant it by running the same
/// program against a modified copy (one constant changed inside the compiled body).
#[test]
fn harness_detects_a_planted_difference() {
    let src = "@compile\ndef f(x):\n    return x * 2.0 + 1.0\n\nprint(f(ones(3)).tolist())\nprint(f(ones(3)).tolist())\n";
    let planted = src.replace("+ 1.0", "+ 1.0001");
    let dir = std::env::temp_dir().join(format!("kiln_plant_{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let (a, b) = (dir.join("a.dl"), dir.join("b.dl"));
    let ok = std::fs::write(&a, src).is_ok() && std::fs::write(&b, planted).is_ok();
    assert!(ok);
    let (_, eager) = run(&a, false);
    let (_, compiled_same) = run(&a, true);
    let (_, compiled_planted) = run(&b, true);
    assert!(agree(&eager, &compiled_same, rel(1e-5)));
    assert!(
        !agree(&eager, &compiled_planted, rel(1e-5)),
        "a 3e-5 relative change must be detected"
    );
}

/// Runs a program; returns the engine (for inspection) and its output, followed by the
/// gradients the program's `# grad:` line names.
fn run(path: &Path, compile: bool) -> (Engine, String) {
    let (mut e, mut out) = common::run_captured(None, Some(path), compile);
    let src = std::fs::read_to_string(path).unwrap_or_default();
    let names = src.lines().filter_map(|l| l.strip_prefix("# grad:"));
    for name in names.flat_map(|l| l.split(',')).map(str::trim) {
        let g = common::text(&mut e, &format!("str({name}.grad.tolist())"));
        out.push_str(&format!("{name}.grad = {g}\n"));
    }
    (e, out)
}

#[test]
fn grad_lines_append_gradients() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compile/grad_mlp.dl");
    let (_, out) = run(&p, true);
    assert!(out.contains("W1.grad = [["), "{out}");
}
