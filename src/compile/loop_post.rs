//! Invariant gradients summed after a captured loop's reverse loop instead of inside
//! it. Eager's rules make the gradient of an invariant `W` of `v @ W` (`v` 1-D) an outer
//! product `v_t^T g_t` per iteration, added to an accumulator; summed over the
//! iterations that is one matrix product `V^T @ G` of the rows stacked by the reverse
//! loop (scan outputs). A vector invariant's (a bias's) per-iteration gradient is
//! stacked and summed over the leading dim once. Other gradients stay accumulated in
//! the loop (carried `acc` values).

use super::ir::{Graph, IrOp, NodeId};
use crate::compile::internal;
use crate::error::Result;
use crate::tensor::{linalg, Tensor};

/// How one invariant's per-iteration gradient (a node of the recorded backward) is
/// summed after the loop.
#[derive(Clone, Copy)]
pub enum Kind {
    /// `x [k, 1] @ y [1, n]`: the rows `x` and `y` are stacked.
    Outer { x: NodeId, y: NodeId },
    /// A vector (or 0-d) gradient, stacked as it is.
    Sum { g: NodeId },
}

/// How the gradient `g` (node of `d`) of an invariant shaped `shape` can be summed
/// after the loop; None: it stays accumulated in the loop.
pub fn classify(d: &Graph, g: NodeId, shape: &[usize]) -> Option<Kind> {
    let node = d.node(g)?;
    if node.shape.as_slice() != shape || !node.dtype.is_float() {
        return None;
    }
    if let (IrOp::Matmul, &[x, y]) = (&node.op, node.args.as_slice()) {
        let (sx, sy) = (&d.node(x)?.shape, &d.node(y)?.shape);
        let outer = matches!((sx.as_slice(), sy.as_slice()), ([k, 1], [1, n]) if shape == [*k, *n].as_slice());
        return outer.then_some(Kind::Outer { x, y });
    }
    (shape.len() <= 1).then_some(Kind::Sum { g })
}

/// One invariant's gradient summed after the loop.
#[derive(Clone, Copy)]
pub struct Hoisted {
    /// Position among the loop's invariants.
    pub inv: usize,
    /// Position of its first stack among the reverse loop's scan outputs.
    pub scan: usize,
    /// Outer product (two stacks) or a plain sum (one stack).
    pub outer: bool,
}

/// The gradients of the hoisted invariants from the reverse loop's stacked scan
/// outputs `scans`: `(invariant position, gradient)`. Tensor-library calls, so a
/// capture recording the backward records them after the loop.
pub fn finish(hoisted: &[Hoisted], scans: &[Tensor]) -> Result<Vec<(usize, Tensor)>> {
    let stack = |k: usize| {
        scans
            .get(k)
            .ok_or_else(|| internal("a loop gradient's stack is missing"))
    };
    hoisted
        .iter()
        .map(|h| {
            let g = if h.outer {
                linalg::matmul(&stack(h.scan)?.transpose(0, 1)?, stack(h.scan + 1)?)?
            } else {
                stack(h.scan)?.sum(&[0], false)?
            };
            Ok((h.inv, g))
        })
        .collect()
}
