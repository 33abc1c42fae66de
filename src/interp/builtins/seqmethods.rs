//! Methods of `list`, `tuple`, `dict` and `set`.

use super::convert::{dict_from, int_arg};
use super::{arity, kwarg, no_kw};
use crate::error::ErrorKind;
use crate::interp::containers;
use crate::interp::value::{DictMap, Key, Value};
use crate::interp::{err, value_err, Interp, R};
use std::cell::RefCell;
use std::rc::Rc;

pub const LIST_METHODS: &[&str] = &[
    "append", "extend", "insert", "pop", "remove", "index", "count", "sort", "reverse", "copy",
    "clear",
];
pub const DICT_METHODS: &[&str] = &[
    "get",
    "keys",
    "values",
    "items",
    "pop",
    "setdefault",
    "update",
    "copy",
    "clear",
];
/// The methods of `frozenset`: the set methods that build a new set.
pub const FROZENSET_METHODS: &[&str] = &[
    "copy",
    "union",
    "intersection",
    "difference",
    "symmetric_difference",
    "issubset",
    "issuperset",
    "isdisjoint",
];
pub const SET_METHODS: &[&str] = &[
    "add",
    "remove",
    "discard",
    "pop",
    "clear",
    "copy",
    "update",
    "union",
    "intersection",
    "difference",
    "symmetric_difference",
    "intersection_update",
    "difference_update",
    "symmetric_difference_update",
    "issubset",
    "issuperset",
    "isdisjoint",
];

fn no_attr(t: &str, name: &str) -> crate::interp::Exc {
    err(
        ErrorKind::AttributeError,
        format!("'{t}' object has no attribute '{name}'"),
    )
}

