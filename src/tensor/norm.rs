//! `batch_norm` and `layer_norm` as primitive ops (`_batch_norm` / `_layer_norm`, which
//! nn.functional calls): shape checks, the fused kernels of kernels/norm.rs, one
//! autograd node each (`NativeBatchNormBackward0`, `NativeLayerNormBackward0`) saving
//! the mean and rstd, and their capture: one IR node for the output, and in training
//! the running statistics' update recorded as in-place effects on the buffers
//! (`IrOp::BatchNormRunning`, its unbiased factor `n / (n - 1)` taken from the batch
//! when it runs).

use super::dtype::{with_float, DType, Real};
use super::kernels::conv::ConvFloat;
use super::kernels::matmul::GemmFloat;
use super::kernels::norm::{self as kn, Bn, Ln};
use super::linalg::{kernel_dtype, with_elems};
use super::shape::fmt_shape;
use super::Elem;
use super::{err, Tensor};
use crate::autograd::norm_rules::{BatchNormSaved, LayerNormSaved};
use crate::autograd::{self, BackwardOp, More, OpSaved, Saved};
use crate::error::{ErrorKind, Result};
use crate::ir::record as trace;
use crate::ir::record_op::record_op;
use crate::ir::IrOp;

/// batch_norm's operands and options besides the input.
#[derive(Clone, Copy)]
pub struct BatchNormArgs<'a> {
    /// (running_mean, running_var) buffers, when kept.
    pub running: Option<(&'a Tensor, &'a Tensor)>,
    pub weight: Option<&'a Tensor>,
    pub bias: Option<&'a Tensor>,
    /// Batch statistics (and moving the running ones), else the running ones.
    pub training: bool,
    pub momentum: f64,
    pub eps: f64,
}

/// The `[n, c, l]` view of a batch-norm input `[N, C, *]`.
fn bn_geom(shape: &[usize]) -> Bn {
    Bn {
        n: shape.first().copied().unwrap_or(0),
        c: shape.get(1).copied().unwrap_or(0),
        l: shape.iter().skip(2).product(),
    }
}

/// Checks a per-channel operand's size (PyTorch's message).
pub(super) fn per_channel(name: &str, t: Option<&Tensor>, c: usize) -> Result<()> {
    match t {
        Some(t) if t.numel() != c => Err(err(
            ErrorKind::RuntimeError,
            format!("{name} should contain {c} elements not {}", t.numel()),
        )),
        _ => Ok(()),
    }
}

fn check_bn(x: &Tensor, a: &BatchNormArgs) -> Result<Bn> {
    if x.ndim() < 2 {
        return Err(err(
            ErrorKind::ValueError,
            format!(
                "batch_norm: expected an input with at least 2 dims (got {}D input)",
                x.ndim()
            ),
        ));
    }
    let g = bn_geom(x.shape());
    let (rm, rv) = (a.running.map(|r| r.0), a.running.map(|r| r.1));
    per_channel("running_mean", rm, g.c)?;
    per_channel("running_var", rv, g.c)?;
    per_channel("weight", a.weight, g.c)?;
    per_channel("bias", a.bias, g.c)?;
    if a.training && g.n * g.l <= 1 {
        let dims: Vec<String> = x.shape().iter().map(usize::to_string).collect();
        return Err(err(
            ErrorKind::ValueError,
            format!(
                "Expected more than 1 value per channel when training, got input size torch.Size([{}])",
                dims.join(", ")
            ),
        ));
    }
    if !a.training && a.running.is_none() {
        return Err(err(
            ErrorKind::RuntimeError,
            "batch_norm: running_mean and running_var are needed when not training",
        ));
    }
    Ok(g)
}

/// `batch_norm(x [N, C, *], ...)`: normalised by the batch's mean and biased variance
/// (training; the running statistics, when kept, move by `momentum` towards the mean
/// and the unbiased variance) or by the running statistics.
pub fn batch_norm(x: &Tensor, a: &BatchNormArgs) -> Result<Tensor> {
    let g = check_bn(x, a)?;
    let moving = a.training && a.running.is_some();
    if moving {
        trace::refuse_effect("an in-place op")?;
    }
    let mut args = vec![x];
    if !a.training {
        if let Some((rm, rv)) = a.running {
            args.extend([rm, rv]);
        }
    }
    args.extend(a.weight);
    args.extend(a.bias);
    let ir = |_: &Tensor| IrOp::BatchNorm {
        training: a.training,
        eps: a.eps,
        weight: a.weight.is_some(),
        bias: a.bias.is_some(),
    };
    let y = record_op(&args, ir, || bn_eager(x, g, a))?;
    if let (true, Some((rm, rv))) = (moving, a.running) {
        for (t, var) in [(rm, false), (rv, true)] {
            let op = IrOp::BatchNormRunning {
                momentum: a.momentum,
                var,
            };
            trace::record_inplace(op, &[t, x], t, "batch_norm");
        }
    }
    Ok(y)
}

