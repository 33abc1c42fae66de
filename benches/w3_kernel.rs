//! W3 at the kernel level: the GELU-tanh loop nest compiled by `kiln::compile`, timed on
//! 2 threads (and 1), with compile time, max abs error vs f64 and minor page faults per
//! call in steady state. `cargo bench --bench w3_kernel`.
//!
//! Three kernels are measured: the formula as written (`tanh`), the algebraic rewrite
//! `x * sigmoid(2u)` (what the simplification pass makes of other tanh gates) and the
//! fused `GeluTanh` op the pass turns W3's formula into (`W3_KERNEL=tanh|sigmoid|op`
//! runs one; `copy` times `x * 1` over the same buffers, `small` one 64k call, `cpv`
//! single-thread CPU cycles per f32x4 (hot and streaming, GELU and copy), `fmaloop` the
//! register FMA loop for the shared-core check, `native` the 8-lane AVX2 routine of
//! compile/jit/gelu_avx2.rs (`W3_NATIVE_MB` sets another size); `W3_DISASM=1` prints the
//! GELU loop's machine code). Then the whole graph path (which runs the native routine
//! where the CPU has AVX2+FMA, `graph` runs only it):
//! the W3 IR graph through `passes::optimize` + `lower::compile_graph` (compile ms),
//! run as a `CompiledGraph` (output buffer reused across calls).

use kiln::compile::ir::infer::{derive, ValueType};
use kiln::compile::ir::{Graph, InputKind, IrOp, Node, NodeId, PathStep};
use kiln::compile::passes::optimize;
use kiln::compile::runtime::lower::{compile_graph, CompiledGraph};
use kiln::compile::{
    compile, Access, BinaryOp, BufView, BufViewMut, CompiledKernel, Kernel, Op, Output, UnaryOp,
    ValueId,
};
use kiln::ops::{BinaryOp as IrBin, UnaryOp as IrUn};
use kiln::tensor::dtype::{DType, Scalar};
use kiln::tensor::Tensor;
use std::time::Instant;

const N: usize = 4 << 20;
const C0: f32 = 0.797_884_6;
const C1: f32 = 0.044715;

fn bin(k: &mut Kernel, op: BinaryOp, a: ValueId, b: ValueId) -> ValueId {
    k.push(Op::Binary(op, a, b))
}

fn finish(mut k: Kernel, y: ValueId) -> Kernel {
    k.outputs.push(Output {
        value: y,
        access: Access::Contiguous,
    });
    k
}

/// `0.5*x*(1+tanh(c0*(x+c1*x*x*x)))` as the tracer records it.
fn gelu_tanh() -> Kernel {
    let mut k = Kernel::new(1, vec![Access::Contiguous]);
    let x = k.push(Op::Load(0));
    let half = k.push(Op::Const(0.5));
    let one = k.push(Op::Const(1.0));
    let a = k.push(Op::Const(C1));
    let s = k.push(Op::Const(C0));
    let x2 = bin(&mut k, BinaryOp::Mul, x, x);
    let x3 = bin(&mut k, BinaryOp::Mul, x2, x);
    let ax3 = bin(&mut k, BinaryOp::Mul, a, x3);
    let inner = bin(&mut k, BinaryOp::Add, x, ax3);
    let si = bin(&mut k, BinaryOp::Mul, s, inner);
    let t = k.push(Op::Unary(UnaryOp::Tanh, si));
    let t1 = bin(&mut k, BinaryOp::Add, one, t);
    let hx = bin(&mut k, BinaryOp::Mul, half, x);
    let y = bin(&mut k, BinaryOp::Mul, hx, t1);
    finish(k, y)
}

/// The rewrite `x * sigmoid(2*c0*(x + c1*x^3))`.
fn gelu_sigmoid() -> Kernel {
    let mut k = Kernel::new(1, vec![Access::Contiguous]);
    let x = k.push(Op::Load(0));
    let a = k.push(Op::Const(C1));
    let s = k.push(Op::Const(2.0 * C0));
    let x2 = bin(&mut k, BinaryOp::Mul, x, x);
    let x3 = bin(&mut k, BinaryOp::Mul, x2, x);
    let ax3 = bin(&mut k, BinaryOp::Mul, a, x3);
    let inner = bin(&mut k, BinaryOp::Add, x, ax3);
    let si = bin(&mut k, BinaryOp::Mul, s, inner);
    let sg = k.push(Op::Unary(UnaryOp::Sigmoid, si));
    let y = bin(&mut k, BinaryOp::Mul, x, sg);
    finish(k, y)
}

