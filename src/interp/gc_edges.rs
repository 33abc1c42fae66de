//! The object graph as the cycle collector sees it: the references each container
//! holds, how a referenced object is identified during a collection (its header, or its
//! address for the kinds without one), and how an unreachable object's contents are
//! taken out.

use super::gc::GcHeader;
use super::gen::GenState;
use super::value::{Class, IterObj, ModuleObj, Value};
use std::cell::RefCell;
use std::rc::Rc;

/// One strong reference an object holds: a value, or a class or module held as a plain
/// `Rc`.
#[derive(Clone, Copy)]
pub(super) enum Child<'a> {
    Value(&'a Value),
    Class(&'a Rc<Class>),
    Module(&'a Rc<ModuleObj>),
}

/// How a collection finds an object among its candidates.
pub(super) enum Id<'a> {
    /// Objects with a header carry their candidate index in it.
    Header(&'a GcHeader),
    /// Tuples, bound methods, lists, dicts and sets are looked up by address.
    Addr(usize),
    /// Not a kind of object a collection includes (scalars, strings, tensors, ...).
    Other,
}

impl<'a> Child<'a> {
    #[inline]
    pub(super) fn id(self) -> Id<'a> {
        match self {
            Child::Value(v) => id(v),
            Child::Class(c) => Id::Header(&c.gc),
            Child::Module(m) => Id::Header(&m.gc),
        }
    }
}

/// The identity of a value for a collection.
#[inline]
pub(super) fn id(v: &Value) -> Id<'_> {
    match v {
        Value::Instance(rc) => Id::Header(&rc.gc),
        Value::Cell(rc) => Id::Header(&rc.gc),
        Value::Func(rc) => Id::Header(&rc.gc),
        Value::Class(rc) => Id::Header(&rc.gc),
        Value::Module(rc) => Id::Header(&rc.gc),
        Value::List(_) | Value::Tuple(_) | Value::Dict(_) | Value::Set(_) | Value::FrozenSet(_) => {
            Id::Addr(v.ptr_id())
        }
        Value::BoundMethod(_) | Value::Iter(_) => Id::Addr(v.ptr_id()),
        _ => Id::Other,
    }
}

/// An immutable container (tuple, function, bound method): not registered (a `Weak`
/// handle would stop `Value`'s drop from taking its children out, and deep nests would
/// then be freed by recursion), but found from the registered objects while collecting.
#[inline]
pub(super) fn is_immutable(v: &Value) -> bool {
    matches!(v, Value::Tuple(_) | Value::Func(_) | Value::BoundMethod(_))
}

