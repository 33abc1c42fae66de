//! The `kiln` command: run a script, `-c CODE`, `check FILE`, the REPL, or stdin.

mod kernel;
mod repl;

use kiln::Engine;
use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::process::ExitCode;

const USAGE: &str =
    "usage: kiln [FILE.dl [ARGS...] | -c CODE [ARGS...] | check FILE.dl... | graph FILE.dl FUNC | export FILE.dl NAME OUT.onnx | kernel ... | --version]\n";

fn main() -> ExitCode {
    let code = run();
    // A script that joined an MPI world (`dist.init_process_group()`) leaves it: cleanly
    // on success, and on failure by aborting every rank, so none waits on this one.
    kiln::finish_distributed(code == ExitCode::SUCCESS);
    code
}

fn run() -> ExitCode {
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let rest = args.get(1..).unwrap_or(&[]);
    match rest.first().map(String::as_str) {
        None => run_stdin(),
        Some("-c") => match rest.get(1) {
            Some(code) => {
                let mut argv = vec!["-c".to_string()];
                argv.extend(rest[2..].iter().cloned());
                run_code(code, "<string>", argv)
            }
            None => usage("argument expected for the -c option"),
        },
        Some("check") if rest.len() >= 2 => check(&rest[1..]),
        Some("kernel") if !Path::new("kernel").is_file() => kernel::main(&rest[1..]),
        Some("graph") if rest.len() == 3 => graph(&rest[1], &rest[2]),
        Some("export") if rest.len() == 4 => export(&rest[1], &rest[2], &rest[3]),
        Some(cmd @ ("check" | "graph" | "export")) if !Path::new(cmd).is_file() => {
            usage(&format!("{cmd}: expected {}", command_args(cmd)))
        }
        Some("-h") | Some("--help") => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        Some("-V") | Some("--version") => {
            println!("kiln {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        Some(flag) if flag.starts_with('-') && flag != "-" => {
            usage(&format!("unknown option {flag}"))
        }
        Some(file) => run_file(file, rest.to_vec()),
    }
}

/// The arguments a subcommand takes, for its usage error.
fn command_args(cmd: &str) -> &'static str {
    match cmd {
        "check" => "FILE.dl...",
        "graph" => "FILE.dl FUNC",
        _ => "FILE.dl NAME OUT.onnx",
    }
}

fn usage(msg: &str) -> ExitCode {
    eprint!("kiln: {msg}\n{USAGE}");
    ExitCode::from(2)
}

fn engine(argv: Vec<String>) -> Engine {
    let mut e = Engine::new();
    e.set_argv(argv);
    let mut out = std::io::stdout();
    e.set_output(Box::new(move |s| {
        let _ = out.write_all(s.as_bytes());
    }));
    e
}

fn report(e: &Engine, err: &kiln::Error) -> ExitCode {
    let _ = std::io::stdout().flush();
    if err.kind == kiln::ErrorKind::SystemExit {
        // `exit(code)` / `sys.exit(code)`: None is success, an int the status, anything
        // else is printed and fails (as CPython does)
        return match err.message.as_str() {
            "" | "None" => ExitCode::SUCCESS,
            m => match m.parse::<i64>() {
                Ok(n) => ExitCode::from((n & 0xff) as u8),
                Err(_) => {
                    eprintln!("{m}");
                    ExitCode::from(1)
                }
            },
        };
    }
    let text = if std::io::stderr().is_terminal() {
        e.render_error_color(err)
    } else {
        e.render_error(err)
    };
    eprint!("{text}");
    ExitCode::from(1)
}

fn run_code(code: &str, name: &str, argv: Vec<String>) -> ExitCode {
    let mut e = engine(argv);
    let r = e.run_source(code, name);
    let _ = std::io::stdout().flush();
    match r {
        Ok(_) => ExitCode::SUCCESS,
        Err(err) => report(&e, &err),
    }
}

