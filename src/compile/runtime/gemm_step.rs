//! Matmuls with a fused bias epilogue: `add(matmul(a, b), bias)` of 2-D f32 operands
//! and a 1-D bias (every `Linear` layer's forward) runs as one gemm that accumulates
//! the product onto rows initialised to the bias, into a reused output buffer. The
//! product node then has no step of its own. Any other layout at run time falls back
//! to the executor's matmul and add.

use crate::compile::ir::{Graph, IrOp, Node, NodeId};
use crate::compile::runtime::out_pool::OutputPool;
use crate::error::Result;
use crate::ops::{self, BinaryOp};
use crate::tensor::kernels::matmul::matmul_bias_into;
use crate::tensor::{linalg, Buffer, DType, Tensor};

/// One matmul + bias: node `root` (the add) computed from `inputs` = [a, b, bias].
pub struct GemmStep {
    pub product: NodeId,
    pub inputs: Vec<NodeId>,
    /// The output buffers reused across runs.
    pub pool: OutputPool,
}

fn is_2d_f32(g: &Graph, id: NodeId) -> bool {
    g.node(id)
        .is_some_and(|n| n.dtype == DType::F32 && n.shape.len() == 2)
}

/// The epilogue step for node `n` (`add(product, bias)` either order) when `product`
/// is a 2-D f32 matmul used only there and `bias` a 1-D f32 of its column count.
fn candidate(g: &Graph, uses: &[usize], n: &Node) -> Option<GemmStep> {
    let (IrOp::Binary(BinaryOp::Add), &[p, q]) = (&n.op, n.args.as_slice()) else {
        return None;
    };
    [(p, q), (q, p)].into_iter().find_map(|(mm, bias)| {
        let m = g.node(mm)?;
        let bn = g.node(bias)?;
        let (IrOp::Matmul, &[a, b]) = (&m.op, m.args.as_slice()) else {
            return None;
        };
        let ok = uses.get(mm.index()) == Some(&1)
            && is_2d_f32(g, a)
            && is_2d_f32(g, b)
            && m.dtype == DType::F32
            && n.dtype == DType::F32
            && n.shape == m.shape
            && bn.dtype == DType::F32
            && bn.shape.len() == 1
            && bn.shape.first() == m.shape.get(1);
        ok.then(|| GemmStep {
            product: mm,
            inputs: vec![a, b, bias],
            pool: OutputPool::default(),
        })
    })
}

/// The epilogue steps of `g`, as (add node index, step); `free(i)`: node `i` is
/// still run by the executor (not in a fused kernel or control step).
pub fn find(g: &Graph, free: impl Fn(usize) -> bool) -> Vec<(usize, GemmStep)> {
    let uses = g.use_counts();
    g.nodes
        .iter()
        .enumerate()
        .filter(|(i, _)| free(*i))
        .filter_map(|(i, n)| candidate(g, &uses, n).map(|s| (i, s)))
        .filter(|(_, s)| free(s.product.index()))
        .collect()
}

/// Per node, whether it is an `add(matmul, bias)` a gemm step can compute.
pub fn epilogues(g: &Graph) -> Vec<bool> {
    let uses = g.use_counts();
    g.nodes
        .iter()
        .map(|n| candidate(g, &uses, n).is_some())
        .collect()
}

/// Runs the step on its gathered `[a, b, bias]`.
pub fn run(step: &GemmStep, args: &[Tensor]) -> Result<Tensor> {
    let [a, b, bias] = args else {
        return Err(crate::compile::internal("a gemm step needs three inputs"));
    };
    let (m, n) = (a.shape().first(), b.shape().get(1));
    if let (Some(&m), Some(&n), 2, 2) = (m, n, a.ndim(), b.ndim()) {
        if m.checked_mul(n).is_none() {
            return ops::binary(BinaryOp::Add, &linalg::matmul(a, b)?, bias);
        }
        let out = step.pool.take(&[m, n], m * n)?;
        let done = {
            let mut buf = out.storage().borrow_mut();
            match &mut *buf {
                Buffer::F32(dst) => matmul_bias_into(dst, a, b, bias)?,
                _ => false,
            }
        };
        if done {
            step.pool.remember(std::slice::from_ref(&out));
            return Ok(out);
        }
    }
    ops::binary(BinaryOp::Add, &linalg::matmul(a, b)?, bias)
}
