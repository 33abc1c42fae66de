//! Gradient rules: one match arm per backward op, each written with ordinary tensor
//! ops (run with grad mode off), so a compiler can reuse the same rules.

use super::grad_kernels;
use super::node::{BackwardOp, Edge, Saved};
use crate::autograd;
use crate::error::Result;
use crate::ir::record as trace;
use crate::ir::IrOp;
use crate::ops::shape_more::flip;
use crate::ops::{binary, where_};
use crate::optable::binary::binary_table;
use crate::optable::unary::unary_table;
use crate::optable::{BinaryOp, UnaryOp};
use crate::tensor::dtype::{float_for, DType, Scalar};
use crate::tensor::hooks::WeakTensor;
use crate::tensor::indexing::TensorIndex;
use crate::tensor::kernels::matmul as linalg_kernels;
use crate::tensor::linalg::matmul;
use crate::tensor::reduce::reduced_shape;
use crate::tensor::{creation, seq, Tensor};

/// One gradient per input (`None`: the input needs none).
pub(crate) type Grads = Vec<Option<Tensor>>;

/// `reshape_raw`, recorded when a capture records this backward (and differentiable in
/// a create-graph sweep).
fn reshape(t: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let out = t.reshape_raw(shape)?;
    if autograd::needs_grad(&[t]) {
        let node = BackwardOp::Reshape {
            in_shape: t.shape().into(),
            call: autograd::ViewCall::View,
        };
        autograd::record(&out, node, &[t]);
    }
    trace::record_after(
        || IrOp::Reshape {
            shape: shape.into(),
        },
        &[t],
        &out,
    );
    Ok(out)
}

/// `expand_raw`, recorded when a capture records this backward (and differentiable in
/// a create-graph sweep).
fn expand(t: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let out = t.expand_raw(shape)?;
    if !out.same(t) && autograd::needs_grad(&[t]) {
        let node = BackwardOp::Expand {
            in_shape: t.shape().into(),
        };
        autograd::record(&out, node, &[t]);
    }
    trace::record_after(
        || IrOp::Expand {
            shape: shape.into(),
            sym: Vec::new(),
        },
        &[t],
        &out,
    );
    Ok(out)
}

/// Sum `g` down to `shape` (undoing broadcasting).
pub fn sum_to(g: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if g.shape() == shape {
        return Ok(g.clone());
    }
    let lead = g.ndim().saturating_sub(shape.len());
    let dims: Vec<i64> = (0..g.ndim())
        .filter(|&i| i < lead || (shape[i - lead] == 1 && g.shape()[i] != 1))
        .map(|i| i as i64)
        .collect();
    let s = if dims.is_empty() {
        g.clone()
    } else {
        g.sum(&dims, true)?
    };
    reshape(&s, shape)
}

/// A reduced gradient broadcast back over the reduced dims of `in_shape`.
fn unreduce(g: &Tensor, in_shape: &[usize], dims: &[usize], keepdim: bool) -> Result<Tensor> {
    let kshape = reduced_shape(in_shape, dims, true);
    let _ = keepdim;
    expand(&reshape(g, &kshape)?, in_shape)
}

fn mask_f(t: &Tensor) -> Result<Tensor> {
    t.cast(DType::F32)
}

fn zeros(shape: &[usize]) -> Result<Tensor> {
    creation::zeros(shape, DType::F32)
}

/// Zeros of `shape` that a gradient `g` accumulates into (g's float dtype, so a float64
/// gradient is not rounded to float32).
fn zeros_for(shape: &[usize], g: &Tensor) -> Result<Tensor> {
    creation::zeros(shape, float_for(g.dtype()))
}

/// Zeros of `in_shape` a gradient `g` accumulates into. In a capture (`src`: the
/// forward input, kept only then) an expanded zero that takes `src`'s symbolic sizes,
/// so the recorded backward follows the forward's sizes rather than fixing them.
fn zeros_like_src(in_shape: &[usize], g: &Tensor, src: &Option<WeakTensor>) -> Result<Tensor> {
    let x = match src.as_ref().and_then(WeakTensor::upgrade) {
        Some(x) if trace::symbolic() => x,
        _ => return zeros_for(in_shape, g),
    };
    let z = expand(&zeros_for(&vec![1; in_shape.len()], g)?, in_shape)?;
    trace::note_like(&z, &x);
    z.contiguous()
}

