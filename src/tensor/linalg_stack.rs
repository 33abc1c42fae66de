//! The matrix stack torch.linalg's kernels (tensor/linalg_decomp.rs) read: a tensor
//! `[..., m, n]` checked (at least 2-D, floating point) and read once as row-major
//! elements in the precision it factors in (`Real`: f32 or f64), each matrix a view of
//! it; results are written back in the input's dtype.

use super::creation::from_f32;
use super::{err, DType, Tensor};
use crate::error::{Error, ErrorKind, Result};
use crate::ir::record as trace;
use faer::{Mat, MatRef};

/// A stack of matrices read from a tensor `[..., m, n]`, with elements `T`.
pub(super) struct Stack<T = f64> {
    pub(super) op: &'static str,
    /// The input's dtype, which the outputs keep (float64 stays float64).
    pub(super) dtype: DType,
    pub(super) batch: Vec<usize>,
    pub(super) m: usize,
    pub(super) n: usize,
    /// The matrices' elements, row-major, one after another.
    pub(super) data: Vec<T>,
    /// How many matrices.
    pub(super) count: usize,
    /// The input had batch dims (PyTorch then names the failing batch element).
    pub(super) batched: bool,
}

pub(super) fn rt(msg: String) -> Error {
    err(ErrorKind::RuntimeError, msg)
}

/// PyTorch's name of a dtype in "Expected a floating point ... Got Long".
fn torch_type_name(d: DType) -> &'static str {
    match d {
        DType::F32 => "Float",
        DType::F64 => "Double",
        DType::I64 => "Long",
        DType::I32 => "Int",
        DType::U8 => "Byte",
        DType::Bool => "Bool",
    }
}

/// The elements of a float tensor as f64 (float64 exactly, float32 widened).
pub(super) fn f64_values(t: &Tensor) -> Result<Vec<f64>> {
    if t.dtype() == DType::F64 {
        return t.to_vec::<f64>();
    }
    Ok(t.to_f32_vec()?.into_iter().map(f64::from).collect())
}

/// A tensor of `vals` in `dtype` (float64 kept exactly, anything else as float32).
pub(super) fn from_f64_as(vals: Vec<f64>, shape: &[usize], dtype: DType) -> Result<Tensor> {
    if dtype == DType::F64 {
        return Tensor::from_buffer(super::storage::Buffer::F64(vals), shape);
    }
    from_f32(vals.into_iter().map(|v| v as f32).collect(), shape)
}

/// An element type matrices factor in: f32 (float32 tensors) or f64.
pub(super) trait Real: faer::traits::RealField + Copy {
    /// Zero.
    const ZERO: Self;
    /// `t`'s elements in this precision.
    fn values(t: &Tensor) -> Result<Vec<Self>>;
    /// A tensor of `vals` in `dtype` (a stack's input dtype).
    fn tensor(vals: Vec<Self>, shape: &[usize], dtype: DType) -> Result<Tensor>;
    /// The value in f64.
    fn wide(self) -> f64;
}

impl Real for f32 {
    const ZERO: f32 = 0.0;
    fn values(t: &Tensor) -> Result<Vec<f32>> {
        t.to_f32_vec()
    }
    fn tensor(vals: Vec<f32>, shape: &[usize], _: DType) -> Result<Tensor> {
        from_f32(vals, shape)
    }
    fn wide(self) -> f64 {
        f64::from(self)
    }
}

impl Real for f64 {
    const ZERO: f64 = 0.0;
    fn values(t: &Tensor) -> Result<Vec<f64>> {
        f64_values(t)
    }
    fn tensor(vals: Vec<f64>, shape: &[usize], dtype: DType) -> Result<Tensor> {
        from_f64_as(vals, shape, dtype)
    }
    fn wide(self) -> f64 {
        self
    }
}

/// Called outside linalg_ops.rs's recorded entry points (which make this a no-op, being
/// inside a library call), a capture that reaches a kernel runs eagerly.
fn untraced() {
    if trace::active() {
        trace::graph_break(trace::BreakReason::UntracedTensor);
    }
}

impl<T: Real> Stack<T> {
    /// Reads `a` (`[..., m, n]`, float) for `op`.
    pub(super) fn read(op: &'static str, a: &Tensor) -> Result<Stack<T>> {
        untraced();
        if a.ndim() < 2 {
            return Err(rt(format!(
                "{op}: The input tensor A must have at least 2 dimensions."
            )));
        }
        if !a.dtype().is_float() {
            return Err(rt(format!(
                "{op}: Expected a floating point or complex tensor as input. Got {}",
                torch_type_name(a.dtype())
            )));
        }
        let nd = a.ndim();
        let (m, n) = (a.shape()[nd - 2], a.shape()[nd - 1]);
        let batch = a.shape()[..nd - 2].to_vec();
        let count: usize = batch.iter().product();
        Ok(Stack {
            op,
            dtype: a.dtype(),
            batch,
            m,
            n,
            data: T::values(a)?,
            count,
            batched: nd > 2,
        })
    }

    /// Matrix `b`: a view of the row-major data (no copy).
    pub(super) fn mat(&self, b: usize) -> MatRef<'_, T> {
        let len = self.m * self.n;
        MatRef::from_row_major_slice(&self.data[b * len..(b + 1) * len], self.m, self.n)
    }

    /// Every matrix, in order.
    pub(super) fn mats(&self) -> impl Iterator<Item = MatRef<'_, T>> {
        (0..self.count).map(|b| self.mat(b))
    }

    /// Reads `a` and checks that its matrices are square.
    pub(super) fn square(op: &'static str, a: &Tensor) -> Result<Stack<T>> {
        let s = Stack::read(op, a)?;
        if s.m != s.n {
            return Err(rt(format!(
                "{op}: A must be batches of square matrices, but they are {} by {} matrices",
                s.m, s.n
            )));
        }
        Ok(s)
    }

    /// The `LinAlgError` of batch element `k`.
    pub(super) fn fail(&self, k: usize, msg: &str) -> Error {
        let at = if self.batched {
            format!("(Batch element {k}): ")
        } else {
            String::new()
        };
        err(ErrorKind::LinAlgError, format!("{}: {at}{msg}", self.op))
    }

    /// A tensor `[*batch, *tail]` of the values `f` gives for each matrix, in order.
    pub(super) fn write(&self, tail: &[usize], vals: Vec<T>) -> Result<Tensor> {
        let shape: Vec<usize> = self.batch.iter().chain(tail).copied().collect();
        T::tensor(vals, &shape, self.dtype)
    }

    /// `[*batch, r, c]` from one r x c matrix per batch element.
    pub(super) fn write_mats(&self, mats: &[Mat<T>], r: usize, c: usize) -> Result<Tensor> {
        let mut vals = Vec::with_capacity(mats.len() * r * c);
        for m in mats {
            for i in 0..r {
                for j in 0..c {
                    vals.push(m[(i, j)]);
                }
            }
        }
        self.write(&[r, c], vals)
    }
}

impl Stack {
    /// Whether every entry is finite (the iterative decompositions get NaN outputs
    /// otherwise, as LAPACK gives, instead of iterating on NaN).
    pub(super) fn finite(m: MatRef<'_, f64>) -> bool {
        (0..m.ncols()).all(|j| (0..m.nrows()).all(|i| m[(i, j)].is_finite()))
    }
}
