//! Host-side index computations with no gradient: the sort permutation along a dim
//! (`sort argsort topk kthvalue median mode`), `unique`, `searchsorted`/`bucketize`,
//! `bincount`, `histc`, `nonzero` and `multinomial`. Values that need a gradient are
//! gathered from these indices by differentiable ops (ops/more.rs). Inside a `@compile`
//! capture the sort permutation is a graph op (`IrOp::SortIndices`: its shape follows
//! the input's); the others are a graph break (their sizes depend on the data).

use super::dtype::{with_elem, DType};
use super::random::with_rng;
use super::shape::norm_dim;
use super::sort_keys;
use super::storage::collect_vec;
use super::{err, Tensor};
use crate::error::{ErrorKind, Result};
use crate::ir::breaks::BreakReason;
use crate::ir::record as trace;
use crate::ir::record_op::record_op;
use crate::ir::IrOp;
use std::cmp::Ordering;

/// PyTorch's sort order: NaN is larger than every number; -0.0 equals 0.0.
pub fn cmp_f64(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// Marks a data-dependent host computation inside a capture.
fn host(_: &str) {
    trace::graph_break(BreakReason::UntracedTensor);
}

/// The int64 indices that sort `x` along `dim` (stable; NaN last ascending, first
/// descending, as PyTorch).
pub fn sort_indices(x: &Tensor, dim: i64, descending: bool) -> Result<Tensor> {
    first_indices(x, dim, descending, None)
}

/// The first `k` of `sort_indices` along `dim` (`topk`): a selection, then a sort of
/// those `k` only.
pub fn topk_indices(x: &Tensor, dim: i64, k: usize, largest: bool) -> Result<Tensor> {
    first_indices(x, dim, largest, Some(k))
}

fn first_indices(x: &Tensor, dim: i64, descending: bool, k: Option<usize>) -> Result<Tensor> {
    if x.ndim() == 0 {
        host("sort");
        return Ok(Tensor::from_vec(vec![0i64], &[]));
    }
    let d = norm_dim("sort", dim, x.ndim())?;
    let k = k.map(|k| k.min(x.shape()[d]));
    let ir = |_: &Tensor| IrOp::SortIndices {
        dim: d,
        descending,
        k,
    };
    record_op(&[x], ir, || sorted_positions(x, d, descending, k))
}

/// The first `k` (all for None) positions of `x` sorted along dim `d` (of a tensor with
/// dims): `sort_indices`' kernel and the executor's of `IrOp::SortIndices`.
pub fn sorted_positions(
    x: &Tensor,
    d: usize,
    descending: bool,
    k: Option<usize>,
) -> Result<Tensor> {
    let n = x.shape()[d];
    let keep = k.unwrap_or(n).min(n);
    per_row(x, d, keep, |moved| {
        with_elem!(x.dtype(), T => moved.read(|s: &[T]| {
            sort_keys::first_positions(s, n, keep, descending)
        }))
    })
}

/// The int64 positions of `mode` along dim `d` (kept, size 1): per row, the last
/// occurrence of the most frequent value (the smallest among equally frequent ones).
/// Recorded as `IrOp::ModeIndices` inside a capture.
pub fn mode_indices(x: &Tensor, d: usize) -> Result<Tensor> {
    record_op(
        &[x],
        |_| IrOp::ModeIndices { dim: d },
        || mode_positions(x, d),
    )
}

/// `mode_indices`' kernel and the executor's of `IrOp::ModeIndices`.
pub fn mode_positions(x: &Tensor, d: usize) -> Result<Tensor> {
    let n = x.shape().get(d).copied().unwrap_or(0);
    if n == 0 {
        return Err(err(
            ErrorKind::IndexError,
            "mode(): Expected reduction dim to have non-zero size.",
        ));
    }
    per_row(
        x,
        d,
        1,
        |moved| with_elem!(x.dtype(), T => moved.read(|s: &[T]| sort_keys::mode_positions(s, n))),
    )
}

/// Positions computed per row along dim `d` by `rows` (over `x` with `d` moved last,
/// `keep` of them per row), with `d` put back in its place (size `keep`).
fn per_row(
    x: &Tensor,
    d: usize,
    keep: usize,
    rows: impl FnOnce(&Tensor) -> Result<Vec<i64>>,
) -> Result<Tensor> {
    let nd = x.ndim();
    let mut perm: Vec<i64> = (0..nd as i64).filter(|&i| i != d as i64).collect();
    perm.push(d as i64);
    let moved = x.permute(&perm)?;
    let idx = rows(&moved)?;
    let mut shape: Vec<usize> = moved.shape().to_vec();
    if let Some(last) = shape.last_mut() {
        *last = keep;
    }
    let mut back = vec![0i64; nd];
    for (i, &p) in perm.iter().enumerate() {
        back[p as usize] = i as i64;
    }
    Tensor::from_vec(idx, &shape).permute(&back)?.contiguous()
}

/// `unique(sorted=True)` of all elements: the values, the inverse indices (shape of
/// `x`) and the counts.
pub fn unique(x: &Tensor) -> Result<(Tensor, Tensor, Tensor)> {
    host("unique");
    let flat = x.reshape(&[-1])?;
    let vals = f64s(&flat)?;
    let mut order: Vec<usize> = (0..vals.len()).collect();
    order.sort_by(|&a, &b| cmp_f64(vals[a], vals[b]));
    let mut uniq: Vec<usize> = vec![];
    let mut counts: Vec<i64> = vec![];
    let mut inverse = vec![0i64; vals.len()];
    for &i in &order {
        let same = uniq
            .last()
            .is_some_and(|&u| cmp_f64(vals[u], vals[i]) == Ordering::Equal);
        if !same {
            uniq.push(i);
            counts.push(0);
        }
        if let Some(c) = counts.last_mut() {
            *c += 1;
        }
        inverse[i] = uniq.len() as i64 - 1;
    }
    let pos: Vec<i64> = uniq.iter().map(|&i| i as i64).collect();
    let k = pos.len();
    let values = flat.index_select(0, &Tensor::from_vec(pos, &[k]))?.detach();
    Ok((
        values,
        Tensor::from_vec(inverse, x.shape()),
        Tensor::from_vec(counts, &[k]),
    ))
}

/// For each of `values`, the index where it would be inserted into the sorted last dim
/// of `sorted` (the matching row when `sorted` has more than one dim).
pub fn searchsorted(sorted: &Tensor, values: &Tensor, right: bool) -> Result<Tensor> {
    host("searchsorted");
    let nd = sorted.ndim().max(1);
    let seq = sorted.reshape(&[-1])?;
    let n = *sorted.shape().last().unwrap_or(&1);
    let rows = seq.numel().checked_div(n).unwrap_or(0);
    let leading_ok = sorted.ndim() <= 1
        || (values.ndim() == sorted.ndim() && values.shape()[..nd - 1] == sorted.shape()[..nd - 1]);
    if !leading_ok {
        return Err(err(
            ErrorKind::RuntimeError,
            format!(
                "searchsorted: boundaries {:?} and input value {:?} must have the same leading dims",
                sorted.shape(),
                values.shape()
            ),
        ));
    }
    let s = f64s(&seq)?;
    let v = f64s(&values.reshape(&[-1])?)?;
    let per_row = if sorted.ndim() <= 1 || rows == 0 {
        v.len().max(1)
    } else {
        v.len() / rows
    };
    let out: Vec<i64> = v
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let r = if sorted.ndim() <= 1 {
                0
            } else {
                i / per_row.max(1)
            };
            let row = &s[(r * n).min(s.len())..((r + 1) * n).min(s.len())];
            row.partition_point(|&b| {
                let o = cmp_f64(b, x);
                o == Ordering::Less || (right && o == Ordering::Equal)
            }) as i64
        })
        .collect();
    Ok(Tensor::from_vec(out, values.shape()))
}

