//! Runs the built `kiln` binary: exit codes, argv, -c, check, stdin, hostile input.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn kiln(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(args)
        .output()
        .expect("run kiln")
}

fn kiln_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn kiln");
    if let Some(mut s) = child.stdin.take() {
        let _ = s.write_all(input);
    }
    child.wait_with_output().expect("wait kiln")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn temp_file(name: &str, contents: &[u8]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("kiln-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let p = dir.join(name);
    std::fs::write(&p, contents).expect("write temp file");
    p
}

#[test]
fn dash_c_prints_and_exits_zero() {
    let o = kiln(&["-c", "print(1 + 1)"]);
    assert_eq!(text(&o.stdout), "2\n");
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn uncaught_error_exits_one_with_traceback() {
    let o = kiln(&["-c", "def f():\n    return 1 / 0\nf()"]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(err.contains("Traceback (most recent call last):"), "{err}");
    assert!(err.contains("ZeroDivisionError: division by zero"), "{err}");
    assert!(err.contains("in f"), "{err}");
}

#[test]
fn usage_errors_exit_two() {
    assert_eq!(kiln(&["--bogus"]).status.code(), Some(2));
    assert_eq!(kiln(&["/definitely/not/here.dl"]).status.code(), Some(2));
    assert_eq!(kiln(&["-c"]).status.code(), Some(2));
}

#[test]
fn script_gets_argv() {
    let p = temp_file("argv.dl", b"print(argv[1:], len(argv))\n");
    let o = kiln(&[p.to_str().unwrap_or(""), "a", "b"]);
    assert_eq!(text(&o.stdout), "['a', 'b'] 3\n");
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn check_reports_every_syntax_error() {
    let p = temp_file("bad.dl", b"x = (\ny = 1\ndef f(:\n    pass\nprint(\n");
    let o = kiln(&["check", p.to_str().unwrap_or("")]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(err.matches("SyntaxError").count() >= 1, "{err}");
    let good = temp_file("good.dl", b"def f(x):\n    return x\n");
    let o = kiln(&["check", good.to_str().unwrap_or("")]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(o.stdout.is_empty());
}

#[test]
fn invalid_utf8_script_is_a_clean_error() {
    let p = temp_file("bytes.dl", &[0x70, 0x72, 0xff, 0xfe, 0x00, 0x80, 0x0a]);
    let o = kiln(&[p.to_str().unwrap_or("")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("UTF-8"), "{}", text(&o.stderr));
}

#[test]
fn random_bytes_never_crash() {
    let mut state: u64 = 0x9e3779b97f4a7c15;
    for i in 0..40 {
        let mut bytes = Vec::new();
        for _ in 0..(20 + i * 7) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            bytes.push((state & 0xff) as u8);
        }
        let p = temp_file(&format!("rand{i}.dl"), &bytes);
        let o = kiln(&[p.to_str().unwrap_or("")]);
        let code = o.status.code();
        assert!(
            code == Some(0) || code == Some(1),
            "exit {:?} for {:?}",
            code,
            bytes
        );
    }
}

#[test]
fn stdin_script_runs() {
    let o = kiln_stdin(&[], b"for i in range(3):\n    print(i)\n");
    assert_eq!(text(&o.stdout), "0\n1\n2\n");
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn version_flag_prints_the_version() {
    for flag in ["--version", "-V"] {
        let o = kiln(&[flag]);
        assert_eq!(o.status.code(), Some(0), "{flag}: {}", text(&o.stderr));
        assert_eq!(
            text(&o.stdout),
            format!("kiln {}\n", env!("CARGO_PKG_VERSION"))
        );
    }
}

#[test]
fn subcommands_with_missing_arguments_say_what_they_take() {
    let model = temp_file("export_args.dl", b"x = 1\n");
    let model = model.to_str().expect("utf-8 temp path");
    for (args, want) in [
        (
            vec!["export", model],
            "export: expected FILE.dl NAME OUT.onnx",
        ),
        (vec!["export"], "export: expected FILE.dl NAME OUT.onnx"),
        (vec!["graph", model], "graph: expected FILE.dl FUNC"),
        (vec!["check"], "check: expected FILE.dl..."),
    ] {
        let o = kiln(&args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("can't open file"), "{args:?}: {err}");
    }
}

#[test]
fn explain_and_graph_say_compilation_is_off_under_kiln_eager() {
    let src =
        "@compile\ndef f(x):\n    return x * 2\nprint(explain(f, ones(3)))\ngraph(f, ones(3))\n";
    let o = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(["-c", src])
        .env("KILN_EAGER", "1")
        .output()
        .expect("run kiln");
    let out = text(&o.stdout);
    let err = text(&o.stderr);
    assert_eq!(
        out,
        "f runs eagerly: compilation is off (KILN_EAGER=1 or Engine::set_compile(false))\n"
    );
    assert!(
        err.contains("ValueError: graph: compilation is off"),
        "{err}"
    );
    assert!(!out.contains("graph:"), "{out}");
}

/// The benchmark harness (benches/harness.dl) the suite relies on: `KILN_BENCH_ONLY`
/// runs one variant of a workload file, `KILN_BENCH_REPS` shortens the timing, a passing
/// check prints a `BENCH` line with figures, and a failed `harness.check` prints
/// `BENCHFAIL name what` and no time.
#[test]
fn bench_harness_selects_variants_and_reports_failed_checks() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let o = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .arg("benches/w2_tiny.dl")
        .current_dir(root)
        .env("KILN_BENCH_ONLY", "w2_grad")
        .env("KILN_BENCH_REPS", "1")
        .output()
        .expect("run kiln");
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}{}", text(&o.stderr));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1, "{out}");
    assert!(lines[0].starts_with("BENCH w2_grad median="), "{out}");
    assert!(lines[0].contains(" us_per_op="), "{out}");

    let script = "import harness\n\
                  if harness.check('w0_a', 1 + 1 == 3, 'sum=2'):\n    print('timed')\n\
                  if harness.wanted('w0_b'):\n    print('ran b')\n\
                  harness.report('w0_c', harness.measure(lambda: None, reps=3), k=2)\n";
    let o = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(["-c", script])
        .current_dir(format!("{root}/benches"))
        .env("KILN_BENCH_ONLY", "w0_a")
        .output()
        .expect("run kiln");
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}{}", text(&o.stderr));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "BENCHFAIL w0_a sum=2", "{out}");
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[1].starts_with("BENCH w0_c median=") && lines[1].ends_with(" k=2"),
        "{out}"
    );
}
