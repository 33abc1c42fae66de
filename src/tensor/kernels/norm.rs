//! Fused normalisation kernels on contiguous float32/float64 data: batch norm per
//! channel of `[n, c, l]`, layer norm per row of `[rows, m]`. Statistics accumulate in
//! f64 (PyTorch's CPU accumulation type); a forward is one pass to normalise after the
//! statistics, a backward one pass of per-channel (per-row) sums and one pass for the
//! input gradient. The work splits into parts fixed by the sizes alone (not the thread
//! count, so summed gradients are the same on every machine), run by the team.

use super::conv::{blocks, lock, run_parts, ConvFloat};
use super::simd;
use crate::error::{ErrorKind, Result};
use crate::tensor::storage::alloc_filled;
use std::ops::Range;
use std::sync::Mutex;

/// Elements per part of a split, and the most parts a kernel runs as.
const PART: usize = 1 << 15;
const MAX_PARTS: usize = 16;

/// (parts, items per part) of `items` items of `per_item` elements each.
pub(super) fn split(items: usize, per_item: usize) -> (usize, usize) {
    let parts = (items.saturating_mul(per_item) / PART).clamp(1, MAX_PARTS.min(items.max(1)));
    let per = items.div_ceil(parts).max(1);
    (items.div_ceil(per).max(1), per)
}

/// `sum f(v)` over `s` in f64 (four accumulators).
#[inline(always)]
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
    column_sums(g, &|range, v0, v1| {
        for (i, (a, b)) in v0.iter_mut().zip(v1.iter_mut()).enumerate() {
            (*a, *b) = f(range.start + i);
        }
    })
}

/// Fills two per-channel sums for a block of consecutive channels.
type FillSums<'a> = dyn Fn(Range<usize>, &mut [f64], &mut [f64]) + Sync + 'a;

/// Two per-channel sums, filled by `f(channels, s0, s1)` for blocks of consecutive
/// channels (one part each).
fn column_sums(g: Bn, f: &FillSums<'_>) -> Result<(Vec<f64>, Vec<f64>)> {
    let mut s0 = alloc_filled(g.c, 0f64)?;
    let mut s1 = alloc_filled(g.c, 0f64)?;
    if g.c == 0 {
        return Ok((s0, s1));
    }
    let (parts, per) = split(g.c, g.n * g.l);
    let (b0, b1) = (blocks(&mut s0, per), blocks(&mut s1, per));
    run_parts(parts, &|t| {
        let (mut v0, mut v1) = (lock(&b0[t])?, lock(&b1[t])?);
        let range = t * per..t * per + v0.len();
        f(range, &mut v0, &mut v1);
        Ok(())
    })?;
    drop((b0, b1));
    Ok((s0, s1))
}

/// The rows of an `[n, c]` input (l = 1) restricted to the channels `r`.
#[inline(always)]
fn column_rows<'a, T>(x: &'a [T], g: Bn, r: &Range<usize>) -> impl Iterator<Item = &'a [T]> + 'a {
    let (c, r) = (g.c, r.clone());
    (0..g.n).map(move |b| &x[b * c + r.start..b * c + r.end])
}

/// Per channel: the mean and the biased variance (two passes, f64).
pub fn bn_stats<T: ConvFloat>(x: &[T], g: Bn) -> Result<(Vec<f64>, Vec<f64>)> {
    let cnt = (g.n * g.l) as f64;
    if g.l == 1 {
        // one value per plane: each channel's sums run down a column, in row order
        return column_sums(g, &|r, mu, var| {
            simd::run(
                #[inline(always)]
                || column_moments(x, g, r, mu, var),
            )
        });
    }
    channel_sums(g, &|ch| {
        simd::run(
            #[inline(always)]
            || {
                let s: f64 = g.planes(x, ch).map(|p| sum_f64(p, |v| v)).sum();
                let mu = s / cnt;
                let q: f64 = g
                    .planes(x, ch)
                    .map(|p| sum_f64(p, |v| (v - mu) * (v - mu)))
                    .sum();
                (mu, q / cnt)
            },
        )
    })
}

