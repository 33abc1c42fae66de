//! Pass tests: text snapshots of graphs before/after each pass (tests/compile/passes/,
//! rewritten with KILN_BLESS=1), the GELU rewrite's accuracy against f64, and a
//! differential property test: optimized vs unoptimized graphs run node by node.

use super::fold::eval_elementwise;
use super::*;
use crate::compile::ir::{Graph, InputKind, IrOp, Node, NodeId, PathStep};
use crate::error::Result;
use crate::ops::{BinaryOp, UnaryOp};
use crate::tensor::creation::from_f32;
use crate::tensor::dtype::{DType, Scalar};
use crate::tensor::Tensor;
use proptest::prelude::*;
use std::rc::Rc;

pub(super) fn input(g: &mut Graph, shape: &[usize]) -> NodeId {
    let k = g.inputs.len();
    g.add_input(
        InputKind::Arg(vec![PathStep::Index(k)]),
        DType::F32,
        shape.into(),
        None,
    )
}

/// Appends `op(args)` with its type derived by `infer`.
pub(super) fn add(g: &mut Graph, op: IrOp, args: &[NodeId]) -> NodeId {
    g.push_derived(op, args, None)
        .expect("well-typed test graph")
}

fn bs(g: &mut Graph, op: BinaryOp, s: f64, reverse: bool, x: NodeId) -> NodeId {
    let op = IrOp::BinaryScalar {
        op,
        scalar: Scalar::Float(s),
        reverse,
    };
    add(g, op, &[x])
}

fn constant(g: &mut Graph, data: Vec<f32>, shape: &[usize]) -> NodeId {
    let t = from_f32(data, shape).expect("constant");
    add(g, IrOp::Const(t), &[])
}

/// Runs an elementwise graph node by node with the eager library (the unoptimized
/// semantics every pass must preserve).
fn run(g: &Graph, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
    let mut vals: Vec<Tensor> = Vec::with_capacity(g.len());
    for n in &g.nodes {
        let v = match &n.op {
            IrOp::Input { slot, .. } => inputs[*slot].clone(),
            IrOp::Const(t) => t.clone(),
            op => {
                let args: Vec<Tensor> = n.args.iter().map(|a| vals[a.index()].clone()).collect();
                eval_elementwise(op, &args).expect("elementwise op")?
            }
        };
        vals.push(v);
    }
    Ok(g.outputs.iter().map(|o| vals[o.index()].clone()).collect())
}

/// The executor callback for compiled graphs in these tests (elementwise ops only).
fn eval_node(n: &Node, args: &[Tensor], inputs: &[Tensor]) -> Result<Tensor> {
    match &n.op {
        IrOp::Input { slot, .. } => Ok(inputs[*slot].clone()),
        IrOp::Const(t) => Ok(t.clone()),
        op => eval_elementwise(op, args).expect("elementwise op"),
    }
}

/// Optimizes, fuses and compiles `g`, then runs it.
fn run_compiled(g: &Graph, inputs: &[Tensor]) -> (Vec<Tensor>, usize) {
    let cg = crate::compile::runtime::lower::compile_graph(optimize(g.clone()).expect("optimize"))
        .expect("compile");
    (
        cg.run(inputs, &eval_node, &mut String::new())
            .expect("run compiled"),
        cg.fused.len(),
    )
}

/// Equal within 1e-5 relative (plus 1e-6 absolute near 0); NaN matches NaN, inf itself.
fn close(a: f32, b: f32) -> bool {
    if a.is_nan() || b.is_nan() {
        return a.is_nan() && b.is_nan();
    }
    if a.is_infinite() || b.is_infinite() {
        return a == b;
    }
    (a - b).abs() <= 1e-5 * a.abs().max(b.abs()) + 1e-6
}

fn outputs_agree(x: &[Tensor], y: &[Tensor]) -> bool {
    x.len() == y.len()
        && x.iter().zip(y).all(|(a, b)| {
            let (a, b) = (a.to_f32_vec().expect("f32"), b.to_f32_vec().expect("f32"));
            a.len() == b.len() && a.iter().zip(&b).all(|(&p, &q)| close(p, q))
        })
}

