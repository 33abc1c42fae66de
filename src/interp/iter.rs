//! Iteration: `for` fast paths, `iter()`/`next()`, and the iterator builtins' state.

use super::containers;
use super::value::{IterObj, Value};
use super::{err, type_err, Interp, R};
use crate::error::ErrorKind;
use std::cell::RefCell;
use std::rc::Rc;

fn not_iterable(v: &Value) -> super::Exc {
    type_err(format!("'{}' object is not iterable", v.type_name()))
}

impl Interp {
    /// Calls `f` with each item; `f` returns false to stop. Returns true when exhausted.
    pub fn for_each<F>(&mut self, it: &Value, mut f: F) -> R<bool>
    where
        F: FnMut(&mut Interp, Value) -> R<bool>,
    {
        match it {
            Value::Range(r) => {
                let (mut i, stop, step) = (r.start, r.stop, r.step);
                while (step > 0 && i < stop) || (step < 0 && i > stop) {
                    self.check_interrupt()?;
                    if !f(self, Value::Int(i))? {
                        return Ok(false);
                    }
                    i = match i.checked_add(step) {
                        Some(n) => n,
                        None => break,
                    };
                }
                Ok(true)
            }
            Value::List(l) => {
                let mut i = 0;
                loop {
                    let v = match l.borrow().get(i) {
                        Some(v) => v.clone(),
                        None => return Ok(true),
                    };
                    i += 1;
                    self.check_interrupt()?;
                    if !f(self, v)? {
                        return Ok(false);
                    }
                }
            }
            Value::Tuple(t) | Value::Size(t) => {
                for v in t.iter() {
                    if !f(self, v.clone())? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Value::Str(s) => {
                for c in s.chars() {
                    if !f(self, super::strindex::char_value(c))? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Value::Dict(d) | Value::Set(d) | Value::FrozenSet(d) => {
                let keys: Vec<Value> = d.borrow().keys().map(|k| k.0.clone()).collect();
                for k in keys {
                    if !f(self, k)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            _ => {
                let iter = self.get_iter(it)?;
                while let Some(v) = self.next_of(&iter)? {
                    self.check_interrupt()?;
                    if !f(self, v)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
        }
    }

    /// All items of an iterable, in order.
    pub fn collect(&mut self, it: &Value) -> R<Vec<Value>> {
        match it {
            Value::List(l) => Ok(l.borrow().clone()),
            Value::Tuple(t) | Value::Size(t) => Ok(t.to_vec()),
            _ => {
                // a range's size is known: refuse a too large one before any work
                // (unless the operation budget stops the loop first, as it would)
                let n = match it {
                    Value::Range(r) if !self.ops_budget_below(r.len()) => {
                        usize::try_from(r.len()).unwrap_or(usize::MAX)
                    }
                    _ => 0,
                };
                let mut out = containers::vec_with_capacity(n, "list")?;
                self.for_each(it, |_, v| {
                    containers::push(&mut out, v, "list")?;
                    Ok(true)
                })?;
                Ok(out)
            }
        }
    }

    /// `iter(v)`.
    pub fn get_iter(&mut self, v: &Value) -> R<Value> {
        let obj = match v {
            Value::Iter(_) => return Ok(v.clone()),
            Value::List(l) => IterObj::List {
                list: l.clone(),
                pos: 0,
            },
            Value::Tuple(t) | Value::Size(t) => IterObj::Seq {
                items: t.clone(),
                pos: 0,
            },
            Value::Range(r) => IterObj::Range {
                cur: r.start,
                stop: r.stop,
                step: r.step,
            },
            Value::Str(_) | Value::Dict(_) | Value::Set(_) | Value::FrozenSet(_) => {
                let items = self.collect(v)?;
                IterObj::Seq {
                    items: items.into(),
                    pos: 0,
                }
            }
            Value::Tensor(t) => super::builtins::tensor_ops::tensor_iter(t)?,
            Value::Instance(inst) => {
                if inst.class.lookup("__iter__").is_some() {
                    let r = self.call_dunder(v, "__iter__", &[])?.unwrap_or(Value::None);
                    return match &r {
                        Value::Instance(i) if i.class.lookup("__next__").is_some() => {
                            Ok(Value::Iter(Rc::new(RefCell::new(IterObj::User(r.clone())))))
                        }
                        Value::Instance(_) => Err(type_err(format!(
                            "iter() returned non-iterator of type '{}'",
                            r.type_name()
                        ))),
                        _ => self.get_iter(&r),
                    };
                }
                if inst.class.lookup("__next__").is_some() {
                    IterObj::User(v.clone())
                } else if inst.class.lookup("__getitem__").is_some()
                    && inst.class.lookup("__len__").is_some()
                {
                    let n = self
                        .call_dunder(v, "__len__", &[])?
                        .unwrap_or(Value::Int(0));
                    let n = match n {
                        Value::Int(n) => n,
                        _ => 0,
                    };
                    let mut items = Vec::new();
                    for i in 0..n {
                        items.push(
                            self.call_dunder(v, "__getitem__", &[Value::Int(i)])?
                                .unwrap_or(Value::None),
                        );
                    }
                    IterObj::Seq {
                        items: items.into(),
                        pos: 0,
                    }
                } else {
                    return Err(not_iterable(v));
                }
            }
            _ => return Err(not_iterable(v)),
        };
        Ok(Value::Iter(Rc::new(RefCell::new(obj))))
    }

    /// `next(it)`, with `None` at the end.
    pub fn next_of(&mut self, it: &Value) -> R<Option<Value>> {
        let Value::Iter(cell) = it else {
            if let Value::Instance(_) = it {
                return self.user_next(it);
            }
            return Err(type_err(format!(
                "'{}' object is not an iterator",
                it.type_name()
            )));
        };
        if let Some(g) = super::gen::as_gen(it) {
            return self.gen_next(&g);
        }
        // Simple states advance under a short borrow; composite ones call back out.
        let composite = {
            let mut st = cell.borrow_mut();
            match &mut *st {
                IterObj::Seq { items, pos } => {
                    let r = items.get(*pos).cloned();
                    *pos += 1;
                    return Ok(r);
                }
                IterObj::List { list, pos } => {
                    let r = list.borrow().get(*pos).cloned();
                    *pos += 1;
                    return Ok(r);
                }
                IterObj::Range { cur, stop, step } => {
                    if (*step > 0 && *cur < *stop) || (*step < 0 && *cur > *stop) {
                        let r = *cur;
                        *cur = cur.saturating_add(*step);
                        if *cur == r {
                            *stop = r;
                        }
                        return Ok(Some(Value::Int(r)));
                    }
                    return Ok(None);
                }
                IterObj::Done => return Ok(None),
                other => std::mem::replace(other, IterObj::Done),
            }
        };
        let (result, state) = self.next_composite(composite)?;
        *cell.borrow_mut() = state;
        Ok(result)
    }

    fn next_composite(&mut self, st: IterObj) -> R<(Option<Value>, IterObj)> {
        Ok(match st {
            IterObj::Enumerate { inner, count } => match self.next_of(&inner)? {
                Some(v) => (
                    Some(Value::tuple(vec![Value::Int(count), v])),
                    IterObj::Enumerate {
                        inner,
                        count: count + 1,
                    },
                ),
                None => (None, IterObj::Done),
            },
            IterObj::Zip(iters) => {
                let mut items = Vec::with_capacity(iters.len());
                for i in &iters {
                    match self.next_of(i)? {
                        Some(v) => items.push(v),
                        None => return Ok((None, IterObj::Done)),
                    }
                }
                if iters.is_empty() {
                    return Ok((None, IterObj::Done));
                }
                (Some(Value::tuple(items)), IterObj::Zip(iters))
            }
            IterObj::Map { func, iters } => {
                let mut args = Vec::with_capacity(iters.len());
                for i in &iters {
                    match self.next_of(i)? {
                        Some(v) => args.push(v),
                        None => return Ok((None, IterObj::Done)),
                    }
                }
                let r = self.call_value(&func, args, vec![])?;
                (Some(r), IterObj::Map { func, iters })
            }
            IterObj::Filter { func, inner } => loop {
                match self.next_of(&inner)? {
                    Some(v) => {
                        let keep = match &func {
                            Value::None => v.clone(),
                            f => self.call_value(f, vec![v.clone()], vec![])?,
                        };
                        if self.truthy(&keep)? {
                            break (Some(v), IterObj::Filter { func, inner });
                        }
                    }
                    None => break (None, IterObj::Done),
                }
            },
            IterObj::Progress(p) => self.progress_next(p)?,
            IterObj::User(v) => match self.user_next(&v)? {
                Some(x) => (Some(x), IterObj::User(v)),
                None => (None, IterObj::Done),
            },
            other => (None, other),
        })
    }

    fn user_next(&mut self, v: &Value) -> R<Option<Value>> {
        match self.call_dunder(v, "__next__", &[]) {
            Ok(Some(x)) => Ok(Some(x)),
            Ok(None) => Err(type_err(format!(
                "'{}' object is not an iterator",
                v.type_name()
            ))),
            Err(e) if e.error.kind == ErrorKind::StopIteration => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Makes an iterator object from a state.
    pub fn make_iter(&self, st: IterObj) -> Value {
        Value::Iter(Rc::new(RefCell::new(st)))
    }

    /// `next(it)` raising StopIteration at the end.
    pub fn next_or_stop(&mut self, it: &Value) -> R<Value> {
        if let Some(g) = super::gen::as_gen(it) {
            return self.gen_next_or_stop(&g, super::gen::Resume::Send(Value::None));
        }
        self.next_of(it)?
            .ok_or_else(|| err(ErrorKind::StopIteration, ""))
    }
}
