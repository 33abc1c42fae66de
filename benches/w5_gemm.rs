//! W5's matrix products one by one: every gemm shape and operand layout of the compiled
//! MLP training step (batch 64, 784-256-256-10), timed through the `gemm` crate on the
//! calling thread, on the rayon pool and split over the kernels' thread team (kiln's
//! `gemm_f32`), plus two independent products run concurrently with `rayon::join`
//! (each single-threaded), as GFLOP/s. `cargo bench --bench w5_gemm`.
//! Best of several blocks of calls: the machine is shared, the minimum is the least
//! disturbed figure.

use gemm::Parallelism;
use kiln::tensor::kernels::matmul::{gemm_f32, Mat};
use std::time::Instant;

/// A product `dst[m, n] = lhs[m, k] @ rhs[k, n]` with the operand strides W5 uses.
struct Shape {
    name: &'static str,
    m: usize,
    n: usize,
    k: usize,
    /// lhs (row stride, col stride)
    lhs: (usize, usize),
    /// rhs (row stride, col stride)
    rhs: (usize, usize),
    /// rows initialised to a bias (accumulate) rather than overwritten
    acc: bool,
}

const SHAPES: [Shape; 9] = [
    // forward: x @ W^T + b (W stored [out, in]: rhs column-major)
    shape("fwd1 x@W1^T+b", 64, 256, 784, (784, 1), (1, 784), true),
    shape("fwd2 h1@W2^T+b", 64, 256, 256, (256, 1), (1, 256), true),
    shape("fwd3 h2@W3^T+b", 64, 10, 256, (256, 1), (1, 256), true),
    // backward: weight grads g^T @ a (lhs column-major), input grads g @ W
    shape("dW3 g3^T@h2", 10, 256, 64, (1, 10), (256, 1), false),
    shape("dh2 g3@W3", 64, 256, 10, (10, 1), (256, 1), false),
    shape("dW2 g2^T@h1", 256, 256, 64, (1, 256), (256, 1), false),
    shape("dh1 g2@W2", 64, 256, 256, (256, 1), (256, 1), false),
    shape("dW1 g1^T@x", 256, 784, 64, (1, 256), (784, 1), false),
    // the first layer with its weight stored transposed ([in, out], rhs row-major)
    shape("fwd1 rhs row-major", 64, 256, 784, (784, 1), (256, 1), true),
];

const fn shape(
    name: &'static str,
    m: usize,
    n: usize,
    k: usize,
    lhs: (usize, usize),
    rhs: (usize, usize),
    acc: bool,
) -> Shape {
    Shape {
        name,
        m,
        n,
        k,
        lhs,
        rhs,
        acc,
    }
}

struct Operands {
    lhs: Vec<f32>,
    rhs: Vec<f32>,
    dst: Vec<f32>,
}

fn operands(s: &Shape) -> Operands {
    let fill = |len: usize, seed: u32| -> Vec<f32> {
        (0..len)
            .map(|i| {
                ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) >> 16) as f32 / 65536.0
                    - 0.5
            })
            .collect()
    };
    Operands {
        lhs: fill(s.m * s.k, 1),
        rhs: fill(s.k * s.n, 2),
        dst: vec![0.0; s.m * s.n],
    }
}

fn call(s: &Shape, o: &mut Operands, par: Parallelism) {
    // SAFETY: the operands hold m*k, k*n and m*n elements; the strides address
    // exactly those (row-major or column-major).
    unsafe {
        gemm::gemm(
            s.m,
            s.n,
            s.k,
            o.dst.as_mut_ptr(),
            1,
            s.n as isize,
            s.acc,
            o.lhs.as_ptr(),
            s.lhs.1 as isize,
            s.lhs.0 as isize,
            o.rhs.as_ptr(),
            s.rhs.1 as isize,
            s.rhs.0 as isize,
            if s.acc { 1.0 } else { 0.0 },
            1.0,
            false,
            false,
            false,
            par,
        );
    }
}

/// The product through kiln's `gemm_f32` (split over the team above its threshold).
fn call_team(s: &Shape, o: &mut Operands) {
    let lhs = Mat {
        data: &o.lhs,
        offset: 0,
        rs: s.lhs.0,
        cs: s.lhs.1,
    };
    let rhs = Mat {
        data: &o.rhs,
        offset: 0,
        rs: s.rhs.0,
        cs: s.rhs.1,
    };
    let r = gemm_f32(s.m, s.n, s.k, &mut o.dst, lhs, rhs, s.acc);
    assert!(r.is_ok());
}

/// Best seconds per call over `blocks` blocks of `reps` calls of `f`.
fn best(mut f: impl FnMut(), reps: usize, blocks: usize) -> f64 {
    f();
    (0..blocks)
        .map(|_| {
            let t0 = Instant::now();
            for _ in 0..reps {
                f();
            }
            t0.elapsed().as_secs_f64() / reps as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn gflops(s: &Shape, secs: f64) -> f64 {
    2.0 * (s.m * s.n * s.k) as f64 / secs / 1e9
}

fn main() {
    let _ = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build_global();
    println!(
        "{:<18} {:>10} {:>9} {:>9} {:>9} {:>20}",
        "shape", "MACs", "1 thr us", "rayon us", "team us", "GFLOP/s 1/rayon/team"
    );
    let mut total = (0.0, 0.0, 0.0);
    for s in &SHAPES {
        let mut o = operands(s);
        let reps = (20_000_000 / (s.m * s.n * s.k)).clamp(20, 2000);
        let one = best(|| call(s, &mut o, Parallelism::None), reps, 7);
        let two = best(|| call(s, &mut o, Parallelism::Rayon(0)), reps, 7);
        let team = best(|| call_team(s, &mut o), reps, 7);
        if s.name.starts_with("fwd1 rhs") {
            // an alternative layout, not one of the step's products
        } else {
            total.0 += one;
            total.1 += two;
            total.2 += team;
        }
        println!(
            "{:<18} {:>10} {:>9.1} {:>9.1} {:>9.1} {:>6.1}/{:.1}/{:.1}",
            s.name,
            s.m * s.n * s.k,
            one * 1e6,
            two * 1e6,
            team * 1e6,
            gflops(s, one),
            gflops(s, two),
            gflops(s, team)
        );
    }
    println!(
        "the step's 8 products: {:.1} us on 1 thread, {:.1} us on rayon, {:.1} us on the team",
        total.0 * 1e6,
        total.1 * 1e6,
        total.2 * 1e6
    );
    // The backward's two big independent products of one layer, concurrently.
    let (a, b) = (&SHAPES[7], &SHAPES[6]);
    let (mut oa, mut ob) = (operands(a), operands(b));
    let seq = best(
        || {
            call(a, &mut oa, Parallelism::Rayon(0));
            call(b, &mut ob, Parallelism::Rayon(0));
        },
        50,
        7,
    );
    let join = best(
        || {
            rayon::join(
                || call(a, &mut oa, Parallelism::None),
                || call(b, &mut ob, Parallelism::None),
            );
        },
        50,
        7,
    );
    println!(
        "{} + {}: both split over the pool {:.1} us, rayon::join of single-thread calls {:.1} us",
        a.name,
        b.name,
        seq * 1e6,
        join * 1e6
    );
}