/// `x * 1`: the same loads and stores as GELU with no compute, for the memory speed.
fn copy_kernel() -> Kernel {
    let mut k = Kernel::new(1, vec![Access::Contiguous]);
    let x = k.push(Op::Load(0));
    let one = k.push(Op::Const(1.0));
    let y = bin(&mut k, BinaryOp::Mul, x, one);
    finish(k, y)
}

/// The fused op the simplification pass turns W3's formula into.
fn gelu_op() -> Kernel {
    let mut k = Kernel::new(1, vec![Access::Contiguous]);
    let x = k.push(Op::Load(0));
    let y = k.push(Op::Unary(UnaryOp::GeluTanh, x));
    finish(k, y)
}

fn gelu64(x: f64) -> f64 {
    0.5 * x * (1.0 + (0.7978845608 * (x + 0.044715 * x * x * x)).tanh())
}

#[repr(C)]
struct Timespec {
    sec: i64,
    nsec: i64,
}

extern "C" {
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
}

/// Nanoseconds the calling thread has run on a CPU (Linux `CLOCK_THREAD_CPUTIME_ID`,
/// exact to the call, unlike the tick-updated `/proc/thread-self/schedstat`).
fn thread_cpu_ns() -> Option<u64> {
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec (64-bit Linux layout).
    let rc = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    let ns = ts.sec.checked_mul(1_000_000_000)?.checked_add(ts.nsec)?;
    (rc == 0).then_some(u64::try_from(ns).ok()?)
}

/// Minor page faults of this process so far (Linux `/proc/self/stat` field 10).
fn minor_faults() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(7)?.parse().ok()
}

/// Median and minimum milliseconds per call over `reps` timed calls after 3 warm-ups
/// (`W3_REPS=1 W3_KERNEL=op` under `valgrind --tool=callgrind` counts the JIT
/// code's instructions: 9 runs of 4M elements).
fn time_ms(reps: usize, mut f: impl FnMut()) -> (f64, f64) {
    for _ in 0..3 {
        f();
    }
    let mut ms: Vec<f64> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    (ms[reps / 2], ms[0])
}

fn measure(name: &str, kernel: &Kernel, xs: &[f32]) -> Result<(), kiln::Error> {
    let t = Instant::now();
    let ck: CompiledKernel = compile(kernel)?;
    let compile_ms = t.elapsed().as_secs_f64() * 1e3;
    let mut out = vec![0.0f32; xs.len()];
    let st = [1isize];
    let call = |out: &mut [f32]| {
        ck.run(
            &[BufView::new(xs, &st)],
            &mut [BufViewMut::new(out, &st)],
            &[xs.len()],
        )
    };
    call(&mut out)?;
    let err = xs
        .iter()
        .zip(&out)
        .map(|(&x, &y)| (f64::from(y) - gelu64(f64::from(x))).abs())
        .fold(0.0, f64::max);
    for threads in [2, 1] {
        let t = timed(threads, reps(), &mut || drop(call(&mut out)))?;
        println!(
            "{name:<14} {threads} thr: median {:.3} ms  min {:.3} ms{}  {:.1} GB/s  \
             faults/call {:.2}  compile {compile_ms:.2} ms  max_abs_err {err:.2e}",
            t.med,
            t.min,
            t.cpu_text(threads),
            (8 * xs.len()) as f64 / (t.med * 1e-3) / 1e9,
            t.faults
        );
    }
    Ok(())
}

/// Minimum over `batches` of the calling thread's CPU nanoseconds per f32x4 when `ck` runs
/// over `xs` in calls of `chunk` elements (below the parallel threshold, so on this
/// thread), `passes` times per batch.
fn cpu_ns_per_vector(
    ck: &CompiledKernel,
    xs: &[f32],
    chunk: usize,
    passes: usize,
    batches: usize,
) -> f64 {
    let mut out = vec![0.0f32; xs.len()];
    let st = [1isize];
    let mut best = f64::INFINITY;
    for _ in 0..batches {
        let c0 = thread_cpu_ns();
        for _ in 0..passes {
            for (x, y) in xs.chunks(chunk).zip(out.chunks_mut(chunk)) {
                let n = x.len();
                drop(ck.run(
                    &[BufView::new(x, &st)],
                    &mut [BufViewMut::new(y, &st)],
                    &[n],
                ));
            }
        }
        if let Some((a, b)) = thread_cpu_ns().zip(c0) {
            best = best.min((a - b) as f64 / (passes * xs.len() / 4) as f64);
        }
    }
    best
}

