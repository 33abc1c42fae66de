//! The gradient rules computed by dedicated kernels (prod, convolution, pooling): each
//! runs its kernel and, inside a capture, records an `IrOp::GradKernel` node that runs
//! the same kernel (`grad_kernel`, the executor's entry), so these backwards compile.

use super::node::Saved;
use crate::error::{Error, ErrorKind, Result};
use crate::ir::grad_kernel::NormPart;
use crate::ir::record as trace;
use crate::ir::{GradKernel, IrOp};
use crate::tensor::kernels::conv::{ConvParams, PoolParams};
use crate::tensor::linalg::{avg_pool2d_grad, conv2d_grads, max_pool2d_grad, max_pool2d_grad_of};
use crate::tensor::Tensor;
use crate::tensor::{group_norm, norm};

/// Runs gradient kernel `k` on `args` (the executor of `IrOp::GradKernel`).
pub fn grad_kernel(k: &GradKernel, args: &[&Tensor]) -> Result<Tensor> {
    let arg = |i: usize| {
        args.get(i).copied().ok_or_else(|| {
            Error::new(
                ErrorKind::RuntimeError,
                format!("internal error: {} without arg {i}", k.name()),
                None,
            )
        })
    };
    let out = trace::paused(|| run_kernel(k, &arg))?;
    trace::record_after(|| IrOp::GradKernel(k.clone()), args, &out);
    Ok(out)
}

/// The kernel's result, computed with the recorder paused (its helper ops are not
/// graph ops).
fn run_kernel<'a>(k: &GradKernel, arg: &impl Fn(usize) -> Result<&'a Tensor>) -> Result<Tensor> {
    Ok(match k {
        GradKernel::ProdOthers { dims } => {
            let x = arg(0)?;
            if dims.iter().any(|&d| d >= x.ndim()) {
                return Err(Error::new(
                    ErrorKind::IndexError,
                    "prod backward: dim out of range".to_string(),
                    None,
                ));
            }
            prod_others_raw(x, dims)?
        }
        GradKernel::Conv2dInput { params } | GradKernel::Conv2dWeight { params } => {
            let (x, w) = (arg(0)?, arg(1)?);
            if x.ndim() != 4 || w.ndim() != 4 {
                return Err(Error::new(
                    ErrorKind::ShapeError,
                    "conv2d backward: expected 4-D input and weight".to_string(),
                    None,
                ));
            }
            let input = matches!(k, GradKernel::Conv2dInput { .. });
            let (gx, gw) = conv2d_grads(x, w, arg(2)?, *params, (input, !input))?;
            gx.or(gw).ok_or_else(|| {
                Error::new(
                    ErrorKind::RuntimeError,
                    "internal error: conv2d backward computed no gradient".to_string(),
                    None,
                )
            })?
        }
        GradKernel::MaxPool2d { params } => max_pool2d_grad_of(arg(0)?, *params, arg(1)?)?,
        GradKernel::AvgPool2d { params, in_shape } => avg_pool2d_grad(in_shape, *params, arg(0)?)?,
        GradKernel::MeanScale { dims } => {
            let e = arg(0)?;
            let n = dims.iter().try_fold(1usize, |n, &d| {
                let s = e.shape().get(d).copied().ok_or_else(|| {
                    Error::new(
                        ErrorKind::IndexError,
                        "mean backward: dim out of range".to_string(),
                        None,
                    )
                })?;
                Ok::<usize, Error>(n.saturating_mul(s))
            })?;
            e.mul_s(super::rules::mean_scale(e.dtype(), n))?
        }
        GradKernel::BatchNorm {
            part,
            training,
            eps,
            weight,
        } => {
            let x = arg(0)?;
            let running = match training {
                false => Some((arg(1)?, arg(2)?)),
                true => None,
            };
            let at = if *training { 1 } else { 3 };
            let w = if *weight { Some(arg(at)?) } else { None };
            let g = arg(k.arity() - 1)?;
            let (m, r) = norm::batch_norm_moments(x, running, *eps)?;
            let need = norm_need(*part);
            let gs = norm::batch_norm_grads(x, w, (&m, &r), *training, g, need)?;
            norm_part(gs)?
        }
        GradKernel::LayerNorm {
            part,
            dims,
            eps,
            weight,
        } => {
            let x = arg(0)?;
            let w = if *weight { Some(arg(1)?) } else { None };
            let g = arg(k.arity() - 1)?;
            let (m, r) = norm::layer_norm_moments(x, *dims, *eps)?;
            let gs = norm::layer_norm_grads(x, *dims, w, (&m, &r), g, norm_need(*part))?;
            norm_part(gs)?
        }
        GradKernel::Attention { .. } => {
            let ops: Vec<&Tensor> = (0..k.arity()).map(arg).collect::<Result<_>>()?;
            crate::tensor::attention_exec::grad_part(k, &ops)?
        }
        GradKernel::LstmLayer { .. } | GradKernel::GruLayer { .. } => {
            let ops: Vec<&Tensor> = (0..k.arity()).map(arg).collect::<Result<_>>()?;
            crate::tensor::recurrence::grad_part(k, &ops)?
        }
        GradKernel::GroupNorm {
            part,
            groups,
            eps,
            weight,
        } => {
            let x = arg(0)?;
            let w = if *weight { Some(arg(1)?) } else { None };
            let g = arg(k.arity() - 1)?;
            let (m, r) = group_norm::group_norm_moments(x, *groups, *eps)?;
            let need = norm_need(*part);
            norm_part(group_norm::group_norm_grads(
                x,
                *groups,
                w,
                (&m, &r),
                g,
                need,
            )?)?
        }
    })
}

