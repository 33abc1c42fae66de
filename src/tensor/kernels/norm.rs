//! Fused normalisation kernels on contiguous float32/float64 data: batch norm per
//! channel of `[n, c, l]`, layer norm per row of `[rows, m]`. Statistics accumulate in
//! f64 (PyTorch's CPU accumulation type); a forward is one pass to normalise after the
//! statistics, a backward one pass of per-channel (per-row) sums and one pass for the
//! input gradient. The work splits into parts fixed by the sizes alone (not the thread
//! count, so summed gradients are the same on every machine), run by the team.

use super::conv::{blocks, lock, run_parts, ConvFloat};
use crate::error::{ErrorKind, Result};
use crate::tensor::storage::alloc_filled;
use std::sync::Mutex;

/// Elements per part of a split, and the most parts a kernel runs as.
const PART: usize = 1 << 15;
const MAX_PARTS: usize = 16;

/// (parts, items per part) of `items` items of `per_item` elements each.
fn split(items: usize, per_item: usize) -> (usize, usize) {
    let parts = (items.saturating_mul(per_item) / PART).clamp(1, MAX_PARTS.min(items.max(1)));
    let per = items.div_ceil(parts).max(1);
    (items.div_ceil(per).max(1), per)
}

/// `sum f(v)` over `s` in f64 (four accumulators).
#[inline]
fn sum_f64<T: ConvFloat>(s: &[T], f: impl Fn(f64) -> f64) -> f64 {
    let mut acc = [0f64; 4];
    let mut ch = s.chunks_exact(4);
    for q in &mut ch {
        for k in 0..4 {
            acc[k] += f(q[k].to_f64());
        }
    }
    let tail: f64 = ch.remainder().iter().map(|v| f(v.to_f64())).sum();
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// A batch-norm input viewed as `[n, c, l]` (l: the product of the spatial sizes).
#[derive(Debug, Clone, Copy)]
pub struct Bn {
    pub n: usize,
    pub c: usize,
    pub l: usize,
}

impl Bn {
    /// Channel `ch`'s planes of `x`.
    fn planes<'a, T>(&self, x: &'a [T], ch: usize) -> impl Iterator<Item = &'a [T]> + 'a {
        let (c, l) = (self.c, self.l);
        (0..self.n).map(move |b| &x[(b * c + ch) * l..(b * c + ch + 1) * l])
    }
}

/// Per channel of `x`: `(f(a), f(b))` summed over its planes, for a function of one or
/// two aligned inputs; channels split into parts.
fn channel_sums(g: Bn, f: &(dyn Fn(usize) -> (f64, f64) + Sync)) -> Result<(Vec<f64>, Vec<f64>)> {
    let mut s0 = alloc_filled(g.c, 0f64)?;
    let mut s1 = alloc_filled(g.c, 0f64)?;
    if g.c == 0 {
        return Ok((s0, s1));
    }
    let (parts, per) = split(g.c, g.n * g.l);
    let (b0, b1) = (blocks(&mut s0, per), blocks(&mut s1, per));
    run_parts(parts, &|t| {
        let (mut v0, mut v1) = (lock(&b0[t])?, lock(&b1[t])?);
        for (i, (a, b)) in v0.iter_mut().zip(v1.iter_mut()).enumerate() {
            (*a, *b) = f(t * per + i);
        }
        Ok(())
    })?;
    drop((b0, b1));
    Ok((s0, s1))
}

/// Per channel: the mean and the biased variance (two passes, f64).
pub fn bn_stats<T: ConvFloat>(x: &[T], g: Bn) -> Result<(Vec<f64>, Vec<f64>)> {
    let cnt = (g.n * g.l) as f64;
    channel_sums(g, &|ch| {
        let s: f64 = g.planes(x, ch).map(|p| sum_f64(p, |v| v)).sum();
        let mu = s / cnt;
        let q: f64 = g
            .planes(x, ch)
            .map(|p| sum_f64(p, |v| (v - mu) * (v - mu)))
            .sum();
        (mu, q / cnt)
    })
}

