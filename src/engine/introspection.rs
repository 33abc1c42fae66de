//! Looking into an `Engine` without running script code (REPL and tooling): graphs of
//! compiled functions, rendered errors, `repr`, globals, builtin and attribute names.

use super::Engine;
use crate::error::{Error, Result};
use crate::interp::value::Value;

impl Engine {
    /// The IR text of the version a compiled global used last (the REPL's `:graph`),
    /// or None when `name` is not a compiled function that has run.
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// engine.eval("@compile\ndef f(x):\n    return x * 2.0\nf(ones(3))").unwrap();
    /// assert!(engine.last_graph("f").is_some_and(|g| g.contains("f32[3]")));
    /// engine.eval("def g(x):\n    return x").unwrap();
    /// assert!(engine.last_graph("g").is_none());
    /// ```
    pub fn last_graph(&self, name: &str) -> Option<String> {
        let v = self.get_global(name)?;
        crate::interp::builtins::compile::last_graph(&self.interp, &v)
    }

    /// The IR text of the first captured version of a compiled global
    /// (`kiln graph FILE FUNC`), or None as for [`Engine::last_graph`].
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// engine.eval("@compile\ndef f(x):\n    return x + 1.0").unwrap();
    /// assert!(engine.first_graph("f").is_none());
    /// engine.eval("f(ones(2))").unwrap();
    /// assert!(engine.first_graph("f").is_some_and(|g| g.contains("f32[2]")));
    /// ```
    pub fn first_graph(&self, name: &str) -> Option<String> {
        let v = self.get_global(name)?;
        crate::interp::builtins::compile::first_graph(&self.interp, &v)
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

    /// The MIME bundle a notebook shows for `v`: `text/plain` (its repr) first, then what
    /// its class's `_repr_html_`/`_repr_markdown_`/`_repr_svg_`/`_repr_png_` return.
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// let v = engine.eval("[1, 2]").unwrap();
    /// let bundle = engine.mime_bundle(&v).unwrap();
    /// assert_eq!(bundle, [("text/plain".to_string(), "[1, 2]".to_string())]);
    /// ```
    pub fn mime_bundle(&mut self, v: &Value) -> Result<Vec<(String, String)>> {
        self.run(|me| me.mime_bundle(v))
    }

    /// What a notebook's inspector shows for `v`: type, signature, docstring and repr.
    ///
    /// ```
    /// let mut engine = kiln::Engine::new();
    /// let f = engine.eval("def lerp(a, b, t=0.5):\n    'Mixes a and b.'\n    return a\nlerp").unwrap();
    /// let text = engine.inspect(&f).unwrap();
    /// assert!(text.contains("Signature: lerp(a, b, t=0.5)"));
    /// assert!(text.contains("Docstring: Mixes a and b."));
    /// ```
    pub fn inspect(&mut self, v: &Value) -> Result<String> {
        self.run(|me| me.inspect_text(v))
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
        crate::interp::suggest::attr_names(v)
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
                let field = inst.attr(name);
                field.or_else(|| inst.class.lookup(name))
            }
            Value::Class(c) => c.lookup(name),
            Value::Module(m) => m.get(name),
            _ => None,
        }
    }
}
