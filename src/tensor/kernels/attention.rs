//! Fused scaled dot-product attention (f32), flash-attention style on the CPU: queries
//! in blocks of `BR` rows meet keys in blocks of up to `BC`; each block's scores live
//! only in a `BR x BC` buffer, folded into the output with an online softmax (running
//! max and sum per row), so the `L x S` score matrix is never formed. A causal mask
//! skips the keys past a query block's last row. Every product of a block is one packed
//! gemm call; the row passes (scale and mask, max, exp and sum) run compiled for AVX2
//! (`simd::run`, each closure `#[inline(always)]`: an out-of-line closure would be
//! compiled for the baseline target only). The forward keeps each row's logsumexp; the backward recomputes the
//! blocks' probabilities from it. Each query block polls the running engine's interrupt
//! and deadline (`cancel::poll_kernel`).
//!
//! Layout: `q [N, L, E]`, `k [N, S, E]`, `v [N, S, Ev]`, row-major; an additive mask is
//! `[*, L, S]` with `mask_off[n]` the offset of batch entry n's `L x S` block.

use super::conv::{lock, run_parts};
use super::fastmath::exp;
use super::matmul::{gemm_f32, Mat};
use super::simd;
use crate::error::{ErrorKind, Result};
use crate::tensor::err;
use std::sync::Mutex;

/// Query rows per block.
const BR: usize = 64;
/// Keys per block: a query block's scores against up to this many keys are formed at
/// once (large enough that each product is one efficient gemm call, small enough that a
/// block's buffers stay in the core's L2 cache).
const BC: usize = 512;

/// Sizes and options of one attention call.
#[derive(Clone, Copy)]
pub struct Dims {
    pub n: usize,
    pub l: usize,
    pub s: usize,
    pub e: usize,
    pub ev: usize,
    pub scale: f32,
    pub causal: bool,
}

/// An additive mask and the offset of each batch entry's block.
pub struct Mask<'a> {
    pub data: &'a [f32],
    pub off: Vec<usize>,
}

fn rows(data: &[f32], start: usize, width: usize) -> Mat<'_> {
    Mat {
        data,
        offset: start * width,
        rs: width,
        cs: 1,
    }
}

fn rows_t(data: &[f32], start: usize, width: usize) -> Mat<'_> {
    Mat {
        data,
        offset: start * width,
        rs: 1,
        cs: width,
    }
}

/// `dst[r, c] = a[a0 + r] . b[b0 + c]` for `r < m`, `c < n`: dot products of rows of
/// width `w` of two row-major matrices (q k^T for scores, go v^T for their gradient).
fn row_dots(
    dst: &mut [f32],
    (a, a0, m): (&[f32], usize, usize),
    (b, b0, n): (&[f32], usize, usize),
    w: usize,
) -> Result<()> {
    gemm_f32(m, n, w, dst, rows(a, a0, w), rows_t(b, b0, w), false)
}

/// Scores of query rows `i0..i1` against keys `j0..j1` of batch entry `b` into `buf`
/// (`(i1 - i0) x (j1 - j0)`): scaled, masked, -inf above the causal diagonal.
#[allow(clippy::too_many_arguments)]
fn scores(
    buf: &mut [f32],
    q: &[f32],
    k: &[f32],
    mask: Option<&Mask>,
    d: &Dims,
    b: usize,
    (i0, i1): (usize, usize),
    (j0, j1): (usize, usize),
) -> Result<()> {
    let (br, bc) = (i1 - i0, j1 - j0);
    row_dots(buf, (q, b * d.l + i0, br), (k, b * d.s + j0, bc), d.e)?;
    simd::run(
        #[inline(always)]
        || scale_rows(&mut buf[..br * bc], bc, mask, d, b, (i0, j0)),
    )
}

