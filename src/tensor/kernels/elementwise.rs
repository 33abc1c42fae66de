//! Elementwise kernels: map one tensor, zip two (broadcasting), write values into a
//! strided destination. Contiguous inputs take slice fast paths, split across threads
//! above `PAR_THRESHOLD`.

use super::strided::{for_each_offset, for_each_offset2};
use super::PAR_THRESHOLD;
use crate::error::{ErrorKind, Result};
use crate::tensor::dtype::Elem;
use crate::tensor::shape::{broadcast_strides, Dims};
use crate::tensor::storage::alloc_vec;
use crate::tensor::{err, Tensor};
use rayon::prelude::*;
use std::mem::MaybeUninit;

fn wrong_dtype(t: &Tensor, want: crate::tensor::DType) -> crate::error::Error {
    err(
        ErrorKind::RuntimeError,
        format!(
            "internal: kernel expected {} but got {}",
            want.name(),
            t.dtype().name()
        ),
    )
}

/// Rows of work per parallel task (64 KiB of f32): big enough to amortise the task,
/// small enough that both threads get even shares.
const CHUNK: usize = 16 * 1024;

/// Fills `out` (empty, capacity >= n) with n elements: `body(start, dst)` must write
/// every element of `dst`, the elements start..start + dst.len(); split across threads
/// above `PAR_THRESHOLD`.
fn fill_par<O: Send>(
    out: &mut Vec<O>,
    n: usize,
    body: impl Fn(usize, &mut [MaybeUninit<O>]) + Sync + Send,
) -> Result<()> {
    let Some(dst) = out.spare_capacity_mut().get_mut(..n) else {
        return Err(err(ErrorKind::RuntimeError, "internal: output too small"));
    };
    if n >= PAR_THRESHOLD {
        dst.par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(i, c)| body(i * CHUNK, c));
    } else {
        body(0, dst);
    }
    // SAFETY: `body` wrote all n elements (every caller zips dst with a source slice of
    // exactly dst's length).
    unsafe { out.set_len(n) };
    Ok(())
}

/// `src` from `offset`, exactly `n` elements, or an internal error.
fn window<T>(src: &[T], offset: usize, n: usize) -> Result<&[T]> {
    offset
        .checked_add(n)
        .and_then(|end| src.get(offset..end))
        .ok_or_else(|| {
            err(
                ErrorKind::RuntimeError,
                "internal: view outside its storage",
            )
        })
}

/// An elementwise function of two operands for the hot loops below. `apply` is
/// `inline(always)` in every implementation, so a body of any size is inlined into the
/// loop (an `Fn` is called per element once its body is over LLVM's inline threshold:
/// a vectorizable erf then runs scalar).
pub trait Zip2<A, B, O>: Sync + Send {
    fn apply(&self, a: A, b: B) -> O;
}

/// An `Fn` closure as a [`Zip2`] (inlined into the loops while small).
struct ByFn<F>(F);

impl<A, B, O, F: Fn(A, B) -> O + Sync + Send> Zip2<A, B, O> for ByFn<F> {
    #[inline(always)]
    fn apply(&self, a: A, b: B) -> O {
        (self.0)(a, b)
    }
}

/// A [`Zip2`] with its operands swapped.
struct Swapped<'a, K>(&'a K);

impl<A, B, O, K: Zip2<A, B, O>> Zip2<B, A, O> for Swapped<'_, K> {
    #[inline(always)]
    fn apply(&self, b: B, a: A) -> O {
        self.0.apply(a, b)
    }
}

/// The hot loops: each is compiled twice (baseline, and AVX2+FMA picked at run time)
/// with `f` inlined, so they vectorize.
#[inline(always)]
fn zip_slices<A: Copy, B: Copy, O>(
    a: &[A],
    b: &[B],
    dst: &mut [MaybeUninit<O>],
    f: &impl Zip2<A, B, O>,
) {
    for ((o, &x), &y) in dst.iter_mut().zip(a).zip(b) {
        o.write(f.apply(x, y));
    }
}

