//! Speed check for the tensor layer (BENCH.md W2/W4): `x * 2.0 + 1.0` on 16 elements,
//! with and without requires_grad, and f32 matmul GFLOP/s at 512 and 1024.
//! Run: `cargo run --release --example tensor_bench`.

use kiln::ops::{binary_scalar, BinaryOp};
use kiln::tensor::creation::randn;
use kiln::tensor::dtype::{DType, Scalar};
use kiln::tensor::linalg::matmul;
use std::time::Instant;

fn w2(requires_grad: bool) -> f64 {
    let x = randn(&[16], DType::F32).expect("randn");
    x.set_requires_grad(requires_grad).expect("requires_grad");
    let iters = 200_000;
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..iters {
            let y = binary_scalar(BinaryOp::Mul, &x, Scalar::Float(2.0), false).expect("mul");
            let z = binary_scalar(BinaryOp::Add, &y, Scalar::Float(1.0), false).expect("add");
            std::hint::black_box(z);
        }
        best = best.min(t.elapsed().as_secs_f64() * 1e6 / iters as f64);
    }
    best
}

fn w4(n: usize) -> f64 {
    let a = randn(&[n, n], DType::F32).expect("randn");
    let b = randn(&[n, n], DType::F32).expect("randn");
    let _ = matmul(&a, &b).expect("warm-up");
    let reps = if n <= 512 { 20 } else { 5 };
    let mut best = f64::MAX;
    for _ in 0..reps {
        let t = Instant::now();
        std::hint::black_box(matmul(&a, &b).expect("matmul"));
        best = best.min(t.elapsed().as_secs_f64());
    }
    2.0 * (n as f64).powi(3) / best / 1e9
}

fn main() {
    println!("W2 x*2.0+1.0 (16 elems): {:.3} us/op (no grad)", w2(false));
    println!(
        "W2 x*2.0+1.0 (16 elems): {:.3} us/op (recording grad)",
        w2(true)
    );
    println!("  (one 'op' = the whole expression, two tensor ops)");
    for n in [512, 1024] {
        println!(
            "W4 matmul {n}x{n}: {:.1} GFLOP/s ({} rayon threads)",
            w4(n),
            rayon::current_num_threads()
        );
    }
}
