//! Fused LSTM and GRU layers over whole sequences (float32 or float64, one generic
//! code path over [`RnnFloat`]): per step one gemm of the hidden
//! state with W_hh and one pass over the gates; the backward walks the steps in reverse
//! from the gate activations the forward saved, then forms dW_hh with one gemm. Every
//! step polls the running engine's interrupt and deadline (`cancel::poll_kernel`): a
//! step's gemm of a few rows is one block, which the gemm itself never polls.
//!
//! Shapes: `T` steps, `B` batch rows, `H` hidden units; `xp` is the input projection
//! x W_ih^T (+ biases) for every step, `[T, B, G*H]` with G = 4 (LSTM: i, f, g, o) or
//! 3 (GRU: r, z, n); `w` is W_hh `[G*H, H]`, row-major.

use super::matmul::{gemm, GemmFloat, Mat};
use crate::error::Result;
use crate::tensor::cancel::poll_kernel;
use crate::tensor::dtype::Real;

/// The element types of the recurrent kernels: float32 and float64.
pub trait RnnFloat: Real + GemmFloat + std::ops::Neg<Output = Self> {}

impl<T: Real + GemmFloat + std::ops::Neg<Output = T>> RnnFloat for T {}

fn one<T: RnnFloat>() -> T {
    <T as Real>::ONE
}

fn zeros<T: RnnFloat>(n: usize) -> Vec<T> {
    vec![<T as GemmFloat>::ZERO; n]
}

fn sigmoid<T: RnnFloat>(x: T) -> T {
    one::<T>() / (one::<T>() + (-x).exp())
}

/// `dst[B, G*H] (+)= h[B, H] @ w^T`.
fn hidden_gemm<T: RnnFloat>(
    dst: &mut [T],
    h: &[T],
    w: &[T],
    b: usize,
    gh: usize,
    hid: usize,
    acc: bool,
) -> Result<()> {
    let lhs = Mat {
        data: h,
        offset: 0,
        rs: hid,
        cs: 1,
    };
    let rhs = Mat {
        data: w,
        offset: 0,
        rs: 1,
        cs: hid,
    };
    gemm(b, gh, hid, dst, lhs, rhs, acc)
}

/// `dst[B, H] = d[B, G*H] @ w` (the gradient reaching the previous hidden state).
fn hidden_gemm_back<T: RnnFloat>(
    dst: &mut [T],
    d: &[T],
    w: &[T],
    b: usize,
    gh: usize,
    hid: usize,
) -> Result<()> {
    let lhs = Mat {
        data: d,
        offset: 0,
        rs: gh,
        cs: 1,
    };
    let rhs = Mat {
        data: w,
        offset: 0,
        rs: hid,
        cs: 1,
    };
    gemm(b, hid, gh, dst, lhs, rhs, false)
}

/// `dW[G*H, H] = sum_t d_t^T @ h_{t-1}`: `d` is `[T*B, G*H]`, `prev` `[T*B, H]`.
fn weight_grad<T: RnnFloat>(
    d: &[T],
    prev: &[T],
    rows: usize,
    gh: usize,
    hid: usize,
) -> Result<Vec<T>> {
    let mut dw = zeros::<T>(gh * hid);
    let lhs = Mat {
        data: d,
        offset: 0,
        rs: 1,
        cs: gh,
    };
    let rhs = Mat {
        data: prev,
        offset: 0,
        rs: hid,
        cs: 1,
    };
    gemm(gh, hid, rows, &mut dw, lhs, rhs, false)?;
    Ok(dw)
}

/// The previous hidden state of every step: `[h0, h_0, ..., h_{T-2}]` as `[T*B, H]`,
/// read from rows of `seq` (`[T, B, width]`, the hidden state in its first H columns).
fn previous_states<T: RnnFloat>(
    h0: &[T],
    seq: &[T],
    t: usize,
    b: usize,
    hid: usize,
    width: usize,
) -> Vec<T> {
    let mut prev = Vec::with_capacity(t * b * hid);
    prev.extend_from_slice(h0);
    for row in 0..(t.saturating_sub(1) * b) {
        prev.extend_from_slice(&seq[row * width..row * width + hid]);
    }
    prev
}

