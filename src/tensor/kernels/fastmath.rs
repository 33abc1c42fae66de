//! Branch-free f32 math that the elementwise loops can vectorize (libm's `tanhf` and
//! `erff` are scalar calls of ~15 ns per element): `tanh` to within 1.5 ulp of the exact
//! value, `exp` within 1 ulp, and `erf` (the exact GELU's) within 1 ulp of libm's.

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

/// e^y for -80 <= y <= 80 (what [`tanh`] and [`erf`] need), within 1 ulp.
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

/// FreeBSD's (and libm's) `erff` on [0, 0.84375]: `erf(x) = x + x * P(x^2)/Q(x^2)`.
const ERF_PP: [f32; 5] = [
    f32::from_bits(0x3e0375d4),
    f32::from_bits(0xbea66beb),
    f32::from_bits(0xbce9528f),
    f32::from_bits(0xbbbd1489),
    f32::from_bits(0xb7c756b1),
];
const ERF_QQ: [f32; 5] = [
    f32::from_bits(0x3ecbbbce),
    f32::from_bits(0x3d852a63),
    f32::from_bits(0x3ba68116),
    f32::from_bits(0x390aee49),
    f32::from_bits(0xb684e21a),
];
/// On [0.84375, 1.25]: `erf(x) = ERX + P(s)/Q(s)`, `s = x - 1`.
const ERF_ERX: f32 = f32::from_bits(0x3f58560b);
const ERF_PA: [f32; 7] = [
    f32::from_bits(0xbb1acdc6),
    f32::from_bits(0x3ed46805),
    f32::from_bits(0xbebe9208),
    f32::from_bits(0x3ea2fe54),
    f32::from_bits(0xbde31cc2),
    f32::from_bits(0x3d1151b3),
    f32::from_bits(0xbb0df9c0),
];
const ERF_QA: [f32; 6] = [
    f32::from_bits(0x3dd9f331),
    f32::from_bits(0x3f0a5785),
    f32::from_bits(0x3d931ae7),
    f32::from_bits(0x3e013307),
    f32::from_bits(0x3c5f6e13),
    f32::from_bits(0x3c445aa3),
];
/// erfc on [1.25, 1/0.35]: `erfc(x) = exp(-x^2 - 0.5625 + R(s)/S(s)) / x`, `s = 1/x^2`.
const ERF_RA: [f32; 8] = [
    f32::from_bits(0xbc21a093),
    f32::from_bits(0xbf31a0b7),
    f32::from_bits(0xc128f022),
    f32::from_bits(0xc2798057),
    f32::from_bits(0xc322658c),
    f32::from_bits(0xc3389ae7),
    f32::from_bits(0xc2a2932b),
    f32::from_bits(0xc11d077e),
];
const ERF_SA: [f32; 8] = [
    f32::from_bits(0x419d35ce),
    f32::from_bits(0x4309a863),
    f32::from_bits(0x43d9486f),
    f32::from_bits(0x442158c9),
    f32::from_bits(0x43d6810b),
    f32::from_bits(0x42d9451f),
    f32::from_bits(0x40d23f7c),
    f32::from_bits(0xbd777f97),
];
/// The same on [1/0.35, 6] (the last terms of R and S are zero).
const ERF_RB: [f32; 8] = [
    f32::from_bits(0xbc21a092),
    f32::from_bits(0xbf4c9dd4),
    f32::from_bits(0xc18e104b),
    f32::from_bits(0xc320a2ea),
    f32::from_bits(0xc41f6441),
    f32::from_bits(0xc480230b),
    f32::from_bits(0xc3f1c275),
    0.0,
];
const ERF_SB: [f32; 8] = [
    f32::from_bits(0x41f2b459),
    f32::from_bits(0x43a2e571),
    f32::from_bits(0x44c01759),
    f32::from_bits(0x4547fdbb),
    f32::from_bits(0x451f90ce),
    f32::from_bits(0x43ed43a7),
    f32::from_bits(0xc1b38712),
    0.0,
];

