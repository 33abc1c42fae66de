//! Invariant gradients summed after a captured loop's reverse loop instead of inside
//! it. Eager's rules make the gradient of an invariant `W` of `v @ W` (`v` 1-D) an outer
//! product `v_t^T g_t` per iteration, added to an accumulator; summed over the
//! iterations that is one matrix product `V^T @ G` of the rows stacked by the reverse
//! loop (scan outputs). A vector invariant's (a bias's) per-iteration gradient is
//! stacked and summed over the leading dim once. Other gradients stay accumulated in
//! the loop (carried `acc` values). A row stacked for several gradients (the
//! pre-activation gradient of `x @ W + h @ U + b`) is stacked once, and rows that are
//! row `t` of a value the reverse loop already has whole (`x[t]`, the carried `h`'s
//! forward stack) are not stacked at all.

use crate::compile::internal;
use crate::compile::ir::{Graph, IrOp, NodeId};
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

/// Where the rows of one stack summed after the loop come from.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Rows {
    /// Scan output `k` of the reverse loop.
    Scan(usize),
    /// Arg `k` of the reverse loop, already the rows of every iteration in index
    /// order (a forward stack, or the invariant the forward loop runs over: `x` of
    /// `x[t]`), so the reverse loop does not stack them again.
    Arg(usize),
}

/// One invariant's gradient summed after the loop.
#[derive(Clone, Copy)]
pub struct Hoisted {
    /// Position among the loop's invariants.
    pub inv: usize,
    /// The stacked rows: `x` of an outer product (`y` then in `outer`), or the
    /// gradients to sum.
    pub rows: Rows,
    /// An outer product's `y` rows.
    pub outer: Option<Rows>,
}

/// The gradients of the hoisted invariants from the reverse loop's stacked scan
/// outputs `scans` and its args `args`: `(invariant position, gradient)`.
/// Tensor-library calls, so a capture recording the backward records them after the
/// loop.
pub fn finish(
    hoisted: &[Hoisted],
    scans: &[Tensor],
    args: &[Tensor],
) -> Result<Vec<(usize, Tensor)>> {
    let stack = |r: Rows| {
        match r {
            Rows::Scan(k) => scans.get(k),
            Rows::Arg(k) => args.get(k),
        }
        .ok_or_else(|| internal("a loop gradient's stack is missing"))
    };
    hoisted
        .iter()
        .map(|h| {
            let g = match h.outer {
                Some(y) => linalg::matmul(&stack(h.rows)?.transpose(0, 1)?, stack(y)?)?,
                None => stack(h.rows)?.sum(&[0], false)?,
            };
            Ok((h.inv, g))
        })
        .collect()
}