pub(super) fn strong_count(v: &Value) -> i64 {
    let n = match v {
        Value::List(rc) => Rc::strong_count(rc),
        Value::Tuple(rc) => Rc::strong_count(rc),
        Value::Dict(rc) | Value::Set(rc) | Value::FrozenSet(rc) => Rc::strong_count(rc),
        Value::Instance(rc) => Rc::strong_count(rc),
        Value::Func(rc) => Rc::strong_count(rc),
        Value::Cell(rc) => Rc::strong_count(rc),
        Value::BoundMethod(rc) => Rc::strong_count(rc),
        Value::Class(rc) => Rc::strong_count(rc),
        Value::Module(rc) => Rc::strong_count(rc),
        Value::Iter(rc) => Rc::strong_count(rc),
        _ => 1,
    };
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Reports every strong reference `v` holds to a kind of object a collection can
/// include (values, closure cells and captured values, classes, a function's module). Returns false when
/// `v` is mutably borrowed right now and its contents cannot be seen (the caller then
/// treats it as a root).
pub(super) fn children(v: &Value, f: &mut impl for<'b> FnMut(Child<'b>)) -> bool {
    match v {
        Value::List(rc) => match rc.try_borrow() {
            Ok(items) => items.iter().for_each(|x| report(x, f)),
            Err(_) => return false,
        },
        Value::Tuple(rc) => rc.iter().for_each(|x| report(x, f)),
        Value::Dict(rc) | Value::Set(rc) | Value::FrozenSet(rc) => match rc.try_borrow() {
            Ok(m) => m.iter().for_each(|(k, x)| {
                report(&k.0, f);
                report(x, f);
            }),
            Err(_) => return false,
        },
        Value::Instance(inst) => {
            f(Child::Class(&inst.class));
            match inst.attrs.try_borrow() {
                Ok(d) => d.for_each_held(|x| report(x, f)),
                Err(_) => return false,
            }
        }
        Value::Func(func) => {
            func.defaults.iter().for_each(|x| report(x, f));
            func.kwdefaults.iter().flatten().for_each(|x| report(x, f));
            func.closure.iter().for_each(|c| report(c, f));
            f(Child::Module(&func.globals));
            match func.attrs.try_borrow() {
                Ok(d) => d.iter().flat_map(|a| a.values()).for_each(|x| report(x, f)),
                Err(_) => return false,
            }
        }
        Value::Cell(rc) => match rc.try_borrow() {
            Ok(x) => report(&x, f),
            Err(_) => return false,
        },
        Value::BoundMethod(pair) => {
            report(&pair.0, f);
            report(&pair.1, f);
        }
        // a suspended generator: its frame's slots and the iterator it delegates to (one
        // shared beyond its iterator object, or running, is a root)
        Value::Iter(rc) => match rc.try_borrow().as_deref() {
            Ok(IterObj::Gen(g)) if Rc::strong_count(g) == 1 => match g.inner.try_borrow() {
                Ok(inner) if inner.state != GenState::Running => {
                    inner.slots.iter().for_each(|x| report(x, f));
                    inner.delegate.iter().for_each(|x| report(x, f));
                }
                _ => return false,
            },
            _ => return false,
        },
        Value::Class(c) => {
            if let Some(b) = &c.base {
                f(Child::Class(b));
            }
            for k in &c.mro {
                f(Child::Class(k));
            }
            match (c.dict.try_borrow(), c.methods.values()) {
                (Ok(d), Some(memo)) => {
                    d.values().for_each(|x| report(x, f));
                    memo.iter().flat_map(|(_, v)| v).for_each(|x| report(x, f));
                }
                _ => return false,
            }
        }
        Value::Module(m) => match m.slots.try_borrow() {
            Ok(slots) => slots.iter().for_each(|x| report(x, f)),
            Err(_) => return false,
        },
        _ => {}
    }
    true
}

/// Reports `x` if it is a kind of object a collection can include.
#[inline]
fn report(x: &Value, f: &mut impl for<'b> FnMut(Child<'b>)) {
    if !matches!(id(x), Id::Other) {
        f(Child::Value(x))
    }
}

/// Moves the mutable contents of an unreachable object into `out`.
pub(super) fn clear_one(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::List(rc) => {
            if let Ok(mut items) = rc.try_borrow_mut() {
                out.append(&mut items);
            }
        }
        Value::Dict(rc) | Value::Set(rc) | Value::FrozenSet(rc) => {
            if let Ok(mut m) = rc.try_borrow_mut() {
                for (k, x) in std::mem::take(&mut *m) {
                    out.push(k.0);
                    out.push(x);
                }
            }
        }
        Value::Instance(inst) => {
            if let Ok(mut d) = inst.attrs.try_borrow_mut() {
                out.extend(d.take_values());
            }
        }
        Value::Cell(rc) => {
            if let Ok(mut x) = rc.try_borrow_mut() {
                out.push(std::mem::replace(&mut *x, Value::Unbound));
            }
        }
        Value::Func(func) => {
            if let Ok(mut d) = func.attrs.try_borrow_mut() {
                out.extend(d.take().into_iter().flat_map(|a| a.into_values()));
            }
        }
        // the generator leaves its iterator object (which is done from now on) in a new
        // one that `out` drops: a generator suspended inside `try/finally` or `with` is
        // then queued and closed once, as when reference counting frees it
        Value::Iter(rc) => {
            if let Ok(mut it) = rc.try_borrow_mut() {
                let old = std::mem::replace(&mut *it, IterObj::Done);
                out.push(Value::Iter(Rc::new(RefCell::new(old))));
            }
        }
        Value::Class(c) => {
            if let Ok(mut d) = c.dict.try_borrow_mut() {
                out.extend(std::mem::take(&mut *d).into_values());
            }
            c.methods.clear_into(out);
            super::method_cache::classes_changed();
        }
        Value::Module(m) => {
            if let Ok(mut slots) = m.slots.try_borrow_mut() {
                for x in slots.iter_mut() {
                    out.push(std::mem::replace(x, Value::Unbound));
                }
            }
        }
        _ => {}
    }
}
