//! Small f32 matrix products (vector-matrix products, outer products, a few rows)
//! computed directly: below `SMALL_MACS` multiply-adds the gemm crate's setup (dispatch,
//! packing, the thread team's handshake) costs more than the arithmetic itself.

use super::matmul::Mat;
use crate::error::{ErrorKind, Result};
use crate::tensor::err;

/// Products of at most this many multiply-adds take the direct kernels (an RNN step's
/// [1,64]x[64,64] is 4,096; its weight gradient [64,1]x[1,64] is 4,096).
pub const SMALL_MACS: usize = 16 * 1024;

/// True when an `m` x `n` x `k` product is small enough for [`small_gemm`].
pub fn is_small(m: usize, n: usize, k: usize) -> bool {
    m.saturating_mul(n).saturating_mul(k) <= SMALL_MACS
}

fn out_of_bounds() -> crate::error::Error {
    err(
        ErrorKind::RuntimeError,
        "internal: small matmul operand out of bounds",
    )
}

/// `x[off + i * step]` for i in 0..len as a checked slice when `step == 1`.
fn run(data: &[f32], off: usize, len: usize) -> Result<&[f32]> {
    off.checked_add(len)
        .and_then(|end| data.get(off..end))
        .ok_or_else(out_of_bounds)
}

fn at(m: &Mat, r: usize, c: usize) -> Result<f32> {
    m.data
        .get(m.offset + r * m.rs + c * m.cs)
        .copied()
        .ok_or_else(out_of_bounds)
}

/// `dst[m, n] += lhs[m, k] @ rhs[k, n]`, dst row-major and initialised (zeroed by the
/// caller when not accumulating). Rows of rhs contiguous: each dst row gathers scaled
/// rhs rows; columns of rhs and rows of lhs contiguous: each element is a dot product;
/// otherwise a plain loop.
pub fn small_gemm(m: usize, n: usize, k: usize, dst: &mut [f32], lhs: Mat, rhs: Mat) -> Result<()> {
    if m == 0 || n == 0 {
        return Ok(());
    }
    if dst.len() < m.saturating_mul(n) {
        return Err(out_of_bounds());
    }
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU supports the features the function is compiled for.
        return unsafe { simd::small_gemm(m, n, k, dst, lhs, rhs) };
    }
    small_gemm_body::<false>(m, n, k, dst, lhs, rhs)
}

/// The kernel for both instruction sets (`SIMD`: AVX2+FMA, only from `simd::small_gemm`).
#[inline(always)]
fn small_gemm_body<const SIMD: bool>(
    m: usize,
    n: usize,
    k: usize,
    dst: &mut [f32],
    lhs: Mat,
    rhs: Mat,
) -> Result<()> {
    if rhs.cs == 1 || n == 1 {
        rows_form::<SIMD>(m, n, k, dst, lhs, rhs)
    } else if rhs.rs == 1 && (lhs.cs == 1 || k == 1) {
        dots_form::<SIMD>(m, n, k, dst, lhs, rhs)
    } else {
        plain(m, n, k, dst, lhs, rhs)
    }
}

/// `dst[i, :] += sum_p lhs[i, p] * rhs[p, :]`, four rhs rows per pass over dst's rows.
#[inline(always)]
fn rows_form<const SIMD: bool>(
    m: usize,
    n: usize,
    k: usize,
    dst: &mut [f32],
    lhs: Mat,
    rhs: Mat,
) -> Result<()> {
    let rrow = |p: usize| run(rhs.data, rhs.offset + p * rhs.rs, n);
    let mut p = 0;
    while p + 4 <= k {
        let b = [rrow(p)?, rrow(p + 1)?, rrow(p + 2)?, rrow(p + 3)?];
        for (i, row) in dst.chunks_exact_mut(n).take(m).enumerate() {
            let a = [
                at(&lhs, i, p)?,
                at(&lhs, i, p + 1)?,
                at(&lhs, i, p + 2)?,
                at(&lhs, i, p + 3)?,
            ];
            axpy4::<SIMD>(row, a, b);
        }
        p += 4;
    }
    while p < k {
        let b = rrow(p)?;
        for (i, row) in dst.chunks_exact_mut(n).take(m).enumerate() {
            axpy1::<SIMD>(row, at(&lhs, i, p)?, b);
        }
        p += 1;
    }
    Ok(())
}