/// The elements as f64 (bools as 0/1).
fn f64s(t: &Tensor) -> Result<Vec<f64>> {
    Ok(match t.dtype() {
        DType::F32 => t.to_f32_vec()?.into_iter().map(f64::from).collect(),
        DType::F64 => t.to_vec::<f64>()?,
        DType::I32 | DType::I64 | DType::U8 | DType::Bool => t
            .cast(DType::I64)?
            .to_i64_vec()?
            .into_iter()
            .map(|v| v as f64)
            .collect(),
    })
}

/// `bincount(x, weights=None, minlength=0)` of a 1-D non-negative int tensor.
pub fn bincount(x: &Tensor, weights: Option<&Tensor>, minlength: usize) -> Result<Tensor> {
    host("bincount");
    if x.ndim() != 1 || x.dtype().is_float() {
        return Err(err(
            ErrorKind::RuntimeError,
            format!(
                "bincount only supports 1-d non-negative integral inputs (got {}D {})",
                x.ndim(),
                x.dtype().name()
            ),
        ));
    }
    let v = x.to_i64_vec()?;
    if v.iter().any(|&i| i < 0) {
        return Err(err(
            ErrorKind::RuntimeError,
            "bincount only supports 1-d non-negative integral inputs.",
        ));
    }
    let len = (v.iter().copied().max().map_or(0, |m| m as usize + 1)).max(minlength);
    match weights {
        None => {
            // under the tensor caps: `bincount(tensor([1 << 40]))` is a MemoryError
            let mut c = super::storage::alloc_filled(len, 0i64)?;
            v.iter().for_each(|&i| c[i as usize] += 1);
            Ok(Tensor::from_vec(c, &[len]))
        }
        Some(w) => {
            if w.shape() != x.shape() {
                return Err(err(
                    ErrorKind::RuntimeError,
                    "bincount: weights should be 1-d and have the same length as input",
                ));
            }
            let w = w.to_f32_vec()?;
            // the output under the tensor caps, the f64 sums without aborting
            let mut out = super::storage::alloc_vec::<f32>(len)?;
            let mut c: Vec<f64> = Vec::new();
            c.try_reserve_exact(len).map_err(|_| {
                err(
                    ErrorKind::MemoryError,
                    format!("bincount: out of memory for {len} bins"),
                )
            })?;
            c.resize(len, 0.0);
            v.iter()
                .zip(&w)
                .for_each(|(&i, &wi)| c[i as usize] += f64::from(wi));
            out.extend(c.into_iter().map(|x| x as f32));
            Ok(Tensor::from_vec(out, &[len]))
        }
    }
}

