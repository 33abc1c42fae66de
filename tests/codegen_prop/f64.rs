//! Property test of float64 kernels: random f64 kernel IR programs (random SSA chains of
//! every fusable op, f64 constants that f32 cannot hold, broadcast/strided/negative
//! strides, stored outputs and reductions) compiled and compared with the reference
//! interpreter run in f64 (`run_reference_typed::<f64>`, Rust's f64 math); a meta-test
//! proves the comparison catches a value rounded to f32 in the middle of a chain.

use super::gen::{assert_cases_match, compare, gen_case, planted, Spec, Tolerance};
use kiln::compile::{
    compile, Access, BinaryOp, BufView, BufViewMut, FloatType, Kernel, Op, Output, UnaryOp,
};

const UNARY64: [UnaryOp; 21] = [
    UnaryOp::Neg,
    UnaryOp::Abs,
    UnaryOp::Exp,
    UnaryOp::Log,
    UnaryOp::Log1p,
    UnaryOp::Sqrt,
    UnaryOp::Rsqrt,
    UnaryOp::Tanh,
    UnaryOp::Sigmoid,
    UnaryOp::Relu,
    UnaryOp::Erf,
    UnaryOp::Sin,
    UnaryOp::Cos,
    UnaryOp::Floor,
    UnaryOp::Ceil,
    UnaryOp::Trunc,
    UnaryOp::Round,
    UnaryOp::Sign,
    UnaryOp::Recip,
    UnaryOp::Square,
    UnaryOp::GeluTanh,
];
/// Ops the kernel and the reference compute with the same f64 operations (IEEE
/// arithmetic, or the same Rust/libm function): the others differ by an ulp or so.
fn exact_unary(u: UnaryOp) -> bool {
    !matches!(u, UnaryOp::Sigmoid | UnaryOp::Erf | UnaryOp::GeluTanh)
}

/// Ops that amplify a difference in their operand without bound (steps, poles,
/// exponentials): their operands must be exact.
fn needs_exact_unary(u: UnaryOp) -> bool {
    matches!(
        u,
        UnaryOp::Floor
            | UnaryOp::Ceil
            | UnaryOp::Trunc
            | UnaryOp::Round
            | UnaryOp::Sign
            | UnaryOp::Exp
            | UnaryOp::Sin
            | UnaryOp::Cos
            | UnaryOp::Recip
            | UnaryOp::Rsqrt
            | UnaryOp::Log
            | UnaryOp::Log1p
            | UnaryOp::Sqrt
    )
}

/// The f64 generator: constants and inputs that f32 cannot hold, tolerances far below
/// an f32 rounding (exact values: 1e-15 relative; sums: 1e-13 of the terms' magnitude;
/// others: 1e-10).
const F64: Spec<f64> = Spec {
    dtype: FloatType::F64,
    unary: &UNARY64,
    konst: |rng| {
        let consts = [0.1, -1.5, 2.0, 0.0, 1.0 / 3.0, -0.25, std::f64::consts::PI];
        Op::Const64(consts[rng.below(consts.len())])
    },
    exact_unary,
    needs_exact_unary,
    exact_pow: true,
    zero_extents: false,
    // Full f64 precision: the low bits would be lost in f32.
    sample: |rng| f64::from(rng.range(-3.0, 3.0)) + f64::from(rng.range(0.0, 1.0)) * 1e-9,
    tolerance: Tolerance {
        exact: (1e-15, 0.0),
        inexact: (1e-10, 0.0),
        sum_factor: 1e2,
    },
};

#[test]
fn random_f64_programs_match_the_f64_reference() {
    assert_cases_match(&F64, 300);
}

/// The harness must notice the stored (or reduced) value changed by 1e-8 relative in
/// the reference (f32 rounding errors are up to 6e-8), far above the f64 tolerances.
#[test]
fn harness_detects_a_relative_change_of_1e_8() {
    let (mut detected, mut tried) = (0, 0);
    for seed in 0..150u64 {
        let case = gen_case(&F64, seed, false);
        let Some(wrong) = planted(&case, |k, target| {
            let scale = k.push(Op::Const64(1.0 + 1e-8));
            k.push(Op::Binary(BinaryOp::Mul, target, scale))
        }) else {
            continue;
        };
        tried += 1;
        if compare(&F64, &case, &wrong).is_err() {
            detected += 1;
        }
    }
    assert!(tried > 50, "too few cases tried: {tried}");
    assert!(
        detected * 10 >= tried * 7,
        "planted differences detected in only {detected} of {tried} cases"
    );
}

/// Validation keeps float types apart: an f64 constant in an f32 kernel is refused
/// (it would be rounded), and f32 views cannot run an f64 kernel.
#[test]
fn float_types_are_checked() {
    let mut k = Kernel::new(1, vec![Access::Contiguous]);
    let x = k.push(Op::Load(0));
    let c = k.push(Op::Const64(0.1));
    let y = k.push(Op::Binary(BinaryOp::Add, x, c));
    k.outputs.push(Output {
        value: y,
        access: Access::Contiguous,
    });
    let e = compile(&k).expect_err("f64 constant in an f32 kernel");
    assert!(e.to_string().contains("f64 constant"), "{e}");
    k.dtype = FloatType::F64;
    let ck = compile(&k).expect("the same body as an f64 kernel");
    let (xs, st) = (vec![1.0f32; 4], [1isize]);
    let mut out = vec![0.0f32; 4];
    let err = ck
        .run(
            &[BufView::new(&xs, &st)],
            &mut [BufViewMut::new(&mut out, &st)],
            &[4],
        )
        .expect_err("f32 views of an f64 kernel");
    assert!(err.to_string().contains("F64 kernel run over F32"), "{err}");
    let xs = vec![0.2f64, -1.0, 3.5, 1e-300];
    let mut out = vec![0.0f64; 4];
    ck.run_typed(
        &[BufView::new(&xs, &st)],
        &mut [BufViewMut::new(&mut out, &st)],
        &[4],
    )
    .expect("run f64");
    let want: Vec<f64> = xs.iter().map(|x| x + 0.1).collect();
    assert_eq!(out, want, "f64 kernel rounded something");
}