/// Nanoseconds per FMA of 8 independent f32x4 FMA chains in registers (port-bound: half a
/// cycle each on a core of its own); minimum and median of `batches` batches of 8M.
/// `W3_KERNEL=fmaloop` runs 400: run it in one and in two processes at once; if the two
/// vCPUs shared a core's FP pipes, overlapping batches would take twice as long.
#[cfg(target_arch = "x86_64")]
fn fma_loop_ns(batches: usize) -> (f64, f64) {
    let iters = 1_000_000u64;
    let mut ns: Vec<f64> = (0..batches)
        .filter_map(|_| {
            let c0 = thread_cpu_ns();
            // SAFETY: register-only arithmetic on xmm8-15 (declared clobbered).
            unsafe {
                std::arch::asm!(
                    "vxorps xmm8, xmm8, xmm8", "vxorps xmm9, xmm9, xmm9",
                    "vxorps xmm10, xmm10, xmm10", "vxorps xmm11, xmm11, xmm11",
                    "vxorps xmm12, xmm12, xmm12", "vxorps xmm13, xmm13, xmm13",
                    "vxorps xmm14, xmm14, xmm14", "vxorps xmm15, xmm15, xmm15",
                    "2:",
                    "vfmadd213ps xmm8, xmm8, xmm8", "vfmadd213ps xmm9, xmm9, xmm9",
                    "vfmadd213ps xmm10, xmm10, xmm10", "vfmadd213ps xmm11, xmm11, xmm11",
                    "vfmadd213ps xmm12, xmm12, xmm12", "vfmadd213ps xmm13, xmm13, xmm13",
                    "vfmadd213ps xmm14, xmm14, xmm14", "vfmadd213ps xmm15, xmm15, xmm15",
                    "sub {n}, 1",
                    "jnz 2b",
                    n = inout(reg) iters => _,
                    out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _,
                    out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
                );
            }
            let (a, b) = thread_cpu_ns().zip(c0)?;
            Some((a - b) as f64 / (8 * iters) as f64)
        })
        .collect();
    ns.sort_by(f64::total_cmp);
    (
        ns.first().copied().unwrap_or(f64::NAN),
        ns.get(ns.len() / 2).copied().unwrap_or(f64::NAN),
    )
}

