//! Reduction fusion and buffer planning of compiled graphs, through the public graph
//! API (`passes::optimize` + `lower::compile_graph`): elementwise producers fused into
//! sum / mean / max / min over trailing dims must equal the executor's eager result
//! (the truth: the same tensor-library calls eager code makes, sums in f64), and a
//! steady-state call allocates no fused output.

mod ir_builder;

use ir_builder::{add, bin, input, scalar};
use kiln::compile::ir::{Graph, IrOp, NodeId};
use kiln::compile::passes::optimize;
use kiln::compile::runtime::exec;
use kiln::compile::runtime::lower::{compile_graph, CompiledGraph};
use kiln::ops::{BinaryOp, UnaryOp};
use kiln::tensor::creation::from_f32;
use kiln::tensor::Tensor;

fn sum(g: &mut Graph, x: NodeId, dims: &[usize], keepdim: bool) -> NodeId {
    let op = IrOp::Sum {
        dims: dims.to_vec(),
        keepdim,
    };
    add(g, op, &[x])
}

/// Deterministic values in [-4, 4) (a multiplicative hash of the index).
fn data(shape: &[usize], seed: u32) -> Tensor {
    let n: usize = shape.iter().product();
    let v = (0..n)
        .map(|i| ((i as u32).wrapping_mul(2_654_435_761) ^ seed) % 1000)
        .map(|h| h as f32 / 125.0 - 4.0)
        .collect();
    from_f32(v, shape).expect("data")
}

/// The graph run node by node by the executor (eager semantics).
fn eager(g: &Graph, inputs: &[Tensor]) -> Vec<Vec<f32>> {
    exec::run(g, inputs, &exec::last_uses(g))
        .expect("eager run")
        .iter()
        .map(|t| t.to_f32_vec().expect("f32"))
        .collect()
}

fn compiled(g: &Graph) -> CompiledGraph {
    compile_graph(optimize(g.clone()).expect("optimize")).expect("compile")
}

fn run(cg: &CompiledGraph, inputs: &[Tensor]) -> Vec<Vec<f32>> {
    cg.run(inputs, &exec::eval, &mut String::new())
        .expect("compiled run")
        .iter()
        .map(|t| t.to_f32_vec().expect("f32"))
        .collect()
}

/// Within 1e-5 relative (1e-6 absolute near 0); NaN matches NaN.
fn assert_close(want: &[Vec<f32>], got: &[Vec<f32>]) {
    assert_eq!(want.len(), got.len());
    for (w, g) in want.iter().zip(got) {
        assert_eq!(w.len(), g.len());
        for (k, (&a, &b)) in w.iter().zip(g).enumerate() {
            let ok = (a.is_nan() && b.is_nan())
                || a == b
                || (a - b).abs() <= 1e-5 * a.abs().max(b.abs()) + 1e-6;
            assert!(ok, "element {k}: eager {a} vs compiled {b}");
        }
    }
}

/// The `fused kernel` lines of a compiled graph's text.
fn kernel_lines(cg: &CompiledGraph) -> Vec<String> {
    cg.to_text(None)
        .lines()
        .filter(|l| l.starts_with("fused kernel"))
        .map(str::to_string)
        .collect()
}

#[test]
fn row_dot_products_fuse_into_one_reduction_kernel() {
    // 37 x 131: odd sizes exercise the unrolled, single-vector and scalar-tail loops.
    let mut g = Graph::new();
    let x = input(&mut g, &[37, 131]);
    let y = input(&mut g, &[37, 131]);
    let p = bin(&mut g, BinaryOp::Mul, x, y);
    let s = sum(&mut g, p, &[1], false);
    g.outputs.push(s);
    let cg = compiled(&g);
    assert_eq!(
        kernel_lines(&cg),
        ["fused kernel 0: [%2, %3] reads (%0, %1)"]
    );
    let inputs = [data(&[37, 131], 1), data(&[37, 131], 2)];
    assert_close(&eager(&g, &inputs), &run(&cg, &inputs));
}

