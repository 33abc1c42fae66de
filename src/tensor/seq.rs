//! `scaled_dot_product_attention`: one autograd node over the kernels in
//! `kernels::attention` (the fused LSTM/GRU recurrences are in `recurrence`). The fused
//! attention is `IrOp::Attention` with `GradKernel::Attention` gradients (see
//! `attention_exec`); with dropout it is the composite of tensor ops (its random mask
//! breaks the graph).

use super::kernels::attention::{self, Mask};
use super::shape::broadcast_shapes;
use super::{creation, err, linalg, DType, Scalar, Tensor};
use crate::autograd::{self, BackwardOp, Saved};
use crate::error::{ErrorKind, Result};
use crate::ir::record as trace;
use crate::ir::record_op::record_op;
use crate::ir::{GradKernel, IrOp};
use crate::optable::{BinaryOp, UnaryOp};

fn rt(msg: String) -> crate::error::Error {
    err(ErrorKind::RuntimeError, msg)
}

/// `[2, 3]`: a shape in the fused ops' messages.
pub(super) fn shape_str(s: &[usize]) -> String {
    let parts: Vec<String> = s.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// What `scaled_dot_product_attention` was asked for besides q, k, v.
pub struct AttnOptions<'a> {
    pub mask: Option<&'a Tensor>,
    pub dropout_p: f64,
    pub is_causal: bool,
    pub scale: Option<f64>,
}

/// What a captured attention's backward needs besides its saved tensors: the mask
/// tensor (an operand of the graph) and the explicit scale.
pub struct AttnIr {
    pub mask: Option<Tensor>,
    pub scale: Option<f64>,
}

/// `softmax(q k^T * scale + mask) @ v` over the last two dims (PyTorch's
/// `F.scaled_dot_product_attention`): batch dims broadcast, a bool mask keeps the keys
/// where it is true, a float mask is added to the scores, `is_causal` keeps key j <= i;
/// a query row that sees no key gives zeros. One fused node (no `L x S` matrix) unless
/// dropout is on, the mask needs a gradient or the dtype is not float32 (then the
/// composite of matmul/softmax, with PyTorch's numbers).
pub fn scaled_dot_product_attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    o: &AttnOptions,
) -> Result<Tensor> {
    // (a broadcast of q, k or v is an expand op of its own, recorded as such)
    let (q, k, v, scale) = checked(q, k, v, o)?;
    let mask_grad = o
        .mask
        .is_some_and(|m| m.requires_grad() && autograd::is_grad_enabled());
    let f32s = [&q, &k, &v].iter().all(|t| t.dtype() == DType::F32);
    if o.dropout_p > 0.0 || mask_grad || !f32s {
        return composite(&q, &k, &v, o, scale);
    }
    if !trace::active() {
        return fused(&q, &k, &v, o, scale, None).map(|(out, _)| out);
    }
    let mut args = vec![&q, &k, &v];
    args.extend(o.mask);
    let ir = |_: &Tensor| IrOp::Attention {
        causal: o.is_causal,
        scale: o.scale,
        mask: o.mask.is_some(),
    };
    let keep = AttnIr {
        mask: o.mask.cloned(),
        scale: o.scale,
    };
    record_op(&args, ir, || {
        fused(&q, &k, &v, o, scale, Some(keep)).map(|(out, _)| out)
    })
}

/// q, k, v broadcast to one batch shape (`broadcast_qkv`), the options checked, and the
/// scale.
pub fn checked(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    o: &AttnOptions,
) -> Result<(Tensor, Tensor, Tensor, f64)> {
    let (q, k, v) = broadcast_qkv(q, k, v)?;
    if o.mask.is_some() && o.is_causal {
        return Err(rt(
            "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True".into(),
        ));
    }
    if !(0.0..=1.0).contains(&o.dropout_p) {
        return Err(err(
            ErrorKind::ValueError,
            format!(
                "dropout probability has to be between 0 and 1, but got {}",
                o.dropout_p
            ),
        ));
    }
    let e = q.shape()[q.ndim() - 1];
    let scale = o.scale.unwrap_or(1.0 / (e.max(1) as f64).sqrt());
    Ok((q, k, v, scale))
}