/// LSTM forward: `[T, B, 2H]` (each step's h then c) and the activated gates
/// `[T, B, 4H]` (sigmoid i, f, o; tanh g) for the backward.
pub fn lstm_forward<T: RnnFloat>(
    xp: &[T],
    h0: &[T],
    c0: &[T],
    w: &[T],
    t: usize,
    b: usize,
    hid: usize,
) -> Result<(Vec<T>, Vec<T>)> {
    let gh = 4 * hid;
    let mut out = zeros::<T>(t * b * 2 * hid);
    let mut acts = xp.to_vec();
    let mut h = h0.to_vec();
    let mut c = c0.to_vec();
    for s in 0..t {
        poll_kernel()?;
        let gates = &mut acts[s * b * gh..(s + 1) * b * gh];
        hidden_gemm(gates, &h, w, b, gh, hid, true)?;
        for r in 0..b {
            let g = &mut gates[r * gh..(r + 1) * gh];
            let o_row = &mut out[(s * b + r) * 2 * hid..(s * b + r + 1) * 2 * hid];
            for j in 0..hid {
                let (i, f) = (sigmoid(g[j]), sigmoid(g[hid + j]));
                let (gg, o) = (g[2 * hid + j].tanh(), sigmoid(g[3 * hid + j]));
                g[j] = i;
                g[hid + j] = f;
                g[2 * hid + j] = gg;
                g[3 * hid + j] = o;
                let cn = f * c[r * hid + j] + i * gg;
                c[r * hid + j] = cn;
                let hn = o * cn.tanh();
                h[r * hid + j] = hn;
                o_row[j] = hn;
                o_row[hid + j] = cn;
            }
        }
    }
    Ok((out, acts))
}

/// LSTM gradients from `gy` (`[T, B, 2H]`, the gradient of each step's h and c):
/// (d xp, d h0, d c0, d W_hh).
#[allow(clippy::too_many_arguments)]
pub fn lstm_backward<T: RnnFloat>(
    gy: &[T],
    out: &[T],
    acts: &[T],
    h0: &[T],
    c0: &[T],
    w: &[T],
    t: usize,
    b: usize,
    hid: usize,
) -> Result<[Vec<T>; 4]> {
    let gh = 4 * hid;
    let mut dxp = zeros::<T>(t * b * gh);
    let mut dh = zeros::<T>(b * hid);
    let mut dc = zeros::<T>(b * hid);
    for s in (0..t).rev() {
        poll_kernel()?;
        for r in 0..b {
            let row = s * b + r;
            let a = &acts[row * gh..(row + 1) * gh];
            let y = &out[row * 2 * hid..(row + 1) * 2 * hid];
            let g = &gy[row * 2 * hid..(row + 1) * 2 * hid];
            let d = &mut dxp[row * gh..(row + 1) * gh];
            for j in 0..hid {
                let (i, f, gg, o) = (a[j], a[hid + j], a[2 * hid + j], a[3 * hid + j]);
                let tc = y[hid + j].tanh();
                let c_prev = if s == 0 {
                    c0[r * hid + j]
                } else {
                    out[((s - 1) * b + r) * 2 * hid + hid + j]
                };
                let dh_t = g[j] + dh[r * hid + j];
                let dc_t = g[hid + j] + dc[r * hid + j] + dh_t * o * (one::<T>() - tc * tc);
                d[j] = dc_t * gg * i * (one::<T>() - i);
                d[hid + j] = dc_t * c_prev * f * (one::<T>() - f);
                d[2 * hid + j] = dc_t * i * (one::<T>() - gg * gg);
                d[3 * hid + j] = dh_t * tc * o * (one::<T>() - o);
                dc[r * hid + j] = dc_t * f;
            }
        }
        hidden_gemm_back(&mut dh, &dxp[s * b * gh..(s + 1) * b * gh], w, b, gh, hid)?;
    }
    let prev = previous_states(h0, out, t, b, hid, 2 * hid);
    let dw = weight_grad(&dxp, &prev, t * b, gh, hid)?;
    Ok([dxp, dh, dc, dw])
}