/// [`scores`]' pass over the products `buf` (rows of `bc`) of query rows from `i0` and
/// keys from `j0`.
#[inline(always)]
fn scale_rows(
    buf: &mut [f32],
    bc: usize,
    mask: Option<&Mask>,
    d: &Dims,
    b: usize,
    (i0, j0): (usize, usize),
) -> Result<()> {
    for (r, row) in buf.chunks_mut(bc.max(1)).enumerate() {
        let i = i0 + r;
        // the keys j <= i a causal row sees
        let seen = match d.causal {
            true => (i + 1).saturating_sub(j0).min(bc),
            false => bc,
        };
        let (vis, hidden) = row.split_at_mut(seen);
        match mask {
            Some(m) => {
                let at = m.off.get(b).map_or(usize::MAX, |&o| o + i * d.s + j0);
                let add = m.data.get(at..at.saturating_add(seen));
                for (x, &a) in vis.iter_mut().zip(add.ok_or_else(mask_range)?) {
                    *x = *x * d.scale + a;
                }
            }
            None => vis.iter_mut().for_each(|x| *x *= d.scale),
        }
        hidden.fill(f32::NEG_INFINITY);
    }
    Ok(())
}

fn mask_range() -> crate::error::Error {
    err(
        ErrorKind::RuntimeError,
        "internal: attention mask out of range",
    )
}

/// The largest of `init` and `row`'s values (NaNs skipped, as `f32::max`), in 8 lanes.
#[inline(always)]
fn row_max(row: &[f32], init: f32) -> f32 {
    let mut acc = [f32::NEG_INFINITY; 8];
    let mut chunks = row.chunks_exact(8);
    for c in &mut chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a = a.max(x);
        }
    }
    let tail = chunks.remainder().iter().fold(init, |a, &x| a.max(x));
    acc.iter().fold(tail, |a, &x| a.max(x))
}

/// `row[j] = e^(row[j] - m)`; returns their sum (in 8 lanes).
#[inline(always)]
fn exp_sum(row: &mut [f32], m: f32) -> f32 {
    let mut acc = [0.0f32; 8];
    let mut chunks = row.chunks_exact_mut(8);
    for c in &mut chunks {
        for (a, x) in acc.iter_mut().zip(c) {
            *x = exp(*x - m);
            *a += *x;
        }
    }
    let mut tail = 0.0;
    for x in chunks.into_remainder() {
        *x = exp(*x - m);
        tail += *x;
    }
    acc.iter().sum::<f32>() + tail
}

/// The end of the keys that query rows `..i1` see (past it a causal mask hides all).
fn key_end(d: &Dims, i1: usize) -> usize {
    if d.causal {
        d.s.min(i1)
    } else {
        d.s
    }
}

/// The query blocks `(b, i0, i1)` of a call, in the order their rows are laid out.
fn query_blocks(d: &Dims) -> Vec<(usize, usize, usize)> {
    (0..d.n)
        .flat_map(|b| {
            (0..d.l)
                .step_by(BR)
                .map(move |i0| (b, i0, d.l.min(i0 + BR)))
        })
        .collect()
}

/// `v` cut into consecutive pieces of the given lengths, each behind its own lock (a
/// task locks only its own piece: no contention).
fn pieces<T>(v: &mut [T], lens: impl Iterator<Item = usize>) -> Vec<Mutex<&mut [T]>> {
    let mut rest = v;
    let mut out = Vec::new();
    for len in lens {
        let at = len.min(rest.len());
        let (head, tail) = std::mem::take(&mut rest).split_at_mut(at);
        out.push(Mutex::new(head));
        rest = tail;
    }
    out
}

/// Forward: the output `[N, L, Ev]` and each query row's logsumexp `[N, L]` (-inf for a
/// row that sees no key; its output is zero, as PyTorch's). The query blocks run as
/// parallel tasks on the kernel team (each writes only its own rows).
pub fn forward(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    mask: Option<&Mask>,
    d: &Dims,
) -> Result<(Vec<f32>, Vec<f32>)> {
    let mut out = vec![0.0; d.n * d.l * d.ev];
    let mut lse = vec![f32::NEG_INFINITY; d.n * d.l];
    let blocks = query_blocks(d);
    let outs = pieces(&mut out, blocks.iter().map(|&(_, i0, i1)| (i1 - i0) * d.ev));
    let lses = pieces(&mut lse, blocks.iter().map(|&(_, i0, i1)| i1 - i0));
    run_parts(blocks.len(), &|t| {
        let (b, i0, i1) = blocks[t];
        let (mut o, mut l) = (lock(&outs[t])?, lock(&lses[t])?);
        forward_block(q, k, v, mask, d, (b, i0, i1), &mut o, &mut l)
    })?;
    drop((outs, lses));
    Ok((out, lse))
}

