//! Speed figures (not assertions): W3 GELU over 4M f32 and a 4M sum, 2 threads.
//! Run with `cargo test --release --test codegen_speed -- --ignored --nocapture`.

use kiln::compile::{
    compile, Access, BinaryOp, BufView, BufViewMut, Kernel, Op, Output, ReduceOp, Reduction,
    UnaryOp, ValueId,
};
use std::time::Instant;

/// `0.5*x*(1+tanh(0.7978845608*(x+0.044715*x*x*x)))` (constants as written in BENCH.md).
#[allow(clippy::excessive_precision)]
fn gelu_kernel() -> Kernel {
    let mut k = Kernel::new(1, vec![Access::Contiguous]);
    let x = k.push(Op::Load(0));
    let c = |k: &mut Kernel, v: f32| k.push(Op::Const(v));
    let bin = |k: &mut Kernel, op, a: ValueId, b: ValueId| k.push(Op::Binary(op, a, b));
    let half = c(&mut k, 0.5);
    let one = c(&mut k, 1.0);
    let a = c(&mut k, 0.044715);
    let s = c(&mut k, 0.797_884_560_8);
    let x2 = bin(&mut k, BinaryOp::Mul, x, x);
    let x3 = bin(&mut k, BinaryOp::Mul, x2, x);
    let ax3 = bin(&mut k, BinaryOp::Mul, a, x3);
    let inner = bin(&mut k, BinaryOp::Add, x, ax3);
    let si = bin(&mut k, BinaryOp::Mul, s, inner);
    let t = k.push(Op::Unary(UnaryOp::Tanh, si));
    let t1 = bin(&mut k, BinaryOp::Add, one, t);
    let hx = bin(&mut k, BinaryOp::Mul, half, x);
    let y = bin(&mut k, BinaryOp::Mul, hx, t1);
    k.outputs.push(Output {
        value: y,
        access: Access::Contiguous,
    });
    k
}

fn gelu64(x: f64) -> f64 {
    0.5 * x * (1.0 + (0.7978845608 * (x + 0.044715 * x * x * x)).tanh())
}

/// Minor page faults of this process so far (Linux `/proc/self/stat` field 10).
fn minor_faults() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(7)?.parse().ok()
}

fn time_ms(iters: usize, mut f: impl FnMut()) -> f64 {
    for _ in 0..5 {
        f();
    }
    let t = Instant::now();
    for _ in 0..iters {
        f();
    }
    t.elapsed().as_secs_f64() * 1e3 / iters as f64
}

#[test]
#[ignore]
fn w3_gelu_and_sum_figures() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let t = Instant::now();
    let mut compile_us = Vec::new();
    for _ in 0..20 {
        compile_us.push(
            compile(&gelu_kernel())
                .unwrap()
                .compile_time()
                .as_secs_f64()
                * 1e6,
        );
    }
    compile_us.sort_by(f64::total_cmp);
    let ck = compile(&gelu_kernel()).unwrap();
    println!(
        "GELU kernel compile: median {:.0} us, min {:.0} us (20 compiles in {:.1} ms)",
        compile_us[10],
        compile_us[0],
        t.elapsed().as_secs_f64() * 1e3
    );
    let n = 4 << 20;
    let xs: Vec<f32> = (0..n).map(|i| (i as f32 / n as f32) * 12.0 - 6.0).collect();
    let mut out = vec![0.0f32; n];
    let st = [1isize];
    // Warm-up (first touch of `out`), then count faults over the timed calls only.
    ck.run(
        &[BufView::new(&xs, &st)],
        &mut [BufViewMut::new(&mut out, &st)],
        &[n],
    )
    .unwrap();
    let faults0 = minor_faults();
    let ms = pool.install(|| {
        time_ms(50, || {
            ck.run(
                &[BufView::new(&xs, &st)],
                &mut [BufViewMut::new(&mut out, &st)],
                &[n],
            )
            .unwrap()
        })
    });
    let faults = minor_faults().zip(faults0).map(|(a, b)| a - b);
    println!("minor page faults over 55 steady-state GELU calls: {faults:?}");
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let ms1 = one.install(|| {
        time_ms(10, || {
            ck.run(
                &[BufView::new(&xs, &st)],
                &mut [BufViewMut::new(&mut out, &st)],
                &[n],
            )
            .unwrap()
        })
    });
    let mut native = vec![0.0f32; n];
    let ms_native = time_ms(10, || {
        for (o, &x) in native.iter_mut().zip(&xs) {
            *o = 0.5 * x * (1.0 + (0.797_884_6 * (x + 0.044715 * x * x * x)).tanh());
        }
    });
    println!(
        "GELU 1 thread: {ms1:.3} ms/call; Rust std-tanh scalar loop (1 thread): {ms_native:.3} ms"
    );
    let err = xs
        .iter()
        .zip(&out)
        .map(|(&x, &y)| (y as f64 - gelu64(x as f64)).abs())
        .fold(0.0, f64::max);
    let gbs = (8 * n) as f64 / (ms * 1e-3) / 1e9;
    println!(
        "W3 GELU 4M f32, 2 threads: {ms:.3} ms/call, {gbs:.1} GB/s, max abs err vs f64 {err:.2e}"
    );

    let mut k = Kernel::new(1, vec![Access::Contiguous]);
    let x = k.push(Op::Load(0));
    k.reduction = Some(Reduction {
        op: ReduceOp::Sum,
        dims: 1,
        value: x,
    });
    let sk = compile(&k).unwrap();
    let mut s = [0.0f32];
    let ms = pool.install(|| {
        time_ms(50, || {
            sk.run(
                &[BufView::new(&xs, &st)],
                &mut [BufViewMut::new(&mut s, &[])],
                &[n],
            )
            .unwrap()
        })
    });
    println!(
        "sum 4M f32, 2 threads: {ms:.3} ms/call, {:.1} GB/s",
        (4 * n) as f64 / (ms * 1e-3) / 1e9
    );
}
