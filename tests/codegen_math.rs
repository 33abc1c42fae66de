//! Accuracy of the JIT's inline math against f64 std over whole-range sweeps.
//!
//! Documented bounds (max error in f32 ulps vs the f64 truth rounded nowhere):
//! exp 2, log 2, tanh 3, sigmoid 3, erf 4, sin/cos 1, pow 2, sqrt/recip 0.5, rsqrt 1.5.

// Truth values are pasted with all the digits mpmath printed.
#![allow(clippy::excessive_precision)]

mod codegen_common;

use codegen_common::*;
use kiln::compile::jit::reference::erf64;
use kiln::compile::{BinaryOp, UnaryOp};

fn max_ulp(op: UnaryOp, xs: &[f32], truth: fn(f64) -> f64) -> (f64, f32) {
    let got = jit_unary(op, xs);
    let mut worst = (0.0f64, 0.0f32);
    for (&x, &g) in xs.iter().zip(&got) {
        let e = ulp_error(g, truth(x as f64));
        if e > worst.0 || e.is_nan() {
            worst = (e, x);
        }
    }
    worst
}

fn check(op: UnaryOp, bound: f64, truth: fn(f64) -> f64, extra: &[f32]) {
    let mut xs = sweep(997);
    xs.extend_from_slice(extra);
    let (e, at) = max_ulp(op, &xs, truth);
    println!("{op:?}: max {e:.3} ulp at {at:e}");
    assert!(e <= bound, "{op:?}: {e} ulp at {at:e} (bound {bound})");
}

#[test]
fn exp_within_2_ulp() {
    let mut extra = linspace(-104.0, 89.0, 200_001);
    extra.extend([
        88.72283, 88.72284, -87.33654, -103.97208, -103.9721, 100.0, -100.0,
    ]);
    check(UnaryOp::Exp, 2.0, f64::exp, &extra);
    let xs = [
        100.0,
        -104.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -100.0,
        f32::NAN,
    ];
    let s = jit_unary(UnaryOp::Exp, &xs);
    assert_eq!(s[..5], [f32::INFINITY, 0.0, f32::INFINITY, 0.0, 1.0]);
    // exp(-100) is the subnormal 3.78e-44 (as std and torch.exp give), not 0.
    assert_eq!(s[5], (-100.0f32).exp());
    assert!(s[6].is_nan());
}

#[test]
fn log_within_2_ulp() {
    let extra = linspace(0.5, 2.0, 200_001);
    check(UnaryOp::Log, 2.0, f64::ln, &extra);
    let s = jit_unary(UnaryOp::Log, &[0.0, -0.0, -1.0, f32::INFINITY, 1.0, 1e-45]);
    assert_eq!(s[0], f32::NEG_INFINITY);
    assert_eq!(s[1], f32::NEG_INFINITY);
    assert!(s[2].is_nan());
    assert_eq!(s[3], f32::INFINITY);
    assert_eq!(s[4], 0.0);
    assert!((s[5] as f64 - (1e-45f32 as f64).ln()).abs() < 1e-5);
}

#[test]
fn tanh_within_3_ulp() {
    let extra = linspace(-10.0, 10.0, 400_001);
    check(UnaryOp::Tanh, 3.0, f64::tanh, &extra);
    let s = jit_unary(UnaryOp::Tanh, &[20.0, -20.0, 0.0, -0.0]);
    assert_eq!(s, [1.0, -1.0, 0.0, 0.0]);
    assert!(s[3].is_sign_negative());
}

