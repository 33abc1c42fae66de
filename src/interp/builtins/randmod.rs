//! The native `random` module, backed by the CPython-compatible Mersenne Twister.

use super::convert::{int_arg, num_arg};
use super::pyrandom::PyRandom;
use super::{arity, kwarg};
use crate::error::ErrorKind;
use crate::interp::repr::fmt_err;
use crate::interp::value::{ModuleObj, Value};
use crate::interp::{err, Interp, R};
use std::rc::Rc;

type Kw<'a> = &'a [(Rc<str>, Value)];

pub fn random_module() -> Rc<ModuleObj> {
    super::mathmod::module(
        "random",
        &[
            ("seed", seed),
            ("random", random),
            ("randint", randint),
            ("randrange", randrange),
            ("uniform", uniform),
            ("gauss", gauss),
            ("shuffle", shuffle),
            ("choice", choice),
        ],
        &[],
    )
}

fn rng(me: &mut Interp) -> &mut PyRandom {
    me.rng.get_or_insert_with(PyRandom::from_entropy)
}

fn seed(me: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    arity("seed", a, 0, 1)?;
    match a.first() {
        None | Some(Value::None) => rng(me).seed_from_entropy(),
        Some(v) => {
            let n = int_arg(v, "")?;
            rng(me).seed(n);
        }
    }
    Ok(Value::None)
}

fn random(me: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    arity("random", a, 0, 0)?;
    Ok(Value::Float(rng(me).random()))
}

fn randint(me: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    arity("randint", a, 2, 2)?;
    let (x, y) = (int_arg(&a[0], "")?, int_arg(&a[1], "")?);
    Ok(Value::Int(rng(me).randint(x, y).map_err(fmt_err)?))
}

fn randrange(me: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    arity("randrange", a, 1, 3)?;
    let mut n = [0i64; 3];
    for (i, v) in a.iter().enumerate() {
        n[i] = int_arg(v, "")?;
    }
    let r = match a.len() {
        1 => rng(me).randrange(0, n[0], 1),
        2 => rng(me).randrange(n[0], n[1], 1),
        _ => rng(me).randrange(n[0], n[1], n[2]),
    };
    Ok(Value::Int(r.map_err(fmt_err)?))
}

fn uniform(me: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    arity("uniform", a, 2, 2)?;
    let (x, y) = (num_arg(&a[0], "uniform")?, num_arg(&a[1], "uniform")?);
    Ok(Value::Float(rng(me).uniform(x, y)))
}

fn gauss(me: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    arity("gauss", a, 0, 2)?;
    let mu = match a.first().or_else(|| kwarg(kw, "mu")) {
        Some(v) => num_arg(v, "gauss")?,
        None => 0.0,
    };
    let sigma = match a.get(1).or_else(|| kwarg(kw, "sigma")) {
        Some(v) => num_arg(v, "gauss")?,
        None => 1.0,
    };
    Ok(Value::Float(rng(me).gauss(mu, sigma)))
}

fn shuffle(me: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    arity("shuffle", a, 1, 1)?;
    let Value::List(l) = &a[0] else {
        return Err(crate::interp::type_err(format!(
            "shuffle() argument must be a list, not '{}'",
            a[0].type_name()
        )));
    };
    let mut v = l.borrow().clone();
    rng(me).shuffle(&mut v);
    *l.borrow_mut() = v;
    Ok(Value::None)
}

fn choice(me: &mut Interp, a: &[Value], _: Kw) -> R<Value> {
    arity("choice", a, 1, 1)?;
    let items = me.collect(&a[0])?;
    if items.is_empty() {
        return Err(err(
            ErrorKind::IndexError,
            "Cannot choose from an empty sequence",
        ));
    }
    let i = rng(me).choice_index(items.len()).map_err(fmt_err)?;
    items.get(i).cloned().ok_or_else(|| {
        err(
            ErrorKind::IndexError,
            "Cannot choose from an empty sequence",
        )
    })
}