#[inline(always)]
fn zip_scalar<A: Copy, B: Copy, O>(
    a: &[A],
    y: B,
    dst: &mut [MaybeUninit<O>],
    f: &impl Zip2<A, B, O>,
) {
    for (o, &x) in dst.iter_mut().zip(a) {
        o.write(f.apply(x, y));
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn zip_slices_avx2<A: Copy, B: Copy, O>(
    a: &[A],
    b: &[B],
    dst: &mut [MaybeUninit<O>],
    f: &impl Zip2<A, B, O>,
) {
    zip_slices(a, b, dst, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn zip_scalar_avx2<A: Copy, B: Copy, O>(
    a: &[A],
    y: B,
    dst: &mut [MaybeUninit<O>],
    f: &impl Zip2<A, B, O>,
) {
    zip_scalar(a, y, dst, f)
}

#[cfg(target_arch = "x86_64")]
pub(super) fn has_avx2() -> bool {
    std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
}

/// `dst[i] = f(a[i], b[i])`, the three the same length.
fn zip_run<A: Copy, B: Copy, O>(
    a: &[A],
    b: &[B],
    dst: &mut [MaybeUninit<O>],
    f: &impl Zip2<A, B, O>,
) {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU supports the features the function is compiled for.
        return unsafe { zip_slices_avx2(a, b, dst, f) };
    }
    zip_slices(a, b, dst, f)
}

#[inline(always)]
fn zip_init<A: Copy, B: Copy, O>(a: &[A], b: &[B], dst: &mut [O], f: &impl Zip2<A, B, O>) {
    for ((o, &x), &y) in dst.iter_mut().zip(a).zip(b) {
        *o = f.apply(x, y);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn zip_init_avx2<A: Copy, B: Copy, O>(a: &[A], b: &[B], dst: &mut [O], f: &impl Zip2<A, B, O>) {
    zip_init(a, b, dst, f)
}

/// `dst[i] = f(a[i], b[i])` into an existing buffer (over the shortest of the three),
/// on the calling thread: the loop [`zip_with`] runs, so the same values.
pub fn zip_into<A: Copy, B: Copy, O>(a: &[A], b: &[B], dst: &mut [O], f: &impl Zip2<A, B, O>) {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU supports the features the function is compiled for.
        return unsafe { zip_init_avx2(a, b, dst, f) };
    }
    zip_init(a, b, dst, f)
}

/// `dst[i] = f(a[i], y)`, `a` and `dst` the same length.
fn scalar_run<A: Copy, B: Copy, O>(
    a: &[A],
    y: B,
    dst: &mut [MaybeUninit<O>],
    f: &impl Zip2<A, B, O>,
) {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU supports the features the function is compiled for.
        return unsafe { zip_scalar_avx2(a, y, dst, f) };
    }
    zip_scalar(a, y, dst, f)
}

#[inline(always)]
fn update_body(d: &mut [f32], s: Option<&[f32]>, y: f32, f: &impl Fn(f32, f32) -> f32) {
    match s {
        Some(s) => d.iter_mut().zip(s).for_each(|(x, &v)| *x = f(*x, v)),
        None => d.iter_mut().for_each(|x| *x = f(*x, y)),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn update_avx2(d: &mut [f32], s: Option<&[f32]>, y: f32, f: &impl Fn(f32, f32) -> f32) {
    update_body(d, s, y, f)
}

/// `d[i] = f(d[i], s[i])` (over the shorter of the two), or `d[i] = f(d[i], y)` when
/// `s` is `None`: an in-place update with no temporary.
pub fn update(d: &mut [f32], s: Option<&[f32]>, y: f32, f: impl Fn(f32, f32) -> f32) {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU supports the features the function is compiled for.
        return unsafe { update_avx2(d, s, y, &f) };
    }
    update_body(d, s, y, &f)
}

/// `out[i] = f(a[i])`; `a` must have dtype `A`.
pub fn map<A: Elem, O: Elem>(a: &Tensor, f: impl Fn(A) -> O + Sync + Send) -> Result<Tensor> {
    let n = a.numel();
    let mut out = alloc_vec::<O>(n)?;
    {
        let buf = a.storage().borrow();
        let src = A::slice(&buf).ok_or_else(|| wrong_dtype(a, A::DTYPE))?;
        if a.is_contiguous() {
            let s = window(src, a.offset(), n)?;
            let g = ByFn(|x: A, _: ()| f(x));
            fill_par(&mut out, n, |i, d| {
                scalar_run(&s[i..i + d.len()], (), d, &g)
            })?;
        } else {
            for_each_offset(a.shape(), a.strides(), a.offset(), |o| out.push(f(src[o])));
        }
    }
    Ok(Tensor::from_vec(out, a.shape()))
}

/// The row length `w` when `b` is contiguous with the trailing dims of `shape` (leading
/// 1s aside) and `a` is contiguous with `shape` itself: `b` repeats along the rows.
fn row_width(a_full: bool, b: &Tensor, shape: &[usize]) -> Option<usize> {
    let dims: &[usize] = {
        let lead = b.shape().iter().take_while(|&&d| d == 1).count();
        &b.shape()[lead..]
    };
    let w: usize = dims.iter().product();
    let fits =
        a_full && b.is_contiguous() && w > 0 && dims.len() < shape.len() && shape.ends_with(dims);
    fits.then_some(w)
}

/// `out = f(a, b)` broadcast to `shape`; `a`, `b` must have dtypes `A`, `B`.
pub fn zip<A: Elem, B: Elem, O: Elem>(
    a: &Tensor,
    b: &Tensor,
    shape: &[usize],
    f: impl Fn(A, B) -> O + Sync + Send,
) -> Result<Tensor> {
    zip_with(a, b, shape, &ByFn(f))
}

/// [`zip`] with a [`Zip2`] (its body always inlined into the loops).
pub fn zip_with<A: Elem, B: Elem, O: Elem>(
    a: &Tensor,
    b: &Tensor,
    shape: &[usize],
    f: &impl Zip2<A, B, O>,
) -> Result<Tensor> {
    let n: usize = shape.iter().product();
    let mut out = alloc_vec::<O>(n)?;
    {
        let ba = a.storage().borrow();
        let bb = b.storage().borrow();
        let sa = A::slice(&ba).ok_or_else(|| wrong_dtype(a, A::DTYPE))?;
        let sb = B::slice(&bb).ok_or_else(|| wrong_dtype(b, B::DTYPE))?;
        let a_full = a.shape() == shape && a.is_contiguous();
        let b_full = b.shape() == shape && b.is_contiguous();
        if a_full && b_full {
            let (xa, xb) = (window(sa, a.offset(), n)?, window(sb, b.offset(), n)?);
            fill_par(&mut out, n, |i, d| {
                let end = i + d.len();
                zip_run(&xa[i..end], &xb[i..end], d, f)
            })?;
        } else if a_full && b.numel() == 1 {
            let y = window(sb, b.offset(), 1)?[0];
            let xa = window(sa, a.offset(), n)?;
            fill_par(&mut out, n, |i, d| scalar_run(&xa[i..i + d.len()], y, d, f))?;
        } else if b_full && a.numel() == 1 {
            let x = window(sa, a.offset(), 1)?[0];
            let xb = window(sb, b.offset(), n)?;
            let g = Swapped(f);
            fill_par(&mut out, n, |i, d| {
                scalar_run(&xb[i..i + d.len()], x, d, &g)
            })?;
        } else if let Some(w) = row_width(a_full, b, shape) {
            // A row (a bias) added to every row of a contiguous `a`.
            let (xa, xb) = (window(sa, a.offset(), n)?, window(sb, b.offset(), w)?);
            let Some(dst) = out.spare_capacity_mut().get_mut(..n) else {
                return Err(err(ErrorKind::RuntimeError, "internal: output too small"));
            };
            for (d, r) in dst.chunks_exact_mut(w).zip(xa.chunks_exact(w)) {
                zip_run(r, xb, d, f);
            }
            // SAFETY: the chunks cover all n elements (n is a multiple of w).
            unsafe { out.set_len(n) };
        } else if let Some((k, st)) = const_runs(a_full, b, shape) {
            // A per-channel `b` (`[1, C, 1, 1]` of an `[N, C, H, W]` `a`): one scalar
            // run per channel plane.
            let xa = window(sa, a.offset(), n)?;
            runs(&mut out, xa, shape, k, (&st, b.offset()), |r, j, d| {
                scalar_run(r, sb[j], d, f)
            })?;
        } else if let Some((k, st)) = const_runs(b_full, a, shape) {
            let xb = window(sb, b.offset(), n)?;
            let g = Swapped(f);
            runs(&mut out, xb, shape, k, (&st, a.offset()), |r, j, d| {
                scalar_run(r, sa[j], d, &g)
            })?;
        } else {
            let st_a = broadcast_strides(a.shape(), a.strides(), shape);
            let st_b = broadcast_strides(b.shape(), b.strides(), shape);
            for_each_offset2(shape, &st_a, a.offset(), &st_b, b.offset(), |i, j| {
                out.push(f.apply(sa[i], sb[j]))
            });
        }
    }
    Ok(Tensor::from_vec(out, shape))
}

/// Shortest run of a per-channel fast path (shorter runs gain nothing over the strided
/// loop).
const MIN_RUN: usize = 16;

/// When `full` is true and the broadcast operand `t` is constant over runs of trailing
/// dims (at least `MIN_RUN` elements): the number of leading dims `k` and `t`'s
/// broadcast strides.
fn const_runs(full: bool, t: &Tensor, shape: &[usize]) -> Option<(usize, Dims)> {
    if !full {
        return None;
    }
    let st = broadcast_strides(t.shape(), t.strides(), shape);
    let k = st.iter().rposition(|&s| s != 0).map_or(0, |i| i + 1);
    let inner: usize = shape[k..].iter().product();
    (k > 0 && k < shape.len() && inner >= MIN_RUN).then_some((k, st))
}

/// Fills `out` (empty, capacity >= n) run by run: `body(run of xs, offset of the
/// broadcast operand's element, dst)` for each position of the leading `k` dims.
fn runs<X, O>(
    out: &mut Vec<O>,
    xs: &[X],
    shape: &[usize],
    k: usize,
    (st, off): (&[usize], usize),
    mut body: impl FnMut(&[X], usize, &mut [MaybeUninit<O>]),
) -> Result<()> {
    let n: usize = shape.iter().product();
    let inner: usize = shape[k..].iter().product();
    let Some(dst) = out.spare_capacity_mut().get_mut(..n) else {
        return Err(err(ErrorKind::RuntimeError, "internal: output too small"));
    };
    let mut chunks = dst.chunks_exact_mut(inner).zip(xs.chunks_exact(inner));
    let mut written = 0;
    for_each_offset(&shape[..k], &st[..k], off, |j| {
        if let Some((d, r)) = chunks.next() {
            body(r, j, d);
            written += inner;
        }
    });
    if written != n {
        return Err(err(ErrorKind::RuntimeError, "internal: broadcast runs"));
    }
    // SAFETY: all n elements were written, run by run (scalar_run writes its whole dst).
    unsafe { out.set_len(n) };
    Ok(())
}

/// Write `vals` (row-major, `dst.numel()` of them) into `dst`'s elements, in place.
pub fn assign<T: Elem>(dst: &Tensor, vals: &[T]) -> Result<()> {
    let mut buf = dst.storage().borrow_mut();
    let d = T::slice_mut(&mut buf).ok_or_else(|| wrong_dtype(dst, T::DTYPE))?;
    if dst.is_contiguous() {
        let n = dst.numel();
        if let Some(s) = d.get_mut(dst.offset()..dst.offset() + n) {
            s.copy_from_slice(vals.get(..n).unwrap_or(vals));
        }
        return Ok(());
    }
    let mut k = 0;
    for_each_offset(dst.shape(), dst.strides(), dst.offset(), |o| {
        if let Some(&v) = vals.get(k) {
            d[o] = v;
        }
        k += 1;
    });
    Ok(())
}