#[test]
fn softmax_max_exp_sum_fuse_with_a_broadcast_row_input() {
    // m = x.max(-1, keepdim); (x - m).exp().sum(-1, keepdim): the max fuses with its
    // producer (x * 3), the sum with the broadcast subtraction and the exp.
    let mut g = Graph::new();
    let x = input(&mut g, &[9, 70]);
    let x3 = scalar(&mut g, BinaryOp::Mul, x, 3.0);
    let m = add(
        &mut g,
        IrOp::ExtremeDim {
            dim: 1,
            keepdim: true,
            is_min: false,
        },
        &[x3],
    );
    let d = bin(&mut g, BinaryOp::Sub, x, m);
    let e = add(&mut g, IrOp::Unary(UnaryOp::Exp), &[d]);
    let s = sum(&mut g, e, &[1], true);
    g.outputs.extend([m, s]);
    let cg = compiled(&g);
    assert_eq!(cg.fused.len(), 2, "{}", cg.to_text(None));
    let inputs = [data(&[9, 70], 3)];
    assert_close(&eager(&g, &inputs), &run(&cg, &inputs));
}

#[test]
fn mean_of_squares_and_full_min_match_eager_small_and_split_across_threads() {
    // 300 x 300 = 90000 elements is above the parallel threshold: per-thread partials.
    for shape in [[5usize, 7], [300, 300]] {
        let mut g = Graph::new();
        let x = input(&mut g, &shape);
        let sq = bin(&mut g, BinaryOp::Mul, x, x);
        let mean = add(
            &mut g,
            IrOp::Mean {
                dims: vec![0, 1],
                keepdim: false,
            },
            &[sq],
        );
        let t = add(&mut g, IrOp::Unary(UnaryOp::Tanh), &[x]);
        let mn = add(&mut g, IrOp::ExtremeAll { is_min: true }, &[t]);
        g.outputs.extend([mean, mn]);
        let cg = compiled(&g);
        assert_eq!(cg.fused.len(), 2, "{}", cg.to_text(None));
        let inputs = [data(&shape, 4)];
        let want = eager(&g, &inputs);
        assert_close(&want, &run(&cg, &inputs));
        // Hand check on the data's own values: mean(x^2) from f64.
        let xs = inputs[0].to_f32_vec().expect("f32");
        let m64 = xs.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>() / xs.len() as f64;
        assert!((f64::from(want[0][0]) - m64).abs() <= 1e-5 * m64);
    }
}

#[test]
fn fused_sums_accumulate_in_f64_like_eager() {
    // 1000*i + 0.125 and -1000*i: partial sums reach 1.25e8 (an f32 ulp of 8), so an
    // f32 accumulator loses the eighths; the exact sum of x * 0.5 is 500 * 0.0625.
    let n = 500;
    let mut v: Vec<f32> = (0..n).map(|i| 1000.0 * i as f32 + 0.125).collect();
    v.extend((0..n).map(|i| -1000.0 * i as f32));
    let mut g = Graph::new();
    let x = input(&mut g, &[2 * n]);
    let h = scalar(&mut g, BinaryOp::Mul, x, 0.5);
    let s = sum(&mut g, h, &[0], false);
    g.outputs.push(s);
    let cg = compiled(&g);
    assert_eq!(cg.fused.len(), 1);
    let inputs = [from_f32(v, &[2 * n]).expect("x")];
    assert_eq!(run(&cg, &inputs), [vec![31.25f32]]);
    assert_eq!(eager(&g, &inputs), [vec![31.25f32]]);
}

