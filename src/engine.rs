//! The embedding API: `Engine` runs Kiln source and exposes globals, output, errors,
//! host functions and modules, and the safety limits of `crate::interp::limits`.

use crate::embed::convert::{convert, FromValue, IntoArgs, IntoValue};
use crate::embed::native::{host_value, HostFunction, NativeModule};
use crate::error::{Error, ErrorKind, Result};
use crate::interp::limits::Limits;
use crate::interp::resolve::resolve_module;
use crate::interp::value::Value;
use crate::interp::{Interp, R};
use crate::source::FileId;
use foldhash::fast::FixedState;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::path::Path;
use std::rc::Rc;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

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

    /// A fresh engine with `limits` applied to every run.
    ///
    /// ```
    /// let limits = kiln::Limits { max_operations: Some(1000), ..Default::default() };
    /// let mut engine = kiln::Engine::with_limits(limits);
    /// assert!(engine.eval("for i in range(10**6):\n    pass").is_err());
    /// ```
    pub fn with_limits(limits: Limits) -> Engine {
        let mut e = Engine::new();
        e.limits = limits;
        e
    }

    /// Replaces the limits; they apply from the next run on.
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// engine.set_limits(kiln::Limits { max_call_depth: 10, ..Default::default() });
    /// let e = engine.eval("def f(n):\n    return f(n + 1)\nf(0)").unwrap_err();
    /// assert_eq!(e.kind, kiln::ErrorKind::RecursionError);
    /// ```
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// The limits in force.
    ///
    /// ```
    /// assert_eq!(kiln::Engine::new().limits().max_call_depth, 1000);
    /// ```
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Sandbox mode: no file access from scripts (imports from disk, the `io` module and
    /// with it `Module.save`/`load`), and `progress(...)` never draws on the host's
    /// terminal. Host-registered modules and functions stay available; `run_file` (the
    /// host reading a file) still works. The `time` module stays: reading the clocks is
    /// harmless, and `time.sleep` wakes for the wall-time limit and the interrupt handle.
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// engine.set_sandbox(true);
    /// let e = engine.eval("import io").unwrap_err();
    /// assert_eq!(e.kind, kiln::ErrorKind::ImportError);
    /// ```
    pub fn set_sandbox(&mut self, on: bool) {
        self.sandbox = on;
        self.interp.allow_fs = !on;
        self.interp.sandbox = on;
    }

    /// Turns `@compile` on or off for this engine (off: compiled functions run eagerly,
    /// as with `KILN_EAGER=1`).
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// engine.set_compile(false);
    /// assert_eq!(engine.eval_as::<i64>("compile(lambda x: x + 1)(2)").unwrap(), 3);
    /// ```
    pub fn set_compile(&mut self, on: bool) {
        self.interp.compile_enabled = on;
    }

    /// The IR text of the version a compiled global used last (the REPL's `:graph`),
    /// or None when `name` is not a compiled function that has run.
    pub fn last_graph(&self, name: &str) -> Option<String> {
        let v = self.get_global(name)?;
        crate::interp::builtins::compile::last_graph(&self.interp, &v)
    }

    /// The IR text of the first captured version of a compiled global
    /// (`kiln graph FILE FUNC`).
    pub fn first_graph(&self, name: &str) -> Option<String> {
        let v = self.get_global(name)?;
        crate::interp::builtins::compile::first_graph(&self.interp, &v)
    }

    /// Whether sandbox mode is on.
    ///
    /// ```
    /// assert!(!kiln::Engine::new().is_sandboxed());
    /// ```
    pub fn is_sandboxed(&self) -> bool {
        self.sandbox
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
    fn run<T>(&mut self, f: impl FnOnce(&mut Interp) -> R<T>) -> Result<T> {
        let depth = self.interp.depth;
        let guard = self.interp.begin_run(&self.limits);
        let r = f(&mut self.interp);
        self.interp.depth = depth;
        let r = r.map_err(|e| self.interp.finish_error(e));
        self.interp.end_run(guard);
        r
    }

    /// Runs `src` in the main module; returns the value of a final expression statement
    /// (else `None`).
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// let v = engine.eval("x = 20\nx + 1").unwrap();
    /// assert_eq!(engine.repr(&v).unwrap(), "21");
    /// ```
    pub fn eval(&mut self, src: &str) -> Result<Value> {
        self.run_source(src, "<string>")
    }

    /// [`Engine::eval`] converting the result to a Rust type (`TypeError` if it does not
    /// convert).
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// let v: Vec<i64> = engine.eval_as("[i * i for i in range(4)]").unwrap();
    /// assert_eq!(v, vec![0, 1, 4, 9]);
    /// ```
    pub fn eval_as<T: FromValue>(&mut self, src: &str) -> Result<T> {
        let v = self.eval(src)?;
        convert(&v, "the result")
    }

    /// Like [`Engine::eval`] with a display name for diagnostics (`<stdin>`, a path).
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// let e = engine.run_source("1/0", "calc.dl").unwrap_err();
    /// assert!(engine.render_error(&e).contains("calc.dl"));
    /// ```
    pub fn run_source(&mut self, src: &str, name: &str) -> Result<Value> {
        let file = self.add_source(name, src);
        let ast = crate::syntax::parse_module(src, file).map_err(first_error)?;
        let main = self.interp.main.clone();
        let code = resolve_module(&ast, &main)?;
        self.run(|me| me.run_code(&code, main))
    }

    /// Runs a script file; imports resolve next to it first.
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// let e = engine.run_file("/no/such/file.dl").unwrap_err();
    /// assert_eq!(e.kind, kiln::ErrorKind::ImportError);
    /// ```
    pub fn run_file(&mut self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| {
            Error::new(
                ErrorKind::ImportError,
                format!("cannot open '{}': {}", path.display(), e),
                None,
            )
        })?;
        let src = String::from_utf8(bytes).map_err(|e| {
            Error::new(
                ErrorKind::SyntaxError,
                format!(
                    "'{}' is not valid UTF-8 (invalid byte at offset {})",
                    path.display(),
                    e.utf8_error().valid_up_to()
                ),
                None,
            )
        })?;
        let dir = path.parent().map(|p| {
            if p.as_os_str().is_empty() {
                std::path::PathBuf::from(".")
            } else {
                p.to_path_buf()
            }
        });
        *self.interp.main.dir.borrow_mut() = dir;
        self.run_source(&src, &path.display().to_string())
            .map(|_| ())
    }

    /// Parses `src` without running it and returns every syntax error found.
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// assert!(engine.check("x = 1", "<check>").is_empty());
    /// assert_eq!(engine.check("x = (", "<check>")[0].kind, kiln::ErrorKind::SyntaxError);
    /// ```
    pub fn check(&mut self, src: &str, name: &str) -> Vec<Error> {
        let file = self.add_source(name, src);
        match crate::syntax::parse_module(src, file) {
            Ok(ast) => {
                let scratch = crate::interp::value::ModuleObj::new("__check__", None);
                match resolve_module(&ast, &scratch) {
                    Ok(_) => Vec::new(),
                    Err(e) => vec![e],
                }
            }
            Err(es) => es,
        }
    }

    /// Sets the `argv` global (`[script, args...]`).
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// engine.set_argv(vec!["a.dl".into(), "-v".into()]);
    /// assert_eq!(engine.get::<Vec<String>>("argv").unwrap(), ["a.dl", "-v"]);
    /// ```
    pub fn set_argv(&mut self, argv: Vec<String>) {
        self.set("argv", argv);
    }

    /// Redirects `print` output to a host callback (default: stdout).
    ///
    /// ```
    /// use std::{cell::RefCell, rc::Rc};
    /// let out = Rc::new(RefCell::new(String::new()));
    /// let sink = out.clone();
    /// let mut engine = kiln::Engine::new();
    /// engine.set_output(Box::new(move |s| sink.borrow_mut().push_str(s)));
    /// engine.eval("print('hi', 2)").unwrap();
    /// assert_eq!(*out.borrow(), "hi 2\n");
    /// ```
    pub fn set_output(&mut self, out: Box<dyn FnMut(&str)>) {
        self.interp.output = out;
    }

    /// A global of the main module, if bound.
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// engine.eval("x = 1").unwrap();
    /// assert!(engine.get_global("x").is_some());
    /// assert!(engine.get_global("y").is_none());
    /// ```
    pub fn get_global(&self, name: &str) -> Option<Value> {
        self.interp.main.get(name)
    }

    /// Binds a global of the main module to a Kiln value.
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// engine.set_global("x", kiln::Value::Int(4));
    /// assert_eq!(engine.eval_as::<i64>("x * 2").unwrap(), 8);
    /// ```
    pub fn set_global(&mut self, name: &str, v: Value) {
        let n: Rc<str> = name.into();
        self.interp.main.set(&n, v);
    }

    /// A global converted to a Rust type: `NameError` if unbound, `TypeError` if it
    /// does not convert.
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// engine.eval("w = [0.5, 1.5]").unwrap();
    /// let w: Vec<f64> = engine.get("w").unwrap();
    /// assert_eq!(w, [0.5, 1.5]);
    /// assert_eq!(engine.get::<String>("w").unwrap_err().kind, kiln::ErrorKind::TypeError);
    /// ```
    pub fn get<T: FromValue>(&self, name: &str) -> Result<T> {
        let v = self.get_global(name).ok_or_else(|| name_error(name))?;
        convert(&v, &format!("global '{name}'"))
    }

    /// Binds a global to a Rust value.
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// engine.set("lr", 0.1);
    /// engine.set("sizes", vec![2i64, 3]);
    /// assert_eq!(engine.eval_as::<f64>("lr * sizes[1]").unwrap(), 0.1 * 3.0);
    /// ```
    pub fn set(&mut self, name: &str, v: impl IntoValue) {
        self.set_global(name, v.into_value());
    }

    /// Calls a global function with positional arguments (a tuple of Rust values, `()`,
    /// or a `Vec<Value>`) and converts the result (use `Value` to keep it as is).
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// engine.eval("def mean(xs):\n    return sum(xs) / len(xs)").unwrap();
    /// let m: f64 = engine.call("mean", (vec![1.0, 2.0, 6.0],)).unwrap();
    /// assert_eq!(m, 3.0);
    /// ```
    pub fn call<A: IntoArgs, T: FromValue>(&mut self, name: &str, args: A) -> Result<T> {
        let f = self.get_global(name).ok_or_else(|| name_error(name))?;
        self.call_value(&f, args)
    }

    /// Calls any callable value (a function, a bound method, a class).
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// let f = engine.eval("lambda a, b: a + b").unwrap();
    /// let s: String = engine.call_value(&f, ("ab", "cd")).unwrap();
    /// assert_eq!(s, "abcd");
    /// ```
    pub fn call_value<A: IntoArgs, T: FromValue>(&mut self, f: &Value, args: A) -> Result<T> {
        let args = args.into_args();
        let v = self.run(|me| me.call_value(f, args, Vec::new()))?;
        convert(&v, "the result")
    }

    /// Registers a Rust closure as a global function. Arguments convert through
    /// [`FromValue`]; a wrong count or type raises `TypeError` in the script naming the
    /// function and the argument. Return any [`IntoValue`] or `Result<T, kiln::Error>`.
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// engine.register_fn("hypot", |a: f64, b: f64| (a * a + b * b).sqrt());
    /// assert_eq!(engine.eval_as::<f64>("hypot(3, 4)").unwrap(), 5.0);
    /// let e = engine.eval("hypot(3, 'x')").unwrap_err();
    /// assert_eq!(e.message, "hypot() argument 2 must be float, not str");
    /// ```
    pub fn register_fn<Args, F: HostFunction<Args>>(&mut self, name: &str, f: F) {
        self.set_global(name, host_value(name, f));
    }

    /// Makes a [`NativeModule`] importable (`import name`); replaces a module of that
    /// name already imported.
    ///
    /// ```
    /// let mut m = kiln::embed::NativeModule::new("cfg");
    /// m.constant("batch", 32i64);
    /// let mut engine = kiln::Engine::new();
    /// engine.register_module(m);
    /// assert_eq!(engine.eval_as::<i64>("from cfg import batch\nbatch").unwrap(), 32);
    /// ```
    pub fn register_module(&mut self, m: NativeModule) {
        self.interp.modules.insert(m.name, m.module);
    }

    /// The maximum Kiln call depth before RecursionError (default 1000); the same as
    /// [`Limits::max_call_depth`].
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// engine.set_max_depth(50);
    /// assert_eq!(engine.limits().max_call_depth, 50);
    /// ```
    pub fn set_max_depth(&mut self, n: usize) {
        self.limits.max_call_depth = n;
    }

    /// Frees the reference cycles scripts left behind (a full collection; automatic
    /// collections also run as scripts allocate). Returns how many objects it freed.
    /// Values the host holds, and everything they reach, are never freed.
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// engine.eval("def f():\n    xs = []\n    xs.append(xs)\nf()").unwrap();
    /// assert!(engine.collect_garbage() >= 1);
    /// ```
    pub fn collect_garbage(&mut self) -> usize {
        crate::interp::gc::collect()
    }

    /// Whether imports may read `.dl` files from disk (see also [`Engine::set_sandbox`]).
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// engine.set_file_access(false);
    /// assert!(engine.eval("import my_local_module").is_err());
    /// ```
    pub fn set_file_access(&mut self, allowed: bool) {
        self.interp.allow_fs = allowed;
    }

    /// Renders an error as plain text exactly as the CLI prints it: traceback, source
    /// snippet, `Type: message`.
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// let e = engine.eval("[1][5]").unwrap_err();
    /// assert!(engine.render_error(&e).contains("IndexError: list index out of range"));
    /// ```
    pub fn render_error(&self, e: &Error) -> String {
        crate::diagnostic::render(e, &self.interp.sources, false)
    }

    /// Renders an error with ANSI colors (for terminals).
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// let e = engine.eval("nope").unwrap_err();
    /// assert!(engine.render_error_color(&e).contains("NameError"));
    /// ```
    pub fn render_error_color(&self, e: &Error) -> String {
        crate::diagnostic::render(e, &self.interp.sources, true)
    }

    /// A flag another thread may set to interrupt the running script: it raises
    /// `KeyboardInterrupt` at the next check (loop iterations, calls, and between row
    /// blocks of a large matmul). The run that sees it clears it; one set while no
    /// script runs interrupts the next run.
    ///
    /// ```
    /// use std::sync::atomic::Ordering;
    /// let mut engine = kiln::Engine::new();
    /// let flag = engine.interrupt_handle();
    /// let t = std::thread::spawn(move || {
    ///     std::thread::sleep(std::time::Duration::from_millis(50));
    ///     flag.store(true, Ordering::Relaxed);
    /// });
    /// let e = engine.eval("while True:\n    pass").unwrap_err();
    /// t.join().unwrap();
    /// assert_eq!(e.kind, kiln::ErrorKind::KeyboardInterrupt);
    /// ```
    pub fn interrupt_handle(&self) -> Arc<AtomicBool> {
        self.interp.interrupt.clone()
    }

    /// `repr(v)` as the language prints it (runs `__repr__`, under the limits).
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// let v = engine.eval("('a', 1.0)").unwrap();
    /// assert_eq!(engine.repr(&v).unwrap(), "('a', 1.0)");
    /// ```
    pub fn repr(&mut self, v: &Value) -> Result<String> {
        self.run(|me| me.repr(v))
    }

    /// The bound names of the main module with their values, in definition order
    /// (for a REPL's `:vars` and name completion).
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// engine.eval("a = 1\nb = 2").unwrap();
    /// let names: Vec<String> = engine.globals().into_iter().map(|(k, _)| k).collect();
    /// assert!(names.ends_with(&["a".to_string(), "b".to_string()]));
    /// ```
    pub fn globals(&self) -> Vec<(String, Value)> {
        self.interp
            .main
            .items()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    }

    /// The names of the builtin namespace (functions, types, exceptions), sorted.
    ///
    /// ```
    /// assert!(kiln::Engine::new().builtin_names().contains(&"print".to_string()));
    /// ```
    pub fn builtin_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.interp.b.names.keys().map(|k| k.to_string()).collect();
        names.sort();
        names
    }

    /// The attribute names `v.<name>` resolves to, sorted and without duplicates, found
    /// without running script code (for completion): instance fields, class members
    /// (bases included), module members and the methods of built-in types.
    ///
    /// ```
    /// let engine = kiln::Engine::new();
    /// let names = engine.attr_names(&kiln::Value::str("s"));
    /// assert!(names.contains(&"upper".to_string()));
    /// ```
    pub fn attr_names(&self, v: &Value) -> Vec<String> {
        let mut names: Vec<String> = match v {
            Value::Instance(inst) => {
                let mut n: Vec<String> = inst.dict.borrow().keys().map(|k| k.to_string()).collect();
                n.extend(class_names(&inst.class));
                n
            }
            Value::Class(c) => class_names(c),
            Value::Module(m) => m.items().into_iter().map(|(k, _)| k.to_string()).collect(),
            other => builtin_method_names(other)
                .iter()
                .map(|s| s.to_string())
                .collect(),
        };
        names.sort();
        names.dedup();
        names
    }

    /// `v.name` looked up without running script code (no `__getattr__`, no binding of
    /// methods); `None` when that finds nothing. For completing `a.b.<TAB>`.
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// let m = engine.eval("import math\nmath").unwrap();
    /// assert!(engine.peek_attr(&m, "pi").is_some());
    /// assert!(engine.peek_attr(&m, "nope").is_none());
    /// ```
    pub fn peek_attr(&self, v: &Value, name: &str) -> Option<Value> {
        match v {
            Value::Instance(inst) => {
                let field = inst.dict.borrow().get(name).cloned();
                field.or_else(|| inst.class.lookup(name))
            }
            Value::Class(c) => c.lookup(name),
            Value::Module(m) => m.get(name),
            _ => None,
        }
    }
}

