//! Vector-matrix products `v [k] @ w [k, n]` of f32 operands (an RNN step's
//! `x[t] @ Wxh` and `h @ Whh`), and row-matrix products `r [1, k] @ w [k, n]` (eager's
//! backward of `v @ W` multiplies the gradient as a row by `W^T` in every iteration of
//! a reverse loop), as a planned step with the values eager's matmul gives, bit for
//! bit: contiguous operands through the direct kernel (vecmat_kernel.rs, gemm's vector
//! path's rounding), others through the same gemm call eager makes. Either way into a
//! reused output buffer and without the general matmul's unsqueezed views and fresh
//! output on every call (a loop body runs it once per iteration). Other operands at run
//! time fall back to the executor's matmul.

use crate::compile::ir::{Graph, IrOp, Node, NodeId};
use crate::compile::runtime::out_pool::OutputPool;
use crate::compile::runtime::vecmat_kernel::vecmat_f32;
use crate::error::Result;
use crate::tensor::kernels::matmul::{gemm_f32, Mat};
use crate::tensor::{linalg, Buffer, DType, Tensor};

/// One planned vector-matrix product (the node's args are `[v, w]`).
pub struct VecmatStep {
    /// The output buffers reused across runs.
    pub pool: OutputPool,
}

/// Whether `n` is a matmul of a 1-D (or `[1, k]`) and a 2-D f32 operand (capture-time
/// ranks, which symbolic sizes keep).
fn is_vecmat(g: &Graph, n: &Node) -> bool {
    let (IrOp::Matmul, &[a, b]) = (&n.op, n.args.as_slice()) else {
        return false;
    };
    let f32_node = |id: NodeId| g.node(id).filter(|x| x.dtype == DType::F32);
    let lhs = f32_node(a).is_some_and(|x| matches!(x.shape.as_slice(), [_] | [1, _]));
    let rhs = f32_node(b).is_some_and(|x| x.shape.len() == 2);
    n.dtype == DType::F32 && lhs && rhs
}

/// The vector-matrix steps of `g`, as node indices; `free(i)`: node `i` is still run by
/// the executor (not in a fused kernel, gemm or control step).
pub fn find(g: &Graph, free: impl Fn(usize) -> bool) -> Vec<(usize, VecmatStep)> {
    g.nodes
        .iter()
        .enumerate()
        .filter(|(i, n)| free(*i) && is_vecmat(g, n))
        .map(|(i, _)| {
            let step = VecmatStep {
                pool: OutputPool::default(),
            };
            (i, step)
        })
        .collect()
}

/// Runs the step on its gathered `[v, w]`.
pub fn run(step: &VecmatStep, args: &[Tensor]) -> Result<Tensor> {
    let [v, w] = args else {
        return Err(crate::compile::internal(
            "a vector-matrix step needs two inputs",
        ));
    };
    match try_run(step, v, w)? {
        Some(t) => Ok(t),
        None => linalg::matmul(v, w),
    }
}

/// The product into a reused buffer, or `None` when the operands are not a vector (or
/// one row) and a matrix of f32 with matching inner sizes.
fn try_run(step: &VecmatStep, v: &Tensor, w: &Tensor) -> Result<Option<Tensor>> {
    let (k, vs, row) = match (v.shape(), v.strides()) {
        (&[k], &[vs]) => (k, vs, false),
        (&[1, k], &[_, vs]) => (k, vs, true),
        _ => return Ok(None),
    };
    let (&[kw, n], &[rs, cs]) = (w.shape(), w.strides()) else {
        return Ok(None);
    };
    if v.dtype() != DType::F32 || w.dtype() != DType::F32 || k != kw {
        return Ok(None);
    }
    let out = if row {
        step.pool.take(&[1, n], n)?
    } else {
        step.pool.take(&[n], n)?
    };
    let mut direct = false;
    {
        // The output's storage is unique (`OutputPool::take`), so it is neither operand's.
        let (bv, bw) = (v.storage().borrow(), w.storage().borrow());
        let mut bo = out.storage().borrow_mut();
        let (Buffer::F32(dv), Buffer::F32(dw), Buffer::F32(dst)) = (&*bv, &*bw, &mut *bo) else {
            return Ok(None);
        };
        // Both contiguous: the direct kernel, the same bits as gemm's vector path (which
        // gemm takes from 3 terms and 2 columns on; fewer go other ways).
        if let (1, 1, true, true) = (vs, cs, rs == n, k >= 3 && n >= 2) {
            let src = dv.get(v.offset()..v.offset().saturating_add(k));
            let mat = dw.get(w.offset()..w.offset().saturating_add(k.saturating_mul(n)));
            if let (Some(src), Some(mat), Some(d)) = (src, mat, dst.get_mut(..n)) {
                direct = vecmat_f32(src, mat, d);
            }
        }
        // As eager's matmul: v as the row [1, k] (its unsqueezed view's strides).
        let lhs = Mat {
            data: dv,
            offset: v.offset(),
            rs: k.saturating_mul(vs),
            cs: vs,
        };
        let rhs = Mat {
            data: dw,
            offset: w.offset(),
            rs,
            cs,
        };
        if !direct {
            gemm_f32(1, n, k, dst, lhs, rhs, false)?;
        }
    }
    step.pool.remember(std::slice::from_ref(&out));
    Ok(Some(out))
}
