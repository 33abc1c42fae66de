//! Property test: random tensor programs (elementwise ops, broadcasting, scalars,
//! reductions with fused elementwise producers, matmul, reshapes/transposes) generated as Kiln source, run eagerly and
//! compiled (captured on the first call, replayed on the second) through the Engine API;
//! the replayed results must equal eager's within 1e-5 relative (float64 programs, whose
//! compiled nodes run eager's float64 kernels: 1e-12). A meta-test proves the comparison
//! rejects a planted difference.

use kiln::Engine;
use proptest::prelude::*;

/// Shapes the generator tracks: a = [4, 5], b = [5], rows = [4, 1], cols = [1, 5].
#[derive(Clone, Copy, PartialEq, Debug)]
enum Sh {
    A,
    B,
    Rows,
    Cols,
}

fn bcast(x: Sh, y: Sh) -> Sh {
    match (x, y) {
        (Sh::B, Sh::B) => Sh::B,
        (Sh::Cols, Sh::Cols) | (Sh::Cols, Sh::B) | (Sh::B, Sh::Cols) => Sh::Cols,
        (Sh::Rows, Sh::Rows) => Sh::Rows,
        _ => Sh::A,
    }
}

/// One generated statement, chosen by `kind` on values `i`, `j` (indices mod count).
fn stmt(kind: u8, i: usize, j: usize, c: f64, vals: &mut Vec<Sh>) -> String {
    let n = vals.len();
    let (i, j) = (i % n, j % n);
    let (x, y) = (vals[i], vals[j]);
    let (expr, sh) = match kind % 11 {
        0 => (format!("v{i} + v{j}"), bcast(x, y)),
        1 => (format!("v{i} * v{j} - v{j}"), bcast(x, y)),
        2 => (format!("maximum(v{i}, v{j})"), bcast(x, y)),
        3 => {
            let f = ["tanh", "sigmoid", "relu", "sin", "neg"][j % 5];
            (format!("{f}(v{i})"), x)
        }
        4 => (format!("{c:.3} - v{i} / (v{j}.abs() + 1.0)"), bcast(x, y)),
        5 if x == Sh::A => (format!("v{i}.sum(dim=-1, keepdim=True)"), Sh::Rows),
        6 if x == Sh::A => (format!("v{i}.mean(dim=0, keepdim=True)"), Sh::Cols),
        7 if matches!(x, Sh::A | Sh::B | Sh::Cols) => (format!("tanh(v{i} @ w)"), x),
        8 if x == Sh::A => (format!("v{i}.reshape(5, 4).t() * 0.5"), Sh::A),
        9 if bcast(x, y) == Sh::A => (
            format!("(v{i} * v{j}).max(dim=-1, keepdim=True)[0]"),
            Sh::Rows,
        ),
        10 if bcast(x, y) == Sh::A => (
            format!("(v{i} - v{j}).abs().mean(-1, keepdim=True)"),
            Sh::Rows,
        ),
        _ => (format!("v{i} * {c:.3}"), x),
    };
    vals.push(sh);
    format!("    v{n} = {expr}\n")
}

/// The program of `steps` on float32 inputs (`dtype`: `""`) or others (`", dtype=float64"`).
fn program_of(steps: &[(u8, usize, usize, f64)], dtype: &str) -> String {
    let mut vals = vec![Sh::A, Sh::B];
    let mut body = String::from("@compile\ndef f(a, b, w):\n    v0 = a\n    v1 = b\n");
    for &(k, i, j, c) in steps {
        body.push_str(&stmt(k, i, j, c, &mut vals));
    }
    let last = vals.len() - 1;
    body.push_str(&format!("    return v{last}, v{last}.sum()\n\n"));
    body.push_str(&format!(
        "manual_seed(3)\na = randn(4, 5{dtype})\nb = randn(5{dtype})\nw = randn(5, 5{dtype}) * 0.5\n"
    ));
    body.push_str("r1 = f(a, b, w)\nr2 = f(a, b, w)\n");
    body.push_str("out = str([r2[0].tolist(), r2[1].tolist()])\n");
    body
}

fn program(steps: &[(u8, usize, usize, f64)]) -> String {
    program_of(steps, "")
}

