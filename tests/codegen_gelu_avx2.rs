//! The native 8-lane `GeluTanh` routine (compile/jit/gelu_avx2.rs) against the Cranelift
//! f32x4 kernel (compile/jit/mathgelu.rs): bit-identical results on a dense sweep, at every
//! alignment and tail length; and the compiled W3
//! function takes the native path (where the CPU has AVX2+FMA) with the kernel's bits.

mod codegen_common;
mod common;

use codegen_common::*;
use common::{engine, with_last_graph};
use kiln::compile::jit::gelu_avx2;
use kiln::compile::runtime::fused_step::Native;
use kiln::compile::UnaryOp;
use kiln::tensor::Tensor;
use kiln::Engine;

/// `xs` through the native routine (`None` on a CPU without AVX2+FMA).
fn native(xs: &[f32]) -> Option<Vec<f32>> {
    let mut out = vec![0.0f32; xs.len()];
    gelu_avx2::gelu_tanh(xs, &mut out).then_some(out)
}

/// The first index where `got` and `want` differ in bits, with both values.
fn first_difference(xs: &[f32], got: &[f32], want: &[f32]) -> Option<(f32, f32, f32)> {
    assert_eq!(got.len(), want.len(), "lengths");
    xs.iter()
        .zip(got.iter().zip(want))
        .find(|(_, (g, w))| g.to_bits() != w.to_bits())
        .map(|(&x, (&g, &w))| (x, g, w))
}

/// Every 97th bit pattern of `[lo_bits, hi_bits]` (one sign), as floats.
fn bit_sweep(lo_bits: u32, hi_bits: u32) -> impl Iterator<Item = f32> {
    (lo_bits..=hi_bits).step_by(97).map(f32::from_bits)
}

fn special_values() -> Vec<f32> {
    let mut xs = vec![
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7f80_0001),
        f32::from_bits(0xffc0_1234),
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        1e-45,
        -1e-45,
        1e-40,
        -1e-40,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        f32::MAX,
        f32::MIN,
        1e30,
        -1e30,
        -20.0,
        -10.05,
    ];
    // GELU_LO and GELU_HI (the clamp bounds) and their neighbours.
    for b in [-10.0625f32, 6.0] {
        for d in -3i32..=3 {
            xs.push(f32::from_bits(b.to_bits().wrapping_add_signed(d)));
        }
    }
    xs
}

/// Compares the native routine with the JIT kernel on `xs`.
fn assert_same_bits(xs: &[f32], what: &str) {
    let want = jit_unary(UnaryOp::GeluTanh, xs);
    let Some(got) = native(xs) else {
        return;
    };
    if let Some((x, g, w)) = first_difference(xs, &got, &want) {
        panic!(
            "{what}: gelu({x:e} = {:#x}) native {g:e} ({:#x}) vs JIT {w:e} ({:#x})",
            x.to_bits(),
            g.to_bits(),
            w.to_bits()
        );
    }
}

#[test]
fn native_gelu_matches_the_jit_kernel_bit_for_bit() {
    if !gelu_avx2::available() {
        println!("no AVX2+FMA: the native routine is not used on this CPU");
        assert!(native(&[1.0]).is_none());
        return;
    }
    // Every 97th bit pattern from +0 to 8 and from -0 to -12, in chunks of 2M.
    let pos = bit_sweep(0, 8.0f32.to_bits());
    let neg = bit_sweep(0x8000_0000, (-12.0f32).to_bits());
    let all: Vec<f32> = pos.chain(neg).collect();
    assert!(all.len() > 20_000_000, "{} points", all.len());
    for chunk in all.chunks(1 << 21) {
        assert_same_bits(chunk, "sweep of [-12, 8]");
    }
    // The whole range (logarithmic), special values, W3's data.
    assert_same_bits(&sweep(997), "sweep of all floats");
    assert_same_bits(&special_values(), "special values");
    assert_same_bits(&linspace(-4.0, 4.0, 4 << 20), "W3 data");
}

#[test]
fn native_gelu_matches_at_every_alignment_and_tail() {
    let Some(_) = native(&[0.0]) else {
        return;
    };
    let xs: Vec<f32> = linspace(-11.0, 7.0, 1000)
        .into_iter()
        .chain(special_values())
        .collect();
    let want = jit_unary(UnaryOp::GeluTanh, &xs);
    // Sub-slices at every offset mod 8 and lengths covering an empty, partial-only,
    // single-vector and 4-vector run with every tail length.
    for start in 0..9 {
        for len in (0..80).chain([300, 1000 - start]) {
            let Some(part) = xs.get(start..start + len) else {
                continue;
            };
            // The output offset varies too: `pad` elements before it in the buffer.
            for pad in [0usize, 1, 3, 7] {
                let mut buf = vec![f32::from_bits(0x7fc0_dead); pad + len + 3];
                assert!(gelu_avx2::gelu_tanh(part, &mut buf[pad..pad + len]));
                let got = &buf[pad..pad + len];
                let w = &want[start..start + len];
                assert_eq!(
                    first_difference(part, got, w),
                    None,
                    "start {start} len {len} pad {pad}"
                );
                // Nothing outside the output slice was written.
                let mut untouched = buf[..pad].iter().chain(&buf[pad + len..]);
                assert!(untouched.all(|v| v.to_bits() == 0x7fc0_dead));
            }
        }
    }
}

#[test]
fn native_gelu_rejects_mismatched_lengths() {
    let mut out = [0.0f32; 3];
    assert!(!gelu_avx2::gelu_tanh(&[1.0, 2.0], &mut out));
    assert_eq!(out, [0.0; 3], "nothing written");
}

const W3: &str = "
def gelu(x):
    return 0.5 * x * (1 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)))

cgelu = compile(gelu)
x = linspace(-4, 4, 300007)
y = cgelu(x)
y = cgelu(x)
";

/// The fused steps of `cgelu`'s compiled graph: (lone-GELU native flag) per kernel.
fn native_flags(e: &Engine) -> Vec<bool> {
    with_last_graph(e, "cgelu", |g| {
        let fused = g.compiled.fused.iter();
        fused.map(|f| f.native == Some(Native::Gelu)).collect()
    })
}

#[test]
fn compiled_w3_takes_the_native_path_with_the_kernels_bits() {
    let mut e = engine(W3);
    // One fused GeluTanh kernel, native exactly where the CPU has AVX2+FMA.
    assert_eq!(native_flags(&e), vec![gelu_avx2::available()]);
    let f32s = |e: &mut Engine, name: &str| -> Vec<f32> {
        let t = e.eval_as::<Tensor>(name).expect("tensor");
        t.to_f32_vec().expect("f32")
    };
    let (xs, ys) = (f32s(&mut e, "x"), f32s(&mut e, "y"));
    // Native or not, the compiled result has the JIT kernel's bits.
    let want = jit_unary(UnaryOp::GeluTanh, &xs);
    assert_eq!(first_difference(&xs, &ys, &want), None);
    // And agrees with eager within the differential suite's bound where eager's
    // `1 + tanh` does not cancel (as tests/codegen_gelu.rs).
    let same = "bool(((cgelu(x) - gelu(x)).abs() <= 1e-5 * gelu(x).abs() + 1e-7)[x >= -2].all())";
    assert!(e.eval_as::<bool>(same).expect("eval"));
}