/// Per channel: `sum g` and `sum g * (x - mean[c])` (f64), batch norm's backward sums.
pub fn bn_grad_sums<T: ConvFloat>(
    x: &[T],
    go: &[T],
    g: Bn,
    mean: &[T],
) -> Result<(Vec<f64>, Vec<f64>)> {
    channel_sums(g, &|ch| {
        let m = mean[ch].to_f64();
        let (mut sg, mut dot) = (0f64, 0f64);
        for (xp, gp) in g.planes(x, ch).zip(g.planes(go, ch)) {
            // one pass, both sums in sum_f64's order (element k in accumulator k % 4;
            // the tail of `sum g` summed apart, the tail of the dot product not)
            let (mut sa, mut da) = ([0f64; 4], [0f64; 4]);
            let (mut xc, mut gc) = (xp.chunks_exact(4), gp.chunks_exact(4));
            for (xq, gq) in (&mut xc).zip(&mut gc) {
                for k in 0..4 {
                    let d = gq[k].to_f64();
                    sa[k] += d;
                    da[k] += (xq[k].to_f64() - m) * d;
                }
            }
            let tail: f64 = gc.remainder().iter().map(|v| v.to_f64()).sum();
            for (k, (&v, &d)) in xc.remainder().iter().zip(gc.remainder()).enumerate() {
                da[k] += (v.to_f64() - m) * d.to_f64();
            }
            sg += (sa[0] + sa[1]) + (sa[2] + sa[3]) + tail;
            dot += (da[0] + da[1]) + (da[2] + da[3]);
        }
        (sg, dot)
    })
}

/// `out[i] = f(a[i], b[i], coef[c])` over the planes of `[n, c, l]` (c: the plane's
/// channel); planes split into parts.
pub fn bn_map<T: ConvFloat, F: Fn(T, T, &[T; 4]) -> T + Sync>(
    a: &[T],
    b: &[T],
    g: Bn,
    coef: &[[T; 4]],
    f: F,
) -> Result<Vec<T>> {
    let planes = g.n * g.c;
    let mut out = alloc_filled(planes * g.l, T::ZERO)?;
    if out.is_empty() {
        return Ok(out);
    }
    let (parts, per) = split(planes, g.l);
    let outs = blocks(&mut out, per * g.l);
    run_parts(parts, &|t| {
        let mut o = lock(&outs[t])?;
        for (i, op) in o.chunks_mut(g.l).enumerate() {
            let p = t * per + i;
            let k = &coef[p % g.c];
            let (ap, bp) = (&a[p * g.l..(p + 1) * g.l], &b[p * g.l..(p + 1) * g.l]);
            for ((d, &u), &v) in op.iter_mut().zip(ap).zip(bp) {
                *d = f(u, v, k);
            }
        }
        Ok(())
    })?;
    drop(outs);
    Ok(out)
}

/// A layer-norm input viewed as `[rows, m]`.
#[derive(Debug, Clone, Copy)]
pub struct Ln {
    pub rows: usize,
    pub m: usize,
}

/// A row's mean and `1 / sqrt(var + eps)` (biased variance, f64, rounded to T).
#[inline]
fn row_moments<T: ConvFloat>(row: &[T], eps: f64) -> (T, T) {
    let n = row.len() as f64;
    let mu = sum_f64(row, |v| v) / n;
    let var = sum_f64(row, |v| (v - mu) * (v - mu)) / n;
    (
        T::from_f64(mu),
        T::from_f64(1.0 / (var.max(0.0) + eps).sqrt()),
    )
}

/// Per row: the mean and rstd of [`row_moments`].
pub fn ln_stats<T: ConvFloat>(x: &[T], g: Ln, eps: f64) -> Result<(Vec<T>, Vec<T>)> {
    let mut mean = alloc_filled(g.rows, T::ZERO)?;
    let mut rstd = alloc_filled(g.rows, T::ZERO)?;
    if g.rows == 0 || g.m == 0 {
        return Ok((mean, rstd));
    }
    let (parts, per) = split(g.rows, g.m);
    let (mb, rb) = (blocks(&mut mean, per), blocks(&mut rstd, per));
    run_parts(parts, &|t| {
        let (mut mv, mut rv) = (lock(&mb[t])?, lock(&rb[t])?);
        for (i, (m, r)) in mv.iter_mut().zip(rv.iter_mut()).enumerate() {
            let row = t * per + i;
            (*m, *r) = row_moments(&x[row * g.m..(row + 1) * g.m], eps);
        }
        Ok(())
    })?;
    drop((mb, rb));
    Ok((mean, rstd))
}