type AttnMask = Option<(Vec<f32>, Vec<usize>)>;

/// The fused kernel's sizes and additive mask for checked q, k, v.
fn prepared(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    o: &AttnOptions,
    scale: f64,
) -> Result<(attention::Dims, AttnMask)> {
    let nd = q.ndim();
    let (l, s, e) = (q.shape()[nd - 2], k.shape()[nd - 2], q.shape()[nd - 1]);
    let batch = &q.shape()[..nd - 2];
    let mask = match o.mask {
        Some(m) => Some(additive_mask(m, batch, l, s)?),
        None => None,
    };
    let d = attention::Dims {
        n: batch.iter().product(),
        l,
        s,
        e,
        ev: v.shape()[nd - 1],
        scale: scale as f32,
        causal: o.is_causal,
    };
    Ok((d, mask))
}

/// The fused attention of checked float32 q, k, v: the output and the rows' logsumexp
/// `[n, L]`, with its autograd node (`ir`: the capture's operands, when recorded).
pub fn fused(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    o: &AttnOptions,
    scale: f64,
    ir: Option<AttnIr>,
) -> Result<(Tensor, Tensor)> {
    let (d, mask) = prepared(q, k, v, o, scale)?;
    let (qv, kv, vv) = (q.to_f32_vec()?, k.to_f32_vec()?, v.to_f32_vec()?);
    let mref = mask.as_ref().map(|(data, off)| Mask {
        data,
        off: off.clone(),
    });
    let (out, lse) = attention::forward(&qv, &kv, &vv, mref.as_ref(), &d)?;
    let mut oshape = q.shape()[..q.ndim() - 2].to_vec();
    oshape.extend([d.l, d.ev]);
    let out = Tensor::from_vec(out, &oshape);
    let lse = Tensor::from_vec(lse, &[d.n, d.l]);
    if autograd::needs_grad(&[q, k, v]) {
        let node = BackwardOp::Attention {
            q: Saved::new(q),
            k: Saved::new(k),
            v: Saved::new(v),
            mask,
            dims: d,
            out: Saved::new(&out),
            lse: lse.clone(),
            ir,
        };
        autograd::record(&out, node, &[q, k, v]);
    }
    Ok((out, lse))
}

/// The fused attention's gradients (q, k, v) for the rule table; in a capture whose
/// forward was recorded (`ir`), each is recorded as a `GradKernel::Attention` node.
#[allow(clippy::too_many_arguments)]
pub fn attention_grads(
    g: &Tensor,
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: &AttnMask,
    d: &attention::Dims,
    out: &Tensor,
    lse: &Tensor,
    ir: Option<&AttnIr>,
) -> Result<Vec<Option<Tensor>>> {
    let grads = trace::paused(|| raw_grads(g, q, k, v, mask, d, out, lse))?;
    if let (Some(ir), true) = (ir, trace::active()) {
        let mut args = vec![q, k, v];
        args.extend(ir.mask.as_ref());
        args.extend([out, g]);
        for (part, t) in grads.iter().enumerate() {
            let kernel = GradKernel::Attention {
                part,
                causal: d.causal,
                scale: ir.scale,
                mask: ir.mask.is_some(),
            };
            trace::record_after(|| IrOp::GradKernel(kernel), &args, t);
        }
    }
    Ok(grads.into_iter().map(Some).collect())
}

