//! The fast paths of the eager kernels agree with a plain scalar reference: vectorized
//! and thread-split elementwise loops (sizes around the split threshold and the chunk
//! size, scalar operands on either side, views), reused output buffers, the branch-free
//! tanh, the exact GELU's erf and exp, and matmul blocks written without zero-filling
//! the output.

use kiln::ops::{binary, binary_scalar, unary, BinaryOp, UnaryOp};
use kiln::tensor::creation;
use kiln::tensor::{linalg, DType, Scalar, Tensor};

fn f32s(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

/// A deterministic f32 ramp with a sign pattern, `n` elements.
fn ramp(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 7919) % 2001) as f32 / 250.0 - 4.0)
        .collect()
}

// PAR_THRESHOLD is 32 Ki elements and the chunk 16 Ki: cover below, at, above and odd
// remainders.
const SIZES: [usize; 7] = [
    1,
    17,
    32 * 1024 - 1,
    32 * 1024,
    32 * 1024 + 1,
    100_003,
    262_144,
];

#[test]
fn elementwise_fast_paths_match_a_scalar_loop() {
    for n in SIZES {
        let a = ramp(n);
        let b: Vec<f32> = a.iter().map(|x| 0.5 - x * 0.25).collect();
        let ta = creation::from_f32(a.clone(), &[n]).unwrap();
        let tb = creation::from_f32(b.clone(), &[n]).unwrap();
        let mul = f32s(&binary(BinaryOp::Mul, &ta, &tb).unwrap());
        let sub_s = f32s(&binary_scalar(BinaryOp::Sub, &ta, Scalar::Float(1.5), false).unwrap());
        let rsub_s = f32s(&binary_scalar(BinaryOp::Sub, &ta, Scalar::Float(1.5), true).unwrap());
        let neg = f32s(&unary(UnaryOp::Neg, &ta).unwrap());
        let lt = binary(BinaryOp::Lt, &ta, &tb)
            .unwrap()
            .to_vec::<bool>()
            .unwrap();
        for i in 0..n {
            assert_eq!(mul[i], a[i] * b[i], "mul n={n} i={i}");
            assert_eq!(sub_s[i], a[i] - 1.5, "sub n={n} i={i}");
            assert_eq!(rsub_s[i], 1.5 - a[i], "rsub n={n} i={i}");
            assert_eq!(neg[i], -a[i], "neg n={n} i={i}");
            assert_eq!(lt[i], a[i] < b[i], "lt n={n} i={i}");
        }
    }
}

#[test]
fn one_element_operands_broadcast_on_either_side() {
    let n = 70_001;
    let a = ramp(n);
    let ta = creation::from_f32(a.clone(), &[n]).unwrap();
    let one = creation::from_f32(vec![3.0], &[1]).unwrap();
    let left = f32s(&binary(BinaryOp::Div, &one, &ta).unwrap());
    let right = f32s(&binary(BinaryOp::Div, &ta, &one).unwrap());
    for i in 0..n {
        assert_eq!(left[i], 3.0 / a[i]);
        assert_eq!(right[i], a[i] / 3.0);
    }
}

#[test]
fn views_and_offsets_take_the_right_elements() {
    // a [300, 400] matrix: its transpose (strided) and a narrowed, contiguous window
    let (r, c) = (300, 400);
    let a = ramp(r * c);
    let t = creation::from_f32(a.clone(), &[r, c]).unwrap();
    let tt = t.t();
    let got = f32s(&binary_scalar(BinaryOp::Mul, &tt, Scalar::Float(2.0), false).unwrap());
    for i in 0..c {
        for j in 0..r {
            assert_eq!(got[i * r + j], a[j * c + i] * 2.0);
        }
    }
    let rows = t.narrow(0, 100, 150).unwrap(); // offset 100 * c, contiguous
    let got = f32s(&binary(BinaryOp::Add, &rows, &rows).unwrap());
    for (k, v) in got.iter().enumerate() {
        assert_eq!(*v, a[100 * c + k] * 2.0);
    }
}

#[test]
fn reused_buffers_never_show_stale_values() {
    // Large outputs are recycled after they are freed: the next result of the same size
    // (and a result of another dtype) must still be exactly its own values.
    let n = 1 << 20;
    let x = creation::from_f32(ramp(n), &[n]).unwrap();
    for round in 0..4 {
        let y = binary_scalar(BinaryOp::Add, &x, Scalar::Float(f64::from(round)), false).unwrap();
        let v = f32s(&y);
        drop(y);
        let xs = ramp(n);
        assert!(
            v.iter().zip(&xs).all(|(a, b)| *a == b + round as f32),
            "round {round}"
        );
        let z = creation::zeros(&[n], DType::F32).unwrap();
        assert!(f32s(&z).iter().all(|v| *v == 0.0), "zeros after reuse");
        let m = binary_scalar(BinaryOp::Gt, &x, Scalar::Float(0.0), false).unwrap();
        let m = m.to_vec::<bool>().unwrap();
        assert!(m.iter().zip(&xs).all(|(a, b)| *a == (*b > 0.0)));
    }
}

