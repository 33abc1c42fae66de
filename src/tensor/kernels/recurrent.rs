//! Fused LSTM and GRU layers over whole sequences (float32 or float64, one generic
//! code path over [`RnnFloat`]): per step one gemm of the hidden state with W_hh and one
//! pass over the gates (vectorized: float32's sigmoid and tanh are `fastmath`'s); the
//! backward walks the steps in reverse from the gate activations the forward saved,
//! then forms dW_hh with one gemm. The batch rows run in groups, one per team thread,
//! each group every step of its rows (`row_groups`). Every step polls the running
//! engine's interrupt and deadline (`cancel::poll_kernel`): a step's gemm of a few rows
//! is one block, which the gemm itself never polls.
//!
//! Shapes: `T` steps, `B` batch rows, `H` hidden units; `xp` is the input projection
//! x W_ih^T (+ biases) for every step, `[T, B, G*H]` with G = 4 (LSTM: i, f, g, o) or
//! 3 (GRU: r, z, n); `w` is W_hh `[G*H, H]`, row-major.

use super::fastmath;
use super::matmul::{gemm, GemmFloat, Mat};
use super::row_groups::{group_block, group_rows, row_groups, run_groups, take, Group, Stop};
#[cfg(target_arch = "x86_64")]
use super::simd;
use super::step_gemm::{MulAdd, Packed};
use crate::error::Result;
use crate::tensor::dtype::Real;
use crate::tensor::storage::{alloc_filled, alloc_vec};
use std::sync::Mutex;

/// The gate nonlinearities: in float32 the branch-free `fastmath` ones (libm's `expf`
/// is a scalar call; these let a step's gate loop vectorize), in float64 std's.
pub trait GateMath: Copy {
    fn sigmoid(self) -> Self;
    fn tanh_gate(self) -> Self;
}

impl GateMath for f32 {
    #[inline(always)]
    fn sigmoid(self) -> f32 {
        1.0 / (1.0 + fastmath::exp(-self))
    }
    #[inline(always)]
    fn tanh_gate(self) -> f32 {
        fastmath::tanh(self)
    }
}

impl GateMath for f64 {
    #[inline(always)]
    fn sigmoid(self) -> f64 {
        1.0 / (1.0 + (-self).exp())
    }
    #[inline(always)]
    fn tanh_gate(self) -> f64 {
        self.tanh()
    }
}

/// The element types of the recurrent kernels: float32 and float64.
pub trait RnnFloat: Real + MulAdd + GateMath + std::ops::Neg<Output = Self> {}

impl<T: Real + MulAdd + GateMath + std::ops::Neg<Output = T>> RnnFloat for T {}

fn one<T: RnnFloat>() -> T {
    <T as Real>::ONE
}

/// `n` zeros, from the tensor buffer pool when large (a just-freed buffer of a layer
/// call's size: no fresh pages to fault in), or `MemoryError` past the memory cap.
fn zeros<T: RnnFloat>(n: usize) -> Result<Vec<T>> {
    alloc_filled(n, <T as GemmFloat>::ZERO)
}

