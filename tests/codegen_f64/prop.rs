//! Property test of float64 kernels: random f64 kernel IR programs (random SSA chains of
//! every fusable op, f64 constants that f32 cannot hold, broadcast/strided/negative
//! strides, stored outputs and reductions) compiled and compared with the reference
//! interpreter run in f64 (`run_reference_typed::<f64>`, Rust's f64 math); a meta-test
//! proves the comparison catches a value rounded to f32 in the middle of a chain.

use super::codegen_common::Rng;
use kiln::compile::{
    compile, run_reference_typed, Access, BinaryOp, BufView, BufViewMut, FloatType, Kernel, Kind,
    Op, Output, ReduceOp, Reduction, UnaryOp, ValueId,
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
const BINARY64: [BinaryOp; 9] = [
    BinaryOp::Add,
    BinaryOp::Sub,
    BinaryOp::Mul,
    BinaryOp::Div,
    BinaryOp::Maximum,
    BinaryOp::Minimum,
    BinaryOp::Pow,
    BinaryOp::FloorDiv,
    BinaryOp::Rem,
];
const CMP64: [BinaryOp; 6] = [
    BinaryOp::Lt,
    BinaryOp::Le,
    BinaryOp::Gt,
    BinaryOp::Ge,
    BinaryOp::Eq,
    BinaryOp::Ne,
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

fn needs_exact_binary(b: BinaryOp) -> bool {
    matches!(
        b,
        BinaryOp::Div | BinaryOp::Pow | BinaryOp::FloorDiv | BinaryOp::Rem | BinaryOp::Mul
    )
}

/// Constants of the f64 kernels: most are not f32 values.
const CONSTS: [f64; 7] = [0.1, -1.5, 2.0, 0.0, 1.0 / 3.0, -0.25, std::f64::consts::PI];

struct Case {
    kernel: Kernel,
    extents: Vec<usize>,
    inputs: Vec<(Vec<f64>, usize, Vec<isize>)>,
    outputs: Vec<(usize, usize, Vec<isize>)>,
    /// Per body value: computed identically by both engines.
    exact: Vec<bool>,
}

fn gen_body(rng: &mut Rng, k: &mut Kernel, n_ops: usize) -> Vec<bool> {
    let mut floats: Vec<(ValueId, bool)> = Vec::new();
    let mut masks: Vec<ValueId> = Vec::new();
    let mut exact = Vec::new();
    for i in 0..k.inputs.len() {
        floats.push((k.push(Op::Load(i)), true));
        exact.push(true);
    }
    while k.body.len() < n_ops + k.inputs.len() {
        let pick = |rng: &mut Rng, need_exact: bool| -> Option<ValueId> {
            let pool: Vec<ValueId> = floats
                .iter()
                .filter(|f| f.1 || !need_exact)
                .map(|f| f.0)
                .collect();
            (!pool.is_empty()).then(|| pool[rng.below(pool.len())])
        };
        let is_exact = |v: ValueId| floats.iter().any(|f| f.0 == v && f.1);
        let (op, ex) = match rng.below(10) {
            0 => (Op::Const64(CONSTS[rng.below(CONSTS.len())]), true),
            1..=4 => {
                let u = UNARY64[rng.below(UNARY64.len())];
                let Some(a) = pick(rng, needs_exact_unary(u)) else {
                    continue;
                };
                (Op::Unary(u, a), exact_unary(u) && is_exact(a))
            }
            5..=7 => {
                let b = BINARY64[rng.below(BINARY64.len())];
                let need = needs_exact_binary(b);
                let (Some(x), Some(y)) = (pick(rng, need), pick(rng, need)) else {
                    continue;
                };
                (Op::Binary(b, x, y), is_exact(x) && is_exact(y))
            }
            8 => {
                let (Some(x), Some(y)) = (pick(rng, true), pick(rng, true)) else {
                    continue;
                };
                (Op::Compare(CMP64[rng.below(6)], x, y), true)
            }
            _ => {
                if masks.is_empty() {
                    continue;
                }
                let m = masks[rng.below(masks.len())];
                let (Some(x), Some(y)) = (pick(rng, false), pick(rng, false)) else {
                    continue;
                };
                (Op::Select(m, x, y), is_exact(x) && is_exact(y))
            }
        };
        let id = k.push(op);
        exact.push(ex);
        match op {
            Op::Compare(..) => masks.push(id),
            _ => floats.push((id, ex)),
        }
    }
    exact
}

/// A random layout: (buffer length, offset, strides) for `extents`.
fn gen_layout(
    rng: &mut Rng,
    extents: &[usize],
    access: Access,
    input: bool,
) -> (usize, usize, Vec<isize>) {
    let rank = extents.len();
    let mut strides = vec![0isize; rank];
    let inner = match access {
        Access::Contiguous => 1,
        Access::Broadcast => 0,
        Access::Strided => [2isize, 3, -1, -2][rng.below(4)],
    };
    strides[rank - 1] = inner;
    let mut span = inner.abs().max(1) * extents[rank - 1].max(1) as isize;
    for d in (0..rank - 1).rev() {
        if input && rng.chance(0.2) {
            strides[d] = 0;
            continue;
        }
        let s = span + [0isize, 0, 1, 3][rng.below(4)];
        strides[d] = if rng.chance(0.15) { -s } else { s };
        span = s * extents[d].max(1) as isize;
    }
    let (mut offset, mut hi) = (0usize, 0usize);
    for (&s, &e) in strides.iter().zip(extents) {
        let reach = (e.max(1) - 1) as isize * s;
        if reach < 0 {
            offset += (-reach) as usize;
        } else {
            hi += reach as usize;
        }
    }
    (offset + hi + 1 + rng.below(3), offset, strides)
}

fn gen_case(seed: u64, specials: bool) -> Case {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let rank = 1 + rng.below(4);
    let sizes = [1usize, 2, 3, 4, 5, 7, 8, 9, 13, 17, 33];
    let mut extents: Vec<usize> = (0..rank).map(|_| sizes[rng.below(sizes.len())]).collect();
    if rank == 1 && rng.chance(0.3) {
        // Split across threads (the partial results of full reductions included).
        extents[0] = 70_000 + rng.below(100);
    }
    let accesses = [Access::Contiguous, Access::Broadcast, Access::Strided];
    let n_in = 1 + rng.below(3);
    let inputs_access: Vec<Access> = (0..n_in).map(|_| accesses[rng.below(3)]).collect();
    let mut kernel = Kernel::typed(rank, inputs_access.clone(), FloatType::F64);
    let n_ops = 1 + rng.below(10);
    let exact = gen_body(&mut rng, &mut kernel, n_ops);
    let n_vals = kernel.body.len();
    let n_out = rng.below(3);
    for _ in 0..n_out {
        let access = [Access::Contiguous, Access::Strided][rng.below(2)];
        kernel.outputs.push(Output {
            value: ValueId(rng.below(n_vals) as u32),
            access,
        });
    }
    if n_out == 0 || rng.chance(0.4) {
        kernel.reduction = Some(Reduction {
            op: [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min][rng.below(3)],
            dims: 1 + rng.below(rank),
            first: false,
            value: ValueId(rng.below(n_vals) as u32),
        });
    }
    let inputs = inputs_access
        .iter()
        .map(|&a| {
            let (len, off, st) = gen_layout(&mut rng, &extents, a, true);
            let p = match (specials, len < 2000) {
                (false, _) => 0.0,
                (true, true) => 0.01,
                (true, false) => 2e-5,
            };
            let data = (0..len)
                .map(|_| {
                    if rng.chance(p) {
                        [f64::NAN, f64::INFINITY, -f64::INFINITY, 0.0][rng.below(4)]
                    } else {
                        // Full f64 precision: the low bits would be lost in f32.
                        f64::from(rng.range(-3.0, 3.0)) + f64::from(rng.range(0.0, 1.0)) * 1e-9
                    }
                })
                .collect();
            (data, off, st)
        })
        .collect();
    let mut outputs: Vec<_> = kernel
        .outputs
        .iter()
        .map(|o| gen_layout(&mut rng, &extents, o.access, false))
        .collect();
    if kernel.reduction.is_some() {
        let outer = &extents[..rank - kernel.reduced_dims()];
        outputs.push(if outer.is_empty() {
            (1, 0, vec![])
        } else {
            gen_layout(&mut rng, outer, Access::Strided, false)
        });
    }
    Case {
        kernel,
        extents,
        inputs,
        outputs,
        exact,
    }
}

/// Runs the JIT on `case` and the reference on `truth`; the first difference beyond
/// tolerance (exact values: 1e-15 relative; sums: 1e-13 of the terms' magnitude;
/// others: 1e-10), if any.
fn compare(case: &Case, truth: &Kernel) -> Result<(), String> {
    let ck = compile(&case.kernel).map_err(|e| format!("compile: {e}"))?;
    let views: Vec<BufView<f64>> = case
        .inputs
        .iter()
        .map(|(d, o, s)| BufView {
            data: d,
            offset: *o,
            strides: s,
        })
        .collect();
    let mut got: Vec<Vec<f64>> = case.outputs.iter().map(|o| vec![-7.5; o.0]).collect();
    let mut want = got.clone();
    let mut mags = Vec::new();
    {
        let mut outs: Vec<BufViewMut<f64>> = got
            .iter_mut()
            .zip(&case.outputs)
            .map(|(d, o)| BufViewMut {
                data: d,
                offset: o.1,
                strides: &o.2,
            })
            .collect();
        ck.run_typed(&views, &mut outs, &case.extents)
            .map_err(|e| format!("run: {e}"))?;
        let mut outs: Vec<BufViewMut<f64>> = want
            .iter_mut()
            .zip(&case.outputs)
            .map(|(d, o)| BufViewMut {
                data: d,
                offset: o.1,
                strides: &o.2,
            })
            .collect();
        run_reference_typed(truth, &views, &mut outs, &case.extents, Some(&mut mags))
            .map_err(|e| format!("reference: {e}"))?;
    }
    let max_mag = mags.iter().copied().fold(0.0f64, f64::max);
    for (b, (g, w)) in got.iter().zip(&want).enumerate() {
        let (value, red) = match case.kernel.outputs.get(b) {
            Some(o) => (o.value, None),
            None => match case.kernel.reduction {
                Some(r) => (r.value, Some(r.op)),
                None => return Err("no such buffer".into()),
            },
        };
        let rel = if case.exact[value.index()] {
            1e-15
        } else {
            1e-10
        };
        for (i, (&gv, &wv)) in g.iter().zip(w).enumerate() {
            let scale = match red {
                Some(ReduceOp::Sum) => max_mag.max(wv.abs()) * 1e2,
                _ => wv.abs(),
            };
            let ok = (gv.is_nan() && wv.is_nan()) || gv == wv || (gv - wv).abs() <= rel * scale;
            if !ok {
                return Err(format!(
                    "buffer {b} elem {i}: jit {gv:e} vs reference {wv:e}"
                ));
            }
        }
    }
    Ok(())
}

#[test]
fn random_f64_programs_match_the_f64_reference() {
    for seed in 0..300u64 {
        let case = gen_case(seed, true);
        if let Err(e) = compare(&case, &case.kernel) {
            panic!(
                "seed {seed}: {e}\nkernel: {:#?}\nextents {:?}",
                case.kernel, case.extents
            );
        }
    }
}

/// The harness must notice the stored (or reduced) value changed by 1e-8 relative in
/// the reference (f32 rounding errors are up to 6e-8), far above the f64 tolerances.
#[test]
fn harness_detects_a_relative_change_of_1e_8() {
    let (mut detected, mut tried) = (0, 0);
    for seed in 0..150u64 {
        let case = gen_case(seed, false);
        let mut wrong = case.kernel.clone();
        let target = match (wrong.outputs.first(), wrong.reduction) {
            (Some(o), _) => o.value,
            (None, Some(r)) => r.value,
            _ => continue,
        };
        let kinds = wrong.validate().expect("valid case");
        if kinds.get(target.index()) != Some(&Kind::F64) {
            continue;
        }
        let scale = wrong.push(Op::Const64(1.0 + 1e-8));
        let changed = wrong.push(Op::Binary(BinaryOp::Mul, target, scale));
        match wrong.outputs.first_mut() {
            Some(o) => o.value = changed,
            None => {
                if let Some(r) = wrong.reduction.as_mut() {
                    r.value = changed;
                }
            }
        }
        tried += 1;
        if compare(&case, &wrong).is_err() {
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