/// Layer norm forward: `y = (x - mean) * rstd * w + b` per row (w, b of length m when
/// given), with the rows' mean and rstd.
pub fn ln_forward<T: ConvFloat>(
    x: &[T],
    g: Ln,
    w: Option<&[T]>,
    b: Option<&[T]>,
    eps: f64,
) -> Result<(Vec<T>, Vec<T>, Vec<T>)> {
    let mut y = alloc_filled(g.rows * g.m, T::ZERO)?;
    let mut mean = alloc_filled(g.rows, T::ZERO)?;
    let mut rstd = alloc_filled(g.rows, T::ZERO)?;
    if y.is_empty() {
        return Ok((y, mean, rstd));
    }
    let (parts, per) = split(g.rows, g.m);
    let yb = blocks(&mut y, per * g.m);
    let (mb, rb) = (blocks(&mut mean, per), blocks(&mut rstd, per));
    run_parts(parts, &|t| {
        let (mut yv, mut mv, mut rv) = (lock(&yb[t])?, lock(&mb[t])?, lock(&rb[t])?);
        for (i, yr) in yv.chunks_mut(g.m).enumerate() {
            let row = t * per + i;
            let xr = &x[row * g.m..(row + 1) * g.m];
            let (mu, rs) = row_moments(xr, eps);
            (mv[i], rv[i]) = (mu, rs);
            for (j, (o, &v)) in yr.iter_mut().zip(xr).enumerate() {
                let h = (v - mu) * rs;
                let h = w.map_or(h, |w| h * w[j]);
                *o = b.map_or(h, |b| h + b[j]);
            }
        }
        Ok(())
    })?;
    drop((yb, mb, rb));
    Ok((y, mean, rstd))
}

/// Layer norm's `(dx, dw, db)`.
pub type LnGrads<T> = (Option<Vec<T>>, Option<Vec<T>>, Option<Vec<T>>);

/// Layer norm's gradients `(dx, dw, db)`, each only when `need` asks for it: per row
/// `dy = g * w`, `dx = rstd * (dy - mean(dy) - xhat * mean(dy * xhat))`; `dw = sum g *
/// xhat`, `db = sum g` over the rows (partial sums per part in f64, added in part
/// order).
pub fn ln_backward<T: ConvFloat>(
    x: &[T],
    go: &[T],
    g: Ln,
    w: Option<&[T]>,
    stats: (&[T], &[T]),
    need: (bool, bool, bool),
) -> Result<LnGrads<T>> {
    let (mean, rstd) = stats;
    let mut dx = alloc_filled(if need.0 { g.rows * g.m } else { 0 }, T::ZERO)?;
    let (parts, per) = split(g.rows, g.m);
    let params = need.1 || need.2;
    let partial: Vec<Mutex<Vec<f64>>> = (0..parts)
        .map(|_| alloc_filled(if params { 2 * g.m } else { 0 }, 0f64).map(Mutex::new))
        .collect::<Result<_>>()?;
    let dxb = blocks(&mut dx, per * g.m);
    if g.rows > 0 && g.m > 0 {
        let inv_m = 1.0 / g.m as f64;
        run_parts(parts, &|t| {
            let mut dxv = match dxb.get(t) {
                Some(b) => Some(lock(b)?),
                None => None,
            };
            let mut acc = partial[t].lock().map_err(|_| {
                crate::tensor::err(ErrorKind::RuntimeError, "internal: a kernel part panicked")
            })?;
            let rows = (t * per)..((t + 1) * per).min(g.rows);
            for (i, row) in rows.enumerate() {
                let (xr, gr) = (
                    &x[row * g.m..(row + 1) * g.m],
                    &go[row * g.m..(row + 1) * g.m],
                );
                let (mu, rs) = (mean[row], rstd[row]);
                if params {
                    let (aw, ab) = acc.split_at_mut(g.m);
                    for j in 0..g.m {
                        let d = gr[j].to_f64();
                        aw[j] += d * ((xr[j] - mu) * rs).to_f64();
                        ab[j] += d;
                    }
                }
                let Some(dxv) = dxv.as_deref_mut() else {
                    continue;
                };
                let dy = |j: usize| w.map_or(gr[j], |w| gr[j] * w[j]);
                let (mut s1, mut s2) = (0f64, 0f64);
                for (j, &v) in xr.iter().enumerate() {
                    let d = dy(j).to_f64();
                    s1 += d;
                    s2 += d * ((v - mu) * rs).to_f64();
                }
                let (a, b) = (T::from_f64(s1 * inv_m), T::from_f64(s2 * inv_m));
                let out = &mut dxv[i * g.m..(i + 1) * g.m];
                for (j, o) in out.iter_mut().enumerate() {
                    *o = rs * (dy(j) - a - (xr[j] - mu) * rs * b);
                }
            }
            Ok(())
        })?;
    }
    drop(dxb);
    let (mut dw, mut db) = (None, None);
    if params {
        let mut sw = alloc_filled(g.m, 0f64)?;
        let mut sb = alloc_filled(g.m, 0f64)?;
        for p in partial {
            let p = p.into_inner().unwrap_or_default();
            for j in 0..g.m.min(p.len() / 2) {
                sw[j] += p[j];
                sb[j] += p[g.m + j];
            }
        }
        let cast = |v: Vec<f64>| v.into_iter().map(T::from_f64).collect::<Vec<T>>();
        dw = need.1.then(|| cast(sw));
        db = need.2.then(|| cast(sb));
    }
    Ok((need.0.then_some(dx), dw, db))
}
