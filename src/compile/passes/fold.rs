//! Constant folding: an elementwise node whose args are all constants is evaluated
//! once, at compile time, with the same `ops` function eager code and the executor call
//! (so folding gives exactly what running would), and becomes a constant. Results above
//! [`FOLD_LIMIT`] elements, and evaluation errors, are left to run time.

use super::rebuild::Rebuild;
use crate::compile::ir::{Graph, IrOp, Node};
use crate::error::Result;
use crate::ops;
use crate::tensor::Tensor;

/// The most elements a folded constant may have (bounds compile time and memory).
pub const FOLD_LIMIT: usize = 1 << 16;

/// The constant tensor of `node`, if it is one.
fn constant(node: &Node) -> Option<&Tensor> {
    match &node.op {
        IrOp::Const(t) => Some(t),
        _ => None,
    }
}

/// Evaluates an elementwise `op` on `args` with the eager library; None for other ops.
pub(crate) fn eval_elementwise(op: &IrOp, args: &[Tensor]) -> Option<Result<Tensor>> {
    Some(match (op, args) {
        (IrOp::Unary(u), [x]) => ops::unary(*u, x),
        (IrOp::Binary(b), [x, y]) => ops::binary(*b, x, y),
        (
            IrOp::BinaryScalar {
                op,
                scalar,
                reverse,
            },
            [x],
        ) => ops::binary_scalar(*op, x, *scalar, *reverse),
        (IrOp::Clamp { min, max }, [x]) => ops::clamp(x, *min, *max),
        (IrOp::Where, [c, a, b]) => ops::where_(c, a, b),
        (IrOp::Cast(dt), [x]) => ops::to_dtype(x, *dt),
        _ => return None,
    })
}

/// Folds `node` on constant `args`; None when it cannot be folded (not elementwise,
/// too large, an evaluation error left for run time, a type mismatch).
fn evaluate(node: &Node, args: &[Tensor]) -> Option<Tensor> {
    let numel = node
        .shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))?;
    if numel > FOLD_LIMIT {
        return None;
    }
    let out = eval_elementwise(&node.op, args)?.ok()?;
    let same = out.dtype() == node.dtype && out.shape() == &node.shape[..];
    same.then(|| out.contiguous_copy().ok()).flatten()
}

/// Folds every node computed only from constants.
pub fn fold(g: Graph) -> Result<Graph> {
    let mut rb = Rebuild::new(&g);
    for node in &g.nodes {
        let n = rb.remapped(node)?;
        let args: Option<Vec<Tensor>> = if n.op.is_compute() && !n.args.is_empty() {
            n.args
                .iter()
                .map(|&a| rb.node(a).ok().and_then(constant).cloned())
                .collect()
        } else {
            None
        };
        let folded = args.and_then(|args| evaluate(&n, &args));
        let out = match folded {
            Some(t) => Node {
                op: IrOp::Const(t),
                args: Vec::new(),
                ..n
            },
            None => n,
        };
        let id = rb.push(out);
        rb.map_to(id);
    }
    rb.finish(&g)
}
