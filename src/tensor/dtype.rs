//! Element types (`DType`), Rust-side scalars, and the type-promotion rules.

use super::storage::Buffer;
use std::fmt;

/// The element type of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    F32,
    I64,
    Bool,
}

impl DType {
    /// The name a script sees (`float32`, `int64`, `bool`).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::I64 => "int64",
            DType::Bool => "bool",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::I64 => 8,
            DType::Bool => 1,
        }
    }

    pub fn is_float(self) -> bool {
        self == DType::F32
    }

    /// The common dtype of two operands of an arithmetic op (PyTorch rules for our
    /// three dtypes): any float -> float32, else any int -> int64, else bool.
    pub fn promote(self, other: DType) -> DType {
        match (self, other) {
            (DType::F32, _) | (_, DType::F32) => DType::F32,
            (DType::I64, _) | (_, DType::I64) => DType::I64,
            _ => DType::Bool,
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
    /// The dtype a tensor made from this scalar gets.
    pub fn dtype(self) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::Int(_) => DType::I64,
            Scalar::Float(_) => DType::F32,
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
        t.promote(self.dtype())
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
