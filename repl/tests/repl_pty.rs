//! Drives the `kiln` REPL through a pseudo-terminal (rexpect): prompts, blocks, echo,
//! errors, completion, Ctrl-C/Ctrl-D, the `:` commands, history, and piped stdin.
//!
//! Inputs are chosen so the expected output never appears in the echoed input (`6 * 7`
//! is typed, `42` is awaited). Every wait times out after a few seconds, so a hang fails.

use rexpect::session::{spawn_with_options, Options, PtySession};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const TIMEOUT_MS: u64 = 5_000;

fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kiln-repl-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Starts the REPL on a pty with colors off and the history file at `history`.
fn start(history: &Path) -> PtySession {
    start_with(history, true)
}

fn start_with(history: &Path, plain: bool) -> PtySession {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kiln"));
    cmd.env("KILN_HISTORY", history).env("TERM", "xterm");
    if plain {
        cmd.env("NO_COLOR", "1");
    } else {
        cmd.env_remove("NO_COLOR");
    }
    let opts = Options {
        timeout_ms: Some(TIMEOUT_MS),
        strip_ansi_escape_codes: plain,
    };
    let mut s = spawn_with_options(cmd, opts).expect("spawn kiln on a pty");
    s.exp_string(">>> ").expect("first prompt");
    s
}

/// Types a line and presses Enter.
fn line(s: &mut PtySession, text: &str) {
    s.send(text).expect("send");
    s.send("\r").expect("send enter");
    s.flush().expect("flush");
}

/// Waits for `needle` and returns everything printed before it.
fn expect(s: &mut PtySession, needle: &str) -> String {
    match s.exp_string(needle) {
        Ok(before) => before,
        Err(e) => panic!("waiting for {needle:?}: {e}"),
    }
}

fn quit(mut s: PtySession) {
    line(&mut s, ":quit");
    s.exp_eof().expect("the REPL exits on :quit");
}

#[test]
fn multi_line_def_then_call() {
    let dir = temp_dir("def");
    let mut s = start(&dir.join("h"));
    line(&mut s, "def f(a):");
    expect(&mut s, "... ");
    line(&mut s, "    b = a * 7");
    expect(&mut s, "... ");
    line(&mut s, "    return b");
    expect(&mut s, "... ");
    line(&mut s, "");
    expect(&mut s, ">>> ");
    line(&mut s, "f(6)");
    expect(&mut s, "42");
    line(&mut s, "[1,");
    expect(&mut s, "... ");
    line(&mut s, "");
    expect(&mut s, "... ");
    line(&mut s, " 2 + 3]");
    expect(&mut s, "[1, 5]");
    quit(s);
}

#[test]
fn statements_and_none_are_not_echoed() {
    let dir = temp_dir("echo");
    let mut s = start(&dir.join("h"));
    line(&mut s, "x = 6 * 7");
    line(&mut s, "None");
    line(&mut s, "print('no' + 'ne' + 'echo')");
    let before = expect(&mut s, "noneecho");
    assert!(!before.contains("42"), "an assignment echoed its value: {before:?}");
    line(&mut s, "x");
    let before = expect(&mut s, "42");
    assert!(!before.contains("None"), "None was echoed: {before:?}");
    line(&mut s, "'a' + 'b'");
    expect(&mut s, "'ab'");
    quit(s);
}

#[test]
fn error_keeps_earlier_definitions() {
    let dir = temp_dir("error");
    let mut s = start(&dir.join("h"));
    line(&mut s, "base = 40");
    line(&mut s, "base / 0");
    expect(&mut s, "ZeroDivisionError");
    line(&mut s, "undefined_name_here");
    expect(&mut s, "NameError");
    line(&mut s, "base + 2");
    expect(&mut s, "42");
    quit(s);
}

#[test]
fn tab_completes_globals_and_methods() {
    let dir = temp_dir("tab");
    let mut s = start(&dir.join("h"));
    line(&mut s, "unique_counter = 41");
    s.send("uniq\t").expect("send tab");
    line(&mut s, " + 1");
    expect(&mut s, "42");
    line(&mut s, "xs = [3]");
    s.send("xs.app\t").expect("send tab");
    line(&mut s, "(39)");
    line(&mut s, "xs[0] + xs[1]");
    expect(&mut s, "42");
    line(&mut s, "class Acc:");
    line(&mut s, "    def total_sum(self): return 6 * 7");
    line(&mut s, "");
    line(&mut s, "acc = Acc()");
    s.send("acc.tot\t").expect("send tab");
    line(&mut s, "()");
    expect(&mut s, "42");
    quit(s);
}

