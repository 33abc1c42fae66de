//! Unary elementwise kernels: the per-op loops from the op table's `f32`/`int` fields
//! (`optable::unary`) and the helpers they call (transcendental ops compute in float32;
//! ops with an `int` kernel keep int64; `~` needs bool or int64).

use super::elementwise::map;
use super::fastmath;
use crate::error::{ErrorKind, Result};
use crate::optable::unary::unary_table;
use crate::optable::UnaryOp;
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

/// `float_op` and `int_op` from the op table's `f32` and `int` fields.
macro_rules! unary_kernels {
    ($($V:ident {
        name: $name:literal, methods: [$($m:literal),*], global: $global:literal,
        saves: $saves:ident, f32: [$($f:tt)*], int: [$($i:tt)*], grad: [$($g:tt)*],
        jit: [$($j:tt)*], reference: [$($r:tt)*], onnx: [$($o:tt)*],
    })*) => {
        fn float_op(op: UnaryOp, a: &Tensor) -> Result<Tensor> {
            let a = a.cast(DType::F32)?;
            match op {
                $(UnaryOp::$V => unary_kernels!(@f32 op, a, $($f)*),)*
            }
        }

        fn int_op(op: UnaryOp, a: &Tensor) -> Result<Tensor> {
            let a = a.cast(DType::I64)?;
            match op {
                $(UnaryOp::$V => unary_kernels!(@int op, a, $($i)*),)*
            }
        }
    };
    (@f32 $op:ident, $a:ident, none) => {
        Err(err(
            ErrorKind::TypeError,
            format!(
                "{}: not supported for float32 tensors (use bool or int64)",
                $op.name()
            ),
        ))
    };
    (@f32 $op:ident, $a:ident, ($x:ident) $e:expr) => {
        map(&$a, |$x: f32| $e)
    };
    (@int $op:ident, $a:ident, float) => {
        float_op($op, &$a)
    };
    (@int $op:ident, $a:ident, keep ($x:ident) $e:expr) => {
        map(&$a, |$x: i64| $e)
    };
}

unary_table!(unary_kernels);

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
