//! `KILN_LOG=compile` of the real binary: a variable-length workload compiles once with
//! `@compile(dynamic=True)` and twice without it (static, then symbolic) over twenty
//! lengths, counted from the log lines; results are checked against the uncompiled
//! function inside the script.

use std::process::Command;

/// Twenty lengths 5..=43 through `f`, results checked against the uncompiled `g`
/// (shared with tests/compile_dynamic.rs).
const TWENTY: &str = include_str!("../../tests/fixtures/twenty_lengths.dl");

/// Runs the program with `f = compile(g, ...)` under KILN_LOG=compile; returns stderr.
fn logged(compile_call: &str, name: &str) -> String {
    let src = TWENTY.replacen("ok = True", &format!("f = {compile_call}\nok = True"), 1);
    let (stdout, stderr) = run_logged(&src, name);
    assert_eq!(stdout.trim(), "True", "{stderr}");
    stderr
}

#[test]
fn dynamic_true_logs_one_compile_over_twenty_lengths() {
    let log = logged("compile(g, dynamic=True)", "dyn");
    let captures = log.lines().filter(|l| l.contains(": captured")).count();
    assert_eq!(captures, 1, "{log}");
    assert!(log.contains("symbolic sizes (s0 = input 0 dim 0"), "{log}");
}

#[test]
fn second_size_logs_one_symbolic_recompile() {
    let log = logged("compile(g)", "auto");
    let captures: Vec<&str> = log.lines().filter(|l| l.contains(": captured")).collect();
    assert_eq!(captures.len(), 2, "{log}");
    assert!(!captures[0].contains("symbolic"), "{log}");
    assert!(
        captures[1].contains("symbolic sizes (s0 = input 0 dim 0)"),
        "{log}"
    );
    assert!(
        log.contains("input 0 dim 0 changed size; recompiling with symbolic sizes"),
        "{log}"
    );
}

/// The RNN forward of benches/w7_rnn.dl (a `for` loop over the length) under no_grad.
const RNN: &str = include_str!("../../tests/fixtures/rnn_twenty.dl");

/// Runs `src` under KILN_LOG=compile; returns (stdout, stderr).
fn run_logged(src: &str, name: &str) -> (String, String) {
    let dir = std::env::temp_dir().join(format!("kiln_forlog_{}_{name}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("p.dl");
    assert!(std::fs::write(&path, src).is_ok());
    let out = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .arg(&path)
        .env("KILN_LOG", "compile")
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => panic!("cannot run kiln: {e}"),
    };
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stdout}{stderr}");
    (stdout, stderr)
}

#[test]
fn rnn_for_loop_logs_one_compile_over_twenty_lengths() {
    let src = RNN.replacen(
        "ok = True",
        "f = compile(seq_loss, dynamic=True)\nok = True",
        1,
    );
    let (out, log) = run_logged(&src, "rnn");
    assert_eq!(out.trim(), "True", "{log}");
    let captures = log.lines().filter(|l| l.contains(": captured")).count();
    assert_eq!(captures, 1, "{log}");
    assert!(log.contains("symbolic sizes (s0 = input 0 dim 0"), "{log}");
}

#[test]
fn for_loop_index_used_as_python_int_is_recaptured_unrolled() {
    let src = "@compile\n\
               def f(x, ws):\n\
               \x20   acc = zeros(3)\n\
               \x20   for t in range(x.shape[0]):\n\
               \x20       acc = acc + x[t] * ws[t]\n\
               \x20   return acc\n\
               \n\
               ws = [0.5, 1.5, -2.0]\n\
               a = f(ones(3, 3), ws)\n\
               b = f(ones(3, 3), ws)\n\
               print(a.tolist(), b.tolist(), compile_stats(f)['captures'])\n";
    let (out, log) = run_logged(src, "retry");
    assert_eq!(out.trim(), "[0.0, 0.0, 0.0] [0.0, 0.0, 0.0] 1", "{log}");
    assert!(
        log.contains("p.dl:4:5 could not be captured as a loop")
            && log.contains("recapturing it unrolled"),
        "{log}"
    );
    assert!(!log.contains("falls back to eager"), "{log}");
}