/// `1/n` rounded in a gradient's float type (f32: as float32 arithmetic, f64: exact):
/// mean's gradient scale, here and in the compiled `GradKernel::MeanScale`.
pub(crate) fn mean_scale(dtype: DType, n: usize) -> f64 {
    match dtype {
        DType::F64 => 1.0 / n as f64,
        DType::F32 | DType::I32 | DType::I64 | DType::U8 | DType::Bool => {
            f64::from(1.0f32 / n as f32)
        }
    }
}

/// A saved tensor (or, when the rule does not read it, an empty placeholder).
fn opt(s: &Option<Saved>) -> Result<Tensor> {
    match s {
        Some(s) => s.get(),
        None => zeros(&[0]),
    }
}

/// `maximum`/`minimum`'s gradients: `g` goes to the winner (`win`: `Gt` for maximum,
/// `Lt` for minimum), split evenly on ties.
fn min_max_grads(win: BinaryOp, a: &Tensor, b: &Tensor, g: &Tensor) -> Result<(Tensor, Tensor)> {
    let win = mask_f(&binary(win, a, b)?)?;
    let tie = mask_f(&binary(BinaryOp::Eq, a, b)?)?.mul_s(0.5)?;
    let wa = win.add(&tie)?;
    Ok((g.mul(&wa)?, g.mul(&wa.rsub_s(1.0)?)?))
}

/// The gradients, from the table's `grad` field.
macro_rules! binary_grads {
    ($($V:ident {
        name: $name:literal, methods: [$($m:literal),*], global: $global:literal,
        dtype: $dt:ident, saves: [$($s:ident),*],
        f32: [$($f:tt)*], int: [$($i:tt)*], grad: [$($gr:tt)*], fused: [$($k:tt)*],
        onnx: [$($o:tt)*],
    })*) => {
        /// The two input gradients of `a op b` for incoming gradient `g` (`a`/`b`/`out`:
        /// the saved operands and result; those the op does not save are empty).
        #[allow(unused_variables)]
        fn binary_grads(
            op: BinaryOp,
            a: &Tensor,
            b: &Tensor,
            out: &Tensor,
            g: &Tensor,
        ) -> Result<(Tensor, Tensor)> {
            Ok(match op {
                $(BinaryOp::$V => binary_grads!(@grad g, a, b, out, $($gr)*),)*
            })
        }
    };
    (@grad $g:ident, $a:ident, $b:ident, $out:ident, none) => {
        ($g.mul_s(0.0)?, $g.mul_s(0.0)?)
    };
    (@grad $gg:ident, $aa:ident, $bb:ident, $oo:ident,
     ($g:ident, $a:ident, $b:ident, $out:ident) $e:expr) => {{
        let ($g, $a, $b, $out) = ($gg, $aa, $bb, $oo);
        $e
    }};
}

binary_table!(binary_grads);

/// ReLU's gradient: a select, not a product with a 0/1 mask (PyTorch's
/// threshold_backward gives +0.0 where x <= 0, never -0.0 for a negative incoming
/// gradient). Outside a capture one pass over same-shaped f32 tensors; a capture
/// records the select.
fn relu_grad(x: &Tensor, g: &Tensor) -> Result<Tensor> {
    if fused_unary_grad(x, g) {
        let keep = |x: f32, g: f32| if x > 0.0 { g } else { 0.0 };
        return crate::tensor::kernels::elementwise::zip(x, g, x.shape(), keep);
    }
    where_(&x.cmp_s(BinaryOp::Gt, 0.0)?, g, &zeros(&[])?)
}

