//! Creation functions: `zeros ones empty full rand randn randint arange linspace eye`
//! and the `tensor(...)` builder helpers. Each returns a fresh leaf; the caller sets
//! `requires_grad` with `set_requires_grad`.

use super::dtype::{default_float, with_elem, DType, Elem, Scalar};
use super::random::{self, with_rng};
use super::shape::numel;
use super::storage::{alloc_filled, collect_vec, Buffer};
use super::{err, Tensor};
use crate::error::{ErrorKind, Result};
use crate::ir::record_op::{record_const, record_op};

/// A tensor of `shape` filled with `value` converted to `dtype`.
pub fn full(shape: &[usize], value: Scalar, dtype: Option<DType>) -> Result<Tensor> {
    record_const(|| full_eager(shape, value, dtype))
}

fn full_eager(shape: &[usize], value: Scalar, dtype: Option<DType>) -> Result<Tensor> {
    let n = numel(shape)?;
    let buf = with_elem!(dtype.unwrap_or(value.dtype()), T => {
        T::wrap(alloc_filled(n, T::from_scalar(value))?)
    });
    Tensor::from_buffer(buf, shape)
}

pub fn zeros(shape: &[usize], dtype: DType) -> Result<Tensor> {
    full(shape, Scalar::Int(0), Some(dtype))
}

pub fn ones(shape: &[usize], dtype: DType) -> Result<Tensor> {
    full(shape, Scalar::Int(1), Some(dtype))
}

/// What `fill_like` writes: a value, or draws of the seeded generator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fill {
    Value(Scalar),
    Uniform { from: f64, to: f64 },
    Normal { mean: f64, std: f64 },
    Bernoulli { p: f64 },
}

impl Fill {
    /// True when the fill draws from the generator (an effect: its place in the order of
    /// draws decides its numbers).
    pub fn is_random(self) -> bool {
        !matches!(self, Fill::Value(_))
    }
}

/// A fresh tensor of `like`'s shape filled by `fill` as `dtype` (`zeros_like`,
/// `full_like`, `rand_like`, `randn_like` and the in-place random fills): captured as one
/// node reading `like`, so its shape follows `like`'s symbolic sizes; a random fill draws
/// the seeded generator as the eager call does, in program order.
pub fn fill_like(like: &Tensor, fill: Fill, dtype: DType) -> Result<Tensor> {
    record_op(
        &[like],
        |_| crate::ir::IrOp::FillLike { fill, dtype },
        // paused: the draws are this node's own (no graph break)
        || crate::ir::record::paused(|| filled(like.shape(), fill, dtype)),
    )
}

fn filled(shape: &[usize], fill: Fill, dtype: DType) -> Result<Tensor> {
    match fill {
        Fill::Value(v) => full_eager(shape, v, Some(dtype)),
        Fill::Uniform { from, to } => uniform(shape, dtype, from, to),
        Fill::Normal { mean, std } => normal(shape, dtype, mean, std),
        Fill::Bernoulli { p } => bernoulli(shape, p, dtype),
    }
}

/// `empty`: zero-filled (uninitialised memory is never exposed).
pub fn empty(shape: &[usize], dtype: DType) -> Result<Tensor> {
    zeros(shape, dtype)
}

fn float_only(op: &str, dtype: DType) -> Result<()> {
    if dtype.is_float() {
        Ok(())
    } else {
        Err(err(
            ErrorKind::TypeError,
            format!("{op}: dtype must be float32, got {}", dtype.name()),
        ))
    }
}

/// `uniform_(from, to)` of a fresh float tensor (`rand` is from 0 to 1).
pub fn uniform(shape: &[usize], dtype: DType, from: f64, to: f64) -> Result<Tensor> {
    float_only("uniform_", dtype)?;
    let n = numel(shape)?;
    if dtype == DType::F64 {
        return Ok(Tensor::from_vec(
            random::uniform_vec::<f64>(n, from, to)?,
            shape,
        ));
    }
    Ok(Tensor::from_vec(
        random::uniform_vec::<f32>(n, from, to)?,
        shape,
    ))
}

/// Uniform [0, 1).
pub fn rand(shape: &[usize], dtype: DType) -> Result<Tensor> {
    float_only("rand", dtype)?;
    uniform(shape, dtype, 0.0, 1.0)
}

/// `normal_(mean, std)` of a fresh float tensor (`randn` is N(0, 1)).
pub fn normal(shape: &[usize], dtype: DType, mean: f64, std: f64) -> Result<Tensor> {
    float_only("normal_", dtype)?;
    let n = numel(shape)?;
    if dtype == DType::F64 {
        return Ok(Tensor::from_vec(
            random::normal_vec::<f64>(n, mean, std)?,
            shape,
        ));
    }
    Ok(Tensor::from_vec(
        random::normal_vec::<f32>(n, mean, std)?,
        shape,
    ))
}

