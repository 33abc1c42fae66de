//! Convolution (im2col + gemm) and 2-D pooling kernels on contiguous NCHW f32 data,
//! with their backward kernels.

use super::matmul::{gemm_f32, Mat};
use crate::error::{ErrorKind, Result};
use crate::tensor::err;
use crate::tensor::storage::alloc_filled;

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
    fn cols(&self) -> usize {
        self.oh * self.ow
    }
    /// Input coordinate for output (oy, ox) and kernel (ky, kx), if inside the image.
    #[inline]
    fn src(&self, oy: usize, ox: usize, ky: usize, kx: usize) -> Option<(usize, usize)> {
        let y = (oy * self.p.stride.0 + ky * self.p.dilation.0).checked_sub(self.p.padding.0)?;
        let x = (ox * self.p.stride.1 + kx * self.p.dilation.1).checked_sub(self.p.padding.1)?;
        (y < self.h && x < self.w).then_some((y, x))
    }
}

/// im2col of one image `[c, h, w]` into `cols [c*kh*kw, oh*ow]`.
fn im2col(img: &[f32], g: &Geom, cols: &mut [f32]) {
    let l = g.cols();
    for c in 0..g.c {
        for ky in 0..g.kh {
            for kx in 0..g.kw {
                let row = (c * g.kh + ky) * g.kw + kx;
                for oy in 0..g.oh {
                    for ox in 0..g.ow {
                        cols[row * l + oy * g.ow + ox] = match g.src(oy, ox, ky, kx) {
                            Some((y, x)) => img[(c * g.h + y) * g.w + x],
                            None => 0.0,
                        };
                    }
                }
            }
        }
    }
}

/// col2im: add `cols` back into the image gradient.
fn col2im(cols: &[f32], g: &Geom, img: &mut [f32]) {
    let l = g.cols();
    for c in 0..g.c {
        for ky in 0..g.kh {
            for kx in 0..g.kw {
                let row = (c * g.kh + ky) * g.kw + kx;
                for oy in 0..g.oh {
                    for ox in 0..g.ow {
                        if let Some((y, x)) = g.src(oy, ox, ky, kx) {
                            img[(c * g.h + y) * g.w + x] += cols[row * l + oy * g.ow + ox];
                        }
                    }
                }
            }
        }
    }
}

fn mat(data: &[f32], rs: usize, cs: usize) -> Mat<'_> {
    Mat {
        data,
        offset: 0,
        rs,
        cs,
    }
}

/// Forward: x `[n, c, h, w]`, weight `[o, c, kh, kw]` -> `[n, o, oh, ow]`.
pub fn conv2d_forward(x: &[f32], wt: &[f32], n: usize, o: usize, g: &Geom) -> Result<Vec<f32>> {
    let (r, l) = (g.rows(), g.cols());
    let mut out = alloc_filled(n * o * l, 0.0f32)?;
    let mut cols = alloc_filled(r * l, 0.0f32)?;
    let img = g.c * g.h * g.w;
    for b in 0..n {
        im2col(&x[b * img..(b + 1) * img], g, &mut cols);
        gemm_f32(
            o,
            l,
            r,
            &mut out[b * o * l..(b + 1) * o * l],
            mat(wt, r, 1),
            mat(&cols, l, 1),
            false,
        )?;
    }
    Ok(out)
}

/// Backward: (grad_x, grad_w) from grad_out `[n, o, oh, ow]`.
pub fn conv2d_backward(
    x: &[f32],
    wt: &[f32],
    gout: &[f32],
    n: usize,
    o: usize,
    g: &Geom,
) -> Result<(Vec<f32>, Vec<f32>)> {
    let (r, l) = (g.rows(), g.cols());
    let img = g.c * g.h * g.w;
    let mut gx = alloc_filled(n * img, 0.0f32)?;
    let mut gw = alloc_filled(o * r, 0.0f32)?;
    let mut cols = alloc_filled(r * l, 0.0f32)?;
    let mut gcols = alloc_filled(r * l, 0.0f32)?;
    for b in 0..n {
        let go = &gout[b * o * l..(b + 1) * o * l];
        im2col(&x[b * img..(b + 1) * img], g, &mut cols);
        // gw[o, r] += go[o, l] @ cols^T[l, r]
        gemm_f32(o, r, l, &mut gw, mat(go, l, 1), mat(&cols, 1, l), true)?;
        // gcols[r, l] = w^T[r, o] @ go[o, l]
        gemm_f32(r, l, o, &mut gcols, mat(wt, 1, r), mat(go, l, 1), false)?;
        col2im(&gcols, g, &mut gx[b * img..(b + 1) * img]);
    }
    Ok((gx, gw))
}

