//! Branch-free f32 math that the elementwise loops can vectorize (libm's `tanhf` and
//! `erff` are scalar calls of ~15 ns per element): `tanh` to within 1.5 ulp of the exact
//! value, `exp` within 1 ulp, and PyTorch's float32 vectorized `erf` (the exact GELU's).

/// `1.5 * 2^23`: adding it rounds an f32 below 2^22 to an integer (ties to even), and
/// the integer sits in the low mantissa bits.
const ROUND_MAGIC: f32 = 12_582_912.0;
const LOG2E: f32 = std::f32::consts::LOG2_E;
/// ln 2 split so `n * LN2_HI` is exact for the n used here (Cody-Waite).
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
/// Cephes' `expf` polynomial for e^r on |r| <= ln2/2.
const EXP_P: [f32; 6] = [
    1.987_569_1e-4,
    1.398_199_9e-3,
    8.333_452e-3,
    4.166_579_6e-2,
    0.166_666_65,
    0.5,
];
/// The Taylor coefficients of tanh: x + x^3 * (T[1] + T[2] x^2 + ... ); enough terms
/// for f32 below |x| = 0.55 (the first one dropped is < 6e-9 relative there).
const TANH_T: [f32; 10] = [
    1.0,
    -1.0 / 3.0,
    2.0 / 15.0,
    -17.0 / 315.0,
    62.0 / 2835.0,
    -1382.0 / 155_925.0,
    21844.0 / 6_081_075.0,
    -929_569.0 / 638_512_875.0,
    6_404_582.0 / 10_854_718_875.0,
    -443_861_162.0 / 1_856_156_927_625.0,
];
/// Below this |x| the series is used; above it `1 - 2 / (e^2x + 1)` has no cancellation.
const TANH_SMALL: f32 = 0.55;
/// tanh(x) rounds to 1.0 in f32 from about 9.01 on; the clamp keeps e^2x finite.
const TANH_CLAMP: f32 = 10.0;

/// e^y as (m, n) with e^y = m * 2^n, m within 1 ulp of its exact value (Cody-Waite
/// reduction, Cephes' polynomial); any |y| below 150 * ln 2.
#[inline(always)]
fn exp_reduced(y: f32) -> (f32, i32) {
    let t = y * LOG2E + ROUND_MAGIC;
    let n = t - ROUND_MAGIC;
    let ni = (t.to_bits() as i32).wrapping_sub(ROUND_MAGIC.to_bits() as i32);
    let r = (y - n * LN2_HI) - n * LN2_LO;
    let mut p = EXP_P[0];
    for &c in &EXP_P[1..] {
        p = p * r + c;
    }
    (p * (r * r) + r + 1.0, ni)
}

/// 2^n for -126 <= n <= 127.
#[inline(always)]
fn pow2(n: i32) -> f32 {
    f32::from_bits((n.wrapping_add(127) as u32) << 23)
}

/// e^y for 0 <= y <= 20 (what [`tanh`] needs), within 1 ulp.
#[inline(always)]
fn exp_small_range(y: f32) -> f32 {
    let (m, n) = exp_reduced(y);
    m * pow2(n)
}

/// e^y clamped below: under it the result is 0 in f32 (under the smallest subnormal).
const EXP_LO: f32 = -104.0;
/// e^y clamped above: over it the result is +inf in f32.
const EXP_HI: f32 = 89.0;

/// e^y, branch-free: within 1 ulp where the result is a normal float; subnormal results
/// round once more, 0 and +inf where f32 has no room; NaN stays NaN.
#[inline(always)]
pub fn exp(y: f32) -> f32 {
    let (m, n) = exp_reduced(y.clamp(EXP_LO, EXP_HI));
    // two factors keep each power of two normal (|n| <= 150 after the clamp)
    let half = n >> 1;
    let r = m * pow2(half) * pow2(n - half);
    if y.is_nan() {
        y
    } else {
        r
    }
}

/// Abramowitz & Stegun 7.1.26: `erf(a) = 1 - t (p1 + t (p2 + ... t p5)) e^(-a^2)`,
/// `t = 1 / (1 + P a)`; |error| < 1.5e-7.
const ERF_P: f32 = 0.327_591_1;
const ERF_A: [f32; 5] = [
    0.254_829_6,
    -0.284_496_74,
    1.421_413_8,
    -1.453_152,
    1.061_405_4,
];

/// The error function as PyTorch's float32 vectorized kernels compute it (ATen's
/// `Vectorized<float>::erf`, which its GELU forward and backward use): Abramowitz &
/// Stegun 7.1.26 (absolute error under 1.5e-7; up to about 6e-7 evaluated in f32, where
/// the polynomial cancels near |x| = 0.2, as ATen's), branch-free. `erf(±inf) = ±1`, NaN stays
/// NaN, the sign of zero is kept.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (ERF_P * a + 1.0);
    let mut r = ERF_A[4];
    for &c in ERF_A[..4].iter().rev() {
        r = r * t + c;
    }
    let y = 1.0 - r * t * exp(-(x * x));
    if x.is_nan() {
        x
    } else {
        y.copysign(x)
    }
}

/// The hyperbolic tangent, branch-free (max error 1.5 ulp; NaN stays NaN).
#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    let a = x.abs();
    let x2 = x * x;
    let mut p = TANH_T[9];
    for &c in TANH_T[1..9].iter().rev() {
        p = p * x2 + c;
    }
    // (copysign keeps tanh(-0.0) == -0.0; elsewhere the sum already has x's sign)
    let small = (x + x * x2 * p).copysign(x);
    let e = exp_small_range(2.0 * a.min(TANH_CLAMP));
    let big = (1.0 - 2.0 / (e + 1.0)).copysign(x);
    let r = if a < TANH_SMALL { small } else { big };
    if x.is_nan() {
        x
    } else {
        r
    }
}

#[cfg(test)]
mod tests {
    use super::tanh;

    /// Distance in f32 ulps (at the reference's magnitude) from the f64 truth.
    fn ulps(x: f32) -> f64 {
        let truth = f64::from(x).tanh();
        let t32 = truth as f32;
        let ulp = f64::from(f32::from_bits(t32.abs().to_bits() + 1) - t32.abs());
        (f64::from(tanh(x)) - truth).abs() / ulp
    }

    #[test]
    fn tanh_is_within_2_ulp_of_f64_everywhere() {
        // dense sweeps over the series/exp switch, the whole curve and tiny inputs
        let sweeps = [
            (-12.0f32, 12.0f32, 2_000_000),
            (-0.7, 0.7, 1_000_000),
            (-1e-3, 1e-3, 10_000),
        ];
        for (lo, hi, n) in sweeps {
            for i in 0..=n {
                let x = lo + (hi - lo) * (i as f32 / n as f32);
                assert!(ulps(x) <= 2.0, "tanh({x}) off by {} ulp", ulps(x));
            }
        }
    }

    #[test]
    fn tanh_special_values() {
        assert_eq!(tanh(0.0), 0.0);
        assert!(tanh(-0.0).is_sign_negative());
        assert_eq!(tanh(f32::INFINITY), 1.0);
        assert_eq!(tanh(f32::NEG_INFINITY), -1.0);
        assert_eq!(tanh(20.0), 1.0);
        assert_eq!(tanh(-100.0), -1.0);
        assert!(tanh(f32::NAN).is_nan());
        assert_eq!(tanh(1e-30), 1e-30);
        assert_eq!(tanh(f32::MIN_POSITIVE), f32::MIN_POSITIVE);
    }
}
