//! Running code with an `Engine`: evaluating source and files, syntax checks, calling
//! script functions, and where `print` output and `argv` come from.

use super::{name_error, Engine};
use crate::embed::convert::{convert, FromValue, IntoArgs};
use crate::error::{Error, ErrorKind, Result};
use crate::interp::resolve::resolve_module;
use crate::interp::value::Value;
use std::path::Path;

impl Engine {
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
        let main = self.interp.main.clone();
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let ast = crate::syntax::parse_module(src, file).map_err(first_error)?;
            resolve_module(&ast, &main)
        }))
        .unwrap_or_else(|p| Err(super::panic::panic_error(p.as_ref())))?;
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

    /// Redirects `sys.stderr.write` (and `print(..., file=sys.stderr)`) to a host
    /// callback (default: the process's stderr).
    ///
    /// ```
    /// use std::{cell::RefCell, rc::Rc};
    /// let err = Rc::new(RefCell::new(String::new()));
    /// let sink = err.clone();
    /// let mut engine = kiln::Engine::new();
    /// engine.set_error_output(Box::new(move |s| sink.borrow_mut().push_str(s)));
    /// engine.eval("import sys\nprint('warn', file=sys.stderr)").unwrap();
    /// assert_eq!(*err.borrow(), "warn\n");
    /// ```
    pub fn set_error_output(&mut self, out: Box<dyn FnMut(&str)>) {
        self.interp.err_output = Some(out);
    }

    /// Installs a front end's rich-display hook: `display(obj)` and `plt.show()` send it
    /// MIME bundles ((type, data) pairs, `text/plain` first, images base64-encoded)
    /// instead of printing. A notebook kernel uses this.
    ///
    /// ```
    /// use std::{cell::RefCell, rc::Rc};
    /// let got = Rc::new(RefCell::new(Vec::new()));
    /// let sink = got.clone();
    /// let mut engine = kiln::Engine::new();
    /// engine.set_display(Box::new(move |bundle| sink.borrow_mut().push(bundle)));
    /// engine.eval("class C:\n    def _repr_html_(self):\n        return '<b>c</b>'\ndisplay(C())").unwrap();
    /// let got = got.borrow();
    /// assert_eq!(got[0][1], ("text/html".to_string(), "<b>c</b>".to_string()));
    /// ```
    pub fn set_display(&mut self, hook: crate::DisplayHook) {
        self.interp.display = Some(hook);
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
}

fn first_error(mut es: Vec<Error>) -> Error {
    if es.is_empty() {
        Error::new(ErrorKind::SyntaxError, "invalid syntax", None)
    } else {
        es.swap_remove(0)
    }
}
