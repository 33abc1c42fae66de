//! Property test: random kernel IR programs (random SSA graphs, shapes with broadcast,
//! negative and padded strides, reductions) compiled and compared with the reference
//! interpreter; plus a meta-test that the comparison detects a planted difference (and
//! the same for float64 kernels, codegen_prop/f64.rs; the generator is codegen_prop/gen.rs).

mod codegen_common;
#[path = "codegen_prop/gen.rs"]
mod gen;
// The same property test for float64 kernels.
#[path = "codegen_prop/f64.rs"]
mod prop64;

use gen::{assert_cases_match, compare, gen_case, planted, Case, Spec, Tolerance};
use kiln::compile::{Access, BinaryOp, FloatType, Kernel, Op, Output, UnaryOp};

const UNARY: [UnaryOp; 17] = [
    UnaryOp::Neg,
    UnaryOp::Abs,
    UnaryOp::Exp,
    UnaryOp::Log,
    UnaryOp::Sqrt,
    UnaryOp::Rsqrt,
    UnaryOp::Tanh,
    UnaryOp::Sigmoid,
    UnaryOp::Relu,
    UnaryOp::Erf,
    UnaryOp::Sin,
    UnaryOp::Cos,
    UnaryOp::Floor,
    UnaryOp::Round,
    UnaryOp::Sign,
    UnaryOp::Recip,
    UnaryOp::GeluTanh,
];
/// Ops whose result is computed bit-identically by IEEE arithmetic in both engines.
fn exact_unary(u: UnaryOp) -> bool {
    !matches!(
        u,
        UnaryOp::Exp
            | UnaryOp::Log
            | UnaryOp::Tanh
            | UnaryOp::Sigmoid
            | UnaryOp::GeluTanh
            | UnaryOp::Erf
            | UnaryOp::Sin
            | UnaryOp::Cos
    )
}

/// Ops that amplify input error without bound (discontinuous or steep): their operands
/// must be exact so both engines see identical arguments.
fn needs_exact_unary(u: UnaryOp) -> bool {
    matches!(
        u,
        UnaryOp::Floor
            | UnaryOp::Round
            | UnaryOp::Sign
            | UnaryOp::Exp
            | UnaryOp::Sin
            | UnaryOp::Cos
            | UnaryOp::Recip
            | UnaryOp::Rsqrt
            | UnaryOp::Log
            | UnaryOp::Sqrt
    )
}

/// The f32 generator: constants exact in f32, inputs in [-3, 3).
const F32: Spec<f32> = Spec {
    dtype: FloatType::F32,
    unary: &UNARY,
    konst: |rng| Op::Const([0.5f32, -1.5, 2.0, 0.0, 3.0, -0.25][rng.below(6)]),
    exact_unary,
    needs_exact_unary,
    exact_pow: false,
    zero_extents: true,
    sample: |rng| rng.range(-3.0, 3.0),
    tolerance: Tolerance {
        exact: (1e-5, 1e-6),
        inexact: (1e-4, 1e-5),
        sum_factor: 1.0,
    },
};

#[test]
fn random_programs_match_reference() {
    assert_cases_match(&F32, 400);
}

/// The harness must notice a deliberately wrong reference op.
#[test]
fn harness_detects_planted_difference() {
    let (mut detected, mut tried) = (0, 0);
    for seed in 0..200u64 {
        let case = gen_case(&F32, seed, false);
        // Plant: the reference computes the stored/reduced value times 1.01 plus 0.5.
        let Some(wrong) = planted(&case, |k, target| {
            let one = k.push(Op::Const(0.5));
            let scale = k.push(Op::Const(1.01));
            let scaled = k.push(Op::Binary(BinaryOp::Mul, target, scale));
            k.push(Op::Binary(BinaryOp::Add, scaled, one))
        }) else {
            continue;
        };
        if case.extents.iter().product::<usize>() == 0 {
            continue;
        }
        tried += 1;
        match compare(&F32, &case, &wrong) {
            Err(_) => detected += 1,
            Ok(()) => println!("seed {seed}: planted difference not visible"),
        }
    }
    assert!(tried > 50, "too few usable cases: {tried}");
    // Only outputs that are all NaN/inf can hide the change.
    assert!(detected * 10 >= tried * 9, "detected {detected} of {tried}");
}

/// A wrong op (Max instead of Min) in the reference is detected on plain data.
#[test]
fn harness_detects_swapped_op() {
    let mut k = Kernel::new(2, vec![Access::Contiguous, Access::Strided]);
    let x = k.push(Op::Load(0));
    let y = k.push(Op::Load(1));
    let z = k.push(Op::Binary(BinaryOp::Minimum, x, y));
    k.outputs.push(Output {
        value: z,
        access: Access::Contiguous,
    });
    let mut wrong = k.clone();
    wrong.body[2] = Op::Binary(BinaryOp::Maximum, x, y);
    let case = Case {
        kernel: k,
        extents: vec![3, 5],
        inputs: vec![
            ((0..15).map(|i| i as f32).collect(), 0, vec![5, 1]),
            ((0..30).map(|i| 10.0 - i as f32).collect(), 0, vec![10, 2]),
        ],
        outputs: vec![(15, 0, vec![5, 1])],
        exact: vec![true; 3],
    };
    assert!(compare(&F32, &case, &case.kernel).is_ok());
    assert!(compare(&F32, &case, &wrong).is_err());
}
