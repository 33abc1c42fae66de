//! The `GeluTanh` routine of mathgelu.rs with 8-lane AVX2+FMA vectors, for fused kernels
//! that are one lone `GeluTanh` over a contiguous input into a contiguous output (W3).
//!
//! Cranelift's x64 backend has no 256-bit vector types, so its kernels compute 4 lanes
//! per instruction; on a CPU with 256-bit FP pipes (Zen 3, Intel since Haswell) the
//! same operations on 8 lanes take about the same cycles per instruction, half per
//! element. This is native Rust (`std::arch` intrinsics in a `#[target_feature]`
//! function, chosen at run time when the CPU has AVX2 and FMA), with the SAME operation
//! sequence as [`crate::compile::jit::mathgelu::gelu_tanh`] (clamp, `x^2`, the `B0`/`B1` FMA, the
//! rounding-constant FMA, `f`, the `EXP2_P` Horner chain in the same order, the exponent
//! built from the rounding constant's bits, the final FMA and the division), so every
//! lane's result has the bits the Cranelift kernel computes (tests/codegen_gelu_avx2.rs).
//! Four vectors per iteration, each step done for all four before the next; the tail is
//! a masked load and store of the same 8-lane computation.
//!
//! Stores are ordinary: non-temporal stores (`vmovntps`, which skip reading each output
//! line before overwriting it: W3's traffic 48 -> 32 MB) were measured slower on this
//! VM class (Zen 3, 32 MB L3, W3's 16 MB output: minima 3-40% higher on 1 and 2
//! threads, under load; no gain at 64 MB either).

use crate::compile::jit::kernel::{Access, FloatType, Kernel, Op, Output, UnaryOp, ValueId};
use crate::compile::jit::mathfn::magic_for;
use crate::compile::jit::mathgelu::{B0, B1, EXP2_P, GELU_HI, GELU_LO};
use crate::compile::jit::parallel;
use crate::compile::jit::views::{BufView, BufViewMut};

