//! Freeing values: the drop glue of `Value` releases the children of a container (list,
//! tuple, dict, set, instance, cell, function, bound method, iterator) that is being
//! freed, by recursion while shallow and through a thread-local queue beyond that, so
//! arbitrarily deep data never overflows the native stack.

use super::value::{IterObj, Value};
use std::cell::RefCell;
use std::rc::Rc;

/// Drops a value, skipping the out-of-line drop glue for plain scalars.
#[inline(always)]
pub fn discard(v: Value) {
    if v.is_plain() {
        std::mem::forget(v);
    } else {
        drop(v);
    }
}

thread_local! {
    /// Children of dropped containers waiting to be released (iterative drop).
    static DROP_QUEUE: RefCell<Vec<Value>> = const { RefCell::new(Vec::new()) };
    static DROPPING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// How many containers are being freed recursively on the native stack right now.
    static DROP_DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Containers nested at most this deep are freed by plain recursion (no allocation);
/// deeper ones go through the queue, so the native stack use stays bounded.
const MAX_DROP_DEPTH: u32 = 32;

/// Takes the children out of a container that is about to be freed and hands each to
/// `f`; does nothing when the container is still shared.
fn take_children<F: FnMut(Value)>(v: &mut Value, mut f: F) {
    match v {
        Value::List(rc) if Rc::strong_count(rc) == 1 => {
            let items = match rc.try_borrow_mut() {
                Ok(mut items) => std::mem::take(&mut *items),
                Err(_) => return,
            };
            items.into_iter().for_each(f);
        }
        Value::Tuple(rc) => {
            if let Some(items) = Rc::get_mut(rc) {
                items.iter_mut().for_each(|x| f(std::mem::take(x)));
            }
        }
        Value::Dict(rc) | Value::Set(rc) | Value::FrozenSet(rc) if Rc::strong_count(rc) == 1 => {
            let m = match rc.try_borrow_mut() {
                Ok(mut m) => std::mem::take(&mut *m),
                Err(_) => return,
            };
            for (k, x) in m {
                f(k.0);
                f(x);
            }
        }
        Value::Instance(rc) if Rc::strong_count(rc) == 1 => {
            let vals = match rc.attrs.try_borrow_mut() {
                Ok(mut m) => m.take_values(),
                Err(_) => return,
            };
            vals.for_each(f);
        }
        Value::Cell(rc) if Rc::strong_count(rc) == 1 => {
            if let Ok(mut x) = rc.try_borrow_mut() {
                let x = std::mem::take(&mut *x);
                f(x);
            }
        }
        Value::Func(rc) => {
            if let Some(func) = Rc::get_mut(rc) {
                std::mem::take(&mut func.defaults)
                    .into_iter()
                    .for_each(&mut f);
                std::mem::take(&mut func.kwdefaults)
                    .into_iter()
                    .flatten()
                    .for_each(&mut f);
                std::mem::take(&mut func.closure)
                    .into_iter()
                    .for_each(&mut f);
                if let Some(a) = func.attrs.get_mut().take() {
                    a.into_values().for_each(&mut f);
                }
            }
        }
        Value::BoundMethod(rc) => {
            if let Some(pair) = Rc::get_mut(rc) {
                f(std::mem::take(&mut pair.0));
                f(std::mem::take(&mut pair.1));
            }
        }
        Value::Iter(rc) if Rc::strong_count(rc) == 1 => {
            let it = match rc.try_borrow_mut() {
                Ok(mut it) => std::mem::replace(&mut *it, IterObj::Done),
                Err(_) => return,
            };
            match it {
                IterObj::Enumerate { inner: x, .. } | IterObj::User(x) => f(x),
                IterObj::Zip(xs) => xs.into_iter().for_each(f),
                IterObj::Map { func, iters } => {
                    f(func);
                    iters.into_iter().for_each(f);
                }
                IterObj::Filter { func, inner } => {
                    f(func);
                    f(inner);
                }
                IterObj::Progress(mut p) => f(std::mem::take(&mut p.inner)),
                IterObj::Seq { .. }
                | IterObj::List { .. }
                | IterObj::Range { .. }
                | IterObj::Gen(_)
                | IterObj::Done => {}
            }
        }
        _ => {}
    }
}

impl Drop for Value {
    #[inline]
    fn drop(&mut self) {
        // Only the last reference frees the children; dropping a shared clone is just
        // the refcount decrement of the drop glue.
        let last = match self {
            Value::List(rc) => Rc::strong_count(rc) == 1,
            Value::Tuple(rc) => Rc::strong_count(rc) == 1,
            Value::Dict(rc) | Value::Set(rc) | Value::FrozenSet(rc) => Rc::strong_count(rc) == 1,
            Value::Instance(rc) => Rc::strong_count(rc) == 1,
            Value::Cell(rc) => Rc::strong_count(rc) == 1,
            Value::Func(rc) => Rc::strong_count(rc) == 1,
            Value::BoundMethod(rc) => Rc::strong_count(rc) == 1,
            Value::Iter(rc) => Rc::strong_count(rc) == 1,
            _ => false,
        };
        if last {
            drop_container(self);
        }
    }
}

/// The slow path of `drop`: free the children of a container that is being freed, by
/// recursion while shallow, else through a queue released iteratively.
#[inline(never)]
fn drop_container(v: &mut Value) {
    match v {
        // iterators are not tracked by the cycle collector
        Value::Iter(_) => {}
        Value::List(rc) => super::gc::note_freed_at(Rc::as_ptr(rc) as usize),
        Value::Dict(rc) | Value::Set(rc) | Value::FrozenSet(rc) => {
            super::gc::note_freed_at(Rc::as_ptr(rc) as usize)
        }
        Value::Instance(rc) => super::gc::note_freed_at(Rc::as_ptr(rc) as usize),
        Value::Cell(rc) => super::gc::note_freed_at(Rc::as_ptr(rc) as usize),
        _ => super::gc::note_freed(),
    }
    let depth = DROP_DEPTH.with(|d| d.get());
    if depth < MAX_DROP_DEPTH {
        DROP_DEPTH.with(|d| d.set(depth + 1));
        take_children(v, drop);
        DROP_DEPTH.with(|d| d.set(depth));
        return;
    }
    let mut queued = false;
    take_children(v, |x| {
        queued = true;
        DROP_QUEUE.with(|q| q.borrow_mut().push(x));
    });
    if !queued || DROPPING.with(|d| d.replace(true)) {
        return;
    }
    while let Some(next) = DROP_QUEUE.with(|q| q.borrow_mut().pop()) {
        drop(next);
    }
    DROPPING.with(|d| d.set(false));
}