/// Max pooling over `planes` planes of `[h, w]`: (values, flat argmax within the plane).
pub fn max_pool_forward(x: &[f32], planes: usize, g: &Geom) -> Result<(Vec<f32>, Vec<i64>)> {
    let l = g.cols();
    let mut out = alloc_filled(planes * l, f32::NEG_INFINITY)?;
    let mut arg = alloc_filled(planes * l, -1i64)?;
    for p in 0..planes {
        let plane = &x[p * g.h * g.w..(p + 1) * g.h * g.w];
        for oy in 0..g.oh {
            for ox in 0..g.ow {
                let k = p * l + oy * g.ow + ox;
                for ky in 0..g.kh {
                    for kx in 0..g.kw {
                        if let Some((y, xx)) = g.src(oy, ox, ky, kx) {
                            let v = plane[y * g.w + xx];
                            if v > out[k] || v.is_nan() || arg[k] < 0 {
                                out[k] = v;
                                arg[k] = (y * g.w + xx) as i64;
                            }
                        }
                    }
                }
            }
        }
    }
    Ok((out, arg))
}

/// Max pooling backward: route each output gradient to its argmax.
pub fn max_pool_backward(gout: &[f32], arg: &[i64], planes: usize, g: &Geom) -> Result<Vec<f32>> {
    let l = g.cols();
    let hw = g.h * g.w;
    let mut gx = alloc_filled(planes * hw, 0.0f32)?;
    for p in 0..planes {
        for j in 0..l {
            let a = arg[p * l + j];
            if a >= 0 {
                gx[p * hw + a as usize] += gout[p * l + j];
            }
        }
    }
    Ok(gx)
}

/// Average pooling (padding counted in the divisor, PyTorch's default).
pub fn avg_pool_forward(x: &[f32], planes: usize, g: &Geom) -> Result<Vec<f32>> {
    let l = g.cols();
    let inv = 1.0 / (g.kh * g.kw) as f32;
    let mut out = alloc_filled(planes * l, 0.0f32)?;
    for p in 0..planes {
        let plane = &x[p * g.h * g.w..(p + 1) * g.h * g.w];
        for oy in 0..g.oh {
            for ox in 0..g.ow {
                let mut s = 0.0f32;
                for ky in 0..g.kh {
                    for kx in 0..g.kw {
                        if let Some((y, xx)) = g.src(oy, ox, ky, kx) {
                            s += plane[y * g.w + xx];
                        }
                    }
                }
                out[p * l + oy * g.ow + ox] = s * inv;
            }
        }
    }
    Ok(out)
}

/// Average pooling backward.
pub fn avg_pool_backward(gout: &[f32], planes: usize, g: &Geom) -> Result<Vec<f32>> {
    let l = g.cols();
    let hw = g.h * g.w;
    let inv = 1.0 / (g.kh * g.kw) as f32;
    let mut gx = alloc_filled(planes * hw, 0.0f32)?;
    for p in 0..planes {
        for oy in 0..g.oh {
            for ox in 0..g.ow {
                let v = gout[p * l + oy * g.ow + ox] * inv;
                for ky in 0..g.kh {
                    for kx in 0..g.kw {
                        if let Some((y, xx)) = g.src(oy, ox, ky, kx) {
                            gx[p * hw + y * g.w + xx] += v;
                        }
                    }
                }
            }
        }
    }
    Ok(gx)
}