/// Compares `text` with the snapshot `name`, or rewrites it under KILN_BLESS=1.
fn snapshot(name: &str, text: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/compile/passes")
        .join(format!("{name}.txt"));
    if std::env::var_os("KILN_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
        std::fs::write(&path, text).expect("bless");
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("missing snapshot {path:?}; run with KILN_BLESS=1"));
    assert_eq!(text, want, "snapshot {name} differs");
}

/// Runs `pass` on `g`, snapshots before/after, and checks the result computes the same.
fn check_pass(name: &str, pass: Pass, g: Graph, inputs: &[Tensor]) -> Graph {
    let before = g.to_text(None);
    let out = run_pass(g.clone(), name, pass).expect("pass");
    snapshot(
        name,
        &format!("{before}--- after {name} ---\n{}", out.to_text(None)),
    );
    let (want, got) = (
        run(&g, inputs).expect("run"),
        run(&out, inputs).expect("run"),
    );
    assert!(outputs_agree(&want, &got), "{name} changed the results");
    out
}

fn ramp(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    let data = (0..n).map(|i| i as f32 * 0.37 - 3.0).collect();
    from_f32(data, shape).expect("ramp")
}

#[test]
fn fold_evaluates_constant_subgraphs() {
    let mut g = Graph::new();
    let x = input(&mut g, &[3]);
    let a = constant(&mut g, vec![1.0, 2.0, 3.0], &[3]);
    let b = bs(&mut g, BinaryOp::Mul, 2.0, false, a);
    let c = add(&mut g, IrOp::Unary(UnaryOp::Neg), &[b]);
    let y = add(&mut g, IrOp::Binary(BinaryOp::Add), &[x, c]);
    g.outputs.push(y);
    let out = check_pass("fold", fold, g, &[ramp(&[3])]);
    let IrOp::Const(t) = &out.nodes[c.index()].op else {
        panic!("neg(2*a) was not folded");
    };
    assert_eq!(t.to_f32_vec().expect("f32"), vec![-2.0, -4.0, -6.0]);
}

#[test]
fn simplify_removes_exact_identities_but_not_times_zero() {
    let mut g = Graph::new();
    let x = input(&mut g, &[4]);
    let a = bs(&mut g, BinaryOp::Mul, 1.0, true, x);
    let b = bs(&mut g, BinaryOp::Div, 1.0, false, a);
    let c = bs(&mut g, BinaryOp::Sub, 0.0, false, b);
    let d = add(&mut g, IrOp::Unary(UnaryOp::Neg), &[c]);
    let e = add(&mut g, IrOp::Unary(UnaryOp::Neg), &[d]);
    let z = bs(&mut g, BinaryOp::Mul, 0.0, false, e);
    let r = bs(&mut g, BinaryOp::Div, 1.0, true, e);
    g.outputs.extend([e, z, r]);
    let nan = from_f32(vec![f32::NAN, f32::INFINITY, -0.0, 2.5], &[4]).expect("t");
    let out = check_pass("simplify", simplify, g, &[nan]);
    assert_eq!(out.outputs[0], x, "x*1/1-0 with double neg is x");
    assert!(
        matches!(
            out.nodes[out.outputs[1].index()].op,
            IrOp::BinaryScalar { .. }
        ),
        "x*0 must stay (NaN*0 is NaN)"
    );
    assert!(
        matches!(
            out.nodes[out.outputs[2].index()].op,
            IrOp::BinaryScalar { .. }
        ),
        "1/x is not x/1"
    );
}

#[test]
fn cse_merges_repeated_computations() {
    let mut g = Graph::new();
    let x = input(&mut g, &[2, 3]);
    let a = bs(&mut g, BinaryOp::Mul, 2.0, false, x);
    let b = bs(&mut g, BinaryOp::Mul, 2.0, false, x);
    let c = bs(&mut g, BinaryOp::Mul, 3.0, false, x);
    let y = add(&mut g, IrOp::Binary(BinaryOp::Add), &[a, b]);
    let z = add(&mut g, IrOp::Binary(BinaryOp::Add), &[a, c]);
    g.outputs.extend([y, z]);
    let out = check_pass("cse", cse, g, &[ramp(&[2, 3])]);
    let y = &out.nodes[out.outputs[0].index()];
    assert_eq!(y.args[0], y.args[1], "x*2 computed once");
    assert_eq!(out.len(), g_len_after_cse());
}

