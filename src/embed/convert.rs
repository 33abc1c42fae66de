//! Conversions between Rust values and Kiln values: [`IntoValue`], [`FromValue`] and
//! [`IntoArgs`] (argument lists for `Engine::call`).

use crate::error::{Error, ErrorKind};
use crate::interp::value::Value;

/// A Rust value that becomes a Kiln value.
///
/// ```
/// use kiln::{IntoValue, Value};
/// let v = (1.5f64, vec![1i64, 2], Some("x")).into_value();
/// assert!(matches!(v, Value::Tuple(_)));
/// ```
pub trait IntoValue {
    /// Converts `self` into a Kiln value.
    fn into_value(self) -> Value;
}

/// A Rust value that can be read from a Kiln value.
///
/// ```
/// use kiln::{FromValue, Value};
/// assert_eq!(f64::from_value(&Value::Int(3)), Some(3.0));
/// assert_eq!(String::from_value(&Value::Int(3)), None);
/// assert_eq!(f64::expected(), "float");
/// ```
pub trait FromValue: Sized {
    /// The Kiln type this reads, for error messages (`float`, `list[int]`).
    fn expected() -> String;
    /// `None` when `v` is not of the expected type.
    fn from_value(v: &Value) -> Option<Self>;
}

/// Converts `v`, or a `TypeError` that says what was expected and what was found
/// (`what` names the value: `global 'x'`, `the result of f()`).
///
/// ```
/// use kiln::{embed::convert::convert, ErrorKind, Value};
/// let e = convert::<i64>(&Value::str("a"), "global 'n'").unwrap_err();
/// assert_eq!(e.kind, ErrorKind::TypeError);
/// assert_eq!(e.message, "global 'n' must be int, not str");
/// ```
pub fn convert<T: FromValue>(v: &Value, what: &str) -> Result<T, Error> {
    T::from_value(v).ok_or_else(|| mismatch::<T>(v, what))
}

/// The `TypeError` for a value that is not a `T`.
pub(crate) fn mismatch<T: FromValue>(v: &Value, what: &str) -> Error {
    Error::new(
        ErrorKind::TypeError,
        format!("{what} must be {}, not {}", T::expected(), v.type_name()),
        None,
    )
}

impl IntoValue for Value {
    fn into_value(self) -> Value {
        self
    }
}

impl FromValue for Value {
    fn expected() -> String {
        "object".into()
    }
    fn from_value(v: &Value) -> Option<Value> {
        Some(v.clone())
    }
}

impl IntoValue for () {
    fn into_value(self) -> Value {
        Value::None
    }
}

impl FromValue for () {
    fn expected() -> String {
        "None".into()
    }
    fn from_value(v: &Value) -> Option<()> {
        matches!(v, Value::None).then_some(())
    }
}

impl IntoValue for bool {
    fn into_value(self) -> Value {
        Value::Bool(self)
    }
}