fn run(src: &str, compile: bool) -> Result<(String, i64), String> {
    let mut e = Engine::new();
    e.set_compile(compile);
    e.set_output(Box::new(|_| {}));
    e.run_source(src, "p.dl")
        .map_err(|err| e.render_error(&err))?;
    let out = e
        .eval_as::<String>("out")
        .map_err(|err| e.render_error(&err))?;
    let hits = e
        .eval_as::<i64>("compile_stats(f)['hits']")
        .map_err(|err| e.render_error(&err))?;
    Ok((out, hits))
}

/// `f`'s fallback count in a compiled run of `src` (after `run` succeeded on it).
fn fallbacks(src: &str) -> i64 {
    let mut e = Engine::new();
    e.set_compile(true);
    e.set_output(Box::new(|_| {}));
    let ran = e.run_source(src, "p.dl").is_ok();
    let n = e.eval_as::<i64>("compile_stats(f)['fallbacks']");
    if ran {
        n.unwrap_or(-1)
    } else {
        -1
    }
}

fn numbers(s: &str) -> Vec<f64> {
    s.split(|c: char| c.is_whitespace() || "[](),".contains(c))
        .filter_map(|t| t.parse::<f64>().ok())
        .collect()
}

/// True when both outputs hold the same numbers within `rel` relative (NaN equal NaN).
fn agree(a: &str, b: &str, rel: f64) -> bool {
    let (x, y) = (numbers(a), numbers(b));
    x.len() == y.len()
        && x.iter().zip(y.iter()).all(|(p, q)| {
            (p.is_nan() && q.is_nan()) || p == q || (p - q).abs() <= rel * p.abs().max(q.abs())
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]
    #[test]
    fn random_programs_agree(steps in prop::collection::vec((0u8..11, 0usize..16, 0usize..16, -2.0f64..2.0), 1..10)) {
        let src = program(&steps);
        let eager = run(&src, false);
        let compiled = run(&src, true);
        prop_assert!(eager.is_ok(), "{}\n{:?}", src, eager);
        let ((e_out, _), (c_out, hits)) = match (eager, compiled) {
            (Ok(a), Ok(b)) => (a, b),
            (a, b) => return Err(TestCaseError::fail(format!("{src}\n{a:?}\n{b:?}"))),
        };
        prop_assert_eq!(hits, 1, "the second call must replay the graph\n{}", src);
        prop_assert!(agree(&e_out, &c_out, 1e-5), "{}\neager {}\ncompiled {}", src, e_out, c_out);
    }

    #[test]
    fn random_float64_programs_agree(steps in prop::collection::vec((0u8..11, 0usize..16, 0usize..16, -2.0f64..2.0), 1..10)) {
        let src = program_of(&steps, ", dtype=float64");
        let eager = run(&src, false);
        let compiled = run(&src, true);
        let ((e_out, _), (c_out, hits)) = match (eager, compiled) {
            (Ok(a), Ok(b)) => (a, b),
            (a, b) => return Err(TestCaseError::fail(format!("{src}\n{a:?}\n{b:?}"))),
        };
        prop_assert_eq!(hits, 1, "the second call must replay the graph\n{}", src);
        prop_assert_eq!(fallbacks(&src), 0, "float64 compiles without a fallback\n{}", src);
        prop_assert!(agree(&e_out, &c_out, 1e-12), "{}\neager {}\ncompiled {}", src, e_out, c_out);
    }
}

#[test]
fn comparison_rejects_a_planted_difference() {
    let src = program(&[(0, 0, 1, 0.5), (3, 2, 0, 0.0), (5, 3, 0, 0.0)]);
    let eager = run(&src, false).map(|r| r.0).unwrap_or_default();
    let compiled = run(&src, true).map(|r| r.0).unwrap_or_default();
    assert!(!numbers(&eager).is_empty());
    assert!(agree(&eager, &compiled, 1e-5));
    let planted: Vec<String> = numbers(&compiled)
        .iter()
        .enumerate()
        .map(|(k, v)| {
            if k == 0 {
                (v * (1.0 + 1e-4) + 1e-4).to_string()
            } else {
                v.to_string()
            }
        })
        .collect();
    assert!(!agree(&eager, &format!("[{}]", planted.join(", ")), 1e-5));
}
