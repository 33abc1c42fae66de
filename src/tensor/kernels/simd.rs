//! Runs a kernel's loop body compiled for AVX2 + FMA where the CPU has them: the same
//! arithmetic in the same order (Rust never contracts `a * b + c` into an FMA), in wider
//! vectors; other CPUs run the body as compiled for the baseline target.

/// Whether this CPU has AVX2 and FMA (cached by the standard library after the first
/// query).
#[cfg(target_arch = "x86_64")]
pub fn has_avx2() -> bool {
    std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
}

/// Whether this CPU has AVX-512F (and AVX2 and FMA).
#[cfg(target_arch = "x86_64")]
pub fn has_avx512() -> bool {
    std::is_x86_feature_detected!("avx512f") && has_avx2()
}

/// `f()`, compiled for AVX2 + FMA on a CPU that has them: `f` inlined into the
/// feature-enabled frame, its loops vectorise for the wider registers. Pass the closure
/// as `#[inline(always)] || ...`: `f` has two callers (here and the fallback), and a
/// large closure left out of line is compiled for the baseline target only (SSE2).
#[inline(always)]
pub fn run<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU supports the features the function is compiled for.
        return unsafe { run_avx2(f) };
    }
    f()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn run_avx2<R>(f: impl FnOnce() -> R) -> R {
    f()
}