#[test]
fn max_and_min_propagate_nan_like_eager() {
    let mut v: Vec<f32> = (0..40).map(|i| i as f32 - 20.0).collect();
    v[13] = f32::NAN;
    let mut g = Graph::new();
    let x = input(&mut g, &[4, 10]);
    let a = add(&mut g, IrOp::Unary(UnaryOp::Abs), &[x]);
    let mx = add(
        &mut g,
        IrOp::ExtremeDim {
            dim: 1,
            keepdim: false,
            is_min: false,
        },
        &[a],
    );
    g.outputs.push(mx);
    let cg = compiled(&g);
    assert_eq!(cg.fused.len(), 1);
    let inputs = [from_f32(v, &[4, 10]).expect("x")];
    let got = run(&cg, &inputs);
    assert!(got[0][1].is_nan());
    assert_eq!([got[0][0], got[0][2], got[0][3]], [20.0, 9.0, 19.0]);
    assert_close(&eager(&g, &inputs), &got);
}

#[test]
fn steady_state_calls_allocate_no_fused_output() {
    // tanh(2x), an intermediate read twice, and the graph output (tanh(2x) + 1) *
    // tanh(2x): one fused kernel since multi-output fusion (both reads are inside the
    // consumer's group, so tanh(2x) is computed once and never stored). `y = f(x)` in a
    // loop keeps the previous result alive during a call.
    let mut g = Graph::new();
    let x = input(&mut g, &[64, 300]);
    let a = scalar(&mut g, BinaryOp::Mul, x, 2.0);
    let t = add(&mut g, IrOp::Unary(UnaryOp::Tanh), &[a]);
    let b = scalar(&mut g, BinaryOp::Add, t, 1.0);
    let y = bin(&mut g, BinaryOp::Mul, b, t);
    g.outputs.push(y);
    let cg = compiled(&g);
    assert_eq!(cg.fused.len(), 1, "{}", cg.to_text(None));
    assert_eq!(cg.fused[0].outputs.len(), 1, "{}", cg.to_text(None));
    let x1 = data(&[64, 300], 5);
    let want = eager(&g, std::slice::from_ref(&x1));
    let mut held = cg
        .run(std::slice::from_ref(&x1), &exec::eval, &mut String::new())
        .expect("run");
    for _ in 0..3 {
        held = cg
            .run(std::slice::from_ref(&x1), &exec::eval, &mut String::new())
            .expect("run");
    }
    let warm = cg.fresh_outputs();
    for _ in 0..10 {
        held = cg
            .run(std::slice::from_ref(&x1), &exec::eval, &mut String::new())
            .expect("run");
    }
    assert_eq!(
        cg.fresh_outputs(),
        warm,
        "steady-state calls allocated outputs"
    );
    assert!(warm <= 4, "{warm} outputs allocated while warming up");
    // A result the caller keeps is never overwritten by later calls.
    let kept = held.clone();
    let x2 = data(&[64, 300], 6);
    for _ in 0..3 {
        let other = cg
            .run(std::slice::from_ref(&x2), &exec::eval, &mut String::new())
            .expect("run");
        assert_ne!(other[0].to_f32_vec().expect("f32"), want[0]);
    }
    assert_close(&want, &[kept[0].to_f32_vec().expect("f32")]);
}

#[test]
fn column_sums_are_bit_identical_to_eager_and_to_an_f64_row_order_sum() {
    // sum(x, dims=[0]) of a contiguous 2-D f32 (a Linear bias gradient) runs as a
    // column reduction in the executor; eager gathers the columns first.
    for keepdim in [true, false] {
        let mut g = Graph::new();
        let x = input(&mut g, &[67, 45]);
        let s = sum(&mut g, x, &[0], keepdim);
        g.outputs.push(s);
        let xt = data(&[67, 45], 3);
        let got = run(&compiled(&g), std::slice::from_ref(&xt));
        let want = xt.sum(&[0], keepdim).expect("eager sum");
        let want = want.to_f32_vec().expect("f32");
        let vals = xt.to_f32_vec().expect("f32");
        let by_hand: Vec<f32> = (0..45)
            .map(|j| (0..67).map(|i| f64::from(vals[i * 45 + j])).sum::<f64>() as f32)
            .collect();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got[0]), bits(&want));
        assert_eq!(bits(&got[0]), bits(&by_hand));
    }
}
