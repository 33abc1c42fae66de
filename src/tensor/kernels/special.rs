//! Special functions of the unary table without a libm routine: `erfinv`.

/// Giles' single-precision polynomial for erfinv ("Approximating the erfinv function",
/// GPU Computing Gems, 2011): `(central, tail)` coefficients, highest degree first, in
/// `w = -ln(1 - y^2)` (central: `w - 2.5` for w < 5; tail: `sqrt(w) - 3`).
pub const ERFINV_CENTRAL: [f64; 9] = [
    2.810_226_36e-08,
    3.432_739_39e-07,
    -3.523_387_7e-06,
    -4.391_506_54e-06,
    0.000_218_580_87,
    -0.001_253_725_03,
    -0.004_177_681_64,
    0.246_640_727,
    1.501_409_41,
];
pub const ERFINV_TAIL: [f64; 9] = [
    -0.000_200_214_257,
    0.000_100_950_558,
    0.001_349_343_22,
    -0.003_673_428_44,
    0.005_739_507_73,
    -0.007_622_461_3,
    0.009_438_870_47,
    1.001_674_06,
    2.832_976_82,
];

fn horner(c: &[f64], w: f64) -> f64 {
    c.iter().fold(0.0, |p, &k| p * w + k)
}

/// The inverse error function in f64: Giles' polynomial, then two Newton steps on
/// `erf(x) = y`; ±inf at ±1, NaN outside [-1, 1].
pub fn erfinv64(y: f64) -> f64 {
    if y.is_nan() || y.abs() > 1.0 {
        return f64::NAN;
    }
    if y.abs() == 1.0 {
        return y * f64::INFINITY;
    }
    let w = -((1.0 - y) * (1.0 + y)).ln();
    let p = if w < 5.0 {
        horner(&ERFINV_CENTRAL, w - 2.5)
    } else {
        horner(&ERFINV_TAIL, w.sqrt() - 3.0)
    };
    let mut x = p * y;
    for _ in 0..2 {
        let slope = std::f64::consts::FRAC_2_SQRT_PI * (-x * x).exp();
        if slope > 0.0 {
            x -= (libm::erf(x) - y) / slope;
        }
    }
    x
}

/// `erfinv` of a float32 (computed in f64, rounded once).
pub fn erfinv(y: f32) -> f32 {
    erfinv64(f64::from(y)) as f32
}