/// Per channel `(mean, rstd)` in the kernel dtype from the batch's f64 statistics.
fn batch_moments<T: ConvFloat>(mean: &[f64], var: &[f64], eps: f64) -> (Vec<T>, Vec<T>) {
    let m = mean.iter().map(|&v| T::from_f64(v)).collect();
    let r = var
        .iter()
        .map(|&v| T::from_f64(1.0 / (v + eps).sqrt()))
        .collect();
    (m, r)
}

/// Per channel `(mean, rstd)` of the running statistics.
fn running_moments<T: ConvFloat>(rm: &Tensor, rv: &Tensor, eps: f64) -> Result<(Vec<T>, Vec<T>)> {
    let m = rm.cast(T::DTYPE)?.to_vec::<T>()?;
    let v = rv.cast(DType::F64)?.to_vec::<f64>()?;
    Ok((m, batch_moments::<T>(&[], &v, eps).1))
}

/// `(1 - momentum) * old + momentum * stat`, in f64 (PyTorch's), in old's dtype.
fn running_new(old: &Tensor, stat: &[f64], momentum: f64) -> Result<Tensor> {
    let o = old.cast(DType::F64)?.to_vec::<f64>()?;
    let v: Vec<f64> = o
        .iter()
        .zip(stat)
        .map(|(&r, &s)| momentum * s + (1.0 - momentum) * r)
        .collect();
    Tensor::from_vec(v, old.shape()).cast(old.dtype())
}

/// The statistic a running buffer moves towards: the mean, or the unbiased variance.
fn running_stat(mean: &[f64], var: &[f64], count: usize, unbiased: bool) -> Vec<f64> {
    if !unbiased {
        return mean.to_vec();
    }
    let f = count as f64 / (count as f64 - 1.0);
    var.iter().map(|v| v * f).collect()
}

/// The new value of a running buffer `old` after a training batch `x` (the executor of
/// `IrOp::BatchNormRunning`).
pub fn batch_norm_running(old: &Tensor, x: &Tensor, momentum: f64, var: bool) -> Result<Tensor> {
    running_check(old, x.shape())?;
    let g = bn_geom(x.shape());
    let dt = kernel_dtype("batch_norm", &[x])?;
    let (mean, v) = with_float!(dt, T => with_elems::<T, _>(&[x], |s| kn::bn_stats(s[0], g))?);
    let stat = running_stat(&mean, &v, g.n * g.l, var);
    running_new(old, &stat, momentum)
}

/// `batch_norm_running` from the statistics a training forward of `x` (of shape
/// `x_shape`) computed (`BnStats::batch`) rather than from x again.
pub fn batch_norm_running_of(
    old: &Tensor,
    x_shape: &[usize],
    batch: &(Vec<f64>, Vec<f64>),
    momentum: f64,
    var: bool,
) -> Result<Tensor> {
    running_check(old, x_shape)?;
    let g = bn_geom(x_shape);
    let stat = running_stat(&batch.0, &batch.1, g.n * g.l, var);
    running_new(old, &stat, momentum)
}

/// A running statistic's update needs one value per channel of an input `[N, C, *]`
/// with more than one value per channel.
fn running_check(old: &Tensor, x_shape: &[usize]) -> Result<()> {
    let g = bn_geom(x_shape);
    if x_shape.len() < 2 || old.numel() != g.c || g.n * g.l <= 1 {
        return Err(err(
            ErrorKind::ShapeError,
            format!(
                "batch_norm: running statistic {} for input {}",
                fmt_shape(old.shape()),
                fmt_shape(x_shape)
            ),
        ));
    }
    Ok(())
}

