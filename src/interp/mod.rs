//! The tree-walking interpreter: value model, resolver, execution and builtins.

pub mod attrs;
mod body;
pub mod builtins;
pub mod call;
pub mod capture;
pub mod class;
pub mod containers;
pub mod descr;
pub mod dunder;
pub mod eval;
pub mod exc;
pub mod exec;
pub mod gc;
mod gc_edges;
mod gc_scan;
pub mod gen;
mod gen_exec;
pub mod index;
pub mod iter;
pub mod keys;
pub mod limits;
pub mod method_cache;
pub mod modules;
pub mod mro;
pub mod num;
pub mod ops;
mod packages;
mod pyhash;
pub mod repr;
pub mod resolve;
pub mod scope;
pub mod strindex;
pub mod suggest;
pub mod tree;
mod truth;
pub mod value;
mod value_drop;

use crate::error::{Error, ErrorKind, TraceFrame};
use crate::source::{SourceMap, Span};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use value::{Function, ModuleObj, NameMap, Value};

/// A propagating exception: the error, its exception object (once materialized), and the
/// traceback collected while unwinding (innermost frame first).
#[derive(Debug, Clone)]
pub struct ExcInner {
    pub error: Error,
    pub value: Option<Value>,
    /// The span in the current frame where the error passed, not yet turned into a frame.
    pub pending: Option<Span>,
    pub frames: Vec<TraceFrame>,
    /// For a NameError/AttributeError/ImportError: what was missing, for the "Did you
    /// mean" its traceback gets if it is not caught (`suggest`).
    pub missing: Option<suggest::Missing>,
}

pub type Exc = Box<ExcInner>;
pub type R<T> = std::result::Result<T, Exc>;

/// Builds an exception of a built-in kind with a message (span added by the caller).
pub fn err(kind: ErrorKind, msg: impl Into<String>) -> Exc {
    Box::new(ExcInner {
        error: Error::new(kind, msg, None),
        value: None,
        pending: None,
        frames: Vec::new(),
        missing: None,
    })
}

pub fn type_err(msg: impl Into<String>) -> Exc {
    err(ErrorKind::TypeError, msg)
}

pub fn value_err(msg: impl Into<String>) -> Exc {
    err(ErrorKind::ValueError, msg)
}

/// Attaches `span` to an error that does not yet know where it happened in this frame.
#[inline]
pub fn at(mut e: Exc, span: Span) -> Exc {
    if e.pending.is_none() {
        e.pending = Some(span);
    }
    e
}

/// How a statement finished. `Return`'s value waits in `Interp::ret`, so a `Flow` result
/// stays two registers wide on the hot path (no `Value` copied through every block).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Normal,
    Break,
    Continue,
    Return,
}

/// Where printed text goes (a host callback).
pub type OutputSink = Box<dyn FnMut(&str)>;

/// The interpreter state: the value stack holding all frames' slots, modules, builtins.
pub struct Interp {
    pub stack: Vec<Value>,
    pub fp: usize,
    pub globals: Rc<ModuleObj>,
    pub cur_func: Option<Rc<Function>>,
    /// The value of the `return` being executed (see `Flow::Return`).
    pub ret: Value,
    pub depth: usize,
    pub max_depth: usize,
    pub interrupt: Arc<AtomicBool>,
    /// Operation budget and deadline of the current run (see `limits`).
    pub limits: limits::LimitState,
    pub b: builtins::Builtins,
    pub modules: HashMap<Rc<str>, Rc<ModuleObj>>,
    /// How many stdlib module bodies (or `torch.*` alias resolutions) are running: their
    /// imports name Kiln's own modules even where the script's folder has a file of the
    /// same name (src/interp/modules.rs).
    pub(crate) stdlib_imports: u32,
    /// The folder of the user module whose import started the running stdlib code.
    pub(crate) stdlib_caller_dir: Option<std::path::PathBuf>,
    pub sources: SourceMap,
    pub output: OutputSink,
    /// Where `sys.stderr` writes go (None: the process's stderr).
    pub err_output: Option<OutputSink>,
    /// A front end's rich-display hook (`display`, `plt.show()`); None in a terminal.
    pub display: Option<builtins::display::DisplayHook>,
    pub class_ns: Vec<Rc<RefCell<NameMap>>>,
    /// Exceptions being handled (innermost last), for bare `raise`.
    pub handling: Vec<ExcInner>,
    pub rng: Option<builtins::pyrandom::PyRandom>,
    /// Files allowed to be imported from disk.
    pub allow_fs: bool,
    /// Sandbox mode: no module that touches the host (`io`) may be imported.
    pub sandbox: bool,
    pub main: Rc<ModuleObj>,
    /// Containers whose repr is in progress (to print `[...]` for cycles).
    pub repr_guard: Vec<usize>,
    /// `@compile` captures and replays (off with `KILN_EAGER=1` or `Engine::set_compile`).
    pub compile_enabled: bool,
    /// Every compiled call checked against eager (`KILN_CHECK=1`, `Engine::set_compile_check`).
    pub compile_check: bool,
    /// Set once a user `__hash__` ran: from then on a key missing by identity may still
    /// equal a map's key by a user `__eq__` (`keys`); until then no lookup pays for it.
    pub user_keys: bool,
}

impl Interp {
    pub fn new() -> Interp {
        // a fresh program starts from float32 (`set_default_dtype` is per thread)
        crate::tensor::dtype::set_default_float(crate::tensor::DType::F32);
        crate::tensor::format::set_print_options(crate::tensor::format::PrintOptions::DEFAULT);
        let main = Rc::new(ModuleObj::new("__main__", None));
        gc::track_module(&main);
        main.set(&"__name__".into(), Value::str("__main__"));
        Interp {
            stack: Vec::with_capacity(1024),
            fp: 0,
            globals: main.clone(),
            cur_func: None,
            ret: Value::None,
            depth: 0,
            max_depth: 1000,
            interrupt: Arc::new(AtomicBool::new(false)),
            limits: limits::LimitState::default(),
            b: builtins::Builtins::new(),
            modules: HashMap::new(),
            stdlib_imports: 0,
            stdlib_caller_dir: None,
            sources: SourceMap::new(),
            output: Box::new(|s| {
                use std::io::Write;
                let _ = std::io::stdout().write_all(s.as_bytes());
            }),
            err_output: None,
            display: None,
            class_ns: Vec::new(),
            handling: Vec::new(),
            rng: None,
            allow_fs: true,
            sandbox: false,
            main,
            repr_guard: Vec::new(),
            compile_enabled: !crate::interp::capture::compiled::eager_only(),
            compile_check: crate::compile::capture::check::check_env(),
            user_keys: false,
        }
    }

    /// Writes text to the print sink.
    pub fn write(&mut self, s: &str) {
        (self.output)(s)
    }
}

impl Default for Interp {
    fn default() -> Self {
        Interp::new()
    }
}
