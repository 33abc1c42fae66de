//! Fused group-norm kernels on contiguous float32/float64 data `[n, c, l]` whose `c`
//! channels form `groups` groups of consecutive channels: each (sample, group) is one
//! row of `c / groups * l` values normalised by its mean and biased variance (f64, two
//! passes, PyTorch's CPU accumulation type), then scaled and shifted per channel. A
//! forward is one pass per row after its statistics; a backward one pass of per-plane
//! sums and one of the input gradient per row, the per-channel weight and bias sums kept
//! per part (f64, added in part order; the parts are fixed by the sizes alone). The f64
//! sums run in eight accumulators (element k in accumulator k % 8).

use super::conv::{blocks, lock, run_parts, ConvFloat};
use super::norm::{fold8, merge_partials, param_partials, row_moments, split, NormGrads};
use super::simd;
use crate::error::{ErrorKind, Result};
use crate::tensor::storage::alloc_filled;
use std::ops::Range;

/// A group-norm input viewed as `[n, c, l]` in `groups` groups (`groups` > 0 divides c).
#[derive(Debug, Clone, Copy)]
pub struct Gn {
    pub n: usize,
    pub c: usize,
    pub groups: usize,
    pub l: usize,
}

impl Gn {
    /// The number of (sample, group) rows.
    pub fn rows(&self) -> usize {
        self.n * self.groups
    }

    /// Channels per group.
    fn per_group(&self) -> usize {
        self.c / self.groups.max(1)
    }

    /// Values per row.
    pub fn m(&self) -> usize {
        self.per_group() * self.l
    }

    /// The first channel of row `row`.
    fn first_channel(&self, row: usize) -> usize {
        (row % self.groups.max(1)) * self.per_group()
    }
}

/// `(sum g, sum g * xhat)` over one plane in f64, `xhat = (x - mu) * rs` rounded to T.
#[inline(always)]
fn plane_sums<T: ConvFloat>(x: &[T], go: &[T], (mu, rs): (T, T)) -> (f64, f64) {
    let (mut sg, mut sh) = ([0f64; 8], [0f64; 8]);
    let (mut xc, mut gc) = (x.chunks_exact(8), go.chunks_exact(8));
    for (xq, gq) in (&mut xc).zip(&mut gc) {
        for k in 0..8 {
            let d = gq[k].to_f64();
            sg[k] += d;
            sh[k] += d * ((xq[k] - mu) * rs).to_f64();
        }
    }
    let (mut tg, mut th) = (0f64, 0f64);
    for (&v, &d) in xc.remainder().iter().zip(gc.remainder()) {
        let d = d.to_f64();
        tg += d;
        th += d * ((v - mu) * rs).to_f64();
    }
    (fold8(&sg) + tg, fold8(&sh) + th)
}

/// Per (sample, group) row: the mean and rstd of the forward.
pub fn gn_stats<T: ConvFloat>(x: &[T], g: Gn, eps: f64) -> Result<(Vec<T>, Vec<T>)> {
    let (rows, m) = (g.rows(), g.m());
    let mut mean = alloc_filled(rows, T::ZERO)?;
    let mut rstd = alloc_filled(rows, T::ZERO)?;
    if rows == 0 || m == 0 {
        return Ok((mean, rstd));
    }
    let (parts, per) = split(rows, m);
    let (mb, rb) = (blocks(&mut mean, per), blocks(&mut rstd, per));
    run_parts(parts, &|t| {
        let (mut mv, mut rv) = (lock(&mb[t])?, lock(&rb[t])?);
        simd::run(
            #[inline(always)]
            || {
                for (i, (m0, r0)) in mv.iter_mut().zip(rv.iter_mut()).enumerate() {
                    let row = t * per + i;
                    (*m0, *r0) = row_moments(&x[row * m..(row + 1) * m], eps);
                }
            },
        );
        Ok(())
    })?;
    drop((mb, rb));
    Ok((mean, rstd))
}

/// `y = (x - mu) * rs * w + b` over one plane (w, b: the plane's channel's, when given),
/// rounded step by step as layer norm's output times the weight plus the bias.
#[inline(always)]
fn affine<T: ConvFloat>(y: &mut [T], x: &[T], (mu, rs): (T, T), w: Option<T>, b: Option<T>) {
    let it = y.iter_mut().zip(x);
    match (w, b) {
        (Some(w), Some(b)) => it.for_each(|(o, &v)| *o = (v - mu) * rs * w + b),
        (Some(w), None) => it.for_each(|(o, &v)| *o = (v - mu) * rs * w),
        (None, Some(b)) => it.for_each(|(o, &v)| *o = (v - mu) * rs + b),
        (None, None) => it.for_each(|(o, &v)| *o = (v - mu) * rs),
    }
}

