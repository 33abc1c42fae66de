//! The rest of CPython's `random` functions on the same Mersenne Twister stream, with
//! CPython 3.11's algorithms so seeded runs draw the same values: `choices sample
//! normalvariate lognormvariate expovariate triangular getrandbits`.

use super::convert::{int_arg, num_arg};
use super::pyrandom::PyRandom;
use super::{arity, kwarg, native};
use crate::interp::repr::fmt_err;
use crate::interp::value::{ModuleObj, Value};
use crate::interp::{type_err, value_err, Interp, R};
use std::rc::Rc;

type Kw<'a> = &'a [(Rc<str>, Value)];

/// Adds these functions to the `random` module.
pub fn extend(m: &ModuleObj) {
    let fns: &[(&str, super::NativeImpl)] = &[
        ("choices", choices),
        ("sample", sample),
        ("normalvariate", normalvariate),
        ("lognormvariate", lognormvariate),
        ("expovariate", expovariate),
        ("triangular", triangular),
        ("getrandbits", getrandbits),
    ];
    for (n, f) in fns {
        m.set(&(*n).into(), native(n, *f));
    }
}

fn rng(me: &mut Interp) -> &mut PyRandom {
    me.rng.get_or_insert_with(PyRandom::from_entropy)
}

fn opt_num(a: &[Value], i: usize, kw: Kw, name: &str, dflt: f64) -> R<f64> {
    match a.get(i).or_else(|| kwarg(kw, name)) {
        Some(v) => num_arg(v, name),
        None => Ok(dflt),
    }
}

/// `random.choices(population, weights=None, *, cum_weights=None, k=1)`.
fn choices(me: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    arity("choices", a, 1, 2)?;
    let pop = me.collect(&a[0])?;
    let n = pop.len();
    let k = match kwarg(kw, "k") {
        Some(v) => int_arg(v, "")?.max(0),
        None => 1,
    };
    crate::interp::containers::check_len(k as usize, "list")?;
    let weights = a
        .get(1)
        .or_else(|| kwarg(kw, "weights"))
        .filter(|v| !matches!(v, Value::None));
    let cum = kwarg(kw, "cum_weights").filter(|v| !matches!(v, Value::None));
    let cum: Vec<f64> = match (weights, cum) {
        (None, None) => {
            let mut out = Vec::with_capacity(k as usize);
            for _ in 0..k {
                let i = (rng(me).random() * n as f64).floor() as usize;
                out.push(pop.get(i).cloned().ok_or_else(|| {
                    crate::interp::err(
                        crate::error::ErrorKind::IndexError,
                        "list index out of range",
                    )
                })?);
            }
            return Ok(Value::list(out));
        }
        (Some(_), Some(_)) => {
            return Err(type_err(
                "Cannot specify both weights and cumulative weights",
            ))
        }
        (Some(w), None) => {
            let mut acc = 0.0;
            let mut out = Vec::new();
            for x in me.collect(w)? {
                acc += num_arg(&x, "choices")?;
                out.push(acc);
            }
            out
        }
        (None, Some(c)) => {
            let mut out = Vec::new();
            for x in me.collect(c)? {
                out.push(num_arg(&x, "choices")?);
            }
            out
        }
    };
    if cum.len() != n {
        return Err(value_err(
            "The number of weights does not match the population",
        ));
    }
    let total = cum.last().copied().unwrap_or(0.0);
    if total <= 0.0 {
        return Err(value_err("Total of weights must be greater than zero"));
    }
    if !total.is_finite() {
        return Err(value_err("Total of weights must be finite"));
    }
    let hi = n - 1;
    let mut out = Vec::with_capacity(k as usize);
    for _ in 0..k {
        let x = rng(me).random() * total;
        // bisect_right(cum, x, 0, hi)
        let (mut lo, mut h) = (0usize, hi);
        while lo < h {
            let mid = (lo + h) / 2;
            if x < cum[mid] {
                h = mid;
            } else {
                lo = mid + 1;
            }
        }
        out.push(pop[lo].clone());
    }
    Ok(Value::list(out))
}