/// input, x*2, x*3, a+a, a+c.
fn g_len_after_cse() -> usize {
    5
}

#[test]
fn dce_drops_unused_nodes_and_keeps_inputs() {
    let mut g = Graph::new();
    let x = input(&mut g, &[2]);
    let unused_input = input(&mut g, &[5]);
    let dead = add(&mut g, IrOp::Unary(UnaryOp::Exp), &[x]);
    let _dead2 = bs(&mut g, BinaryOp::Add, 1.0, false, dead);
    let y = add(&mut g, IrOp::Unary(UnaryOp::Tanh), &[x]);
    g.outputs.push(y);
    let out = check_pass("dce", dce, g, &[ramp(&[2]), ramp(&[5])]);
    assert_eq!(out.len(), 3);
    assert_eq!(out.inputs, vec![x, unused_input]);
}

/// `0.5*x*(1+tanh(c0*(x+c1*x*x*x)))` as the tracer records it; `grouped` writes the cube
/// as `((c1*x)*x)*x` (the W3 script's `0.044715 * x * x * x`), else as `c1*((x*x)*x)`.
fn gelu_graph_with(n: usize, c0: f64, c1: f64, grouped: bool) -> Graph {
    let mut g = Graph::new();
    let x = input(&mut g, &[n]);
    let hx = bs(&mut g, BinaryOp::Mul, 0.5, true, x);
    let cx3 = if grouped {
        let cx = bs(&mut g, BinaryOp::Mul, c1, true, x);
        let cx2 = add(&mut g, IrOp::Binary(BinaryOp::Mul), &[cx, x]);
        add(&mut g, IrOp::Binary(BinaryOp::Mul), &[cx2, x])
    } else {
        let x2 = add(&mut g, IrOp::Binary(BinaryOp::Mul), &[x, x]);
        let x3 = add(&mut g, IrOp::Binary(BinaryOp::Mul), &[x2, x]);
        bs(&mut g, BinaryOp::Mul, c1, true, x3)
    };
    let inner = add(&mut g, IrOp::Binary(BinaryOp::Add), &[x, cx3]);
    let u = bs(&mut g, BinaryOp::Mul, c0, true, inner);
    let t = add(&mut g, IrOp::Unary(UnaryOp::Tanh), &[u]);
    let t1 = bs(&mut g, BinaryOp::Add, 1.0, true, t);
    let y = add(&mut g, IrOp::Binary(BinaryOp::Mul), &[hx, t1]);
    g.outputs.push(y);
    g
}

fn gelu_graph(n: usize) -> Graph {
    gelu_graph_with(n, 0.7978845608, 0.044715, false)
}

fn gelu64(x: f64) -> f64 {
    0.5 * x * (1.0 + (0.7978845608 * (x + 0.044715 * x * x * x)).tanh())
}

/// Max abs error of `ys` against `f` at `xs`.
fn max_err(xs: &[f32], ys: &[f32], f: impl Fn(f64) -> f64) -> f64 {
    xs.iter()
        .zip(ys)
        .map(|(&x, &y)| (f64::from(y) - f(f64::from(x))).abs())
        .fold(0.0, f64::max)
}

/// `n` points evenly over [-8, 8] (values and the input tensor) and the first output of
/// `before` and `after` on them.
fn on_grid(before: &Graph, after: &Graph, n: usize) -> (Vec<f32>, Tensor, Vec<f32>, Vec<f32>) {
    let xs: Vec<f32> = (0..n)
        .map(|i| -8.0 + 16.0 * i as f32 / (n - 1) as f32)
        .collect();
    let x = from_f32(xs.clone(), &[n]).expect("x");
    let out = |g: &Graph| {
        run(g, std::slice::from_ref(&x)).expect("run")[0]
            .to_f32_vec()
            .expect("f32")
    };
    let (b, a) = (out(before), out(after));
    (xs, x, b, a)
}