/// `simd_twin!(name = body<T>(args))`: `name` runs `body` (an `#[inline(always)]`
/// loop) compiled for AVX-512 or AVX2 + FMA where the CPU has them (a gate loop then
/// runs 16 or 8 float32 lanes wide), the same arithmetic either way. `body` is called
/// straight from each `#[target_feature]` function: through `simd::run`'s closure, a
/// body this large was not inlined into the AVX2 frame and ran as compiled for the
/// baseline (SSE, 4 lanes).
macro_rules! simd_twin {
    ($name:ident = $body:ident<$T:ident>($($a:ident: $t:ty),*)) => {
        fn $name<$T: RnnFloat>($($a: $t),*) {
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx2,fma")]
            fn avx512<$T: RnnFloat>($($a: $t),*) {
                $body($($a),*)
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            fn avx2<$T: RnnFloat>($($a: $t),*) {
                $body($($a),*)
            }
            #[cfg(target_arch = "x86_64")]
            if simd::has_avx512() {
                // SAFETY: the CPU has the features `avx512` is compiled for.
                return unsafe { avx512($($a),*) };
            }
            #[cfg(target_arch = "x86_64")]
            if simd::has_avx2() {
                // SAFETY: the CPU has the features `avx2` is compiled for.
                return unsafe { avx2($($a),*) };
            }
            $body($($a),*)
        }
    };
}

/// W_hh packed for the forward's per-step products `[B, H] @ W_hh^T` (`gh` = G*H).
fn packed_forward<T: RnnFloat>(w: &[T], gh: usize, hid: usize) -> Result<Packed<T>> {
    Packed::new(w, hid, gh, (1, hid))
}

/// W_hh packed for the backward's per-step products `[B, G*H] @ W_hh` (the gradient
/// reaching the previous hidden state).
fn packed_backward<T: RnnFloat>(w: &[T], gh: usize, hid: usize) -> Result<Packed<T>> {
    Packed::new(w, gh, hid, (hid, 1))
}

/// `dW[G*H, H] = sum_t d_t^T @ h_{t-1}`: `d` is `[T*B, G*H]`, `prev` `[T*B, H]`.
fn weight_grad<T: RnnFloat>(
    d: &[T],
    prev: &[T],
    rows: usize,
    gh: usize,
    hid: usize,
) -> Result<Vec<T>> {
    let mut dw = zeros::<T>(gh * hid)?;
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
) -> Result<Vec<T>> {
    let mut prev = alloc_vec(t * b * hid)?;
    prev.extend_from_slice(h0);
    for row in 0..(t.saturating_sub(1) * b) {
        prev.extend_from_slice(&seq[row * width..row * width + hid]);
    }
    Ok(prev)
}

/// `x` (`[N*H]` or longer) as its first `N` consecutive `[H]` gate blocks.
#[inline(always)]
fn gate_blocks<T, const N: usize>(x: &[T], hid: usize) -> [&[T]; N] {
    std::array::from_fn(|k| &x[k * hid..(k + 1) * hid])
}

/// `x[j] = sigmoid(x[j])`, `tanh_in_place` likewise: a map over one slice, which
/// vectorizes (a loop writing many slices of one buffer does not).
#[inline(always)]
fn sigmoid_in_place<T: RnnFloat>(x: &mut [T]) {
    for v in x {
        *v = v.sigmoid();
    }
}

#[inline(always)]
fn tanh_in_place<T: RnnFloat>(x: &mut [T]) {
    for v in x {
        *v = v.tanh_gate();
    }
}

/// One LSTM step's gate pass: `acts` `[B, 4H]` gets the gate pre-activations `x + p`
/// (the step's input projection rows and the product h W_hh^T) activated (sigmoid i, f,
/// o; tanh g); the cell `c` and hidden state `h` `[B, H]` advanced; the step's output
/// rows `out` `[B, 2H]` (h then c).
#[inline(always)]
fn lstm_gates<T: RnnFloat>(
    x: &[T],
    p: &[T],
    acts: &mut [T],
    c: &mut [T],
    h: &mut [T],
    out: &mut [T],
    hid: usize,
) {
    let rows = acts
        .chunks_exact_mut(4 * hid)
        .zip(x.chunks_exact(4 * hid).zip(p.chunks_exact(4 * hid)))
        .zip(c.chunks_exact_mut(hid))
        .zip(h.chunks_exact_mut(hid))
        .zip(out.chunks_exact_mut(2 * hid));
    for ((((g, (x, p)), c), h), o) in rows {
        for ((g, &x), &p) in g.iter_mut().zip(x).zip(p) {
            *g = x + p;
        }
        let (ifg, go) = g.split_at_mut(3 * hid);
        let (i_f, gg) = ifg.split_at_mut(2 * hid);
        sigmoid_in_place(i_f);
        tanh_in_place(gg);
        sigmoid_in_place(go);
        let [gi, gf, gg, go] = gate_blocks(g, hid);
        let (oh, oc) = o.split_at_mut(hid);
        let (c, h, oc) = (&mut c[..hid], &mut h[..hid], &mut oc[..hid]);
        for j in 0..hid {
            let cn = gf[j] * c[j] + gi[j] * gg[j];
            let hn = go[j] * cn.tanh_gate();
            (c[j], h[j], oh[j], oc[j]) = (cn, hn, hn, cn);
        }
    }
}

simd_twin!(lstm_step = lstm_gates<T>(x: &[T], p: &[T], acts: &mut [T], c: &mut [T], h: &mut [T], out: &mut [T], hid: usize));

/// An LSTM forward row group: its rows `(r0, r1)`, each step's activated gates
/// (`[rows, 4H]`, written) and outputs (`[rows, 2H]`), and its rows of h0 and c0.
struct LstmRows<'a, T> {
    rows: (usize, usize),
    acts: Vec<&'a mut [T]>,
    out: Vec<&'a mut [T]>,
    h0: &'a [T],
    c0: &'a [T],
}