/// Whether this CPU can run the routine (AVX2 and FMA; std caches the detection).
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `out[i] = gelu_tanh(x[i])`. Returns false, having written nothing, when the CPU
/// lacks AVX2/FMA or the lengths differ.
pub fn gelu_tanh(x: &[f32], out: &mut [f32]) -> bool {
    if x.len() != out.len() || !available() {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the CPU has AVX2 and FMA (checked above); the lengths are equal.
    unsafe {
        avx2::gelu_slice(x, out)
    };
    cfg!(target_arch = "x86_64")
}

/// Whether `kernel` is one `GeluTanh` of a contiguous input stored contiguously, with
/// no reduction: the kernels [`run_views`] runs.
pub fn is_lone_gelu(kernel: &Kernel) -> bool {
    kernel.dtype == FloatType::F32
        && kernel.inputs == [Access::Contiguous]
        && kernel.body == [Op::Load(0), Op::Unary(UnaryOp::GeluTanh, ValueId(0))]
        && kernel.outputs
            == [Output {
                value: ValueId(1),
                access: Access::Contiguous,
            }]
        && kernel.reduction.is_none()
}

/// Whether `strides` address `ext` densely in row-major order (dims of extent 1 may
/// have any stride).
fn dense(strides: &[isize], ext: &[usize]) -> bool {
    let mut want = 1usize;
    strides.len() == ext.len()
        && strides.iter().zip(ext).rev().all(|(&s, &e)| {
            let ok = e == 1 || usize::try_from(s) == Ok(want);
            want = want.saturating_mul(e);
            ok
        })
}

/// The destination of one run, written by the tasks at disjoint ranges.
struct OutPtr(*mut f32);
// SAFETY: only used by `run_views`, whose tasks write disjoint ranges of one borrowed
// slice while the borrow lasts.
unsafe impl Sync for OutPtr {}

impl OutPtr {
    /// The address `i` elements past the start (closures capture the whole wrapper).
    fn at(&self, i: usize) -> *mut f32 {
        self.0.wrapping_add(i)
    }
}

/// Runs a lone-`GeluTanh` kernel ([`is_lone_gelu`]) over `ext` natively when the CPU has
/// AVX2+FMA and both views are dense, split into the tasks a compiled kernel's run uses
/// (parallel.rs; task boundaries on 64-byte lines). Returns false, having written nothing,
/// otherwise (the caller runs the compiled kernel).
pub(crate) fn run_views(input: &BufView, output: &mut BufViewMut, ext: &[usize]) -> bool {
    let Some(total) = ext.iter().try_fold(1usize, |a, &e| a.checked_mul(e)) else {
        return false;
    };
    if !available() || !dense(input.strides, ext) || !dense(output.strides, ext) {
        return false;
    }
    let end = |offset: usize| offset.saturating_add(total);
    let Some(x) = input.data.get(input.offset..end(input.offset)) else {
        return false;
    };
    let Some(y) = output.data.get_mut(output.offset..end(output.offset)) else {
        return false;
    };
    let out = OutPtr(y.as_mut_ptr());
    parallel::for_ranges(total, 16, &|a, b| {
        if let Some(xs) = x.get(a..b.max(a)) {
            // SAFETY: `a <= b <= total` (for_ranges); tasks get disjoint ranges of `y`,
            // which stays mutably borrowed for this whole call.
            let ys = unsafe { std::slice::from_raw_parts_mut(out.at(a), xs.len()) };
            gelu_tanh(xs, ys);
        }
    });
    true
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{magic_for, B0, B1, EXP2_P, GELU_HI, GELU_LO};
    use std::arch::x86_64::*;

    /// mathgelu's routine on `K` vectors of 8 lanes, operation by operation; each step
    /// is done for all `K` vectors before the next (independent chains interleaved, so
    /// the out-of-order window holds work of every stage of the long dependency chain).
    #[target_feature(enable = "avx2,fma")]
    fn gelu8<const K: usize>(x: [__m256; K]) -> [__m256; K] {
        let c = _mm256_set1_ps;
        let mut v = x;
        // max(lo, x) then min(hi, ·): `maxps`/`minps` with the bound first keep a NaN x.
        for e in &mut v {
            *e = _mm256_min_ps(c(GELU_HI), _mm256_max_ps(c(GELU_LO), *e));
        }
        let xc = v;
        let mut b = v;
        for (b, &xc) in b.iter_mut().zip(&xc) {
            *b = _mm256_fmadd_ps(_mm256_mul_ps(xc, xc), c(B1), c(B0));
        }
        let magic = c(magic_for(0));
        let mut t = v;
        for ((t, &xc), &b) in t.iter_mut().zip(&xc).zip(&b) {
            *t = _mm256_fmadd_ps(xc, b, magic);
        }
        let mut f = v;
        for (((f, &xc), &b), &t) in f.iter_mut().zip(&xc).zip(&b).zip(&t) {
            *f = _mm256_fmadd_ps(xc, b, _mm256_sub_ps(magic, t));
        }
        let [p0, p1, p2, p3, p4, p5] = EXP2_P;
        let mut q = v;
        for (q, &f) in q.iter_mut().zip(&f) {
            *q = _mm256_fmadd_ps(f, c(p0), c(p1));
        }
        for k in [p2, p3, p4, p5] {
            for (q, &f) in q.iter_mut().zip(&f) {
                *q = _mm256_fmadd_ps(*q, f, c(k));
            }
        }
        let one = c(1.0);
        for (((q, &f), &t), &x) in q.iter_mut().zip(&f).zip(&t).zip(&x) {
            let p = _mm256_fmadd_ps(*q, f, one);
            let s = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_castps_si256(t)));
            *q = _mm256_div_ps(x, _mm256_fmadd_ps(p, s, one));
        }
        q
    }

    /// All-ones in the first `n` lanes (`n <= 8`).
    #[target_feature(enable = "avx2,fma")]
    fn first_lanes(n: usize) -> __m256i {
        let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        _mm256_cmpgt_epi32(_mm256_set1_epi32(n as i32), lanes)
    }

    /// The first `n < 8` elements at `x` into `out`, by masked loads and stores.
    ///
    /// # Safety
    /// `x` and `out` are valid for `n` elements.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn gelu_part(x: *const f32, out: *mut f32, n: usize) {
        let m = first_lanes(n);
        // SAFETY: masked-off lanes are neither read nor written (no fault either).
        unsafe { _mm256_maskstore_ps(out, m, gelu8([_mm256_maskload_ps(x, m)])[0]) };
    }

    /// `out[i] = gelu(x[i])`: 4 vectors at a time, then single ones, then a masked
    /// partial one.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(in crate::compile) unsafe fn gelu_slice(x: &[f32], out: &mut [f32]) {
        let n = x.len().min(out.len());
        let (xp, op) = (x.as_ptr(), out.as_mut_ptr());
        let mut i = 0;
        while i + 32 <= n {
            // SAFETY: `i + 32 <= n` elements of both slices.
            unsafe {
                let v = [0, 8, 16, 24].map(|k| _mm256_loadu_ps(xp.add(i + k)));
                for (k, y) in gelu8(v).into_iter().enumerate() {
                    _mm256_storeu_ps(op.add(i + 8 * k), y);
                }
            }
            i += 32;
        }
        while i + 8 <= n {
            // SAFETY: `i + 8 <= n` elements of both slices.
            unsafe { _mm256_storeu_ps(op.add(i), gelu8([_mm256_loadu_ps(xp.add(i))])[0]) };
            i += 8;
        }
        if i < n {
            // SAFETY: the last `n - i < 8` elements of both slices.
            unsafe { gelu_part(xp.add(i), op.add(i), n - i) };
        }
    }
}
