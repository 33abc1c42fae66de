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

/// The prompts, as a regex.
const PROMPT: &str = r">>> |\.\.\. ";

/// Types a line, presses Enter, waits for the next prompt and returns what was printed
/// before it (the echoed line, output, errors) and the prompt itself.
fn line(s: &mut PtySession, text: &str) -> (String, String) {
    s.send(text).expect("send");
    s.send("\r").expect("send enter");
    s.flush().expect("flush");
    match s.exp_regex(PROMPT) {
        Ok(r) => r,
        Err(e) => panic!("no prompt after {text:?}: {e}"),
    }
}

/// Like [`line`], and checks the output contains `want` and the next prompt is `>>> `.
fn check(s: &mut PtySession, text: &str, want: &str) -> String {
    let (out, prompt) = line(s, text);
    assert!(
        out.contains(want),
        "after {text:?}: expected {want:?} in {out:?}"
    );
    assert_eq!(prompt, ">>> ", "after {text:?}: output {out:?}");
    out
}

/// Like [`line`], and checks the next prompt is `... `.
fn more(s: &mut PtySession, text: &str) {
    let (out, prompt) = line(s, text);
    assert_eq!(prompt, "... ", "after {text:?}: output {out:?}");
}

/// Waits for `needle` and returns everything printed before it.
fn expect(s: &mut PtySession, needle: &str) -> String {
    match s.exp_string(needle) {
        Ok(before) => before,
        Err(e) => panic!("waiting for {needle:?}: {e}"),
    }
}

fn quit(mut s: PtySession) {
    s.send(":quit\r").expect("send :quit");
    s.flush().expect("flush");
    s.exp_eof().expect("the REPL exits on :quit");
}

#[test]
fn multi_line_def_then_call() {
    let dir = temp_dir("def");
    let mut s = start(&dir.join("h"));
    more(&mut s, "def f(a):");
    more(&mut s, "    b = a * 7");
    more(&mut s, "    return b");
    check(&mut s, "", "");
    check(&mut s, "f(6)", "42");
    more(&mut s, "[1,");
    more(&mut s, "");
    check(&mut s, " 2 + 3]", "[1, 5]");
    more(&mut s, "s = '''a");
    check(&mut s, "b'''", "");
    check(&mut s, "len(s) * 14", "42");
    more(&mut s, "t = 4 + \\");
    check(&mut s, "  38", "");
    check(&mut s, "t", "42");
    quit(s);
}

#[test]
fn statements_and_none_are_not_echoed() {
    let dir = temp_dir("echo");
    let mut s = start(&dir.join("h"));
    let out = check(&mut s, "x = 6 * 7", "");
    assert!(
        !out.contains("42"),
        "an assignment echoed its value: {out:?}"
    );
    let out = check(&mut s, "None", "");
    assert_eq!(out.matches("None").count(), 1, "None was echoed: {out:?}");
    let out = check(&mut s, "print('no' + 'ne' + 'echo')", "noneecho");
    assert!(
        !out.contains("None"),
        "print's None result was echoed: {out:?}"
    );
    check(&mut s, "x", "42");
    check(&mut s, "'a' + 'b'", "'ab'");
    quit(s);
}

#[test]
fn error_keeps_earlier_definitions() {
    let dir = temp_dir("error");
    let mut s = start(&dir.join("h"));
    check(&mut s, "base = 40", "");
    check(&mut s, "base / 0", "ZeroDivisionError");
    check(&mut s, "undefined_name_here", "NameError");
    check(&mut s, "x = = 1", "SyntaxError");
    check(&mut s, "base + 2", "42");
    quit(s);
}

#[test]
fn tab_completes_globals_and_methods() {
    let dir = temp_dir("tab");
    let mut s = start(&dir.join("h"));
    check(&mut s, "zz_counter = 41", "");
    s.send("zz_c\t").expect("send tab");
    s.flush().expect("flush");
    expect(&mut s, "zz_counter");
    check(&mut s, " + 1", "42");
    check(&mut s, "xs = [3]", "");
    s.send("xs.app\t").expect("send tab");
    s.flush().expect("flush");
    expect(&mut s, "append");
    check(&mut s, "(39)", "");
    check(&mut s, "xs[0] + xs[1]", "42");
    more(&mut s, "class Acc:");
    more(&mut s, "    def total_sum(self): return 6 * 7");
    check(&mut s, "", "");
    check(&mut s, "acc = Acc()", "");
    s.send("acc.tot\t").expect("send tab");
    s.flush().expect("flush");
    expect(&mut s, "total_sum");
    check(&mut s, "()", "42");
    quit(s);
}