/// The whole sequence's inputs an LSTM forward group reads its rows of.
struct LstmSeq<'a, T> {
    xp: &'a [T],
    w: &'a Packed<T>,
    b: usize,
    hid: usize,
}

/// An LSTM forward group. Each step's product goes to a small buffer of its own (it
/// stays in L1); the gate pass adds the step's input projection, read in order.
fn lstm_rows<T: RnnFloat>(g: LstmRows<T>, sq: &LstmSeq<T>, stop: &Stop) -> Result<()> {
    let (hid, (r0, r1)) = (sq.hid, g.rows);
    let gh = 4 * hid;
    let (mut h, mut c) = (g.h0.to_vec(), g.c0.to_vec());
    let mut p = zeros::<T>((r1 - r0) * gh)?;
    for (s, (acts, o)) in g.acts.into_iter().zip(g.out).enumerate() {
        stop.poll()?;
        sq.w.product(&mut p, &h, r1 - r0, hid, false)?;
        let x = &sq.xp[(s * sq.b + r0) * gh..(s * sq.b + r1) * gh];
        lstm_step(x, &p, acts, &mut c, &mut h, o, hid);
    }
    Ok(())
}

/// LSTM forward over `xp` (`[T, B, 4H]`): `[T, B, 2H]` (each step's h then c) and the
/// activated gates `[T, B, 4H]` (sigmoid i, f, o; tanh g) for the backward.
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
    let mut out = zeros::<T>(t * b * 2 * hid)?;
    let mut acts = zeros::<T>(t * b * gh)?;
    let groups = row_groups(b, t * b * gh * hid);
    let w = packed_forward(w, gh, hid)?;
    let sq = LstmSeq { xp, w: &w, b, hid };
    let bufs: Vec<Group<LstmRows<T>>> = group_rows(&mut acts, &groups, b, gh)
        .into_iter()
        .zip(group_rows(&mut out, &groups, b, 2 * hid))
        .zip(&groups)
        .map(|((acts, out), &(r0, r1))| {
            Mutex::new(Some(LstmRows {
                rows: (r0, r1),
                acts,
                out,
                h0: &h0[r0 * hid..r1 * hid],
                c0: &c0[r0 * hid..r1 * hid],
            }))
        })
        .collect();
    run_groups(groups.len(), &|g: usize, stop: &Stop| {
        lstm_rows(take(&bufs[g])?, &sq, stop)
    })?;
    drop(bufs);
    Ok((out, acts))
}

/// What one LSTM step's backward gate pass reads: the step's activated gates `acts`
/// `[B, 4H]`, outputs `y` and their gradient `gy` `[B, 2H]`, and the previous cell state
/// in the first H of each `c_stride`-long row of `c_prev`.
struct LstmStepBack<'a, T> {
    acts: &'a [T],
    y: &'a [T],
    gy: &'a [T],
    c_prev: &'a [T],
    c_stride: usize,
}

