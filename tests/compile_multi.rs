//! Multi-output fusion through the public graph API (`passes::optimize` +
//! `lower::compile_graph`): a producer group joins the later group of its loop shape
//! that reads it and its values read elsewhere become extra kernel outputs (Adam's m,
//! v and p updates of one parameter: one kernel writing three buffers); a comparison
//! read only by a `where` fuses as the select's mask. The truth is the executor's
//! eager run (the same tensor-library calls eager code makes, one op at a time): the
//! fused kernels compute the same f32 operations, so the results are bit-identical.
//! Values shared between nodes (runtime/side.rs: max_pool2d's argmax, a training
//! batch_norm's statistics and gradients) equal the executor's recomputed ones, bit
//! for bit.

mod ir_builder;

use ir_builder::{add, bin, input, scalar};
use kiln::compile::ir::grad_kernel::{GradKernel, NormPart};
use kiln::compile::ir::{Graph, IrOp};
use kiln::compile::passes::optimize;
use kiln::compile::runtime::exec;
use kiln::compile::runtime::lower::{compile_graph, CompiledGraph};
use kiln::ops::{BinaryOp, UnaryOp};
use kiln::tensor::creation::from_f32;
use kiln::tensor::kernels::conv::PoolParams;
use kiln::tensor::Tensor;

/// Deterministic values in [lo, lo + 8) (a multiplicative hash of the index).
fn data(shape: &[usize], seed: u32, lo: f32) -> Tensor {
    let n: usize = shape.iter().product();
    let v = (0..n)
        .map(|i| ((i as u32).wrapping_mul(2_654_435_761) ^ seed) % 1000)
        .map(|h| h as f32 / 125.0 + lo)
        .collect();
    from_f32(v, shape).expect("data")
}

/// Compiles `g` and runs it and the executor on `inputs`: (compiled graph, compiled
/// outputs, executor outputs).
fn both(g: Graph, inputs: &[Tensor]) -> (CompiledGraph, Vec<Tensor>, Vec<Tensor>) {
    let want = exec::run(&g, inputs, &exec::last_uses(&g)).expect("executor");
    let cg = compile_graph(optimize(g).expect("optimize")).expect("compile");
    let got = cg
        .run(inputs, &exec::eval, &mut String::new())
        .expect("run compiled");
    (cg, got, want)
}

fn bits(ts: &[Tensor]) -> Vec<Vec<u32>> {
    ts.iter()
        .map(|t| {
            let v = t.to_f32_vec().expect("f32");
            v.iter().map(|x| x.to_bits()).collect()
        })
        .collect()
}

/// Adam's update of one parameter as the optimizer writes it (stdlib/optim.dl):
/// m' = m + (g - m) * (1 - b1); v' = v * b2 + g * (1 - b2) * g;
/// p' = p - m' / (sqrt(v') / bc2 + eps) * step; outputs m', v', p' (the effects).
fn adam_graph(shape: &[usize]) -> Graph {
    let mut g = Graph::new();
    let (gr, m, v, p) = (
        input(&mut g, shape),
        input(&mut g, shape),
        input(&mut g, shape),
        input(&mut g, shape),
    );
    let bc2 = input(&mut g, &[]);
    let step = input(&mut g, &[]);
    let d = bin(&mut g, BinaryOp::Sub, gr, m);
    let d = scalar(&mut g, BinaryOp::Mul, d, 0.1);
    let m2 = bin(&mut g, BinaryOp::Add, m, d);
    let vb = scalar(&mut g, BinaryOp::Mul, v, 0.999);
    let gg = scalar(&mut g, BinaryOp::Mul, gr, 0.001);
    let gg = bin(&mut g, BinaryOp::Mul, gg, gr);
    let v2 = bin(&mut g, BinaryOp::Add, vb, gg);
    let s = add(&mut g, IrOp::Unary(UnaryOp::Sqrt), &[v2]);
    let s = bin(&mut g, BinaryOp::Div, s, bc2);
    let den = scalar(&mut g, BinaryOp::Add, s, 1e-8);
    let u = bin(&mut g, BinaryOp::Div, m2, den);
    let u = bin(&mut g, BinaryOp::Mul, u, step);
    let p2 = bin(&mut g, BinaryOp::Sub, p, u);
    g.outputs.extend([m2, v2, p2]);
    g
}