#[test]
fn ctrl_c_interrupts_a_loop_and_keeps_state() {
    let dir = temp_dir("ctrlc");
    let mut s = start(&dir.join("h"));
    check(&mut s, "n = 5", "");
    more(&mut s, "def spin():");
    more(&mut s, "    print('spin' + 'ning')");
    more(&mut s, "    while True: pass");
    check(&mut s, "", "");
    s.send("spin()\r").expect("send");
    s.flush().expect("flush");
    expect(&mut s, "spinning");
    std::thread::sleep(std::time::Duration::from_millis(200));
    s.send_control('c').expect("send ctrl-c");
    let (out, prompt) = s.exp_regex(PROMPT).expect("prompt after Ctrl-C");
    assert!(out.contains("KeyboardInterrupt"), "{out:?}");
    assert_eq!(prompt, ">>> ");
    check(&mut s, "n * 8 + 2", "42");
    // Ctrl-C at a continuation prompt drops the partial block.
    more(&mut s, "if True:");
    s.send_control('c').expect("send ctrl-c");
    let (out, prompt) = s.exp_regex(PROMPT).expect("prompt after Ctrl-C");
    assert!(out.contains("KeyboardInterrupt"), "{out:?}");
    assert_eq!(prompt, ">>> ");
    check(&mut s, "n * 9 - 3", "42");
    // Ctrl-D on an empty line exits.
    s.send_control('d').expect("send ctrl-d");
    s.exp_eof().expect("the REPL exits on Ctrl-D");
}

#[test]
fn vars_time_graph_and_help() {
    let dir = temp_dir("vars");
    let mut s = start(&dir.join("h"));
    check(&mut s, "alpha = 3", "");
    check(&mut s, "names = ['p', 'q']", "");
    let out = check(&mut s, ":vars", "alpha: int = 3");
    assert!(out.contains("names: list = ['p', 'q']"), "{out:?}");
    assert!(
        !out.contains("argv"),
        "argv listed as a user variable: {out:?}"
    );
    assert!(
        !out.contains("__name__"),
        "__name__ listed as a user variable: {out:?}"
    );
    let out = check(&mut s, ":time sum(range(1000))", "499500");
    assert!(out.contains("wall time: "), "{out:?}");
    for text in ["@compile", "def gf(x):", "    return (x * 3.5).relu()"] {
        let (_, prompt) = line(&mut s, text);
        assert_eq!(prompt, "... ", "after {text:?}");
    }
    check(&mut s, "", "");
    let out = check(&mut s, ":graph gf ones(2, 3)", "relu(");
    assert!(
        out.contains("f32[2, 3]") && out.contains("input(arg0)"),
        "{out:?}"
    );
    check(&mut s, "y = gf(ones(4))", "");
    let out = check(&mut s, ":graph gf", "f32[4]");
    assert!(out.contains("fused kernel"), "{out:?}");
    check(&mut s, ":help", ":reset");
    check(&mut s, ":nope", "unknown command :nope");
    quit(s);
}

#[test]
fn load_then_reset() {
    let dir = temp_dir("load");
    let script = dir.join("lib.dl");
    std::fs::write(
        &script,
        "loaded_value = 6 * 7\ndef triple(x):\n    return 3 * x\n",
    )
    .expect("write script");
    let mut s = start(&dir.join("h"));
    check(&mut s, &format!(":load {}", script.display()), "");
    check(&mut s, "loaded_value", "42");
    check(&mut s, "triple(5)", "15");
    check(&mut s, ":load /nonexistent/file.dl", "ImportError");
    check(&mut s, ":reset", "session reset");
    check(&mut s, "loaded_value", "NameError");
    check(&mut s, "3 * 14", "42");
    quit(s);
}

#[test]
fn history_persists_across_runs() {
    let dir = temp_dir("history");
    let hist = dir.join("sub").join("history");
    let mut s = start(&hist);
    check(&mut s, "hist_marker = 6 * 7", "");
    check(&mut s, "print(hist_marker - 1)", "41");
    quit(s);
    let saved = std::fs::read_to_string(&hist).expect("history file written");
    assert!(
        saved.contains("hist_marker = 6 * 7"),
        "history file: {saved:?}"
    );
    let mut s = start(&hist);
    // Up three times: `:quit`, the print line, then the assignment.
    s.send("\x1b[A\x1b[A\x1b[A").expect("send up arrows");
    s.flush().expect("flush");
    expect(&mut s, "hist_marker = 6 * 7");
    check(&mut s, "", "");
    check(&mut s, "hist_marker", "42");
    quit(s);
}

