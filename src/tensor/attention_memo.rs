//! The captured fused attention at run time (`IrOp::Attention` and its three
//! `GradKernel::Attention` parts). The forward keeps its rows' logsumexp for the
//! backward (keyed by the output tensor); the backward kernel gives dq, dk and dv at
//! once, so the first part to run computes all three and keeps the other two for the
//! nodes that read them. An entry is keyed by its tensors' identity and version, handed
//! out once, and dropped when taken or when its tensors are freed (entries hold weak
//! handles; a few at most are kept).

use super::hooks::WeakTensor;
use super::seq::{self, AttnOptions};
use super::{err, Tensor};
use crate::error::{ErrorKind, Result};
use crate::ir::GradKernel;
use std::cell::RefCell;

/// The most entries of each kind kept (one per attention call of a graph in flight).
const KEEP: usize = 64;

/// Identity and version of each tensor of a key.
type Key = Vec<(WeakTensor, u64)>;

struct Lse {
    out: Key,
    lse: Tensor,
}

struct Grads {
    kernel: GradKernel,
    args: Key,
    parts: [Option<Tensor>; 3],
}

thread_local! {
    static LSE: RefCell<Vec<Lse>> = const { RefCell::new(Vec::new()) };
    static GRADS: RefCell<Vec<Grads>> = const { RefCell::new(Vec::new()) };
}

fn key(ts: &[&Tensor]) -> Key {
    ts.iter().map(|t| (t.downgrade(), t.version())).collect()
}

/// Whether `k` names exactly `ts` (alive, same identity, unchanged).
fn matches(k: &Key, ts: &[&Tensor]) -> bool {
    k.len() == ts.len()
        && k.iter()
            .zip(ts)
            .all(|((w, v), t)| w.upgrade().is_some_and(|u| u.same(t)) && *v == t.version())
}

fn alive(k: &Key) -> bool {
    k.iter().all(|(w, _)| w.upgrade().is_some())
}

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
    LSE.with(|l| {
        let mut l = l.borrow_mut();
        l.retain(|e| alive(&e.out));
        if l.len() >= KEEP {
            l.remove(0);
        }
        l.push(Lse {
            out: key(&[&out]),
            lse,
        });
    });
    Ok(out)
}

/// The kept logsumexp of the forward that made `out`, taken.
fn take_lse(out: &Tensor) -> Option<Tensor> {
    LSE.with(|l| {
        let mut l = l.borrow_mut();
        let i = l.iter().position(|e| matches(&e.out, &[out]))?;
        Some(l.remove(i).lse)
    })
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
    let kept = GRADS.with(|gs| {
        let mut gs = gs.borrow_mut();
        let i = gs
            .iter()
            .position(|e| e.kernel == whole && matches(&e.args, args))?;
        let t = gs[i].parts.get_mut(part)?.take();
        if gs[i].parts.iter().all(Option::is_none) {
            gs.remove(i);
        }
        t
    });
    if let Some(t) = kept {
        return Ok(t);
    }
    let o = options(args, causal, scale, mask)?;
    let (q, k, v) = (arg(args, 0)?, arg(args, 1)?, arg(args, 2)?);
    let n = 3 + usize::from(mask);
    let (out, g) = (arg(args, n)?, arg(args, n + 1)?);
    let (d, m) = seq::exec_prepared(q, k, v, &o)?;
    let (out, lse) = match take_lse(out) {
        Some(lse) => (out.clone(), lse),
        None => {
            let (q, k, v, sc) = seq::checked(q, k, v, &o)?;
            seq::fused(&q, &k, &v, &o, sc, None)?
        }
    };
    let mut parts = seq::raw_grads(g, q, k, v, &m, &d, &out, &lse)?
        .into_iter()
        .map(Some);
    let mut parts: [Option<Tensor>; 3] = [
        parts.next().flatten(),
        parts.next().flatten(),
        parts.next().flatten(),
    ];
    let t = parts.get_mut(part).and_then(Option::take).ok_or_else(|| {
        err(
            ErrorKind::RuntimeError,
            format!("internal error: no attention gradient part {part}"),
        )
    })?;
    GRADS.with(|gs| {
        let mut gs = gs.borrow_mut();
        gs.retain(|e| alive(&e.args));
        if gs.len() >= KEEP {
            gs.remove(0);
        }
        gs.push(Grads {
            kernel: whole,
            args: key(args),
            parts,
        });
    });
    Ok(t)
}