fn map_keys(m: &crate::interp::value::NameMap) -> Vec<String> {
    m.keys().map(|k| k.to_string()).collect()
}

/// The member names of a class and its bases.
fn class_names(c: &Rc<crate::interp::value::Class>) -> Vec<String> {
    let mut names = map_keys(&c.dict.borrow());
    for k in &c.mro {
        names.extend(map_keys(&k.dict.borrow()));
    }
    names
}

/// The methods of a built-in type's values (`"s".upper`, `xs.append`).
fn builtin_method_names(v: &Value) -> &'static [&'static str] {
    use crate::interp::builtins::{methods, seqmethods};
    match v {
        Value::Str(_) => methods::STR_METHODS,
        Value::List(_) => seqmethods::LIST_METHODS,
        Value::Dict(_) => seqmethods::DICT_METHODS,
        Value::Set(_) => seqmethods::SET_METHODS,
        Value::Tuple(_) => &["count", "index"],
        Value::Tensor(_) => crate::interp::builtins::tensor_methods::TENSOR_METHODS,
        _ => &[],
    }
}

fn name_error(name: &str) -> Error {
    Error::new(
        ErrorKind::NameError,
        format!("name '{name}' is not defined"),
        None,
    )
}

fn first_error(mut es: Vec<Error>) -> Error {
    if es.is_empty() {
        Error::new(ErrorKind::SyntaxError, "invalid syntax", None)
    } else {
        es.swap_remove(0)
    }
}