#[test]
fn colors_on_a_terminal() {
    let dir = temp_dir("colors");
    let mut s = start_with(&dir.join("h"), false);
    s.send("def").expect("send");
    s.flush().expect("flush");
    expect(&mut s, "\x1b[1;35mdef\x1b[0m");
    s.send(" = 1\r").expect("send");
    s.flush().expect("flush");
    expect(&mut s, "SyntaxError");
    s.send("1 / 0\r").expect("send");
    s.flush().expect("flush");
    let out = expect(&mut s, "ZeroDivisionError");
    let after_input = out.rsplit("1 / 0").next().unwrap_or("");
    assert!(after_input.contains("\x1b["), "error not colored: {out:?}");
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

#[test]
fn unusable_history_path_is_silent() {
    let dir = temp_dir("badhistory");
    let blocker = dir.join("file");
    std::fs::write(&blocker, "not a directory").expect("write file");
    let mut s = start(&blocker.join("sub").join("history"));
    let out = check(&mut s, "6 * 7", "42");
    assert!(!out.to_lowercase().contains("error"), "{out:?}");
    let out = check(&mut s, "1 + 1", "2");
    assert!(!out.to_lowercase().contains("error"), "{out:?}");
    quit(s);
    assert!(!blocker.join("sub").exists());
}

#[test]
fn nested_blocks_at_the_prompt() {
    let dir = temp_dir("nested");
    let mut s = start(&dir.join("h"));
    more(&mut s, "if True:");
    more(&mut s, "    if True:");
    more(&mut s, "        print(6 * 7)");
    check(&mut s, "", "42");
    for text in [
        "class Acc:",
        "    def total(self, xs):",
        "        t = 0",
        "        for x in xs:",
        "            while x > 30:",
        "                x -= 10",
        "            t += x",
        "        return t",
    ] {
        more(&mut s, text);
    }
    check(&mut s, "", "");
    check(&mut s, "Acc().total([12, 50])", "42");
    quit(s);
}

#[test]
fn keys_sent_in_one_burst_are_all_read() {
    let dir = temp_dir("burst");
    let mut s = start(&dir.join("h"));
    // Every key at once, without waiting for a prompt: the body, the blank line that
    // ends the block and the call must all arrive.
    s.send("def f(x):\r    return x * 2\r\rf(20 + 1)\r")
        .expect("send");
    s.flush().expect("flush");
    expect(&mut s, "42");
    // Lines typed while a statement still runs are kept for the next prompts.
    s.send("n = 0\rfor i in range(300000):\r    n += 1\r\rprint(n // 10000 + 12)\r")
        .expect("send");
    s.flush().expect("flush");
    expect(&mut s, "42");
    quit(s);
}

#[test]
fn graph_command_forms_and_interrupt_line() {
    let dir = temp_dir("graphforms");
    let mut s = start(&dir.join("h"));
    for text in ["@compile", "def gf(a, b):", "    return (a * b).relu()"] {
        more(&mut s, text);
    }
    check(&mut s, "", "");
    let (out, _) = line(&mut s, ":graph gf");
    assert!(
        out.contains("gf has no compiled version yet") && !out.contains("TypeError"),
        "{out:?}"
    );
    check(&mut s, "u = ones(2, 3)", "");
    for form in [":graph gf u u", ":graph gf(u, u)", ":graph gf u, u"] {
        let out = check(&mut s, form, "relu(");
        assert!(out.contains("f32[2, 3]"), "{form}: {out:?}");
        assert!(!out.contains("Error"), "{form}: {out:?}");
    }
    // A block comes back whole with one Up and runs on Enter.
    more(&mut s, "for k in range(2):");
    more(&mut s, "    print('k' + str(k * 21))");
    check(&mut s, "", "k21");
    s.send("\x1b[A\r").expect("send up, enter");
    s.flush().expect("flush");
    expect(&mut s, "k21");
    expect(&mut s, ">>> ");
    // An interrupted statement prints `KeyboardInterrupt` as Python does (no colon).
    s.send("while True: pass\r").expect("send");
    s.flush().expect("flush");
    std::thread::sleep(std::time::Duration::from_millis(300));
    s.send_control('c').expect("send ctrl-c");
    let (out, _) = s.exp_regex(PROMPT).expect("prompt after Ctrl-C");
    assert!(out.contains("KeyboardInterrupt"), "{out:?}");
    assert!(!out.contains("KeyboardInterrupt:"), "{out:?}");
    quit(s);
}