/// GRU forward: the hidden states `[T, B, H]` and per step r, z, n and W_hn h + b_hn
/// (`[T, B, 4H]`) for the backward. `bias` is b_hh (`[3H]`) or empty.
pub fn gru_forward<T: RnnFloat>(
    xp: &[T],
    h0: &[T],
    w: &[T],
    bias: &[T],
    t: usize,
    b: usize,
    hid: usize,
) -> Result<(Vec<T>, Vec<T>)> {
    let gh = 3 * hid;
    let mut out = zeros::<T>(t * b * hid);
    let mut saved = zeros::<T>(t * b * 4 * hid);
    let mut h = h0.to_vec();
    let mut hg = zeros::<T>(b * gh);
    for s in 0..t {
        poll_kernel()?;
        for r in 0..b {
            for (j, v) in hg[r * gh..(r + 1) * gh].iter_mut().enumerate() {
                *v = bias.get(j).copied().unwrap_or(<T as GemmFloat>::ZERO);
            }
        }
        hidden_gemm(&mut hg, &h, w, b, gh, hid, true)?;
        for r in 0..b {
            let row = s * b + r;
            let x = &xp[row * gh..(row + 1) * gh];
            let hgr = &hg[r * gh..(r + 1) * gh];
            let sv = &mut saved[row * 4 * hid..(row + 1) * 4 * hid];
            for j in 0..hid {
                let rg = sigmoid(x[j] + hgr[j]);
                let z = sigmoid(x[hid + j] + hgr[hid + j]);
                let n = (x[2 * hid + j] + rg * hgr[2 * hid + j]).tanh();
                let hn = (one::<T>() - z) * n + z * h[r * hid + j];
                h[r * hid + j] = hn;
                out[row * hid + j] = hn;
                sv[j] = rg;
                sv[hid + j] = z;
                sv[2 * hid + j] = n;
                sv[3 * hid + j] = hgr[2 * hid + j];
            }
        }
    }
    Ok((out, saved))
}

/// GRU gradients from `gy` (`[T, B, H]`): (d xp, d h0, d W_hh, d b_hh).
#[allow(clippy::too_many_arguments)]
pub fn gru_backward<T: RnnFloat>(
    gy: &[T],
    out: &[T],
    saved: &[T],
    h0: &[T],
    w: &[T],
    t: usize,
    b: usize,
    hid: usize,
) -> Result<[Vec<T>; 4]> {
    let gh = 3 * hid;
    let mut dxp = zeros::<T>(t * b * gh);
    let mut dhg = zeros::<T>(t * b * gh);
    let mut dh = zeros::<T>(b * hid);
    let mut dh_next = zeros::<T>(b * hid);
    for s in (0..t).rev() {
        poll_kernel()?;
        for r in 0..b {
            let row = s * b + r;
            let sv = &saved[row * 4 * hid..(row + 1) * 4 * hid];
            let dx = &mut dxp[row * gh..(row + 1) * gh];
            let dg = &mut dhg[row * gh..(row + 1) * gh];
            for j in 0..hid {
                let (rg, z, n, hn) = (sv[j], sv[hid + j], sv[2 * hid + j], sv[3 * hid + j]);
                let h_prev = if s == 0 {
                    h0[r * hid + j]
                } else {
                    out[((s - 1) * b + r) * hid + j]
                };
                let dh_t = gy[row * hid + j] + dh[r * hid + j];
                let dpre_n = dh_t * (one::<T>() - z) * (one::<T>() - n * n);
                let dpre_z = dh_t * (h_prev - n) * z * (one::<T>() - z);
                let dpre_r = dpre_n * hn * rg * (one::<T>() - rg);
                dx[j] = dpre_r;
                dx[hid + j] = dpre_z;
                dx[2 * hid + j] = dpre_n;
                dg[j] = dpre_r;
                dg[hid + j] = dpre_z;
                dg[2 * hid + j] = dpre_n * rg;
                dh_next[r * hid + j] = dh_t * z;
            }
        }
        hidden_gemm_back(&mut dh, &dhg[s * b * gh..(s + 1) * b * gh], w, b, gh, hid)?;
        for (a, n) in dh.iter_mut().zip(&dh_next) {
            *a = *a + *n;
        }
    }
    let prev = previous_states(h0, out, t, b, hid, hid);
    let dw = weight_grad(&dhg, &prev, t * b, gh, hid)?;
    let mut db = zeros::<T>(gh);
    for row in dhg.chunks(gh) {
        for (a, v) in db.iter_mut().zip(row) {
            *a = *a + *v;
        }
    }
    Ok([dxp, dh, dw, db])
}
