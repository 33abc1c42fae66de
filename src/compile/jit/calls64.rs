//! The native functions f64 kernels call per lane for the ops whose op-table `jit` (or
//! `fused`) field says `f64: call`: exp, log, tanh, erf, sin, cos, pow, floor-divide...
//! Each is the op's eager float64 scalar kernel (the table's `f32` field expanded for
//! f64 with eager's float64 helpers), so a fused f64 kernel computes exactly what eager
//! float64 code computes (libm-grade; the f32x4 polynomials of mathfn.rs are accurate to
//! f32 only). Named after the op's variant: `unary::Exp`, `binary::Pow`.

// The functions are named after the op table's variants.
#![allow(non_snake_case)]

use crate::optable::binary::binary_table;
use crate::optable::unary::unary_table;

/// One `extern "C" fn(f64) -> f64` per `f64: call` row of the unary table.
macro_rules! unary_calls {
    ($($V:ident {
        name: $name:literal, methods: [$($m:literal),*], global: $global:literal,
        saves: $saves:ident, f32: [$($f:tt)*], int: [$($i:tt)*], grad: [$($g:tt)*],
        jit: [$($j:tt)*], reference: [$($r:tt)*], onnx: [$($o:tt)*],
    })*) => {
        /// The unary ops' float64 kernels.
        pub(crate) mod unary {
            #[allow(unused_imports)]
            use crate::tensor::kernels::unary::real64::{
                erf, erfc, erfinv, fast_tanh, sigmoid, sign_f, softplus, FRAC_1_SQRT_2, GELU_C,
                SQRT_2_OVER_PI,
            };
            $(unary_calls!(@item $V, [$($f)*], [$($j)*]);)*
        }
    };
    (@item $V:ident, [($x:ident) $e:expr], [($vx:ident, $xx:ident) $je:expr, f64: call]) => {
        pub(crate) extern "C" fn $V($x: f64) -> f64 {
            $e
        }
    };
    (@item $V:ident, [$($f:tt)*], [$($j:tt)*]) => {};
}

unary_table!(unary_calls);

/// One `extern "C" fn(f64, f64) -> f64` per `f64: call` row of the binary table.
macro_rules! binary_calls {
    ($($V:ident {
        name: $name:literal, methods: [$($m:literal),*], global: $global:literal,
        inplace: [$($ip:literal),*], dtype: $dt:ident, saves: [$($s:ident),*],
        f32: [$($f:tt)*], int: [$($i:tt)*], grad: [$($g:tt)*], fused: [$($k:tt)*],
        onnx: [$($o:tt)*],
    })*) => {
        /// The binary ops' float64 kernels.
        pub(crate) mod binary {
            #[allow(unused_imports)]
            use crate::tensor::kernels::binary::real64::{fmax_nan, fmin_nan, fmod_py};
            $(binary_calls!(@item $V, [$($f)*], [$($k)*]);)*
        }
    };
    (@item $V:ident, [($x:ident, $y:ident) $e:expr],
        [($vx:ident, $a:ident, $b:ident) $je:expr, ($rx:ident, $ry:ident) $re:expr, f64: call]) => {
        pub(crate) extern "C" fn $V($x: f64, $y: f64) -> f64 {
            $e
        }
    };
    (@item $V:ident, [$($f:tt)*], [$($k:tt)*]) => {};
}

binary_table!(binary_calls);