#[test]
fn gelu_tanh_formula_becomes_the_gelu_op_and_stays_accurate() {
    let n = 20_001;
    let g = gelu_graph(n);
    let opt = optimize(g.clone()).expect("optimize");
    snapshot(
        "gelu_optimize",
        &format!(
            "{}--- after optimize ---\n{}",
            g.to_text(None),
            opt.to_text(None)
        ),
    );
    let text = opt.to_text(None);
    assert!(
        text.contains("gelu(%0, approximate='tanh')") && !text.contains("tanh(%"),
        "{text}"
    );
    let (xs, x, before, after) = on_grid(&g, &opt, n);
    let (e_before, e_after) = (max_err(&xs, &before, gelu64), max_err(&xs, &after, gelu64));
    assert!(e_after <= 1e-6, "rewrite error {e_after:e}");
    assert!(
        e_after <= e_before * 1.5,
        "rewrite {e_after:e} vs formula {e_before:e}"
    );
    assert!(before.iter().zip(&after).all(|(&a, &b)| close(a, b)));
    // Compiled, the op is one fused routine; as accurate at W3's bound.
    let (got, kernels) = run_compiled(&g, &[x]);
    assert_eq!(kernels, 1);
    let got = got[0].to_f32_vec().expect("f32");
    let e_fused = max_err(&xs, &got, gelu64);
    assert!(e_fused <= 1e-6, "fused GELU error {e_fused:e}");
}

#[test]
fn gelu_cube_in_any_grouping_is_recognized() {
    let g = gelu_graph_with(64, 0.7978845608, 0.044715, true);
    let text = optimize(g).expect("optimize").to_text(None);
    assert!(text.contains("approximate='tanh'"), "{text}");
    // x ** 3, as `torch.pow(x, 3.0)` in common GELU code.
    let mut g = Graph::new();
    let x = input(&mut g, &[64]);
    let hx = bs(&mut g, BinaryOp::Mul, 0.5, true, x);
    let x3 = bs(&mut g, BinaryOp::Pow, 3.0, false, x);
    let cx3 = bs(&mut g, BinaryOp::Mul, 0.044715, true, x3);
    let inner = add(&mut g, IrOp::Binary(BinaryOp::Add), &[x, cx3]);
    let u = bs(&mut g, BinaryOp::Mul, 0.7978845608, true, inner);
    let t = add(&mut g, IrOp::Unary(UnaryOp::Tanh), &[u]);
    let t1 = bs(&mut g, BinaryOp::Add, 1.0, true, t);
    let y = add(&mut g, IrOp::Binary(BinaryOp::Mul), &[hx, t1]);
    g.outputs.push(y);
    let text = optimize(g).expect("optimize").to_text(None);
    assert!(text.contains("approximate='tanh'"), "{text}");
    // Another constant (not sqrt(2/pi) in f32) is another function: not the op.
    let g = gelu_graph_with(64, 0.798, 0.044715, true);
    let text = optimize(g).expect("optimize").to_text(None);
    assert!(!text.contains("approximate"), "{text}");
    assert!(text.contains("sigmoid"), "{text}");
}

#[test]
fn other_tanh_gates_become_x_times_sigmoid_with_the_factor_folded() {
    let n = 20_001;
    let (c0, c1) = (0.75, 0.05);
    let g = gelu_graph_with(n, c0, c1, false);
    let opt = optimize(g.clone()).expect("optimize");
    let text = opt.to_text(None);
    assert!(text.contains("sigmoid") && !text.contains("tanh"), "{text}");
    // 2 * (0.75 * v) is one scalar multiply by 1.5 (exact: a power-of-two scaling).
    assert!(
        text.contains("scalar=1.5") && !text.contains("scalar=2"),
        "{text}"
    );
    let f = |x: f64| 0.5 * x * (1.0 + (c0 * (x + c1 * x * x * x)).tanh());
    let (xs, _, before, after) = on_grid(&g, &opt, n);
    let (e_before, e_after) = (max_err(&xs, &before, f), max_err(&xs, &after, f));
    assert!(e_after <= 1e-6, "rewrite error {e_after:e}");
    assert!(e_after <= e_before * 1.5, "{e_after:e} vs {e_before:e}");
}

