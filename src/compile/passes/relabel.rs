//! Chains of shape-only ops collapsed into one reshape. A reshape, a permute that keeps
//! the order of the dims larger than 1, and an expand that keeps the element count all
//! relabel the elements of their argument in order (on a contiguous value they are
//! views); a chain of them is one reshape of the chain's source to the last shape, and
//! none when that is the source's own shape. Eager's matrix-product rules on vectors
//! (`[64] -> [1, 64] -> permute -> [64, 1] -> [64]`) leave such chains in every
//! iteration of a reverse loop. The chain around a product, `reshape([1, k] @ w, [n])`
//! of a row `[1, k]` that is a vector `v [k]` relabelled, is `v @ w` (eager multiplies a
//! vector as that row: the same product).

use super::rebuild::Rebuild;
use crate::compile::ir::{IrOp, Node, NodeId};
use crate::error::Result;

/// Whether `n` (whose argument has shape `x`) only relabels its argument's elements in
/// their order.
fn is_relabel(n: &Node, x: &[usize]) -> bool {
    match &n.op {
        IrOp::Reshape { .. } => true,
        IrOp::Permute { perm } => {
            let moved: Vec<usize> = perm
                .iter()
                .copied()
                .filter(|&p| x.get(p).is_some_and(|&d| d != 1))
                .collect();
            perm.len() == x.len() && moved.windows(2).all(|w| w[0] < w[1])
        }
        IrOp::Expand { .. } => n.shape.iter().product::<usize>() == x.iter().product::<usize>(),
        _ => false,
    }
}

/// The replacement of node `n` (args in new ids) when it is a relabel: its chain's
/// source when the shapes agree, else one reshape of the source. `None` when `n` is no
/// relabel or already a reshape of a value that is none.
pub(super) fn rewrite(rb: &mut Rebuild, n: &Node) -> Result<Option<NodeId>> {
    let Some(&x) = n.args.first() else {
        return Ok(None);
    };
    if let Some(v) = vector_product(rb, n)? {
        return Ok(Some(v));
    }
    let xn = rb.node(x)?;
    if n.args.len() != 1 || xn.dtype != n.dtype || !is_relabel(n, &xn.shape) {
        return Ok(None);
    }
    // Relabels before `n` were already rewritten to reshapes of their chain's source.
    let src = match (&xn.op, xn.args.as_slice()) {
        (IrOp::Reshape { .. }, &[s]) => s,
        _ => x,
    };
    if rb.node(src)?.shape == n.shape {
        return Ok(Some(src));
    }
    if src == x && matches!(n.op, IrOp::Reshape { .. }) {
        return Ok(None);
    }
    Ok(Some(rb.push(Node {
        op: IrOp::Reshape {
            shape: n.shape.clone(),
        },
        args: vec![src],
        dtype: n.dtype,
        shape: n.shape.clone(),
        span: n.span,
    })))
}

/// `v @ w` for node `n` = `reshape(r @ w, [n])` where `r` is a vector `v [k]` reshaped
/// to `[1, k]` (args in new ids); None for any other node.
fn vector_product(rb: &mut Rebuild, n: &Node) -> Result<Option<NodeId>> {
    let (IrOp::Reshape { .. }, &[m], [cols]) = (&n.op, n.args.as_slice(), n.shape.as_slice())
    else {
        return Ok(None);
    };
    let mn = rb.node(m)?;
    let (IrOp::Matmul, &[r, w], &[1, mc]) = (&mn.op, mn.args.as_slice(), mn.shape.as_slice())
    else {
        return Ok(None);
    };
    let rn = rb.node(r)?;
    let (IrOp::Reshape { .. }, &[v], &[1, k]) = (&rn.op, rn.args.as_slice(), rn.shape.as_slice())
    else {
        return Ok(None);
    };
    let vn = rb.node(v)?;
    let same_type = vn.dtype == n.dtype && mn.dtype == n.dtype;
    if vn.shape.as_slice() != [k] || mc != *cols || !same_type {
        return Ok(None);
    }
    Ok(Some(rb.push(Node {
        op: IrOp::Matmul,
        args: vec![v, w],
        dtype: n.dtype,
        shape: n.shape.clone(),
        span: mn.span,
    })))
}