/// One LSTM step's backward gate pass: `d` `[B, 4H]` gets the gradient of the gate
/// pre-activations from `dh` (reaching this step's h from the next step) and `dc` (this
/// step's c, replaced by the previous step's).
#[inline(always)]
fn lstm_grad_gates<T: RnnFloat>(
    d: &mut [T],
    dh: &[T],
    dc: &mut [T],
    st: &LstmStepBack<T>,
    hid: usize,
) {
    let rows = d
        .chunks_exact_mut(4 * hid)
        .zip(dc.chunks_exact_mut(hid))
        .zip(dh.chunks_exact(hid))
        .zip(st.acts.chunks_exact(4 * hid))
        .zip(st.y.chunks_exact(2 * hid).zip(st.gy.chunks_exact(2 * hid)))
        .zip(st.c_prev.chunks(st.c_stride));
    for (((((d, dc), dh), a), (y, g)), cp) in rows {
        let [ai, af, ag, ao] = gate_blocks(a, hid);
        let (yc, gh, gc) = (&y[hid..2 * hid], &g[..hid], &g[hid..2 * hid]);
        let (di, rest) = d.split_at_mut(hid);
        let (df, rest) = rest.split_at_mut(hid);
        let (dg, dout) = rest.split_at_mut(hid);
        let (dout, dc, dh, cp) = (&mut dout[..hid], &mut dc[..hid], &dh[..hid], &cp[..hid]);
        for j in 0..hid {
            let (i, f, gg, o) = (ai[j], af[j], ag[j], ao[j]);
            let tc = yc[j].tanh_gate();
            let dh_t = gh[j] + dh[j];
            let dc_t = gc[j] + dc[j] + dh_t * o * (one::<T>() - tc * tc);
            di[j] = dc_t * gg * i * (one::<T>() - i);
            df[j] = dc_t * cp[j] * f * (one::<T>() - f);
            dg[j] = dc_t * i * (one::<T>() - gg * gg);
            dout[j] = dh_t * tc * o * (one::<T>() - o);
            dc[j] = dc_t * f;
        }
    }
}

simd_twin!(lstm_step_back = lstm_grad_gates<T>(d: &mut [T], dh: &[T], dc: &mut [T], st: &LstmStepBack<T>, hid: usize));

/// An LSTM backward row group: its rows `(r0, r1)`, each step's gate gradients
/// (`[rows, 4H]`, written) and its rows of d h0, d c0 (`[rows, H]`, written).
struct LstmGradRows<'a, T> {
    rows: (usize, usize),
    d: Vec<&'a mut [T]>,
    dh0: &'a mut [T],
    dc0: &'a mut [T],
}

/// The whole sequence's tensors a backward group (LSTM or GRU) reads its rows of: the
/// output gradient, the outputs, the activations the forward saved, the initial state
/// the first step read (LSTM: c0; GRU: h0), W_hh and the sizes.
struct SeqBack<'a, T> {
    gy: &'a [T],
    out: &'a [T],
    saved: &'a [T],
    init: &'a [T],
    w: &'a Packed<T>,
    b: usize,
    hid: usize,
}

