//! Convolution kernels (im2col + gemm) on contiguous NCHW float32/float64 data, with
//! their backward kernels: the batch splits into parts run by the team of threads.

use super::matmul::{gemm, GemmFloat, Mat};
use crate::error::{ErrorKind, Result};
use crate::tensor::dtype::Real;
use crate::tensor::err;
use crate::tensor::storage::alloc_filled;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// The element types of the convolution and pooling kernels (f32, f64).
pub trait ConvFloat: GemmFloat + Real {}

impl ConvFloat for f32 {}
impl ConvFloat for f64 {}

/// conv2d hyper-parameters (per spatial dim: (h, w)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConvParams {
    pub stride: (usize, usize),
    pub padding: (usize, usize),
    pub dilation: (usize, usize),
}

/// Pooling hyper-parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PoolParams {
    pub kernel: (usize, usize),
    pub stride: (usize, usize),
    pub padding: (usize, usize),
}

/// Output size of a sliding window, or a ShapeError.
pub fn out_size(op: &str, input: usize, k: usize, s: usize, p: usize, d: usize) -> Result<usize> {
    if s == 0 {
        // PyTorch's message (its check comes before any size check)
        return Err(err(
            ErrorKind::RuntimeError,
            format!("{op}: non-positive stride is not supported"),
        ));
    }
    if d == 0 {
        return Err(err(
            ErrorKind::RuntimeError,
            format!("{op}: dilation should be greater than zero"),
        ));
    }
    let span = d * (k.max(1) - 1) + 1;
    if input + 2 * p < span {
        return Err(err(
            ErrorKind::ShapeError,
            format!(
                "{op}: input size {input} (padded {}) is smaller than the kernel extent {span}",
                input + 2 * p
            ),
        ));
    }
    Ok((input + 2 * p - span) / s + 1)
}

/// Geometry of one conv: input (c, h, w), kernel (kh, kw), output (oh, ow).
#[derive(Debug, Clone, Copy)]
pub struct Geom {
    pub c: usize,
    pub h: usize,
    pub w: usize,
    pub kh: usize,
    pub kw: usize,
    pub oh: usize,
    pub ow: usize,
    pub p: ConvParams,
}

impl Geom {
    fn rows(&self) -> usize {
        self.c * self.kh * self.kw
    }
    pub(super) fn cols(&self) -> usize {
        self.oh * self.ow
    }
    /// The input row of output row `oy` and kernel row `ky`, if inside the image.
    #[inline]
    pub(super) fn src_y(&self, oy: usize, ky: usize) -> Option<usize> {
        let y = (oy * self.p.stride.0 + ky * self.p.dilation.0).checked_sub(self.p.padding.0)?;
        (y < self.h).then_some(y)
    }
    /// The output columns `x0..x1` whose input column for kernel column `kx` lies inside
    /// the image (a contiguous range), and the input column of `x0`.
    #[inline]
    pub(super) fn valid_x(&self, kx: usize) -> (usize, usize, usize) {
        let (s, p, off) = (self.p.stride.1, self.p.padding.1, kx * self.p.dilation.1);
        let x1 = if self.w + p > off {
            (self.w + p - off).div_ceil(s).min(self.ow)
        } else {
            0
        };
        let x0 = if p > off { (p - off).div_ceil(s) } else { 0 }.min(x1);
        (x0, x1, (x0 * s + off).saturating_sub(p))
    }
    /// A 1x1 kernel with stride 1 and no padding: the image is its own im2col matrix.
    fn pointwise(&self) -> bool {
        self.kh == 1 && self.kw == 1 && self.oh == self.h && self.ow == self.w
    }
}

/// Multiply-adds per part of a batch split: a kernel over `n` images runs as about
/// `total / PART_MACS` parts (at most one per image, at most `MAX_PARTS`), claimed by
/// the team's threads. The split depends on the sizes alone, not on the thread count,
/// so summed weight gradients are the same on every machine.
const PART_MACS: usize = 1 << 20;
const MAX_PARTS: usize = 16;

/// (parts, images per part) of `n` images of `per_image` multiply-adds each.
pub(super) fn split(n: usize, per_image: usize) -> (usize, usize) {
    let parts = (n.saturating_mul(per_image) / PART_MACS).clamp(1, MAX_PARTS.min(n.max(1)));
    let per = n.div_ceil(parts).max(1);
    (n.div_ceil(per).max(1), per)
}