fn adam_inputs(shape: &[usize]) -> Vec<Tensor> {
    vec![
        data(shape, 1, -4.0),
        data(shape, 2, -4.0),
        data(shape, 3, 0.0),
        data(shape, 4, -4.0),
        from_f32(vec![0.3], &[]).expect("bc2"),
        from_f32(vec![1e-3], &[]).expect("step"),
    ]
}

#[test]
fn adam_update_is_one_kernel_writing_m_v_and_p_bit_identical_to_eager() {
    // 37 x 19: vector body and scalar tails; 300 x 300 also runs split across threads.
    for shape in [[37usize, 19], [300, 300]] {
        let (cg, got, want) = both(adam_graph(&shape), &adam_inputs(&shape));
        assert_eq!(cg.fused.len(), 1, "{}", cg.to_text(None));
        assert_eq!(cg.fused[0].outputs.len(), 3, "{}", cg.to_text(None));
        assert!(cg.to_text(None).contains(" writes ("));
        assert_eq!(bits(&got), bits(&want), "multi-output kernel differs");
    }
}

#[test]
fn multi_output_buffers_are_reused_once_the_caller_drops_them() {
    let shape = [40usize, 24];
    let g = adam_graph(&shape);
    let cg = compile_graph(optimize(g).expect("optimize")).expect("compile");
    let inputs = adam_inputs(&shape);
    let run = || {
        cg.run(&inputs, &exec::eval, &mut String::new())
            .expect("run")
    };
    let first = bits(&run());
    let warm = cg.fresh_outputs();
    for _ in 0..5 {
        assert_eq!(bits(&run()), first, "a reused buffer changed the result");
    }
    assert_eq!(cg.fresh_outputs(), warm, "steady-state calls allocated");
    // Results the caller keeps are never overwritten by a later call.
    let kept = run();
    let again = run();
    assert!(kept
        .iter()
        .zip(&again)
        .all(|(a, b)| !std::rc::Rc::ptr_eq(a.storage(), b.storage())));
    assert_eq!(bits(&kept), first);
}

#[test]
fn relu_backward_where_fuses_with_its_mask() {
    // where(x > 0, g, 0) * 0.5: the comparison is the select's mask in one kernel.
    let shape = [33usize, 17];
    let mut g = Graph::new();
    let x = input(&mut g, &shape);
    let gr = input(&mut g, &shape);
    let zero = input(&mut g, &[]);
    let m = scalar(&mut g, BinaryOp::Gt, x, 0.0);
    let w = add(&mut g, IrOp::Where, &[m, gr, zero]);
    let y = scalar(&mut g, BinaryOp::Mul, w, 0.5);
    g.outputs.push(y);
    let inputs = [
        data(&shape, 5, -4.0),
        data(&shape, 6, -4.0),
        from_f32(vec![0.0], &[]).expect("zero"),
    ];
    let (cg, got, want) = both(g, &inputs);
    assert_eq!(cg.fused.len(), 1, "{}", cg.to_text(None));
    assert_eq!(cg.fused[0].inputs.len(), 3, "{}", cg.to_text(None));
    assert_eq!(bits(&got), bits(&want));
}

#[test]
fn a_mask_compared_with_an_inexact_scalar_matches_eager_at_the_boundary() {
    // 0.1 is not a float32: a kernel constant 0.1f32 could decide `x > 0.1` differently
    // from eager for x = 0.1f32, so such a comparison stays with the executor.
    let shape = [8usize];
    let mut g = Graph::new();
    let x = input(&mut g, &shape);
    let zero = input(&mut g, &[]);
    let m = scalar(&mut g, BinaryOp::Gt, x, 0.1);
    let w = add(&mut g, IrOp::Where, &[m, x, zero]);
    let y = scalar(&mut g, BinaryOp::Mul, w, 2.0);
    g.outputs.push(y);
    let at = from_f32(vec![0.1f32, 0.2, -1.0, 0.1, 0.0, 3.0, 0.1, 0.05], &shape).expect("x");
    let inputs = [at, from_f32(vec![0.0], &[]).expect("zero")];
    let (cg, got, want) = both(g, &inputs);
    assert!(cg.fused.is_empty(), "{}", cg.to_text(None));
    assert_eq!(bits(&got), bits(&want));
}