/// dq, dk, dv of the fused attention from its output and rows' logsumexp.
#[allow(clippy::too_many_arguments)]
pub fn raw_grads(
    g: &Tensor,
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: &AttnMask,
    d: &attention::Dims,
    out: &Tensor,
    lse: &Tensor,
) -> Result<Vec<Tensor>> {
    let mref = mask.as_ref().map(|(data, off)| Mask {
        data,
        off: off.clone(),
    });
    let [dq, dk, dv] = attention::backward(
        &q.to_f32_vec()?,
        &k.to_f32_vec()?,
        &v.to_f32_vec()?,
        mref.as_ref(),
        d,
        &out.to_f32_vec()?,
        &lse.to_f32_vec()?,
        &g.to_f32_vec()?,
    )?;
    Ok(vec![
        Tensor::from_vec(dq, q.shape()),
        Tensor::from_vec(dk, k.shape()),
        Tensor::from_vec(dv, v.shape()),
    ])
}

/// The fused kernel's sizes and mask for a captured call's operands (the executor of
/// `GradKernel::Attention`).
pub fn exec_prepared(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    o: &AttnOptions,
) -> Result<(attention::Dims, AttnMask)> {
    let (q, k, v, scale) = checked(q, k, v, o)?;
    prepared(&q, &k, &v, o, scale)
}

/// q, k, v checked (`[..., L, E]`, `[..., S, E]`, `[..., S, Ev]`) and expanded to one
/// batch shape (the expansion is a view whose gradient sums back).
fn broadcast_qkv(q: &Tensor, k: &Tensor, v: &Tensor) -> Result<(Tensor, Tensor, Tensor)> {
    for (t, name) in [(q, "query"), (k, "key"), (v, "value")] {
        if t.ndim() < 2 {
            return Err(rt(format!(
                "scaled_dot_product_attention: {name} must have at least 2 dimensions, got {}",
                t.ndim()
            )));
        }
        if !t.dtype().is_float() {
            return Err(rt(format!(
                "scaled_dot_product_attention: expected {name} to be a float tensor, got {}",
                t.dtype().name()
            )));
        }
    }
    let (qb, qm) = q.shape().split_at(q.ndim() - 2);
    let (kb, km) = k.shape().split_at(k.ndim() - 2);
    let (vb, vm) = v.shape().split_at(v.ndim() - 2);
    let batch = broadcast_shapes("scaled_dot_product_attention", qb, kb)?;
    let batch = broadcast_shapes("scaled_dot_product_attention", &batch, vb)?;
    let n: usize = batch.iter().product();
    if qm[1] != km[1] {
        return Err(rt(format!(
            "Expected size for first two dimensions of batch2 tensor to be: [{n}, {}] but got: [{n}, {}].",
            qm[1], km[1]
        )));
    }
    if km[0] != vm[0] {
        return Err(rt(format!(
            "Expected size for first two dimensions of batch2 tensor to be: [{n}, {}] but got: [{n}, {}].",
            km[0], vm[0]
        )));
    }
    let grow = |t: &Tensor, m: &[usize]| -> Result<Tensor> {
        let mut full: Vec<i64> = batch.iter().map(|&d| d as i64).collect();
        full.extend(m.iter().map(|&d| d as i64));
        if t.shape().len() == full.len()
            && t.shape().iter().zip(&full).all(|(&a, &b)| a as i64 == b)
        {
            Ok(t.clone())
        } else {
            t.expand(&full)
        }
    };
    Ok((grow(q, qm)?, grow(k, km)?, grow(v, vm)?))
}

