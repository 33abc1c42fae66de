//! The f32 vector-matrix product of compiled loop steps, `dst[j] = sum_k v[k] * w[k, j]`
//! for a row-major contiguous `w`, without the general gemm's dispatch and planning
//! (a few thousand instructions per call, more than a 64 x 64 product itself costs).
//!
//! It rounds as the gemm crate's vector-matrix path (`gemv`, which eager's matmul of a
//! vector or a `[1, k]` row by a row-major matrix takes) does: per output one
//! sequential chain over `k`, the first term a product, each next one fused-multiply-
//! added onto the running value, so both give the same bits.

/// Columns per block: 4 AVX2 registers of accumulators, kept in registers over `k`.
const BLOCK: usize = 32;

/// `dst = v @ w` with `w` row-major `[v.len(), dst.len()]` (row stride `dst.len()`);
/// false (dst untouched) when the slices do not have these sizes or the CPU lacks
/// FMA (the caller then uses gemm).
pub fn vecmat_f32(v: &[f32], w: &[f32], dst: &mut [f32]) -> bool {
    let (k, n) = (v.len(), dst.len());
    if k == 0 || k.checked_mul(n) != Some(w.len()) {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    if has_fma() {
        // SAFETY: the CPU supports the features the function is compiled for.
        unsafe { vecmat_fma(v, w, dst) };
        return true;
    }
    false
}

#[cfg(target_arch = "x86_64")]
fn has_fma() -> bool {
    std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn vecmat_fma(v: &[f32], w: &[f32], dst: &mut [f32]) {
    let n = dst.len();
    let mut j = 0;
    while j + BLOCK <= n {
        column_block::<BLOCK>(v, w, n, j, dst);
        j += BLOCK;
    }
    while j + 8 <= n {
        column_block::<8>(v, w, n, j, dst);
        j += 8;
    }
    while j < n {
        column_block::<1>(v, w, n, j, dst);
        j += 1;
    }
}

/// Columns `j..j + B` of the product (the caller checked `j + B <= n`, `w` is `k * n`).
#[inline(always)]
fn column_block<const B: usize>(v: &[f32], w: &[f32], n: usize, j: usize, dst: &mut [f32]) {
    let mut acc = [0.0f32; B];
    let mut rows = w.chunks_exact(n).zip(v);
    if let Some((row, &a)) = rows.next() {
        if let Some(r) = row.get(j..j + B) {
            for (s, &x) in acc.iter_mut().zip(r) {
                *s = x * a;
            }
        }
    }
    for (row, &a) in rows {
        if let Some(r) = row.get(j..j + B) {
            for (s, &x) in acc.iter_mut().zip(r) {
                *s = x.mul_add(a, *s);
            }
        }
    }
    if let Some(d) = dst.get_mut(j..j + B) {
        d.copy_from_slice(&acc);
    }
}
