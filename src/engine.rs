//! The embedding API: `Engine` runs Kiln source and exposes globals, output and errors.

use crate::error::{Error, ErrorKind, Result};
use crate::interp::resolve::resolve_module;
use crate::interp::value::Value;
use crate::interp::Interp;
use std::path::Path;
use std::rc::Rc;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// A Kiln interpreter instance. State (globals, imported modules) persists across calls,
/// including after an error.
pub struct Engine {
    interp: Interp,
}

impl Default for Engine {
    fn default() -> Self {
        Engine::new()
    }
}

impl Engine {
    pub fn new() -> Engine {
        Engine {
            interp: Interp::new(),
        }
    }

    /// Runs `src` in the main module; returns the value of a final expression statement
    /// (else `None`).
    pub fn eval(&mut self, src: &str) -> Result<Value> {
        self.run_source(src, "<string>")
    }

    /// Like [`Engine::eval`] with a display name for diagnostics (`<stdin>`, a path).
    pub fn run_source(&mut self, src: &str, name: &str) -> Result<Value> {
        let file = self.interp.sources.add(name, src);
        let ast = crate::syntax::parse_module(src, file).map_err(first_error)?;
        let main = self.interp.main.clone();
        let code = resolve_module(&ast, &main)?;
        let depth = self.interp.depth;
        let r = self.interp.run_code(&code, main);
        self.interp.depth = depth;
        r.map_err(|e| self.interp.finish_error(e))
    }

    /// Runs a script file; imports resolve next to it first.
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
    pub fn check(&mut self, src: &str, name: &str) -> Vec<Error> {
        let file = self.interp.sources.add(name, src);
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
    pub fn set_argv(&mut self, argv: Vec<String>) {
        let v = Value::list(argv.iter().map(|s| Value::str(s)).collect());
        self.set_global("argv", v);
    }

    /// Redirects `print` output.
    pub fn set_output(&mut self, out: Box<dyn FnMut(&str)>) {
        self.interp.output = out;
    }

    pub fn get_global(&self, name: &str) -> Option<Value> {
        self.interp.main.get(name)
    }

    pub fn set_global(&mut self, name: &str, v: Value) {
        let n: Rc<str> = name.into();
        self.interp.main.set(&n, v);
    }

    /// Calls a global function with positional arguments.
    pub fn call(&mut self, name: &str, args: Vec<Value>) -> Result<Value> {
        let f = self.get_global(name).ok_or_else(|| {
            Error::new(
                ErrorKind::NameError,
                format!("name '{name}' is not defined"),
                None,
            )
        })?;
        let depth = self.interp.depth;
        let r = self.interp.call_value(&f, args, Vec::new());
        self.interp.depth = depth;
        r.map_err(|e| self.interp.finish_error(e))
    }

    /// The maximum Kiln call depth before RecursionError (default 1000).
    pub fn set_max_depth(&mut self, n: usize) {
        self.interp.max_depth = n;
    }

    /// Whether imports may read `.dl` files from disk.
    pub fn set_file_access(&mut self, allowed: bool) {
        self.interp.allow_fs = allowed;
    }

    /// Renders an error as plain text: traceback, source snippet, `Type: message`.
    pub fn render_error(&self, e: &Error) -> String {
        crate::diagnostic::render(e, &self.interp.sources, false)
    }

    /// Renders an error with ANSI colors (for terminals).
    pub fn render_error_color(&self, e: &Error) -> String {
        crate::diagnostic::render(e, &self.interp.sources, true)
    }

    /// A flag another thread may set to interrupt the running script (KeyboardInterrupt).
    pub fn interrupt_handle(&self) -> Arc<AtomicBool> {
        self.interp.interrupt.clone()
    }

    /// `repr(v)` as the language prints it.
    pub fn repr(&mut self, v: &Value) -> Result<String> {
        self.interp.repr(v).map_err(|e| self.interp.finish_error(e))
    }

    /// The bound names of the main module with their values, in definition order
    /// (for a REPL's `:vars` and name completion).
    pub fn globals(&self) -> Vec<(String, Value)> {
        self.interp
            .main
            .items()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    }

    /// The names of the builtin namespace (functions, types, exceptions), sorted.
    pub fn builtin_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.interp.b.names.keys().map(|k| k.to_string()).collect();
        names.sort();
        names
    }

    /// The attribute names `v.<name>` resolves to, sorted and without duplicates, found
    /// without running script code (for completion): instance fields, class members
    /// (bases included), module members and the methods of built-in types.
    pub fn attr_names(&self, v: &Value) -> Vec<String> {
        let mut names: Vec<String> = match v {
            Value::Instance(inst) => {
                let mut n = map_keys(&inst.dict.borrow());
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
    let mut names = Vec::new();
    let mut cur = Some(c.clone());
    while let Some(k) = cur {
        names.extend(map_keys(&k.dict.borrow()));
        cur = k.base.clone();
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

fn first_error(mut es: Vec<Error>) -> Error {
    if es.is_empty() {
        Error::new(ErrorKind::SyntaxError, "invalid syntax", None)
    } else {
        es.swap_remove(0)
    }
}
