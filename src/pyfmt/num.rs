//! Python's numeric rules for floats and 64-bit ints: `round`, `//`, `%`, `**` and
//! `int(float)`, as in CPython's `Objects/floatobject.c` and `Objects/longobject.c`.

use super::float_repr;
use crate::error::{Error, ErrorKind, Result};

/// Python's `round(x)` (`ndigits` = `None`: half to even, an integral f64 that the
/// caller converts to int, e.g. with [`int_from_float`]) and `round(x, ndigits)`
/// (correctly rounded on the exact decimal value: `round(2.675, 2) == 2.67`).
/// Err: `OverflowError` when the rounded value does not fit a float.
pub fn py_round(x: f64, ndigits: Option<i64>) -> Result<f64> {
    let Some(nd) = ndigits else {
        return Ok(x.round_ties_even());
    };
    // CPython's NDIGITS_MAX / NDIGITS_MIN: beyond them x is unchanged or zero.
    if !x.is_finite() || nd > 323 {
        return Ok(x);
    }
    if nd < -308 {
        return Ok(0.0 * x);
    }
    let rounded = if nd >= 0 {
        format!("{:.*}", nd as usize, x).parse::<f64>().unwrap_or(x)
    } else {
        round_to_tens(x, nd.unsigned_abs() as usize)
    };
    if rounded.is_infinite() {
        return Err(Error::new(
            ErrorKind::OverflowError,
            "rounded value too large to represent",
            None,
        ));
    }
    Ok(rounded)
}

/// Rounds finite `x` to a multiple of `10^k` (k >= 1), half to even on its exact value.
fn round_to_tens(x: f64, k: usize) -> f64 {
    let t = x.trunc();
    let sticky = x != t;
    let int_digits = format!("{:.0}", t.abs());
    let width = int_digits.len().max(k + 1);
    let mut digits: Vec<u8> = format!("{int_digits:0>width$}").into_bytes();
    let split = digits.len() - k;
    let tail = digits.split_off(split);
    let rest_nonzero = sticky || tail[1..].iter().any(|&d| d != b'0');
    let last_odd = digits.last().is_some_and(|d| (d - b'0') % 2 == 1);
    let round_up = match tail[0].cmp(&b'5') {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => rest_nonzero || last_odd,
    };
    if round_up {
        increment_decimal(&mut digits);
    }
    let text = format!(
        "{}{}e{k}",
        if x.is_sign_negative() { "-" } else { "" },
        String::from_utf8_lossy(&digits)
    );
    text.parse::<f64>().unwrap_or(f64::NAN)
}

/// Adds one to a decimal digit string in place (`"099"` -> `"100"`, `"99"` -> `"100"`).
fn increment_decimal(digits: &mut Vec<u8>) {
    for d in digits.iter_mut().rev() {
        if *d == b'9' {
            *d = b'0';
        } else {
            *d += 1;
            return;
        }
    }
    digits.insert(0, b'1');
}

/// Python's float `//`: `floor(a / b)` computed as CPython does (via `fmod`, snapped to
/// an integral value). The caller raises `ZeroDivisionError` for `b == 0`.
pub fn float_floordiv(a: f64, b: f64) -> f64 {
    let m = a % b;
    let mut div = (a - m) / b;
    if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
        div -= 1.0;
    }
    if div != 0.0 {
        let mut floordiv = div.floor();
        if div - floordiv > 0.5 {
            floordiv += 1.0;
        }
        floordiv
    } else {
        0.0f64.copysign(a / b)
    }
}

/// Python's float `%`: the result has the sign of `b`. The caller raises
/// `ZeroDivisionError` for `b == 0`.
pub fn float_mod(a: f64, b: f64) -> f64 {
    let m = a % b;
    if m == 0.0 {
        0.0f64.copysign(b)
    } else if (b < 0.0) != (m < 0.0) {
        m + b
    } else {
        m
    }
}

/// Python's int `//` (floor). `None` when `b == 0` or the result overflows
/// (`i64::MIN // -1`).
pub fn int_floordiv(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div(b)?;
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        Some(q - 1)
    } else {
        Some(q)
    }
}

/// Python's int `%`: the result has the sign of `b`. `None` when `b == 0`.
pub fn int_mod(a: i64, b: i64) -> Option<i64> {
    if b == 0 {
        return None;
    }
    let r = a.wrapping_rem(b);
    if r != 0 && ((r < 0) != (b < 0)) {
        Some(r + b)
    } else {
        Some(r)
    }
}

/// `base ** exp` for `exp >= 0`; `None` when the result overflows i64 or `exp < 0`
/// (Python then gives a float; the caller computes it).
pub fn int_pow(base: i64, exp: i64) -> Option<i64> {
    if exp < 0 {
        return None;
    }
    match base {
        0 => Some(i64::from(exp == 0)),
        1 => Some(1),
        -1 => Some(if exp % 2 == 0 { 1 } else { -1 }),
        _ => base.checked_pow(u32::try_from(exp).ok()?),
    }
}

/// `int(x)` for a float: truncation toward zero; `None` for nan, inf, or a value
/// outside i64.
pub fn float_to_int(x: f64) -> Option<i64> {
    let t = x.trunc();
    // 2^63 is exactly representable; i64 covers [-2^63, 2^63).
    if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&t) {
        Some(t as i64)
    } else {
        None
    }
}

/// `int(x)` for a float with Python's errors: `ValueError` for nan, `OverflowError`
/// for infinities and values beyond the 64-bit int range.
pub fn int_from_float(x: f64) -> Result<i64> {
    if x.is_nan() {
        return Err(Error::new(
            ErrorKind::ValueError,
            "cannot convert float NaN to integer",
            None,
        ));
    }
    float_to_int(x).ok_or_else(|| {
        let message = if x.is_infinite() {
            "cannot convert float infinity to integer".to_string()
        } else {
            format!("int too large: {} does not fit in 64 bits", float_repr(x))
        };
        Error::new(ErrorKind::OverflowError, message, None)
    })
}