/// Whether a unary op's gradient can run as one fused f32 pass over `x` and `g` (eager,
/// no create-graph sweep, no broadcasting).
fn fused_unary_grad(x: &Tensor, g: &Tensor) -> bool {
    !trace::active()
        && g.dtype() == DType::F32
        && x.dtype() == DType::F32
        && g.shape() == x.shape()
        && !autograd::needs_grad(&[x, g])
}

/// The exact GELU's gradient `g * (Phi(x) + x phi(x))`: one fused pass in f32 when it
/// can, else as tensor ops (differentiable, recorded by a capture).
fn gelu_grad(x: &Tensor, g: &Tensor) -> Result<Tensor> {
    if fused_unary_grad(x, g) {
        let d = |x: f32, g: f32| {
            use crate::tensor::kernels::fastmath::{erf, exp};
            let cdf = 0.5 * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2));
            let pdf = exp(-0.5 * x * x) * 0.398_942_3;
            g * (cdf + x * pdf)
        };
        return crate::tensor::kernels::elementwise::zip(x, g, x.shape(), d);
    }
    let cdf = x
        .mul_s(std::f64::consts::FRAC_1_SQRT_2)?
        .un(UnaryOp::Erf)?
        .add_s(1.0)?
        .mul_s(0.5)?;
    let pdf = x
        .mul(x)?
        .mul_s(-0.5)?
        .un(UnaryOp::Exp)?
        .mul_s(0.398_942_280_401_432_7)?;
    g.mul(&cdf.add(&x.mul(&pdf)?)?)
}

/// The tanh GELU's gradient: with `u = k (x + c x^3)`, `t = tanh u`,
/// `g * (0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2))`; fused in f32 as [`gelu_grad`].
fn gelu_tanh_grad(x: &Tensor, g: &Tensor) -> Result<Tensor> {
    if fused_unary_grad(x, g) {
        use crate::tensor::kernels::unary::{GELU_C, SQRT_2_OVER_PI};
        let d = |x: f32, g: f32| {
            let x2 = x * x;
            let t = crate::tensor::kernels::fastmath::tanh((x + x2 * x * GELU_C) * SQRT_2_OVER_PI);
            let du = (x2 * (3.0 * GELU_C) + 1.0) * SQRT_2_OVER_PI;
            g * ((t + 1.0) * 0.5 + x * 0.5 * (1.0 - t * t) * du)
        };
        return crate::tensor::kernels::elementwise::zip(x, g, x.shape(), d);
    }
    let (k, c) = (0.797_884_560_802_865_4, 0.044_715);
    let x2 = x.mul(x)?;
    let t = x.add(&x2.mul(x)?.mul_s(c)?)?.mul_s(k)?.un(UnaryOp::Tanh)?;
    let left = t.add_s(1.0)?.mul_s(0.5)?;
    let du = x2.mul_s(3.0 * c)?.add_s(1.0)?.mul_s(k)?;
    let right = x.mul_s(0.5)?.mul(&t.mul(&t)?.rsub_s(1.0)?)?.mul(&du)?;
    g.mul(&left.add(&right)?)
}

/// `unary_grad` from the op table's `grad` field.
macro_rules! unary_grads {
    ($($V:ident {
        name: $name:literal, methods: [$($m:literal),*], global: $global:literal,
        saves: $saves:ident, f32: [$($f:tt)*], int: [$($i:tt)*], grad: [$($gr:tt)*],
        jit: [$($j:tt)*], reference: [$($r:tt)*], onnx: [$($o:tt)*],
    })*) => {
        /// The input gradient of `op` for incoming gradient `g` (`x`/`out`: the saved
        /// input and result; the one the op does not save is empty).
        #[allow(unused_variables)]
        fn unary_grad(op: UnaryOp, x: &Tensor, out: &Tensor, g: &Tensor) -> Result<Tensor> {
            use UnaryOp::*;
            let x = &x.cast(float_for(x.dtype()))?;
            match op {
                $(UnaryOp::$V => unary_grads!(@grad g, x, out, $($gr)*),)*
            }
        }
    };
    (@grad $g:ident, $x:ident, $out:ident, none) => {
        $g.mul_s(0.0)
    };
    (@grad $gg:ident, $xx:ident, $oo:ident, ($g:ident, $x:ident, $out:ident) $e:expr) => {{
        let ($g, $x, $out) = ($gg, $xx, $oo);
        $e
    }};
}