#[test]
fn ctrl_c_interrupts_a_loop_and_keeps_state() {
    let dir = temp_dir("ctrlc");
    let mut s = start(&dir.join("h"));
    line(&mut s, "n = 5");
    line(&mut s, "def spin():");
    line(&mut s, "    print('spin' + 'ning')");
    line(&mut s, "    while True: pass");
    line(&mut s, "");
    line(&mut s, "spin()");
    expect(&mut s, "spinning");
    std::thread::sleep(std::time::Duration::from_millis(200));
    s.send_control('c').expect("send ctrl-c");
    expect(&mut s, "KeyboardInterrupt");
    line(&mut s, "n * 8 + 2");
    expect(&mut s, "42");
    // Ctrl-C at a continuation prompt drops the partial block.
    line(&mut s, "if True:");
    expect(&mut s, "... ");
    s.send_control('c').expect("send ctrl-c");
    expect(&mut s, "KeyboardInterrupt");
    line(&mut s, "n * 9 - 3");
    expect(&mut s, "42");
    // Ctrl-D on an empty line exits.
    s.send_control('d').expect("send ctrl-d");
    s.exp_eof().expect("the REPL exits on Ctrl-D");
}

#[test]
fn vars_time_graph_and_help() {
    let dir = temp_dir("vars");
    let mut s = start(&dir.join("h"));
    line(&mut s, "alpha = 3");
    line(&mut s, "names = ['p', 'q']");
    line(&mut s, ":vars");
    let before = expect(&mut s, "alpha: int = 3");
    assert!(!before.contains("argv"), "argv listed as a user variable: {before:?}");
    expect(&mut s, "names: list = ['p', 'q']");
    line(&mut s, ":time sum(range(1000))");
    expect(&mut s, "499500");
    expect(&mut s, "wall time: ");
    line(&mut s, ":graph f 1");
    expect(&mut s, "graph: @compile is not available yet");
    line(&mut s, ":help");
    expect(&mut s, ":reset");
    line(&mut s, ":nope");
    expect(&mut s, "unknown command :nope");
    quit(s);
}

#[test]
fn load_then_reset() {
    let dir = temp_dir("load");
    let script = dir.join("lib.dl");
    std::fs::write(&script, "loaded_value = 6 * 7\ndef triple(x):\n    return 3 * x\n").expect("write script");
    let mut s = start(&dir.join("h"));
    line(&mut s, &format!(":load {}", script.display()));
    line(&mut s, "loaded_value");
    expect(&mut s, "42");
    line(&mut s, "triple(5)");
    expect(&mut s, "15");
    line(&mut s, ":load /nonexistent/file.dl");
    expect(&mut s, "ImportError");
    line(&mut s, ":reset");
    expect(&mut s, "session reset");
    line(&mut s, "loaded_value");
    expect(&mut s, "NameError");
    line(&mut s, "3 * 14");
    expect(&mut s, "42");
    quit(s);
}

#[test]
fn history_persists_across_runs() {
    let dir = temp_dir("history");
    let hist = dir.join("sub").join("history");
    let mut s = start(&hist);
    line(&mut s, "hist_marker = 6 * 7");
    line(&mut s, "print(hist_marker - 1)");
    expect(&mut s, "41");
    quit(s);
    let saved = std::fs::read_to_string(&hist).expect("history file written");
    assert!(saved.contains("hist_marker = 6 * 7"), "history file: {saved:?}");
    let mut s = start(&hist);
    // Up twice: `:quit`, then the print line, then the assignment.
    s.send("\x1b[A\x1b[A\x1b[A\r").expect("send up arrows");
    line(&mut s, "hist_marker");
    expect(&mut s, "42");
    quit(s);
}

#[test]
fn colors_on_a_terminal() {
    let dir = temp_dir("colors");
    let mut s = start_with(&dir.join("h"), false);
    s.send("def").expect("send");
    expect(&mut s, "\x1b[1;35mdef\x1b[0m");
    s.send(" = 1\r").expect("send");
    expect(&mut s, "SyntaxError");
    line(&mut s, "1 / 0");
    let before = expect(&mut s, "ZeroDivisionError");
    let after_input = before.rsplit("1 / 0").next().unwrap_or("");
    assert!(after_input.contains("\x1b["), "error not colored: {before:?}");
    quit(s);
}

#[test]
fn piped_stdin_runs_as_a_script_without_echo() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn kiln");
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(b"x = 41\nx\ndef f():\n    return x + 1\n\nprint(f())\n")
            .expect("write stdin");
    }
    let out = child.wait_with_output().expect("wait kiln");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "42\n");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert!(out.status.success());
}