/// Single-thread CPU cycles per f32x4 of the GELU op and of the copy, hot (16k elements,
/// in L2) and streaming (all 4M elements in 32k calls): `W3_ROUNDS` rounds (default 40),
/// each re-estimating the clock from the FMA loop (2 per cycle) and timing one batch of
/// each; minimum and median over the rounds (a loaded machine inflates the median).
#[cfg(target_arch = "x86_64")]
fn per_vector_report(xs: &[f32]) -> Result<(), kiln::Error> {
    let mut cks = Vec::new();
    for (name, kernel) in [("gelu op", gelu_op()), ("copy x*1", copy_kernel())] {
        cks.push((name, compile(&kernel)?, Vec::new(), Vec::new()));
    }
    let rounds = std::env::var("W3_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(40usize)
        .max(1);
    for _ in 0..rounds {
        let cycle_ns = 2.0 * fma_loop_ns(5).0;
        for (_, ck, hot, stream) in cks.iter_mut() {
            hot.push(cpu_ns_per_vector(ck, &xs[..1 << 14], 1 << 14, 64, 1) / cycle_ns);
            stream.push(cpu_ns_per_vector(ck, xs, 1 << 15, 1, 1) / cycle_ns);
        }
    }
    for (name, _, hot, stream) in cks.iter_mut() {
        hot.sort_by(f64::total_cmp);
        stream.sort_by(f64::total_cmp);
        println!(
            "{name:<10} 1 thr cycles/f32x4: hot min {:.2} median {:.2}  stream min {:.2} \
             median {:.2}",
            hot[0],
            hot[rounds / 2],
            stream[0],
            stream[rounds / 2]
        );
    }
    Ok(())
}

/// The native 8-lane routine (compile/jit/gelu_avx2.rs) over `xs` on 1 thread and on 2
/// (rayon, chunks of 64k elements as the compiled runs' tasks), and its single-thread
/// cycles per f32x8 in L2.
fn measure_native(xs: &[f32]) -> Result<(), kiln::Error> {
    use kiln::compile::jit::gelu_avx2::gelu_tanh;
    use rayon::prelude::*;
    let mut out = vec![0.0f32; xs.len()];
    if !gelu_tanh(xs, &mut out) {
        println!("native gelu: no AVX2+FMA on this CPU");
        return Ok(());
    }
    #[cfg(target_arch = "x86_64")]
    {
        // Hot: 16k elements (in L2), CPU time per 8-lane vector, clock from the FMA loop.
        let cycle_ns = 2.0 * fma_loop_ns(5).0;
        let hot = &xs[..1 << 14];
        let best = (0..20)
            .filter_map(|_| {
                let c0 = thread_cpu_ns();
                for _ in 0..64 {
                    gelu_tanh(hot, &mut out[..1 << 14]);
                }
                let (a, b) = thread_cpu_ns().zip(c0)?;
                Some((a - b) as f64 / (64 * hot.len() / 8) as f64 / cycle_ns)
            })
            .fold(f64::INFINITY, f64::min);
        println!("native gelu    1 thr cycles/f32x8 hot: min {best:.2}");
    }
    let chunk = 1 << 16;
    for threads in [2, 1] {
        let t = timed(threads, reps(), &mut || {
            xs.par_chunks(chunk)
                .zip(out.par_chunks_mut(chunk))
                .for_each(|(x, y)| {
                    gelu_tanh(x, y);
                });
        })?;
        println!(
            "native gelu    {threads} thr: median {:.3} ms  min {:.3} ms{}  faults/call {:.2}",
            t.med,
            t.min,
            t.cpu_text(threads),
            t.faults
        );
    }
    Ok(())
}

/// Timed runs: `W3_REPS` (default 40).
fn reps() -> usize {
    std::env::var("W3_REPS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(40usize)
        .max(1)
}

/// One timing: median and min ms, the measuring thread's CPU ms per call, page faults
/// per call.
struct Timing {
    med: f64,
    min: f64,
    cpu: f64,
    faults: f64,
}

impl Timing {
    /// On one thread all the work runs on the measuring thread: its CPU time per call is
    /// the kernel's cost without the waits a loaded machine adds (not shown otherwise).
    fn cpu_text(&self, threads: usize) -> String {
        if threads == 1 {
            format!("  cpu {:.3} ms/call", self.cpu)
        } else {
            String::new()
        }
    }
}

/// Times `reps` calls of `f` (after `time_ms`'s warm-up) on a pool of `threads`.
fn timed(threads: usize, reps: usize, f: &mut (dyn FnMut() + Send)) -> Result<Timing, kiln::Error> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| kiln::Error::new(kiln::ErrorKind::RuntimeError, e.to_string(), None))?;
    let faults0 = minor_faults();
    let (med, min, cpu) = pool.install(|| {
        let c0 = thread_cpu_ns();
        let (med, min) = time_ms(reps, &mut *f);
        let cpu = thread_cpu_ns()
            .zip(c0)
            .map_or(f64::NAN, |(a, b)| (a - b) as f64 / 1e6 / (reps + 3) as f64);
        (med, min, cpu)
    });
    let faults = minor_faults()
        .zip(faults0)
        .map_or(f64::NAN, |(a, b)| (a - b) as f64 / (reps + 3) as f64);
    Ok(Timing {
        med,
        min,
        cpu,
        faults,
    })
}

fn node(g: &mut Graph, op: IrOp, args: &[NodeId]) -> Result<NodeId, kiln::Error> {
    let types: Vec<ValueType> = args
        .iter()
        .map(|a| ValueType {
            dtype: g.nodes[a.index()].dtype,
            shape: g.nodes[a.index()].shape.clone(),
        })
        .collect();
    let d = derive(&op, &types)?;
    Ok(g.push(Node {
        op,
        args: args.to_vec(),
        dtype: d.dtype,
        shape: d.shape.unwrap_or_default(),
        span: None,
    }))
}

fn scal(op: IrBin, s: f64) -> IrOp {
    IrOp::BinaryScalar {
        op,
        scalar: Scalar::Float(s),
        reverse: true,
    }
}

/// The W3 graph as the tracer records `0.5*x*(1+tanh(0.7978845608*(x+0.044715*x*x*x)))`.
fn w3_graph() -> Result<Graph, kiln::Error> {
    let mut g = Graph::new();
    let x = g.add_input(
        InputKind::Arg(vec![PathStep::Index(0)]),
        DType::F32,
        [N].as_slice().into(),
        None,
    );
    let hx = node(&mut g, scal(IrBin::Mul, 0.5), &[x])?;
    let x2 = node(&mut g, IrOp::Binary(IrBin::Mul), &[x, x])?;
    let x3 = node(&mut g, IrOp::Binary(IrBin::Mul), &[x2, x])?;
    let cx3 = node(&mut g, scal(IrBin::Mul, 0.044715), &[x3])?;
    let inner = node(&mut g, IrOp::Binary(IrBin::Add), &[x, cx3])?;
    let u = node(&mut g, scal(IrBin::Mul, 0.7978845608), &[inner])?;
    let t = node(&mut g, IrOp::Unary(IrUn::Tanh), &[u])?;
    let t1 = node(&mut g, scal(IrBin::Add, 1.0), &[t])?;
    let y = node(&mut g, IrOp::Binary(IrBin::Mul), &[hx, t1])?;
    g.outputs.push(y);
    Ok(g)
}