/// `dst[i, j] += dot(lhs[i, :], rhs[:, j])`, both contiguous.
#[inline(always)]
fn dots_form<const SIMD: bool>(
    m: usize,
    n: usize,
    k: usize,
    dst: &mut [f32],
    lhs: Mat,
    rhs: Mat,
) -> Result<()> {
    let cols = rhs
        .offset
        .checked_add((n - 1).saturating_mul(rhs.cs))
        .and_then(|last| last.checked_add(k))
        .and_then(|end| rhs.data.get(..end))
        .ok_or_else(out_of_bounds)?;
    for (i, row) in dst.chunks_exact_mut(n).take(m).enumerate() {
        let a = run(lhs.data, lhs.offset + i * lhs.rs, k)?;
        let mut off = rhs.offset;
        for d in row.iter_mut() {
            *d += dot::<SIMD>(a, &cols[off..off + k]);
            off += rhs.cs;
        }
    }
    Ok(())
}

fn plain(m: usize, n: usize, k: usize, dst: &mut [f32], lhs: Mat, rhs: Mat) -> Result<()> {
    for (i, row) in dst.chunks_exact_mut(n).take(m).enumerate() {
        for (j, d) in row.iter_mut().enumerate() {
            let mut s = 0.0f32;
            for p in 0..k {
                s += at(&lhs, i, p)? * at(&rhs, p, j)?;
            }
            *d += s;
        }
    }
    Ok(())
}

#[inline(always)]
fn axpy4<const SIMD: bool>(row: &mut [f32], a: [f32; 4], b: [&[f32]; 4]) {
    let [b0, b1, b2, b3] = b;
    let n = row
        .len()
        .min(b0.len())
        .min(b1.len())
        .min(b2.len())
        .min(b3.len());
    let mut i = 0;
    #[cfg(target_arch = "x86_64")]
    if SIMD {
        // SAFETY: SIMD is set only under AVX2+FMA; every pointer covers n elements.
        i = unsafe { simd::axpy4(row.as_mut_ptr(), a, b.map(<[f32]>::as_ptr), n) };
    }
    for j in i..n {
        row[j] = if SIMD {
            // the vector loop's (and gemm's) order: one fused multiply-add per term
            let r = a[0].mul_add(b0[j], row[j]);
            a[3].mul_add(b3[j], a[2].mul_add(b2[j], a[1].mul_add(b1[j], r)))
        } else {
            row[j] + a[0] * b0[j] + a[1] * b1[j] + (a[2] * b2[j] + a[3] * b3[j])
        };
    }
}

#[inline(always)]
fn axpy1<const SIMD: bool>(row: &mut [f32], a: f32, b: &[f32]) {
    let n = row.len().min(b.len());
    let mut i = 0;
    #[cfg(target_arch = "x86_64")]
    if SIMD {
        // SAFETY: SIMD is set only under AVX2+FMA; both pointers cover n elements.
        i = unsafe { simd::axpy1(row.as_mut_ptr(), a, b.as_ptr(), n) };
    }
    for j in i..n {
        row[j] = if SIMD {
            a.mul_add(b[j], row[j])
        } else {
            row[j] + a * b[j]
        };
    }
}

/// Eight independent partial sums (so the loop vectorizes), added pairwise at the end.
#[inline(always)]
fn dot<const SIMD: bool>(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    #[cfg(target_arch = "x86_64")]
    if SIMD {
        // SAFETY: SIMD is set only under AVX2+FMA; both pointers cover n elements.
        return unsafe { simd::dot(a.as_ptr(), b.as_ptr(), n) };
    }
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a[..n].chunks_exact(8), b[..n].chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for l in 0..8 {
            acc[l] += x[l] * y[l];
        }
    }
    let mut tail = 0.0f32;
    for (&x, &y) in ra.iter().zip(rb) {
        tail += x * y;
    }
    let s4 = [
        acc[0] + acc[4],
        acc[1] + acc[5],
        acc[2] + acc[6],
        acc[3] + acc[7],
    ];
    (s4[0] + s4[2]) + (s4[1] + s4[3]) + tail
}