fn lstm_rows_back<T: RnnFloat>(g: LstmGradRows<T>, sq: &SeqBack<T>, stop: &Stop) -> Result<()> {
    let (hid, (r0, r1)) = (sq.hid, g.rows);
    let (gh, w2) = (4 * hid, 2 * hid);
    let mut dh = zeros::<T>((r1 - r0) * hid)?;
    let mut dc = zeros::<T>((r1 - r0) * hid)?;
    for (s, d) in g.d.into_iter().enumerate().rev() {
        stop.poll()?;
        let (a, z) = (s * sq.b + r0, s * sq.b + r1);
        let (c_prev, c_stride) = if s == 0 {
            (&sq.init[r0 * hid..r1 * hid], hid)
        } else {
            (&sq.out[(a - sq.b) * w2 + hid..(z - sq.b) * w2], w2)
        };
        let st = LstmStepBack {
            acts: &sq.saved[a * gh..z * gh],
            y: &sq.out[a * w2..z * w2],
            gy: &sq.gy[a * w2..z * w2],
            c_prev,
            c_stride,
        };
        lstm_step_back(d, &dh, &mut dc, &st, hid);
        sq.w.product(&mut dh, d, r1 - r0, gh, false)?;
    }
    g.dh0.copy_from_slice(&dh);
    g.dc0.copy_from_slice(&dc);
    Ok(())
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
    let mut dxp = zeros::<T>(t * b * gh)?;
    let mut dh = zeros::<T>(b * hid)?;
    let mut dc = zeros::<T>(b * hid)?;
    let groups = row_groups(b, t * b * gh * hid);
    let wp = packed_backward(w, gh, hid)?;
    let sq = SeqBack {
        gy,
        out,
        saved: acts,
        init: c0,
        w: &wp,
        b,
        hid,
    };
    let bufs: Vec<Group<LstmGradRows<T>>> = group_rows(&mut dxp, &groups, b, gh)
        .into_iter()
        .zip(group_block(&mut dh, &groups, hid))
        .zip(group_block(&mut dc, &groups, hid))
        .zip(&groups)
        .map(|(((d, dh0), dc0), &rows)| Mutex::new(Some(LstmGradRows { rows, d, dh0, dc0 })))
        .collect();
    run_groups(groups.len(), &|g: usize, stop: &Stop| {
        lstm_rows_back(take(&bufs[g])?, &sq, stop)
    })?;
    drop(bufs);
    let prev = previous_states(h0, out, t, b, hid, 2 * hid)?;
    let dw = weight_grad(&dxp, &prev, t * b, gh, hid)?;
    Ok([dxp, dh, dc, dw])
}

/// One GRU step's gate pass over `x` (the step's input projection rows, `[B, 3H]`)
/// and `hg` (W_hh h + b_hh, `[B, 3H]`): the hidden state `h` `[B, H]` advanced and
/// written to `out`; `saved` `[B, 4H]` gets r, z, n and W_hn h + b_hn.
#[inline(always)]
fn gru_gates<T: RnnFloat>(
    x: &[T],
    hg: &[T],
    h: &mut [T],
    saved: &mut [T],
    out: &mut [T],
    hid: usize,
) {
    let rows = x
        .chunks_exact(3 * hid)
        .zip(hg.chunks_exact(3 * hid))
        .zip(h.chunks_exact_mut(hid))
        .zip(saved.chunks_exact_mut(4 * hid))
        .zip(out.chunks_exact_mut(hid));
    for ((((x, hg), h), sv), out) in rows {
        let ([xr, xz, xn], [hr, hz, hn]) = (gate_blocks(x, hid), gate_blocks(hg, hid));
        let (sr, rest) = sv.split_at_mut(hid);
        let (sz, rest) = rest.split_at_mut(hid);
        let (sn, sh) = rest.split_at_mut(hid);
        let (sh, h, out) = (&mut sh[..hid], &mut h[..hid], &mut out[..hid]);
        for j in 0..hid {
            let rg = (xr[j] + hr[j]).sigmoid();
            let z = (xz[j] + hz[j]).sigmoid();
            let n = (xn[j] + rg * hn[j]).tanh_gate();
            let hn_new = (one::<T>() - z) * n + z * h[j];
            (h[j], out[j]) = (hn_new, hn_new);
            (sr[j], sz[j], sn[j], sh[j]) = (rg, z, n, hn[j]);
        }
    }
}

simd_twin!(gru_step = gru_gates<T>(x: &[T], hg: &[T], h: &mut [T], saved: &mut [T], out: &mut [T], hid: usize));

/// A GRU forward row group: its rows `(r0, r1)`, each step's saved gates (`[rows,
/// 4H]`) and outputs (`[rows, H]`), and its rows of h0.
struct GruRows<'a, T> {
    rows: (usize, usize),
    saved: Vec<&'a mut [T]>,
    out: Vec<&'a mut [T]>,
    h0: &'a [T],
}

/// The whole sequence's inputs a GRU forward group reads its rows of.
struct GruSeq<'a, T> {
    xp: &'a [T],
    w: &'a Packed<T>,
    bias: &'a [T],
    b: usize,
    hid: usize,
}

