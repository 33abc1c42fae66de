//! The rustyline helper: completion and syntax highlighting backed by the live engine.

use super::{complete, highlight};
use kiln::Engine;
use rustyline::completion::{Completer, FilenameCompleter, Pair};
use rustyline::highlight::{CmdKind, Highlighter};
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{Context, Helper};
use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;

/// Completes from (and only reads) the session's engine; the REPL loop mutates it
/// between reads, never during one.
pub struct KilnHelper {
    engine: Rc<RefCell<Engine>>,
    files: FilenameCompleter,
}

impl KilnHelper {
    pub fn new(engine: Rc<RefCell<Engine>>) -> KilnHelper {
        KilnHelper {
            engine,
            files: FilenameCompleter::new(),
        }
    }
}

impl Completer for KilnHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        if line.starts_with(":load ") {
            return self.files.complete(line, pos, ctx);
        }
        let Ok(engine) = self.engine.try_borrow() else {
            return Ok((pos, Vec::new()));
        };
        let (start, names) = complete::complete(&engine, line, pos);
        let pairs = names
            .into_iter()
            .map(|n| Pair {
                display: n.clone(),
                replacement: n,
            })
            .collect();
        Ok((start, pairs))
    }
}

impl Highlighter for KilnHelper {
    fn highlight<'l>(&self, line: &'l str, _pos: usize) -> Cow<'l, str> {
        if line.starts_with(':') {
            return Cow::Borrowed(line);
        }
        Cow::Owned(highlight::highlight(line))
    }

    fn highlight_char(&self, _line: &str, _pos: usize, kind: CmdKind) -> bool {
        kind != CmdKind::MoveCursor
    }
}

impl Hinter for KilnHelper {
    type Hint = String;
}

impl Validator for KilnHelper {}

impl Helper for KilnHelper {}
