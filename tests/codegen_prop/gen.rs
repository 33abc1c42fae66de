//! The random kernel-program generator and the JIT-against-reference comparison shared by
//! the f32 and f64 property tests: a [`Spec`] names what differs between the two float
//! types (op lists, constants, which ops are exact, input data, tolerances).

use super::codegen_common::Rng;
use kiln::compile::{
    compile, run_reference_typed, Access, BinaryOp, BufView, BufViewMut, FloatType, Kernel,
    KernelElem, Op, Output, ReduceOp, Reduction, RefElem, UnaryOp, ValueId,
};

pub const BINARY: [BinaryOp; 9] = [
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
pub const CMP: [BinaryOp; 6] = [
    BinaryOp::Lt,
    BinaryOp::Le,
    BinaryOp::Gt,
    BinaryOp::Ge,
    BinaryOp::Eq,
    BinaryOp::Ne,
];

/// Binary ops that amplify a difference in their operands without bound: their operands
/// must be exact.
fn needs_exact_binary(b: BinaryOp) -> bool {
    matches!(
        b,
        BinaryOp::Div | BinaryOp::Pow | BinaryOp::FloorDiv | BinaryOp::Rem | BinaryOp::Mul
    )
}

/// `|jit - reference| <= rel * scale + abs`, where scale is |reference|, or for a sum
/// reduction `sum_factor` times the larger of it and the terms' total magnitude.
pub struct Tolerance {
    pub exact: (f64, f64),
    pub inexact: (f64, f64),
    pub sum_factor: f64,
}

/// What the generator and the comparison do for one float type.
pub struct Spec<T> {
    pub dtype: FloatType,
    pub unary: &'static [UnaryOp],
    /// A random constant op.
    pub konst: fn(&mut Rng) -> Op,
    /// Unary ops both engines compute with the same operations.
    pub exact_unary: fn(UnaryOp) -> bool,
    /// Unary ops whose operand must be exact (steps, poles, exponentials).
    pub needs_exact_unary: fn(UnaryOp) -> bool,
    /// Whether `pow` of exact operands is exact (the same libm call in both engines).
    pub exact_pow: bool,
    /// Whether some cases get an extent of 0.
    pub zero_extents: bool,
    /// A random ordinary input element.
    pub sample: fn(&mut Rng) -> T,
    pub tolerance: Tolerance,
}

pub struct Case<T> {
    pub kernel: Kernel,
    pub extents: Vec<usize>,
    pub inputs: Vec<(Vec<T>, usize, Vec<isize>)>,
    pub outputs: Vec<(usize, usize, Vec<isize>)>,
    /// Per body value: computed identically by both engines.
    pub exact: Vec<bool>,
}

fn gen_body<T>(spec: &Spec<T>, rng: &mut Rng, k: &mut Kernel, n_ops: usize) -> Vec<bool> {
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
            0 => ((spec.konst)(rng), true),
            1..=4 => {
                let u = spec.unary[rng.below(spec.unary.len())];
                let Some(a) = pick(rng, (spec.needs_exact_unary)(u)) else {
                    continue;
                };
                (Op::Unary(u, a), (spec.exact_unary)(u) && is_exact(a))
            }
            5..=7 => {
                let b = BINARY[rng.below(BINARY.len())];
                let need = needs_exact_binary(b);
                let (Some(x), Some(y)) = (pick(rng, need), pick(rng, need)) else {
                    continue;
                };
                let ex = (spec.exact_pow || b != BinaryOp::Pow) && is_exact(x) && is_exact(y);
                (Op::Binary(b, x, y), ex)
            }
            8 => {
                let (Some(x), Some(y)) = (pick(rng, true), pick(rng, true)) else {
                    continue;
                };
                (Op::Compare(CMP[rng.below(CMP.len())], x, y), true)
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

/// A random case; `specials` sprinkles NaN/inf/0 into the inputs (rarely in big ones,
/// so that big reductions are not all NaN).
pub fn gen_case<T: KernelElem>(spec: &Spec<T>, seed: u64, specials: bool) -> Case<T> {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let rank = 1 + rng.below(4);
    let sizes = [1usize, 2, 3, 4, 5, 7, 8, 9, 13, 17, 33];
    let mut extents: Vec<usize> = (0..rank).map(|_| sizes[rng.below(sizes.len())]).collect();
    if spec.zero_extents && rng.chance(0.03) {
        extents[rng.below(rank)] = 0;
    }
    if rank == 1 && rng.chance(0.3) {
        // Split across threads (the partial results of full reductions included).
        extents[0] = 70_000 + rng.below(100);
    }
    let accesses = [Access::Contiguous, Access::Broadcast, Access::Strided];
    let n_in = 1 + rng.below(3);
    let inputs_access: Vec<Access> = (0..n_in).map(|_| accesses[rng.below(3)]).collect();
    let mut kernel = Kernel::typed(rank, inputs_access.clone(), spec.dtype);
    let n_ops = 1 + rng.below(10);
    let exact = gen_body(spec, &mut rng, &mut kernel, n_ops);
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
        let dims = 1 + rng.below(rank);
        kernel.reduction = Some(Reduction {
            op,
            dims,
            value: ValueId(rng.below(n_vals) as u32),
            first: op != ReduceOp::Sum && dims == 1,
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
                        T::from_f64([f64::NAN, f64::INFINITY, -f64::INFINITY, 0.0][rng.below(4)])
                    } else {
                        (spec.sample)(&mut rng)
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

/// Every case of seeds `0..n` (with special values) agrees with the reference; a
/// mismatch panics with the seed, the difference and the kernel.
pub fn assert_cases_match<T: RefElem>(spec: &Spec<T>, n: u64) {
    for seed in 0..n {
        let case = gen_case(spec, seed, true);
        if let Err(e) = compare(spec, &case, &case.kernel) {
            panic!(
                "seed {seed}: {e}\nkernel: {:#?}\nextents {:?}",
                case.kernel, case.extents
            );
        }
    }
}

/// Runs the JIT on `case` and the reference on `truth`; the first difference beyond the
/// spec's tolerance, if any.
pub fn compare<T: RefElem>(spec: &Spec<T>, case: &Case<T>, truth: &Kernel) -> Result<(), String> {
    let ck = compile(&case.kernel).map_err(|e| format!("compile: {e}"))?;
    let views: Vec<BufView<T>> = case
        .inputs
        .iter()
        .map(|(d, o, s)| BufView {
            data: d,
            offset: *o,
            strides: s,
        })
        .collect();
    let mut got: Vec<Vec<T>> = case
        .outputs
        .iter()
        .map(|o| vec![T::from_f64(-7.5); o.0])
        .collect();
    let mut want = got.clone();
    let mut mags = Vec::new();
    {
        let mut outs = views_mut(&mut got, &case.outputs);
        ck.run_typed(&views, &mut outs, &case.extents)
            .map_err(|e| format!("run: {e}"))?;
        let mut outs = views_mut(&mut want, &case.outputs);
        run_reference_typed(truth, &views, &mut outs, &case.extents, Some(&mut mags))
            .map_err(|e| format!("reference: {e}"))?;
    }
    let max_mag = mags.iter().copied().fold(0.0f64, f64::max);
    let tol = &spec.tolerance;
    for (b, (g, w)) in got.iter().zip(&want).enumerate() {
        let (value, red) = match case.kernel.outputs.get(b) {
            Some(o) => (o.value, None),
            None => match case.kernel.reduction {
                Some(r) => (r.value, Some(r.op)),
                None => return Err("no such buffer".into()),
            },
        };
        let (rel, abs) = if case.exact[value.index()] {
            tol.exact
        } else {
            tol.inexact
        };
        for (i, (&gv, &wv)) in g.iter().zip(w).enumerate() {
            let (gv, wv) = (gv.to_f64(), wv.to_f64());
            let scale = match red {
                Some(ReduceOp::Sum) => max_mag.max(wv.abs()) * tol.sum_factor,
                _ => wv.abs(),
            };
            let ok =
                (gv.is_nan() && wv.is_nan()) || gv == wv || (gv - wv).abs() <= rel * scale + abs;
            if !ok {
                return Err(format!(
                    "buffer {b} (store {}) elem {i}: jit {gv:e} vs reference {wv:e}",
                    red.is_none()
                ));
            }
        }
    }
    Ok(())
}

fn views_mut<'a, T: KernelElem>(
    data: &'a mut [Vec<T>],
    layouts: &'a [(usize, usize, Vec<isize>)],
) -> Vec<BufViewMut<'a, T>> {
    data.iter_mut()
        .zip(layouts)
        .map(|(d, o)| BufViewMut {
            data: d,
            offset: o.1,
            strides: &o.2,
        })
        .collect()
}

/// `case` with its stored (or reduced) value replaced by `change(value)`: the kernel a
/// meta-test plants in the reference. `None` when the case stores nothing of float kind.
pub fn planted<T>(
    case: &Case<T>,
    change: impl Fn(&mut Kernel, ValueId) -> ValueId,
) -> Option<Kernel> {
    let mut wrong = case.kernel.clone();
    let target = match (wrong.outputs.first(), wrong.reduction) {
        (Some(o), _) => o.value,
        (None, Some(r)) => r.value,
        _ => return None,
    };
    let kinds = wrong.validate().ok()?;
    let float = match case.kernel.dtype {
        FloatType::F32 => kiln::compile::Kind::F32,
        FloatType::F64 => kiln::compile::Kind::F64,
    };
    if kinds.get(target.index()) != Some(&float) {
        return None;
    }
    let changed = change(&mut wrong, target);
    match wrong.outputs.first_mut() {
        Some(o) => o.value = changed,
        None => {
            if let Some(r) = wrong.reduction.as_mut() {
                r.value = changed;
            }
        }
    }
    Some(wrong)
}