fn gru_rows<T: RnnFloat>(g: GruRows<T>, sq: &GruSeq<T>, stop: &Stop) -> Result<()> {
    let (hid, (r0, r1)) = (sq.hid, g.rows);
    let gh = 3 * hid;
    let mut h = g.h0.to_vec();
    let mut hg = zeros::<T>((r1 - r0) * gh)?;
    let bias: Vec<T> = (0..gh)
        .map(|j| sq.bias.get(j).copied().unwrap_or(<T as GemmFloat>::ZERO))
        .collect();
    for (s, (sv, o)) in g.saved.into_iter().zip(g.out).enumerate() {
        stop.poll()?;
        hg.chunks_exact_mut(gh)
            .for_each(|row| row.copy_from_slice(&bias));
        sq.w.product(&mut hg, &h, r1 - r0, hid, true)?;
        let x = &sq.xp[(s * sq.b + r0) * gh..(s * sq.b + r1) * gh];
        gru_step(x, &hg, &mut h, sv, o, hid);
    }
    Ok(())
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
    let mut out = zeros::<T>(t * b * hid)?;
    let mut saved = zeros::<T>(t * b * 4 * hid)?;
    let groups = row_groups(b, t * b * 3 * hid * hid);
    let w = packed_forward(w, 3 * hid, hid)?;
    let sq = GruSeq {
        xp,
        w: &w,
        bias,
        b,
        hid,
    };
    let bufs: Vec<Group<GruRows<T>>> = group_rows(&mut saved, &groups, b, 4 * hid)
        .into_iter()
        .zip(group_rows(&mut out, &groups, b, hid))
        .zip(&groups)
        .map(|((saved, out), &(r0, r1))| {
            Mutex::new(Some(GruRows {
                rows: (r0, r1),
                saved,
                out,
                h0: &h0[r0 * hid..r1 * hid],
            }))
        })
        .collect();
    run_groups(groups.len(), &|g: usize, stop: &Stop| {
        gru_rows(take(&bufs[g])?, &sq, stop)
    })?;
    drop(bufs);
    Ok((out, saved))
}

/// One GRU step's backward gate pass: from `dh` (the gradient reaching this step's h
/// from the next step) and the step's saved gates, `dx` and `dg` `[B, 3H]` get the
/// gradients of the input and hidden projections and `dh_next` `[B, H]` the direct
/// part of the previous step's h gradient.
#[inline(always)]
fn gru_grad_gates<T: RnnFloat>(
    dx: &mut [T],
    dg: &mut [T],
    dh: &[T],
    dh_next: &mut [T],
    st: &GruStepBack<T>,
    hid: usize,
) {
    let rows = dx
        .chunks_exact_mut(3 * hid)
        .zip(dg.chunks_exact_mut(3 * hid))
        .zip(dh.chunks_exact(hid).zip(dh_next.chunks_exact_mut(hid)))
        .zip(st.saved.chunks_exact(4 * hid))
        .zip(st.gy.chunks_exact(hid).zip(st.h_prev.chunks_exact(hid)));
    for ((((dx, dg), (dh, dn)), sv), (gy, hp)) in rows {
        let [sr, sz, sn, sh] = gate_blocks(sv, hid);
        let (xr, rest) = dx.split_at_mut(hid);
        let (xz, xn) = rest.split_at_mut(hid);
        let (gr, rest) = dg.split_at_mut(hid);
        let (gz, gn) = rest.split_at_mut(hid);
        let (xn, gn, dn) = (&mut xn[..hid], &mut gn[..hid], &mut dn[..hid]);
        let (dh, gy, hp) = (&dh[..hid], &gy[..hid], &hp[..hid]);
        for j in 0..hid {
            let (rg, z, n, hn) = (sr[j], sz[j], sn[j], sh[j]);
            let dh_t = gy[j] + dh[j];
            let dpre_n = dh_t * (one::<T>() - z) * (one::<T>() - n * n);
            let dpre_z = dh_t * (hp[j] - n) * z * (one::<T>() - z);
            let dpre_r = dpre_n * hn * rg * (one::<T>() - rg);
            (xr[j], xz[j], xn[j]) = (dpre_r, dpre_z, dpre_n);
            (gr[j], gz[j], gn[j]) = (dpre_r, dpre_z, dpre_n * rg);
            dn[j] = dh_t * z;
        }
    }
}

