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
}

impl MulAdd for f32 {
    #[inline(always)]
    fn fused(self, b: f32, c: f32) -> f32 {
        self.mul_add(b, c)
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
pub(super) struct Packed<T> {
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
        let blocks = m.div_ceil(MR);
        // a's rows as blocks of MR rows, each `[k][MR]` (rows past m are zeros).
        let mut ap = vec![T::ZERO; blocks * k * MR];
        for (bi, blk) in ap.chunks_exact_mut((k * MR).max(1)).enumerate() {
            for i in 0..MR.min(m - bi * MR) {
                let row = &a[(bi * MR + i) * lda..(bi * MR + i) * lda + k];
                for (kk, &v) in row.iter().enumerate() {
                    blk[kk * MR + i] = v;
                }
            }
        }
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
