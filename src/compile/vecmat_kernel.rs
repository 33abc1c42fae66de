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

#[cfg(test)]
mod tests {
    use super::vecmat_f32;
    use crate::tensor::kernels::matmul::{gemm_f32, Mat};

    /// Deterministic values in [-1, 1) with many mantissa bits set.
    fn values(seed: u32, len: usize) -> Vec<f32> {
        let mut s = seed.wrapping_mul(2654435761).wrapping_add(1);
        (0..len)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                (s >> 8) as f32 / (1u32 << 23) as f32 - 1.0
            })
            .collect()
    }

    #[test]
    fn products_are_gemms_bits() {
        for (k, n) in [
            (64, 64),
            (32, 64),
            (64, 10),
            (3, 4),
            (7, 45),
            (5, 2),
            (64, 100),
        ] {
            let v = values(k as u32, k);
            let w = values(n as u32 + 100, k * n);
            let mut ours = vec![f32::NAN; n];
            if !vecmat_f32(&v, &w, &mut ours) {
                return; // no FMA on this CPU: the caller uses gemm.
            }
            let mut theirs = vec![0.0f32; n];
            let lhs = Mat {
                data: &v,
                offset: 0,
                rs: k,
                cs: 1,
            };
            let rhs = Mat {
                data: &w,
                offset: 0,
                rs: n,
                cs: 1,
            };
            assert!(gemm_f32(1, n, k, &mut theirs, lhs, rhs, false).is_ok());
            let bits = |x: &[f32]| x.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&ours), bits(&theirs), "{k} x {n}");
        }
    }

    #[test]
    fn mismatched_sizes_are_refused() {
        let mut dst = [0.0f32; 4];
        assert!(!vecmat_f32(&[1.0; 3], &[1.0; 11], &mut dst));
        assert!(!vecmat_f32(&[], &[], &mut dst));
        assert_eq!(dst, [0.0; 4]);
    }
}