simd_twin!(gru_step_back = gru_grad_gates<T>(dx: &mut [T], dg: &mut [T], dh: &[T], dh_next: &mut [T], st: &GruStepBack<T>, hid: usize));

/// What one GRU step's backward gate pass reads: the step's saved gates `[B, 4H]`,
/// output gradient `gy` and previous hidden state `h_prev` `[B, H]`.
struct GruStepBack<'a, T> {
    saved: &'a [T],
    gy: &'a [T],
    h_prev: &'a [T],
}

/// A GRU backward row group: its rows `(r0, r1)`, each step's input and hidden
/// projection gradients (`[rows, 3H]`, written) and its rows of d h0 (written).
struct GruGradRows<'a, T> {
    rows: (usize, usize),
    dx: Vec<&'a mut [T]>,
    dg: Vec<&'a mut [T]>,
    dh0: &'a mut [T],
}

fn gru_rows_back<T: RnnFloat>(g: GruGradRows<T>, sq: &SeqBack<T>, stop: &Stop) -> Result<()> {
    let (hid, (r0, r1)) = (sq.hid, g.rows);
    let mut dh = zeros::<T>((r1 - r0) * hid)?;
    let mut dh_next = zeros::<T>((r1 - r0) * hid)?;
    for (s, (dx, dg)) in g.dx.into_iter().zip(g.dg).enumerate().rev() {
        stop.poll()?;
        let (a, z) = (s * sq.b + r0, s * sq.b + r1);
        let h_prev = if s == 0 {
            &sq.init[r0 * hid..r1 * hid]
        } else {
            &sq.out[(a - sq.b) * hid..(z - sq.b) * hid]
        };
        let st = GruStepBack {
            saved: &sq.saved[a * 4 * hid..z * 4 * hid],
            gy: &sq.gy[a * hid..z * hid],
            h_prev,
        };
        gru_step_back(dx, dg, &dh, &mut dh_next, &st, hid);
        sq.w.product(&mut dh, dg, r1 - r0, 3 * hid, false)?;
        for (a, n) in dh.iter_mut().zip(&dh_next) {
            *a = *a + *n;
        }
    }
    g.dh0.copy_from_slice(&dh);
    Ok(())
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
    let mut dxp = zeros::<T>(t * b * gh)?;
    let mut dhg = zeros::<T>(t * b * gh)?;
    let mut dh = zeros::<T>(b * hid)?;
    let groups = row_groups(b, t * b * gh * hid);
    let wp = packed_backward(w, gh, hid)?;
    let sq = SeqBack {
        gy,
        out,
        saved,
        init: h0,
        w: &wp,
        b,
        hid,
    };
    let bufs: Vec<Group<GruGradRows<T>>> = group_rows(&mut dxp, &groups, b, gh)
        .into_iter()
        .zip(group_rows(&mut dhg, &groups, b, gh))
        .zip(group_block(&mut dh, &groups, hid))
        .zip(&groups)
        .map(|(((dx, dg), dh0), &rows)| Mutex::new(Some(GruGradRows { rows, dx, dg, dh0 })))
        .collect();
    run_groups(groups.len(), &|g: usize, stop: &Stop| {
        gru_rows_back(take(&bufs[g])?, &sq, stop)
    })?;
    drop(bufs);
    let prev = previous_states(h0, out, t, b, hid, hid)?;
    let dw = weight_grad(&dhg, &prev, t * b, gh, hid)?;
    let mut db = zeros::<T>(gh)?;
    for row in dhg.chunks(gh) {
        for (a, v) in db.iter_mut().zip(row) {
            *a = *a + *v;
        }
    }
    Ok([dxp, dh, dw, db])
}