/// Runs `f(part)` for `0..parts` on the team. A part's error stops the parts not yet
/// begun and is returned; each part run on the calling thread first polls the
/// engine's interrupt and deadline (the helpers have none to poll).
pub(super) fn run_parts(parts: usize, f: &(dyn Fn(usize) -> Result<()> + Sync)) -> Result<()> {
    let stop = AtomicBool::new(false);
    let first: Mutex<Option<(ErrorKind, String)>> = Mutex::new(None);
    super::team::for_each(parts, &|t| {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        if let Err(e) = crate::tensor::cancel::poll_kernel().and_then(|()| f(t)) {
            stop.store(true, Ordering::Relaxed);
            if let Ok(mut slot) = first.lock() {
                slot.get_or_insert((e.kind, e.message));
            }
        }
    });
    match first.into_inner().ok().flatten() {
        Some((kind, msg)) => Err(err(kind, msg)),
        None => Ok(()),
    }
}

/// The contiguous blocks of `len` elements of `v`, one per part, each behind its own
/// lock (a part locks only its own: no contention).
pub(super) fn blocks<T>(v: &mut [T], len: usize) -> Vec<Mutex<&mut [T]>> {
    v.chunks_mut(len.max(1)).map(Mutex::new).collect()
}

/// Locks a part's block (a poisoned lock, after a panic, is an internal error).
pub(super) fn lock<'a, 'b, T>(
    m: &'a Mutex<&'b mut [T]>,
) -> Result<std::sync::MutexGuard<'a, &'b mut [T]>> {
    m.lock()
        .map_err(|_| err(ErrorKind::RuntimeError, "internal: a kernel part panicked"))
}

/// im2col of one image `[c, h, w]` into `cols [c*kh*kw, oh*ow]` (row by row: a
/// stride-1 row is one copy between its zero-padded ends).
fn im2col<T: ConvFloat>(img: &[T], g: &Geom, cols: &mut [T]) {
    let (l, hw, sw) = (g.cols(), g.h * g.w, g.p.stride.1);
    for c in 0..g.c {
        let plane = &img[c * hw..(c + 1) * hw];
        for ky in 0..g.kh {
            for kx in 0..g.kw {
                let row = ((c * g.kh + ky) * g.kw + kx) * l;
                let (x0, x1, xs) = g.valid_x(kx);
                for oy in 0..g.oh {
                    let d = &mut cols[row + oy * g.ow..row + (oy + 1) * g.ow];
                    let Some(y) = g.src_y(oy, ky) else {
                        d.fill(T::ZERO);
                        continue;
                    };
                    d[..x0].fill(T::ZERO);
                    d[x1..].fill(T::ZERO);
                    let src = &plane[y * g.w..(y + 1) * g.w];
                    if sw == 1 {
                        d[x0..x1].copy_from_slice(&src[xs..xs + (x1 - x0)]);
                    } else {
                        for (i, v) in d[x0..x1].iter_mut().enumerate() {
                            *v = src[xs + i * sw];
                        }
                    }
                }
            }
        }
    }
}

/// col2im: add `cols` back into the image gradient.
fn col2im<T: ConvFloat>(cols: &[T], g: &Geom, img: &mut [T]) {
    let (l, hw, sw) = (g.cols(), g.h * g.w, g.p.stride.1);
    for c in 0..g.c {
        let plane = &mut img[c * hw..(c + 1) * hw];
        for ky in 0..g.kh {
            for kx in 0..g.kw {
                let row = ((c * g.kh + ky) * g.kw + kx) * l;
                let (x0, x1, xs) = g.valid_x(kx);
                for oy in 0..g.oh {
                    let Some(y) = g.src_y(oy, ky) else {
                        continue;
                    };
                    let s = &cols[row + oy * g.ow + x0..row + oy * g.ow + x1];
                    let dst = &mut plane[y * g.w..(y + 1) * g.w];
                    if sw == 1 {
                        for (d, &v) in dst[xs..xs + s.len()].iter_mut().zip(s) {
                            *d = *d + v;
                        }
                    } else {
                        for (i, &v) in s.iter().enumerate() {
                            dst[xs + i * sw] = dst[xs + i * sw] + v;
                        }
                    }
                }
            }
        }
    }
}

fn mat<T>(data: &[T], rs: usize, cs: usize) -> Mat<'_, T> {
    Mat {
        data,
        offset: 0,
        rs,
        cs,
    }
}

