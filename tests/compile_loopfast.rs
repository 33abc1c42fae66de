//! Cheap compiled loop iterations (W7's forward): the RNN body's `x[t] @ Wxh` is one
//! product `x @ Wxh` before the loop, its `h @ Whh` runs as a vector-matrix step into
//! reused buffers, steady-state iterations allocate no
//! kernel or product output, and the heap allocations one extra iteration costs (counted
//! by this binary's allocator, per thread) stay a small constant.

mod common;

use common::{engine, with_last_graph};
use kiln::compile::runtime::lower::CompiledGraph;
use kiln::compile::runtime::run_control::ControlStep;
use kiln::compile::runtime::vecmat_kernel::vecmat_f32;
use kiln::tensor::kernels::matmul::{gemm_f32, Mat};
use kiln::Engine;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The system allocator, counting allocations made on the current thread.
struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards to `System` unchanged; the counter is a const-initialised
// thread-local `Cell` (no allocation, no reentrancy).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract is System's.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: the caller's contract is System's.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract is System's.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocs() -> u64 {
    ALLOCS.with(Cell::get)
}

const RNN: &str = "
manual_seed(3)
D = 32
H = 64
Wxh = randn(D, H) * 0.2
Whh = randn(H, H) * 0.1
bh = randn(H) * 0.1
xs = {n: randn(n, D) for n in [5, 6, 7, 20, 60]}
@compile(dynamic=True)
def rnn(x, Wxh, Whh, bh):
    h = zeros(H)
    for t in range(x.shape[0]):
        h = tanh(x[t] @ Wxh + h @ Whh + bh)
    return h
def eager(x, Wxh, Whh, bh):
    h = zeros(H)
    for t in range(x.shape[0]):
        h = tanh(x[t] @ Wxh + h @ Whh + bh)
    return h
with no_grad():
    for n in [5, 6, 7]:
        rnn(xs[n], Wxh, Whh, bh)
";

/// Runs `f(&graph)` on the one compiled version of global `rnn`.
fn with_graph<T>(e: &Engine, f: impl FnOnce(&CompiledGraph) -> T) -> T {
    with_last_graph(e, "rnn", |g| f(&g.compiled))
}

/// Calls `rnn` on a sequence of length `n`; the previous result is dropped first (else
/// the caller's copy of the last carried value holds one more buffer per call).
fn call(e: &mut Engine, n: usize) {
    let src = format!("out = None\nwith no_grad():\n    out = rnn(xs[{n}], Wxh, Whh, bh)\n");
    if let Err(err) = e.run_source(&src, "call.dl") {
        panic!("{}", e.render_error(&err));
    }
}

#[test]
fn rnn_body_product_is_a_vector_matrix_step() {
    let e = engine(RNN);
    let products = with_graph(&e, |g| {
        let regions = g.controls.first().map(ControlStep::regions);
        match regions
            .unwrap_or_default()
            .iter()
            .find(|(n, _)| *n == "body")
        {
            Some((_, body)) => body.vecmats.len(),
            None => panic!("no loop in {}", g.to_text(None)),
        }
    });
    // h @ Whh; x[t] @ Wxh is hoisted (`input_projection_is_one_product_before_the_loop`).
    assert_eq!(products, 1, "h @ Whh");
}

#[test]
fn input_projection_is_one_product_before_the_loop() {
    let mut e = engine(RNN);
    let dump = with_graph(&e, |g| g.to_text(None));
    let lines = |body: bool| {
        dump.lines()
            .filter(|l| l.starts_with("    %") == body && l.starts_with('%') != body)
            .filter(|l| l.contains("= matmul("))
            .count()
    };
    // `x @ Wxh` ([n, 64], n symbolic) before the loop; the body reads its row t and
    // multiplies only `h @ Whh`.
    assert_eq!((lines(false), lines(true)), (1, 1), "{dump}");
    assert!(dump.contains("= matmul(%0, %1) : f32[s0, 64]"), "{dump}");
    // Every length gives eager's result within 1e-5 (the gemm may sum in another order).
    for n in [5, 6, 7, 20, 60] {
        let close = format!(
            "bool(((rnn(xs[{n}], Wxh, Whh, bh) - eager(xs[{n}], Wxh, Whh, bh)).abs() \
             <= 1e-5 * eager(xs[{n}], Wxh, Whh, bh).abs() + 1e-7).all())"
        );
        assert!(e.eval_as::<bool>(&close).unwrap_or(false), "length {n}");
    }
}

#[test]
fn steady_state_iterations_allocate_no_kernel_outputs() {
    let mut e = engine(RNN);
    call(&mut e, 20);
    let warm = with_graph(&e, CompiledGraph::fresh_outputs);
    // Two buffers per vector-matrix step and per fused kernel at most (a carried value
    // alive across an iteration holds one of them).
    assert!(
        (1..=6).contains(&warm),
        "{warm} outputs allocated warming up"
    );
    for n in [60, 20, 5, 60, 7] {
        call(&mut e, n);
        let now = with_graph(&e, CompiledGraph::fresh_outputs);
        assert_eq!(now, warm, "a call of {n} iterations allocated outputs");
    }
    // The results are eager's (the products are the same gemm calls).
    let same =
        "bool((rnn(xs[60], Wxh, Whh, bh) - eager(xs[60], Wxh, Whh, bh)).abs().max() <= 1e-6)";
    assert!(e.eval_as::<bool>(same).unwrap_or(false));
}

