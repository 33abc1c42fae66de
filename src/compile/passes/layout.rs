//! Layout rewrites around matmul: `contiguous(permute(matmul(a, b), [1, 0]))` (a
//! transposed product made contiguous, as backward does for every `Linear` weight's
//! `.grad`) becomes `matmul(b^T, a^T)`: gemm reads its operands through strides and
//! writes the transposed product directly, so the strided copy of the product is gone.
//! Each element is the same sum of the same products.

use super::rebuild::Rebuild;
use crate::compile::ir::{Graph, IrOp, Node, NodeId};
use crate::error::Result;
use crate::tensor::dtype::DType;
use crate::tensor::shape::Dims;

/// Rewrites every contiguous transposed 2-D f32 matmul (the old product is left to
/// dead-code elimination).
pub fn layout(g: Graph) -> Result<Graph> {
    let mut rb = Rebuild::new(&g);
    for node in &g.nodes {
        let n = rb.remapped(node)?;
        let id = match transposed_product(&mut rb, &n)? {
            Some(id) => id,
            None => rb.push(n),
        };
        rb.map_to(id);
    }
    rb.finish(&g)
}

fn is_transpose(n: &Node) -> bool {
    matches!(&n.op, IrOp::Permute { perm } if perm[..] == [1, 0])
}

/// `x^T` as a node: the arg of `x` when `x` is itself a transpose, else a new permute.
fn transposed(rb: &mut Rebuild, x: NodeId, span: Option<crate::source::Span>) -> Result<NodeId> {
    let xn = rb.node(x)?.clone();
    if is_transpose(&xn) {
        if let Some(&inner) = xn.args.first() {
            return Ok(inner);
        }
    }
    let shape: Dims = xn.shape.iter().rev().copied().collect();
    Ok(rb.push(Node {
        op: IrOp::Permute { perm: vec![1, 0] },
        args: vec![x],
        dtype: xn.dtype,
        shape,
        span,
    }))
}

/// `matmul(b^T, a^T)` when `n` is `contiguous(permute(matmul(a, b), [1, 0]))` of 2-D
/// f32 operands.
fn transposed_product(rb: &mut Rebuild, n: &Node) -> Result<Option<NodeId>> {
    let (IrOp::Contiguous, [p]) = (&n.op, n.args.as_slice()) else {
        return Ok(None);
    };
    let pn = rb.node(*p)?;
    let Some(&m) = pn.args.first().filter(|_| is_transpose(pn)) else {
        return Ok(None);
    };
    let mn = rb.node(m)?;
    let (IrOp::Matmul, &[a, b]) = (&mn.op, mn.args.as_slice()) else {
        return Ok(None);
    };
    let f32_2d = |id: NodeId| {
        rb.node(id)
            .is_ok_and(|x| x.dtype == DType::F32 && x.shape.len() == 2)
    };
    if !(f32_2d(a) && f32_2d(b) && mn.dtype == DType::F32 && n.shape.len() == 2) {
        return Ok(None);
    }
    let bt = transposed(rb, b, n.span)?;
    let at = transposed(rb, a, n.span)?;
    Ok(Some(rb.push(Node {
        op: IrOp::Matmul,
        args: vec![bt, at],
        ..n.clone()
    })))
}
