//! Multiple inheritance: the C3 method resolution order, and `super()` following it.

use super::value::{Class, Value};
use super::{type_err, R};
use std::rc::Rc;

/// The C3 linearization after a class with these bases (`object` left out), or the
/// TypeError CPython gives when none exists.
pub fn c3(bases: &[Rc<Class>]) -> R<Vec<Rc<Class>>> {
    let mut seqs: Vec<Vec<Rc<Class>>> = bases
        .iter()
        .map(|b| {
            std::iter::once(b.clone())
                .chain(b.mro.iter().cloned())
                .collect()
        })
        .collect();
    seqs.push(bases.to_vec());
    let mut out: Vec<Rc<Class>> = Vec::new();
    loop {
        seqs.retain(|s| !s.is_empty());
        if seqs.is_empty() {
            return Ok(out);
        }
        // the first head that is in no other sequence's tail
        let head = seqs
            .iter()
            .map(|s| s[0].clone())
            .find(|h| !seqs.iter().any(|s| s[1..].iter().any(|k| Rc::ptr_eq(k, h))));
        let Some(h) = head else {
            let names: Vec<&str> = bases.iter().map(|b| &*b.name).collect();
            return Err(type_err(format!(
                "Cannot create a consistent method resolution\norder (MRO) for bases {}",
                names.join(", ")
            )));
        };
        for s in seqs.iter_mut() {
            if Rc::ptr_eq(&s[0], &h) {
                s.remove(0);
            }
        }
        out.push(h);
    }
}

/// The MRO of a class with the one base `base` (single inheritance).
pub fn single(base: &Option<Rc<Class>>) -> Vec<Rc<Class>> {
    match base {
        Some(b) => std::iter::once(b.clone())
            .chain(b.mro.iter().cloned())
            .collect(),
        None => Vec::new(),
    }
}

/// `super(cls, obj).name`: the attribute from the classes after `cls` in the MRO of
/// `obj`'s type (`obj` itself when it is a class).
pub fn super_lookup(cls: &Rc<Class>, start: &Rc<Class>, name: &str) -> Option<Value> {
    let mut after = false;
    for k in std::iter::once(start).chain(start.mro.iter()) {
        if after {
            if let Some(v) = k.dict.borrow().get(name) {
                return Some(v.clone());
            }
        } else if Rc::ptr_eq(k, cls) {
            after = true;
        }
    }
    if after {
        return None;
    }
    // `cls` is not in the MRO (a bound `super` outside its class): its own bases
    cls.mro
        .iter()
        .find_map(|k| k.dict.borrow().get(name).cloned())
}

/// `C.__mro__`: `(C, *mro, object)`.
pub fn mro_tuple(c: &Rc<Class>, object: &Rc<Class>) -> Value {
    let mut v: Vec<Value> = vec![Value::Class(c.clone())];
    v.extend(c.mro.iter().map(|k| Value::Class(k.clone())));
    if !Rc::ptr_eq(c, object) {
        v.push(Value::Class(object.clone()));
    }
    Value::tuple(v)
}