fn sigmoid64(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

#[test]
fn sigmoid_within_3_ulp() {
    let extra = linspace(-110.0, 20.0, 400_001);
    check(UnaryOp::Sigmoid, 3.0, sigmoid64, &extra);
}

#[test]
fn erf_reference_matches_mpmath() {
    // mpmath.erf at 30 digits (mpmath 1.3.0).
    for (x, want) in [
        (0.5, 0.520499877813046537682746653892),
        (1.0, 0.842700792949714869341220635083),
        (2.0, 0.995322265018952734162069256367),
        (0.01, 0.0112834155558496171507771353282),
        (-1.5, -0.966105146475310727066976261646),
        (3.5, 0.999999256901627658587254476316),
    ] {
        // The series loses ~5 digits to cancellation near 4: still far below f32 ulps.
        assert!((erf64(x) - want).abs() < 1e-10, "erf({x})");
    }
}

#[test]
fn erf_within_4_ulp() {
    let extra = linspace(-5.0, 5.0, 400_001);
    check(UnaryOp::Erf, 4.0, erf64, &extra);
}

#[test]
fn sin_cos_within_1_ulp_whole_range() {
    let mut extra = linspace(-100.0, 100.0, 200_001);
    // Near multiples of pi/2 and huge arguments.
    extra.extend([
        std::f32::consts::FRAC_PI_2,
        std::f32::consts::PI,
        4.712389,
        std::f32::consts::TAU,
        1e6,
        1e10,
        3.4e38,
        16777216.0,
    ]);
    check(UnaryOp::Sin, 1.0, f64::sin, &extra);
    check(UnaryOp::Cos, 1.0, f64::cos, &extra);
}

#[test]
fn sqrt_recip_half_ulp_rsqrt_within_1_5_ulp() {
    check(UnaryOp::Sqrt, 0.5, f64::sqrt, &[]);
    check(UnaryOp::Rsqrt, 1.5, |x| 1.0 / x.sqrt(), &[]);
    check(UnaryOp::Recip, 0.5, |x| 1.0 / x, &[]);
}

#[test]
fn pow_within_2_ulp() {
    let ys = [
        -3.0f32, -2.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 7.0, 0.3333, 10.0, -0.0,
    ];
    let base = sweep(65_537);
    let (mut xs, mut yv) = (Vec::new(), Vec::new());
    for &y in &ys {
        for &x in &base {
            xs.push(x);
            yv.push(y);
        }
    }
    let got = jit_binary(BinaryOp::Pow, &xs, &yv);
    let mut worst = 0.0f64;
    for i in 0..xs.len() {
        let truth = (xs[i] as f64).powf(yv[i] as f64);
        let e = ulp_error(got[i], truth);
        assert!(
            e <= 2.0,
            "pow({:e}, {}) = {:e}, want {truth:e}",
            xs[i],
            yv[i],
            got[i]
        );
        worst = worst.max(e);
    }
    println!("Pow: max {worst:.3} ulp");
}

#[test]
fn pow_special_values_follow_c99() {
    let inf = f32::INFINITY;
    let cases: &[(f32, f32, f32)] = &[
        (f32::NAN, 0.0, 1.0),
        (1.0, f32::NAN, 1.0),
        (-1.0, inf, 1.0),
        (-1.0, -inf, 1.0),
        (-2.0, 3.0, -8.0),
        (-2.0, 2.0, 4.0),
        (0.0, -1.0, inf),
        (-0.0, -1.0, -inf),
        (-0.0, -2.0, inf),
        (0.0, 2.0, 0.0),
        (-inf, 3.0, -inf),
        (-inf, -3.0, -0.0),
        (-inf, 0.5, inf),
        (inf, -1.0, 0.0),
        (0.5, inf, 0.0),
        (2.0, inf, inf),
        (0.5, -inf, inf),
        (2.0, 200.0, inf),
        (2.0, -200.0, 0.0),
        (2.0, -140.0, 7.174648e-43),
    ];
    let xs: Vec<f32> = cases.iter().map(|c| c.0).collect();
    let ys: Vec<f32> = cases.iter().map(|c| c.1).collect();
    let got = jit_binary(BinaryOp::Pow, &xs, &ys);
    for (c, g) in cases.iter().zip(&got) {
        assert_eq!(g.to_bits(), c.2.to_bits(), "pow({}, {}) = {g}", c.0, c.1);
    }
    let nan = jit_binary(BinaryOp::Pow, &[-2.0, f32::NAN, 2.0], &[0.5, 1.0, f32::NAN]);
    assert!(nan.iter().all(|v| v.is_nan()), "{nan:?}");
}

#[test]
fn floor_div_and_mod_follow_python() {
    // Values printed by CPython 3 (`a // b`, `a % b` on floats).
    let inf = f32::INFINITY;
    let cases: &[(f32, f32, f32, f32)] = &[
        (-7.0, 2.0, -4.0, 1.0),
        (-7.0, 3.0, -3.0, 2.0),
        (7.0, -3.0, -3.0, -2.0),
        (5.5, 2.0, 2.0, 1.5),
        (-1.0, inf, -1.0, inf),
        (1.0, -inf, -1.0, -inf),
        (1.0, inf, 0.0, 1.0),
        (6.0, 3.0, 2.0, 0.0),
    ];
    let xs: Vec<f32> = cases.iter().map(|c| c.0).collect();
    let ys: Vec<f32> = cases.iter().map(|c| c.1).collect();
    let q = jit_binary(BinaryOp::FloorDiv, &xs, &ys);
    let r = jit_binary(BinaryOp::Rem, &xs, &ys);
    for (i, c) in cases.iter().enumerate() {
        assert_eq!((q[i], r[i]), (c.2, c.3), "divmod({}, {})", c.0, c.1);
    }
    // 1 // 0.1 == 9.0 in CPython (0.1 is slightly above 1/10); f32 0.1 likewise.
    assert_eq!(jit_binary(BinaryOp::FloorDiv, &[1.0], &[0.1]), [9.0]);
    // Python float semantics on infinities and torch's division by zero.
    let q = jit_binary(BinaryOp::FloorDiv, &[inf, 1.0, 0.0], &[1.0, 0.0, 0.0]);
    assert!(q[0].is_nan() && q[1] == inf && q[2].is_nan(), "{q:?}");
    let r = jit_binary(BinaryOp::Rem, &[inf, 1.0], &[1.0, 0.0]);
    assert!(r.iter().all(|v| v.is_nan()), "{r:?}");
}

#[test]
fn rounding_sign_relu_semantics() {
    let xs = [0.5f32, 1.5, 2.5, -0.5, -1.5, -2.7, f32::NAN, 0.0, -3.0];
    let round = jit_unary(UnaryOp::Round, &xs);
    assert_eq!(round[..6], [0.0, 2.0, 2.0, -0.0, -2.0, -3.0]);
    let sign = jit_unary(UnaryOp::Sign, &xs);
    assert_eq!(sign[..6], [1.0, 1.0, 1.0, -1.0, -1.0, -1.0]);
    assert!(sign[6].is_nan());
    assert_eq!(sign[7..], [0.0, -1.0]);
    let relu = jit_unary(UnaryOp::Relu, &xs);
    assert!(relu[6].is_nan(), "relu(NaN) is NaN as in PyTorch");
    assert_eq!(relu[..6], [0.5, 1.5, 2.5, 0.0, 0.0, 0.0]);
    let floor = jit_unary(UnaryOp::Floor, &xs);
    assert_eq!(floor[..6], [0.0, 1.0, 2.0, -1.0, -2.0, -3.0]);
    let m = jit_binary(
        BinaryOp::Maximum,
        &[f32::NAN, 1.0, 2.0],
        &[1.0, f32::NAN, 3.0],
    );
    assert!(
        m[0].is_nan() && m[1].is_nan() && m[2] == 3.0,
        "max propagates NaN"
    );
    let m = jit_binary(
        BinaryOp::Minimum,
        &[f32::NAN, 1.0, 2.0],
        &[1.0, f32::NAN, 3.0],
    );
    assert!(
        m[0].is_nan() && m[1].is_nan() && m[2] == 2.0,
        "min propagates NaN"
    );
}
