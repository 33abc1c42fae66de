//! Element types (`DType`), Rust-side scalars, and the type-promotion rules.

use super::storage::Buffer;
use std::fmt;

/// The element type of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    F32,
    F64,
    I32,
    I64,
    U8,
    Bool,
}

thread_local! {
    /// `set_default_dtype`: the dtype of Python floats turned into tensors.
    static DEFAULT_FLOAT: std::cell::Cell<DType> = const { std::cell::Cell::new(DType::F32) };
}

/// The default floating dtype (`torch.get_default_dtype()`): float32 unless changed.
pub fn default_float() -> DType {
    DEFAULT_FLOAT.with(|d| d.get())
}

/// `torch.set_default_dtype`; the caller checks that `d` is a float dtype.
pub fn set_default_float(d: DType) {
    DEFAULT_FLOAT.with(|c| c.set(d));
}

impl DType {
    /// The name a script sees (`float32`, `int64`, `bool`).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::U8 => "uint8",
            DType::Bool => "bool",
        }
    }

    /// PyTorch's scalar-type name in kernel errors (`"tanh" not implemented for 'Long'`).
    pub fn torch_name(self) -> &'static str {
        match self {
            DType::F32 => "Float",
            DType::F64 => "Double",
            DType::I32 => "Int",
            DType::I64 => "Long",
            DType::U8 => "Byte",
            DType::Bool => "Bool",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::F32 | DType::I32 => 4,
            DType::F64 | DType::I64 => 8,
            DType::U8 | DType::Bool => 1,
        }
    }

    pub fn is_float(self) -> bool {
        match self {
            DType::F32 | DType::F64 => true,
            DType::I32 | DType::I64 | DType::U8 | DType::Bool => false,
        }
    }

    /// An integer dtype (not bool).
    pub fn is_int(self) -> bool {
        match self {
            DType::I32 | DType::I64 | DType::U8 => true,
            DType::F32 | DType::F64 | DType::Bool => false,
        }
    }

    /// The position in PyTorch's promotion lattice for our dtypes
    /// (bool < uint8 < int32 < int64 < float32 < float64).
    fn rank(self) -> u8 {
        match self {
            DType::Bool => 0,
            DType::U8 => 1,
            DType::I32 => 2,
            DType::I64 => 3,
            DType::F32 => 4,
            DType::F64 => 5,
        }
    }

    /// The common dtype of two tensor operands of an arithmetic op (PyTorch's
    /// `promote_types` over our dtypes: f32 op f64 -> f64, int op float -> the float,
    /// uint8 op int32 -> int32, anything op bool -> the other).
    pub fn promote(self, other: DType) -> DType {
        if self.rank() >= other.rank() {
            self
        } else {
            other
        }
    }

    /// PyTorch's `result_type` of two tensor operands given as (dtype, is 0-d):
    /// dimensioned operands decide the dtype within a category (bool < int < float); a
    /// 0-d one raises it only to a higher category.
    pub fn result_of((a, a0): (DType, bool), (b, b0): (DType, bool)) -> DType {
        let category = |d: DType| match d {
            DType::Bool => 0,
            DType::U8 | DType::I32 | DType::I64 => 1,
            DType::F32 | DType::F64 => 2,
        };
        match (a0, b0) {
            (true, false) if category(a) <= category(b) => b,
            (false, true) if category(b) <= category(a) => a,
            _ => a.promote(b),
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A Rust scalar crossing the tensor API (an operand of `x * 2.0`, or `.item()`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    Float(f64),
}

impl Scalar {
    /// The dtype a tensor made from this scalar gets (floats: the default dtype).
    pub fn dtype(self) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::Int(_) => DType::I64,
            Scalar::Float(_) => default_float(),
        }
    }

    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => f64::from(u8::from(b)),
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }

    pub fn as_i64(self) -> i64 {
        match self {
            Scalar::Bool(b) => i64::from(b),
            Scalar::Int(i) => i,
            Scalar::Float(f) => f as i64,
        }
    }

    pub fn as_bool(self) -> bool {
        match self {
            Scalar::Bool(b) => b,
            Scalar::Int(i) => i != 0,
            Scalar::Float(f) => f != 0.0,
        }
    }

    /// The dtype of `tensor op scalar`: a scalar only raises the category
    /// (bool < int < float), as in PyTorch's "wrapped number" rule.
    pub fn promote_with(self, t: DType) -> DType {
        match self {
            Scalar::Float(_) if !t.is_float() => default_float(),
            Scalar::Int(_) if t == DType::Bool => DType::I64,
            _ => t,
        }
    }
}