/// `histc(x, bins, min, max)`: counts in `bins` equal bins over [min, max] (the data's
/// range when both are 0); elements outside are ignored.
pub fn histc(x: &Tensor, bins: usize, min: f64, max: f64) -> Result<Tensor> {
    host("histc");
    if bins == 0 {
        return Err(err(ErrorKind::RuntimeError, "histc: bins must be > 0"));
    }
    let v = f64s(x)?;
    let (mut lo, mut hi) = (min, max);
    if lo == hi && !v.is_empty() {
        lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    }
    if lo == hi {
        lo -= 1.0;
        hi += 1.0;
    }
    if lo > hi {
        return Err(err(
            ErrorKind::RuntimeError,
            format!("histc: max must be larger than min (got min={min}, max={max})"),
        ));
    }
    // under the tensor caps: `histc(x, bins=1 << 40)` is a MemoryError, not an abort
    let mut c = super::storage::alloc_filled(bins, 0f32)?;
    for &e in &v {
        if e >= lo && e <= hi {
            let b = (((e - lo) / (hi - lo)) * bins as f64) as usize;
            c[b.min(bins - 1)] += 1.0;
        }
    }
    Ok(Tensor::from_vec(c, &[bins]))
}

/// `nonzero(x)`: the `(n, ndim)` int64 indices of the nonzero elements, in row-major
/// order.
pub fn nonzero(x: &Tensor) -> Result<Tensor> {
    host("nonzero");
    let v = f64s(x)?;
    let nd = x.ndim();
    let mut out = vec![];
    let mut count = 0;
    for (flat, &e) in v.iter().enumerate() {
        if e != 0.0 {
            let mut rem = flat;
            let mut idx = vec![0i64; nd];
            for d in (0..nd).rev() {
                let s = x.shape()[d].max(1);
                idx[d] = (rem % s) as i64;
                rem /= s;
            }
            out.extend(idx);
            count += 1;
        }
    }
    Ok(Tensor::from_vec(out, &[count, nd]))
}

/// `multinomial(probs, num_samples, replacement)`: for each row of `probs` (1-D or
/// 2-D, non-negative weights), sampled indices from the seeded generator.
pub fn multinomial(probs: &Tensor, num: i64, replacement: bool) -> Result<Tensor> {
    host("multinomial");
    let bad = |m: String| err(ErrorKind::RuntimeError, m);
    if probs.ndim() == 0 || probs.ndim() > 2 {
        return Err(bad(format!(
            "multinomial: prob_dist must be 1 or 2 dim, got {}",
            probs.ndim()
        )));
    }
    let num = usize::try_from(num)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| {
            bad(format!(
                "multinomial: cannot sample n_sample <= 0 samples (got {num})"
            ))
        })?;
    let n = *probs.shape().last().unwrap_or(&0);
    if !replacement && num > n {
        return Err(bad(format!(
            "multinomial: cannot sample n_sample > prob_dist.size(-1) samples without replacement ({num} > {n})"
        )));
    }
    let rows = if probs.ndim() == 1 {
        1
    } else {
        probs.shape()[0]
    };
    let flat = probs.reshape(&[-1])?;
    let at = Rows { rows, n, num };
    // torch's arithmetic in the probabilities' dtype (integer weights as float32)
    let out = match flat.dtype() {
        DType::F64 => flat.read(|p: &[f64]| sample(p, at, replacement))??,
        _ => flat
            .cast(DType::F32)?
            .read(|p: &[f32]| sample(p, at, replacement))??,
    };
    let shape: Vec<usize> = if probs.ndim() == 1 {
        vec![num]
    } else {
        vec![rows, num]
    };
    Ok(Tensor::from_vec(out, &shape))
}

