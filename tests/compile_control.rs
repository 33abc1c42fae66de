//! Control flow inside `@compile`: one capture serves every branch outcome and loop
//! trip count (checked through `compile_stats`), values against hand-derived results,
//! compiled output (prints) identical to eager at every call, the untaken side's
//! effects refused, and IR snapshots of a branch and a loop
//! (tests/compile/snapshots/*.ir, `KILN_BLESS=1` rewrites them).

mod common;

use common::{int, snapshot, stats};
use kiln::Engine;

const BRANCH: &str = "@compile\ndef f(x):\n    if x.mean() > 0.5:\n        y = x * 2.0\n    elif x.mean() > 0.0:\n        y = x + 100.0\n    else:\n        y = -x\n    return y + 1.0\n\n\
                      out = []\nfor v in ([1.0, 2.0], [0.25, 0.125], [-1.0, -2.0], [3.0, 1.0]):\n    out.append(f(tensor(v)).tolist())\nprint(out)\n";

#[test]
fn every_branch_outcome_under_one_capture() {
    let (mut e, out) = run(BRANCH, true);
    // By hand: [1,2] -> 2x+1; [0.25,0.125] -> x+101; [-1,-2] -> -x+1; [3,1] -> 2x+1.
    assert_eq!(
        out.trim(),
        "[[3.0, 5.0], [101.25, 101.125], [2.0, 3.0], [7.0, 3.0]]"
    );
    assert_eq!(stats(&mut e, "f"), [1, 3, 0, 1]);
}

#[test]
fn while_loop_runs_a_data_dependent_trip_count_under_one_capture() {
    let src = "@compile\ndef newton(a):\n    x = a.clone()\n    while (x * x - a).abs().max() > 1e-5:\n        x = 0.5 * (x + a / x)\n    return x\n\n\
               r = [newton(tensor(v)).tolist() for v in ([4.0, 9.0], [16.0, 0.25], [1.0, 1.0])]\n";
    let (mut e, _) = run(src, true);
    assert_eq!(stats(&mut e, "newton"), [1, 2, 0, 1]);
    let want = [[2.0, 3.0], [4.0, 0.5], [1.0, 1.0]];
    for (i, w) in want.iter().enumerate() {
        for (j, x) in w.iter().enumerate() {
            let got = e
                .eval_as::<f64>(&format!("r[{i}][{j}]"))
                .unwrap_or(f64::NAN);
            assert!((got - x).abs() < 1e-4, "sqrt case {i}.{j}: {got} vs {x}");
        }
    }
}

#[test]
fn prints_match_eager_at_every_call() {
    let src = "@compile\ndef f(x):\n    s = x.sum()\n    print(f\"sum {s:.3f} max {x.max()!r}\", x, sep=\" | \")\n    if s > 0:\n        print(\"pos\", s)\n    return s\n\n\
               for v in ([1.0, 2.0], [-3.0, 1.0], [0.5, 0.25]):\n    f(tensor(v))\n";
    let (mut e, compiled) = run(src, true);
    let (_, eager) = run(src, false);
    assert_eq!(compiled, eager);
    assert_eq!(compiled.matches("sum ").count(), 3, "{compiled}");
    assert!(
        compiled.contains("sum -2.000 max tensor(1.) | tensor([-3.,  1.])"),
        "{compiled}"
    );
    assert_eq!(stats(&mut e, "f"), [1, 2, 0, 1]);
}

#[test]
fn untaken_side_effects_are_refused_and_fall_back() {
    let src = "log = []\n@compile\ndef f(x):\n    if x.sum() > 0:\n        y = x + 1\n    else:\n        log.append(1)\n        x.add_(100)\n        y = x - 1\n    return y\n\n\
               a = ones(2)\nr1 = f(a)\nr2 = f(a)\n";
    let (mut e, _) = run(src, true);
    assert_eq!(
        int(&mut e, "len(log)"),
        0,
        "the speculative side must not append"
    );
    assert_eq!(
        int(&mut e, "int(a.sum().item())"),
        2,
        "nor change its argument"
    );
    assert_eq!(int(&mut e, "int(r2.sum().item())"), 4);
    assert_eq!(stats(&mut e, "f")[1], 0, "runs eagerly");
}

#[test]
fn untaken_side_error_falls_back_without_raising() {
    let src = "@compile\ndef f(x, w):\n    if x.sum() > 0:\n        y = x * 2\n    else:\n        y = x @ w\n    return y\n\nr = f(ones(2, 3), ones(2, 2))\n";
    let (mut e, out) = run(src, true);
    assert!(!out.contains("Error"), "{out}");
    assert_eq!(int(&mut e, "int(r.sum().item())"), 12);
    assert_eq!(stats(&mut e, "f")[3], 1);
}

#[test]
fn branch_mismatch_names_the_variable_and_both_sides() {
    let src = "@compile\ndef f(x):\n    if x.sum() > 0:\n        y = x * 2\n    else:\n        y = x.sum()\n    return y\n\nf(ones(3))\n";
    let (_, out) = run(src, true);
    assert!(out.contains("TypeError: @compile: variable 'y'"), "{out}");
    assert!(
        out.contains("t.dl:4:9") && out.contains("t.dl:6:9"),
        "{out}"
    );
    let (_, eager) = run(src, false);
    assert!(!eager.contains("Error"), "{eager}");
}

#[test]
fn loop_carried_type_change_is_an_error() {
    let src = "@compile\ndef f(x):\n    while x.sum() < 10:\n        x = cat([x, x])\n    return x\n\nf(ones(2))\n";
    let (_, out) = run(src, true);
    assert!(
        out.contains("variable 'x' is a tensor f32[2] before a `while` loop"),
        "{out}"
    );
    assert!(out.contains("t.dl:4:9"), "{out}");
}

#[test]
fn ir_snapshots_of_a_branch_and_a_loop() {
    let src = "@compile\ndef clip(g, limit):\n    n = g.norm()\n    if n > limit:\n        g = g * (limit / n)\n    return g\n\n\
               @compile\ndef newton(a):\n    x = a.clone()\n    while (x * x - a).abs().max() > 1e-4:\n        x = 0.5 * (x + a / x)\n    return x\n\n\
               g1 = graph(clip, ones(3), tensor(1.0))\ng2 = graph(newton, ones(2))\n";
    let (mut e, out) = run(src, true);
    assert!(!out.contains("Error"), "{out}");
    for (name, var) in [("branch_clip", "g1"), ("loop_newton", "g2")] {
        let text = e.eval_as::<String>(var).unwrap_or_default();
        snapshot(name, &text);
    }
}

/// Runs `src` with compilation on or off; returns the engine and everything printed.
fn run(src: &str, compile: bool) -> (Engine, String) {
    common::run_captured(Some(src), None, compile)
}
