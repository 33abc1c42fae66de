//! The embedding API: `Engine` runs Kiln source and exposes globals, output, errors,
//! host functions and modules, and the safety limits of `crate::interp::limits`. The
//! struct and its run plumbing are here; its methods are split by theme: `eval`
//! (running code), `registration` (globals, host functions and modules), `limits`
//! (limits and safety switches) and `introspection` (REPL and tooling).

mod eval;
mod introspection;
mod limits;
mod panic;
mod registration;

use crate::error::{Error, ErrorKind, Result};
use crate::interp::limits::Limits;
use crate::interp::{Interp, R};
use crate::source::FileId;
use foldhash::fast::FixedState;
use std::collections::HashMap;
use std::hash::BuildHasher;

/// A Kiln interpreter instance. State (globals, imported modules) persists across calls,
/// including after an error. Every entry (`eval`, `run_file`, `call`, ...) runs under
/// the engine's [`Limits`] with a fresh budget.
///
/// ```
/// let mut engine = kiln::Engine::new();
/// engine.eval("def area(r):\n    return 3.0 * r * r").unwrap();
/// let a: f64 = engine.call("area", (2.0,)).unwrap();
/// assert_eq!(a, 12.0);
/// ```
pub struct Engine {
    interp: Interp,
    limits: Limits,
    sandbox: bool,
    /// Sources already registered, by hash of (name, text): re-running the same text
    /// reuses its `FileId` instead of growing the source map.
    known_sources: HashMap<u64, Vec<FileId>>,
}

impl Default for Engine {
    fn default() -> Self {
        Engine::new()
    }
}

impl Engine {
    /// A fresh engine with default limits (none but call depth 1000) and file access.
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// assert!(engine.eval("1 + 1").is_ok());
    /// ```
    pub fn new() -> Engine {
        Engine {
            interp: Interp::new(),
            limits: Limits::default(),
            sandbox: false,
            known_sources: HashMap::new(),
        }
    }

    /// Registers a source, or finds the identical one registered before.
    fn add_source(&mut self, name: &str, src: &str) -> FileId {
        let h = FixedState::default().hash_one((name, src));
        let sources = &self.interp.sources;
        let same = |id: &&FileId| {
            sources
                .get(**id)
                .is_some_and(|f| &*f.name == name && &*f.text == src)
        };
        if let Some(id) = self
            .known_sources
            .get(&h)
            .and_then(|ids| ids.iter().find(same))
        {
            return *id;
        }
        let id = self.interp.sources.add(name, src);
        self.known_sources.entry(h).or_default().push(id);
        id
    }

    /// Runs `f` as one limited run: fresh budget and deadline, caps installed, and the
    /// exception turned into an [`Error`] with its traceback.
    ///
    /// A panic inside (always a bug in Kiln) does not cross into the host: it is caught
    /// here, the interpreter's run state is put back as it was, and it comes back as a
    /// `RuntimeError` "internal error: ... (this is a bug in Kiln)"; the engine stays
    /// usable.
    fn run<T>(&mut self, f: impl FnOnce(&mut Interp) -> R<T>) -> Result<T> {
        let depth = self.interp.depth;
        let guard = self.interp.begin_run(&self.limits);
        let saved = panic::RunState::save(&self.interp);
        let interp = &mut self.interp;
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(interp)));
        self.interp.depth = depth;
        let r = match caught {
            Ok(r) => r.map_err(|e| self.interp.finish_error(e)),
            Err(payload) => {
                saved.restore(&mut self.interp);
                Err(panic::panic_error(payload.as_ref()))
            }
        };
        self.interp.end_run(guard);
        r
    }
}

/// The error of a global the host asked for that is not bound.
fn name_error(name: &str) -> Error {
    Error::new(
        ErrorKind::NameError,
        format!("name '{name}' is not defined"),
        None,
    )
}