unary_table!(unary_grads);

fn index_grad(in_shape: &[usize], indices: &[TensorIndex], g: &Tensor) -> Result<Tensor> {
    // A fresh buffer accumulated into in place: recorded as one `IndexGrad` op.
    let z = trace::paused(|| zeros_for(in_shape, g))?;
    z.index_put_raw(indices, g, true)?;
    if autograd::needs_grad(&[g]) {
        // Differentiable in a create-graph sweep: `z[indices] += g` on a constant `z`.
        let node = BackwardOp::IndexPut {
            indices: indices.to_vec(),
            value_shape: g.shape().into(),
            accumulate: true,
        };
        autograd::record_edges(&z, node, [Edge::None, Edge::of(g)].into());
    }
    if !trace::active() {
        return Ok(z);
    }
    if let (IrOp::Index { indices }, tensors) = trace::index_op(indices) {
        let mut args = vec![g];
        args.extend(tensors.iter());
        trace::record_after(
            || IrOp::IndexGrad {
                shape: in_shape.into(),
                indices,
            },
            &args,
            &z,
        );
    }
    Ok(z)
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
    let BackwardOp::Matmul { a, b } = op else {
        return Ok(None);
    };
    let (a, b) = (a.get()?, b.get()?);
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
    let BackwardOp::Matmul { a, b } = op else {
        return apply(op, g);
    };
    let (a, b) = (a.get()?, b.get()?);
    let ga = if need_a {
        Some(matmul_grad_a(g, &a, &b)?)
    } else {
        None
    };
    let gb = if !need_b {
        None
    } else if let Some((a2, g2)) = rows_2d(&a, &b, g)? {
        // One product over all of a's rows (`x[B, T, D] @ W.T`): no batched [B, D, O]
        // product summed over the batch afterwards.
        if is_transposed_matrix(&b) {
            Some(matmul(&g2.transpose(0, 1)?, &a2)?.transpose(0, 1)?)
        } else {
            Some(matmul(&a2.transpose(0, 1)?, &g2)?)
        }
    } else {
        Some(matmul_grad_b(g, &a, &b)?)
    };
    Ok(vec![ga, gb])
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
fn matmul_grad_a(g: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    sum_to(&matmul(g, &b.transpose(-1, -2)?)?, a.shape())
}

/// `b`'s gradient in `a @ b`: `a^T @ g`, summed over broadcast batch dims.
fn matmul_grad_b(g: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    sum_to(&matmul(&a.transpose(-1, -2)?, g)?, b.shape())
}

/// A 2-D f32 view whose transpose is contiguous (column-major), as `W.T` is.
fn is_transposed_matrix(t: &Tensor) -> bool {
    t.dtype() == DType::F32
        && t.ndim() == 2
        && !t.is_contiguous()
        && t.strides() == [1, t.shape()[0]]
}

/// The rules computed by kernels with no IR op (a capture recording them breaks).
fn unrecorded(op: &BackwardOp) -> Option<&'static str> {
    use BackwardOp as B;
    Some(match op {
        B::LstmLayer { .. } => "LSTM layer backward",
        B::GruLayer { .. } => "GRU layer backward",
        B::Attention { .. } => "scaled_dot_product_attention backward",
        B::AsStrided(_) => "a view's backward after an in-place op",
        B::CopySlices(_) => "an in-place op on a view's backward",
        _ => return None,
    })
}