/// Group norm forward: the output and the rows' mean and rstd.
pub fn gn_forward<T: ConvFloat>(
    x: &[T],
    g: Gn,
    w: Option<&[T]>,
    b: Option<&[T]>,
    eps: f64,
) -> Result<(Vec<T>, Vec<T>, Vec<T>)> {
    let (rows, m) = (g.rows(), g.m());
    let mut y = alloc_filled(rows * m, T::ZERO)?;
    let mut mean = alloc_filled(rows, T::ZERO)?;
    let mut rstd = alloc_filled(rows, T::ZERO)?;
    if y.is_empty() || g.l == 0 {
        return Ok((y, mean, rstd));
    }
    let (parts, per) = split(rows, m);
    let yb = blocks(&mut y, per * m);
    let (mb, rb) = (blocks(&mut mean, per), blocks(&mut rstd, per));
    run_parts(parts, &|t| {
        let (mut yv, mut mv, mut rv) = (lock(&yb[t])?, lock(&mb[t])?, lock(&rb[t])?);
        simd::run(
            #[inline(always)]
            || {
                for (i, yr) in yv.chunks_mut(m).enumerate() {
                    let row = t * per + i;
                    let xr = &x[row * m..(row + 1) * m];
                    let st = row_moments(xr, eps);
                    (mv[i], rv[i]) = st;
                    let c0 = g.first_channel(row);
                    for (j, (yp, xp)) in yr.chunks_mut(g.l).zip(xr.chunks(g.l)).enumerate() {
                        let (wc, bc) = (w.map(|w| w[c0 + j]), b.map(|b| b[c0 + j]));
                        affine(yp, xp, st, wc, bc);
                    }
                }
            },
        );
        Ok(())
    })?;
    drop((yb, mb, rb));
    Ok((y, mean, rstd))
}

/// The inputs of one part of [`gn_backward`].
struct GnPart<'a, T> {
    x: &'a [T],
    go: &'a [T],
    g: Gn,
    w: Option<&'a [T]>,
    stats: (&'a [T], &'a [T]),
}

impl<T: ConvFloat> GnPart<'_, T> {
    /// The rows `rows`: `dx` (their input gradients, when asked) and `acc` (the part's
    /// per-channel `[sum g * xhat; sum g]`, when not empty). The rows' sums of `dy = g
    /// * w` and `dy * xhat` are the planes' sums times their weights (in f64).
    #[inline(always)]
    fn rows(&self, rows: Range<usize>, mut dx: Option<&mut [T]>, acc: &mut [f64]) {
        let (m, l, c) = (self.g.m(), self.g.l, self.g.c);
        let inv_m = 1.0 / m as f64;
        let one = T::from_f64(1.0);
        for (i, row) in rows.enumerate() {
            let (xr, gr) = (
                &self.x[row * m..(row + 1) * m],
                &self.go[row * m..(row + 1) * m],
            );
            let st = (self.stats.0[row], self.stats.1[row]);
            let c0 = self.g.first_channel(row);
            let weight = |j: usize| self.w.map_or(one, |w| w[c0 + j]);
            let (mut s1, mut s2) = (0f64, 0f64);
            for (j, (xp, gp)) in xr.chunks(l).zip(gr.chunks(l)).enumerate() {
                let (sg, sh) = plane_sums(xp, gp, st);
                if !acc.is_empty() {
                    acc[c0 + j] += sh;
                    acc[c + c0 + j] += sg;
                }
                let wc = weight(j).to_f64();
                (s1, s2) = (s1 + wc * sg, s2 + wc * sh);
            }
            let Some(dx) = dx.as_deref_mut() else {
                continue;
            };
            let (mu, rs) = st;
            let (a, b) = (T::from_f64(s1 * inv_m), T::from_f64(s2 * inv_m));
            let out = &mut dx[i * m..(i + 1) * m];
            for (j, ((op, xp), gp)) in out
                .chunks_mut(l)
                .zip(xr.chunks(l))
                .zip(gr.chunks(l))
                .enumerate()
            {
                let wc = weight(j);
                for ((o, &v), &d) in op.iter_mut().zip(xp).zip(gp) {
                    *o = rs * (d * wc - a - (v - mu) * rs * b);
                }
            }
        }
    }
}

/// Group norm's gradients `(dx, dw, db)`, each only when `need` asks for it: per row
/// `dy = g * w[channel]`, `dx = rstd * (dy - mean(dy) - xhat * mean(dy * xhat))`; per
/// channel `dw = sum g * xhat`, `db = sum g`.
pub fn gn_backward<T: ConvFloat>(
    x: &[T],
    go: &[T],
    g: Gn,
    w: Option<&[T]>,
    stats: (&[T], &[T]),
    need: (bool, bool, bool),
) -> Result<NormGrads<T>> {
    let (rows, m) = (g.rows(), g.m());
    let mut dx = alloc_filled(if need.0 { rows * m } else { 0 }, T::ZERO)?;
    let (parts, per) = split(rows, m);
    let params = need.1 || need.2;
    let partial = param_partials(parts, if params { g.c } else { 0 })?;
    let dxb = blocks(&mut dx, per * m);
    if rows > 0 && m > 0 {
        run_parts(parts, &|t| {
            let mut dxv = match dxb.get(t) {
                Some(b) => Some(lock(b)?),
                None => None,
            };
            let mut acc = partial[t].lock().map_err(|_| {
                crate::tensor::err(ErrorKind::RuntimeError, "internal: a kernel part panicked")
            })?;
            let rows = (t * per)..((t + 1) * per).min(rows);
            simd::run(
                #[inline(always)]
                || {
                    let part = GnPart { x, go, g, w, stats };
                    part.rows(rows, dxv.as_deref_mut().map(|d| &mut **d), &mut acc)
                },
            );
            Ok(())
        })?;
    }
    drop(dxb);
    let (dw, db) = merge_partials(partial, g.c, (need.1, need.2))?;
    Ok((need.0.then_some(dx), dw, db))
}