/// [`bn_stats`] of the channels `r` of an `[n, c]` input: `mu` and `var` receive their
/// means and biased variances.
#[inline(always)]
fn column_moments<T: ConvFloat>(x: &[T], g: Bn, r: Range<usize>, mu: &mut [f64], var: &mut [f64]) {
    let cnt = g.n as f64;
    for row in column_rows(x, g, &r) {
        mu.iter_mut().zip(row).for_each(|(s, v)| *s += v.to_f64());
    }
    mu.iter_mut().for_each(|s| *s /= cnt);
    for row in column_rows(x, g, &r) {
        for ((q, &m), v) in var.iter_mut().zip(mu.iter()).zip(row) {
            let d = v.to_f64() - m;
            *q += d * d;
        }
    }
    var.iter_mut().for_each(|q| *q /= cnt);
}

/// Per channel: `sum g` and `sum g * (x - mean[c])` (f64), batch norm's backward sums.
pub fn bn_grad_sums<T: ConvFloat>(
    x: &[T],
    go: &[T],
    g: Bn,
    mean: &[T],
) -> Result<(Vec<f64>, Vec<f64>)> {
    if g.l == 1 {
        return column_sums(g, &|r, sg, dot| {
            simd::run(
                #[inline(always)]
                || {
                    let m = &mean[r.clone()];
                    for (xr, gr) in column_rows(x, g, &r).zip(column_rows(go, g, &r)) {
                        for ((((s, p), &m), v), d) in
                            sg.iter_mut().zip(dot.iter_mut()).zip(m).zip(xr).zip(gr)
                        {
                            let d = d.to_f64();
                            *s += d;
                            *p += (v.to_f64() - m.to_f64()) * d;
                        }
                    }
                },
            )
        });
    }
    channel_sums(g, &|ch| {
        simd::run(
            #[inline(always)]
            || {
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
            },
        )
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
    if g.l == 1 {
        // one value per plane: rows of c values, channel j's coefficients for column j
        let (parts, per) = split(g.n, g.c);
        let outs = blocks(&mut out, per * g.c);
        run_parts(parts, &|t| {
            let mut o = lock(&outs[t])?;
            let base = t * per * g.c;
            let (a, b) = (&a[base..base + o.len()], &b[base..base + o.len()]);
            simd::run(
                #[inline(always)]
                || {
                    for ((orow, arow), brow) in
                        o.chunks_mut(g.c).zip(a.chunks(g.c)).zip(b.chunks(g.c))
                    {
                        for (((d, &u), &v), k) in orow.iter_mut().zip(arow).zip(brow).zip(coef) {
                            *d = f(u, v, k);
                        }
                    }
                },
            );
            Ok(())
        })?;
        drop(outs);
        return Ok(out);
    }
    let (parts, per) = split(planes, g.l);
    let outs = blocks(&mut out, per * g.l);
    run_parts(parts, &|t| {
        let mut o = lock(&outs[t])?;
        simd::run(
            #[inline(always)]
            || {
                for (i, op) in o.chunks_mut(g.l).enumerate() {
                    let p = t * per + i;
                    let k = &coef[p % g.c];
                    let (ap, bp) = (&a[p * g.l..(p + 1) * g.l], &b[p * g.l..(p + 1) * g.l]);
                    for ((d, &u), &v) in op.iter_mut().zip(ap).zip(bp) {
                        *d = f(u, v, k);
                    }
                }
            },
        );
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

/// The eight accumulators of a sum, added pairwise.
#[inline(always)]
pub(super) fn fold8(a: &[f64; 8]) -> f64 {
    ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]))
}

/// `sum f(v)` over `s` in f64 (eight accumulators, then the tail).
#[inline(always)]
fn sum8<T: ConvFloat>(s: &[T], f: impl Fn(f64) -> f64) -> f64 {
    let mut acc = [0f64; 8];
    let mut ch = s.chunks_exact(8);
    for q in &mut ch {
        for k in 0..8 {
            acc[k] += f(q[k].to_f64());
        }
    }
    let tail: f64 = ch.remainder().iter().map(|v| f(v.to_f64())).sum();
    fold8(&acc) + tail
}

/// A row's mean and `1 / sqrt(var + eps)` (biased variance, f64 in eight accumulators,
/// rounded to T).
#[inline(always)]
pub(super) fn row_moments<T: ConvFloat>(row: &[T], eps: f64) -> (T, T) {
    let n = row.len() as f64;
    let mu = sum8(row, |v| v) / n;
    let var = sum8(row, |v| (v - mu) * (v - mu)) / n;
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
        simd::run(
            #[inline(always)]
            || {
                for (i, (m, r)) in mv.iter_mut().zip(rv.iter_mut()).enumerate() {
                    let row = t * per + i;
                    (*m, *r) = row_moments(&x[row * g.m..(row + 1) * g.m], eps);
                }
            },
        );
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
        simd::run(
            #[inline(always)]
            || {
                for (i, yr) in yv.chunks_mut(g.m).enumerate() {
                    let row = t * per + i;
                    let xr = &x[row * g.m..(row + 1) * g.m];
                    let (mu, rs) = row_moments(xr, eps);
                    (mv[i], rv[i]) = (mu, rs);
                    yr.iter_mut().zip(xr).for_each(|(o, &v)| *o = (v - mu) * rs);
                    if let Some(w) = w {
                        yr.iter_mut().zip(w).for_each(|(o, &w)| *o *= w);
                    }
                    if let Some(b) = b {
                        yr.iter_mut().zip(b).for_each(|(o, &b)| *o = *o + b);
                    }
                }
            },
        );
        Ok(())
    })?;
    drop((yb, mb, rb));
    Ok((y, mean, rstd))
}

