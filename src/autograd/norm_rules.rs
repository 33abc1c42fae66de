//! The gradient rules of the fused normalisations (`tensor::norm`): eager runs the
//! fused backward kernel with the saved mean and rstd; a capture records it as
//! `GradKernel::BatchNorm` / `LayerNorm` / `GroupNorm` nodes (the input gradient, and the `[2, *]`
//! weight and bias gradients narrowed apart), which recompute the statistics from the
//! saved input; a create-graph sweep runs the same formulas as differentiable tensor
//! ops.

use super::node::Saved;
use crate::error::Result;
use crate::ir::grad_kernel::NormPart;
use crate::ir::record as trace;
use crate::ir::{GradKernel, IrOp};
use crate::optable::UnaryOp;
use crate::tensor::group_norm::group_norm_grads;
use crate::tensor::norm::{batch_norm_grads, layer_norm_grads};
use crate::tensor::Tensor;

/// What batch_norm's node keeps: x, the weight, whether a bias is an operand (and
/// needs a gradient), the running statistics an eval-mode forward read, and the
/// per-channel mean and rstd it normalised with.
pub struct BatchNormSaved {
    pub x: Saved,
    pub w: Option<Saved>,
    pub bias: Option<bool>,
    pub running: Option<(Saved, Saved)>,
    pub mean: Tensor,
    pub rstd: Tensor,
    pub eps: f64,
}

/// What layer_norm's node keeps (over the last `dims` dims of x; mean and rstd per row).
pub struct LayerNormSaved {
    pub x: Saved,
    pub w: Option<Saved>,
    pub bias: Option<bool>,
    pub mean: Tensor,
    pub rstd: Tensor,
    pub dims: usize,
    pub eps: f64,
}

/// What group_norm's node keeps (x `[N, C, *]` in `groups` groups; mean and rstd per
/// (sample, group), `[N, groups]`).
pub struct GroupNormSaved {
    pub x: Saved,
    pub w: Option<Saved>,
    pub bias: Option<bool>,
    pub mean: Tensor,
    pub rstd: Tensor,
    pub groups: usize,
    pub eps: f64,
}

type Grads3 = (Option<Tensor>, Option<Tensor>, Option<Tensor>);

/// Which of (input, weight, bias) gradients a norm node must give, and whether it has a
/// weight and a bias.
fn needs(x: &Saved, w: &Option<Saved>, bias: Option<bool>) -> ((bool, bool, bool), bool, bool) {
    let need_w = w.as_ref().is_some_and(Saved::needs_grad);
    let need = (x.needs_grad(), need_w, bias == Some(true));
    (need, w.is_some(), bias.is_some())
}

/// Whether a capture records, and `need` with both parameter parts when it does and
/// either is needed (the recorded parameter kernel gives the two together).
fn widen_for_capture(mut need: (bool, bool, bool)) -> (bool, (bool, bool, bool)) {
    let capture = trace::active();
    if capture && (need.1 || need.2) {
        (need.1, need.2) = (true, true);
    }
    (capture, need)
}

/// The rule's result in edge order: x, then weight and bias when they are operands.
fn edges(has_w: bool, has_b: bool, (dx, dw, db): Grads3) -> Vec<Option<Tensor>> {
    let mut out = vec![dx];
    if has_w {
        out.push(dw);
    }
    if has_b {
        out.push(db);
    }
    out
}

/// Records a capture's gradients: dx as one `kernel(Input)` node, dw and db as one
/// `kernel(Params)` node of shape `[2, *shape]` and a narrow + reshape each.
fn record(
    (dx, dw, db): Grads3,
    args: &[&Tensor],
    kernel: impl Fn(NormPart) -> GradKernel,
    shape: &[usize],
) -> Result<Grads3> {
    if let Some(dx) = &dx {
        trace::record_after(|| IrOp::GradKernel(kernel(NormPart::Input)), args, dx);
    }
    let (Some(w), Some(b)) = (&dw, &db) else {
        return Ok((dx, dw, db));
    };
    let p = trace::paused(|| crate::tensor::views::stack(&[w.clone(), b.clone()], 0))?;
    trace::record_after(|| IrOp::GradKernel(kernel(NormPart::Params)), args, &p);
    let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    let row = |i: i64| p.narrow(0, i, 1)?.reshape(&dims);
    Ok((dx, Some(row(0)?), Some(row(1)?)))
}