/// Standard normal.
pub fn randn(shape: &[usize], dtype: DType) -> Result<Tensor> {
    float_only("randn", dtype)?;
    normal(shape, dtype, 0.0, 1.0)
}

/// Integers uniform in [low, high), int64 unless `dtype` says otherwise.
pub fn randint(low: i64, high: i64, shape: &[usize], dtype: DType) -> Result<Tensor> {
    if low >= high {
        return Err(err(
            ErrorKind::RuntimeError,
            format!("randint: expected low < high, got low={low}, high={high}"),
        ));
    }
    let n = numel(shape)?;
    let v = with_rng(|r| collect_vec(n, (0..n).map(|_| r.int_range(low, high))))?;
    Tensor::from_vec(v, shape).cast(dtype)
}

/// `bernoulli_(p)` with a number p: 1 with probability p, as `dtype`.
pub fn bernoulli(shape: &[usize], p: f64, dtype: DType) -> Result<Tensor> {
    if !(0.0..=1.0).contains(&p) {
        return Err(err(
            ErrorKind::RuntimeError,
            format!("bernoulli_ expects p to be in [0, 1], but got p={p}"),
        ));
    }
    let v = random::bernoulli_vec(numel(shape)?, p)?;
    Tensor::from_vec(v, shape).cast(dtype)
}

/// `bernoulli(probs)`: 1 with each element's probability, in the probabilities' dtype
/// (a float64 uniform per element for float64 probabilities, else a float32 one).
pub fn bernoulli_each(probs: &Tensor) -> Result<Tensor> {
    let bad = |ok: bool| {
        if ok {
            Ok(())
        } else {
            Err(err(
                ErrorKind::RuntimeError,
                "bernoulli: all elements of the probability tensor must be in [0, 1]",
            ))
        }
    };
    let keep = if probs.dtype() == DType::F64 {
        let v = probs.to_vec::<f64>()?;
        bad(v.iter().all(|x| (0.0..=1.0).contains(x)))?;
        random::bernoulli_each(&v)?
    } else {
        let v = probs.to_f32_vec()?;
        bad(v.iter().all(|x| (0.0..=1.0).contains(x)))?;
        random::bernoulli_each(&v)?
    };
    Tensor::from_vec(keep, probs.shape()).cast(super::dtype::float_for(probs.dtype()))
}

/// `arange(start, end, step)`: int64 when all three are ints, else float32.
pub fn arange(start: Scalar, end: Scalar, step: Scalar, dtype: Option<DType>) -> Result<Tensor> {
    record_const(|| arange_eager(start, end, step, dtype))
}

fn arange_eager(start: Scalar, end: Scalar, step: Scalar, dtype: Option<DType>) -> Result<Tensor> {
    let all_int = [start, end, step]
        .iter()
        .all(|s| !matches!(s, Scalar::Float(_)));
    let dt = dtype.unwrap_or(if all_int { DType::I64 } else { default_float() });
    let (s, e, st) = (start.as_f64(), end.as_f64(), step.as_f64());
    if st == 0.0 || !st.is_finite() || !s.is_finite() || !e.is_finite() {
        return Err(err(
            ErrorKind::RuntimeError,
            "arange: step must be nonzero and bounds finite",
        ));
    }
    if (e - s) / st < 0.0 {
        return Err(err(
            ErrorKind::ValueError,
            "arange: upper bound and larger bound inconsistent with step sign",
        ));
    }
    let count = ((e - s) / st).ceil();
    if count > usize::MAX as f64 / 8.0 {
        return Err(err(ErrorKind::MemoryError, "arange: too many elements"));
    }
    let n = count as usize;
    if all_int {
        let (s, st) = (start.as_i64(), step.as_i64());
        let v = collect_vec(n, (0..n as i64).map(|i| s.wrapping_add(i.wrapping_mul(st))))?;
        return Tensor::from_vec(v, &[n]).cast(dt);
    }
    let v = collect_vec(n, (0..n).map(|i| s + i as f64 * st))?;
    Tensor::from_vec(v, &[n]).cast(dt)
}

/// `linspace(start, end, steps)` in the default float dtype (endpoints included; for
/// tests: `internals`).
#[cfg(feature = "internals")]
pub fn linspace(start: f64, end: f64, steps: usize) -> Result<Tensor> {
    linspace_in(start, end, steps, default_float())
}

/// `linspace(start, end, steps, dtype=dtype)`.
pub fn linspace_in(start: f64, end: f64, steps: usize, dtype: DType) -> Result<Tensor> {
    record_const(|| match dtype {
        DType::F32 => linspace_eager(start as f32, end as f32, steps, |n| n as f32, f32::mul_add),
        DType::F64 => linspace_eager(start, end, steps, |n| n as f64, f64::mul_add),
        // integer dtypes step in float64 from the ends converted first, as torch's
        _ => {
            let ends = Tensor::from_vec(vec![start, end], &[2]).cast(dtype)?;
            let e = ends.cast(DType::F64)?.to_vec::<f64>()?;
            linspace_eager(e[0], e[1], steps, |n| n as f64, f64::mul_add)?.cast(dtype)
        }
    })
}

