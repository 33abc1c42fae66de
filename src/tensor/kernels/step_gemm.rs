//! The recurrent kernels' per-step products: a row group's few batch rows times W_hh
//! (or W_hh^T), with W_hh packed once per layer call. The general gemm packs its
//! shared operand again on every call (into a freshly allocated buffer): a 50-step
//! layer call packed W_hh 50 times per row group, more work than the product itself
//! at 16 rows. Here the packed panels are shared read-only by every group and step;
//! each product packs only its few rows of the left operand.

use super::matmul::GemmFloat;
#[cfg(target_arch = "x86_64")]
use super::simd;
use crate::error::{ErrorKind, Result};
use crate::tensor::err;

/// Output columns of one packed panel (two AVX-512 vectors of float32).
const NR: usize = 32;

/// `self * b + c`: rounded once (one FMA instruction) where the product is compiled
/// with FMA, else twice (a multiply, then an add).
pub trait MulAdd: GemmFloat + std::ops::Mul<Output = Self> + std::ops::Add<Output = Self> {
    fn fused(self, b: Self, c: Self) -> Self;

    /// [`Packed::product`] by a kernel written for this type and the CPU, where there
    /// is one (true when it ran).
    fn product_native(
        _p: &Packed<Self>,
        _dst: &mut [Self],
        _a: &[Self],
        _m: usize,
        _lda: usize,
        _acc: bool,
    ) -> bool {
        false
    }
}

impl MulAdd for f32 {
    #[inline(always)]
    fn fused(self, b: f32, c: f32) -> f32 {
        self.mul_add(b, c)
    }

    #[cfg(target_arch = "x86_64")]
    fn product_native(
        p: &Packed<f32>,
        dst: &mut [f32],
        a: &[f32],
        m: usize,
        lda: usize,
        acc: bool,
    ) -> bool {
        if !simd::has_avx512() {
            return false;
        }
        // SAFETY: the CPU has AVX-512F.
        unsafe { avx512_f32::product(p, dst, a, m, lda, acc) };
        true
    }
}

impl MulAdd for f64 {
    #[inline(always)]
    fn fused(self, b: f64, c: f64) -> f64 {
        self.mul_add(b, c)
    }
}

/// Whether `T` is float64: its rows take twice the registers, so blocks of half as
/// many rows.
fn wide<T>() -> bool {
    std::mem::size_of::<T>() > 4
}

/// A `k` x `n` right operand as panels of [`NR`] columns, each `[k][NR]` row-major
/// (the last panel zero-padded).
pub struct Packed<T> {
    data: Vec<T>,
    k: usize,
    n: usize,
}

fn out_of_bounds() -> crate::error::Error {
    err(
        ErrorKind::RuntimeError,
        "internal: recurrent product operand out of bounds",
    )
}

impl<T: MulAdd> Packed<T> {
    /// The operand `b[kk][j] = w[kk * rs + j * cs]` (`kk < k`, `j < n`); Err when `w`
    /// is too short for it.
    pub(super) fn new(w: &[T], k: usize, n: usize, (rs, cs): (usize, usize)) -> Result<Self> {
        let last = k.saturating_sub(1) * rs + n.saturating_sub(1) * cs;
        if k > 0 && n > 0 && last >= w.len() {
            return Err(out_of_bounds());
        }
        let mut data = vec![T::ZERO; n.div_ceil(NR) * k * NR];
        for (p, panel) in data.chunks_exact_mut((k * NR).max(1)).enumerate() {
            let cols = (p * NR..n.min(p * NR + NR)).enumerate();
            for (kk, row) in panel.chunks_exact_mut(NR).enumerate() {
                for (jj, j) in cols.clone() {
                    row[jj] = w[kk * rs + j * cs];
                }
            }
        }
        Ok(Packed { data, k, n })
    }

    /// `dst[m, n] (+)= a[m, k] @ b`: `a` row-major with row stride `lda`, `dst`
    /// row-major `[m, n]`; adds onto `dst` when `acc`.
    pub(super) fn product(
        &self,
        dst: &mut [T],
        a: &[T],
        m: usize,
        lda: usize,
        acc: bool,
    ) -> Result<()> {
        let (k, n) = (self.k, self.n);
        let a_end = m.saturating_sub(1) * lda + k;
        if m == 0 || n == 0 {
            return Ok(());
        }
        if dst.len() < m * n || a.len() < a_end {
            return Err(out_of_bounds());
        }
        if T::product_native(self, dst, a, m, lda, acc) {
            return Ok(());
        }
        #[cfg(target_arch = "x86_64")]
        if simd::has_avx512() {
            // SAFETY: the CPU has the features `rows_avx512` is compiled for.
            unsafe { self.rows_avx512(dst, a, m, lda, acc) };
            return Ok(());
        }
        #[cfg(target_arch = "x86_64")]
        if simd::has_avx2() {
            // SAFETY: the CPU has the features `rows_avx2` is compiled for.
            unsafe { self.rows_avx2(dst, a, m, lda, acc) };
            return Ok(());
        }
        match wide::<T>() {
            true => self.rows::<1, false>(dst, a, m, lda, acc),
            false => self.rows::<2, false>(dst, a, m, lda, acc),
        }
        Ok(())
    }

