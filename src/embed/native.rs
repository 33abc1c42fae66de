//! Host functions and modules: Rust closures with typed arguments become Kiln callables
//! ([`HostFunction`]), grouped into importable [`NativeModule`]s.

use super::convert::{mismatch, FromValue, IntoValue};
use crate::error::Error;
use crate::interp::value::{HostImpl, ModuleObj, NativeCode, NativeFn, Value};
use crate::interp::{type_err, ExcInner, R};
use std::cell::RefCell;
use std::rc::Rc;

/// What a host function may return: any [`IntoValue`], or `Result<T, kiln::Error>`
/// (an `Err` is raised in the script as that exception and can be caught there).
///
/// ```
/// use kiln::{Engine, Error, ErrorKind};
/// let mut engine = Engine::new();
/// engine.register_fn("root", |x: f64| {
///     if x < 0.0 {
///         return Err(Error::new(ErrorKind::ValueError, "negative input", None));
///     }
///     Ok(x.sqrt())
/// });
/// assert_eq!(engine.eval_as::<f64>("root(9.0)").unwrap(), 3.0);
/// let caught: String = engine
///     .eval_as("try:\n    root(-1.0)\nexcept ValueError as e:\n    r = str(e)\nr")
///     .unwrap();
/// assert_eq!(caught, "negative input");
/// ```
pub trait IntoReturn {
    /// The returned value, or the error to raise.
    fn into_return(self) -> Result<Value, Error>;
}

impl<T: IntoValue> IntoReturn for T {
    fn into_return(self) -> Result<Value, Error> {
        Ok(self.into_value())
    }
}

impl<T: IntoValue> IntoReturn for Result<T, Error> {
    fn into_return(self) -> Result<Value, Error> {
        self.map(IntoValue::into_value)
    }
}

/// A Rust closure callable from scripts: `FnMut(A, B, ...) -> R` with up to six
/// arguments of [`FromValue`] types. Implemented for every such closure; `Args` is the
/// tuple of argument types (inferred).
///
/// ```
/// let mut engine = kiln::Engine::new();
/// let mut calls = 0i64;
/// engine.register_fn("tick", move || {
///     calls += 1;
///     calls
/// });
/// engine.register_fn("join", |a: String, b: String, n: i64| format!("{a}{b}").repeat(n as usize));
/// assert_eq!(engine.eval_as::<i64>("tick()\ntick()").unwrap(), 2);
/// assert_eq!(engine.eval_as::<String>("join('a', 'b', 2)").unwrap(), "abab");
/// ```
pub trait HostFunction<Args>: 'static {
    /// Wraps the closure: arity and argument types are checked on each call and a
    /// mismatch raises `TypeError` naming the function and the argument.
    fn into_host(self, name: Rc<str>) -> HostImpl;
}

fn exc(e: Error) -> crate::interp::Exc {
    Box::new(ExcInner {
        error: e,
        value: None,
        pending: None,
        frames: Vec::new(),
        missing: None,
    })
}

fn check_arity(name: &str, args: &[Value], n: usize) -> R<()> {
    if args.len() == n {
        return Ok(());
    }
    let s = if n == 1 { "" } else { "s" };
    Err(type_err(format!(
        "{name}() takes {n} positional argument{s} but {} were given",
        args.len()
    )))
}

/// Converts argument `i` (0-based) of `name`, or the `TypeError` naming it.
fn arg<T: FromValue>(name: &str, args: &[Value], i: usize) -> R<T> {
    let none = Value::None;
    let v = args.get(i).unwrap_or(&none);
    T::from_value(v).ok_or_else(|| exc(mismatch::<T>(v, &format!("{name}() argument {}", i + 1))))
}

macro_rules! host_fn {
    ($n:literal; $($t:ident $i:tt),*) => {
        impl<Func, Ret, $($t),*> HostFunction<($($t,)*)> for Func
        where
            Func: FnMut($($t),*) -> Ret + 'static,
            Ret: IntoReturn,
            $($t: FromValue,)*
        {
            #[allow(unused_variables)]
            fn into_host(mut self, name: Rc<str>) -> HostImpl {
                Box::new(move |args: &[Value]| {
                    check_arity(&name, args, $n)?;
                    let r = self($(arg::<$t>(&name, args, $i)?),*);
                    r.into_return().map_err(exc)
                })
            }
        }
    };
}

host_fn!(0;);
host_fn!(1; A 0);
host_fn!(2; A 0, B 1);
host_fn!(3; A 0, B 1, C 2);
host_fn!(4; A 0, B 1, C 2, D 3);
host_fn!(5; A 0, B 1, C 2, D 3, E 4);
host_fn!(6; A 0, B 1, C 2, D 3, E 4, F 5);

/// Wraps a host closure as a Kiln function value named `name`.
pub(crate) fn host_value<Args, F: HostFunction<Args>>(name: &str, f: F) -> Value {
    let name: Rc<str> = name.into();
    Value::Native(Rc::new(NativeFn {
        name: name.clone(),
        code: NativeCode::Host(RefCell::new(f.into_host(name))),
    }))
}

/// A module of host functions and constants that scripts can `import`.
///
/// ```
/// use kiln::{embed::NativeModule, Engine};
/// let mut m = NativeModule::new("host");
/// m.function("twice", |x: f64| 2.0 * x).constant("version", 3i64);
/// let mut engine = Engine::new();
/// engine.register_module(m);
/// let v: f64 = engine.eval_as("import host\nhost.twice(host.version)").unwrap();
/// assert_eq!(v, 6.0);
/// ```
pub struct NativeModule {
    pub(crate) name: Rc<str>,
    pub(crate) module: Rc<ModuleObj>,
}

impl NativeModule {
    /// An empty module that `import name` will find.
    ///
    /// ```
    /// let m = kiln::embed::NativeModule::new("sensors");
    /// assert_eq!(m.name(), "sensors");
    /// ```
    pub fn new(name: &str) -> NativeModule {
        let module = Rc::new(ModuleObj::new(name, None));
        module.set(&"__name__".into(), Value::str(name));
        NativeModule {
            name: name.into(),
            module,
        }
    }

    /// The name scripts import.
    ///
    /// ```
    /// assert_eq!(kiln::embed::NativeModule::new("m").name(), "m");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Adds a host function (see [`crate::Engine::register_fn`]).
    ///
    /// ```
    /// let mut m = kiln::embed::NativeModule::new("m");
    /// m.function("add", |a: i64, b: i64| a + b);
    /// ```
    pub fn function<Args, F: HostFunction<Args>>(&mut self, name: &str, f: F) -> &mut Self {
        self.module.set(&name.into(), host_value(name, f));
        self
    }

    /// Adds a constant.
    ///
    /// ```
    /// let mut m = kiln::embed::NativeModule::new("m");
    /// m.constant("names", vec!["a", "b"]);
    /// ```
    pub fn constant(&mut self, name: &str, v: impl IntoValue) -> &mut Self {
        self.module.set(&name.into(), v.into_value());
        self
    }
}
