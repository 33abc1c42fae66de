//! The interactive REPL (`kiln` with no arguments on a terminal), on rustyline.

mod commands;
pub(crate) mod complete;
mod helper;
mod highlight;
mod history;
mod session;

use commands::After;
use helper::KilnHelper;
use rustyline::config::{CompletionType, Config};
use rustyline::error::ReadlineError;
use rustyline::history::DefaultHistory;
use rustyline::Editor;
use session::Session;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

type Ed = Editor<KilnHelper, DefaultHistory>;

/// One thing the user entered.
enum Input {
    /// Kiln source, complete by `kiln::is_incomplete`.
    Source(String),
    /// A `:command` line.
    Command(String),
    /// Ctrl-C at a prompt: the partial input is dropped.
    Interrupted,
    /// Ctrl-D (or the terminal went away).
    Eof,
}

/// Runs the REPL until `:quit` or Ctrl-D.
pub fn run() -> ExitCode {
    let mut session = Session::new();
    let config = Config::builder()
        .completion_type(CompletionType::List)
        .max_history_size(10_000)
        .and_then(|b| b.history_ignore_dups(true))
        .map(|b| b.auto_add_history(false).build());
    let editor = config.and_then(Ed::with_config);
    let mut editor = match editor {
        Ok(e) => e,
        Err(e) => {
            eprintln!("kiln: cannot start the line editor: {e}");
            return ExitCode::from(1);
        }
    };
    editor.set_helper(Some(KilnHelper::new(session.engine.clone())));
    let history = history::path();
    if let Some(p) = &history {
        let _ = editor.load_history(p);
    }
    eprintln!(
        "Kiln {} — :help for commands, Ctrl-D to exit",
        env!("CARGO_PKG_VERSION")
    );
    loop {
        let input = read_input(&mut editor);
        save_history(&mut editor, history.as_ref());
        match input {
            Input::Source(src) => session.run_input(&src),
            Input::Command(line) => {
                if commands::run(&mut session, &line) == After::Quit {
                    break;
                }
            }
            Input::Interrupted => eprintln!("KeyboardInterrupt"),
            Input::Eof => break,
        }
        let _ = std::io::stdout().flush();
    }
    ExitCode::SUCCESS
}

/// Reads a `>>> ` line and, while the source is incomplete, `... ` lines. A block goes
/// into the history as one entry, so Up recalls it whole (as IPython does); a recalled
/// block (a line holding newlines) runs as soon as Enter is pressed.
fn read_input(editor: &mut Ed) -> Input {
    let mut src = String::new();
    loop {
        let prompt = if src.is_empty() { ">>> " } else { "... " };
        let line = match editor.readline(prompt) {
            Ok(l) => l,
            Err(ReadlineError::Interrupted) => return Input::Interrupted,
            Err(_) => return Input::Eof,
        };
        if src.is_empty() {
            if line.trim().is_empty() {
                continue;
            }
            if line.starts_with(':') {
                let _ = editor.add_history_entry(line.as_str());
                return Input::Command(line);
            }
            if line.contains('\n') && !kiln::is_incomplete(&format!("{line}\n\n")) {
                let _ = editor.add_history_entry(line.trim_end());
                return Input::Source(format!("{line}\n\n"));
            }
        }
        src.push_str(&line);
        if !continues(&src, &line) {
            let _ = editor.add_history_entry(src.trim_end());
            src.push('\n');
            return Input::Source(src);
        }
        src.push('\n');
    }
}

/// Whether `src` (ending with `line`, before its newline) needs more lines. The
/// trailing-`\` check runs on the text without the newline, the form in which
/// `is_incomplete` recognizes an explicit line continuation.
fn continues(src: &str, line: &str) -> bool {
    let with_newline = format!("{src}\n");
    kiln::is_incomplete(&with_newline) || (line.ends_with('\\') && kiln::is_incomplete(src))
}

/// Writes the history file; failures (read-only home, no data directory) are silent.
fn save_history(editor: &mut Ed, path: Option<&PathBuf>) {
    if let Some(p) = path {
        history::prepare_dir(p);
        let _ = editor.save_history(p);
    }
}