/// The inputs of one part of [`ln_backward`].
struct LnPart<'a, T> {
    x: &'a [T],
    go: &'a [T],
    g: Ln,
    /// The weight (ones when absent).
    w: &'a [T],
    stats: (&'a [T], &'a [T]),
}

impl<T: ConvFloat> LnPart<'_, T> {
    /// The rows `rows`: `dx` (their input gradients, when asked) and `acc` (the part's
    /// partial `[sum g * xhat; sum g]`, when not empty).
    #[inline(always)]
    fn rows(&self, rows: Range<usize>, mut dx: Option<&mut [T]>, acc: &mut [f64]) {
        let (m, w) = (self.g.m, self.w);
        let inv_m = 1.0 / m as f64;
        for (i, row) in rows.enumerate() {
            let (xr, gr) = (
                &self.x[row * m..(row + 1) * m],
                &self.go[row * m..(row + 1) * m],
            );
            let (mu, rs) = (self.stats.0[row], self.stats.1[row]);
            if !acc.is_empty() {
                let (aw, ab) = acc.split_at_mut(m);
                for (((sw, sb), &d), &v) in aw.iter_mut().zip(ab.iter_mut()).zip(gr).zip(xr) {
                    let d = d.to_f64();
                    *sw += d * ((v - mu) * rs).to_f64();
                    *sb += d;
                }
            }
            let Some(dx) = dx.as_deref_mut() else {
                continue;
            };
            let (s1, s2) = dy_sums(xr, gr, w, (mu, rs));
            let (a, b) = (T::from_f64(s1 * inv_m), T::from_f64(s2 * inv_m));
            let out = &mut dx[i * m..(i + 1) * m];
            for (((o, &d), &v), &wk) in out.iter_mut().zip(gr).zip(xr).zip(w) {
                *o = rs * (d * wk - a - (v - mu) * rs * b);
            }
        }
    }
}

/// A row's `(sum dy, sum dy * xhat)` in f64 (eight accumulators), `dy = g * w` and
/// `xhat = (x - mu) * rs` rounded to T.
#[inline(always)]
fn dy_sums<T: ConvFloat>(x: &[T], go: &[T], w: &[T], (mu, rs): (T, T)) -> (f64, f64) {
    let (mut s1, mut s2) = ([0f64; 8], [0f64; 8]);
    let (mut xc, mut gc, mut wc) = (x.chunks_exact(8), go.chunks_exact(8), w.chunks_exact(8));
    for ((xq, gq), wq) in (&mut xc).zip(&mut gc).zip(&mut wc) {
        for k in 0..8 {
            let dy = (gq[k] * wq[k]).to_f64();
            s1[k] += dy;
            s2[k] += dy * ((xq[k] - mu) * rs).to_f64();
        }
    }
    let (mut t1, mut t2) = (0f64, 0f64);
    let tail = xc
        .remainder()
        .iter()
        .zip(gc.remainder())
        .zip(wc.remainder());
    for ((&v, &d), &wk) in tail {
        let dy = (d * wk).to_f64();
        t1 += dy;
        t2 += dy * ((v - mu) * rs).to_f64();
    }
    (fold8(&s1) + t1, fold8(&s2) + t2)
}

