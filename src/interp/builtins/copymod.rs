//! The `copy` module (`copy`, `deepcopy` with a memo so shared and cyclic structure is
//! reproduced) and the no-op `__future__` module.

use super::arity;
use super::mathmod::module;
use crate::interp::value::{DictMap, Instance, Key, ModuleObj, Value};
use crate::interp::{Interp, R};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

type Kw<'a> = &'a [(Rc<str>, Value)];

pub fn copy_module() -> Rc<ModuleObj> {
    module("copy", &[("copy", copy), ("deepcopy", deepcopy)], &[])
}

/// `from __future__ import annotations` and friends: accepted, no effect.
pub fn future_module() -> Rc<ModuleObj> {
    let t = Value::Bool(true);
    module(
        "__future__",
        &[],
        &[
            ("annotations", t.clone()),
            ("division", t.clone()),
            ("print_function", t.clone()),
            ("absolute_import", t.clone()),
            ("generator_stop", t.clone()),
            ("unicode_literals", t),
        ],
    )
}

/// A new instance of `i`'s class with these attributes.
fn new_instance(i: &Rc<Instance>, attrs: Vec<(Rc<str>, Value)>) -> Value {
    let inst = Rc::new(Instance::new(i.class.clone()));
    for (k, v) in attrs {
        inst.put_attr(k, v);
    }
    crate::interp::gc::track_instance(&inst);
    Value::Instance(inst)
}

/// `copy.copy(x)`: a new container holding the same items; immutable values as is.
fn copy(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("copy", args, 1, 1)?;
    let x = &args[0];
    Ok(match x {
        Value::List(l) => Value::list(l.borrow().clone()),
        Value::Dict(d) => Value::Dict(Rc::new(RefCell::new(d.borrow().clone()))),
        Value::Set(d) => Value::Set(Rc::new(RefCell::new(d.borrow().clone()))),
        Value::FrozenSet(_) => x.clone(),
        Value::Instance(i) => {
            if let Some(f) = i.class.lookup("__copy__") {
                return me.call_value(&f, vec![x.clone()], vec![]);
            }
            new_instance(i, i.attr_items())
        }
        other => other.clone(),
    })
}

fn deepcopy(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("deepcopy", args, 1, 2)?;
    let mut memo = HashMap::new();
    deep(me, &args[0], &mut memo, 0)
}

fn deep(me: &mut Interp, x: &Value, memo: &mut HashMap<usize, Value>, depth: usize) -> R<Value> {
    if depth > 2000 {
        return Err(crate::interp::err(
            crate::error::ErrorKind::RecursionError,
            "maximum recursion depth exceeded in deepcopy",
        ));
    }
    let id = x.ptr_id();
    if let Some(v) = memo.get(&id) {
        return Ok(v.clone());
    }
    Ok(match x {
        Value::List(l) => {
            let out = Rc::new(RefCell::new(Vec::new()));
            memo.insert(id, Value::List(out.clone()));
            let items = l.borrow().clone();
            for v in &items {
                let c = deep(me, v, memo, depth + 1)?;
                out.borrow_mut().push(c);
            }
            Value::List(out)
        }
        Value::Tuple(t) => {
            let mut items = Vec::with_capacity(t.len());
            for v in t.iter() {
                items.push(deep(me, v, memo, depth + 1)?);
            }
            let v = Value::tuple(items);
            memo.insert(id, v.clone());
            v
        }
        Value::Dict(d) | Value::Set(d) | Value::FrozenSet(d) => {
            let out = Rc::new(RefCell::new(DictMap::default()));
            let v = match x {
                Value::Dict(_) => Value::Dict(out.clone()),
                Value::Set(_) => Value::Set(out.clone()),
                _ => Value::FrozenSet(out.clone()),
            };
            memo.insert(id, v.clone());
            let items: Vec<(Key, Value)> = d
                .borrow()
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            for (k, val) in items {
                let k2 = Key(deep(me, &k.0, memo, depth + 1)?);
                let v2 = deep(me, &val, memo, depth + 1)?;
                out.borrow_mut().insert(k2, v2);
            }
            v
        }
        Value::Instance(i) => {
            if let Some(f) = i.class.lookup("__deepcopy__") {
                return me.call_value(&f, vec![x.clone(), Value::None], vec![]);
            }
            let out = new_instance(i, Vec::new());
            memo.insert(id, out.clone());
            let items = i.attr_items();
            if let Value::Instance(o) = &out {
                for (k, v) in items {
                    let c = deep(me, &v, memo, depth + 1)?;
                    o.put_attr(k, c);
                }
            }
            out
        }
        Value::Tensor(t) => {
            // PyTorch: a new leaf with the same values and requires_grad; a Parameter
            // stays one (so a deep-copied module keeps its parameters)
            let c = t.detach().contiguous_copy().map_err(super::tensor::te)?;
            if t.requires_grad() {
                c.set_requires_grad(true).map_err(super::tensor::te)?;
            }
            if t.is_parameter() {
                c.mark_parameter();
            }
            let c = Value::Tensor(c);
            memo.insert(id, c.clone());
            c
        }
        other => other.clone(),
    })
}
