//! Binary elementwise kernels: dtype promotion for each op and the per-op loops
//! (tensor-tensor with broadcasting, and tensor-scalar without materialising the scalar).

use super::elementwise::{map, zip};
use crate::error::{ErrorKind, Result};
use crate::optable::BinaryOp;
use crate::tensor::dtype::{DType, Scalar};
use crate::tensor::shape::broadcast_shapes;
use crate::tensor::{err, Tensor};

/// Python's float modulo (the result has the divisor's sign).
#[inline]
fn fmod_py(x: f32, y: f32) -> f32 {
    let r = x % y;
    if r != 0.0 && ((r < 0.0) != (y < 0.0)) {
        r + y
    } else {
        r
    }
}

#[inline]
fn imod_py(x: i64, y: i64) -> i64 {
    let r = x.wrapping_rem(y);
    if r != 0 && ((r < 0) != (y < 0)) {
        r + y
    } else {
        r
    }
}

#[inline]
fn idiv_py(x: i64, y: i64) -> i64 {
    let q = x.wrapping_div(y);
    if x.wrapping_rem(y) != 0 && ((x < 0) != (y < 0)) {
        q - 1
    } else {
        q
    }
}

#[inline]
fn ipow(x: i64, y: i64) -> i64 {
    x.wrapping_pow(y.clamp(0, i64::from(u32::MAX)) as u32)
}

/// `maximum` on floats as PyTorch (and IEEE 754-2019 `maximum`, Cranelift's `fmax`,
/// which compiled kernels use): NaN propagates and -0.0 < +0.0.
#[inline]
pub fn fmax_nan(x: f32, y: f32) -> f32 {
    if x.is_nan() || y.is_nan() {
        f32::NAN
    } else if x == y {
        if x.is_sign_negative() {
            y
        } else {
            x
        }
    } else {
        x.max(y)
    }
}

/// `minimum` on floats: NaN propagates and -0.0 < +0.0 (see [`fmax_nan`]).
#[inline]
pub fn fmin_nan(x: f32, y: f32) -> f32 {
    if x.is_nan() || y.is_nan() {
        f32::NAN
    } else if x == y {
        if x.is_sign_negative() {
            x
        } else {
            y
        }
    } else {
        x.min(y)
    }
}

/// PyTorch's error for `-` on bools (`operands`: "two bool tensors" or "a bool tensor").
fn bool_sub_err(operands: &str) -> crate::error::Error {
    err(
        ErrorKind::TypeError,
        format!(
            "Subtraction, the `-` operator, with {operands} is not supported. If you are \
             trying to invert a mask, use the `~` or `logical_not()` operator instead."
        ),
    )
}

/// The dtype an op computes in (its inputs are cast to it).
pub fn compute_dtype(op: BinaryOp, p: DType) -> Result<DType> {
    use BinaryOp::*;
    Ok(match op {
        Div => DType::F32,
        Sub if p == DType::Bool => return Err(bool_sub_err("two bool tensors")),
        Add | Sub | Mul | FloorDiv | Rem | Pow | Maximum | Minimum => {
            if p == DType::Bool {
                DType::I64
            } else {
                p
            }
        }
        Eq | Ne | Lt | Le | Gt | Ge => p,
        And | Or | Xor => {
            if p == DType::F32 {
                return Err(err(
                    ErrorKind::TypeError,
                    format!(
                        "{}: not supported for float32 tensors (use bool or int64)",
                        op.name()
                    ),
                ));
            }
            p
        }
    })
}

macro_rules! arith {
    ($op:expr, $T:ty, $apply:ident, $div:expr, $mod:expr, $pow:expr, $max:expr, $min:expr) => {
        match $op {
            BinaryOp::Add => $apply!(|x: $T, y: $T| x + y),
            BinaryOp::Sub => $apply!(|x: $T, y: $T| x - y),
            BinaryOp::Mul => $apply!(|x: $T, y: $T| x * y),
            BinaryOp::FloorDiv => $apply!($div),
            BinaryOp::Rem => $apply!($mod),
            BinaryOp::Pow => $apply!($pow),
            BinaryOp::Maximum => $apply!($max),
            BinaryOp::Minimum => $apply!($min),
            BinaryOp::Div => $apply!(|x: $T, y: $T| x / y),
            _ => Err(err(
                ErrorKind::RuntimeError,
                "internal: not an arithmetic op",
            )),
        }
    };
}