/// One query block's forward: rows `i0..i1` of batch entry `b` into `o` (`(i1 - i0) x
/// ev`) and their logsumexp into `lse`.
#[allow(clippy::too_many_arguments)]
fn forward_block(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    mask: Option<&Mask>,
    d: &Dims,
    (b, i0, i1): (usize, usize, usize),
    o: &mut [f32],
    lse: &mut [f32],
) -> Result<()> {
    let br = i1 - i0;
    let mut buf = vec![0.0; br * BC.min(d.s)];
    let mut mx = vec![f32::NEG_INFINITY; br];
    let mut sum = vec![0.0f32; br];
    let end = key_end(d, i1);
    for j0 in (0..end).step_by(BC) {
        let j1 = end.min(j0 + BC);
        let bc = j1 - j0;
        let sb = &mut buf[..br * bc];
        scores(sb, q, k, mask, d, b, (i0, i1), (j0, j1))?;
        simd::run(
            #[inline(always)]
            || online_softmax(sb, bc, &mut mx, &mut sum, o, d.ev),
        );
        let p = rows(sb, 0, bc);
        gemm_f32(br, d.ev, bc, o, p, rows(v, b * d.s + j0, d.ev), true)?;
    }
    for r in 0..br {
        let orow = &mut o[r * d.ev..(r + 1) * d.ev];
        // a NaN score (NaN in q or k past the running max) makes the row NaN, as
        // PyTorch's; only a row with every key masked is zero
        if sum[r] > 0.0 || sum[r].is_nan() {
            orow.iter_mut().for_each(|x| *x /= sum[r]);
            lse[r] = mx[r] + sum[r].ln();
        } else {
            orow.iter_mut().for_each(|x| *x = 0.0);
        }
    }
    Ok(())
}

/// One key block's step of the online softmax: each row of `sb` (rows of `bc` scores)
/// becomes its exponentials against the row's running max `mx`, which moves to the
/// block's max; the row's running `sum` and output row in `o` (rows of `ev`) are
/// rescaled to it. A row with no finite score so far is zeroed.
#[inline(always)]
fn online_softmax(
    sb: &mut [f32],
    bc: usize,
    mx: &mut [f32],
    sum: &mut [f32],
    o: &mut [f32],
    ev: usize,
) {
    let rows = sb.chunks_mut(bc.max(1)).zip(mx).zip(sum);
    for (r, ((row, mx), sum)) in rows.enumerate() {
        let m_new = row_max(row, *mx);
        if m_new == f32::NEG_INFINITY {
            row.fill(0.0);
            continue;
        }
        let alpha = exp(*mx - m_new);
        *sum = *sum * alpha + exp_sum(row, m_new);
        *mx = m_new;
        if alpha != 1.0 {
            o[r * ev..(r + 1) * ev].iter_mut().for_each(|x| *x *= alpha);
        }
    }
}

/// Backward: (dq, dk, dv) from the output gradient `go`, the output and logsumexp. The
/// batch entries run as parallel tasks on the kernel team (an entry's key gradients
/// sum over all its query blocks, so an entry is one task).
#[allow(clippy::too_many_arguments)]
pub fn backward(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    mask: Option<&Mask>,
    d: &Dims,
    out: &[f32],
    lse: &[f32],
    go: &[f32],
) -> Result<[Vec<f32>; 3]> {
    let mut dq = vec![0.0; q.len()];
    let mut dk = vec![0.0; k.len()];
    let mut dv = vec![0.0; v.len()];
    let dqs = pieces(&mut dq, (0..d.n).map(|_| d.l * d.e));
    let dks = pieces(&mut dk, (0..d.n).map(|_| d.s * d.e));
    let dvs = pieces(&mut dv, (0..d.n).map(|_| d.s * d.ev));
    let io = BackwardIo {
        q,
        k,
        v,
        out,
        lse,
        go,
    };
    run_parts(d.n, &|b| {
        let (mut gq, mut gk, mut gv) = (lock(&dqs[b])?, lock(&dks[b])?, lock(&dvs[b])?);
        backward_entry(&io, mask, d, b, [&mut gq, &mut gk, &mut gv])
    })?;
    drop((dqs, dks, dvs));
    Ok([dq, dk, dv])
}