fn find(me: &mut Interp, items: &[Value], x: &Value) -> R<Option<usize>> {
    for (i, v) in items.iter().enumerate() {
        if v.is(x) || me.eq(v, x)? {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

fn count(me: &mut Interp, items: &[Value], x: &Value) -> R<i64> {
    let mut n = 0;
    for v in items {
        if v.is(x) || me.eq(v, x)? {
            n += 1;
        }
    }
    Ok(n)
}

pub fn list_method(
    me: &mut Interp,
    l: &Rc<RefCell<Vec<Value>>>,
    name: &str,
    args: Vec<Value>,
    kw: Vec<(Rc<str>, Value)>,
) -> R<Value> {
    if !matches!(name, "index" | "count" | "copy") {
        crate::interp::index::note_container_mutation(&Value::List(l.clone()), "list method")?;
    }
    if name != "sort" {
        no_kw(name, &kw, &[])?;
    }
    Ok(match name {
        "append" => {
            arity(name, &args, 1, 1)?;
            let mut v = l.borrow_mut();
            containers::reserve(&mut v, args.len(), "list")?;
            v.extend(args);
            Value::None
        }
        "extend" => {
            arity(name, &args, 1, 1)?;
            let items = me.collect(&args[0])?;
            let mut v = l.borrow_mut();
            containers::reserve(&mut v, items.len(), "list")?;
            v.extend(items);
            Value::None
        }
        "insert" => {
            arity(name, &args, 2, 2)?;
            let mut v = l.borrow_mut();
            let n = v.len() as i64;
            let i = int_arg(&args[0], "")?;
            let i = if i < 0 { (i + n).max(0) } else { i.min(n) };
            containers::reserve(&mut v, 1, "list")?;
            v.insert(i as usize, args[1].clone());
            Value::None
        }
        "pop" => {
            arity(name, &args, 0, 1)?;
            let mut v = l.borrow_mut();
            if v.is_empty() {
                return Err(err(ErrorKind::IndexError, "pop from empty list"));
            }
            let n = v.len() as i64;
            let i = match args.first() {
                Some(x) => int_arg(x, "")?,
                None => -1,
            };
            let j = if i < 0 { i + n } else { i };
            if j < 0 || j >= n {
                return Err(err(ErrorKind::IndexError, "pop index out of range"));
            }
            v.remove(j as usize)
        }
        "remove" => {
            arity(name, &args, 1, 1)?;
            let items = l.borrow().clone();
            match find(me, &items, &args[0])? {
                Some(i) => {
                    let mut v = l.borrow_mut();
                    if i < v.len() {
                        v.remove(i);
                    }
                    Value::None
                }
                None => return Err(value_err("list.remove(x): x not in list")),
            }
        }
        "index" => {
            arity(name, &args, 1, 1)?;
            let items = l.borrow().clone();
            match find(me, &items, &args[0])? {
                Some(i) => Value::Int(i as i64),
                None => return Err(value_err(format!("{} is not in list", me.repr(&args[0])?))),
            }
        }
        "count" => {
            arity(name, &args, 1, 1)?;
            let items = l.borrow().clone();
            Value::Int(count(me, &items, &args[0])?)
        }
        "sort" => {
            arity(name, &args, 0, 0)?;
            no_kw(name, &kw, &["key", "reverse"])?;
            let reverse = match kwarg(&kw, "reverse") {
                Some(v) => me.truthy(v)?,
                None => false,
            };
            let items = std::mem::take(&mut *l.borrow_mut());
            let sorted = super::funcs::sort_values(me, items.clone(), kwarg(&kw, "key"), reverse);
            match sorted {
                Ok(s) => *l.borrow_mut() = s,
                Err(e) => {
                    *l.borrow_mut() = items;
                    return Err(e);
                }
            }
            Value::None
        }
        "reverse" => {
            l.borrow_mut().reverse();
            Value::None
        }
        "copy" => Value::list(l.borrow().clone()),
        "clear" => {
            l.borrow_mut().clear();
            Value::None
        }
        _ => return Err(no_attr("list", name)),
    })
}

/// The methods of a tuple (and of a `torch.Size`, which adds `numel`).
pub const TUPLE_METHODS: &[&str] = &["index", "count"];

pub fn tuple_method(me: &mut Interp, t: &Rc<[Value]>, name: &str, args: &[Value]) -> R<Value> {
    arity(name, args, 1, 1)?;
    match name {
        "index" => match find(me, t, &args[0])? {
            Some(i) => Ok(Value::Int(i as i64)),
            None => Err(value_err("tuple.index(x): x not in tuple")),
        },
        "count" => Ok(Value::Int(count(me, t, &args[0])?)),
        _ => Err(no_attr("tuple", name)),
    }
}

fn view(items: Vec<Value>) -> Value {
    Value::list(items)
}

pub fn dict_method(
    me: &mut Interp,
    d: &Rc<RefCell<DictMap>>,
    name: &str,
    args: &[Value],
    kw: &[(Rc<str>, Value)],
) -> R<Value> {
    if !kw.is_empty() && name != "update" && DICT_METHODS.contains(&name) {
        return Err(crate::interp::type_err(format!(
            "dict.{name}() takes no keyword arguments"
        )));
    }
    if matches!(name, "pop" | "popitem" | "update" | "clear" | "setdefault") {
        crate::interp::index::note_container_mutation(&Value::Dict(d.clone()), "dict method")?;
    }
    Ok(match name {
        "get" => {
            arity(name, args, 1, 2)?;
            let k = me.key_in(args[0].clone(), d)?;
            let found = d.borrow().get(&k).cloned();
            found.unwrap_or_else(|| args.get(1).cloned().unwrap_or(Value::None))
        }
        "keys" => view(d.borrow().keys().map(|k| k.0.clone()).collect()),
        "values" => view(d.borrow().values().cloned().collect()),
        "items" => view(
            d.borrow()
                .iter()
                .map(|(k, v)| Value::tuple(vec![k.0.clone(), v.clone()]))
                .collect(),
        ),
        "pop" => {
            arity(name, args, 1, 2)?;
            let k = me.key_in(args[0].clone(), d)?;
            let removed = d.borrow_mut().shift_remove(&k);
            match (removed, args.get(1)) {
                (Some(v), _) => v,
                (None, Some(def)) => def.clone(),
                (None, None) => return Err(me.key_error(&args[0])),
            }
        }
        "setdefault" => {
            arity(name, args, 1, 2)?;
            let k = me.key_in(args[0].clone(), d)?;
            let def = args.get(1).cloned().unwrap_or(Value::None);
            let mut m = d.borrow_mut();
            if let Some(v) = m.get(&k) {
                v.clone()
            } else {
                containers::map_insert(&mut m, k, def.clone(), "dict")?;
                def
            }
        }
        "update" => {
            arity(name, args, 0, 1)?;
            if let Some(v) = args.first() {
                let mut m = DictMap::default();
                dict_from(me, v, &mut m)?;
                me.merge_into(d, m, "dict")?;
            }
            if !kw.is_empty() {
                let named = kw
                    .iter()
                    .map(|(k, v)| (Key(Value::Str(k.clone())), v.clone()));
                me.merge_into(d, named.collect(), "dict")?;
            }
            Value::None
        }
        "copy" => Value::dict(d.borrow().clone()),
        "clear" => {
            d.borrow_mut().clear();
            Value::None
        }
        _ => return Err(no_attr("dict", name)),
    })
}

/// A method of a frozenset: the non-mutating set methods, results frozensets.
pub fn frozenset_method(
    me: &mut Interp,
    d: &Rc<RefCell<DictMap>>,
    name: &str,
    args: Vec<Value>,
) -> R<Value> {
    let this = Value::FrozenSet(d.clone());
    let missing = || {
        err(
            ErrorKind::AttributeError,
            format!("'frozenset' object has no attribute '{name}'"),
        )
    };
    if !FROZENSET_METHODS.contains(&name) {
        return Err(missing());
    }
    if name == "copy" {
        arity(name, &args, 0, 0)?;
        return Ok(this);
    }
    me.set_algebra_method(d, &this, name, &args)?
        .ok_or_else(missing)
}

pub fn set_method(
    me: &mut Interp,
    d: &Rc<RefCell<DictMap>>,
    name: &str,
    args: &[Value],
) -> R<Value> {
    let new_set = Value::set;
    if let Some(v) = me.set_algebra_method(d, &Value::Set(d.clone()), name, args)? {
        return Ok(v);
    }
    Ok(match name {
        "add" => {
            arity(name, args, 1, 1)?;
            let k = me.key_in(args[0].clone(), d)?;
            containers::map_insert(&mut d.borrow_mut(), k, Value::None, "set")?;
            Value::None
        }
        "remove" | "discard" => {
            arity(name, args, 1, 1)?;
            let k = me.key_in(args[0].clone(), d)?;
            let removed = d.borrow_mut().shift_remove(&k);
            if removed.is_none() && name == "remove" {
                return Err(me.key_error(&args[0]));
            }
            Value::None
        }
        "pop" => match d.borrow_mut().shift_remove_index(0) {
            Some((k, _)) => k.0,
            None => return Err(err(ErrorKind::KeyError, "'pop from an empty set'")),
        },
        "clear" => {
            d.borrow_mut().clear();
            Value::None
        }
        "copy" => new_set(d.borrow().clone()),
        _ => return Err(no_attr("set", name)),
    })
}
