//! `KILN_LOG=compile` of the real binary: a `dynamic=True` function captures once over
//! twenty lengths, and an automatic dynamic recompile happens once, after the second
//! size (the in-process counterparts are in tests/compile_dynamic.rs).

use std::process::Command;

const TWENTY: &str = "
W = randn(4, 6)

def g(x):
    h = tanh(x @ W)
    return h.mean(0), h[1:].sum(), cat([h, h[-2:]], 0).reshape(-1).sum()

ok = True
for n in range(5, 45, 2):
    x = randn(n, 4)
    a = f(x)
    b = g(x)
    for p, q in zip(a, b):
        ok = ok and bool(((p - q).abs() <= 1e-5 * (1 + q.abs())).all())
";

/// Runs `src` with the release binary under KILN_LOG=compile; returns stderr.
fn logged(src: &str, name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("kiln_dyn_{}_{name}", std::process::id()));
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
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("True"), "{stdout}");
    String::from_utf8_lossy(&out.stderr).to_string()
}

#[test]
fn compile_log_shows_no_recompile_over_twenty_lengths() {
    let dynamic = TWENTY.replacen("ok = True", "f = compile(g, dynamic=True)\nok = True", 1);
    let log = logged(&format!("{dynamic}\nprint(ok)\n"), "dyn");
    let captures = log.lines().filter(|l| l.contains(": captured")).count();
    assert_eq!(captures, 1, "{log}");
    assert!(log.contains("symbolic sizes (s0 = input 0 dim 0"), "{log}");
    let auto = TWENTY.replacen("ok = True", "f = compile(g)\nok = True", 1);
    let log = logged(&format!("{auto}\nprint(ok)\n"), "auto");
    let captures: Vec<&str> = log.lines().filter(|l| l.contains(": captured")).collect();
    assert_eq!(captures.len(), 2, "{log}");
    assert!(captures[1].contains("symbolic sizes"), "{log}");
    assert!(log.contains("input 0 dim 0 changed size; recompiling with symbolic sizes"), "{log}");
}

