//! The matmul rule's eager fast paths: only the gradients asked for, b's gradient
//! accumulated straight into the sweep's running sum, one product over all rows of a
//! batched `x @ W`.

use super::node::{BackwardOp, OpSaved};
use super::rules::{apply, reshape, sum_to, Grads};
use crate::error::Result;
use crate::ir::IrOp;
use crate::tensor::dtype::DType;
use crate::tensor::kernels::matmul as linalg_kernels;
use crate::tensor::linalg::matmul;
use crate::tensor::Tensor;

/// A matmul node's saved operands (None: another node).
fn matmul_operands(op: &BackwardOp) -> Result<Option<(Tensor, Tensor)>> {
    match op {
        BackwardOp::Op {
            op: IrOp::Matmul,
            saved:
                OpSaved {
                    a: Some(a),
                    b: Some(b),
                    ..
                },
        } => Ok(Some((a.get()?, b.get()?))),
        _ => Ok(None),
    }
}

/// The Matmul rule with b's gradient `a^T @ g` added straight into `gb_sum` (the
/// running sum of b's gradient, owned by the backward sweep) instead of a new tensor:
/// returns a's gradient (`None` inside when `need_a` is false: a needs none), or
/// `None` (nothing written) unless a, b and g are f32 matrices and `gb_sum` has b's
/// shape.
pub fn matmul_into_b(
    op: &BackwardOp,
    g: &Tensor,
    gb_sum: &Tensor,
    need_a: bool,
) -> Result<Option<Option<Tensor>>> {
    let Some((a, b)) = matmul_operands(op)? else {
        return Ok(None);
    };
    if b.shape() != gb_sum.shape() || !linalg_kernels::matmul_tn_acc(gb_sum, &a, g)? {
        return Ok(None);
    }
    if !need_a {
        return Ok(Some(None));
    }
    Ok(Some(Some(matmul_grad_a(g, &a, &b)?)))
}

/// The Matmul rule computing only the gradients asked for (eager; a capture records
/// the full rule). A transposed 2-D `b` (a Linear's `W.T`) gets its gradient as the
/// transpose of `g^T @ a`: `W`'s gradient then comes out contiguous, with no
/// transposing copy into `.grad`. Each element is the same FMA chain over the batch as
/// in `a^T @ g` (gemm multiplies the same pairs in the same order).
pub fn matmul_needed(op: &BackwardOp, g: &Tensor, need_a: bool, need_b: bool) -> Result<Grads> {
    let Some((a, b)) = matmul_operands(op)? else {
        return apply(op, g);
    };
    let ga = if need_a {
        Some(matmul_grad_a(g, &a, &b)?)
    } else {
        None
    };
    let gb = if !need_b {
        None
    } else if let Some((a2, g2)) = rows_2d(&a, &b, g)? {
        Some(rows_product(&a2, &g2, &b)?)
    } else {
        Some(matmul_grad_b(g, &a, &b)?)
    };
    Ok(vec![ga, gb])
}

/// `b`'s gradient from `a` and `g` as `[rows, k]` and `[rows, n]` matrices: one product
/// over all of a's rows (`x[B, T, D] @ W.T`), no batched `[B, D, O]` product summed
/// over the batch afterwards.
fn rows_product(a2: &Tensor, g2: &Tensor, b: &Tensor) -> Result<Tensor> {
    if is_transposed_matrix(b) {
        matmul(&g2.transpose(0, 1)?, a2)?.transpose(0, 1)
    } else {
        matmul(&a2.transpose(0, 1)?, g2)
    }
}

/// `b`'s gradient in the full rule (a capture records it): for a batched `a` and a
/// shared 2-D `b`, one product over all of a's rows as eager's [`matmul_needed`]
/// computes it (the same values, and no `[B, D, O]` temporary summed over the batch in
/// the compiled step); else [`matmul_grad_b`].
pub(super) fn matmul_grad_b_rows(g: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.ndim() > 2 {
        if let Some((a2, g2)) = rows_2d(a, b, g)? {
            return rows_product(&a2, &g2, b);
        }
    }
    matmul_grad_b(g, a, b)
}

/// `a [..., m, k]` and `g [..., m, n]` as `[rows, k]` and `[rows, n]` matrices when `b`
/// is a 2-D float matrix shared by every batch entry (its gradient then sums over
/// every row of every batch entry); `None` otherwise.
fn rows_2d(a: &Tensor, b: &Tensor, g: &Tensor) -> Result<Option<(Tensor, Tensor)>> {
    let fits = b.ndim() == 2
        && a.ndim() >= 2
        && g.ndim() == a.ndim()
        && b.dtype().is_float()
        && a.dtype() == b.dtype()
        && g.dtype() == b.dtype()
        && g.shape()[..g.ndim() - 1] == a.shape()[..a.ndim() - 1];
    if !fits {
        return Ok(None);
    }
    if a.ndim() == 2 {
        return Ok(Some((a.clone(), g.clone())));
    }
    let (k, n) = (a.shape()[a.ndim() - 1], g.shape()[g.ndim() - 1]);
    let rows = a.numel() / k.max(1);
    if k == 0 || n == 0 || rows == 0 {
        return Ok(None);
    }
    Ok(Some((reshape(a, &[rows, k])?, reshape(g, &[rows, n])?)))
}

/// `a`'s gradient in `a @ b`: `g @ b^T`, summed over broadcast batch dims.
pub(super) fn matmul_grad_a(g: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    sum_to(&matmul(g, &b.transpose(-1, -2)?)?, a.shape())
}

/// `b`'s gradient in `a @ b`: `a^T @ g`, summed over broadcast batch dims.
pub(super) fn matmul_grad_b(g: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    sum_to(&matmul(&a.transpose(-1, -2)?, g)?, b.shape())
}

/// A 2-D f32 view whose transpose is contiguous (column-major), as `W.T` is.
fn is_transposed_matrix(t: &Tensor) -> bool {
    t.dtype() == DType::F32
        && t.ndim() == 2
        && !t.is_contiguous()
        && t.strides() == [1, t.shape()[0]]
}