fn bn_eager(x: &Tensor, g: Bn, a: &BatchNormArgs) -> Result<Tensor> {
    let mut ts = vec![x];
    ts.extend(a.weight);
    ts.extend(a.bias);
    let (y, stats) = bn_forward(x, g, a)?;
    if let (true, Some((rm, rv)), Some((m, v))) = (a.training, a.running, &stats.batch) {
        let n = g.n * g.l;
        let new_m = running_new(rm, m, a.momentum)?;
        let new_v = running_new(rv, &running_stat(m, v, n, true), a.momentum)?;
        rm.overwrite(&new_m)?;
        rv.overwrite(&new_v)?;
    }
    if autograd::needs_grad(&ts) {
        let running = match (a.training, a.running) {
            (false, Some((rm, rv))) => Some((Saved::new(rm), Saved::new(rv))),
            _ => None,
        };
        let node = BatchNormSaved {
            x: Saved::new(x),
            w: a.weight.map(Saved::new),
            bias: a.bias.map(Tensor::requires_grad),
            running,
            mean: stats.mean,
            rstd: stats.rstd,
            eps: a.eps,
        };
        let op = IrOp::BatchNorm {
            training: a.training,
            eps: a.eps,
            weight: a.weight.is_some(),
            bias: a.bias.is_some(),
        };
        let saved = OpSaved {
            more: More::Kernel(Box::new(node)),
            ..OpSaved::default()
        };
        autograd::record(&y, BackwardOp::Op { op, saved }, &ts);
    }
    Ok(y)
}

/// A batch_norm forward's per-channel statistics: the mean and rstd it normalised
/// with (in the kernel dtype, `[C]`) and, from a batch, its f64 mean and biased
/// variance.
pub struct BnStats {
    pub mean: Tensor,
    pub rstd: Tensor,
    pub batch: Option<(Vec<f64>, Vec<f64>)>,
}

/// batch_norm's output and statistics, neither recorded nor moving a running
/// statistic: eager's kernel, and the compiled runtime's where the graph's running
/// updates and gradients reuse the statistics.
pub fn batch_norm_stats(x: &Tensor, a: &BatchNormArgs) -> Result<(Tensor, BnStats)> {
    let g = check_bn(x, a)?;
    bn_forward(x, g, a)
}

fn bn_forward(x: &Tensor, g: Bn, a: &BatchNormArgs) -> Result<(Tensor, BnStats)> {
    let mut ts = vec![x];
    ts.extend(a.weight);
    ts.extend(a.bias);
    let dt = kernel_dtype("batch_norm", &ts)?;
    with_float!(dt, T => {
        let (mean, rstd, batch): (Vec<T>, Vec<T>, _) = match (a.training, a.running) {
            (false, Some((rm, rv))) => {
                let (m, r) = running_moments(rm, rv, a.eps)?;
                (m, r, None)
            }
            _ => {
                let (m, v) = with_elems::<T, _>(&[x], |s| kn::bn_stats(s[0], g))?;
                let (mt, r) = batch_moments::<T>(&m, &v, a.eps);
                (mt, r, Some((m, v)))
            }
        };
        let w = param_vec::<T>(a.weight, g.c, 1.0)?;
        let b = param_vec::<T>(a.bias, g.c, 0.0)?;
        let coef: Vec<[T; 4]> = (0..g.c)
            .map(|c| [mean[c], rstd[c] * w[c], b[c], T::ZERO])
            .collect();
        let y = with_elems::<T, _>(&[x], |s| {
            kn::bn_map(s[0], s[0], g, &coef, |v, _, k| (v - k[0]) * k[1] + k[2])
        })?;
        let stats = BnStats {
            mean: Tensor::from_vec(mean, &[g.c]),
            rstd: Tensor::from_vec(rstd, &[g.c]),
            batch,
        };
        Ok((Tensor::from_vec(y, x.shape()), stats))
    })
}

/// A weight or bias as `n` elements of T (`fill` when absent).
fn param_vec<T: ConvFloat>(t: Option<&Tensor>, n: usize, fill: f64) -> Result<Vec<T>> {
    match t {
        Some(t) => t.cast(T::DTYPE)?.to_vec::<T>(),
        None => Ok(vec![T::from_f64(fill); n]),
    }
}

