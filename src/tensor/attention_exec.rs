//! The captured fused attention at run time (`IrOp::Attention` and its three
//! `GradKernel::Attention` parts). The forward keeps its rows' logsumexp for the
//! backward (keyed by the output tensor); the backward kernel gives dq, dk and dv at
//! once, so the first part to run computes all three and keeps the other two for the
//! nodes that read them (both kept in `parts_memo`).

use super::parts_memo::{self, Whole};
use super::seq::{self, AttnOptions};
use super::{err, Tensor};
use crate::error::{ErrorKind, Result};
use crate::ir::GradKernel;

/// The memo key of the logsumexp a captured forward keeps (by its output).
const LSE: Whole = Whole::Forward("scaled_dot_product_attention");

fn arg<'a>(args: &[&'a Tensor], i: usize) -> Result<&'a Tensor> {
    args.get(i).copied().ok_or_else(|| {
        err(
            ErrorKind::RuntimeError,
            format!("internal error: scaled_dot_product_attention without arg {i}"),
        )
    })
}

fn options<'a>(
    args: &[&'a Tensor],
    causal: bool,
    scale: Option<f64>,
    mask: bool,
) -> Result<AttnOptions<'a>> {
    Ok(AttnOptions {
        mask: if mask { Some(arg(args, 3)?) } else { None },
        dropout_p: 0.0,
        is_causal: causal,
        scale,
    })
}

/// Runs a captured attention (args q, k, v and the mask when `mask`), keeping the
/// rows' logsumexp for its backward.
pub fn forward(args: &[Tensor], causal: bool, scale: Option<f64>, mask: bool) -> Result<Tensor> {
    let args: Vec<&Tensor> = args.iter().collect();
    let o = options(&args, causal, scale, mask)?;
    let (q, k, v, sc) = seq::checked(arg(&args, 0)?, arg(&args, 1)?, arg(&args, 2)?, &o)?;
    let (out, lse) = seq::fused(&q, &k, &v, &o, sc, None)?;
    parts_memo::keep(LSE, &[&out], vec![lse]);
    Ok(out)
}

/// Gradient part of `k` (a `GradKernel::Attention`) from `args` (q, k, v, the mask when
/// present, the forward's output, g): kept from the run that computed the three, else
/// computed (the output's logsumexp from its forward, or the forward run again).
pub fn grad_part(kernel: &GradKernel, args: &[&Tensor]) -> Result<Tensor> {
    let GradKernel::Attention {
        part,
        causal,
        scale,
        mask,
    } = *kernel
    else {
        return Err(err(
            ErrorKind::RuntimeError,
            format!("internal error: {} is not attention's", kernel.name()),
        ));
    };
    let whole = GradKernel::Attention {
        part: 0,
        causal,
        scale,
        mask,
    };
    parts_memo::part_of(Whole::Grad(whole), part, args, || {
        let o = options(args, causal, scale, mask)?;
        let (q, k, v) = (arg(args, 0)?, arg(args, 1)?, arg(args, 2)?);
        let n = 3 + usize::from(mask);
        let (out, g) = (arg(args, n)?, arg(args, n + 1)?);
        let (d, m) = seq::exec_prepared(q, k, v, &o)?;
        let (out, lse) = match parts_memo::take(&LSE, 0, &[out]) {
            Some(lse) => (out.clone(), lse),
            None => {
                let (q, k, v, sc) = seq::checked(q, k, v, &o)?;
                seq::fused(&q, &k, &v, &o, sc, None)?
            }
        };
        seq::raw_grads(g, q, k, v, &m, &d, &out, &lse)
    })
}