    /// [`Packed::rows`] compiled for AVX-512 (called directly, so its loops are
    /// inlined into this frame and vectorize for its registers): 8 accumulators of 16
    /// float32 lanes per block, as many as the FMA latency needs.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx2,fma")]
    fn rows_avx512(&self, dst: &mut [T], a: &[T], m: usize, lda: usize, acc: bool) {
        match wide::<T>() {
            true => self.rows::<2, true>(dst, a, m, lda, acc),
            false => self.rows::<4, true>(dst, a, m, lda, acc),
        }
    }

    /// [`Packed::rows`] compiled for AVX2 + FMA: 8 accumulators of 8 float32 lanes.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn rows_avx2(&self, dst: &mut [T], a: &[T], m: usize, lda: usize, acc: bool) {
        match wide::<T>() {
            true => self.rows::<1, true>(dst, a, m, lda, acc),
            false => self.rows::<2, true>(dst, a, m, lda, acc),
        }
    }

    /// [`Packed::product`] in blocks of `MR` rows (`a` and `dst` checked by the
    /// caller); multiply-adds rounded once when `FUSED`.
    #[inline(always)]
    fn rows<const MR: usize, const FUSED: bool>(
        &self,
        dst: &mut [T],
        a: &[T],
        m: usize,
        lda: usize,
        acc: bool,
    ) {
        let (k, n) = (self.k, self.n);
        let ap = pack_rows::<T, MR>(a, m, k, lda);
        for (p, panel) in self.data.chunks_exact((k * NR).max(1)).enumerate() {
            let (c0, c1) = (p * NR, n.min(p * NR + NR));
            for (bi, blk) in ap.chunks_exact((k * MR).max(1)).enumerate() {
                let sums = block::<T, MR, FUSED>(blk, panel);
                for (i, s) in sums.iter().enumerate().take(m - bi * MR) {
                    let at = (bi * MR + i) * n;
                    let out = &mut dst[at + c0..at + c1];
                    for (d, &v) in out.iter_mut().zip(s) {
                        *d = if acc { *d + v } else { v };
                    }
                }
            }
        }
    }
}

/// `a`'s `m` rows (row stride `lda`, `k` long) as blocks of `MR` rows, each `[k][MR]`
/// (rows past m are zeros).
#[inline(always)]
fn pack_rows<T: GemmFloat, const MR: usize>(a: &[T], m: usize, k: usize, lda: usize) -> Vec<T> {
    let mut ap = vec![T::ZERO; m.div_ceil(MR) * k * MR];
    for (bi, blk) in ap.chunks_exact_mut((k * MR).max(1)).enumerate() {
        for i in 0..MR.min(m - bi * MR) {
            let row = &a[(bi * MR + i) * lda..(bi * MR + i) * lda + k];
            for (kk, &v) in row.iter().enumerate() {
                blk[kk * MR + i] = v;
            }
        }
    }
    ap
}

/// One `MR` x [`NR`] block of the product: `ap` `[k][MR]` times `panel` `[k][NR]`,
/// summed over k in order (the sums stay in registers).
#[inline(always)]
fn block<T: MulAdd, const MR: usize, const FUSED: bool>(ap: &[T], panel: &[T]) -> [[T; NR]; MR] {
    let mut c = [[T::ZERO; NR]; MR];
    for (a, b) in ap.chunks_exact(MR).zip(panel.chunks_exact(NR)) {
        for i in 0..MR {
            for j in 0..NR {
                c[i][j] = if FUSED {
                    a[i].fused(b[j], c[i][j])
                } else {
                    a[i] * b[j] + c[i][j]
                };
            }
        }
    }
    c
}

/// The float32 product on AVX-512 in blocks of 8 rows x [`NR`] columns: 16 vector
/// accumulators (the generic blocks hold 8, as many as the FMA latency needs, and load
/// two panel vectors per 8 multiply-adds; here per 16). Each sum runs over k in order
/// with one rounding per step, as [`block`]'s FUSED form: the same numbers.
#[cfg(target_arch = "x86_64")]
mod avx512_f32 {
    use super::{pack_rows, Packed, NR};
    use std::arch::x86_64::*;

    const MR: usize = 8;