/// A Rust element type stored in a tensor buffer.
pub trait Elem: Copy + Send + Sync + PartialEq + 'static {
    const DTYPE: DType;
    fn slice(b: &Buffer) -> Option<&[Self]>;
    fn slice_mut(b: &mut Buffer) -> Option<&mut [Self]>;
    fn wrap(v: Vec<Self>) -> Buffer;
    /// The Vec inside `b`, or `b` back when it holds another type.
    fn unwrap(b: Buffer) -> std::result::Result<Vec<Self>, Buffer>;
    fn from_scalar(s: Scalar) -> Self;
    fn to_scalar(self) -> Scalar;
    fn zero() -> Self;
}

impl Elem for f32 {
    const DTYPE: DType = DType::F32;
    fn slice(b: &Buffer) -> Option<&[f32]> {
        match b {
            Buffer::F32(v) => Some(v),
            _ => None,
        }
    }
    fn slice_mut(b: &mut Buffer) -> Option<&mut [f32]> {
        match b {
            Buffer::F32(v) => Some(v),
            _ => None,
        }
    }
    fn wrap(v: Vec<f32>) -> Buffer {
        Buffer::F32(v)
    }
    fn unwrap(b: Buffer) -> std::result::Result<Vec<f32>, Buffer> {
        match b {
            Buffer::F32(v) => Ok(v),
            other => Err(other),
        }
    }
    fn from_scalar(s: Scalar) -> f32 {
        s.as_f64() as f32
    }
    fn to_scalar(self) -> Scalar {
        Scalar::Float(f64::from(self))
    }
    fn zero() -> f32 {
        0.0
    }
}

impl Elem for i64 {
    const DTYPE: DType = DType::I64;
    fn slice(b: &Buffer) -> Option<&[i64]> {
        match b {
            Buffer::I64(v) => Some(v),
            _ => None,
        }
    }
    fn slice_mut(b: &mut Buffer) -> Option<&mut [i64]> {
        match b {
            Buffer::I64(v) => Some(v),
            _ => None,
        }
    }
    fn wrap(v: Vec<i64>) -> Buffer {
        Buffer::I64(v)
    }
    fn unwrap(b: Buffer) -> std::result::Result<Vec<i64>, Buffer> {
        match b {
            Buffer::I64(v) => Ok(v),
            other => Err(other),
        }
    }
    fn from_scalar(s: Scalar) -> i64 {
        s.as_i64()
    }
    fn to_scalar(self) -> Scalar {
        Scalar::Int(self)
    }
    fn zero() -> i64 {
        0
    }
}

impl Elem for bool {
    const DTYPE: DType = DType::Bool;
    fn slice(b: &Buffer) -> Option<&[bool]> {
        match b {
            Buffer::Bool(v) => Some(v),
            _ => None,
        }
    }
    fn slice_mut(b: &mut Buffer) -> Option<&mut [bool]> {
        match b {
            Buffer::Bool(v) => Some(v),
            _ => None,
        }
    }
    fn wrap(v: Vec<bool>) -> Buffer {
        Buffer::Bool(v)
    }
    fn unwrap(b: Buffer) -> std::result::Result<Vec<bool>, Buffer> {
        match b {
            Buffer::Bool(v) => Ok(v),
            other => Err(other),
        }
    }
    fn from_scalar(s: Scalar) -> bool {
        s.as_bool()
    }
    fn to_scalar(self) -> Scalar {
        Scalar::Bool(self)
    }
    fn zero() -> bool {
        false
    }
}