#[test]
fn an_extra_iteration_costs_a_few_heap_allocations() {
    let mut e = engine(RNN);
    call(&mut e, 20);
    call(&mut e, 60);
    let count = |e: &mut Engine, n: usize| {
        let before = allocs();
        call(e, n);
        allocs() - before
    };
    // The calls differ only in 40 iterations; the minimum over repeats drops noise
    // from the interpreter's own caches.
    let short = (0..3).map(|_| count(&mut e, 20)).min().unwrap_or(0);
    let long = (0..3).map(|_| count(&mut e, 60)).min().unwrap_or(0);
    let per_iter = long.saturating_sub(short) as f64 / 40.0;
    eprintln!("heap allocations per loop iteration: {per_iter}");
    assert!(per_iter <= 12.0, "{per_iter} allocations per iteration");
}

#[test]
fn a_product_of_a_carried_matrix_or_a_rewritten_input_is_not_hoisted() {
    let src = "
manual_seed(8)
W = randn(3, 4) * 0.5
x = randn(9, 3)

def carried_w(x, W):
    h = zeros(4)
    for t in range(x.shape[0]):
        h = tanh(x[t] @ W + h)
        W = W * 0.9
    return h

def rewritten_x(x, W):
    h = zeros(4)
    z = x * 1.0
    for t in range(x.shape[0]):
        h = tanh(z[t] @ W + h)
        z = z * 0.5
    return h

c1 = compile(carried_w)
c2 = compile(rewritten_x)
";
    let mut e = engine(src);
    for (f, c) in [("carried_w", "c1"), ("rewritten_x", "c2")] {
        let check = format!(
            "with no_grad():\n    ok = bool(({c}(x, W) - {f}(x, W)).abs().max() <= 1e-6)\n    \
             dump = graph({c}, x, W)\n"
        );
        if let Err(err) = e.run_source(&check, "check.dl") {
            panic!("{}", e.render_error(&err));
        }
        assert!(e.eval_as::<bool>("ok").unwrap_or(false), "{f}");
        let dump = e.eval_as::<String>("dump").unwrap_or_default();
        let products = |body: bool| {
            dump.lines()
                .filter(|l| l.starts_with("    %") == body && l.starts_with('%') != body)
                .filter(|l| l.contains("= matmul("))
                .count()
        };
        // The product stays in the body: its matrix or its rows change every iteration.
        assert!(dump.contains("= loop("), "{dump}");
        assert_eq!((products(false), products(true)), (0, 1), "{dump}");
    }
}

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

/// The loop steps' direct vector-matrix kernel gives gemm's bits (eager's matmul of a
/// vector by a row-major matrix), so compiled loops round as eager does.
#[test]
fn direct_vector_matrix_products_are_gemms_bits() {
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
            return; // no FMA on this CPU: the step uses gemm.
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
fn the_direct_kernel_refuses_mismatched_sizes() {
    let mut dst = [0.0f32; 4];
    assert!(!vecmat_f32(&[1.0; 3], &[1.0; 11], &mut dst));
    assert!(!vecmat_f32(&[], &[], &mut dst));
    assert_eq!(dst, [0.0; 4]);
}

#[test]
fn small_loop_kernels_run_inline_on_the_calling_thread() {
    let mut e = engine(RNN);
    let before = with_graph(&e, CompiledGraph::inline_runs);
    call(&mut e, 20);
    // The body's one fused kernel (add, add, tanh over 64 contiguous elements) runs
    // inline at every iteration: no plan of views, no team.
    let after = with_graph(&e, CompiledGraph::inline_runs);
    assert_eq!(after - before, 20);
    let same =
        "bool((rnn(xs[20], Wxh, Whh, bh) - eager(xs[20], Wxh, Whh, bh)).abs().max() <= 1e-6)";
    assert!(e.eval_as::<bool>(same).unwrap_or(false));
}

#[test]
fn broadcast_or_large_kernels_do_not_run_inline() {
    // Guard cases: an input broadcast across a row (the kernel reads it with stride 0)
    // and a kernel over 2^16 elements (split into tasks) take the general path, with
    // eager's results.
    let src = "
manual_seed(4)
a = randn(8, 64)
b = randn(64)
big = randn(256, 256)
def bcast(a, b):
    return tanh(a + b) * 2.0
def large(x):
    return tanh(x + 1.0) * 2.0
cb = compile(bcast)
cl = compile(large)
ok = bool((cb(a, b) - bcast(a, b)).abs().max() <= 1e-6)
ok = ok and bool((cl(big) - large(big)).abs().max() <= 1e-6)
";
    let mut e = engine(src);
    assert!(e.eval_as::<bool>("ok").unwrap_or(false));
    for name in ["cb", "cl"] {
        let (fused, inline) = with_last_graph(&e, name, |g| {
            (g.compiled.fused_total(), g.compiled.inline_runs())
        });
        assert_eq!((fused, inline), (1, 0), "{name}");
    }
}
