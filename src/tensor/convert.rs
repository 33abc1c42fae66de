//! Reading tensor data from Rust: typed slices, contiguous copies, dtype casts,
//! `.item()` and `.tolist()`.

use super::dtype::with_elem;
use super::dtype::{DType, Elem, Scalar};
use super::kernels::strided::gather_strided_polled;
use super::shape::fmt_shape;
use super::storage::{alloc_vec, collect_vec, each_buffer, Buffer};
use super::{err, Tensor};
use crate::error::{ErrorKind, Result};
use crate::ir::record as trace;
use crate::ir::record_op::record_op;
use crate::ir::IrOp;

/// `.tolist()`: a nested list of scalars the interpreter converts to Kiln values.
#[derive(Debug, Clone, PartialEq)]
pub enum TensorList {
    Scalar(Scalar),
    List(Vec<TensorList>),
}

fn dtype_mismatch(want: DType, got: DType) -> crate::error::Error {
    err(
        ErrorKind::TypeError,
        format!("expected a {} tensor, got {}", want.name(), got.name()),
    )
}

impl Tensor {
    /// Run `f` on the elements in row-major order as one slice (borrowed when the
    /// tensor is contiguous, gathered otherwise). `T` must be the tensor's dtype.
    pub fn read<T: Elem, R>(&self, f: impl FnOnce(&[T]) -> R) -> Result<R> {
        let n = self.numel();
        if n == 0 {
            return Ok(f(&[]));
        }
        if !self.is_contiguous() {
            return Ok(f(&self.gathered::<T>()?));
        }
        let buf = self.storage().borrow();
        let src = T::slice(&buf).ok_or_else(|| dtype_mismatch(T::DTYPE, self.dtype()))?;
        let start = self.offset();
        let s = start
            .checked_add(n)
            .and_then(|end| src.get(start..end))
            .ok_or_else(|| self.malformed(src.len()))?;
        Ok(f(s))
    }

    /// A row-major copy of the elements. `T` must be the tensor's dtype.
    pub fn to_vec<T: Elem>(&self) -> Result<Vec<T>> {
        if self.numel() > 0 && !self.is_contiguous() {
            // gathered straight into the result (one copy, polled: a huge expanded view
            // stops at the engine's deadline)
            return self.gathered();
        }
        self.read(|s: &[T]| {
            let mut v = alloc_vec(s.len())?;
            v.extend_from_slice(s);
            Ok(v)
        })?
    }

    /// The elements of a strided view, gathered in row-major order (polling the
    /// engine's interrupt and deadline between chunks).
    fn gathered<T: Elem>(&self) -> Result<Vec<T>> {
        let buf = self.storage().borrow();
        let src = T::slice(&buf).ok_or_else(|| dtype_mismatch(T::DTYPE, self.dtype()))?;
        let mut v = alloc_vec(self.numel())?;
        if !gather_strided_polled(src, self.shape(), self.strides(), self.offset(), &mut v)? {
            return Err(self.malformed(src.len()));
        }
        Ok(v)
    }

    fn malformed(&self, storage: usize) -> crate::error::Error {
        err(
            ErrorKind::RuntimeError,
            format!(
                "internal error: a tensor of shape {} does not fit its storage of {storage} \
                 elements (this is a bug in Kiln)",
                fmt_shape(self.shape()),
            ),
        )
    }

    /// The elements converted to f32 (any dtype).
    pub fn to_f32_vec(&self) -> Result<Vec<f32>> {
        self.cast(DType::F32)?.to_vec::<f32>()
    }

    /// The elements converted to i64 (any dtype; floats truncate).
    pub fn to_i64_vec(&self) -> Result<Vec<i64>> {
        self.cast(DType::I64)?.to_vec::<i64>()
    }

    /// A tensor of `dtype` with the same values (the same tensor if the dtype matches;
    /// no autograd — see `ops::to_dtype`).
    pub fn cast(&self, dtype: DType) -> Result<Tensor> {
        record_op(&[self], |_| IrOp::Cast(dtype), || self.cast_eager(dtype))
    }

