//! Unary elementwise kernels: the per-op loops and their dtype rules (transcendental
//! ops compute in float32; neg/abs/sign/relu keep int64; `~` needs bool or int64).

use super::elementwise::map;
use super::fastmath;
use crate::error::{ErrorKind, Result};
use crate::ops::UnaryOp;
use crate::tensor::dtype::DType;
use crate::tensor::{err, Tensor};

/// `sqrt(2/pi)` of the tanh GELU (f32); the compiler's GELU rewrite and kernel use it too.
pub(crate) const SQRT_2_OVER_PI: f32 = 0.797_884_6;
/// The cubic coefficient of the tanh GELU (f32).
pub(crate) const GELU_C: f32 = 0.044_715;

#[inline]
fn sigmoid(x: f32) -> f32 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

#[inline]
fn softplus(x: f32) -> f32 {
    if x > 20.0 {
        x
    } else {
        x.exp().ln_1p()
    }
}

#[inline]
fn sign_f(x: f32) -> f32 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        x // keeps 0.0 and NaN
    }
}

fn float_op(op: UnaryOp, a: &Tensor) -> Result<Tensor> {
    use UnaryOp::*;
    let a = a.cast(DType::F32)?;
    match op {
        Neg => map(&a, |x: f32| -x),
        Exp => map(&a, |x: f32| x.exp()),
        Log => map(&a, |x: f32| x.ln()),
        Sqrt => map(&a, |x: f32| x.sqrt()),
        Rsqrt => map(&a, |x: f32| 1.0 / x.sqrt()),
        Abs => map(&a, |x: f32| x.abs()),
        Sin => map(&a, |x: f32| x.sin()),
        Cos => map(&a, |x: f32| x.cos()),
        Tanh => map(&a, fastmath::tanh),
        Sigmoid => map(&a, sigmoid),
        Relu => map(&a, |x: f32| if x > 0.0 || x.is_nan() { x } else { 0.0 }),
        Gelu => map(&a, |x: f32| {
            0.5 * x * (1.0 + libm::erff(x * std::f32::consts::FRAC_1_SQRT_2))
        }),
        GeluTanh => map(&a, |x: f32| {
            0.5 * x * (1.0 + fastmath::tanh(SQRT_2_OVER_PI * (x + GELU_C * x * x * x)))
        }),
        Silu => map(&a, |x: f32| x * sigmoid(x)),
        Softplus => map(&a, softplus),
        Sign => map(&a, sign_f),
        Floor => map(&a, |x: f32| x.floor()),
        Round => map(&a, |x: f32| x.round_ties_even()),
        Erf => map(&a, libm::erff),
        Not => Err(err(
            ErrorKind::TypeError,
            "bitwise_not: not supported for float32 tensors (use bool or int64)",
        )),
    }
}

fn int_op(op: UnaryOp, a: &Tensor) -> Result<Tensor> {
    use UnaryOp::*;
    let a = a.cast(DType::I64)?;
    match op {
        Neg => map(&a, |x: i64| x.wrapping_neg()),
        Abs => map(&a, |x: i64| x.wrapping_abs()),
        Sign => map(&a, |x: i64| x.signum()),
        Relu => map(&a, |x: i64| x.max(0)),
        Floor | Round => map(&a, |x: i64| x),
        Not => map(&a, |x: i64| !x),
        _ => float_op(op, &a),
    }
}

/// `op(a)` with no autograd.
pub fn unary_raw(op: UnaryOp, a: &Tensor) -> Result<Tensor> {
    match a.dtype() {
        DType::F32 => float_op(op, a),
        DType::I64 => int_op(op, a),
        DType::Bool => match op {
            UnaryOp::Not => map(a, |x: bool| !x),
            UnaryOp::Neg => Err(err(
                ErrorKind::TypeError,
                "neg: negation, the `-` operator, on a bool tensor is not supported; use `~`",
            )),
            _ => int_op(op, a),
        },
    }
}