/// batch_norm's gradients (dx, dweight, dbias), each when `need` asks for it, from the
/// per-channel mean and rstd the forward used (`training`: batch statistics, whose
/// dependence on x enters dx).
pub fn batch_norm_grads(
    x: &Tensor,
    w: Option<&Tensor>,
    stats: (&Tensor, &Tensor),
    training: bool,
    g: &Tensor,
    need: (bool, bool, bool),
) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
    let geo = bn_geom(x.shape());
    if g.shape() != x.shape() {
        return Err(err(
            ErrorKind::ShapeError,
            format!(
                "batch_norm backward: gradient of shape {}, expected {}",
                fmt_shape(g.shape()),
                fmt_shape(x.shape())
            ),
        ));
    }
    let dt = kernel_dtype("batch_norm", &[x, g])?;
    with_float!(dt, T => {
        let mean = stats.0.cast(T::DTYPE)?.to_vec::<T>()?;
        let rstd = stats.1.cast(T::DTYPE)?.to_vec::<T>()?;
        let w = param_vec::<T>(w, geo.c, 1.0)?;
        let cnt = (geo.n * geo.l) as f64;
        // one borrow (or one contiguous copy) of x and g for both passes
        let (sg, dot, dx) = with_elems::<T, _>(&[x, g], |s| {
            let (sg, dot) = kn::bn_grad_sums(s[0], s[1], geo, &mean)?;
            if !need.0 {
                return Ok((sg, dot, None));
            }
            let coef: Vec<[T; 4]> = (0..geo.c)
                .map(|c| {
                    let r = rstd[c].to_f64();
                    let kk = T::from_f64(dot[c] * r * r / cnt);
                    [mean[c], kk, T::from_f64(sg[c] / cnt), rstd[c] * w[c]]
                })
                .collect();
            let v = if training {
                kn::bn_map(s[0], s[1], geo, &coef, |v, d, k| (d - k[2] - (v - k[0]) * k[1]) * k[3])
            } else {
                kn::bn_map(s[0], s[1], geo, &coef, |_, d, k| d * k[3])
            }?;
            Ok((sg, dot, Some(Tensor::from_vec(v, x.shape()))))
        })?;
        let dw: Vec<T> = (0..geo.c).map(|c| T::from_f64(dot[c] * rstd[c].to_f64())).collect();
        let db: Vec<T> = sg.iter().map(|&v| T::from_f64(v)).collect();
        Ok((
            dx,
            need.1.then(|| Tensor::from_vec(dw, &[geo.c])),
            need.2.then(|| Tensor::from_vec(db, &[geo.c])),
        ))
    })
}

/// The per-channel (mean, rstd) a batch_norm forward used: the batch's (`training`) or
/// the running statistics' (the executor of batch_norm's gradient kernels).
pub fn batch_norm_moments(
    x: &Tensor,
    running: Option<(&Tensor, &Tensor)>,
    eps: f64,
) -> Result<(Tensor, Tensor)> {
    let g = bn_geom(x.shape());
    let dt = kernel_dtype("batch_norm", &[x])?;
    with_float!(dt, T => {
        let (m, r) = match running {
            Some((rm, rv)) => running_moments::<T>(rm, rv, eps)?,
            None => {
                let (m, v) = with_elems::<T, _>(&[x], |s| kn::bn_stats(s[0], g))?;
                batch_moments::<T>(&m, &v, eps)
            }
        };
        Ok((Tensor::from_vec(m, &[g.c]), Tensor::from_vec(r, &[g.c])))
    })
}

/// The `[rows, m]` view of a layer-norm input over its last `dims` dims.
fn ln_geom(x: &Tensor, dims: usize) -> Ln {
    let m: usize = x.shape()[x.ndim().saturating_sub(dims)..].iter().product();
    Ln {
        rows: x.numel().checked_div(m).unwrap_or(0),
        m,
    }
}

fn check_ln(x: &Tensor, dims: usize, w: Option<&Tensor>, b: Option<&Tensor>) -> Result<Ln> {
    let norm = &x.shape()[x.ndim().saturating_sub(dims)..];
    let bad = |t: Option<&Tensor>| t.is_some_and(|t| t.shape() != norm);
    if dims == 0 || dims > x.ndim() || bad(w) || bad(b) {
        return Err(err(
            ErrorKind::RuntimeError,
            format!(
                "layer_norm: input {} does not end in the shape of weight/bias over {dims} dims",
                fmt_shape(x.shape())
            ),
        ));
    }
    Ok(ln_geom(x, dims))
}

