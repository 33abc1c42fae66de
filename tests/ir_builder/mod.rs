//! IR graph builders shared by the integration tests that build kernels by hand.
#![allow(dead_code)] // each test binary uses its own subset

use kiln::compile::ir::{Graph, InputKind, IrOp, NodeId, PathStep};
use kiln::ops::BinaryOp;
use kiln::tensor::dtype::{DType, Scalar};

/// A float32 argument input of `shape`.
pub fn input(g: &mut Graph, shape: &[usize]) -> NodeId {
    let k = g.inputs.len();
    g.add_input(
        InputKind::Arg(vec![PathStep::Index(k)]),
        DType::F32,
        shape.into(),
        None,
    )
}

/// Appends `op(args)` with its type derived by `infer`.
pub fn add(g: &mut Graph, op: IrOp, args: &[NodeId]) -> NodeId {
    g.push_derived(op, args, None)
        .expect("well-typed test graph")
}

/// `a op b`.
pub fn bin(g: &mut Graph, op: BinaryOp, a: NodeId, b: NodeId) -> NodeId {
    add(g, IrOp::Binary(op), &[a, b])
}

/// `x op s` with a float scalar.
pub fn scalar(g: &mut Graph, op: BinaryOp, x: NodeId, s: f64) -> NodeId {
    let op = IrOp::BinaryScalar {
        op,
        scalar: Scalar::Float(s),
        reverse: false,
    };
    add(g, op, &[x])
}
