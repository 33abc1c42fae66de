//! `group_norm` as a primitive op (`_group_norm`, which nn.functional.group_norm calls):
//! shape checks, the fused kernels of kernels/group_norm.rs, one autograd node
//! (`NativeGroupNormBackward0`) saving the (sample, group) mean and rstd, and its
//! capture as one IR node (`IrOp::GroupNorm`).

use super::dtype::with_float;
use super::kernels::conv::ConvFloat;
use super::kernels::group_norm::{self as kg, Gn};
use super::linalg::{kernel_dtype, with_elems};
use super::norm::per_channel;
use super::shape::fmt_shape;
use super::Elem;
use super::{err, Tensor};
use crate::autograd::norm_rules::GroupNormSaved;
use crate::autograd::{self, BackwardOp, More, OpSaved, Saved};
use crate::error::{ErrorKind, Result};
use crate::ir::record_op::record_op;
use crate::ir::IrOp;

/// The `[n, c, l]` view of a group-norm input `[N, C, *]` in `groups` groups.
fn gn_geom(shape: &[usize], groups: usize) -> Gn {
    Gn {
        n: shape.first().copied().unwrap_or(0),
        c: shape.get(1).copied().unwrap_or(0),
        groups,
        l: shape.iter().skip(2).product(),
    }
}

fn check_gn(x: &Tensor, groups: usize, w: Option<&Tensor>, b: Option<&Tensor>) -> Result<Gn> {
    let shape = fmt_shape(x.shape());
    if x.ndim() < 2 {
        return Err(err(
            ErrorKind::RuntimeError,
            format!("group_norm: expected an input with at least 2 dims, got {shape}"),
        ));
    }
    let g = gn_geom(x.shape(), groups);
    if groups == 0 || !g.c.is_multiple_of(groups) {
        return Err(err(
            ErrorKind::RuntimeError,
            format!(
                "Expected number of channels in input to be divisible by num_groups, but got input of shape {shape} and num_groups={groups}"
            ),
        ));
    }
    per_channel("weight", w, g.c)?;
    per_channel("bias", b, g.c)?;
    Ok(g)
}

/// `group_norm(x [N, C, *])` in `groups` groups of channels, with an optional
/// per-channel weight and bias.
pub fn group_norm(
    x: &Tensor,
    groups: usize,
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    let g = check_gn(x, groups, w, b)?;
    let mut args = vec![x];
    args.extend(w);
    args.extend(b);
    let op = IrOp::GroupNorm {
        groups,
        eps,
        weight: w.is_some(),
        bias: b.is_some(),
    };
    record_op(&args, |_| op.clone(), || gn_eager(x, g, (w, b), &op, eps))
}

/// A per-channel operand as a Vec of T.
fn channel_vec<T: ConvFloat>(t: Option<&Tensor>) -> Result<Option<Vec<T>>> {
    t.map(|t| t.cast(T::DTYPE)?.to_vec::<T>()).transpose()
}

fn gn_eager(
    x: &Tensor,
    g: Gn,
    (w, b): (Option<&Tensor>, Option<&Tensor>),
    op: &IrOp,
    eps: f64,
) -> Result<Tensor> {
    let mut ts = vec![x];
    ts.extend(w);
    ts.extend(b);
    let dt = kernel_dtype("group_norm", &ts)?;
    let stats_shape = [g.n, g.groups];
    let (y, mean, rstd) = with_float!(dt, T => {
        let (wv, bv) = (channel_vec::<T>(w)?, channel_vec::<T>(b)?);
        let (y, m, r) = with_elems::<T, _>(&[x], |s| {
            kg::gn_forward(s[0], g, wv.as_deref(), bv.as_deref(), eps)
        })?;
        (
            Tensor::from_vec(y, x.shape()),
            Tensor::from_vec(m, &stats_shape),
            Tensor::from_vec(r, &stats_shape),
        )
    });
    if autograd::needs_grad(&ts) {
        let node = GroupNormSaved {
            x: Saved::new(x),
            w: w.map(Saved::new),
            bias: b.map(Tensor::requires_grad),
            mean,
            rstd,
            groups: g.groups,
            eps,
        };
        let saved = OpSaved {
            more: More::Kernel(Box::new(node)),
            ..OpSaved::default()
        };
        autograd::record(
            &y,
            BackwardOp::Op {
                op: op.clone(),
                saved,
            },
            &ts,
        );
    }
    Ok(y)
}

/// group_norm's gradients (dx, dweight, dbias), each when `need` asks for it, from the
/// (sample, group) mean and rstd.
pub fn group_norm_grads(
    x: &Tensor,
    groups: usize,
    w: Option<&Tensor>,
    stats: (&Tensor, &Tensor),
    g: &Tensor,
    need: (bool, bool, bool),
) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
    if g.shape() != x.shape() {
        return Err(err(
            ErrorKind::ShapeError,
            format!(
                "group_norm backward: gradient of shape {}, expected {}",
                fmt_shape(g.shape()),
                fmt_shape(x.shape())
            ),
        ));
    }
    let geo = check_gn(x, groups, w, None)?;
    let dt = kernel_dtype("group_norm", &[x, g])?;
    with_float!(dt, T => {
        let mean = stats.0.cast(T::DTYPE)?.to_vec::<T>()?;
        let rstd = stats.1.cast(T::DTYPE)?.to_vec::<T>()?;
        if mean.len() != geo.rows() || rstd.len() != geo.rows() {
            return Err(err(ErrorKind::ShapeError, "group_norm backward: statistics of the wrong size"));
        }
        let wv = channel_vec::<T>(w)?;
        let (dx, dw, db) = with_elems::<T, _>(&[x, g], |s| {
            kg::gn_backward(s[0], s[1], geo, wv.as_deref(), (&mean, &rstd), need)
        })?;
        Ok((
            dx.map(|v| Tensor::from_vec(v, x.shape())),
            dw.map(|v| Tensor::from_vec(v, &[geo.c])),
            db.map(|v| Tensor::from_vec(v, &[geo.c])),
        ))
    })
}

/// The (sample, group) mean and rstd a group_norm forward used (the executor of
/// group_norm's gradient kernels).
pub fn group_norm_moments(x: &Tensor, groups: usize, eps: f64) -> Result<(Tensor, Tensor)> {
    let geo = check_gn(x, groups, None, None)?;
    let dt = kernel_dtype("group_norm", &[x])?;
    let shape = [geo.n, geo.groups];
    with_float!(dt, T => {
        let (m, r) = with_elems::<T, _>(&[x], |s| kg::gn_stats(s[0], geo, eps))?;
        Ok((Tensor::from_vec(m, &shape), Tensor::from_vec(r, &shape)))
    })
}
