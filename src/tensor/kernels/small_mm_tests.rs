//! The small-product kernels against a naive f64 product over odd sizes and every
//! operand layout (row-major, transposed, padded, strided columns), with and without
//! accumulation, called directly and through `gemm_f32`.

use super::*;
use crate::tensor::kernels::matmul::gemm_f32;

/// A deterministic value in [-1, 1) for element `i` of operand `seed`.
fn val(seed: u64, i: usize) -> f32 {
    let x = (i as u64 ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .wrapping_mul(0xbf58_476d_1ce4_e5b9)
        .rotate_left(31)
        .wrapping_mul(0x94d0_49bb_1331_11eb);
    (x >> 40) as f32 / (1u64 << 23) as f32 - 1.0
}

/// The layouts of an `r` x `c` operand: (name, row stride, column stride, storage len).
fn layouts(r: usize, c: usize) -> Vec<(&'static str, usize, usize, usize)> {
    vec![
        ("row-major", c, 1, r * c),
        ("transposed", 1, r, r * c),
        ("padded rows", c + 3, 1, r * (c + 3)),
        ("strided cols", 2 * c + 1, 2, r * (2 * c + 1)),
    ]
}

/// An operand of `len` values at offset 5 (so offsets are exercised too).
fn operand(seed: u64, len: usize) -> Vec<f32> {
    (0..len + 5).map(|i| val(seed, i)).collect()
}

fn reference(m: usize, n: usize, k: usize, a: &Mat, b: &Mat, init: &[f32]) -> Vec<f64> {
    let mut out = Vec::with_capacity(m * n);
    for i in 0..m {
        for j in 0..n {
            let mut s = f64::from(init[i * n + j]);
            for p in 0..k {
                let x = a.data[a.offset + i * a.rs + p * a.cs];
                let y = b.data[b.offset + p * b.rs + j * b.cs];
                s += f64::from(x) * f64::from(y);
            }
            out.push(s);
        }
    }
    out
}

fn check(got: &[f32], want: &[f64], k: usize, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    let tol = 1e-5 * (k as f64 + 1.0);
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            (f64::from(g) - w).abs() <= tol,
            "{what}: element {i}: got {g}, want {w}"
        );
    }
}

const SIZES: [usize; 5] = [1, 3, 17, 64, 65];

#[test]
fn small_gemm_matches_f64_reference_for_every_layout() {
    for &m in &SIZES {
        for &n in &SIZES {
            for &k in &[1usize, 3, 17, 64, 65] {
                if m * n * k > 70_000 {
                    continue;
                }
                for (la, ars, acs, alen) in layouts(m, k) {
                    for (lb, brs, bcs, blen) in layouts(k, n) {
                        let (da, db) = (operand(1, alen), operand(2, blen));
                        let a = Mat {
                            data: &da,
                            offset: 5,
                            rs: ars,
                            cs: acs,
                        };
                        let b = Mat {
                            data: &db,
                            offset: 5,
                            rs: brs,
                            cs: bcs,
                        };
                        let init: Vec<f32> = (0..m * n).map(|i| val(3, i)).collect();
                        let want = reference(m, n, k, &a, &b, &init);
                        let mut dst = init.clone();
                        small_gemm(m, n, k, &mut dst, a, b).unwrap();
                        let what = format!("{m}x{k} ({la}) @ {k}x{n} ({lb})");
                        check(&dst, &want, k, &what);
                    }
                }
            }
        }
    }
}

#[test]
fn gemm_f32_routes_small_products_and_overwrites_or_accumulates() {
    for &(m, n, k) in &[
        (1, 64, 32),
        (1, 64, 64),
        (64, 1, 1),
        (32, 64, 1),
        (3, 17, 65),
    ] {
        assert!(is_small(m, n, k));
        for (lb, brs, bcs, blen) in layouts(k, n) {
            let (da, db) = (operand(4, m * k), operand(5, blen));
            let a = Mat {
                data: &da,
                offset: 5,
                rs: k,
                cs: 1,
            };
            let b = Mat {
                data: &db,
                offset: 5,
                rs: brs,
                cs: bcs,
            };
            let zero = vec![0.0f32; m * n];
            let mut dst = vec![f32::NAN; m * n];
            gemm_f32(m, n, k, &mut dst, a, b, false).unwrap();
            check(&dst, &reference(m, n, k, &a, &b, &zero), k, lb);
            let init: Vec<f32> = (0..m * n).map(|i| val(6, i)).collect();
            let mut dst = init.clone();
            gemm_f32(m, n, k, &mut dst, a, b, true).unwrap();
            check(&dst, &reference(m, n, k, &a, &b, &init), k, lb);
        }
    }
}

#[test]
fn out_of_bounds_operands_are_errors_not_panics() {
    let d = vec![1.0f32; 8];
    let a = Mat {
        data: &d,
        offset: 0,
        rs: 4,
        cs: 1,
    };
    let short = Mat {
        data: &d[..3],
        offset: 0,
        rs: 4,
        cs: 1,
    };
    let mut dst = vec![0.0f32; 16];
    assert!(small_gemm(4, 4, 4, &mut dst, a, short).is_err());
    assert!(small_gemm(4, 4, 4, &mut dst[..3], a, a).is_err());
    assert!(small_gemm(0, 4, 4, &mut dst, a, a).is_ok());
}