impl FromValue for bool {
    fn expected() -> String {
        "bool".into()
    }
    fn from_value(v: &Value) -> Option<bool> {
        match v {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
}

impl IntoValue for i64 {
    fn into_value(self) -> Value {
        Value::Int(self)
    }
}

impl FromValue for i64 {
    fn expected() -> String {
        "int".into()
    }
    fn from_value(v: &Value) -> Option<i64> {
        match v {
            Value::Int(i) => Some(*i),
            Value::Bool(b) => Some(i64::from(*b)),
            _ => None,
        }
    }
}

impl IntoValue for i32 {
    fn into_value(self) -> Value {
        Value::Int(i64::from(self))
    }
}

impl FromValue for i32 {
    fn expected() -> String {
        "int (32-bit)".into()
    }
    fn from_value(v: &Value) -> Option<i32> {
        i64::from_value(v).and_then(|i| i32::try_from(i).ok())
    }
}

/// Sizes beyond `i64::MAX` saturate.
impl IntoValue for usize {
    fn into_value(self) -> Value {
        Value::Int(i64::try_from(self).unwrap_or(i64::MAX))
    }
}

impl FromValue for usize {
    fn expected() -> String {
        "non-negative int".into()
    }
    fn from_value(v: &Value) -> Option<usize> {
        i64::from_value(v).and_then(|i| usize::try_from(i).ok())
    }
}

impl IntoValue for f64 {
    fn into_value(self) -> Value {
        Value::Float(self)
    }
}

/// Accepts `float`, `int` and `bool` (as Python's float parameters do).
impl FromValue for f64 {
    fn expected() -> String {
        "float".into()
    }
    fn from_value(v: &Value) -> Option<f64> {
        match v {
            Value::Float(f) => Some(*f),
            Value::Int(i) => Some(*i as f64),
            Value::Bool(b) => Some(f64::from(u8::from(*b))),
            _ => None,
        }
    }
}

impl IntoValue for f32 {
    fn into_value(self) -> Value {
        Value::Float(f64::from(self))
    }
}

impl FromValue for f32 {
    fn expected() -> String {
        "float".into()
    }
    fn from_value(v: &Value) -> Option<f32> {
        f64::from_value(v).map(|f| f as f32)
    }
}

impl IntoValue for String {
    fn into_value(self) -> Value {
        Value::str(&self)
    }
}

impl IntoValue for &str {
    fn into_value(self) -> Value {
        Value::str(self)
    }
}

impl FromValue for String {
    fn expected() -> String {
        "str".into()
    }
    fn from_value(v: &Value) -> Option<String> {
        match v {
            Value::Str(s) => Some(s.to_string()),
            _ => None,
        }
    }
}

impl<T: IntoValue> IntoValue for Vec<T> {
    fn into_value(self) -> Value {
        Value::list(self.into_iter().map(IntoValue::into_value).collect())
    }
}

/// Reads a `list` or a `tuple` whose items all convert.
impl<T: FromValue> FromValue for Vec<T> {
    fn expected() -> String {
        format!("list[{}]", T::expected())
    }
    fn from_value(v: &Value) -> Option<Vec<T>> {
        match v {
            Value::List(l) => l.try_borrow().ok()?.iter().map(T::from_value).collect(),
            Value::Tuple(t) | Value::Size(t) => t.iter().map(T::from_value).collect(),
            _ => None,
        }
    }
}

impl<T: IntoValue> IntoValue for Option<T> {
    fn into_value(self) -> Value {
        self.map_or(Value::None, IntoValue::into_value)
    }
}

/// `None` reads as `None`; anything else must convert to `T`.
impl<T: FromValue> FromValue for Option<T> {
    fn expected() -> String {
        format!("{} or None", T::expected())
    }
    fn from_value(v: &Value) -> Option<Option<T>> {
        match v {
            Value::None => Some(None),
            _ => T::from_value(v).map(Some),
        }
    }
}

macro_rules! tuple_conv {
    ($n:literal; $($t:ident $i:tt),+) => {
        impl<$($t: IntoValue),+> IntoValue for ($($t,)+) {
            fn into_value(self) -> Value {
                Value::tuple(vec![$(self.$i.into_value()),+])
            }
        }

        /// Reads a `tuple` or `list` of exactly this length.
        impl<$($t: FromValue),+> FromValue for ($($t,)+) {
            fn expected() -> String {
                let parts: Vec<String> = vec![$($t::expected()),+];
                format!("tuple[{}]", parts.join(", "))
            }
            fn from_value(v: &Value) -> Option<Self> {
                let items: Vec<Value> = match v {
                    Value::Tuple(t) | Value::Size(t) => t.to_vec(),
                    Value::List(l) => l.try_borrow().ok()?.clone(),
                    _ => return None,
                };
                if items.len() != $n {
                    return None;
                }
                Some(($($t::from_value(items.get($i)?)?,)+))
            }
        }

        impl<$($t: IntoValue),+> IntoArgs for ($($t,)+) {
            fn into_args(self) -> Vec<Value> {
                vec![$(self.$i.into_value()),+]
            }
        }
    };
}

/// Positional arguments for `Engine::call`: a tuple of [`IntoValue`]s, `()` for none,
/// or a `Vec<Value>`.
///
/// ```
/// use kiln::{IntoArgs, Value};
/// assert_eq!((1i64, "a").into_args().len(), 2);
/// assert!(().into_args().is_empty());
/// ```
pub trait IntoArgs {
    /// The argument values, in order.
    fn into_args(self) -> Vec<Value>;
}

impl IntoArgs for () {
    fn into_args(self) -> Vec<Value> {
        Vec::new()
    }
}

impl IntoArgs for Vec<Value> {
    fn into_args(self) -> Vec<Value> {
        self
    }
}

tuple_conv!(1; A 0);
tuple_conv!(2; A 0, B 1);
tuple_conv!(3; A 0, B 1, C 2);
tuple_conv!(4; A 0, B 1, C 2, D 3);
tuple_conv!(5; A 0, B 1, C 2, D 3, E 4);
tuple_conv!(6; A 0, B 1, C 2, D 3, E 4, F 5);

/// A tensor handle: the script and the host share the same tensor (no copy).
impl IntoValue for crate::tensor::Tensor {
    fn into_value(self) -> Value {
        Value::Tensor(self)
    }
}

/// Reads a `Tensor` as a handle on the same storage (no copy).
impl FromValue for crate::tensor::Tensor {
    fn expected() -> String {
        "Tensor".into()
    }
    fn from_value(v: &Value) -> Option<crate::tensor::Tensor> {
        match v {
            Value::Tensor(t) => Some(t.clone()),
            _ => None,
        }
    }
}