/// `Elem` for a numeric Rust type stored in `Buffer::$V`.
macro_rules! elem_impl {
    ($t:ty, $V:ident, $to_scalar:expr, $from_scalar:expr) => {
        impl Elem for $t {
            const DTYPE: DType = DType::$V;
            fn slice(b: &Buffer) -> Option<&[$t]> {
                match b {
                    Buffer::$V(v) => Some(v),
                    _ => None,
                }
            }
            fn slice_mut(b: &mut Buffer) -> Option<&mut [$t]> {
                match b {
                    Buffer::$V(v) => Some(v),
                    _ => None,
                }
            }
            fn wrap(v: Vec<$t>) -> Buffer {
                Buffer::$V(v)
            }
            fn unwrap(b: Buffer) -> std::result::Result<Vec<$t>, Buffer> {
                match b {
                    Buffer::$V(v) => Ok(v),
                    other => Err(other),
                }
            }
            fn from_scalar(s: Scalar) -> $t {
                ($from_scalar)(s)
            }
            fn to_scalar(self) -> Scalar {
                ($to_scalar)(self)
            }
            fn zero() -> $t {
                0 as $t
            }
        }
    };
}

elem_impl!(f64, F64, Scalar::Float, |s: Scalar| s.as_f64());
elem_impl!(
    i32,
    I32,
    |x: i32| Scalar::Int(i64::from(x)),
    |s: Scalar| s.as_i64() as i32
);
elem_impl!(
    u8,
    U8,
    |x: u8| Scalar::Int(i64::from(x)),
    |s: Scalar| s.as_i64() as u8
);

/// `match` on a dtype with the same code for every element type: `with_elem!(dt, T =>
/// e)` runs `e` with `T` the Rust type of `dt` (`f32`, `f64`, `i32`, `i64`, `u8`, `bool`).
macro_rules! with_elem {
    ($dt:expr, $T:ident => $e:expr) => {
        match $dt {
            $crate::tensor::DType::F32 => {
                type $T = f32;
                $e
            }
            $crate::tensor::DType::F64 => {
                type $T = f64;
                $e
            }
            $crate::tensor::DType::I32 => {
                type $T = i32;
                $e
            }
            $crate::tensor::DType::I64 => {
                type $T = i64;
                $e
            }
            $crate::tensor::DType::U8 => {
                type $T = u8;
                $e
            }
            $crate::tensor::DType::Bool => {
                type $T = bool;
                $e
            }
        }
    };
}
pub(crate) use with_elem;

/// A float element type (f32 or f64): what generic float kernels (reductions, scans)
/// need beyond [`Elem`].
pub trait Real:
    Elem
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::MulAssign
{
    const NEG_INFINITY: Self;
    const ONE: Self;
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
    fn exp(self) -> Self;
    fn fmax(self, o: Self) -> Self;
    fn is_infinite(self) -> bool;
}

/// [`Real`] for `f32` and `f64` (the std methods of the same names).
macro_rules! real_impl {
    ($($t:ident),*) => {$(
        impl Real for $t {
            const NEG_INFINITY: $t = $t::NEG_INFINITY;
            const ONE: $t = 1.0;
            fn from_f64(x: f64) -> $t {
                x as $t
            }
            fn to_f64(self) -> f64 {
                f64::from(self)
            }
            fn exp(self) -> $t {
                $t::exp(self)
            }
            fn fmax(self, o: $t) -> $t {
                $t::max(self, o)
            }
            fn is_infinite(self) -> bool {
                $t::is_infinite(self)
            }
        }
    )*};
}

real_impl!(f32, f64);

/// The dtype a float op computes in for an input of `dt`: float inputs keep theirs;
/// ints and bools use the default float dtype (PyTorch's `exp(int_tensor)` rule).
pub fn float_for(dt: DType) -> DType {
    if dt.is_float() {
        dt
    } else {
        default_float()
    }
}

/// `with_float!(dt, T => e)`: `e` with `T` = `f64` for float64, else `f32` (callers pass
/// [`float_for`]'s dtype, so the other arms mean float32).
macro_rules! with_float {
    ($dt:expr, $T:ident => $e:expr) => {
        match $dt {
            $crate::tensor::DType::F64 => {
                type $T = f64;
                $e
            }
            $crate::tensor::DType::F32
            | $crate::tensor::DType::I32
            | $crate::tensor::DType::I64
            | $crate::tensor::DType::U8
            | $crate::tensor::DType::Bool => {
                type $T = f32;
                $e
            }
        }
    };
}
pub(crate) use with_float;