/// Gradients for each input edge of `op`, given the output gradient `g`.
pub fn apply(op: &BackwardOp, g: &Tensor) -> Result<Grads> {
    use BackwardOp as B;
    if trace::active() {
        if let Some(what) = unrecorded(op) {
            trace::graph_break(trace::BreakReason::Autograd(what));
        }
    }
    Ok(match op {
        B::Binary {
            op: BinaryOp::Mul,
            a,
            b,
            a_shape,
            b_shape,
            ..
        } if a.is_none() || b.is_none() => {
            // A product with a scalar: only the tensor operand's gradient.
            let grad = |s: &Option<Saved>, shape: &[usize]| -> Result<Option<Tensor>> {
                s.as_ref()
                    .map(|s| sum_to(&g.mul(&s.get()?)?, shape))
                    .transpose()
            };
            vec![grad(b, &a_shape[..])?, grad(a, &b_shape[..])?]
        }
        B::Binary {
            op,
            a,
            b,
            out,
            a_shape,
            b_shape,
            ..
        } => {
            let (ga, gb) = binary_grads(*op, &opt(a)?, &opt(b)?, &opt(out)?, g)?;
            vec![Some(sum_to(&ga, a_shape)?), Some(sum_to(&gb, b_shape)?)]
        }
        B::Unary { op, x, out } => vec![Some(unary_grad(*op, &opt(x)?, &opt(out)?, g)?)],
        B::Clamp { x, min, max } => {
            let x = x.get()?;
            let mut m = creation::ones(x.shape(), DType::F32)?;
            if let Some(lo) = min {
                m = m.mul(&mask_f(&x.cmp_s(BinaryOp::Ge, *lo)?)?)?;
            }
            if let Some(hi) = max {
                m = m.mul(&mask_f(&x.cmp_s(BinaryOp::Le, *hi)?)?)?;
            }
            // Selected, not multiplied, so clamped positions get +0.0 (as in PyTorch).
            vec![Some(where_(&m.cmp_s(BinaryOp::Gt, 0.5)?, g, &zeros(&[])?)?)]
        }
        B::Where {
            cond,
            a_shape,
            b_shape,
        } => {
            let c = cond.get()?;
            let z = zeros(&[])?;
            let ga = where_(&c, g, &z)?;
            let gb = where_(&c, &z, g)?;
            vec![Some(sum_to(&ga, a_shape)?), Some(sum_to(&gb, b_shape)?)]
        }
        B::Identity | B::ToCopy => vec![Some(g.clone())],
        B::Sum {
            in_shape,
            dims,
            keepdim,
            divisor,
            src,
        } => {
            let e = unreduce(g, in_shape, dims, *keepdim)?;
            // In a capture with symbolic sizes the expand follows the input's sizes, and
            // a count over a symbolic dim is taken at run time.
            let sym = match src.as_ref().and_then(WeakTensor::upgrade) {
                Some(x) => trace::note_like(&e, &x),
                None => Vec::new(),
            };
            vec![Some(if *divisor == 1 {
                e
            } else if dims.iter().any(|&d| sym.get(d) == Some(&true)) {
                grad_kernels::mean_scale(&e, dims)?
            } else {
                e.mul_s(mean_scale(e.dtype(), *divisor))?
            })]
        }
        B::ExtremeDim {
            in_shape,
            dim,
            keepdim,
            indices,
            src,
            ..
        } => {
            let (gk, ik) = if *keepdim || in_shape.is_empty() {
                (g.clone(), indices.clone())
            } else {
                (g.unsqueeze(*dim as i64)?, indices.unsqueeze(*dim as i64)?)
            };
            if in_shape.is_empty() {
                return Ok(vec![Some(g.clone())]);
            }
            vec![Some(zeros_like_src(in_shape, &gk, src)?.scatter_add(
                *dim as i64,
                &ik,
                &gk,
            )?)]
        }
        B::ExtremeAll { x, out, dims, .. } => {
            let m = mask_f(&binary(BinaryOp::Eq, &x.get()?, &out.get()?)?)?;
            let cnt = match dims {
                None => m.sum(&[], false)?,
                Some(d) => m.sum(&d.iter().map(|&i| i as i64).collect::<Vec<_>>(), true)?,
            };
            vec![Some(m.mul(g)?.div(&cnt)?)]
        }
        B::Var {
            x,
            dims,
            keepdim,
            correction,
            std_out,
        } => {
            let x = x.get()?;
            let n: usize = dims.iter().map(|&d| x.shape()[d]).product();
            let di: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
            let centered = x.sub(&x.mean(&di, true)?)?;
            let ge = unreduce(g, x.shape(), dims, *keepdim)?;
            let denom = (n as f64 - correction).max(0.0);
            let gx = match std_out {
                None => ge.mul(&centered)?.mul_s(2.0 / denom)?,
                Some(s) => {
                    let se = unreduce(&s.get()?, x.shape(), dims, *keepdim)?;
                    ge.mul(&centered)?.div(&se)?.mul_s(1.0 / denom)?
                }
            };
            vec![Some(gx)]
        }
        B::Prod { x, dims, keepdim } => {
            let x = x.get()?;
            let ge = unreduce(g, x.shape(), dims, *keepdim)?;
            let others = grad_kernels::prod_others(&x, dims)?;
            vec![Some(ge.mul(&others)?)]
        }
        B::LogSumExp {
            x,
            out,
            dims,
            keepdim,
        } => {
            let x = x.get()?;
            let oe = unreduce(&out.get()?, x.shape(), dims, *keepdim)?;
            let ge = unreduce(g, x.shape(), dims, *keepdim)?;
            vec![Some(ge.mul(&x.sub(&oe)?.un(UnaryOp::Exp)?)?)]
        }
        B::Softmax { out, dim } => {
            let y = out.get()?;
            let s = g.mul(&y)?.sum(&[*dim as i64], true)?;
            vec![Some(y.mul(&g.sub(&s)?)?)]
        }
        B::LogSoftmax { out, dim } => {
            let y = out.get()?;
            let s = g.sum(&[*dim as i64], true)?;
            vec![Some(g.sub(&y.un(UnaryOp::Exp)?.mul(&s)?)?)]
        }
        B::Cumsum { dim } if autograd::needs_grad(&[g]) => {
            // Differentiable: a cumsum over the reversed dim, reversed back.
            let d = [*dim as i64];
            vec![Some(flip(&flip(g, &d)?.cumsum(d[0])?, &d)?)]
        }
        B::Cumsum { dim } => vec![Some(g.cumsum_reverse(*dim)?)],
        B::Norm {
            x,
            out,
            dims,
            keepdim,
            p,
        } => {
            let x = x.get()?;
            let oe = unreduce(&out.get()?, x.shape(), dims, *keepdim)?;
            let ge = unreduce(g, x.shape(), dims, *keepdim)?;
            let zero = oe.cmp_s(BinaryOp::Eq, 0.0)?;
            let gx = if p.is_infinite() {
                let m = mask_f(&binary(BinaryOp::Eq, &x.un(UnaryOp::Abs)?, &oe)?)?;
                let cnt = m.sum(&dims.iter().map(|&d| d as i64).collect::<Vec<_>>(), true)?;
                ge.mul(&m)?.mul(&x.un(UnaryOp::Sign)?)?.div(&cnt)?
            } else {
                let num = x
                    .un(UnaryOp::Sign)?
                    .mul(&x.un(UnaryOp::Abs)?.pow_s(p - 1.0)?)?;
                ge.mul(&num)?.div(&oe.pow_s(p - 1.0)?)?
            };
            vec![Some(gx.masked_fill(
                &expand(&zero, x.shape())?,
                Scalar::Float(0.0),
            )?)]
        }
        B::Reshape { in_shape, .. } => vec![Some(reshape(g, in_shape)?)],
        B::Permute { perm, .. } => {
            let mut inv = vec![0; perm.len()];
            for (i, &p) in perm.iter().enumerate() {
                inv[p] = i;
            }
            let out = g.permute_raw(&inv, autograd::needs_grad(&[g]));
            trace::record_after(|| IrOp::Permute { perm: inv.clone() }, &[g], &out);
            vec![Some(out)]
        }
        B::Expand { in_shape } => vec![Some(sum_to(g, in_shape)?)],
        B::Index { in_shape, indices } => vec![Some(index_grad(in_shape, indices, g)?)],
        B::AsStrided(map) => vec![Some(map.scatter(g)?)],
        B::CopySlices(map) => {
            let (rest, region) = map.split(g)?;
            vec![Some(rest), Some(region)]
        }
        B::IndexPut {
            indices,
            value_shape,
            accumulate,
        } => {
            let gx = if *accumulate {
                g.clone()
            } else if autograd::needs_grad(&[g]) {
                // Differentiable: zeros written into a copy, both recorded.
                let c = crate::ops::clone(g)?;
                c.index_put_(indices, &zeros(&[])?)?;
                c
            } else {
                let c = g.contiguous_copy()?;
                c.index_put_raw(indices, &zeros(&[])?, false)?;
                c
            };
            let gv = sum_to(&g.index(indices)?, value_shape)?;
            vec![Some(gx), Some(gv)]
        }
        B::Gather {
            dim,
            index,
            in_shape,
            src,
        } => {
            vec![Some(zeros_like_src(in_shape, g, src)?.scatter_add(
                *dim as i64,
                index,
                g,
            )?)]
        }
        B::ScatterAdd {
            dim,
            index,
            src_shape,
        } => {
            let part = g.gather(*dim as i64, index)?;
            let gs = if part.shape() == src_shape.as_slice() {
                part
            } else {
                let idx: Vec<TensorIndex> = index
                    .shape()
                    .iter()
                    .map(|&n| TensorIndex::Slice {
                        start: None,
                        stop: Some(n as i64),
                        step: None,
                    })
                    .collect();
                index_grad(src_shape, &idx, &part)?
            };
            vec![Some(g.clone()), Some(gs)]
        }
        B::MaskedFill { mask, in_shape } => {
            let _ = in_shape;
            vec![Some(g.masked_fill(mask, Scalar::Float(0.0))?)]
        }
        B::Cat { dim, sizes } => {
            let mut start = 0;
            let mut out = Vec::with_capacity(sizes.len());
            for &s in sizes {
                out.push(Some(g.narrow(*dim as i64, start as i64, s as i64)?));
                start += s;
            }
            out
        }
        B::Matmul { a, b } => {
            let (a, b) = (a.get()?, b.get()?);
            vec![
                Some(matmul_grad_a(g, &a, &b)?),
                Some(matmul_grad_b(g, &a, &b)?),
            ]
        }
        B::Conv2d { x, w, params } => {
            // only the gradients an edge takes (an input without history has none)
            let need = (x.needs_grad(), w.needs_grad());
            let (gx, gw) = grad_kernels::conv2d(&x.get()?, &w.get()?, g, *params, need)?;
            vec![gx, gw]
        }
        B::MaxPool2d {
            in_shape,
            argmax,
            x,
            params,
        } => vec![Some(grad_kernels::max_pool2d(
            in_shape, argmax, x, *params, g,
        )?)],
        B::AvgPool2d { in_shape, params } => {
            vec![Some(grad_kernels::avg_pool2d(in_shape, *params, g)?)]
        }
        B::BatchNorm(s) => s.grads(g)?,
        B::LayerNorm(s) => s.grads(g)?,
        B::LstmLayer {
            h0,
            c0,
            w,
            out,
            acts,
        } => seq::lstm_layer_grads(g, &h0.get()?, &c0.get()?, &w.get()?, &out.get()?, acts)?,
        B::GruLayer {
            h0,
            w,
            out,
            saved,
            bias,
        } => seq::gru_layer_grads(g, &h0.get()?, &w.get()?, &out.get()?, saved, *bias)?,
        B::Attention {
            q,
            k,
            v,
            mask,
            dims,
            out,
            lse,
        } => seq::attention_grads(
            g,
            &q.get()?,
            &k.get()?,
            &v.get()?,
            mask,
            dims,
            &out.get()?,
            lse,
        )?,
        B::Linalg(l) => l.grads(g)?,
        B::Compiled(c) => c.apply(g)?,
        B::CompiledOut { shared, index } => shared.stash(*index, g)?,
        B::Loop(l) => l.apply(g)?,
        B::LoopOut { shared, index } => shared.stash(*index, g)?,
    })
}
