//! GELU with the tanh approximation as one f32x4 routine (the kernel op `GeluTanh`).
//!
//! `0.5 x (1 + tanh(c0 (x + c1 x^3)))` equals `x / (1 + e^-u)` with
//! `u = x (K0 + K1 x^2)`, `K0 = 2 c0`, `K1 = 2 c0 c1` (1 + tanh(u/2) = 2 sigmoid(u)), which
//! avoids the cancellation of `1 + tanh` for x << 0 and needs one division. `e^-u` is
//! taken in base 2: `w = -u log2 e = x (B0 + B1 x^2)` with the factor folded into the
//! coefficients, so one FMA gives both `n = round(w)` (by the rounding constant) and,
//! with `-n` as addend, the reduced argument `f = w - n` in one rounding, and
//! `e^-u = 2^n 2^f`. Clamp, 4 ops for `n` and `f`, the polynomial (6 FMAs), one FMA
//! and the division: 15 floating-point ops per f32x4 (16 with `u` formed first and
//! reduced by `n ln2`; W3's `x * sigmoid(2u)` took 22).
//!
//! Clamping `x` (not `w`; `w` decreases with `x`) to `[GELU_LO, GELU_HI]` keeps `n` in
//! `[-36, 128]`. The rounding of `B0 + B1 x^2` (relative 2^-24) changes `2^w` by about
//! `|u| 2^-24`, as the f32 rounding of `u` itself does in any evaluation of the formula.
//!
//! Error (tests/codegen_gelu.rs): `2.5 + 3 |u| (1 - sigmoid(u))` ulps, i.e. 2.5 ulps where
//! the sigmoid saturates or near 0, plus the rounding of `u` amplified by `e^-u`'s
//! sensitivity where it does not (as in any f32 evaluation of the formula); W3's max abs
//! error vs f64 is 3.5e-7. Results below 2^-122 in magnitude (x < -10) are flushed to a
//! signed zero (`n = 128` makes `2^n` infinite), as eager's `1 + tanh(u) = 0` does from
//! x < -9. NaN stays NaN, +inf gives +inf, -inf gives NaN (eager: -inf * 0).
//!
//! gelu_avx2.rs repeats these operations in this order on 8-lane AVX2 vectors (a lone
//! GeluTanh kernel runs that where the CPU has AVX2+FMA): a change here must be made
//! there too (tests/codegen_gelu_avx2.rs compares the bits).
// Coefficients are written with all the digits of their f32 values.
#![allow(clippy::excessive_precision)]

use crate::compile::jit::mathfn::{clamp, exp_scale, magic_for, Vx};
use cranelift_codegen::ir::Value;

use crate::tensor::kernels::unary::{GELU_C as GELU_C1, SQRT_2_OVER_PI as GELU_C0};

use std::f64::consts::LOG2_E;

/// `w = -u log2 e = x (B0 + B1 x^2)`.
pub(crate) const B0: f32 = (-2.0 * GELU_C0 as f64 * LOG2_E) as f32;
pub(crate) const B1: f32 = (-2.0 * GELU_C0 as f64 * GELU_C1 as f64 * LOG2_E) as f32;

/// `2^f = 1 + f P(f)` on `[-1/2, 1/2]`, `P` from degree 5 down: mathfn's minimax `e^r`
/// polynomial on `[-ln2/2, ln2/2]` in the variable `f = r / ln2` (its degree-k
/// coefficient times `ln2^(k+1)`, rounded to f32).
pub(crate) const EXP2_P: [f32; 6] = [
    1.535_329_9e-4,
    1.339_893_9e-3,
    9.618_438e-3,
    5.550_332e-2,
    2.402_264_8e-1,
    6.931_472e-1,
];

/// Where `-u log2 e` is 128.05: `n = 128` makes `2^n` infinite, so the result is a
/// signed zero (NaN for -inf), never a wrapped exponent.
pub(crate) const GELU_LO: f32 = -10.0625;
/// Where `u` is 25: `1 / (1 + e^-u)` is 1 in f32, and `n = -36`.
pub(crate) const GELU_HI: f32 = 6.0;

/// `x / (1 + 2^w)`, `w = x (B0 + B1 x^2)`, with `x` clamped for `w` only.
pub(crate) fn gelu_tanh(v: &mut Vx, x: Value) -> Value {
    let xc = clamp(v, x, GELU_LO, GELU_HI);
    let x2 = v.mul(xc, xc);
    let (b1, b0) = (v.c(B1), v.c(B0));
    let b = v.mla(x2, b1, b0);
    // t = magic + n, n = round(w); f = w - n with one rounding.
    let magic = v.c(magic_for(0));
    let t = v.mla(xc, b, magic);
    let neg_n = v.sub(magic, t);
    let f = v.mla(xc, b, neg_n);
    let q = v.poly(f, &EXP2_P);
    let one = v.c(1.0);
    let p = v.mla(q, f, one);
    let s = exp_scale(v, t);
    // A load of its own: a table load with one user is folded into it.
    let one = v.c(1.0);
    let d = v.mla(p, s, one);
    v.div(x, d)
}
