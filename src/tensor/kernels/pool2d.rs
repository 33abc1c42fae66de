//! 2-D max and average pooling kernels on contiguous `[planes, h, w]` float32/float64
//! data, with their backward kernels: the planes split into parts run by the team.

use super::conv::{blocks, lock, run_parts, split, ConvFloat, Geom};
use super::matmul::GemmFloat;
use crate::error::Result;
use crate::tensor::storage::alloc_filled;

/// The input rows `y0..y1` and columns `x0..x1` of output (oy, ox)'s window, clipped to
/// the image (empty when the window lies in the padding).
#[inline]
fn window(g: &Geom, oy: usize, ox: usize) -> ((usize, usize), (usize, usize)) {
    let clip = |o: usize, s: usize, p: usize, k: usize, n: usize| {
        let start = o * s;
        (
            start.saturating_sub(p).min(n),
            (start + k).saturating_sub(p).min(n),
        )
    };
    (
        clip(oy, g.p.stride.0, g.p.padding.0, g.kh, g.h),
        clip(ox, g.p.stride.1, g.p.padding.1, g.kw, g.w),
    )
}

/// Max pooling over `planes` planes of `[h, w]`: (values, flat argmax within the plane).
/// As PyTorch's: a NaN wins its window; a window of -inf keeps its first element.
pub fn max_pool_forward<T: ConvFloat>(
    x: &[T],
    planes: usize,
    g: &Geom,
) -> Result<(Vec<T>, Vec<i64>)> {
    let (l, hw) = (g.cols(), g.h * g.w);
    let mut out = alloc_filled(planes * l, T::NEG_INFINITY)?;
    let mut arg = alloc_filled(planes * l, -1i64)?;
    if out.is_empty() {
        return Ok((out, arg));
    }
    let (parts, per) = split(planes, l * g.kh * g.kw * 64);
    let (outs, args) = (blocks(&mut out, per * l), blocks(&mut arg, per * l));
    run_parts(parts, &|t| {
        let (mut ov, mut av) = (lock(&outs[t])?, lock(&args[t])?);
        for (i, (o, a)) in ov.chunks_mut(l).zip(av.chunks_mut(l)).enumerate() {
            let plane = &x[(t * per + i) * hw..(t * per + i + 1) * hw];
            if is_2x2(g) {
                max_pool_2x2(plane, g, o, a);
                continue;
            }
            for oy in 0..g.oh {
                for ox in 0..g.ow {
                    let ((y0, y1), (x0, x1)) = window(g, oy, ox);
                    let (mut best, mut at) = (T::NEG_INFINITY, -1i64);
                    for y in y0..y1 {
                        for (xx, &v) in plane[y * g.w + x0..y * g.w + x1].iter().enumerate() {
                            // `v != v`: NaN
                            #[allow(clippy::eq_op)]
                            if v > best || v != v || at < 0 {
                                best = v;
                                at = (y * g.w + x0 + xx) as i64;
                            }
                        }
                    }
                    o[oy * g.ow + ox] = best;
                    a[oy * g.ow + ox] = at;
                }
            }
        }
        Ok(())
    })?;
    drop((outs, args));
    Ok((out, arg))
}

/// Whether the windows are 2x2, stride 2, unpadded (`MaxPool2d(2)`): each lies inside
/// the image.
fn is_2x2(g: &Geom) -> bool {
    (g.kh, g.kw) == (2, 2) && g.p.stride == (2, 2) && g.p.padding == (0, 0)
}

/// One plane's 2x2 max pooling (see [`is_2x2`]): the general loop's comparisons in its
/// order (row by row), without its clipping.
#[inline]
fn max_pool_2x2<T: ConvFloat>(plane: &[T], g: &Geom, o: &mut [T], a: &mut [i64]) {
    for oy in 0..g.oh {
        let (r0, r1) = (2 * oy * g.w, (2 * oy + 1) * g.w);
        let rows = plane[r0..r0 + 2 * g.ow].chunks_exact(2);
        let below = plane[r1..r1 + 2 * g.ow].chunks_exact(2);
        let outs = o[oy * g.ow..(oy + 1) * g.ow].iter_mut();
        let args = a[oy * g.ow..(oy + 1) * g.ow].iter_mut();
        for (ox, (((p, q), ov), av)) in rows.zip(below).zip(outs).zip(args).enumerate() {
            let (mut best, mut at) = (p[0], r0 + 2 * ox);
            for (v, j) in [
                (p[1], r0 + 2 * ox + 1),
                (q[0], r1 + 2 * ox),
                (q[1], r1 + 2 * ox + 1),
            ] {
                // `v != v`: NaN
                #[allow(clippy::eq_op)]
                if v > best || v != v {
                    best = v;
                    at = j;
                }
            }
            *ov = best;
            *av = at as i64;
        }
    }
}

