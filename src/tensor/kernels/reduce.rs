//! Reduction kernels: lay the reduced dims out last and contiguous, then reduce each
//! row (rows split across threads above `PAR_THRESHOLD`); row-wise scans for
//! softmax / log_softmax / cumsum along one dim.

use super::PAR_THRESHOLD;
use crate::error::Result;
use crate::tensor::dtype::{Elem, Real};
use crate::tensor::storage::alloc_vec;
use crate::tensor::Tensor;
use rayon::prelude::*;

/// The elements with `dims` moved last, contiguous: (data, row length).
pub fn rows<T: Elem>(x: &Tensor, dims: &[usize]) -> Result<(Vec<T>, usize)> {
    let mut perm: Vec<usize> = (0..x.ndim()).filter(|d| !dims.contains(d)).collect();
    perm.extend_from_slice(dims);
    let k: usize = dims.iter().map(|&d| x.shape()[d]).product();
    let data = x.permute_raw(&perm, false).to_vec::<T>()?;
    Ok((data, k))
}

/// Apply `f` to each of `rows` rows of length `k` (parallel for big inputs).
pub fn per_row<T: Elem, O: Elem>(
    data: &[T],
    rows: usize,
    k: usize,
    f: impl Fn(&[T]) -> O + Sync + Send,
) -> Result<Vec<O>> {
    if k == 0 {
        let mut out = alloc_vec::<O>(rows)?;
        out.resize(rows, f(&[]));
        return Ok(out);
    }
    let mut out = alloc_vec::<O>(rows)?;
    if data.len() >= PAR_THRESHOLD && rows > 1 {
        out.par_extend(data.par_chunks(k).map(&f));
    } else {
        out.extend(data.chunks(k).map(&f));
    }
    Ok(out)
}

/// Sum of float values accumulated in f64: in order for rows shorter than
/// `PAR_THRESHOLD`; longer rows in chunks of 16384 (in parallel), each in eight
/// accumulators (element k in accumulator k % 8), the chunks' sums added in order.
pub fn sum_f32<F: Real>(r: &[F]) -> f64 {
    // from +0.0 (as PyTorch): `Iterator::sum` starts from -0.0, so an empty sum was -0.0
    if r.len() < PAR_THRESHOLD {
        return r.iter().fold(0.0f64, |a, &v| a + v.to_f64());
    }
    let mut parts = Vec::new();
    parts.par_extend(r.par_chunks(16 * 1024).map(sum8));
    parts.into_iter().fold(0.0f64, |a, v| a + v)
}

/// `sum` of a chunk in f64 in eight accumulators (a sum latency-bound on one chain
/// otherwise), added pairwise, then the tail in order.
fn sum8<F: Real>(c: &[F]) -> f64 {
    let mut acc = [0f64; 8];
    let mut ch = c.chunks_exact(8);
    for q in &mut ch {
        for k in 0..8 {
            acc[k] += q[k].to_f64();
        }
    }
    let s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    ch.remainder().iter().fold(s, |a, &v| a + v.to_f64())
}

/// Per-column f64 sums of the first `n` rows of a row-major `[n, cols]` block (rows
/// added in order, each column from +0.0 as [`sum_f32`]); `None` when `x` is short.
pub fn col_sums<F: Real>(x: &[F], n: usize, cols: usize) -> Option<Vec<f64>> {
    let x = x.get(..n.checked_mul(cols)?)?;
    let mut acc = vec![0.0f64; cols];
    for row in x.chunks_exact(cols) {
        for (a, &v) in acc.iter_mut().zip(row) {
            *a += v.to_f64();
        }
    }
    Some(acc)
}

/// Index of the max (or min with `less`) in a row; NaN wins, first index on ties.
pub fn arg_extreme<T: Elem + PartialOrd>(r: &[T], less: bool) -> i64 {
    let mut best = 0usize;
    for (i, v) in r.iter().enumerate().skip(1) {
        let b = r[best];
        #[allow(clippy::eq_op)]
        let v_nan = v != v;
        #[allow(clippy::eq_op)]
        let b_nan = b != b;
        if b_nan {
            break;
        }
        if v_nan || (less && *v < b) || (!less && *v > b) {
            best = i;
            if v_nan {
                break;
            }
        }
    }
    best as i64
}

/// For each row: write `f(row, out_row)`; the output keeps the moved-last layout.
pub fn scan_rows<T: Elem>(
    data: &[T],
    k: usize,
    f: impl Fn(&[T], &mut [T]) + Sync + Send,
) -> Result<Vec<T>> {
    let mut out = alloc_vec::<T>(data.len())?;
    out.resize(data.len(), T::zero());
    if k == 0 {
        return Ok(out);
    }
    if data.len() >= PAR_THRESHOLD {
        out.par_chunks_mut(k)
            .zip(data.par_chunks(k))
            .for_each(|(o, r)| f(r, o));
    } else {
        for (o, r) in out.chunks_mut(k).zip(data.chunks(k)) {
            f(r, o);
        }
    }
    Ok(out)
}

/// Row-wise softmax (max-subtracted).
pub fn softmax_row<F: Real>(r: &[F], o: &mut [F]) {
    let m = r.iter().copied().fold(F::NEG_INFINITY, F::fmax);
    let mut s = 0.0f64;
    for (y, &x) in o.iter_mut().zip(r) {
        *y = (x - m).exp();
        s += y.to_f64();
    }
    let inv = F::from_f64(1.0 / s);
    o.iter_mut().for_each(|y| *y *= inv);
}

/// Row-wise log_softmax.
pub fn log_softmax_row<F: Real>(r: &[F], o: &mut [F]) {
    let m = r.iter().copied().fold(F::NEG_INFINITY, F::fmax);
    let s: f64 = r.iter().map(|&x| (x - m).exp().to_f64()).sum();
    let lse = m + F::from_f64(s.ln());
    for (y, &x) in o.iter_mut().zip(r) {
        *y = x - lse;
    }
}

/// log(sum(exp(row))), stable.
pub fn logsumexp_row<F: Real>(r: &[F]) -> F {
    let m = r.iter().copied().fold(F::NEG_INFINITY, F::fmax);
    if m.is_infinite() {
        return m;
    }
    let s: f64 = r.iter().map(|&x| (x - m).exp().to_f64()).sum();
    m + F::from_f64(s.ln())
}

/// For each element, the product of the other elements of its row (prod's gradient,
/// exact with zeros: prefix products times suffix products).
pub fn prod_others_row<F: Real>(r: &[F], o: &mut [F]) {
    let mut acc = F::ONE;
    for (y, &x) in o.iter_mut().zip(r) {
        *y = acc;
        acc *= x;
    }
    acc = F::ONE;
    for (y, &x) in o.iter_mut().zip(r).rev() {
        *y *= acc;
        acc *= x;
    }
}