fn not_fused(_: &Node, _: &[Tensor], inputs: &[Tensor]) -> Result<Tensor, kiln::Error> {
    inputs
        .first()
        .cloned()
        .ok_or_else(|| kiln::Error::new(kiln::ErrorKind::RuntimeError, "no input", None))
}

fn measure_graph(xs: &[f32]) -> Result<(), kiln::Error> {
    let mut compile_ms = Vec::new();
    let mut cg: Option<CompiledGraph> = None;
    for _ in 0..11 {
        let t = Instant::now();
        let c = compile_graph(optimize(w3_graph()?)?)?;
        compile_ms.push(t.elapsed().as_secs_f64() * 1e3);
        cg = Some(c);
    }
    compile_ms.sort_by(f64::total_cmp);
    let Some(cg) = cg else { return Ok(()) };
    let x = kiln::tensor::creation::from_f32(xs.to_vec(), &[xs.len()])?;
    // The result is dropped here, so the timed calls reuse its buffer.
    let ys = cg
        .run(std::slice::from_ref(&x), &not_fused, &mut String::new())?
        .first()
        .map(|y| y.to_f32_vec())
        .transpose()?
        .unwrap_or_default();
    let err = xs
        .iter()
        .zip(&ys)
        .map(|(&x, &y)| (f64::from(y) - gelu64(f64::from(x))).abs())
        .fold(0.0, f64::max);
    let reps = 20;
    let faults0 = minor_faults();
    // Tensors are not Send: this runs on the calling thread with the global pool of 2.
    let (med, min) = time_ms(reps, || {
        drop(cg.run(std::slice::from_ref(&x), &not_fused, &mut String::new()))
    });
    let faults = minor_faults()
        .zip(faults0)
        .map_or(f64::NAN, |(a, b)| (a - b) as f64 / (reps + 3) as f64);
    println!(
        "graph path     2 thr: median {med:.3} ms  min {min:.3} ms  faults/call {faults:.2}  \
         optimize+compile median {:.2} ms  kernels {}  max_abs_err {err:.2e}",
        compile_ms[compile_ms.len() / 2],
        cg.fused.len()
    );
    Ok(())
}

fn main() -> Result<(), kiln::Error> {
    // The graph path's kernels split across the global pool; give it the W3 thread count.
    let _ = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build_global();
    let xs: Vec<f32> = (0..N)
        .map(|i| -4.0 + 8.0 * i as f32 / (N - 1) as f32)
        .collect();
    let only = std::env::var("W3_KERNEL").unwrap_or_default();
    if std::env::var_os("W3_DISASM").is_some() {
        println!("{}", kiln::compile::disassemble(&gelu_op())?);
    }
    #[cfg(target_arch = "x86_64")]
    if only == "cpv" {
        per_vector_report(&xs)?;
    }
    #[cfg(target_arch = "x86_64")]
    if only == "fmaloop" {
        let (min, med) = fma_loop_ns(400);
        println!("fma loop: min {min:.4} ns/fma  median {med:.4} ns/fma");
    }
    if only == "copy" {
        measure("copy x*1", &copy_kernel(), &xs)?;
    }
    if only == "native" {
        // `W3_NATIVE_MB`: another output size in MB.
        let mb = std::env::var("W3_NATIVE_MB")
            .ok()
            .and_then(|m| m.parse().ok());
        let big: Vec<f32> = mb.map_or(Vec::new(), |mb: usize| {
            let n = mb << 18;
            (0..n).map(|i| -4.0 + 8.0 * i as f32 / n as f32).collect()
        });
        measure_native(if big.is_empty() { &xs } else { &big })?;
    }
    if only == "small" {
        // Per-call overhead: 64k elements (one task; the threshold of splitting).
        measure("gelu op 64k", &gelu_op(), &xs[..1 << 16])?;
    }
    if only.is_empty() || only == "tanh" {
        measure("gelu tanh", &gelu_tanh(), &xs)?;
    }
    if only.is_empty() || only == "sigmoid" {
        measure("gelu sigmoid", &gelu_sigmoid(), &xs)?;
    }
    if only.is_empty() || only == "op" {
        measure("gelu op", &gelu_op(), &xs)?;
    }
    if only.is_empty() || only == "graph" {
        measure_graph(&xs)?;
    }
    Ok(())
}
