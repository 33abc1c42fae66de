//! The rest of CPython's `math` module (added to the module `mathmod` builds): inverse
//! and hyperbolic functions, `erf gamma lgamma`, `frexp ldexp modf fmod`, integer
//! functions (`factorial comb perm isqrt lcm`), `prod fsum hypot dist`, `nextafter ulp`,
//! with CPython's domain and overflow errors.

use super::arity;
use super::convert::{int_arg, num_arg};
use super::native;
use crate::error::ErrorKind;
use crate::interp::value::{ModuleObj, Value};
use crate::interp::{err, value_err, Interp, R};
use crate::syntax::ast::BinOp;
use std::rc::Rc;

type Kw<'a> = &'a [(Rc<str>, Value)];

/// Adds these functions to the `math` module.
pub fn extend(m: &ModuleObj) {
    let fns: &[(&str, super::NativeImpl)] = &[
        ("asin", asin),
        ("acos", acos),
        ("sinh", sinh),
        ("cosh", cosh),
        ("asinh", asinh),
        ("acosh", acosh),
        ("atanh", atanh),
        ("degrees", degrees),
        ("radians", radians),
        ("trunc", trunc),
        ("copysign", copysign),
        ("fmod", fmod),
        ("remainder", remainder),
        ("frexp", frexp),
        ("ldexp", ldexp),
        ("modf", modf),
        ("log1p", log1p),
        ("expm1", expm1),
        ("exp2", exp2),
        ("cbrt", cbrt),
        ("erf", erf),
        ("erfc", erfc),
        ("gamma", gamma),
        ("lgamma", lgamma),
        ("factorial", factorial),
        ("comb", comb),
        ("perm", perm),
        ("isqrt", isqrt),
        ("lcm", lcm),
        ("prod", prod),
        ("fsum", fsum),
        ("hypot", hypot),
        ("dist", dist),
        ("nextafter", nextafter),
        ("ulp", ulp),
    ];
    for (n, f) in fns {
        m.set(&(*n).into(), native(n, *f));
    }
}

fn domain() -> crate::interp::Exc {
    value_err("math domain error")
}

fn range_err() -> crate::interp::Exc {
    err(ErrorKind::OverflowError, "math range error")
}

fn one(a: &[Value], name: &str) -> R<f64> {
    arity(name, a, 1, 1)?;
    num_arg(&a[0], name)
}

fn two(a: &[Value], name: &str) -> R<(f64, f64)> {
    arity(name, a, 2, 2)?;
    Ok((num_arg(&a[0], name)?, num_arg(&a[1], name)?))
}

/// A float result: NaN from a non-NaN input is a domain error, inf from a finite input
/// an overflow (CPython's `math_1`).
fn done(x: f64, r: f64) -> R<Value> {
    if r.is_nan() && !x.is_nan() {
        return Err(domain());
    }
    if r.is_infinite() && x.is_finite() {
        return Err(range_err());
    }
    Ok(Value::Float(r))
}

macro_rules! unary {
    ($name:ident, $f:expr) => {
        fn $name(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
            let x = one(a, stringify!($name))?;
            let f: fn(f64) -> f64 = $f;
            done(x, f(x))
        }
    };
}

unary!(asin, f64::asin);
unary!(acos, f64::acos);
unary!(sinh, f64::sinh);
unary!(cosh, f64::cosh);
unary!(asinh, f64::asinh);
unary!(exp2, f64::exp2);
unary!(cbrt, f64::cbrt);
unary!(expm1, f64::exp_m1);
unary!(erf, libm::erf);
unary!(erfc, libm::erfc);
unary!(degrees, f64::to_degrees);
unary!(radians, f64::to_radians);

fn acosh(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    let x = one(a, "acosh")?;
    if x < 1.0 {
        return Err(domain());
    }
    done(x, x.acosh())
}

fn atanh(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    let x = one(a, "atanh")?;
    if x.abs() >= 1.0 {
        return Err(domain());
    }
    done(x, x.atanh())
}

fn log1p(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    let x = one(a, "log1p")?;
    if x <= -1.0 {
        return Err(domain());
    }
    done(x, x.ln_1p())
}

fn gamma(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    let x = one(a, "gamma")?;
    if x == f64::NEG_INFINITY || (x <= 0.0 && x == x.floor()) {
        return Err(domain());
    }
    done(x, libm::tgamma(x))
}