#[test]
fn gelu_fuses_into_one_kernel_within_1e6_of_f64() {
    let n = 100_003;
    let g = gelu_graph(n);
    let xs: Vec<f32> = (0..n)
        .map(|i| -4.0 + 8.0 * i as f32 / (n - 1) as f32)
        .collect();
    let x = from_f32(xs.clone(), &[n]).expect("x");
    let (got, kernels) = run_compiled(&g, std::slice::from_ref(&x));
    assert_eq!(kernels, 1);
    let got = got[0].to_f32_vec().expect("f32");
    let want = run(&g, &[x]).expect("run")[0].to_f32_vec().expect("f32");
    let err = xs
        .iter()
        .zip(&got)
        .map(|(&x, &y)| (f64::from(y) - gelu64(f64::from(x))).abs())
        .fold(0.0, f64::max);
    assert!(err <= 1e-6, "fused GELU error {err:e}");
    assert!(want.iter().zip(&got).all(|(&a, &b)| close(a, b)));
}

#[test]
fn fused_broadcast_and_strided_inputs_match_eager() {
    let mut g = Graph::new();
    let a = input(&mut g, &[3, 4]);
    let b = input(&mut g, &[4]);
    let c = input(&mut g, &[3, 1]);
    let ab = add(&mut g, IrOp::Binary(BinaryOp::Mul), &[a, b]);
    let abc = add(&mut g, IrOp::Binary(BinaryOp::Sub), &[ab, c]);
    let y = add(&mut g, IrOp::Unary(UnaryOp::Tanh), &[abc]);
    g.outputs.push(y);
    // A transposed (non-contiguous) first input.
    let at = ramp(&[4, 3]).transpose(0, 1).expect("t");
    let inputs = [at, ramp(&[4]), ramp(&[3, 1])];
    let (got, kernels) = run_compiled(&g, &inputs);
    assert_eq!(kernels, 1);
    let want = run(&g, &inputs).expect("run");
    assert!(outputs_agree(&want, &got));
}

#[test]
fn fused_outputs_reuse_their_buffer_only_when_the_caller_dropped_it() {
    let g = gelu_graph(1000);
    let cg =
        crate::compile::runtime::lower::compile_graph(optimize(g).expect("optimize")).expect("cg");
    let x1 = ramp(&[1000]);
    let x2 = from_f32(vec![1.0; 1000], &[1000]).expect("x2");
    let first = cg
        .run(std::slice::from_ref(&x1), &eval_node, &mut String::new())
        .expect("run");
    let kept = first[0].clone();
    let kept_vals = kept.to_f32_vec().expect("f32");
    let second = cg
        .run(std::slice::from_ref(&x2), &eval_node, &mut String::new())
        .expect("run");
    assert!(
        !Rc::ptr_eq(kept.storage(), second[0].storage()),
        "kept result overwritten"
    );
    assert_eq!(kept.to_f32_vec().expect("f32"), kept_vals);
    let addr = Rc::as_ptr(second[0].storage());
    drop((first, kept, second));
    let third = cg
        .run(std::slice::from_ref(&x1), &eval_node, &mut String::new())
        .expect("run");
    assert_eq!(
        Rc::as_ptr(third[0].storage()),
        addr,
        "dropped buffer reused"
    );
    assert_eq!(third[0].to_f32_vec().expect("f32"), kept_vals);
}

#[test]
fn matmul_epilogue_fuses_and_other_nodes_run_through_the_executor() {
    use crate::compile::runtime::exec;
    let mut g = Graph::new();
    let x = input(&mut g, &[4, 3]);
    let w = input(&mut g, &[3, 5]);
    let b = input(&mut g, &[5]);
    let m = add(&mut g, IrOp::Matmul, &[x, w]);
    let mb = add(&mut g, IrOp::Binary(BinaryOp::Add), &[m, b]);
    let t = add(&mut g, IrOp::Unary(UnaryOp::Relu), &[mb]);
    let s = add(
        &mut g,
        IrOp::Sum {
            dims: vec![1],
            keepdim: false,
        },
        &[t],
    );
    g.outputs.extend([t, s]);
    let inputs = [ramp(&[4, 3]), ramp(&[3, 5]), ramp(&[5])];
    let want = exec::run(&g, &inputs, &exec::last_uses(&g)).expect("exec");
    let cg =
        crate::compile::runtime::lower::compile_graph(optimize(g).expect("optimize")).expect("cg");
    assert_eq!(cg.fused.len(), 1, "bias add + relu epilogue");
    let got = cg
        .run(&inputs, &exec::eval, &mut String::new())
        .expect("run");
    assert!(outputs_agree(&want, &got));
}