/// Forward: x `[n, c, h, w]`, weight `[o, c, kh, kw]` -> `[n, o, oh, ow]`.
pub fn conv2d_forward<T: ConvFloat>(
    x: &[T],
    wt: &[T],
    n: usize,
    o: usize,
    g: &Geom,
) -> Result<Vec<T>> {
    let (r, l, img) = (g.rows(), g.cols(), g.c * g.h * g.w);
    let mut out = alloc_filled(n * o * l, T::ZERO)?;
    if out.is_empty() {
        return Ok(out);
    }
    let (parts, per) = split(n, o * r * l);
    let outs = blocks(&mut out, per * o * l);
    run_parts(parts, &|t| {
        let mut dst = lock(&outs[t])?;
        let mut cols = if g.pointwise() {
            Vec::new()
        } else {
            alloc_filled(r * l, T::ZERO)?
        };
        for (i, ob) in dst.chunks_mut(o * l).enumerate() {
            let xb = &x[(t * per + i) * img..(t * per + i + 1) * img];
            let rhs = if g.pointwise() {
                xb
            } else {
                im2col(xb, g, &mut cols);
                &cols
            };
            gemm(o, l, r, ob, mat(wt, r, 1), mat(rhs, l, 1), false)?;
        }
        Ok(())
    })?;
    drop(outs);
    Ok(out)
}

/// (grad_x, grad_w) of a conv backward, each only when asked for.
pub type Grads<T> = (Option<Vec<T>>, Option<Vec<T>>);

/// Backward from grad_out `[n, o, oh, ow]`: (grad_x if `need.0`, grad_w if `need.1`).
/// The weight gradient is summed per part (images in order), then over the parts in
/// order.
pub fn conv2d_backward<T: ConvFloat>(
    x: &[T],
    wt: &[T],
    gout: &[T],
    (n, o): (usize, usize),
    g: &Geom,
    need: (bool, bool),
) -> Result<Grads<T>> {
    let (r, l, img) = (g.rows(), g.cols(), g.c * g.h * g.w);
    let mut gx = alloc_filled(if need.0 { n * img } else { 0 }, T::ZERO)?;
    if n * o * l * r * img == 0 {
        let gw = alloc_filled(if need.1 { o * r } else { 0 }, T::ZERO)?;
        return Ok((need.0.then_some(gx), need.1.then_some(gw)));
    }
    let (parts, per) = split(n, o * r * l * (need.0 as usize + need.1 as usize));
    let mut gws = alloc_filled(if need.1 { parts * o * r } else { 0 }, T::ZERO)?;
    let gxs = blocks(&mut gx, per * img);
    let gwp = blocks(&mut gws, o * r);
    run_parts(parts, &|t| {
        let scratch = if g.pointwise() { 0 } else { r * l };
        let mut cols = alloc_filled(if need.1 { scratch } else { 0 }, T::ZERO)?;
        let mut gcols = alloc_filled(if need.0 { scratch } else { 0 }, T::ZERO)?;
        let (b0, b1) = (t * per, n.min((t + 1) * per));
        for b in b0..b1 {
            let go = &gout[b * o * l..(b + 1) * o * l];
            let xb = &x[b * img..(b + 1) * img];
            if need.1 {
                let rhs = if g.pointwise() {
                    xb
                } else {
                    im2col(xb, g, &mut cols);
                    &cols
                };
                // gw[o, r] += go[o, l] @ cols^T[l, r]
                let mut gw = lock(&gwp[t])?;
                gemm(o, r, l, &mut gw, mat(go, l, 1), mat(rhs, 1, l), true)?;
            }
            if need.0 {
                let mut gxb = lock(&gxs[t])?;
                let dst = &mut gxb[(b - b0) * img..(b - b0 + 1) * img];
                // gcols[r, l] = w^T[r, o] @ go[o, l], added back into the image
                if g.pointwise() {
                    gemm(r, l, o, dst, mat(wt, 1, r), mat(go, l, 1), false)?;
                } else {
                    gemm(r, l, o, &mut gcols, mat(wt, 1, r), mat(go, l, 1), false)?;
                    col2im(&gcols, g, dst);
                }
            }
        }
        Ok(())
    })?;
    drop((gxs, gwp));
    let gw = need.1.then(|| {
        let mut parts = gws.chunks_exact(o * r);
        let mut gw = parts.next().map(<[T]>::to_vec).unwrap_or_default();
        for p in parts {
            for (a, &b) in gw.iter_mut().zip(p) {
                *a = *a + b;
            }
        }
        gw
    });
    Ok((need.0.then_some(gx), gw))
}
