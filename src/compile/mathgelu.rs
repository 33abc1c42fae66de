//! GELU with the tanh approximation as one f32x4 routine (the kernel op `GeluTanh`).
//!
//! `0.5 x (1 + tanh(c0 (x + c1 x^3)))` equals `x / (1 + e^-u)` with
//! `u = x (K0 + K1 x^2)`, `K0 = 2 c0`, `K1 = 2 c0 c1` (1 + tanh(u/2) = 2 sigmoid(u)), which
//! avoids the cancellation of `1 + tanh` for x << 0 and needs one division: clamp, 3
//! ops for `u`, e^-u (one-step Cody-Waite, the shared polynomial), one FMA and the
//! division; 16 floating-point ops per f32x4 (W3's `x * sigmoid(2u)` took 22).
//!
//! Clamping `x` (not `u`; `u` increases with `x`) to `[GELU_LO, GELU_HI]` keeps `e^-u`'s
//! power of two `n` in `[-36, 128]`. The one-step reduction `r = u + n ln2_f32` errs by
//! `n * 1.9e-9`, under 2% of what the f32 rounding of `u` itself (about `|u| 2^-23`)
//! already contributes to `e^-u`, so it needs no second step.
//!
//! Error (tests/codegen_gelu.rs): `2.5 + 3 |u| (1 - sigmoid(u))` ulps, i.e. 2 ulps where
//! the sigmoid saturates or near 0, plus the rounding of `u` amplified by `e^-u`'s
//! sensitivity where it does not (as in any f32 evaluation of the formula); W3's max abs
//! error vs f64 is 3.5e-7. Results below 2^-122 in magnitude (x < -10) are flushed to a
//! signed zero (`n = 128` makes `2^n` infinite), as eager's `1 + tanh(u) = 0` does from
//! x < -9. NaN stays NaN, +inf gives +inf, -inf gives NaN (eager: -inf * 0).

use super::mathfn::{clamp, exp_poly, exp_scale, magic_for, Vx, LOG2E};
use cranelift_codegen::ir::Value;

use crate::tensor::kernels::unary::{GELU_C as GELU_C1, SQRT_2_OVER_PI as GELU_C0};

const K0: f32 = (2.0 * GELU_C0 as f64) as f32;
const K1: f32 = (2.0 * GELU_C0 as f64 * GELU_C1 as f64) as f32;

/// Where `-u log2 e` is 128.05: `n = 128` makes `2^n` infinite, so the result is a
/// signed zero (NaN for -inf), never a wrapped exponent.
const GELU_LO: f32 = -10.0625;
/// Where `u` is 25: `1 / (1 + e^-u)` is 1 in f32, and `n = -36`.
const GELU_HI: f32 = 6.0;

/// `x / (1 + e^-u)`, `u = x (K0 + K1 x^2)`, with `x` clamped for `u` only.
pub(crate) fn gelu_tanh(v: &mut Vx, x: Value) -> Value {
    let xc = clamp(v, x, GELU_LO, GELU_HI);
    let x2 = v.mul(xc, xc);
    let (k1, k0) = (v.c(K1), v.c(K0));
    let b = v.mla(x2, k1, k0);
    let u = v.mul(xc, b);
    let magic = v.c(magic_for(0));
    let l2e = v.c(-LOG2E);
    let t = v.mla(u, l2e, magic);
    let n = v.sub(t, magic);
    // r' = u + n ln2 = -r with e^-u = 2^n e^r.
    let ln2 = v.c(std::f32::consts::LN_2);
    let r = v.mla(n, ln2, u);
    let p = exp_poly(v, r, true);
    let s = exp_scale(v, t);
    let one = v.c(1.0);
    let d = v.mla(p, s, one);
    v.div(x, d)
}
