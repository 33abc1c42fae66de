//! Exchanging values with an `Engine`: reading and binding globals, registering host
//! functions and native modules.

use super::{name_error, Engine};
use crate::embed::convert::{convert, FromValue, IntoValue};
use crate::embed::native::{host_value, HostFunction, NativeModule};
use crate::error::Result;
use crate::interp::value::Value;
use std::rc::Rc;

impl Engine {
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
}