/// `c[0] + s * (c[1] + s * (...))`.
#[inline(always)]
fn horner<const N: usize>(s: f32, c: &[f32; N]) -> f32 {
    let mut p = c[N - 1];
    for &k in c[..N - 1].iter().rev() {
        p = p * s + k;
    }
    p
}

/// The error function, branch-free: libm's `erff` (FreeBSD's) with its three ranges
/// computed for every element and the right one picked, so the loops vectorize; within
/// 1 ulp of libm's (the tail's exponentials are [`exp`]'s). `erf(±inf) = ±1`, NaN stays NaN.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    let a = x.abs().min(6.0);
    // [0, 0.84375]
    let z = a * a;
    let small = a + a * (horner(z, &ERF_PP) / (1.0 + z * horner(z, &ERF_QQ)));
    // [0.84375, 1.25]
    let s = a - 1.0;
    // (libm's order: 1 - erfc, erfc = (1 - ERX) - P/Q)
    let mid = 1.0 - ((1.0 - ERF_ERX) - horner(s, &ERF_PA) / (1.0 + s * horner(s, &ERF_QA)));
    // [1.25, 6]: one set of coefficients or the other per element
    let s = 1.0 / z;
    let near = a < 1.0 / 0.35;
    let (mut r, mut q) = (0.0f32, 0.0f32);
    for i in (0..8).rev() {
        r = r * s + if near { ERF_RA[i] } else { ERF_RB[i] };
        q = q * s + if near { ERF_SA[i] } else { ERF_SB[i] };
    }
    let q = 1.0 + s * q;
    // z keeps the top 12 bits of a, so z*z is exact (libm's split of x^2)
    let zt = f32::from_bits(a.to_bits() & 0xffff_e000);
    let e = exp_small_range(-zt * zt - 0.5625) * exp_small_range((zt - a) * (zt + a) + r / q);
    let tail = 1.0 - e / a;
    let y = if a < 0.843_75 {
        small
    } else if a < 1.25 {
        mid
    } else {
        tail
    };
    if x.is_nan() {
        x
    } else {
        y.copysign(x)
    }
}

#[cfg(test)]
mod tests {
    use super::{erf, exp, tanh};

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

    /// Distance in f32 ulps between two floats of the same sign.
    fn ulp_gap(a: f32, b: f32) -> u32 {
        a.to_bits().abs_diff(b.to_bits())
    }

    #[test]
    fn erf_is_libm_erff_within_1_ulp() {
        for (lo, hi, n) in [
            (-7.0f32, 7.0f32, 2_000_000),
            (-1.3, 1.3, 1_000_000),
            (-1e-6, 1e-6, 1000),
        ] {
            for i in 0..=n {
                let x = lo + (hi - lo) * (i as f32 / n as f32);
                let (got, want) = (erf(x), libm::erff(x));
                assert!(ulp_gap(got, want) <= 1, "erf({x}): {got} vs libm {want}");
            }
        }
    }

    #[test]
    fn erf_special_values() {
        assert_eq!(erf(f32::INFINITY), 1.0);
        assert_eq!(erf(f32::NEG_INFINITY), -1.0);
        assert_eq!(erf(100.0), 1.0);
        assert!(erf(-0.0).is_sign_negative());
        assert!(erf(f32::NAN).is_nan());
    }

    #[test]
    fn exp_is_within_1_ulp_of_f64_and_saturates() {
        let n = 2_000_000;
        for i in 0..=n {
            let y = -87.0 + 175.0 * (i as f32 / n as f32);
            let truth = f64::from(y).exp() as f32;
            assert!(
                ulp_gap(exp(y), truth) <= 1,
                "exp({y}): {} vs {truth}",
                exp(y)
            );
        }
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(-200.0), 0.0);
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp(89.0), f32::INFINITY);
        assert_eq!(exp(f32::INFINITY), f32::INFINITY);
        assert!(exp(f32::NAN).is_nan());
        // subnormal results are still close (one more rounding)
        let sub = exp(-90.0);
        assert!((f64::from(sub) / (-90.0f64).exp() - 1.0).abs() < 1e-3);
    }
}