/// `kiln graph FILE FUNC`: runs FILE, then prints the IR FUNC (a `@compile`d global)
/// captured on its first call.
fn graph(path: &str, func: &str) -> ExitCode {
    if !std::path::Path::new(path).is_file() {
        return usage(&format!("can't open file '{path}': No such file"));
    }
    let mut e = engine(vec![path.to_string()]);
    if let Err(err) = e.run_file(path) {
        return report(&e, &err);
    }
    let _ = std::io::stdout().flush();
    match e.first_graph(func) {
        Some(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        None => {
            eprintln!("kiln graph: {func} is not a @compile function that ran in {path}");
            ExitCode::from(1)
        }
    }
}

/// `kiln export FILE NAME OUT`: runs FILE, then exports the function or Module NAME
/// (a global) to the ONNX file OUT, traced on the global `example_args`: a tuple of
/// arguments, or a dict mapping NAME to one. An optional global `dynamic_axes` (in
/// `export_onnx`'s form; a dict mapping NAME to one when `example_args` is a dict)
/// makes those axes dynamic.
fn export(path: &str, name: &str, out: &str) -> ExitCode {
    if !std::path::Path::new(path).is_file() {
        return usage(&format!("can't open file '{path}': No such file"));
    }
    let ident = name
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_alphanumeric() || c == '_');
    if !ident {
        return usage(&format!("export: '{name}' is not a global name"));
    }
    let mut e = engine(vec![path.to_string()]);
    if let Err(err) = e.run_file(path) {
        return report(&e, &err);
    }
    if e.get_global(name).is_none() || e.get_global("example_args").is_none() {
        eprintln!("kiln export: {path} must define {name} and example_args");
        return ExitCode::from(1);
    }
    e.set("__kiln_export_out", out.to_string());
    let axes = if e.get_global("dynamic_axes").is_some() {
        format!("dynamic_axes[{name:?}] if isinstance(example_args, dict) else dynamic_axes")
    } else {
        "None".to_string()
    };
    let src = format!(
        "export_onnx({name}, example_args[{name:?}] if isinstance(example_args, dict) \
         else example_args, __kiln_export_out, dynamic_axes={axes})"
    );
    match e.run_source(&src, "<export>") {
        Ok(_) => {
            println!("wrote {out}");
            ExitCode::SUCCESS
        }
        Err(err) => report(&e, &err),
    }
}

fn run_file(path: &str, argv: Vec<String>) -> ExitCode {
    if !std::path::Path::new(path).is_file() {
        return usage(&format!("can't open file '{path}': No such file"));
    }
    let mut e = engine(argv);
    let r = e.run_file(path);
    let _ = std::io::stdout().flush();
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => report(&e, &err),
    }
}

/// No arguments: the REPL on a terminal; otherwise, like `python3 < file`, stdin is read
/// to the end and run as one script, with no prompts and no echo of expression values.
fn run_stdin() -> ExitCode {
    if std::io::stdin().is_terminal() {
        return repl::run();
    }
    let mut bytes = Vec::new();
    if std::io::stdin().read_to_end(&mut bytes).is_err() {
        return usage("cannot read standard input");
    }
    match String::from_utf8(bytes) {
        Ok(src) => run_code(&src, "<stdin>", vec![String::new()]),
        Err(e) => {
            eprintln!(
                "SyntaxError: standard input is not valid UTF-8 (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            );
            ExitCode::from(1)
        }
    }
}

fn check(files: &[String]) -> ExitCode {
    let mut e = Engine::new();
    let mut failed = false;
    for f in files {
        let bytes = match std::fs::read(f) {
            Ok(b) => b,
            Err(err) => {
                eprintln!("kiln: can't open file '{f}': {err}");
                return ExitCode::from(2);
            }
        };
        let src = match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(err) => {
                eprintln!(
                    "SyntaxError: '{}' is not valid UTF-8 (invalid byte at offset {})",
                    f,
                    err.utf8_error().valid_up_to()
                );
                failed = true;
                continue;
            }
        };
        for err in e.check(&src, f) {
            failed = true;
            eprint!("{}", e.render_error(&err));
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
