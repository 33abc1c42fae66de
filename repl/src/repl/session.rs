//! The REPL's state: the engine (replaceable by `:reset`), error output and Ctrl-C wiring.

use kiln::{Engine, Value};
use std::cell::RefCell;
use std::io::{IsTerminal, Write};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The interrupt flag of the current engine, shared with the SIGINT handler thread.
type FlagSlot = Arc<Mutex<Arc<AtomicBool>>>;

pub struct Session {
    pub engine: Rc<RefCell<Engine>>,
    /// Globals a fresh engine already has (`__name__`, `argv`): not shown by `:vars`.
    baseline: Vec<String>,
    flag: FlagSlot,
    color: bool,
}

impl Session {
    pub fn new() -> Session {
        let engine = fresh_engine();
        let baseline = engine.globals().into_iter().map(|(k, _)| k).collect();
        let flag: FlagSlot = Arc::new(Mutex::new(engine.interrupt_handle()));
        install_sigint(flag.clone());
        let color = std::io::stderr().is_terminal()
            && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        Session {
            engine: Rc::new(RefCell::new(engine)),
            baseline,
            flag,
            color,
        }
    }

    /// Replaces the engine with a fresh one: every definition and import is dropped.
    pub fn reset(&mut self) {
        let engine = fresh_engine();
        if let Ok(mut slot) = self.flag.lock() {
            *slot = engine.interrupt_handle();
        }
        *self.engine.borrow_mut() = engine;
    }

    /// Runs one interactive input and echoes the repr of a final expression's value
    /// (nothing for `None`). Errors are printed; the session keeps its state.
    pub fn run_input(&mut self, src: &str) {
        let r = self.guarded(|e| e.run_source(src, "<stdin>"));
        match r {
            Ok(Value::None) => {}
            Ok(v) => self.echo(&v),
            Err(err) => self.report(&err),
        }
    }

    /// Runs a script file into the session (`:load`).
    pub fn load(&mut self, path: &str) {
        if let Err(err) = self.guarded(|e| e.run_file(path)) {
            self.report(&err);
        }
    }

    /// Runs `f` on the engine with Ctrl-C armed: the flag starts clear, so a SIGINT that
    /// arrived while no statement ran does not interrupt this one.
    pub fn guarded<T>(&mut self, f: impl FnOnce(&mut Engine) -> T) -> T {
        let mut engine = self.engine.borrow_mut();
        engine.interrupt_handle().store(false, Ordering::Relaxed);
        let r = f(&mut engine);
        let _ = std::io::stdout().flush();
        r
    }

    /// Prints `repr(v)` on its own line, or the error its `__repr__` raised.
    pub fn echo(&mut self, v: &Value) {
        let r = self.guarded(|e| e.repr(v));
        match r {
            Ok(text) => println!("{text}"),
            Err(err) => self.report(&err),
        }
    }

    /// Prints an error like the CLI does (colored when stderr is a terminal).
    pub fn report(&self, err: &kiln::Error) {
        let _ = std::io::stdout().flush();
        let engine = self.engine.borrow();
        let text = if self.color {
            engine.render_error_color(err)
        } else {
            engine.render_error(err)
        };
        eprint!("{text}");
    }

    /// User-defined globals (not the names a fresh engine starts with), in definition order.
    pub fn user_globals(&self) -> Vec<(String, Value)> {
        let globals = self.engine.borrow().globals();
        globals
            .into_iter()
            .filter(|(k, _)| !k.starts_with("__") && !self.baseline.contains(k))
            .collect()
    }
}

fn fresh_engine() -> Engine {
    let mut e = Engine::new();
    e.set_argv(vec![String::new()]);
    let mut out = std::io::stdout();
    e.set_output(Box::new(move |s| {
        let _ = out.write_all(s.as_bytes());
    }));
    e
}

/// Ctrl-C while a statement runs (the terminal is in cooked mode then) raises
/// KeyboardInterrupt in it. At the prompt rustyline reads Ctrl-C as a key instead. If the
/// handler cannot be installed, Ctrl-C keeps its default effect (ending the process).
fn install_sigint(flag: FlagSlot) {
    let _ = ctrlc::set_handler(move || {
        if let Ok(f) = flag.lock() {
            f.store(true, Ordering::Relaxed);
        }
    });
}