/// The gradients a normalisation kernel part computes: (x) or (weight, bias).
fn norm_need(part: NormPart) -> (bool, bool, bool) {
    match part {
        NormPart::Input => (true, false, false),
        NormPart::Params => (false, true, true),
    }
}

/// A normalisation kernel's result: dx, or dweight and dbias stacked.
fn norm_part(gs: (Option<Tensor>, Option<Tensor>, Option<Tensor>)) -> Result<Tensor> {
    match gs {
        (Some(dx), _, _) => Ok(dx),
        (None, Some(dw), Some(db)) => crate::tensor::views::stack(&[dw, db], 0),
        _ => Err(Error::new(
            ErrorKind::RuntimeError,
            "internal error: a normalisation backward computed no gradient".to_string(),
            None,
        )),
    }
}

/// mean's gradient `e` (already expanded to the input's shape) times `1/n`, `n` counted
/// over `dims` of `e` when it runs (recorded).
pub(super) fn mean_scale(e: &Tensor, dims: &[usize]) -> Result<Tensor> {
    grad_kernel(
        &GradKernel::MeanScale {
            dims: dims.to_vec(),
        },
        &[e],
    )
}

/// For each element of `x`: the product of the others over `dims` (recorded).
pub(super) fn prod_others(x: &Tensor, dims: &[usize]) -> Result<Tensor> {
    grad_kernel(
        &GradKernel::ProdOthers {
            dims: dims.to_vec(),
        },
        &[x],
    )
}

/// conv2d's (grad_x, grad_w), each only when `need` asks for it: one kernel run; a
/// capture records one node for each computed gradient.
pub(super) fn conv2d(
    x: &Tensor,
    w: &Tensor,
    g: &Tensor,
    params: ConvParams,
    need: (bool, bool),
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let (gx, gw) = trace::paused(|| conv2d_grads(x, w, g, params, need))?;
    if let Some(gx) = &gx {
        trace::record_after(
            || IrOp::GradKernel(GradKernel::Conv2dInput { params }),
            &[x, w, g],
            gx,
        );
    }
    if let Some(gw) = &gw {
        trace::record_after(
            || IrOp::GradKernel(GradKernel::Conv2dWeight { params }),
            &[x, w, g],
            gw,
        );
    }
    Ok((gx, gw))
}

/// max_pool2d's input gradient from the forward's argmax; a capture records it as a
/// node recomputing the argmax from the saved input.
pub(super) fn max_pool2d(
    in_shape: &[usize],
    argmax: &Tensor,
    x: &Saved,
    params: PoolParams,
    g: &Tensor,
) -> Result<Tensor> {
    let out = trace::paused(|| max_pool2d_grad(in_shape, argmax, g))?;
    if trace::active() {
        let x = x.get()?;
        trace::record_after(
            || IrOp::GradKernel(GradKernel::MaxPool2d { params }),
            &[&x, g],
            &out,
        );
    }
    Ok(out)
}

/// avg_pool2d's input gradient (recorded).
pub(super) fn avg_pool2d(in_shape: &[usize], params: PoolParams, g: &Tensor) -> Result<Tensor> {
    let k = GradKernel::AvgPool2d {
        params,
        in_shape: in_shape.into(),
    };
    grad_kernel(&k, &[g])
}

/// For each element: the product of the other elements over `dims`.
fn prod_others_raw(x: &Tensor, dims: &[usize]) -> Result<Tensor> {
    let nd = x.ndim();
    let mut perm: Vec<usize> = (0..nd).filter(|d| !dims.contains(d)).collect();
    perm.extend_from_slice(dims);
    let moved = x.permute_raw(&perm, false).contiguous_copy()?;
    let keep = nd - dims.len();
    let mut flat: Vec<usize> = moved.shape()[..keep].to_vec();
    flat.push(dims.iter().map(|&d| x.shape()[d]).product());
    let rows = moved.reshape_raw(&flat)?;
    let po = crate::tensor::dtype::with_float!(crate::tensor::dtype::float_for(x.dtype()), T => {
        rows.along_dim(
            flat.len() - 1,
            crate::tensor::kernels::reduce::prod_others_row::<T>,
        )?
    });
    let back = po.reshape_raw(moved.shape())?;
    let mut inv = vec![0; nd];
    for (i, &p) in perm.iter().enumerate() {
        inv[p] = i;
    }
    back.permute_raw(&inv, false).contiguous_copy()
}