/// The rows of probabilities, their length and the samples per row.
#[derive(Clone, Copy)]
struct Rows {
    rows: usize,
    n: usize,
    num: usize,
}

/// A probability dtype: torch's sampling arithmetic runs in it.
trait Prob:
    sort_keys::SortKey
    + PartialOrd
    + Into<f64>
    + std::ops::Add<Output = Self>
    + std::ops::Div<Output = Self>
{
    /// The largest finite value.
    const MAX: Self;
    /// `x` rounded to this type.
    fn of(x: f64) -> Self;
}

impl Prob for f32 {
    const MAX: f32 = f32::MAX;
    fn of(x: f64) -> f32 {
        x as f32
    }
}

impl Prob for f64 {
    const MAX: f64 = f64::MAX;
    fn of(x: f64) -> f64 {
        x
    }
}

/// Checks the rows of `p` and samples from each.
fn sample<T: Prob>(p: &[T], Rows { rows, n, num }: Rows, replacement: bool) -> Result<Vec<i64>> {
    let bad = |m: &str| err(ErrorKind::RuntimeError, format!("multinomial: {m}"));
    // branch-free per chunk, so it vectorises (NaN fails both comparisons)
    let ok = |x: T| x >= T::zero() && x <= T::MAX;
    let bad_chunk = |c: &[T]| c.iter().fold(false, |bad, &x| bad | !ok(x));
    if p.chunks(4096).any(bad_chunk) {
        return Err(bad(
            "probability tensor contains either inf, nan or element < 0",
        ));
    }
    let zero = |r: usize| p[r * n..(r + 1) * n].iter().all(|&x| x == T::zero());
    if (0..rows).any(zero) {
        return Err(bad(
            "invalid multinomial distribution (sum of probabilities <= 0)",
        ));
    }
    if !replacement || num == 1 {
        multinomial_exponential(p, n, num)
    } else {
        multinomial_cumulative(p, rows, n, num)
    }
}

/// torch's sampling without replacement (and of one sample): `q = probs / Exp(1)` with
/// one exponential (`-log1p(-u)` of a float64 uniform, rounded to the dtype) per
/// element, row-major, then the top `num` of each row (the first maximum when `num` is
/// 1).
fn multinomial_exponential<T: Prob>(p: &[T], n: usize, num: usize) -> Result<Vec<i64>> {
    let q = with_rng(|g| {
        collect_vec(
            p.len(),
            p.iter().map(|&v| v / T::of(-(-g.uniform()).ln_1p())),
        )
    })?;
    Ok(sort_keys::first_positions(&q, n, num, true))
}

/// torch's sampling with replacement: the row's cumulative sums normalised by their
/// total (in the probabilities' dtype, the last set to 1), then for each sample a
/// float64 uniform and a binary search for the first bucket not below it. The
/// normalised sums are computed at the probed positions only.
fn multinomial_cumulative<T: Prob>(p: &[T], rows: usize, n: usize, num: usize) -> Result<Vec<i64>> {
    let mut out = Vec::with_capacity(rows * num);
    let mut cum: Vec<T> = super::storage::alloc_vec(n)?;
    for r in 0..rows {
        let mut sum = T::zero();
        cum.clear();
        cum.extend(p[r * n..(r + 1) * n].iter().map(|&v| {
            sum = sum + v;
            sum
        }));
        let normal = |j: usize| -> f64 {
            if j + 1 == n {
                1.0
            } else {
                (cum[j] / sum).into()
            }
        };
        for _ in 0..num {
            let u = with_rng(|g| g.uniform());
            let (mut lo, mut hi) = (0, n);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if normal(mid) < u {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            out.push(lo as i64);
        }
    }
    Ok(out)
}
