//! Shared helpers of the codegen tests: one-op kernels, ulp distances, a tiny PRNG.
#![allow(dead_code)]

use kiln::compile::{compile, Access, BinaryOp, BufView, BufViewMut, Kernel, Op, Output, UnaryOp};

/// Runs `op` elementwise over `xs` through the JIT (rank 1, contiguous).
pub fn jit_unary(op: UnaryOp, xs: &[f32]) -> Vec<f32> {
    let mut k = Kernel::new(1, vec![Access::Contiguous]);
    let x = k.push(Op::Load(0));
    let y = k.push(Op::Unary(op, x));
    k.outputs.push(Output {
        value: y,
        access: Access::Contiguous,
    });
    let ck = compile(&k).expect("compile");
    let mut out = vec![0.0f32; xs.len()];
    let st = [1isize];
    ck.run(
        &[BufView::new(xs, &st)],
        &mut [BufViewMut::new(&mut out, &st)],
        &[xs.len()],
    )
    .expect("run");
    out
}

/// Runs `op` elementwise over pairs `(xs[i], ys[i])` through the JIT.
pub fn jit_binary(op: BinaryOp, xs: &[f32], ys: &[f32]) -> Vec<f32> {
    let mut k = Kernel::new(1, vec![Access::Contiguous, Access::Contiguous]);
    let x = k.push(Op::Load(0));
    let y = k.push(Op::Load(1));
    let z = k.push(Op::Binary(op, x, y));
    k.outputs.push(Output {
        value: z,
        access: Access::Contiguous,
    });
    let ck = compile(&k).expect("compile");
    let mut out = vec![0.0f32; xs.len()];
    let st = [1isize];
    ck.run(
        &[BufView::new(xs, &st), BufView::new(ys, &st)],
        &mut [BufViewMut::new(&mut out, &st)],
        &[xs.len()],
    )
    .expect("run");
    out
}

/// The f32 ulp at the magnitude of `t` (subnormal spacing below the normal range).
pub fn ulp_of(t: f64) -> f64 {
    let a = t.abs();
    if a < f32::MIN_POSITIVE as f64 {
        return 2f64.powi(-149);
    }
    let e = a.log2().floor() as i32;
    2f64.powi(e.clamp(-126, 127) - 23)
}

/// Error of `got` against the f64 truth in f32 ulps; special values must match exactly
/// (NaN with NaN, infinities with a truth beyond the f32 range of the same sign).
pub fn ulp_error(got: f32, truth: f64) -> f64 {
    if truth.is_nan() {
        return if got.is_nan() { 0.0 } else { f64::INFINITY };
    }
    let t32 = truth as f32;
    if t32.is_infinite() || got.is_infinite() {
        return if got == t32 { 0.0 } else { f64::INFINITY };
    }
    if got.is_nan() {
        return f64::INFINITY;
    }
    (got as f64 - truth).abs() / ulp_of(truth)
}

/// Every `step`-th f32 bit pattern from 0 to +inf, both signs: a logarithmic sweep of
/// the whole range, plus special values.
pub fn sweep(step: u32) -> Vec<f32> {
    let mut xs = Vec::new();
    let mut b = 0u32;
    while b < 0x7f80_0000 {
        let x = f32::from_bits(b);
        xs.push(x);
        xs.push(-x);
        b += step;
    }
    xs.extend([
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
        f32::MAX,
        -f32::MAX,
        1e-45,
        1.0,
        -1.0,
    ]);
    xs
}

/// A dense linear sweep of `n` points over `[lo, hi]`.
pub fn linspace(lo: f32, hi: f32, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| lo + (hi - lo) * (i as f32 / (n - 1) as f32))
        .collect()
}

/// xorshift64* (deterministic test randomness).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    pub fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.unit()
    }
    pub fn chance(&mut self, p: f32) -> bool {
        self.unit() < p
    }
}