/// `layer_norm(x)` over its last `dims` dims, with optional elementwise weight and bias
/// of that shape.
pub fn layer_norm(
    x: &Tensor,
    dims: usize,
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    eps: f64,
) -> Result<Tensor> {
    let g = check_ln(x, dims, w, b)?;
    let mut args = vec![x];
    args.extend(w);
    args.extend(b);
    let ir = |_: &Tensor| IrOp::LayerNorm {
        dims,
        eps,
        weight: w.is_some(),
        bias: b.is_some(),
    };
    record_op(&args, ir, || ln_eager(x, g, (w, b), dims, eps))
}

fn ln_eager(
    x: &Tensor,
    g: Ln,
    (w, b): (Option<&Tensor>, Option<&Tensor>),
    dims: usize,
    eps: f64,
) -> Result<Tensor> {
    let mut ts = vec![x];
    ts.extend(w);
    ts.extend(b);
    let dt = kernel_dtype("layer_norm", &ts)?;
    let (y, mean, rstd) = with_float!(dt, T => {
        let wv = w.map(|t| t.cast(T::DTYPE)?.to_vec::<T>()).transpose()?;
        let bv = b.map(|t| t.cast(T::DTYPE)?.to_vec::<T>()).transpose()?;
        let (y, m, r) = with_elems::<T, _>(&[x], |s| {
            kn::ln_forward(s[0], g, wv.as_deref(), bv.as_deref(), eps)
        })?;
        let rows = &x.shape()[..x.ndim() - dims];
        (
            Tensor::from_vec(y, x.shape()),
            Tensor::from_vec(m, rows),
            Tensor::from_vec(r, rows),
        )
    });
    if autograd::needs_grad(&ts) {
        let node = LayerNormSaved {
            x: Saved::new(x),
            w: w.map(Saved::new),
            bias: b.map(Tensor::requires_grad),
            mean,
            rstd,
            dims,
            eps,
        };
        let op = IrOp::LayerNorm {
            dims,
            eps,
            weight: w.is_some(),
            bias: b.is_some(),
        };
        let saved = OpSaved {
            more: More::Kernel(Box::new(node)),
            ..OpSaved::default()
        };
        autograd::record(&y, BackwardOp::Op { op, saved }, &ts);
    }
    Ok(y)
}

/// layer_norm's gradients (dx, dweight, dbias), each when `need` asks for it, from the
/// rows' mean and rstd.
pub fn layer_norm_grads(
    x: &Tensor,
    dims: usize,
    w: Option<&Tensor>,
    stats: (&Tensor, &Tensor),
    g: &Tensor,
    need: (bool, bool, bool),
) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
    if g.shape() != x.shape() || dims == 0 || dims > x.ndim() {
        return Err(err(
            ErrorKind::ShapeError,
            format!(
                "layer_norm backward: gradient of shape {}, expected {}",
                fmt_shape(g.shape()),
                fmt_shape(x.shape())
            ),
        ));
    }
    let geo = ln_geom(x, dims);
    let norm = &x.shape()[x.ndim() - dims..];
    let dt = kernel_dtype("layer_norm", &[x, g])?;
    with_float!(dt, T => {
        let mean = stats.0.cast(T::DTYPE)?.to_vec::<T>()?;
        let rstd = stats.1.cast(T::DTYPE)?.to_vec::<T>()?;
        let wv = w.map(|t| t.cast(T::DTYPE)?.to_vec::<T>()).transpose()?;
        let (dx, dw, db) = with_elems::<T, _>(&[x, g], |s| {
            kn::ln_backward(s[0], s[1], geo, wv.as_deref(), (&mean, &rstd), need)
        })?;
        Ok((
            dx.map(|v| Tensor::from_vec(v, x.shape())),
            dw.map(|v| Tensor::from_vec(v, norm)),
            db.map(|v| Tensor::from_vec(v, norm)),
        ))
    })
}

/// The rows' (mean, rstd) a layer_norm forward used (the executor of layer_norm's
/// gradient kernels).
pub fn layer_norm_moments(x: &Tensor, dims: usize, eps: f64) -> Result<(Tensor, Tensor)> {
    let g = ln_geom(x, dims);
    let rows = &x.shape()[..x.ndim().saturating_sub(dims)];
    let dt = kernel_dtype("layer_norm", &[x])?;
    with_float!(dt, T => {
        let (m, r) = with_elems::<T, _>(&[x], |s| kn::ln_stats(s[0], g, eps))?;
        Ok((Tensor::from_vec(m, rows), Tensor::from_vec(r, rows)))
    })
}