fn lgamma(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    let x = one(a, "lgamma")?;
    if x <= 0.0 && x == x.floor() && x.is_finite() {
        return Err(domain());
    }
    done(x, libm::lgamma(x))
}

fn trunc(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    arity("trunc", a, 1, 1)?;
    if let Value::Int(i) = a[0] {
        return Ok(Value::Int(i));
    }
    let x = num_arg(&a[0], "trunc")?.trunc();
    if x.is_nan() {
        return Err(value_err("cannot convert float NaN to integer"));
    }
    crate::pyfmt::float_to_int(x)
        .map(Value::Int)
        .ok_or_else(|| {
            err(
                ErrorKind::OverflowError,
                "cannot convert float infinity to integer",
            )
        })
}

fn copysign(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    let (x, y) = two(a, "copysign")?;
    Ok(Value::Float(x.copysign(y)))
}

fn fmod(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    let (x, y) = two(a, "fmod")?;
    if x.is_infinite() && !y.is_nan() || y == 0.0 {
        return Err(domain());
    }
    Ok(Value::Float(x % y))
}

fn remainder(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    let (x, y) = two(a, "remainder")?;
    if x.is_infinite() && !y.is_nan() || y == 0.0 && !x.is_nan() {
        return Err(domain());
    }
    Ok(Value::Float(libm::remainder(x, y)))
}

fn frexp(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    let x = one(a, "frexp")?;
    let (m, e) = if x == 0.0 || !x.is_finite() {
        (x, 0)
    } else {
        libm::frexp(x)
    };
    Ok(Value::tuple(vec![Value::Float(m), Value::Int(e as i64)]))
}

fn ldexp(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    arity("ldexp", a, 2, 2)?;
    let x = num_arg(&a[0], "ldexp")?;
    let i = int_arg(&a[1], "")?.clamp(-100_000, 100_000) as i32;
    done(x, libm::ldexp(x, i))
}

fn modf(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    let x = one(a, "modf")?;
    let (f, i) = if x.is_infinite() {
        (0.0f64.copysign(x), x)
    } else {
        libm::modf(x)
    };
    Ok(Value::tuple(vec![Value::Float(f), Value::Float(i)]))
}

fn nonneg(a: &Value, what: &str) -> R<i64> {
    let n = int_arg(a, "")?;
    if n < 0 {
        return Err(value_err(format!("{what} must be a non-negative integer")));
    }
    Ok(n)
}

fn overflow() -> crate::interp::Exc {
    err(
        ErrorKind::OverflowError,
        "integer result does not fit in Kiln's 64-bit int",
    )
}

fn factorial(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    arity("factorial", a, 1, 1)?;
    if let Value::Float(_) = a[0] {
        return Err(crate::interp::type_err(
            "'float' object cannot be interpreted as an integer",
        ));
    }
    let n = int_arg(&a[0], "")?;
    if n < 0 {
        return Err(value_err("factorial() not defined for negative values"));
    }
    let mut r: i64 = 1;
    for k in 2..=n {
        r = r.checked_mul(k).ok_or_else(overflow)?;
    }
    Ok(Value::Int(r))
}

/// n! / (n-k)! (and divided by k! for `comb`), exactly, or OverflowError.
fn falling(n: i64, k: i64, choose: bool) -> R<i64> {
    let mut r: i128 = 1;
    for i in 0..k {
        r = r.checked_mul((n - i) as i128).ok_or_else(overflow)?;
        if choose {
            r /= (i + 1) as i128;
        }
        if r > i64::MAX as i128 {
            return Err(overflow());
        }
    }
    Ok(r as i64)
}

fn comb(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    arity("comb", a, 2, 2)?;
    let n = nonneg(&a[0], "n")?;
    let k = nonneg(&a[1], "k")?;
    if k > n {
        return Ok(Value::Int(0));
    }
    Ok(Value::Int(falling(n, k.min(n - k), true)?))
}

fn perm(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    arity("perm", a, 1, 2)?;
    let n = nonneg(&a[0], "n")?;
    let k = match a.get(1) {
        None | Some(Value::None) => n,
        Some(v) => nonneg(v, "k")?,
    };
    if k > n {
        return Ok(Value::Int(0));
    }
    Ok(Value::Int(falling(n, k, false)?))
}

fn isqrt(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    arity("isqrt", a, 1, 1)?;
    let n = int_arg(&a[0], "")?;
    if n < 0 {
        return Err(value_err("isqrt() argument must be nonnegative"));
    }
    let mut r = (n as f64).sqrt() as i64;
    while (r as i128) * (r as i128) > n as i128 {
        r -= 1;
    }
    while ((r + 1) as i128) * ((r + 1) as i128) <= n as i128 {
        r += 1;
    }
    Ok(Value::Int(r))
}

