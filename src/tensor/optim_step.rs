//! Fused eager optimizer updates: one pass over a parameter and its state for the
//! update stdlib/optim.dl writes as a chain of tensor ops (which allocate a temporary
//! the size of the parameter per op). Each element goes through exactly the f32
//! operations of that chain, in the same order (no fused multiply-add), so the result
//! is bit-for-bit the op chain's.

use super::dtype::DType;
use super::Tensor;
use crate::error::Result;
use std::rc::Rc;

/// Adam's per-step constants, as the op chain rounds them to f32.
#[derive(Clone, Copy)]
pub struct AdamConsts {
    /// `1 - b1`.
    pub c1: f32,
    pub b2: f32,
    /// `1 - b2`.
    pub c2: f32,
    /// `sqrt(1 - b2^t)` (a 0-d tensor in optim.dl).
    pub bc2_sqrt: f32,
    pub eps: f32,
    /// `lr / (1 - b1^t)` (a 0-d tensor in optim.dl).
    pub step_size: f32,
}

/// True when every tensor is a contiguous f32 tensor of `p`'s shape and no two share
/// storage (an update writes `p` and the state while it reads the gradient).
fn distinct_f32(ts: &[&Tensor]) -> bool {
    let Some(p) = ts.first() else {
        return false;
    };
    let fits = ts
        .iter()
        .all(|t| t.dtype() == DType::F32 && t.shape() == p.shape() && t.is_contiguous());
    let apart = ts.iter().enumerate().all(|(i, a)| {
        ts[i + 1..]
            .iter()
            .all(|b| !Rc::ptr_eq(a.storage(), b.storage()))
    });
    fits && apart
}

/// `p -= lr * g` (optim.SGD without momentum or weight decay): `g * lr` rounded, then
/// subtracted. False (nothing written) unless p and g fit [`distinct_f32`].
pub fn sgd_update(p: &Tensor, g: &Tensor, lr: f32) -> Result<bool> {
    if !distinct_f32(&[p, g]) {
        return Ok(false);
    }
    let (Some(mut pd), Some(gd)) = (p.f32_elems_mut(), g.f32_elems()) else {
        return Ok(false);
    };
    super::kernels::elementwise::update(&mut pd, Some(&gd), lr, |x, v| sgd_elem(x, v, lr));
    Ok(true)
}

/// One element of the SGD update: `p - g * lr`, rounded after each operation.
#[inline(always)]
fn sgd_elem(p: f32, g: f32, lr: f32) -> f32 {
    p - g * lr
}

/// The SGD update out of place: `out[i] = p[i] - g[i] * lr` (the same roundings as
/// [`sgd_update`]; over the shortest slice).
pub fn sgd_into(out: &mut [f32], p: &[f32], g: &[f32], lr: f32) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU supports the features the function is compiled for.
        return unsafe { sgd_into_avx2(out, p, g, lr) };
    }
    sgd_into_body(out, p, g, lr)
}

#[inline(always)]
fn sgd_into_body(out: &mut [f32], p: &[f32], g: &[f32], lr: f32) {
    for ((o, &p), &g) in out.iter_mut().zip(p).zip(g) {
        *o = sgd_elem(p, g, lr);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn sgd_into_avx2(out: &mut [f32], p: &[f32], g: &[f32], lr: f32) {
    sgd_into_body(out, p, g, lr)
}

/// optim.Adam's update of one parameter: `m += (g - m) * c1; v *= b2;
/// v += g * c2 * g; p -= m / (sqrt(v) / bc2_sqrt + eps) * step_size`, after AdamW's
/// decoupled weight decay `p *= decay` (`decay` 1 for Adam: `p * 1` is `p`, bit for
/// bit) in the same pass. False (nothing written) unless p, g, m, v fit
/// [`distinct_f32`].
pub fn adam_update(
    p: &Tensor,
    g: &Tensor,
    m: &Tensor,
    v: &Tensor,
    k: AdamConsts,
    decay: f32,
) -> Result<bool> {
    if !distinct_f32(&[p, g, m, v]) {
        return Ok(false);
    }
    let (Some(mut pd), Some(mut md), Some(mut vd), Some(gd)) = (
        p.f32_elems_mut(),
        m.f32_elems_mut(),
        v.f32_elems_mut(),
        g.f32_elems(),
    ) else {
        return Ok(false);
    };
    adam_run(&mut pd, &gd, &mut md, &mut vd, (k, decay));
    Ok(true)
}

/// Adam's constants and the weight-decay factor applied to p first.
type AdamDecay = (AdamConsts, f32);

#[inline(always)]
fn adam_body(p: &mut [f32], g: &[f32], m: &mut [f32], v: &mut [f32], (k, decay): AdamDecay) {
    let state = m.iter_mut().zip(v.iter_mut());
    for ((p, &g), (m, v)) in p.iter_mut().zip(g).zip(state) {
        (*p, *m, *v) = adam_elem(*p * decay, g, *m, *v, &k);
    }
}

/// One element of the Adam update: the new (p, m, v), each operation rounded in the
/// op chain's order.
#[inline(always)]
fn adam_elem(p: f32, g: f32, m: f32, v: f32, k: &AdamConsts) -> (f32, f32, f32) {
    let mi = m + (g - m) * k.c1;
    let vi = v * k.b2 + g * k.c2 * g;
    let denom = vi.sqrt() / k.bc2_sqrt + k.eps;
    (p - mi / denom * k.step_size, mi, vi)
}

/// The old values an out-of-place Adam update reads.
#[derive(Clone, Copy)]
pub struct AdamIn<'a> {
    pub p: &'a [f32],
    pub g: &'a [f32],
    pub m: &'a [f32],
    pub v: &'a [f32],
}

/// The buffers an out-of-place Adam update writes: new p, m and v.
pub struct AdamOut<'a> {
    pub p: &'a mut [f32],
    pub m: &'a mut [f32],
    pub v: &'a mut [f32],
}

/// The Adam update out of place, p first multiplied by the decoupled weight decay
/// `decay` (1 for Adam) (the same roundings as [`adam_update`]; over the shortest
/// slice).
pub fn adam_into(out: AdamOut, x: AdamIn, k: AdamConsts, decay: f32) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU supports the features the function is compiled for.
        return unsafe { adam_into_avx2(out, x, (k, decay)) };
    }
    adam_into_body(out, x, (k, decay))
}

#[inline(always)]
fn adam_into_body(out: AdamOut, x: AdamIn, (k, decay): AdamDecay) {
    let ins = x.p.iter().zip(x.g).zip(x.m.iter().zip(x.v));
    let outs = out.p.iter_mut().zip(out.m.iter_mut().zip(out.v.iter_mut()));
    for (((&p, &g), (&m, &v)), (po, (mo, vo))) in ins.zip(outs) {
        (*po, *mo, *vo) = adam_elem(p * decay, g, m, v, &k);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn adam_into_avx2(out: AdamOut, x: AdamIn, k: AdamDecay) {
    adam_into_body(out, x, k)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn adam_avx2(p: &mut [f32], g: &[f32], m: &mut [f32], v: &mut [f32], k: AdamDecay) {
    adam_body(p, g, m, v, k)
}

fn adam_run(p: &mut [f32], g: &[f32], m: &mut [f32], v: &mut [f32], k: AdamDecay) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU supports the features the function is compiled for.
        return unsafe { adam_avx2(p, g, m, v, k) };
    }
    adam_body(p, g, m, v, k)
}