#[test]
fn harness_detects_a_planted_difference() {
    let mut g = Graph::new();
    let x = input(&mut g, &[8]);
    let y = bs(&mut g, BinaryOp::Mul, 2.0, false, x);
    g.outputs.push(y);
    let mut planted = g.clone();
    planted.nodes[y.index()].op = IrOp::BinaryScalar {
        op: BinaryOp::Mul,
        scalar: Scalar::Float(2.0001),
        reverse: false,
    };
    let inputs = [ramp(&[8])];
    let (a, b) = (
        run(&g, &inputs).expect("run"),
        run(&planted, &inputs).expect("run"),
    );
    assert!(!outputs_agree(&a, &b));
    assert!(outputs_agree(&a, &a));
}

/// One random op: (kind, operand picks, scalar).
type Step = (u8, usize, usize, f64);

const SHAPES: [&[usize]; 3] = [&[3, 4], &[4], &[3, 1]];

/// A random elementwise graph over three broadcastable inputs and a constant.
fn random_graph(steps: &[Step]) -> Graph {
    let mut g = Graph::new();
    let mut vals: Vec<NodeId> = SHAPES.iter().map(|s| input(&mut g, s)).collect();
    vals.push(constant(&mut g, vec![0.5, -1.0, 2.0, 0.0], &[4]));
    let unary = [
        UnaryOp::Neg,
        UnaryOp::Tanh,
        UnaryOp::Sigmoid,
        UnaryOp::Abs,
        UnaryOp::Exp,
    ];
    let binary = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Maximum,
    ];
    for &(kind, i, j, s) in steps {
        let (a, b) = (vals[i % vals.len()], vals[j % vals.len()]);
        let v = match kind % 4 {
            0 => add(&mut g, IrOp::Unary(unary[j % unary.len()]), &[a]),
            1 => add(&mut g, IrOp::Binary(binary[kind as usize / 4 % 4]), &[a, b]),
            2 => bs(&mut g, binary[j % 3], s, kind >= 128, a),
            _ => add(
                &mut g,
                IrOp::Clamp {
                    min: Some(-s),
                    max: Some(s.abs() + 1.0),
                },
                &[a],
            ),
        };
        vals.push(v);
    }
    g.outputs.extend(vals.iter().rev().take(2));
    g
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn optimized_graphs_compute_what_unoptimized_ones_do(
        steps in prop::collection::vec(
            (any::<u8>(), 0usize..64, 0usize..64, prop::sample::select(vec![0.0, 1.0, 0.5, 2.0, -3.0])),
            1..24,
        ),
        seed in 0u32..1000,
    ) {
        let g = random_graph(&steps);
        let opt = optimize(g.clone()).expect("optimize");
        let inputs: Vec<Tensor> = SHAPES
            .iter()
            .map(|s| {
                let n: usize = s.iter().product();
                let data = (0..n)
                    .map(|i| (((i as u32 * 2_654_435_761u32) ^ seed) % 1000) as f32 / 125.0 - 4.0)
                    .collect();
                from_f32(data, s).expect("input")
            })
            .collect();
        let (want, got) = (run(&g, &inputs).expect("run"), run(&opt, &inputs).expect("run"));
        prop_assert!(outputs_agree(&want, &got), "{}\nvs\n{}", g.to_text(None), opt.to_text(None));
        prop_assert!(opt.len() <= g.len());
        let (fused, _) = run_compiled(&g, &inputs);
        prop_assert!(outputs_agree(&want, &fused), "fused differs:\n{}", opt.to_text(None));
    }
}