#[test]
fn tanh_kernels_match_f64_truth() {
    let n = 200_000;
    let a: Vec<f32> = (0..n).map(|i| -10.0 + 20.0 * i as f32 / n as f32).collect();
    let t = creation::from_f32(a.clone(), &[n]).unwrap();
    let th = f32s(&unary(UnaryOp::Tanh, &t).unwrap());
    let gl = f32s(&unary(UnaryOp::GeluTanh, &t).unwrap());
    for i in 0..n {
        let x = f64::from(a[i]);
        let th_ref = x.tanh();
        assert!(
            (f64::from(th[i]) - th_ref).abs() <= 2.5e-7 * th_ref.abs().max(1e-30),
            "tanh({x})"
        );
        let g_ref =
            0.5 * x * (1.0 + (0.797_884_560_802_865_4 * (x + 0.044_715 * x * x * x)).tanh());
        assert!(
            (f64::from(gl[i]) - g_ref).abs() <= 2e-6,
            "gelu({x}): {} vs {g_ref}",
            gl[i]
        );
    }
}

/// Naive f64 product of row-major [m, k] and [k, n].
fn naive(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            out[i * n + j] = (0..k)
                .map(|p| f64::from(a[i * k + p]) * f64::from(b[p * n + j]))
                .sum();
        }
    }
    out
}

#[test]
fn matmul_writes_every_output_element() {
    // a freed result of the same size first, so a missed element would show old data
    for (m, k, n) in [(3, 5, 7), (130, 70, 90), (1, 300, 1), (257, 33, 129)] {
        let junk = creation::full(&[m, n], Scalar::Float(1e9), Some(DType::F32)).unwrap();
        drop(junk);
        let a = ramp(m * k);
        let b: Vec<f32> = ramp(k * n).iter().map(|x| x * 0.5).collect();
        let ta = creation::from_f32(a.clone(), &[m, k]).unwrap();
        let tb = creation::from_f32(b.clone(), &[k, n]).unwrap();
        let got = f32s(&linalg::matmul(&ta, &tb).unwrap());
        let want = naive(&a, &b, m, k, n);
        for (g, w) in got.iter().zip(&want) {
            assert!(
                (f64::from(*g) - w).abs() <= 1e-4 * (1.0 + w.abs()),
                "{m}x{k}x{n}"
            );
        }
    }
}

#[test]
fn matmul_with_empty_inner_dim_is_zeros() {
    let a = creation::ones(&[2, 300, 0], DType::F32).unwrap();
    let b = creation::ones(&[2, 0, 400], DType::F32).unwrap();
    let junk = creation::full(&[2, 300, 400], Scalar::Float(7.0), Some(DType::F32)).unwrap();
    drop(junk);
    let c = linalg::matmul(&a, &b).unwrap();
    assert_eq!(c.shape(), &[2, 300, 400]);
    assert!(f32s(&c).iter().all(|v| *v == 0.0));
}

/// Batches of products too small to split one by one but worth the team together
/// (attention's per-head `[B, H, T, hs] @ [B, H, hs, T]`): the batch is split over the
/// team's threads, each product in its own block; with transposed (strided) operands
/// and batch counts that do not divide evenly, every element equals the naive product.
#[test]
fn batched_small_products_split_over_the_team() {
    for (nb, m, k, n) in [(64, 64, 32, 64), (37, 64, 64, 40), (5, 100, 60, 50)] {
        let junk = creation::full(&[nb, m, n], Scalar::Float(1e9), Some(DType::F32)).unwrap();
        drop(junk);
        let a = ramp(nb * m * k);
        let b: Vec<f32> = ramp(nb * n * k).iter().map(|x| x * 0.25).collect();
        let ta = creation::from_f32(a.clone(), &[nb, m, k]).unwrap();
        // b is stored [nb, n, k] and read transposed, as `k.transpose(-2, -1)` is
        let tb = creation::from_f32(b.clone(), &[nb, n, k]).unwrap();
        let got = f32s(&linalg::matmul(&ta, &tb.transpose(-2, -1).unwrap()).unwrap());
        for i in 0..nb {
            let ai = &a[i * m * k..(i + 1) * m * k];
            let bt: Vec<f32> = (0..k * n)
                .map(|e| b[i * n * k + (e % n) * k + e / n])
                .collect();
            let want = naive(ai, &bt, m, k, n);
            for (j, w) in want.iter().enumerate() {
                let g = got[i * m * n + j];
                assert!(
                    (f64::from(g) - w).abs() <= 1e-4 * (1.0 + w.abs()),
                    "{nb}x{m}x{k}x{n} batch {i} element {j}: {g} vs {w}"
                );
            }
        }
    }
}