impl super::KernelGrad for BatchNormSaved {
    fn grads(&self, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let (need, has_w, has_b) = needs(&self.x, &self.w, self.bias);
        if super::create::applying().is_some() {
            return Ok(edges(has_w, has_b, self.composite(g, need)?));
        }
        let (x, w) = (self.x.get()?, self.w.as_ref().map(Saved::get).transpose()?);
        let running = match &self.running {
            Some((m, v)) => Some((m.get()?, v.get()?)),
            None => None,
        };
        let (capture, need) = widen_for_capture(need);
        let training = running.is_none();
        let stats = (&self.mean, &self.rstd);
        let gs = trace::paused(|| batch_norm_grads(&x, w.as_ref(), stats, training, g, need))?;
        if !capture {
            return Ok(edges(has_w, has_b, gs));
        }
        let mut args = vec![&x];
        if let Some((m, v)) = &running {
            args.extend([m, v]);
        }
        args.extend(w.as_ref());
        args.push(g);
        let kernel = |part| GradKernel::BatchNorm {
            part,
            training,
            eps: self.eps,
            weight: has_w,
        };
        let c = [x.shape()[1]];
        Ok(edges(has_w, has_b, record(gs, &args, kernel, &c)?))
    }
}

impl BatchNormSaved {
    /// The rule as differentiable tensor ops (create_graph).
    fn composite(&self, g: &Tensor, need: (bool, bool, bool)) -> Result<Grads3> {
        let x = self.x.get()?;
        let nd = x.ndim();
        let dims: Vec<i64> = (0..nd as i64).filter(|&d| d != 1).collect();
        let mut cs = vec![1i64; nd];
        cs[1] = x.shape()[1] as i64;
        let (mean, rstd) = match &self.running {
            Some((m, v)) => (
                m.get()?.reshape(&cs)?,
                v.get()?.add_s(self.eps)?.un(UnaryOp::Rsqrt)?.reshape(&cs)?,
            ),
            None => {
                let mu = x.mean(&dims, true)?;
                let d = x.sub(&mu)?;
                let var = d.mul(&d)?.mean(&dims, true)?;
                (mu, var.add_s(self.eps)?.un(UnaryOp::Rsqrt)?)
            }
        };
        let xhat = x.sub(&mean)?.mul(&rstd)?;
        let dxhat = match &self.w {
            Some(w) => g.mul(&w.get()?.reshape(&cs)?)?,
            None => g.clone(),
        };
        let dx = if !need.0 {
            None
        } else if self.running.is_some() {
            Some(dxhat.mul(&rstd)?)
        } else {
            Some(centred(&dxhat, &xhat, &rstd, &dims)?)
        };
        let dw = need
            .1
            .then(|| g.mul(&xhat)?.sum(&dims, false))
            .transpose()?;
        let db = need.2.then(|| g.sum(&dims, false)).transpose()?;
        Ok((dx, dw, db))
    }
}

/// `rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))` over `dims`.
fn centred(dxhat: &Tensor, xhat: &Tensor, rstd: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let a = dxhat.mean(dims, true)?;
    let b = dxhat.mul(xhat)?.mean(dims, true)?;
    dxhat.sub(&a)?.sub(&xhat.mul(&b)?)?.mul(rstd)
}

impl super::KernelGrad for LayerNormSaved {
    fn grads(&self, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let (need, has_w, has_b) = needs(&self.x, &self.w, self.bias);
        if super::create::applying().is_some() {
            return Ok(edges(has_w, has_b, self.composite(g, need)?));
        }
        let (x, w) = (self.x.get()?, self.w.as_ref().map(Saved::get).transpose()?);
        let (capture, need) = widen_for_capture(need);
        let stats = (&self.mean, &self.rstd);
        let gs = trace::paused(|| layer_norm_grads(&x, self.dims, w.as_ref(), stats, g, need))?;
        if !capture {
            return Ok(edges(has_w, has_b, gs));
        }
        let mut args = vec![&x];
        args.extend(w.as_ref());
        args.push(g);
        let kernel = |part| GradKernel::LayerNorm {
            part,
            dims: self.dims,
            eps: self.eps,
            weight: has_w,
        };
        let shape = x.shape()[x.ndim() - self.dims..].to_vec();
        Ok(edges(has_w, has_b, record(gs, &args, kernel, &shape)?))
    }
}

