//! Accuracy and special values of the JIT's fused `GeluTanh` routine (compile/jit/mathgelu.rs)
//! against the f64 formula, and its agreement with BENCH W3's bound.
//!
//! Documented bound: `2.5 + 3 |u| (1 - sigmoid(u))` ulps, `u = 2 c0 (x + c1 x^3)`: 2.5
//! ulps where the sigmoid saturates, plus the f32 rounding of `u` amplified by `e^-u`'s
//! sensitivity where it does not (any f32 evaluation of `u` has that term). Results
//! whose magnitude is below 2^-122 (x < -10) may be flushed to zero.

mod codegen_common;

use codegen_common::*;
use kiln::compile::jit::reference::gelu_tanh64;
use kiln::compile::UnaryOp;

fn u_of(x: f64) -> f64 {
    let (c0, c1) = (f64::from(0.797_884_6f32), f64::from(0.044_715f32));
    2.0 * c0 * (x + c1 * x * x * x)
}

fn bound(x: f64) -> f64 {
    let u = u_of(x);
    // |u| (1 - sigmoid(u)) = |u| / (1 + e^u), 0 where e^u overflows.
    let amplified = if u > 100.0 {
        0.0
    } else {
        u.abs() / (1.0 + u.exp())
    };
    2.5 + 3.0 * amplified
}

/// The worst `error / bound` over `xs` and where it is.
fn worst(xs: &[f32]) -> (f64, f32) {
    let got = jit_unary(UnaryOp::GeluTanh, xs);
    let mut w = (0.0f64, 0.0f32);
    for (&x, &g) in xs.iter().zip(&got) {
        let t = gelu_tanh64(f64::from(x));
        let tiny = 2f64.powi(-122);
        let e = ulp_error(g, t);
        let r = if e == 0.0 || (t.abs() < tiny && f64::from(g.abs()) <= tiny) {
            0.0
        } else {
            e / bound(f64::from(x))
        };
        if r > w.0 || r.is_nan() {
            w = (r, x);
        }
    }
    w
}

#[test]
fn gelu_tanh_within_its_bound_over_the_whole_range() {
    let mut xs = sweep(997);
    xs.extend(linspace(-12.0, 12.0, 480_001));
    let (r, at) = worst(&xs);
    let x = f64::from(at);
    println!(
        "GeluTanh: worst {r:.3} of the bound at {at:e} ({:.1} ulp)",
        r * bound(x)
    );
    assert!(
        r <= 1.0,
        "{:.2} ulp at {at:e} (bound {:.2})",
        r * bound(x),
        bound(x)
    );
}

#[test]
fn gelu_tanh_within_2_5_ulp_from_minus_1_up() {
    // x >= -1: |u| <= 1.7; the bound's amplified term is dropped here.
    let xs = linspace(-1.0, 12.0, 260_001);
    let got = jit_unary(UnaryOp::GeluTanh, &xs);
    let e = xs
        .iter()
        .zip(&got)
        .map(|(&x, &g)| ulp_error(g, gelu_tanh64(f64::from(x))))
        .fold(0.0, f64::max);
    println!("GeluTanh on [-1, 12]: max {e:.3} ulp");
    assert!(e <= 2.5, "{e} ulp");
}

#[test]
fn gelu_tanh_meets_w3_accuracy() {
    // BENCH W3: max abs error vs f64 <= 1e-6 over linspace(-4, 4).
    let n = 1 << 20;
    let xs: Vec<f32> = (0..n)
        .map(|i| -4.0 + 8.0 * i as f32 / (n - 1) as f32)
        .collect();
    let got = jit_unary(UnaryOp::GeluTanh, &xs);
    let err = xs
        .iter()
        .zip(&got)
        .map(|(&x, &g)| {
            let x = f64::from(x);
            let want = 0.5 * x * (1.0 + (0.7978845608 * (x + 0.044715 * x * x * x)).tanh());
            (f64::from(g) - want).abs()
        })
        .fold(0.0, f64::max);
    println!("GeluTanh W3 max abs err {err:e}");
    assert!(err <= 1e-6, "{err:e}");
}

#[test]
fn gelu_tanh_special_values_follow_the_eager_formula() {
    let xs = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        -1e30,
        1e30,
        -10.05,
        -20.0,
        f32::MAX,
        f32::MIN,
        1e-40,
        -1e-40,
    ];
    let got = jit_unary(UnaryOp::GeluTanh, &xs);
    assert!(got[0].is_nan(), "NaN -> NaN");
    assert_eq!(got[1], f32::INFINITY);
    // 0.5 * -inf * (1 + tanh(-inf)) = -inf * 0 is NaN in the eager op too.
    assert!(got[2].is_nan(), "-inf -> NaN: {}", got[2]);
    assert_eq!(got[3].to_bits(), 0.0f32.to_bits());
    assert_eq!(got[4].to_bits(), (-0.0f32).to_bits());
    for i in [5, 8, 10] {
        assert_eq!(
            got[i].to_bits(),
            (-0.0f32).to_bits(),
            "gelu({}) = {}",
            xs[i],
            got[i]
        );
    }
    assert!(
        got[7] <= 0.0 && got[7] > -1e-37,
        "gelu(-10.05) = {}",
        got[7]
    );
    assert_eq!(got[6], 1e30);
    assert_eq!(got[9], f32::MAX);
    // Subnormal inputs: gelu(x) = x / 2 to within an ulp of the subnormal spacing.
    assert_eq!(got[11], 1e-40 / 2.0);
    assert_eq!(got[12], -1e-40 / 2.0);
}

#[test]
fn gelu_tanh_agrees_with_the_eager_op() {
    // Same constants and function as `x.gelu(approximate='tanh')`: where eager's
    // `1 + tanh` does not cancel (x >= -2), within the differential suite's 1e-5.
    let xs = linspace(-2.0, 8.0, 100_001);
    let got = jit_unary(UnaryOp::GeluTanh, &xs);
    let x = kiln::tensor::creation::from_f32(xs.clone(), &[xs.len()]).expect("x");
    let eager = kiln::ops::unary(kiln::ops::UnaryOp::GeluTanh, &x)
        .and_then(|y| y.to_f32_vec())
        .expect("eager gelu");
    for ((&x, &g), &e) in xs.iter().zip(&got).zip(&eager) {
        let tol = 1e-5 * g.abs().max(e.abs()) + 1e-7;
        assert!((g - e).abs() <= tol, "gelu({x}): fused {g} vs eager {e}");
    }
}
