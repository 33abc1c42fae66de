//! The native `math` module.

use super::convert::{int_arg, num_arg};
use super::{arity, native};
use crate::error::ErrorKind;
use crate::interp::value::{ModuleObj, NativeImpl, Value};
use crate::interp::{err, value_err, Interp, R};
use std::rc::Rc;

type Kw<'a> = &'a [(Rc<str>, Value)];

fn domain() -> crate::interp::Exc {
    value_err("math domain error")
}

fn range_err() -> crate::interp::Exc {
    err(ErrorKind::OverflowError, "math range error")
}

/// Builds a module from a table of natives and constants.
pub fn module(name: &str, fns: &[(&str, NativeImpl)], consts: &[(&str, Value)]) -> Rc<ModuleObj> {
    let m = ModuleObj::new(name, None);
    m.set(&"__name__".into(), Value::str(name));
    for (n, f) in fns {
        m.set(&(*n).into(), native(n, *f));
    }
    for (n, v) in consts {
        m.set(&(*n).into(), v.clone());
    }
    Rc::new(m)
}

pub fn math_module() -> Rc<ModuleObj> {
    module(
        "math",
        &[
            ("sqrt", sqrt),
            ("exp", exp),
            ("log", log),
            ("log2", log2),
            ("log10", log10),
            ("sin", sin),
            ("cos", cos),
            ("tan", tan),
            ("tanh", tanh),
            ("atan", atan),
            ("atan2", atan2),
            ("fabs", fabs),
            ("pow", pow),
            ("floor", floor),
            ("ceil", ceil),
            ("isnan", isnan),
            ("isinf", isinf),
            ("isfinite", isfinite),
            ("gcd", gcd),
            ("isclose", isclose),
        ],
        &[
            ("pi", Value::Float(std::f64::consts::PI)),
            ("e", Value::Float(std::f64::consts::E)),
            ("tau", Value::Float(std::f64::consts::TAU)),
            ("inf", Value::Float(f64::INFINITY)),
            ("nan", Value::Float(f64::NAN)),
        ],
    )
}

fn one(args: &[Value], name: &str) -> R<f64> {
    arity(name, args, 1, 1)?;
    num_arg(&args[0], name)
}

/// Checks a result: NaN from a non-NaN input is a domain error, inf from finite overflow.
fn checked(x: f64, r: f64) -> R<Value> {
    if r.is_nan() && !x.is_nan() {
        return Err(domain());
    }
    if r.is_infinite() && x.is_finite() {
        return Err(range_err());
    }
    Ok(Value::Float(r))
}

fn sqrt(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    let x = one(a, "sqrt")?;
    checked(x, x.sqrt())
}

fn exp(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    let x = one(a, "exp")?;
    checked(x, x.exp())
}

fn ln(x: f64) -> R<f64> {
    if x <= 0.0 {
        return Err(domain());
    }
    Ok(x.ln())
}

fn log(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    arity("log", a, 1, 2)?;
    let x = ln(num_arg(&a[0], "log")?)?;
    match a.get(1) {
        None => Ok(Value::Float(x)),
        Some(b) => {
            let lb = ln(num_arg(b, "log")?)?;
            if lb == 0.0 {
                return Err(err(ErrorKind::ZeroDivisionError, "float division by zero"));
            }
            Ok(Value::Float(x / lb))
        }
    }
}

fn log2(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    let x = one(a, "log2")?;
    ln(x)?;
    Ok(Value::Float(x.log2()))
}

fn log10(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    let x = one(a, "log10")?;
    ln(x)?;
    Ok(Value::Float(x.log10()))
}

fn sin(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    let x = one(a, "sin")?;
    checked(x, x.sin())
}

fn cos(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    let x = one(a, "cos")?;
    checked(x, x.cos())
}

fn tan(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    let x = one(a, "tan")?;
    checked(x, x.tan())
}

fn tanh(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    let x = one(a, "tanh")?;
    Ok(Value::Float(x.tanh()))
}

fn atan(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    Ok(Value::Float(one(a, "atan")?.atan()))
}

fn atan2(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    arity("atan2", a, 2, 2)?;
    Ok(Value::Float(
        num_arg(&a[0], "atan2")?.atan2(num_arg(&a[1], "atan2")?),
    ))
}

fn fabs(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    Ok(Value::Float(one(a, "fabs")?.abs()))
}

fn pow(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    arity("pow", a, 2, 2)?;
    let (x, y) = (num_arg(&a[0], "pow")?, num_arg(&a[1], "pow")?);
    if x == 0.0 && y < 0.0 || x < 0.0 && x.is_finite() && y.is_finite() && y.fract() != 0.0 {
        return Err(domain());
    }
    let r = x.powf(y);
    if r.is_infinite() && x.is_finite() && y.is_finite() {
        return Err(range_err());
    }
    Ok(Value::Float(r))
}

fn to_int_checked(f: f64) -> R<Value> {
    if f.is_nan() {
        return Err(value_err("cannot convert float NaN to integer"));
    }
    if f.is_infinite() {
        return Err(err(
            ErrorKind::OverflowError,
            "cannot convert float infinity to integer",
        ));
    }
    crate::pyfmt::float_to_int(f)
        .map(Value::Int)
        .ok_or_else(|| err(ErrorKind::OverflowError, "integer overflow"))
}

fn floor(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    arity("floor", a, 1, 1)?;
    if let Value::Int(i) = a[0] {
        return Ok(Value::Int(i));
    }
    to_int_checked(num_arg(&a[0], "floor")?.floor())
}

fn ceil(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    arity("ceil", a, 1, 1)?;
    if let Value::Int(i) = a[0] {
        return Ok(Value::Int(i));
    }
    to_int_checked(num_arg(&a[0], "ceil")?.ceil())
}

fn isnan(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    Ok(Value::Bool(one(a, "isnan")?.is_nan()))
}

fn isinf(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    Ok(Value::Bool(one(a, "isinf")?.is_infinite()))
}

fn isfinite(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    Ok(Value::Bool(one(a, "isfinite")?.is_finite()))
}

fn gcd(_: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    let mut g: i64 = 0;
    for v in a {
        let mut x = int_arg(v, "")?.unsigned_abs();
        let mut y = g.unsigned_abs();
        while y != 0 {
            let t = x % y;
            x = y;
            y = t;
        }
        g = i64::try_from(x).map_err(|_| err(ErrorKind::OverflowError, "integer overflow"))?;
    }
    Ok(Value::Int(g))
}

fn isclose(_: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    arity("isclose", a, 2, 2)?;
    super::no_kw("isclose", kw, &["rel_tol", "abs_tol"])?;
    let (x, y) = (num_arg(&a[0], "isclose")?, num_arg(&a[1], "isclose")?);
    let rel = match super::kwarg(kw, "rel_tol") {
        Some(v) => num_arg(v, "isclose")?,
        None => 1e-9,
    };
    let abs = match super::kwarg(kw, "abs_tol") {
        Some(v) => num_arg(v, "isclose")?,
        None => 0.0,
    };
    if rel < 0.0 || abs < 0.0 {
        return Err(value_err("tolerances must be non-negative"));
    }
    if x == y {
        return Ok(Value::Bool(true));
    }
    if x.is_infinite() || y.is_infinite() {
        return Ok(Value::Bool(false));
    }
    let d = (x - y).abs();
    Ok(Value::Bool(
        d <= (rel * y).abs() || d <= (rel * x).abs() || d <= abs,
    ))
}