/// Products large enough to be split over the kernels' thread team (by columns when
/// m <= n, else by rows; blocks of 16 with a remainder), with transposed operands as
/// W5's forward and weight-gradient products read them, and the bias epilogue: every
/// element equals the naive f64 product.
#[test]
fn split_products_equal_the_naive_product() {
    use kiln::tensor::kernels::matmul::matmul_bias_into;
    let cases = [
        (64, 784, 256),
        (256, 64, 784),
        (250, 100, 33),
        (70, 300, 37),
        (33, 500, 90),
    ];
    for (m, k, n) in cases {
        let a = ramp(m * k);
        let b: Vec<f32> = ramp(k * n).iter().map(|x| x * 0.25).collect();
        // a as the transpose of a [k, m] tensor, b as the transpose of a [n, k] tensor
        let at: Vec<f32> = (0..k * m).map(|q| a[(q % m) * k + q / m]).collect();
        let bt: Vec<f32> = (0..n * k).map(|q| b[(q % k) * n + q / k]).collect();
        let ta = creation::from_f32(at, &[k, m])
            .unwrap()
            .permute(&[1, 0])
            .unwrap();
        let tb = creation::from_f32(bt, &[n, k])
            .unwrap()
            .permute(&[1, 0])
            .unwrap();
        let want = naive(&a, &b, m, k, n);
        let close = |got: &[f32], bias: &dyn Fn(usize) -> f64| {
            for (q, (g, w)) in got.iter().zip(&want).enumerate() {
                let w = w + bias(q % n);
                assert!(
                    (f64::from(*g) - w).abs() <= 1e-4 * (1.0 + w.abs()),
                    "{m}x{k}x{n} element {q}: {g} vs {w}"
                );
            }
        };
        close(&f32s(&linalg::matmul(&ta, &tb).unwrap()), &|_| 0.0);
        let bias: Vec<f32> = (0..n).map(|j| j as f32 - 3.5).collect();
        let tbias = creation::from_f32(bias.clone(), &[n]).unwrap();
        let mut dst = vec![f32::NAN; m * n];
        assert!(matmul_bias_into(&mut dst, &ta, &tb, &tbias).unwrap());
        close(&dst, &|j| f64::from(bias[j]));
    }
}

/// The exact GELU's branch-free erf (PyTorch's float32 vectorized formula, Abramowitz &
/// Stegun 7.1.26) stays within that formula's bound of the f64 erf everywhere.
#[test]
fn gelu_erf_within_abramowitz_stegun_bound_of_f64() {
    use kiln::tensor::kernels::fastmath::erf;
    // 7.1.26's bound is 1.5e-7; evaluated in f32 its alternating polynomial and
    // `1 - r t e^(-x^2)` cancel near |x| = 0.2 (r t e^(-x^2) is about 0.8): a float32
    // numpy evaluation of ATen's formula is off by up to 5.9e-7 on this sweep
    let n = 2_000_000;
    let mut worst = 0.0f64;
    for i in 0..=n {
        let x = -7.0 + 14.0 * (i as f32 / n as f32);
        worst = worst.max((f64::from(erf(x)) - libm::erf(f64::from(x))).abs());
    }
    assert!(worst < 7.0e-7, "erf off by {worst}");
    assert!(
        worst > 5.0e-8,
        "the sweep never reached 7.1.26's error ({worst})"
    );
    assert_eq!(erf(f32::INFINITY), 1.0);
    assert_eq!(erf(f32::NEG_INFINITY), -1.0);
    assert_eq!(erf(100.0), 1.0);
    assert_eq!(erf(-1e30), -1.0);
    assert!(erf(-0.0).is_sign_negative());
    assert!(erf(0.0).abs() < 1e-7);
    assert!(erf(f32::NAN).is_nan());
}

/// The branch-free exp: within 1 ulp of the f64 exp over the normal range, 0 and inf
/// where f32 has no room, NaN kept.
#[test]
fn branch_free_exp_within_1_ulp_and_saturates() {
    use kiln::tensor::kernels::fastmath::exp;
    let n = 2_000_000;
    for i in 0..=n {
        let y = -87.0 + 175.0 * (i as f32 / n as f32);
        let truth = f64::from(y).exp() as f32;
        let gap = exp(y).to_bits().abs_diff(truth.to_bits());
        assert!(gap <= 1, "exp({y}): {} vs {truth}", exp(y));
    }
    assert_eq!(exp(0.0), 1.0);
    assert_eq!(exp(-200.0), 0.0);
    assert_eq!(exp(f32::NEG_INFINITY), 0.0);
    assert_eq!(exp(89.0), f32::INFINITY);
    assert_eq!(exp(f32::INFINITY), f32::INFINITY);
    assert!(exp(f32::NAN).is_nan());
    let sub = exp(-90.0);
    assert!((f64::from(sub) / (-90.0f64).exp() - 1.0).abs() < 1e-3);
}
