//! The REPL's `:` commands.

use super::session::Session;
use kiln::Value;
use std::time::{Duration, Instant};

/// What the loop does after a command.
#[derive(Debug, PartialEq, Eq)]
pub enum After {
    Continue,
    Quit,
}

const HELP: &str = "\
Enter Kiln statements; a block (after `:`) ends with an empty line.
Expression values are echoed with repr(). Tab completes names and attributes.
Ctrl-C interrupts the running statement, Ctrl-D exits.

Commands:
  :help            this text
  :vars            your global variables with their type and value
  :graph f x y     print the compiled graph of f called with x, y (or f(x, y))
  :time expr       run expr (any statement) and print the wall time
  :load file.dl    run a script file into this session
  :reset           start over with a fresh engine
  :quit            exit
";

/// Longest repr `:vars` prints before cutting it short.
const VARS_WIDTH: usize = 70;

/// Runs a `:command args` line.
pub fn run(session: &mut Session, line: &str) -> After {
    let line = line.trim();
    let (cmd, arg) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let arg = arg.trim();
    match cmd {
        ":help" => print!("{HELP}"),
        ":vars" => vars(session),
        ":graph" => graph(session, arg),
        ":time" => time(session, arg),
        ":load" if !arg.is_empty() => session.load(unquote(arg)),
        ":reset" => {
            session.reset();
            println!("session reset: all definitions cleared");
        }
        ":quit" => return After::Quit,
        ":load" => eprintln!("usage: :load file.dl"),
        _ => eprintln!("unknown command {cmd} (:help lists the commands)"),
    }
    After::Continue
}

fn unquote(s: &str) -> &str {
    let quoted = s.len() >= 2
        && ((s.starts_with('"') && s.ends_with('"')) || (s.starts_with('\'') && s.ends_with('\'')));
    if quoted {
        &s[1..s.len() - 1]
    } else {
        s
    }
}

/// `name: type = repr` for each user global.
fn vars(session: &mut Session) {
    let globals = session.user_globals();
    if globals.is_empty() {
        println!("(no variables)");
    }
    for (name, v) in globals {
        let text = match session.guarded(|e| e.repr(&v)) {
            Ok(t) => shorten(&t),
            Err(err) => format!("<repr failed: {}: {}>", err.type_name, err.message),
        };
        println!("{name}: {} = {text}", v.type_name());
    }
}

fn shorten(s: &str) -> String {
    match s.char_indices().nth(VARS_WIDTH) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

/// `:graph f x y` (also `:graph f(x, y)` and `:graph f x, y`) prints the optimized IR of
/// `@compile` function `f` for those arguments (the script-level `graph(f, x, y)`);
/// `:graph f` alone prints the version used last.
fn graph(session: &mut Session, arg: &str) {
    let Some((f, args)) = graph_call(arg) else {
        eprintln!("usage: :graph f x y   (or :graph f(x, y))");
        return;
    };
    if args.is_empty() {
        match session.engine.borrow().last_graph(&f) {
            Some(text) => print!("{text}"),
            None => eprintln!(
                "{f} has no compiled version yet: call it first, or give arguments (:graph {f} x y)"
            ),
        }
        return;
    }
    let call = graph_source(&f, &args);
    match session.guarded(|e| e.run_source(&call, "<stdin>")) {
        Ok(Value::None) => {}
        Ok(Value::Str(ref s)) => println!("{s}"),
        Ok(v) => session.echo(&v),
        Err(err) => session.report(&err),
    }
}

/// Splits `f x y`, `f(x, y)` or `f x, y` into the function and its argument text.
fn graph_call(arg: &str) -> Option<(String, String)> {
    let arg = arg.trim();
    let end = arg
        .find(|c: char| c.is_whitespace() || c == '(')
        .unwrap_or(arg.len());
    let (f, rest) = arg.split_at(end);
    if f.is_empty() {
        return None;
    }
    let rest = rest.trim();
    let args = match rest.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        Some(inner) => inner.trim(),
        None => rest,
    };
    Some((f.to_string(), args.to_string()))
}

/// `graph(f, args)`: the arguments as typed when they are valid Python (`x, y`,
/// `ones(2, 3)`), else read as space-separated (`x y`).
fn graph_source(f: &str, args: &str) -> String {
    let typed = format!("graph({f}, {args})");
    if kiln::syntax::parse_module(&typed, kiln::FileId::default()).is_ok() {
        return typed;
    }
    let spaced: Vec<&str> = args.split_whitespace().collect();
    format!("graph({f}, {})", spaced.join(", "))
}

/// `:time code` runs the code like an input line and prints the wall time it took.
fn time(session: &mut Session, arg: &str) {
    if arg.is_empty() {
        eprintln!("usage: :time expr");
        return;
    }
    let start = Instant::now();
    session.run_input(&format!("{arg}\n"));
    println!("wall time: {}", format_duration(start.elapsed()));
}

/// A duration with a unit suited to its size: `12.3 µs`, `4.567 ms`, `1.234 s`.
pub fn format_duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 1e-3 {
        format!("{:.1} µs", secs * 1e6)
    } else if secs < 1.0 {
        format!("{:.3} ms", secs * 1e3)
    } else {
        format!("{secs:.3} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_pick_a_unit() {
        assert_eq!(format_duration(Duration::from_nanos(12_340)), "12.3 µs");
        assert_eq!(format_duration(Duration::from_micros(4_567)), "4.567 ms");
        assert_eq!(format_duration(Duration::from_millis(1_234)), "1.234 s");
    }

    #[test]
    fn long_reprs_are_cut() {
        let long = "x".repeat(100);
        assert_eq!(shorten(&long), format!("{}...", "x".repeat(VARS_WIDTH)));
        assert_eq!(shorten("[1, 2]"), "[1, 2]");
    }

    #[test]
    fn graph_arguments_in_every_form() {
        let split = |a: &str| graph_call(a).map(|(f, args)| format!("{f}|{args}"));
        assert_eq!(split("f a b").as_deref(), Some("f|a b"));
        assert_eq!(split("f(a, b)").as_deref(), Some("f|a, b"));
        assert_eq!(split("f (a, b)").as_deref(), Some("f|a, b"));
        assert_eq!(split("f a, b").as_deref(), Some("f|a, b"));
        assert_eq!(split("f").as_deref(), Some("f|"));
        assert_eq!(split("f ones(2, 3)").as_deref(), Some("f|ones(2, 3)"));
        assert_eq!(split("(x)"), None);
        assert_eq!(graph_source("f", "a b"), "graph(f, a, b)");
        assert_eq!(graph_source("f", "a, b"), "graph(f, a, b)");
        assert_eq!(graph_source("f", "ones(2, 3)"), "graph(f, ones(2, 3))");
        assert_eq!(graph_source("f", "a + 1, b"), "graph(f, a + 1, b)");
    }

    #[test]
    fn quotes_around_paths_are_dropped() {
        assert_eq!(unquote("\"a b.dl\""), "a b.dl");
        assert_eq!(unquote("'x.dl'"), "x.dl");
        assert_eq!(unquote("x.dl"), "x.dl");
        assert_eq!(unquote("\""), "\"");
    }
}
