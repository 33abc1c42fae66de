//! Scalar twins of the `log256_ps` and `sincos256_ps` of PyTorch's avx_mathfun.h
//! (Cephes polynomials, after Julien Pommier's sse_mathfun), which torch's x86 build uses
//! for `randn`'s float32 Box-Muller. Each step rounds to float32 as the vector code does,
//! with the multiply-adds its compiler fuses fused here too, so the results match bit for
//! bit (checked against torch in tests/golden/tensor/random_torch.dl).

/// A C `float` constant written as a double literal (rounded to double, then to float).
macro_rules! c {
    ($v:expr) => {
        ($v as f64) as f32
    };
}

const SQRTHF: f32 = c!(std::f64::consts::FRAC_1_SQRT_2);
const LOG_P: [f32; 9] = [
    c!(7.037_683_629_2E-2),
    c!(-1.151_461_031_0E-1),
    c!(1.167_699_874_0E-1),
    c!(-1.242_014_084_6E-1),
    c!(1.424_932_278_7E-1),
    c!(-1.666_805_766_5E-1),
    c!(2.000_071_476_5E-1),
    c!(-2.499_999_399_3E-1),
    c!(3.333_333_117_4E-1),
];
const LOG_Q1: f32 = c!(-2.121_944_40e-4);
const LOG_Q2: f32 = c!(0.693_359_375);

const FOPI: f32 = c!(1.273_239_544_735_16);
const DP: [f32; 3] = [
    c!(-0.785_156_25),
    c!(-2.418_756_484_985_351_6e-4),
    c!(-3.774_894_977_445_941e-8),
];
const SIN_P: [f32; 3] = [
    c!(-1.951_529_589_1E-4),
    c!(8.332_160_873_6E-3),
    c!(-1.666_665_461_1E-1),
];
const COS_P: [f32; 3] = [
    c!(2.443_315_711_809_948E-5),
    c!(-1.388_731_625_493_765E-3),
    c!(4.166_664_568_298_827E-2),
];

/// `log256_ps` for one lane: NaN for x <= 0, denormals cut to the smallest normal.
pub fn log_ps(x: f32) -> f32 {
    if x.is_nan() || x <= 0.0 {
        return f32::NAN;
    }
    let bits = x.max(f32::MIN_POSITIVE).to_bits();
    let mut e = ((bits >> 23) as i32 - 0x7f) as f32 + 1.0;
    let m = f32::from_bits((bits & !0x7f80_0000) | 0x3f00_0000);
    let small = m < SQRTHF;
    if small {
        e -= 1.0;
    }
    let x = (m - 1.0) + if small { m } else { 0.0 };
    let z = x * x;
    let mut y = LOG_P[0];
    for &p in &LOG_P[1..] {
        y = y.mul_add(x, p);
    }
    y *= x;
    y = y.mul_add(z, e * LOG_Q1);
    y = (-z).mul_add(0.5, y);
    e.mul_add(LOG_Q2, x + y)
}

/// `sincos256_ps` for one lane: (sin x, cos x), accurate for |x| below 8192.
pub fn sincos_ps(x: f32) -> (f32, f32) {
    let ax = x.abs();
    let j = ((ax * FOPI) as i32 + 1) & !1;
    let y = j as f32;
    let sin_neg = x.is_sign_negative() ^ (j & 4 != 0);
    let cos_neg = (!(j - 2)) & 4 != 0;
    let x = y.mul_add(DP[2], y.mul_add(DP[1], y.mul_add(DP[0], ax)));
    let z = x * x;
    let yc = COS_P[0].mul_add(z, COS_P[1]).mul_add(z, COS_P[2]) * z;
    let yc = yc.mul_add(z, -(z * 0.5)) + 1.0;
    let ys = SIN_P[0].mul_add(z, SIN_P[1]).mul_add(z, SIN_P[2]) * z;
    let ys = ys.mul_add(x, x);
    let (s, c) = if j & 2 == 0 { (ys, yc) } else { (yc, ys) };
    (if sin_neg { -s } else { s }, if cos_neg { -c } else { c })
}
