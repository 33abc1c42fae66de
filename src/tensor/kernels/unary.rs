//! Unary elementwise kernels: the per-op loops from the op table's `f32`/`int` fields
//! (`optable::unary`) and the helpers they call (transcendental ops compute in float32;
//! ops with an `int` kernel keep int64; `~` needs bool or int64).

use super::elementwise::map;
use crate::error::{ErrorKind, Result};
use crate::optable::unary::unary_table;
use crate::optable::UnaryOp;
use crate::tensor::dtype::{default_float, DType};
use crate::tensor::{err, Tensor};

/// `sqrt(2/pi)` of the tanh GELU (f32); the compiler's GELU rewrite and kernel use it too.
pub(crate) const SQRT_2_OVER_PI: f32 = 0.797_884_6;
/// The cubic coefficient of the tanh GELU (f32).
pub(crate) const GELU_C: f32 = 0.044_715;

/// The scalar helpers the table's float kernels name, for one float type (each kernel
/// is expanded once per float type inside a module that imports that type's helpers;
/// compiled f64 kernels call the float64 expansions, compile/jit/calls64.rs).
macro_rules! real_helpers {
    (
        $m:ident, $F:ident, $tanh:path, $erf:path, $gelu_erf:path, $erfc:path, $erfinv:path,
        $k:expr, $c:expr
    ) => {
        pub(crate) mod $m {
            pub(crate) const SQRT_2_OVER_PI: $F = $k;
            pub(crate) const GELU_C: $F = $c;
            pub(crate) const FRAC_1_SQRT_2: $F = std::$F::consts::FRAC_1_SQRT_2;

            #[inline]
            pub(crate) fn fast_tanh(x: $F) -> $F {
                $tanh(x)
            }

            #[inline]
            pub(crate) fn erf(x: $F) -> $F {
                $erf(x)
            }

            /// The exact GELU's erf: PyTorch's own (its vectorized float32 one).
            #[inline(always)]
            pub(crate) fn gelu_erf(x: $F) -> $F {
                $gelu_erf(x)
            }

            #[inline]
            pub(crate) fn erfc(x: $F) -> $F {
                $erfc(x)
            }

            #[inline]
            pub(crate) fn erfinv(x: $F) -> $F {
                $erfinv(x)
            }

            #[inline]
            pub(crate) fn sigmoid(x: $F) -> $F {
                if x >= 0.0 {
                    1.0 / (1.0 + (-x).exp())
                } else {
                    let e = x.exp();
                    e / (1.0 + e)
                }
            }

            #[inline]
            pub(crate) fn softplus(x: $F) -> $F {
                if x > 20.0 {
                    x
                } else {
                    x.exp().ln_1p()
                }
            }

            #[inline]
            pub(crate) fn sign_f(x: $F) -> $F {
                if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    x // keeps 0.0 and NaN
                }
            }
        }
    };
}

real_helpers!(
    real32,
    f32,
    crate::tensor::kernels::fastmath::tanh,
    libm::erff,
    crate::tensor::kernels::fastmath::erf,
    libm::erfcf,
    crate::tensor::kernels::special::erfinv,
    crate::tensor::kernels::unary::SQRT_2_OVER_PI,
    crate::tensor::kernels::unary::GELU_C
);
real_helpers!(
    real64,
    f64,
    f64::tanh,
    libm::erf,
    libm::erf,
    libm::erfc,
    crate::tensor::kernels::special::erfinv64,
    0.797_884_560_802_865_4,
    0.044_715
);

/// `float_op` and `int_op` from the op table's `f32` and `int` fields.
macro_rules! unary_kernels {
    ($($V:ident {
        name: $name:literal, methods: [$($m:literal),*], global: $global:literal,
        saves: $saves:ident, f32: [$($f:tt)*], int: [$($i:tt)*], grad: [$($g:tt)*],
        jit: [$($j:tt)*], reference: [$($r:tt)*], onnx: [$($o:tt)*],
    })*) => {
        /// The float kernels, expanded once per float type with that type's helpers.
        mod float32 {
            use super::real32::{
                erf, erfc, erfinv, fast_tanh, gelu_erf, sigmoid, sign_f, softplus, FRAC_1_SQRT_2,
                GELU_C, SQRT_2_OVER_PI,
            };
            use super::*;

            pub(super) fn float_op(op: UnaryOp, a: &Tensor) -> Result<Tensor> {
                match op {
                    $(UnaryOp::$V => unary_kernels!(@float f32, op, a, $($f)*),)*
                }
            }
        }

        mod float64 {
            use super::real64::{
                erf, erfc, erfinv, fast_tanh, gelu_erf, sigmoid, sign_f, softplus, FRAC_1_SQRT_2,
                GELU_C, SQRT_2_OVER_PI,
            };
            use super::*;

            pub(super) fn float_op(op: UnaryOp, a: &Tensor) -> Result<Tensor> {
                match op {
                    $(UnaryOp::$V => unary_kernels!(@float f64, op, a, $($f)*),)*
                }
            }
        }

        /// A float op: float32/float64 inputs keep their dtype; int and bool inputs are
        /// computed in the default float dtype, as PyTorch's.
        fn float_op(op: UnaryOp, a: &Tensor) -> Result<Tensor> {
            let dt = if a.dtype().is_float() { a.dtype() } else { default_float() };
            let a = a.cast(dt)?;
            match dt {
                DType::F64 => float64::float_op(op, &a),
                DType::F32 | DType::I32 | DType::I64 | DType::U8 | DType::Bool => {
                    float32::float_op(op, &a)
                }
            }
        }

        /// An op with an int64 kernel: int32/uint8/bool inputs compute in int64 and wrap
        /// back to their dtype (bool -> int64), which is what PyTorch's integer kernels give.
        fn int_op(op: UnaryOp, a: &Tensor) -> Result<Tensor> {
            let back = match a.dtype() {
                DType::I32 | DType::U8 => Some(a.dtype()),
                DType::F32 | DType::F64 | DType::I64 | DType::Bool => None,
            };
            let a = a.cast(DType::I64)?;
            let out = match op {
                $(UnaryOp::$V => unary_kernels!(@int op, a, $($i)*),)*
            }?;
            match back {
                Some(dt) if out.dtype() == DType::I64 => out.cast(dt),
                _ => Ok(out),
            }
        }
    };
    (@float $F:ident, $op:ident, $a:ident, none) => {
        Err(err(
            ErrorKind::TypeError,
            format!(
                "{}: not supported for {} tensors (use bool or int64)",
                $op.name(),
                $a.dtype().name()
            ),
        ))
    };
    (@float $F:ident, $op:ident, $a:ident, ($x:ident) $e:expr) => {
        map($a, |$x: $F| $e)
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
        DType::F32 | DType::F64 => float_op(op, a),
        DType::I32 | DType::I64 | DType::U8 => int_op(op, a),
        DType::Bool => match op {
            UnaryOp::Not => map(a, |x: bool| !x),
            UnaryOp::Neg => Err(err(
                ErrorKind::NotImplementedError,
                "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.",
            )),
            _ => int_op(op, a),
        },
    }
}