impl LayerNormSaved {
    /// The rule as differentiable tensor ops (create_graph).
    fn composite(&self, g: &Tensor, need: (bool, bool, bool)) -> Result<Grads3> {
        let x = self.x.get()?;
        let nd = x.ndim() as i64;
        let k = self.dims as i64;
        let dims: Vec<i64> = (nd - k..nd).collect();
        let lead: Vec<i64> = (0..nd - k).collect();
        let mu = x.mean(&dims, true)?;
        let d = x.sub(&mu)?;
        let rstd = d
            .mul(&d)?
            .mean(&dims, true)?
            .add_s(self.eps)?
            .un(UnaryOp::Rsqrt)?;
        let xhat = d.mul(&rstd)?;
        let dxhat = match &self.w {
            Some(w) => g.mul(&w.get()?)?,
            None => g.clone(),
        };
        let dx = need
            .0
            .then(|| centred(&dxhat, &xhat, &rstd, &dims))
            .transpose()?;
        let lead_sum = |t: Tensor| {
            if lead.is_empty() {
                Ok(t)
            } else {
                t.sum(&lead, false)
            }
        };
        let dw = need.1.then(|| lead_sum(g.mul(&xhat)?)).transpose()?;
        let db = need.2.then(|| lead_sum(g.clone())).transpose()?;
        Ok((dx, dw, db))
    }
}

impl super::KernelGrad for GroupNormSaved {
    fn grads(&self, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let (need, has_w, has_b) = needs(&self.x, &self.w, self.bias);
        if super::create::applying().is_some() {
            return Ok(edges(has_w, has_b, self.composite(g, need)?));
        }
        let (x, w) = (self.x.get()?, self.w.as_ref().map(Saved::get).transpose()?);
        let (capture, need) = widen_for_capture(need);
        let stats = (&self.mean, &self.rstd);
        let gs = trace::paused(|| group_norm_grads(&x, self.groups, w.as_ref(), stats, g, need))?;
        if !capture {
            return Ok(edges(has_w, has_b, gs));
        }
        let mut args = vec![&x];
        args.extend(w.as_ref());
        args.push(g);
        let kernel = |part| GradKernel::GroupNorm {
            part,
            groups: self.groups,
            eps: self.eps,
            weight: has_w,
        };
        let c = [x.shape()[1]];
        Ok(edges(has_w, has_b, record(gs, &args, kernel, &c)?))
    }
}

impl GroupNormSaved {
    /// The rule as differentiable tensor ops (create_graph): layer norm's over the
    /// `[N, groups, rest]` view, the affine per channel.
    fn composite(&self, g: &Tensor, need: (bool, bool, bool)) -> Result<Grads3> {
        let x = self.x.get()?;
        let shape: Vec<i64> = x.shape().iter().map(|&d| d as i64).collect();
        let (n, c) = (shape[0], shape[1]);
        let groups = self.groups as i64;
        let rest = (x.numel() as i64).checked_div(n * groups).unwrap_or(0);
        let grouped = [n, groups, rest];
        let dims = [2i64];
        let xg = x.reshape(&grouped)?;
        let mu = xg.mean(&dims, true)?;
        let d = xg.sub(&mu)?;
        let rstd = d
            .mul(&d)?
            .mean(&dims, true)?
            .add_s(self.eps)?
            .un(UnaryOp::Rsqrt)?;
        let xhat = d.mul(&rstd)?;
        let mut cs = vec![1i64; shape.len()];
        cs[1] = c;
        let dxhat = match &self.w {
            Some(w) => g.mul(&w.get()?.reshape(&cs)?)?,
            None => g.clone(),
        };
        let dx = need
            .0
            .then(|| centred(&dxhat.reshape(&grouped)?, &xhat, &rstd, &dims)?.reshape(&shape))
            .transpose()?;
        let others: Vec<i64> = (0..shape.len() as i64).filter(|&d| d != 1).collect();
        let dw = need
            .1
            .then(|| g.mul(&xhat.reshape(&shape)?)?.sum(&others, false))
            .transpose()?;
        let db = need.2.then(|| g.sum(&others, false)).transpose()?;
        Ok((dx, dw, db))
    }
}
