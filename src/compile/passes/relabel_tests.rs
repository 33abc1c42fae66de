//! Tests of the relabel collapse: chains of reshape/permute/expand become one reshape
//! (or none), other permutes and expands stay, and the values are unchanged.

use super::optimize;
use super::tests::{add, input};
use crate::compile::ir::{Graph, IrOp, NodeId};
use crate::tensor::creation::from_f32;
use crate::tensor::Tensor;

fn reshape(g: &mut Graph, x: NodeId, shape: &[usize]) -> NodeId {
    add(
        g,
        IrOp::Reshape {
            shape: shape.into(),
        },
        &[x],
    )
}

fn permute(g: &mut Graph, x: NodeId, perm: &[usize]) -> NodeId {
    add(
        g,
        IrOp::Permute {
            perm: perm.to_vec(),
        },
        &[x],
    )
}

fn expand(g: &mut Graph, x: NodeId, shape: &[usize]) -> NodeId {
    add(
        g,
        IrOp::Expand {
            shape: shape.into(),
            sym: Box::default(),
        },
        &[x],
    )
}

/// Runs a graph of shaping ops node by node with the tensor library.
fn run(g: &Graph, inputs: &[Tensor]) -> Vec<Vec<f32>> {
    let i64s = |d: &[usize]| d.iter().map(|&v| v as i64).collect::<Vec<_>>();
    let mut vals: Vec<Tensor> = Vec::new();
    for n in &g.nodes {
        let x = || vals[n.args[0].index()].clone();
        let v = match &n.op {
            IrOp::Input { slot, .. } => inputs[*slot].clone(),
            IrOp::Reshape { shape } => x().reshape(&i64s(shape)).expect("reshape"),
            IrOp::Permute { perm } => x().permute(&i64s(perm)).expect("permute"),
            IrOp::Expand { shape, .. } => x().expand(&i64s(shape)).expect("expand"),
            op => panic!("unexpected op {op:?}"),
        };
        assert_eq!(v.shape(), &n.shape[..]);
        vals.push(v);
    }
    let out = |o: &NodeId| vals[o.index()].to_vec::<f32>().expect("f32");
    g.outputs.iter().map(out).collect()
}

fn count(g: &Graph, f: fn(&IrOp) -> bool) -> usize {
    g.nodes.iter().filter(|n| f(&n.op)).count()
}

#[test]
fn chains_of_views_collapse_into_one_reshape_or_none() {
    let mut g = Graph::new();
    let x = input(&mut g, &[4]);
    let m = input(&mut g, &[2, 3]);
    // [4] -> [1, 4] -> permute -> [4, 1] -> [4]: the identity.
    let a = reshape(&mut g, x, &[1, 4]);
    let b = permute(&mut g, a, &[1, 0]);
    let back = reshape(&mut g, b, &[4]);
    // [4] -> [1, 4] -> expand [1, 4] -> [4, 1] (by permute): one reshape to [4, 1].
    let e = expand(&mut g, a, &[1, 4]);
    let col = permute(&mut g, e, &[1, 0]);
    // A true transpose and a broadcasting expand are not relabels.
    let t = permute(&mut g, m, &[1, 0]);
    let r = reshape(&mut g, a, &[2, 2]);
    let wide = expand(&mut g, r, &[3, 2, 2]);
    g.outputs.extend([back, col, t, wide]);
    let inputs = [
        from_f32(vec![1.0, 2.0, 3.0, 4.0], &[4]).expect("x"),
        from_f32((0..6).map(|v| v as f32).collect(), &[2, 3]).expect("m"),
    ];
    let before = run(&g, &inputs);
    let out = optimize(g).expect("optimize");
    assert_eq!(run(&out, &inputs), before);
    assert_eq!(out.outputs[0], out.inputs[0], "{}", out.to_text(None));
    let is_reshape = |op: &IrOp| matches!(op, IrOp::Reshape { .. });
    let is_permute = |op: &IrOp| matches!(op, IrOp::Permute { .. });
    let is_expand = |op: &IrOp| matches!(op, IrOp::Expand { .. });
    // [4] -> [4, 1] and [4] -> [2, 2], each straight from x.
    assert_eq!(count(&out, is_reshape), 2, "{}", out.to_text(None));
    assert_eq!(count(&out, is_permute), 1, "{}", out.to_text(None));
    assert_eq!(count(&out, is_expand), 1, "{}", out.to_text(None));
    let col = &out.nodes[out.outputs[1].index()];
    assert!(is_reshape(&col.op) && col.args == [out.inputs[0]]);
}