#[test]
fn a_reader_between_producer_and_consumer_keeps_them_apart() {
    // p = exp(x) + 1 is read by r = sum(p, dim 0) (not fusable: not a trailing dim),
    // and the consumer c = p * y + r reads r: merging p into c would need r before p.
    let mut g = Graph::new();
    let x = input(&mut g, &[6, 5]);
    let y = input(&mut g, &[6, 5]);
    let e = add(&mut g, IrOp::Unary(UnaryOp::Exp), &[x]);
    let p = scalar(&mut g, BinaryOp::Add, e, 1.0);
    let r = add(
        &mut g,
        IrOp::Sum {
            dims: vec![0],
            keepdim: true,
        },
        &[p],
    );
    let c = bin(&mut g, BinaryOp::Mul, p, y);
    let c = bin(&mut g, BinaryOp::Add, c, r);
    let c = add(&mut g, IrOp::Unary(UnaryOp::Tanh), &[c]);
    g.outputs.push(c);
    let inputs = [data(&[6, 5], 7, -2.0), data(&[6, 5], 8, -4.0)];
    let (cg, got, want) = both(g, &inputs);
    assert_eq!(cg.fused.len(), 2, "{}", cg.to_text(None));
    assert!(cg.fused.iter().all(|f| f.outputs.len() == 1));
    assert_eq!(bits(&got), bits(&want));
}

#[test]
fn a_value_read_twice_inside_one_group_is_computed_once_and_not_stored() {
    // t = x * 3 read twice by the same tree (t * t + t): one kernel, one output.
    let mut g = Graph::new();
    let x = input(&mut g, &[5, 9]);
    let t = scalar(&mut g, BinaryOp::Mul, x, 3.0);
    let tt = bin(&mut g, BinaryOp::Mul, t, t);
    let y = bin(&mut g, BinaryOp::Add, tt, t);
    g.outputs.push(y);
    let inputs = [data(&[5, 9], 9, -4.0)];
    let (cg, got, want) = both(g, &inputs);
    assert_eq!(cg.fused.len(), 1, "{}", cg.to_text(None));
    assert_eq!(cg.fused[0].outputs.len(), 1);
    assert_eq!(bits(&got), bits(&want));
}

/// A max_pool2d and its backward, a training batch_norm with its running update and
/// both gradient parts: six nodes take part in the side table (the backward reuses the
/// forward's argmax, the others its statistics, and the two gradient parts come from
/// one kernel), with the executor's results.
#[test]
fn side_values_equal_recomputed_ones() {
    let mut g = Graph::new();
    let x = input(&mut g, &[2, 3, 7, 7]);
    let gp = input(&mut g, &[2, 3, 4, 4]);
    let w = input(&mut g, &[3]);
    let gy = input(&mut g, &[2, 3, 7, 7]);
    let old = input(&mut g, &[3]);
    let params = PoolParams {
        kernel: (3, 3),
        stride: (2, 2),
        padding: (1, 1),
    };
    let pool = add(&mut g, IrOp::MaxPool2d { params }, &[x]);
    let bn = IrOp::BatchNorm {
        training: true,
        eps: 1e-5,
        weight: true,
        bias: false,
    };
    let y = add(&mut g, bn, &[x, w]);
    let running = IrOp::BatchNormRunning {
        momentum: 0.3,
        var: true,
    };
    let moved = add(&mut g, running, &[old, x]);
    let kernel = |part| {
        IrOp::GradKernel(GradKernel::BatchNorm {
            part,
            training: true,
            eps: 1e-5,
            weight: true,
        })
    };
    let dx = add(&mut g, kernel(NormPart::Input), &[x, w, gy]);
    let dp = add(&mut g, kernel(NormPart::Params), &[x, w, gy]);
    let back = add(
        &mut g,
        IrOp::GradKernel(GradKernel::MaxPool2d { params }),
        &[x, gp],
    );
    g.outputs = vec![pool, y, moved, dx, dp, back];
    let inputs = [
        data(&[2, 3, 7, 7], 1, -4.0),
        data(&[2, 3, 4, 4], 2, -4.0),
        data(&[3], 3, 0.5),
        data(&[2, 3, 7, 7], 4, -4.0),
        data(&[3], 5, 0.0),
    ];
    let (cg, got, want) = both(g, &inputs);
    assert_eq!(cg.side_nodes(), 6);
    assert_eq!(got.len(), want.len());
    for (a, b) in got.iter().zip(&want) {
        assert_eq!(a.shape(), b.shape());
        let (a, b) = (a.to_vec::<f32>().expect("a"), b.to_vec::<f32>().expect("b"));
        assert!(a.iter().zip(&b).all(|(p, q)| p.to_bits() == q.to_bits()));
    }
}