macro_rules! compare {
    ($op:expr, $T:ty, $apply:ident) => {
        match $op {
            BinaryOp::Eq => $apply!(|x: $T, y: $T| x == y),
            BinaryOp::Ne => $apply!(|x: $T, y: $T| x != y),
            BinaryOp::Lt => $apply!(|x: $T, y: $T| x < y),
            BinaryOp::Le => $apply!(|x: $T, y: $T| x <= y),
            BinaryOp::Gt => $apply!(|x: $T, y: $T| x > y),
            BinaryOp::Ge => $apply!(|x: $T, y: $T| x >= y),
            _ => Err(err(ErrorKind::RuntimeError, "internal: not a comparison")),
        }
    };
}

macro_rules! logic {
    ($op:expr, $T:ty, $apply:ident) => {
        match $op {
            BinaryOp::And => $apply!(|x: $T, y: $T| x & y),
            BinaryOp::Or => $apply!(|x: $T, y: $T| x | y),
            BinaryOp::Xor => $apply!(|x: $T, y: $T| x ^ y),
            _ => Err(err(ErrorKind::RuntimeError, "internal: not a logical op")),
        }
    };
}

/// Run a whole op family for compute dtype `dt`, given an `$apply!(closure)` macro.
macro_rules! dispatch {
    ($op:expr, $dt:expr, $apply:ident) => {
        if $op.is_comparison() {
            match $dt {
                DType::F32 => compare!($op, f32, $apply),
                DType::I64 => compare!($op, i64, $apply),
                DType::Bool => compare!($op, bool, $apply),
            }
        } else if $op.is_logical() {
            match $dt {
                DType::I64 => logic!($op, i64, $apply),
                _ => logic!($op, bool, $apply),
            }
        } else {
            match $dt {
                DType::F32 => arith!(
                    $op,
                    f32,
                    $apply,
                    |x: f32, y: f32| (x / y).floor(),
                    fmod_py,
                    |x: f32, y: f32| x.powf(y),
                    fmax_nan,
                    fmin_nan
                ),
                _ => arith!(
                    $op,
                    i64,
                    $apply,
                    idiv_py,
                    imod_py,
                    ipow,
                    |x: i64, y: i64| x.max(y),
                    |x: i64, y: i64| x.min(y)
                ),
            }
        }
    };
}

fn int_checks(op: BinaryOp, dt: DType, rhs: &Tensor) -> Result<()> {
    if dt != DType::I64 {
        return Ok(());
    }
    let bad = |pred: fn(&i64) -> bool| -> Result<bool> {
        rhs.cast(DType::I64)?.read(|s: &[i64]| s.iter().any(pred))
    };
    match op {
        BinaryOp::FloorDiv | BinaryOp::Rem if bad(|&v| v == 0)? => Err(err(
            ErrorKind::ZeroDivisionError,
            format!("{}: integer division by zero", op.name()),
        )),
        BinaryOp::Pow if bad(|&v| v < 0)? => Err(err(
            ErrorKind::ValueError,
            "pow: integers to negative integer powers are not allowed",
        )),
        _ => Ok(()),
    }
}

/// `a op b` with broadcasting and promotion; no autograd.
pub fn binary_raw(op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let shape = broadcast_shapes(op.name(), a.shape(), b.shape())?;
    let dt = compute_dtype(op, a.dtype().promote(b.dtype()))?;
    int_checks(op, dt, b)?;
    let (a, b) = (a.cast(dt)?, b.cast(dt)?);
    macro_rules! apply {
        ($f:expr) => {
            zip(&a, &b, &shape, $f)
        };
    }
    dispatch!(op, dt, apply)
}

/// `a op s` (or `s op a` when `reverse`) with a Rust scalar; no autograd.
pub fn binary_scalar_raw(op: BinaryOp, a: &Tensor, s: Scalar, reverse: bool) -> Result<Tensor> {
    let p = s.promote_with(a.dtype());
    if op == BinaryOp::Sub && p == DType::Bool {
        return Err(bool_sub_err("a bool tensor"));
    }
    let dt = compute_dtype(op, p)?;
    if dt == DType::I64 {
        let rhs = if reverse {
            a.clone()
        } else {
            Tensor::scalar(s)
        };
        int_checks(op, dt, &rhs)?;
    }
    let a = a.cast(dt)?;
    macro_rules! apply {
        ($f:expr) => {{
            let f = $f;
            let y = crate::tensor::dtype::Elem::from_scalar(s);
            if reverse {
                map(&a, move |x| f(y, x))
            } else {
                map(&a, move |x| f(x, y))
            }
        }};
    }
    dispatch!(op, dt, apply)
}