fn gcd2(a: i64, b: i64) -> i64 {
    let (mut x, mut y) = (a.unsigned_abs(), b.unsigned_abs());
    while y != 0 {
        (x, y) = (y, x % y);
    }
    x as i64
}

fn lcm(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    let mut r: i64 = 1;
    for v in a {
        let x = int_arg(v, "")?;
        if x == 0 || r == 0 {
            r = 0;
            continue;
        }
        let g = gcd2(r, x);
        r = (r / g).checked_mul(x.abs()).ok_or_else(overflow)?.abs();
    }
    Ok(Value::Int(r))
}

fn prod(me: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    arity("prod", a, 1, 1)?;
    let mut acc = super::kwarg(kw, "start").cloned().unwrap_or(Value::Int(1));
    for x in me.collect(&a[0])? {
        acc = me.binop(BinOp::Mul, &acc, &x)?;
    }
    Ok(acc)
}

/// Shewchuk's exactly rounded sum (CPython's `math.fsum`).
fn fsum(me: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    arity("fsum", a, 1, 1)?;
    let mut partials: Vec<f64> = Vec::new();
    let mut special = 0.0f64;
    for v in me.collect(&a[0])? {
        let mut x = num_arg(&v, "fsum")?;
        if !x.is_finite() {
            special += x;
            continue;
        }
        let mut i = 0;
        for mut y in partials.clone() {
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            let hi = x + y;
            let lo = y - (hi - x);
            if lo != 0.0 {
                partials[i] = lo;
                i += 1;
            }
            x = hi;
        }
        partials.truncate(i);
        if !x.is_finite() {
            return Err(err(
                ErrorKind::OverflowError,
                "intermediate overflow in fsum",
            ));
        }
        partials.push(x);
    }
    if special != 0.0 || special.is_nan() {
        if special.is_nan() {
            return Err(value_err("-inf + inf in fsum"));
        }
        return Ok(Value::Float(special));
    }
    let mut hi = 0.0;
    if let Some(&last) = partials.last() {
        let mut n = partials.len() - 1;
        hi = last;
        let mut lo = 0.0;
        while n > 0 {
            let x = hi;
            n -= 1;
            let y = partials[n];
            hi = x + y;
            let yr = hi - x;
            lo = y - yr;
            if lo != 0.0 {
                break;
            }
        }
        if n > 0 && ((lo < 0.0 && partials[n - 1] < 0.0) || (lo > 0.0 && partials[n - 1] > 0.0)) {
            let y = lo * 2.0;
            let x = hi + y;
            let yr = x - hi;
            if y == yr {
                hi = x;
            }
        }
    }
    Ok(Value::Float(hi))
}

fn norm(xs: &[f64]) -> f64 {
    let m = xs.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    if m == 0.0 || !m.is_finite() {
        return if xs.iter().any(|x| x.is_infinite()) {
            f64::INFINITY
        } else {
            m
        };
    }
    m * xs.iter().map(|x| (x / m) * (x / m)).sum::<f64>().sqrt()
}

fn hypot(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    let mut xs = Vec::with_capacity(a.len());
    for v in a {
        xs.push(num_arg(v, "hypot")?);
    }
    Ok(Value::Float(norm(&xs)))
}

fn dist(me: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    arity("dist", a, 2, 2)?;
    let p = me.collect(&a[0])?;
    let q = me.collect(&a[1])?;
    if p.len() != q.len() {
        return Err(value_err(
            "both points must have the same number of dimensions",
        ));
    }
    let mut d = Vec::with_capacity(p.len());
    for (x, y) in p.iter().zip(&q) {
        d.push(num_arg(x, "dist")? - num_arg(y, "dist")?);
    }
    Ok(Value::Float(norm(&d)))
}

fn nextafter(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    let (x, y) = two(a, "nextafter")?;
    Ok(Value::Float(libm::nextafter(x, y)))
}

fn ulp(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    let x = one(a, "ulp")?.abs();
    if !x.is_finite() {
        return Ok(Value::Float(x));
    }
    let up = libm::nextafter(x, f64::INFINITY);
    if up.is_infinite() {
        return Ok(Value::Float(x - libm::nextafter(x, 0.0)));
    }
    Ok(Value::Float(up - x))
}