/// What the backward reads.
struct BackwardIo<'a> {
    q: &'a [f32],
    k: &'a [f32],
    v: &'a [f32],
    out: &'a [f32],
    lse: &'a [f32],
    go: &'a [f32],
}

/// Batch entry `b`'s backward into its rows of dq, dk and dv.
fn backward_entry(
    io: &BackwardIo,
    mask: Option<&Mask>,
    d: &Dims,
    b: usize,
    [dq, dk, dv]: [&mut [f32]; 3],
) -> Result<()> {
    let (q, k, v, go) = (io.q, io.k, io.v, io.go);
    let blk = BR.min(d.l) * BC.min(d.s);
    let (mut p, mut dp) = (vec![0.0; blk], vec![0.0; blk]);
    for i0 in (0..d.l).step_by(BR) {
        let i1 = d.l.min(i0 + BR);
        let br = i1 - i0;
        let delta: Vec<f32> = (i0..i1)
            .map(|i| {
                let at = (b * d.l + i) * d.ev;
                go[at..at + d.ev]
                    .iter()
                    .zip(&io.out[at..at + d.ev])
                    .map(|(a, c)| a * c)
                    .sum()
            })
            .collect();
        let end = key_end(d, i1);
        for j0 in (0..end).step_by(BC) {
            let j1 = end.min(j0 + BC);
            let bc = j1 - j0;
            let pb = &mut p[..br * bc];
            scores(pb, q, k, mask, d, b, (i0, i1), (j0, j1))?;
            let lse = &io.lse[b * d.l + i0..b * d.l + i1];
            simd::run(
                #[inline(always)]
                || probabilities(pb, bc, lse),
            );
            let pt = rows_t(pb, 0, bc);
            let dv_blk = &mut dv[j0 * d.ev..j1 * d.ev];
            gemm_f32(bc, d.ev, br, dv_blk, pt, rows(go, b * d.l + i0, d.ev), true)?;
            let dpb = &mut dp[..br * bc];
            row_dots(dpb, (go, b * d.l + i0, br), (v, b * d.s + j0, bc), d.ev)?;
            simd::run(
                #[inline(always)]
                || score_grads(dpb, pb, bc, &delta, d.scale),
            );
            let ds = rows(dpb, 0, bc);
            let dq_blk = &mut dq[i0 * d.e..i1 * d.e];
            gemm_f32(br, d.e, bc, dq_blk, ds, rows(k, b * d.s + j0, d.e), true)?;
            let dst = rows_t(dpb, 0, bc);
            let dk_blk = &mut dk[j0 * d.e..j1 * d.e];
            gemm_f32(bc, d.e, br, dk_blk, dst, rows(q, b * d.l + i0, d.e), true)?;
        }
    }
    Ok(())
}

/// `pb`'s scores (rows of `bc`) become probabilities against each row's logsumexp (a row
/// that saw no key: zeros).
#[inline(always)]
fn probabilities(pb: &mut [f32], bc: usize, lse: &[f32]) {
    for (row, &m) in pb.chunks_mut(bc.max(1)).zip(lse) {
        match m == f32::NEG_INFINITY {
            true => row.fill(0.0),
            false => row.iter_mut().for_each(|x| *x = exp(*x - m)),
        }
    }
}

/// The scores' gradients `ds = p * (dp - delta) * scale` in place of `dp` (rows of `bc`).
#[inline(always)]
fn score_grads(dp: &mut [f32], p: &[f32], bc: usize, delta: &[f32], scale: f32) {
    let rows = dp.chunks_mut(bc.max(1)).zip(p.chunks(bc.max(1))).zip(delta);
    for ((dp_row, p_row), dr) in rows {
        for (x, p) in dp_row.iter_mut().zip(p_row) {
            *x = p * (*x - dr) * scale;
        }
    }
}
