//! Property test: random kernel IR programs (random SSA graphs, shapes with broadcast,
//! negative and padded strides, reductions) compiled and compared with the reference
//! interpreter; plus a meta-test that the comparison detects a planted difference.

mod codegen_common;

use codegen_common::Rng;
use kiln::compile::{
    compile, run_reference, Access, BinaryOp, BufView, BufViewMut, Kernel, Op, Output, ReduceOp,
    Reduction, UnaryOp, ValueId,
};

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
const BINARY: [BinaryOp; 9] = [
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
const CMP: [BinaryOp; 6] = [
    BinaryOp::Lt,
    BinaryOp::Le,
    BinaryOp::Gt,
    BinaryOp::Ge,
    BinaryOp::Eq,
    BinaryOp::Ne,
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

fn needs_exact_binary(b: BinaryOp) -> bool {
    matches!(
        b,
        BinaryOp::Div | BinaryOp::Pow | BinaryOp::FloorDiv | BinaryOp::Rem | BinaryOp::Mul
    )
}

struct Case {
    kernel: Kernel,
    extents: Vec<usize>,
    inputs: Vec<(Vec<f32>, usize, Vec<isize>)>,
    outputs: Vec<(usize, usize, Vec<isize>)>,
    /// Per body value: computed exactly by both engines.
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
            0 => (
                Op::Const([0.5f32, -1.5, 2.0, 0.0, 3.0, -0.25][rng.below(6)]),
                true,
            ),
            1..=4 => {
                let u = UNARY[rng.below(UNARY.len())];
                let Some(a) = pick(rng, needs_exact_unary(u)) else {
                    continue;
                };
                (Op::Unary(u, a), exact_unary(u) && is_exact(a))
            }
            5..=7 => {
                let b = BINARY[rng.below(BINARY.len())];
                let need = needs_exact_binary(b);
                let (Some(x), Some(y)) = (pick(rng, need), pick(rng, need)) else {
                    continue;
                };
                let ex = !matches!(b, BinaryOp::Pow) && is_exact(x) && is_exact(y);
                (Op::Binary(b, x, y), ex)
            }
            8 => {
                let (Some(x), Some(y)) = (pick(rng, true), pick(rng, true)) else {
                    continue;
                };
                (Op::Compare(CMP[rng.below(6)], x, y), true)
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
    let mut span = 1isize;
    let inner = match access {
        Access::Contiguous => 1,
        Access::Broadcast => 0,
        Access::Strided => [2isize, 3, -1, -2][rng.below(4)],
    };
    strides[rank - 1] = inner;
    span *= inner.abs().max(1) * extents[rank - 1].max(1) as isize;
    for d in (0..rank - 1).rev() {
        if input && rng.chance(0.2) {
            strides[d] = 0;
            continue;
        }
        let pad = [0isize, 0, 1, 3][rng.below(4)];
        let s = span + pad;
        strides[d] = if rng.chance(0.15) { -s } else { s };
        span = s * extents[d].max(1) as isize;
    }
    let mut offset = 0usize;
    let mut hi = 0usize;
    for (&s, &e) in strides.iter().zip(extents) {
        let reach = (e.max(1) - 1) as isize * s;
        if reach < 0 {
            offset += (-reach) as usize;
        } else {
            hi += reach as usize;
        }
    }
    let len = offset + hi + 1 + rng.below(3);
    (len, offset, strides)
}

/// A random case; `specials` sprinkles NaN/inf/0 into the inputs (rarely in big ones,
/// so that big reductions are not all NaN).
fn gen_case(seed: u64, specials: bool) -> Case {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let rank = 1 + rng.below(4);
    let sizes = [0usize, 1, 2, 3, 4, 5, 7, 8, 9, 13, 17, 33];
    let mut extents: Vec<usize> = (0..rank)
        .map(|_| sizes[1 + rng.below(sizes.len() - 1)])
        .collect();
    if rng.chance(0.03) {
        extents[rng.below(rank)] = 0;
    }
    if rank == 1 && rng.chance(0.3) {
        extents[0] = 70_000 + rng.below(100);
    }
    let accesses = [Access::Contiguous, Access::Broadcast, Access::Strided];
    let n_in = 1 + rng.below(3);
    let inputs_access: Vec<Access> = (0..n_in).map(|_| accesses[rng.below(3)]).collect();
    let mut kernel = Kernel::new(rank, inputs_access.clone());
    let n_ops = 1 + rng.below(10);
    let exact = gen_body(&mut rng, &mut kernel, n_ops);
    let n_vals = kernel.body.len();
    let n_out = rng.below(3);
    for _ in 0..n_out {
        let access = if rng.chance(0.5) {
            Access::Contiguous
        } else {
            Access::Strided
        };
        kernel.outputs.push(Output {
            value: ValueId(rng.below(n_vals) as u32),
            access,
        });
    }
    if n_out == 0 || rng.chance(0.4) {
        let op = [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min][rng.below(3)];
        kernel.reduction = Some(Reduction {
            op,
            dims: 1 + rng.below(rank),
            value: ValueId(rng.below(n_vals) as u32),
            first: false,
        });
        if let Some(r) = kernel.reduction.as_mut() {
            r.first = r.op != ReduceOp::Sum && r.dims == 1;
        }
    }
    let inputs = inputs_access
        .iter()
        .map(|&a| {
            let (len, off, st) = gen_layout(&mut rng, &extents, a, true);
            let p = if !specials {
                0.0
            } else if len < 2000 {
                0.01
            } else {
                2e-5
            };
            let data = (0..len)
                .map(|_| {
                    if rng.chance(p) {
                        [f32::NAN, f32::INFINITY, -f32::INFINITY, 0.0][rng.below(4)]
                    } else {
                        rng.range(-3.0, 3.0)
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

/// Runs the JIT and the reference kernel (`truth`) on the case; returns the first
/// mismatch beyond tolerance, if any.
fn compare(case: &Case, truth: &Kernel) -> Result<(), String> {
    let ck = compile(&case.kernel).map_err(|e| format!("compile: {e}"))?;
    let views: Vec<BufView> = case
        .inputs
        .iter()
        .map(|(d, o, s)| BufView {
            data: d,
            offset: *o,
            strides: s,
        })
        .collect();
    let mut got: Vec<Vec<f32>> = case.outputs.iter().map(|o| vec![-7.5f32; o.0]).collect();
    let mut want = got.clone();
    let mut mags = Vec::new();
    {
        let mut outs: Vec<BufViewMut> = got
            .iter_mut()
            .zip(&case.outputs)
            .map(|(d, o)| BufViewMut {
                data: d,
                offset: o.1,
                strides: &o.2,
            })
            .collect();
        ck.run(&views, &mut outs, &case.extents)
            .map_err(|e| format!("run: {e}"))?;
        let mut outs: Vec<BufViewMut> = want
            .iter_mut()
            .zip(&case.outputs)
            .map(|(d, o)| BufViewMut {
                data: d,
                offset: o.1,
                strides: &o.2,
            })
            .collect();
        run_reference(truth, &views, &mut outs, &case.extents, Some(&mut mags))
            .map_err(|e| format!("reference: {e}"))?;
    }
    let n_store = case.kernel.outputs.len();
    for (b, (g, w)) in got.iter().zip(&want).enumerate() {
        let (value, is_red) = match case.kernel.outputs.get(b) {
            Some(o) => (o.value, false),
            None => (
                case.kernel.reduction.map(|r| r.value).unwrap_or(ValueId(0)),
                true,
            ),
        };
        let exact = case.exact[value.index()];
        let (rel, abs) = if exact { (1e-5, 1e-6) } else { (1e-4, 1e-5) };
        let max_mag = mags.iter().copied().fold(0.0f64, f64::max);
        for (i, (&gv, &wv)) in g.iter().zip(w).enumerate() {
            let ok = (gv.is_nan() && wv.is_nan()) || gv == wv || {
                let scale = if is_red && case.kernel.reduction.map(|r| r.op) == Some(ReduceOp::Sum)
                {
                    max_mag.max(wv.abs() as f64)
                } else {
                    wv.abs() as f64
                };
                ((gv - wv).abs() as f64) <= rel * scale + abs
            };
            if !ok {
                return Err(format!(
                    "buffer {b} (store {}) elem {i}: jit {gv:e} vs reference {wv:e}",
                    b < n_store
                ));
            }
        }
    }
    Ok(())
}

#[test]
fn random_programs_match_reference() {
    let cases = 400u64;
    for seed in 0..cases {
        let case = gen_case(seed, true);
        if let Err(e) = compare(&case, &case.kernel) {
            panic!(
                "seed {seed}: {e}\nkernel: {:#?}\nextents {:?}",
                case.kernel, case.extents
            );
        }
    }
}

/// The harness must notice a deliberately wrong reference op.
#[test]
fn harness_detects_planted_difference() {
    let mut detected = 0;
    let mut tried = 0;
    for seed in 0..200u64 {
        let case = gen_case(seed, false);
        // Plant: the reference computes the stored/reduced value times 1.01 plus 0.5.
        let mut wrong = case.kernel.clone();
        let one = wrong.push(Op::Const(0.5));
        let scale = wrong.push(Op::Const(1.01));
        let target = match (wrong.outputs.first(), wrong.reduction) {
            (Some(o), _) => o.value,
            (None, Some(r)) => r.value,
            _ => continue,
        };
        if wrong
            .validate()
            .ok()
            .and_then(|k| k.get(target.index()).copied())
            != Some(kiln::compile::Kind::F32)
        {
            continue;
        }
        let scaled = wrong.push(Op::Binary(BinaryOp::Mul, target, scale));
        let plus = wrong.push(Op::Binary(BinaryOp::Add, scaled, one));
        match wrong.outputs.first_mut() {
            Some(o) => o.value = plus,
            None => {
                if let Some(r) = wrong.reduction.as_mut() {
                    r.value = plus;
                }
            }
        }
        let total: usize = case.extents.iter().product();
        if total == 0 {
            continue;
        }
        tried += 1;
        match compare(&case, &wrong) {
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
    assert!(compare(&case, &case.kernel).is_ok());
    assert!(compare(&case, &wrong).is_err());
}