/// A normalisation's `(dx, dw, db)` (layer norm's, group norm's).
pub type NormGrads<T> = (Option<Vec<T>>, Option<Vec<T>>, Option<Vec<T>>);

/// Layer norm's gradients `(dx, dw, db)`, each only when `need` asks for it: per row
/// `dy = g * w` (w: ones when absent), `dx = rstd * (dy - mean(dy) - xhat * mean(dy * xhat))`; `dw = sum g *
/// xhat`, `db = sum g` over the rows (partial sums per part in f64, added in part
/// order).
pub fn ln_backward<T: ConvFloat>(
    x: &[T],
    go: &[T],
    g: Ln,
    w: Option<&[T]>,
    stats: (&[T], &[T]),
    need: (bool, bool, bool),
) -> Result<NormGrads<T>> {
    let mut dx = alloc_filled(if need.0 { g.rows * g.m } else { 0 }, T::ZERO)?;
    let (parts, per) = split(g.rows, g.m);
    let params = need.1 || need.2;
    let partial = param_partials(parts, if params { g.m } else { 0 })?;
    let ones = match w {
        Some(_) => Vec::new(),
        None => alloc_filled(g.m, T::from_f64(1.0))?,
    };
    let w = w.unwrap_or(&ones);
    let dxb = blocks(&mut dx, per * g.m);
    if g.rows > 0 && g.m > 0 {
        run_parts(parts, &|t| {
            let mut dxv = match dxb.get(t) {
                Some(b) => Some(lock(b)?),
                None => None,
            };
            let mut acc = partial[t].lock().map_err(|_| {
                crate::tensor::err(ErrorKind::RuntimeError, "internal: a kernel part panicked")
            })?;
            let rows = (t * per)..((t + 1) * per).min(g.rows);
            simd::run(
                #[inline(always)]
                || {
                    let part = LnPart { x, go, g, w, stats };
                    part.rows(rows, dxv.as_deref_mut().map(|d| &mut **d), &mut acc)
                },
            );
            Ok(())
        })?;
    }
    drop(dxb);
    let (dw, db) = merge_partials(partial, g.m, (need.1, need.2))?;
    Ok((need.0.then_some(dx), dw, db))
}

/// Each part's `[2, width]` f64 sums (the weight's, then the bias's), zeros; empty
/// when `width` is 0 (no parameter gradient wanted).
pub(super) fn param_partials(parts: usize, width: usize) -> Result<Vec<Mutex<Vec<f64>>>> {
    (0..parts)
        .map(|_| alloc_filled(2 * width, 0f64).map(Mutex::new))
        .collect()
}

/// The weight and bias gradients (those `need` asks for) from the parts' partial sums,
/// added in part order.
#[allow(clippy::type_complexity)]
pub(super) fn merge_partials<T: ConvFloat>(
    partial: Vec<Mutex<Vec<f64>>>,
    width: usize,
    need: (bool, bool),
) -> Result<(Option<Vec<T>>, Option<Vec<T>>)> {
    if !(need.0 || need.1) {
        return Ok((None, None));
    }
    let mut sw = alloc_filled(width, 0f64)?;
    let mut sb = alloc_filled(width, 0f64)?;
    for p in partial {
        let p = p.into_inner().unwrap_or_default();
        for j in 0..width.min(p.len() / 2) {
            sw[j] += p[j];
            sb[j] += p[width + j];
        }
    }
    let cast = |v: Vec<f64>| v.into_iter().map(T::from_f64).collect::<Vec<T>>();
    Ok((need.0.then(|| cast(sw)), need.1.then(|| cast(sb))))
}