/// Max pooling backward: route each output gradient to its argmax.
pub fn max_pool_backward<T: ConvFloat>(
    gout: &[T],
    arg: &[i64],
    planes: usize,
    g: &Geom,
) -> Result<Vec<T>> {
    let (l, hw) = (g.cols(), g.h * g.w);
    let mut gx = alloc_filled(planes * hw, T::ZERO)?;
    if gx.is_empty() || l == 0 {
        return Ok(gx);
    }
    let (parts, per) = split(planes, (l + hw) * 64);
    let gxs = blocks(&mut gx, per * hw);
    run_parts(parts, &|t| {
        let mut dst = lock(&gxs[t])?;
        for (i, d) in dst.chunks_mut(hw).enumerate() {
            let p = t * per + i;
            let (go, ar) = (&gout[p * l..(p + 1) * l], &arg[p * l..(p + 1) * l]);
            for (&v, &a) in go.iter().zip(ar) {
                if let Some(cell) = usize::try_from(a).ok().and_then(|a| d.get_mut(a)) {
                    *cell = *cell + v;
                }
            }
        }
        Ok(())
    })?;
    drop(gxs);
    Ok(gx)
}

/// Average pooling (padding counted in the divisor, PyTorch's default).
pub fn avg_pool_forward<T: ConvFloat>(x: &[T], planes: usize, g: &Geom) -> Result<Vec<T>> {
    let (l, hw) = (g.cols(), g.h * g.w);
    let inv = <T as GemmFloat>::ONE / T::from_f64((g.kh * g.kw) as f64);
    let mut out = alloc_filled(planes * l, T::ZERO)?;
    if out.is_empty() {
        return Ok(out);
    }
    let (parts, per) = split(planes, l * g.kh * g.kw * 64);
    let outs = blocks(&mut out, per * l);
    run_parts(parts, &|t| {
        let mut ov = lock(&outs[t])?;
        for (i, o) in ov.chunks_mut(l).enumerate() {
            let plane = &x[(t * per + i) * hw..(t * per + i + 1) * hw];
            for oy in 0..g.oh {
                for ox in 0..g.ow {
                    let ((y0, y1), (x0, x1)) = window(g, oy, ox);
                    let mut s = T::ZERO;
                    for y in y0..y1 {
                        for &v in &plane[y * g.w + x0..y * g.w + x1] {
                            s = s + v;
                        }
                    }
                    o[oy * g.ow + ox] = s * inv;
                }
            }
        }
        Ok(())
    })?;
    drop(outs);
    Ok(out)
}

/// Average pooling backward.
pub fn avg_pool_backward<T: ConvFloat>(gout: &[T], planes: usize, g: &Geom) -> Result<Vec<T>> {
    let (l, hw) = (g.cols(), g.h * g.w);
    let inv = <T as GemmFloat>::ONE / T::from_f64((g.kh * g.kw) as f64);
    let mut gx = alloc_filled(planes * hw, T::ZERO)?;
    if gx.is_empty() || l == 0 {
        return Ok(gx);
    }
    let (parts, per) = split(planes, l * g.kh * g.kw * 64);
    let gxs = blocks(&mut gx, per * hw);
    run_parts(parts, &|t| {
        let mut dst = lock(&gxs[t])?;
        for (i, d) in dst.chunks_mut(hw).enumerate() {
            let go = &gout[(t * per + i) * l..(t * per + i + 1) * l];
            for oy in 0..g.oh {
                for ox in 0..g.ow {
                    let v = go[oy * g.ow + ox] * inv;
                    let ((y0, y1), (x0, x1)) = window(g, oy, ox);
                    for y in y0..y1 {
                        for cell in &mut d[y * g.w + x0..y * g.w + x1] {
                            *cell = *cell + v;
                        }
                    }
                }
            }
        }
        Ok(())
    })?;
    drop(gxs);
    Ok(gx)
}