    fn cast_eager(&self, dtype: DType) -> Result<Tensor> {
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        let n = self.numel();
        let buf = with_elem!(self.dtype(), T => self.read(|s: &[T]| cast_from(s, dtype, n))??);
        Tensor::from_buffer(buf, self.shape())
    }

    /// `.item()`: the one element of a one-element tensor.
    pub fn item(&self) -> Result<Scalar> {
        trace::graph_break(trace::BreakReason::TensorToPython("item"));
        if self.numel() != 1 {
            return Err(err(
                ErrorKind::RuntimeError,
                format!(
                    "a Tensor with {} elements cannot be converted to Scalar",
                    self.numel()
                ),
            ));
        }
        let off = self.offset();
        let buf = self.storage().borrow();
        let s = each_buffer!(&*buf, v => v.get(off).map(|x| x.to_scalar()));
        s.ok_or_else(|| err(ErrorKind::RuntimeError, "item: storage too small"))
    }

    /// `.tolist()`.
    pub fn tolist(&self) -> Result<TensorList> {
        trace::graph_break(trace::BreakReason::TensorToPython("tolist"));
        let flat: Vec<Scalar> = with_elem!(self.dtype(), T => {
            self.read(|s: &[T]| s.iter().map(|x| x.to_scalar()).collect())?
        });
        Ok(nest(&flat, self.shape()))
    }
}

fn nest(flat: &[Scalar], shape: &[usize]) -> TensorList {
    match shape.split_first() {
        None => TensorList::Scalar(flat.first().copied().unwrap_or(Scalar::Int(0))),
        Some((&d, rest)) => {
            let inner: usize = rest.iter().product();
            let items = (0..d)
                .map(|i| nest(flat.get(i * inner..(i + 1) * inner).unwrap_or(&[]), rest))
                .collect();
            TensorList::List(items)
        }
    }
}

fn cast_from<T: Elem + CastTo>(s: &[T], dtype: DType, n: usize) -> Result<Buffer> {
    Ok(match dtype {
        DType::F32 => Buffer::F32(collect_vec(n, s.iter().map(|x| x.to_f32()))?),
        DType::F64 => Buffer::F64(collect_vec(n, s.iter().map(|x| x.to_f64()))?),
        DType::I32 => Buffer::I32(collect_vec(n, s.iter().map(|x| x.to_i32()))?),
        DType::I64 => Buffer::I64(collect_vec(n, s.iter().map(|x| x.to_i64()))?),
        DType::U8 => Buffer::U8(collect_vec(n, s.iter().map(|x| x.to_u8()))?),
        DType::Bool => Buffer::Bool(collect_vec(n, s.iter().map(|x| x.to_bool()))?),
    })
}

/// Element conversions between the dtypes (float -> int truncates as PyTorch; an
/// integer narrowing wraps, as PyTorch's `.to(torch.uint8)` does for in-range ints).
pub trait CastTo: Copy {
    fn to_f32(self) -> f32;
    fn to_f64(self) -> f64;
    fn to_i32(self) -> i32;
    fn to_i64(self) -> i64;
    fn to_u8(self) -> u8;
    fn to_bool(self) -> bool;
}

/// `CastTo` for a numeric type (`as` conversions; floats truncate toward zero).
macro_rules! cast_numeric {
    ($($t:ty),*) => {$(
        impl CastTo for $t {
            fn to_f32(self) -> f32 {
                self as f32
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn to_i32(self) -> i32 {
                self as i64 as i32
            }
            fn to_i64(self) -> i64 {
                self as i64
            }
            fn to_u8(self) -> u8 {
                self as i64 as u8
            }
            fn to_bool(self) -> bool {
                self != 0 as $t
            }
        }
    )*};
}

cast_numeric!(f32, f64, i32, i64, u8);

impl CastTo for bool {
    fn to_f32(self) -> f32 {
        f32::from(u8::from(self))
    }
    fn to_f64(self) -> f64 {
        f64::from(u8::from(self))
    }
    fn to_i32(self) -> i32 {
        i32::from(self)
    }
    fn to_i64(self) -> i64 {
        i64::from(self)
    }
    fn to_u8(self) -> u8 {
        u8::from(self)
    }
    fn to_bool(self) -> bool {
        self
    }
}