/// torch's CPU kernel: `start + step * i` for the first half, `end - step * (steps - i -
/// 1)` for the rest, each one fused multiply-add in the dtype (its build contracts
/// them), so `linspace(-1, 1, 25)[12]` is -2.98e-08 as torch's.
fn linspace_eager<T>(
    start: T,
    end: T,
    steps: usize,
    f: fn(usize) -> T,
    fma: fn(T, T, T) -> T,
) -> Result<Tensor>
where
    T: Elem
        + Copy
        + std::ops::Sub<Output = T>
        + std::ops::Div<Output = T>
        + std::ops::Neg<Output = T>,
{
    let step = if steps > 1 {
        (end - start) / f(steps - 1)
    } else {
        f(0)
    };
    let half = steps / 2;
    let v = collect_vec(
        steps,
        (0..steps).map(|i| {
            if i < half {
                fma(step, f(i), start)
            } else {
                fma(-step, f(steps - i - 1), end)
            }
        }),
    )?;
    Ok(Tensor::from_vec(v, &[steps]))
}

/// `eye(n, m)`: ones on the diagonal.
pub fn eye(n: usize, m: Option<usize>, dtype: DType) -> Result<Tensor> {
    record_const(|| eye_eager(n, m, dtype))
}

fn eye_eager(n: usize, m: Option<usize>, dtype: DType) -> Result<Tensor> {
    let m = m.unwrap_or(n);
    let total = numel(&[n, m])?;
    let v = collect_vec(
        total,
        (0..total).map(|i| {
            if i / m.max(1) == i % m.max(1) {
                1.0f32
            } else {
                0.0
            }
        }),
    )?;
    Tensor::from_vec(v, &[n, m]).cast(dtype)
}

/// The dtype `tensor(data)` infers from its leaves: any float -> the default float
/// dtype, else any int -> int64, else bool.
pub fn infer_dtype(leaves: &[Scalar]) -> DType {
    if leaves.is_empty() {
        return default_float(); // `tensor([])` is float32, as in PyTorch
    }
    leaves
        .iter()
        .fold(DType::Bool, |acc, s| acc.promote(s.dtype()))
}

/// `tensor(data)` from flattened leaves and the shape the interpreter measured.
pub fn from_scalars(leaves: &[Scalar], shape: &[usize], dtype: Option<DType>) -> Result<Tensor> {
    record_const(|| from_scalars_eager(leaves, shape, dtype))
}

fn from_scalars_eager(leaves: &[Scalar], shape: &[usize], dtype: Option<DType>) -> Result<Tensor> {
    let n = leaves.len();
    let buf = with_elem!(dtype.unwrap_or_else(|| infer_dtype(leaves)), T => {
        T::wrap(collect_vec(n, leaves.iter().map(|&s| T::from_scalar(s)))?)
    });
    Tensor::from_buffer(buf, shape)
}

/// `tensor(data)` from a flat f32 Vec.
pub fn from_f32(data: Vec<f32>, shape: &[usize]) -> Result<Tensor> {
    Tensor::from_buffer(Buffer::F32(data), shape)
}

/// `tensor(data)` from a flat i64 Vec.
pub fn from_i64(data: Vec<i64>, shape: &[usize]) -> Result<Tensor> {
    Tensor::from_buffer(Buffer::I64(data), shape)
}

/// `tensor(data)` from a flat bool Vec.
pub fn from_bool(data: Vec<bool>, shape: &[usize]) -> Result<Tensor> {
    Tensor::from_buffer(Buffer::Bool(data), shape)
}

/// `j - i` at every position (i, j) of the last two dims of `like` (at least 2-D), as an
/// int64 tensor of `like`'s shape that follows its symbolic sizes: only in a capture with
/// symbolic shapes where `like` has some (None elsewhere, where a constant mask of the
/// concrete sizes serves). tril/triu's mask and the linalg gradients' triangle masks.
pub fn symbolic_diagonal_offsets(like: &Tensor) -> Result<Option<Tensor>> {
    if !crate::ir::record::symbolic() {
        return Ok(None);
    }
    let nd = like.ndim();
    let sizes: Vec<i64> = like.shape().iter().map(|&d| d as i64).collect();
    let e = ones(&vec![1; nd], DType::I64)?.expand(&sizes)?;
    if crate::ir::record::note_like(&e, like).is_empty() {
        return Ok(None);
    }
    let rows = e.cumsum(nd as i64 - 2)?;
    e.cumsum(nd as i64 - 1)?.sub(&rows).map(Some)
}