    /// [`Packed::product`] (operands checked by the caller).
    #[target_feature(enable = "avx512f")]
    pub(super) fn product(
        p: &Packed<f32>,
        dst: &mut [f32],
        a: &[f32],
        m: usize,
        lda: usize,
        acc: bool,
    ) {
        let (k, n) = (p.k, p.n);
        let ap = pack_rows::<f32, MR>(a, m, k, lda);
        for (pi, panel) in p.data.chunks_exact((k * NR).max(1)).enumerate() {
            let (c0, w) = (pi * NR, NR.min(n - pi * NR));
            let (lo, hi) = masks(w);
            for (bi, blk) in ap.chunks_exact((k * MR).max(1)).enumerate() {
                let c = block(blk, panel);
                for i in 0..MR.min(m - bi * MR) {
                    let at = (bi * MR + i) * n + c0;
                    let out = &mut dst[at..at + w];
                    // SAFETY: `out` holds `w` floats; the masks cover exactly those.
                    unsafe { store(out.as_mut_ptr(), [c[2 * i], c[2 * i + 1]], (lo, hi), acc) };
                }
            }
        }
    }

    /// The lane masks of a panel's two vectors for its first `w` (1..=32) columns.
    fn masks(w: usize) -> (__mmask16, __mmask16) {
        let bits = |n: usize| ((1u32 << n.min(16)) - 1) as __mmask16;
        (bits(w), bits(w.saturating_sub(16)))
    }

    /// `ap` `[k][8]` times `panel` `[k][32]`: row i's sums in vectors 2i, 2i + 1.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn block(ap: &[f32], panel: &[f32]) -> [__m512; 2 * MR] {
        let mut c = [_mm512_setzero_ps(); 2 * MR];
        let (rows, _) = ap.as_chunks::<MR>();
        let (cols, _) = panel.as_chunks::<NR>();
        for (a, b) in rows.iter().zip(cols) {
            // SAFETY: `b` holds 32 floats.
            let (b0, b1) = unsafe {
                (
                    _mm512_loadu_ps(b.as_ptr()),
                    _mm512_loadu_ps(b.as_ptr().add(16)),
                )
            };
            for i in 0..MR {
                let ai = _mm512_set1_ps(a[i]);
                c[2 * i] = _mm512_fmadd_ps(ai, b0, c[2 * i]);
                c[2 * i + 1] = _mm512_fmadd_ps(ai, b1, c[2 * i + 1]);
            }
        }
        c
    }

    /// Writes (or, when `acc`, adds onto) the masked lanes at `out`.
    ///
    /// # Safety
    /// The lanes the masks select must lie within one allocation at `out`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn store(out: *mut f32, v: [__m512; 2], (lo, hi): (__mmask16, __mmask16), acc: bool) {
        let out1 = out.wrapping_add(16);
        let v = match acc {
            // SAFETY: masked-off lanes are not read.
            true => unsafe {
                [
                    _mm512_add_ps(_mm512_maskz_loadu_ps(lo, out), v[0]),
                    _mm512_add_ps(_mm512_maskz_loadu_ps(hi, out1), v[1]),
                ]
            },
            false => v,
        };
        // SAFETY: masked-off lanes are not written.
        unsafe {
            _mm512_mask_storeu_ps(out, lo, v[0]);
            _mm512_mask_storeu_ps(out1, hi, v[1]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Packed;

    /// Deterministic values in [-1, 1).
    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    }

    /// Every path of `product` (whichever this CPU takes: AVX-512's 8-row blocks with
    /// masked partial panels, AVX2, or the generic one) against sums in float64, over
    /// row counts around the block heights and column counts around the panel width,
    /// with and without accumulation and with a row stride past k.
    #[test]
    fn products_match_float64_sums() {
        for &(m, k, n) in &[
            (1, 1, 1),
            (3, 5, 15),
            (8, 128, 32),
            (9, 7, 33),
            (17, 64, 100),
            (16, 512, 128),
            (5, 3, 17),
        ] {
            let lda = k + 3;
            let w = values(k * n, 1 + m as u64);
            let a = values(m * lda, 7 + n as u64);
            let p = Packed::new(&w, k, n, (n, 1)).expect("operand fits");
            for acc in [false, true] {
                let start = values(m * n, 11);
                let mut dst = start.clone();
                p.product(&mut dst, &a, m, lda, acc).expect("operands fit");
                for i in 0..m {
                    for j in 0..n {
                        let base = if acc { start[i * n + j] as f64 } else { 0.0 };
                        let want = (0..k).fold(base, |s, kk| {
                            s + a[i * lda + kk] as f64 * w[kk * n + j] as f64
                        });
                        let got = dst[i * n + j] as f64;
                        assert!(
                            (got - want).abs() <= 1e-5 * (1.0 + want.abs()),
                            "m={m} k={k} n={n} acc={acc} ({i},{j}): {got} vs {want}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn short_operands_are_errors() {
        let p = Packed::new(&values(6, 1), 2, 3, (3, 1)).expect("operand fits");
        let mut dst = vec![0.0f32; 5];
        assert!(p.product(&mut dst, &values(4, 2), 2, 2, false).is_err());
        assert!(Packed::<f32>::new(&values(5, 1), 2, 3, (3, 1)).is_err());
    }
}