/// The mask as f32 additive scores `[*mask batch, L, S]` (bool: 0 or -inf) and the
/// offset of each of the `prod(batch)` entries' blocks (broadcast mask dims repeat).
fn additive_mask(
    m: &Tensor,
    batch: &[usize],
    l: usize,
    s: usize,
) -> Result<(Vec<f32>, Vec<usize>)> {
    let mut full = batch.to_vec();
    full.extend([l, s]);
    broadcast_shapes("scaled_dot_product_attention", m.shape(), &full)
        .ok()
        .filter(|b| b[..] == full[..])
        .ok_or_else(|| {
            rt(format!(
                "scaled_dot_product_attention: attn_mask of shape {} does not broadcast to {}",
                shape_str(m.shape()),
                shape_str(&full)
            ))
        })?;
    // the mask's own batch dims (padded to the full rank), its L x S dims expanded
    let mut own: Vec<usize> = vec![1; full.len() - m.ndim()];
    own.extend(m.shape());
    let nb = batch.len();
    let mut req: Vec<usize> = own[..nb].to_vec();
    req.extend([l, s]);
    let own_t = m.contiguous_copy()?.reshape_raw(&own)?.expand_raw(&req)?;
    let data: Vec<f32> = if m.dtype() == DType::Bool {
        own_t
            .to_vec::<bool>()?
            .into_iter()
            .map(|keep| if keep { 0.0 } else { f32::NEG_INFINITY })
            .collect()
    } else {
        own_t.to_f32_vec()?
    };
    let mut off = Vec::with_capacity(batch.iter().product());
    let n: usize = batch.iter().product();
    for flat in 0..n {
        let (mut rem, mut at, mut stride) = (flat, 0, l * s);
        for dim in (0..nb).rev() {
            let i = rem % batch[dim];
            rem /= batch[dim];
            if own[dim] != 1 {
                at += i * stride;
            }
            stride *= own[dim];
        }
        off.push(at);
    }
    Ok((data, off))
}

/// The unfused attention (dropout, a mask that needs a gradient, float64): PyTorch's
/// math, with fully masked rows giving zeros as PyTorch's safe softmax. Tensor ops only
/// (no data read), so `@compile` captures it, the dropout mask as a random fill node.
fn composite(q: &Tensor, k: &Tensor, v: &Tensor, o: &AttnOptions, scale: f64) -> Result<Tensor> {
    let neg_inf = Scalar::Float(f64::NEG_INFINITY);
    let mut scores = linalg::matmul(q, &k.transpose(-2, -1)?)?.mul_s(scale)?;
    if o.is_causal {
        scores = scores.masked_fill(&above_diagonal(&scores)?, neg_inf)?;
    }
    if let Some(m) = o.mask {
        scores = if m.dtype() == DType::Bool {
            scores.masked_fill(&m.un(UnaryOp::Not)?, neg_inf)?
        } else {
            scores.add(&m.cast(scores.dtype())?)?
        };
    }
    let (row_max, _) = scores.extreme_dim(-1, true, false)?;
    let dead = row_max.cmp_s(BinaryOp::Eq, f64::NEG_INFINITY)?;
    let scores = scores.masked_fill(&dead, Scalar::Float(0.0))?;
    let mut p = scores.softmax(-1)?.masked_fill(&dead, Scalar::Float(0.0))?;
    if o.dropout_p > 0.0 {
        let kept = if o.dropout_p < 1.0 {
            1.0 / (1.0 - o.dropout_p)
        } else {
            0.0
        };
        let uniform = creation::Fill::Uniform { from: 0.0, to: 1.0 };
        let keep = creation::fill_like(&p, uniform, DType::F32)?
            .cmp_s(BinaryOp::Ge, o.dropout_p)?
            .cast(DType::F32)?
            .mul_s(kept)?;
        p = p.mul(&keep)?;
    }
    linalg::matmul(&p, v)
}

/// The causal mask of `scores`' last two dims (key j > query i), following symbolic
/// sizes in a capture that has them (else a constant).
fn above_diagonal(scores: &Tensor) -> Result<Tensor> {
    if let Some(off) = creation::symbolic_diagonal_offsets(scores)? {
        return off.cmp_s(BinaryOp::Gt, 0.0);
    }
    let nd = scores.ndim();
    let (l, s) = (scores.shape()[nd - 2], scores.shape()[nd - 1]);
    let above: Vec<bool> = (0..l * s).map(|i| i % s > i / s).collect();
    crate::ir::record_op::record_const(|| creation::from_bool(above, &[l, s]))
}