#[cfg(target_arch = "x86_64")]
fn has_avx2() -> bool {
    std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
}

/// AVX2+FMA versions: the whole kernel compiled with the features (so the helpers
/// below inline into it), 8 lanes per instruction.
#[cfg(target_arch = "x86_64")]
mod simd {
    use super::Mat;
    use crate::error::Result;
    use std::arch::x86_64::*;

    /// # Safety
    /// AVX2 and FMA present.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn small_gemm(
        m: usize,
        n: usize,
        k: usize,
        dst: &mut [f32],
        lhs: Mat,
        rhs: Mat,
    ) -> Result<()> {
        super::small_gemm_body::<true>(m, n, k, dst, lhs, rhs)
    }

    /// `d[i] += sum_r a[r] * b[r][i]` for the multiples of 8 below n; returns where it
    /// stopped.
    ///
    /// # Safety
    /// AVX2 and FMA present; `d` and every `b[r]` valid for n elements.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn axpy4(d: *mut f32, a: [f32; 4], b: [*const f32; 4], n: usize) -> usize {
        let [b0, b1, b2, b3] = b;
        let (a0, a1) = (_mm256_set1_ps(a[0]), _mm256_set1_ps(a[1]));
        let (a2, a3) = (_mm256_set1_ps(a[2]), _mm256_set1_ps(a[3]));
        let mut i = 0;
        // SAFETY: i + 8 <= n, the caller's bound for every pointer.
        unsafe {
            while i + 8 <= n {
                let mut v = _mm256_loadu_ps(d.add(i));
                v = _mm256_fmadd_ps(a0, _mm256_loadu_ps(b0.add(i)), v);
                v = _mm256_fmadd_ps(a1, _mm256_loadu_ps(b1.add(i)), v);
                v = _mm256_fmadd_ps(a2, _mm256_loadu_ps(b2.add(i)), v);
                v = _mm256_fmadd_ps(a3, _mm256_loadu_ps(b3.add(i)), v);
                _mm256_storeu_ps(d.add(i), v);
                i += 8;
            }
        }
        i
    }

    /// `d[i] += a * b[i]` for the multiples of 8 below n; returns where it stopped.
    ///
    /// # Safety
    /// AVX2 and FMA present; `d` and `b` valid for n elements.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn axpy1(d: *mut f32, a: f32, b: *const f32, n: usize) -> usize {
        let av = _mm256_set1_ps(a);
        let mut i = 0;
        // SAFETY: i + 8 <= n, the caller's bound for both pointers.
        unsafe {
            while i + 8 <= n {
                let v = _mm256_fmadd_ps(av, _mm256_loadu_ps(b.add(i)), _mm256_loadu_ps(d.add(i)));
                _mm256_storeu_ps(d.add(i), v);
                i += 8;
            }
        }
        i
    }

    /// `sum a[i] * b[i]` over i < n.
    ///
    /// # Safety
    /// AVX2 and FMA present; `a` and `b` valid for n elements.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dot(a: *const f32, b: *const f32, n: usize) -> f32 {
        let (mut s0, mut s1) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        let mut i = 0;
        // SAFETY: every access is below n, the caller's bound for both pointers.
        unsafe {
            while i + 16 <= n {
                s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a.add(i)), _mm256_loadu_ps(b.add(i)), s0);
                let (x, y) = (a.add(i + 8), b.add(i + 8));
                s1 = _mm256_fmadd_ps(_mm256_loadu_ps(x), _mm256_loadu_ps(y), s1);
                i += 16;
            }
            if i + 8 <= n {
                s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a.add(i)), _mm256_loadu_ps(b.add(i)), s0);
                i += 8;
            }
            let s = _mm256_add_ps(s0, s1);
            let q = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
            let q = _mm_add_ps(q, _mm_movehl_ps(q, q));
            let q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
            let mut r = _mm_cvtss_f32(q);
            // fused, as gemm accumulates: short dot products round as they did there
            while i < n {
                r = (*a.add(i)).mul_add(*b.add(i), r);
                i += 1;
            }
            r
        }
    }
}

#[cfg(test)]
#[path = "small_mm_tests.rs"]
mod tests;