/// `random.sample(population, k)`: CPython's pool / selected-set algorithm.
fn sample(me: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    arity("sample", a, 1, 2)?;
    let pop = me.collect(&a[0])?;
    let n = pop.len() as i64;
    let k = match a.get(1).or_else(|| kwarg(kw, "k")) {
        Some(v) => int_arg(v, "")?,
        None => {
            return Err(type_err(
                "sample() missing 1 required positional argument: 'k'",
            ))
        }
    };
    if !(0..=n).contains(&k) {
        return Err(value_err("Sample larger than population or is negative"));
    }
    let mut setsize = 21i64;
    if k > 5 {
        let e = ((k * 3) as f64).ln() / 4f64.ln();
        setsize += 4i64.saturating_pow(e.ceil() as u32);
    }
    let mut out = Vec::with_capacity(k as usize);
    if n <= setsize {
        let mut pool = pop.clone();
        for i in 0..k {
            let j = rng(me).randrange_below(n - i).map_err(fmt_err)? as usize;
            out.push(pool[j].clone());
            pool[j] = pool[(n - i - 1) as usize].clone();
        }
    } else {
        let mut selected = std::collections::HashSet::new();
        for _ in 0..k {
            let mut j = rng(me).randrange_below(n).map_err(fmt_err)?;
            while selected.contains(&j) {
                j = rng(me).randrange_below(n).map_err(fmt_err)?;
            }
            selected.insert(j);
            out.push(pop[j as usize].clone());
        }
    }
    Ok(Value::list(out))
}

fn normal(me: &mut Interp, mu: f64, sigma: f64) -> f64 {
    let magic = 4.0 * (-0.5f64).exp() / 2.0f64.sqrt();
    loop {
        let u1 = rng(me).random();
        let u2 = 1.0 - rng(me).random();
        let z = magic * (u1 - 0.5) / u2;
        if z * z / 4.0 <= -u2.ln() {
            return mu + z * sigma;
        }
    }
}

fn normalvariate(me: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    arity("normalvariate", a, 0, 2)?;
    let mu = opt_num(a, 0, kw, "mu", 0.0)?;
    let sigma = opt_num(a, 1, kw, "sigma", 1.0)?;
    Ok(Value::Float(normal(me, mu, sigma)))
}

fn lognormvariate(me: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    arity("lognormvariate", a, 2, 2)?;
    let mu = opt_num(a, 0, kw, "mu", 0.0)?;
    let sigma = opt_num(a, 1, kw, "sigma", 1.0)?;
    Ok(Value::Float(normal(me, mu, sigma).exp()))
}

fn expovariate(me: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    arity("expovariate", a, 0, 1)?;
    let l = opt_num(a, 0, kw, "lambd", 1.0)?;
    if l == 0.0 {
        return Err(crate::interp::err(
            crate::error::ErrorKind::ZeroDivisionError,
            "float division by zero",
        ));
    }
    Ok(Value::Float(-(1.0 - rng(me).random()).ln() / l))
}

fn triangular(me: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    arity("triangular", a, 0, 3)?;
    let mut low = opt_num(a, 0, kw, "low", 0.0)?;
    let mut high = opt_num(a, 1, kw, "high", 1.0)?;
    let mode = match a.get(2).or_else(|| kwarg(kw, "mode")) {
        None | Some(Value::None) => None,
        Some(v) => Some(num_arg(v, "triangular")?),
    };
    let mut u = rng(me).random();
    let mut c = match mode {
        None => 0.5,
        Some(_) if high == low => return Ok(Value::Float(low)),
        Some(m) => (m - low) / (high - low),
    };
    if u > c {
        u = 1.0 - u;
        c = 1.0 - c;
        std::mem::swap(&mut low, &mut high);
    }
    Ok(Value::Float(low + (high - low) * (u * c).sqrt()))
}

fn getrandbits(me: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    arity("getrandbits", a, 1, 1)?;
    let k = int_arg(&a[0], "")?;
    if k < 0 {
        return Err(value_err("number of bits must be non-negative"));
    }
    if k > 63 {
        return Err(crate::interp::err(
            crate::error::ErrorKind::OverflowError,
            "getrandbits() above 63 bits does not fit in Kiln's 64-bit int",
        ));
    }
    Ok(Value::Int(
        rng(me).getrandbits(k as u32).map_err(fmt_err)? as i64
    ))
}
