//! Subscripts: indexing and slicing of str/list/tuple/range, dict lookups, `__getitem__`.

use super::num::Num;
use super::value::{DictMap, Key, RangeObj, Value};
use super::{err, type_err, value_err, Interp, R};
use crate::compile::capture::trace;
use crate::error::ErrorKind;
use crate::interp::capture::guards;
use std::rc::Rc;

/// Resolved slice bounds: Python's `slice.indices(len)`.
pub fn slice_indices(s: &[Value; 3], len: i64) -> R<(i64, i64, i64)> {
    let get = |v: &Value| -> R<Option<i64>> {
        match v {
            Value::None => Ok(None),
            Value::Int(i) => Ok(Some(*i)),
            Value::Bool(b) => Ok(Some(*b as i64)),
            _ => Err(type_err(
                "slice indices must be integers or None or have an __index__ method",
            )),
        }
    };
    let step = get(&s[2])?.unwrap_or(1);
    if step == 0 {
        return Err(value_err("slice step cannot be zero"));
    }
    let (lo_def, hi_def) = if step > 0 { (0, len) } else { (len - 1, -1) };
    let clamp = |i: i64| -> i64 {
        if i < 0 {
            let j = i.saturating_add(len);
            if j < 0 {
                if step > 0 {
                    0
                } else {
                    -1
                }
            } else {
                j
            }
        } else if i >= len {
            if step > 0 {
                len
            } else {
                len - 1
            }
        } else {
            i
        }
    };
    let start = get(&s[0])?.map(clamp).unwrap_or(lo_def);
    let stop = get(&s[1])?.map(clamp).unwrap_or(hi_def);
    Ok((start, stop, step))
}

/// The positions selected by a slice of a sequence of `len` (in order, without
/// overflow however large the step).
pub fn slice_steps(s: &[Value; 3], len: usize) -> R<impl Iterator<Item = usize>> {
    let (start, stop, step) = slice_indices(s, len as i64)?;
    // bounds are within -1..=len, so the distance and the step's size fit a u64
    let n = if step > 0 && start < stop {
        (stop - start - 1) as u64 / step.unsigned_abs() + 1
    } else if step < 0 && start > stop {
        (start - stop - 1) as u64 / step.unsigned_abs() + 1
    } else {
        0
    };
    let step_abs = step.unsigned_abs();
    Ok((0..n).map(move |k| {
        let off = k * step_abs;
        // k * |step| stays within the bounds' distance: no wrap
        let pos = if step > 0 {
            start as u64 + off
        } else {
            start as u64 - off
        };
        pos as usize
    }))
}

/// The positions selected by a slice.
pub fn slice_positions(s: &[Value; 3], len: usize) -> R<Vec<usize>> {
    Ok(slice_steps(s, len)?.collect())
}

/// `items[s]` of a list's or a tuple's items, with no list of positions in between.
fn slice_items(items: &[Value], s: &[Value; 3]) -> R<Vec<Value>> {
    if let [Value::None | Value::Int(_), Value::None | Value::Int(_), Value::None] = s {
        let (start, stop, _) = slice_indices(s, items.len() as i64)?;
        return Ok(match items.get(start as usize..stop.max(start) as usize) {
            Some(part) => part.to_vec(),
            None => Vec::new(),
        });
    }
    Ok(slice_steps(s, items.len())?
        .map(|i| items[i].clone())
        .collect())
}

/// `s[a:b:c]`: a step-1 slice is one copy of its bytes (no list of positions).
fn str_slice(s: &Rc<str>, sl: &[Value; 3]) -> R<Value> {
    let layout = super::strindex::layout(s);
    let n = layout.as_ref().map_or(s.len(), |ends| ends.len() - 1);
    if let [Value::None | Value::Int(_), Value::None | Value::Int(_), Value::None] = sl {
        let (a, b, _) = slice_indices(sl, n as i64)?;
        let (a, b) = (a as usize, b.max(a) as usize);
        return Ok(super::strindex::substring(s, &layout, a, b));
    }
    let pos = slice_positions(sl, n)?;
    Ok(Value::str(&super::strindex::chars_at(s, &layout, pos)))
}

fn norm_index(i: &Value, len: usize, what: &str) -> R<usize> {
    let i = match i {
        Value::Int(i) => *i,
        Value::Bool(b) => *b as i64,
        other => {
            return Err(type_err(format!(
                "{} indices must be integers or slices, not {}",
                what,
                other.type_name()
            )))
        }
    };
    let j = if i < 0 { i + len as i64 } else { i };
    if j < 0 || j >= len as i64 {
        return Err(err(
            ErrorKind::IndexError,
            format!("{what} index out of range"),
        ));
    }
    Ok(j as usize)
}

impl Interp {
    /// The key `idx` is in dict `d`: `key_in`, without its passes for a str or an int
    /// while no instance has a user `__hash__` (then no other key can equal it).
    #[inline]
    fn dict_key(&mut self, idx: &Value, d: &std::cell::RefCell<DictMap>) -> R<Key> {
        match idx {
            Value::Str(_) | Value::Int(_) if !self.user_keys => Ok(Key(idx.clone())),
            _ => self.key_in(idx.clone(), d),
        }
    }

    pub fn get_item(&mut self, obj: &Value, idx: &Value) -> R<Value> {
        if let Value::SymInt(_) | Value::Slice(_) | Value::Tuple(_) = idx {
            if let Some(r) = self.sym_get_item(obj, idx) {
                return r;
            }
        }
        match (obj, idx) {
            (Value::List(l), Value::Slice(s)) => Ok(Value::list(slice_items(&l.borrow(), s)?)),
            (Value::List(l), _) => {
                let items = l.borrow();
                let i = norm_index(idx, items.len(), "list")?;
                let v = items[i].clone();
                drop(items);
                if trace::active() {
                    return Ok(guards::load(|| guards::Origin::Item(l.clone(), i), v));
                }
                Ok(v)
            }
            (Value::Tuple(t), Value::Slice(s)) => Ok(Value::tuple(slice_items(t, s)?)),
            (Value::Size(t), Value::Slice(s)) => Ok(Value::Size(slice_items(t, s)?.into())),
            (Value::Tuple(t) | Value::Size(t), _) => {
                Ok(t[norm_index(idx, t.len(), "tuple")?].clone())
            }
            (Value::Str(s), Value::Slice(sl)) => str_slice(s, sl),
            (Value::Str(s), _) => {
                // characters by position (a remembered layout: no pass per access)
                let layout = super::strindex::layout(s);
                let n = layout.as_ref().map_or(s.len(), |ends| ends.len() - 1);
                let i = norm_index(idx, n, "string")?;
                let c = match &layout {
                    None => s.as_bytes()[i] as char,
                    Some(ends) => s[ends[i]..].chars().next().unwrap_or_default(),
                };
                Ok(super::strindex::char_value(c))
            }
            (Value::Range(r), Value::Slice(s)) => {
                let (start, stop, step) = slice_indices(s, r.len())?;
                Ok(Value::Range(Rc::new(RangeObj {
                    start: r.get(start),
                    stop: r.get(stop),
                    step: r.step * step,
                })))
            }
            (Value::Range(r), _) => {
                let i = norm_index(idx, r.len() as usize, "range object")?;
                Ok(Value::Int(r.get(i as i64)))
            }
            (Value::Dict(d), _) => {
                let k = self.dict_key(idx, d)?;
                let found = d.borrow().get(&k).cloned();
                match found {
                    Some(v) => {
                        if trace::active() {
                            return Ok(guards::load(|| guards::Origin::Key(d.clone(), k), v));
                        }
                        Ok(v)
                    }
                    None => Err(self.key_error(idx)),
                }
            }
            (Value::Instance(_), _) => {
                match self.call_dunder(obj, "__getitem__", std::slice::from_ref(idx))? {
                    Some(v) => Ok(v),
                    None => Err(not_subscriptable(obj)),
                }
            }
            (Value::Class(_), _) => Ok(obj.clone()),
            (Value::Tensor(t), _) => super::builtins::tensor_index::get(t, idx),
            _ => Err(not_subscriptable(obj)),
        }
    }

    pub fn set_item(&mut self, obj: &Value, idx: &Value, v: Value) -> R<()> {
        if super::capture::symint::has_sym(idx) || super::capture::symint::has_sym(&v) {
            let (idx, v) = (
                super::capture::symint::concrete(idx),
                super::capture::symint::concrete(&v),
            );
            return self.set_item(obj, &idx, v);
        }
        note_container_mutation(obj, "item store")?;
        match (obj, idx) {
            (Value::List(l), Value::Slice(s)) => self.set_list_slice(l, s, v),
            (Value::List(_), _) if !matches!(idx, Value::Int(_) | Value::Bool(_)) => {
                // CPython names a list (not "list assignment") in this message
                Err(type_err(format!(
                    "list indices must be integers or slices, not {}",
                    idx.type_name()
                )))
            }
            (Value::List(l), _) => {
                let mut l = l.borrow_mut();
                let i = norm_index(idx, l.len(), "list assignment")?;
                l[i] = v;
                Ok(())
            }
            (Value::Dict(d), _) => {
                let k = self.dict_key(idx, d)?;
                super::containers::map_insert(&mut d.borrow_mut(), k, v, "dict")
            }
            (Value::Tensor(t), _) => super::builtins::tensor_index::set(t, idx, &v),
            (Value::Instance(_), _) => {
                match self.call_dunder(obj, "__setitem__", &[idx.clone(), v])? {
                    Some(_) => Ok(()),
                    None => Err(type_err(format!(
                        "'{}' object does not support item assignment",
                        obj.type_name()
                    ))),
                }
            }
            _ => Err(type_err(format!(
                "'{}' object does not support item assignment",
                obj.type_name()
            ))),
        }
    }

    /// `o[a:b:c]` from the bounds (no slice object for a list or a tuple).
    pub(crate) fn get_slice(&mut self, o: &Value, s: [Value; 3]) -> R<Value> {
        if !s.iter().any(|p| matches!(p, Value::SymInt(_))) {
            match o {
                Value::List(l) => return Ok(Value::list(slice_items(&l.borrow(), &s)?)),
                Value::Tuple(t) => return Ok(Value::tuple(slice_items(t, &s)?)),
                Value::Size(t) => return Ok(Value::Size(slice_items(t, &s)?.into())),
                Value::Str(t) => return str_slice(t, &s),
                _ => {}
            }
        }
        self.get_item(o, &Value::Slice(Rc::new(s)))
    }

    /// `o[a:b:c] = v` from the bounds (no slice object for a list outside a capture).
    pub(crate) fn set_slice(&mut self, o: &Value, s: [Value; 3], v: Value) -> R<()> {
        let plain = !trace::active() && !trace::in_speculation();
        if let (Value::List(l), true) = (o, plain) {
            if !s.iter().any(|p| matches!(p, Value::SymInt(_))) {
                return self.set_list_slice(l, &s, v);
            }
        }
        self.set_item(o, &Value::Slice(Rc::new(s)), v)
    }

    /// `l[s] = v` for a list `l`: the items of `v` (taken over when nothing else holds
    /// `v`, a fresh list such as `xs[k::-1]`) replace the slice.
    fn set_list_slice(
        &mut self,
        l: &Rc<std::cell::RefCell<Vec<Value>>>,
        s: &[Value; 3],
        v: Value,
    ) -> R<()> {
        let owned = match &v {
            Value::List(src) if Rc::strong_count(src) == 1 => src
                .try_borrow_mut()
                .ok()
                .map(|mut items| std::mem::take(&mut *items)),
            _ => None,
        };
        let items = match (owned, &v) {
            (Some(items), _) => items,
            (None, Value::List(_) | Value::Tuple(_) | Value::Size(_)) => self.collect(&v)?,
            (None, _) => {
                // CPython's PySequence_Fast: a TypeError of `iter(v)` gets its message
                let it = self.get_iter(&v).map_err(|e| match e.error.kind {
                    ErrorKind::TypeError
                        if matches!(s[2], Value::None | Value::Int(1) | Value::Bool(true)) =>
                    {
                        type_err("can only assign an iterable")
                    }
                    ErrorKind::TypeError => type_err("must assign iterable to extended slice"),
                    _ => e,
                })?;
                self.collect(&it)?
            }
        };
        let mut l = l.borrow_mut();
        let (start, stop, step) = slice_indices(s, l.len() as i64)?;
        if step == 1 {
            let range = start as usize..stop.max(start) as usize;
            // as many items as the slice holds (`p[:k + 1] = p[k::-1]`): stored in place
            if let Some(dst) = l.get_mut(range.clone()).filter(|d| d.len() == items.len()) {
                for (d, x) in dst.iter_mut().zip(items) {
                    Value::set_slot(d, x);
                }
                return Ok(());
            }
            l.splice(range, items);
            return Ok(());
        }
        let pos = slice_positions(s, l.len())?;
        if pos.len() != items.len() {
            return Err(value_err(format!(
                "attempt to assign sequence of size {} to extended slice of size {}",
                items.len(),
                pos.len()
            )));
        }
        for (p, x) in pos.into_iter().zip(items) {
            l[p] = x;
        }
        Ok(())
    }

    pub fn del_item(&mut self, obj: &Value, idx: &Value) -> R<()> {
        note_container_mutation(obj, "item deletion")?;
        match (obj, idx) {
            (Value::List(l), Value::Slice(s)) => {
                let mut l = l.borrow_mut();
                let mut pos = slice_positions(s, l.len())?;
                pos.sort_unstable();
                for p in pos.into_iter().rev() {
                    l.remove(p);
                }
                Ok(())
            }
            (Value::List(l), _) => {
                let mut l = l.borrow_mut();
                let i = norm_index(idx, l.len(), "list assignment")?;
                l.remove(i);
                Ok(())
            }
            (Value::Dict(d), _) => {
                let k = self.key_in(idx.clone(), d)?;
                let removed = d.borrow_mut().shift_remove(&k);
                match removed {
                    Some(_) => Ok(()),
                    None => Err(self.key_error(idx)),
                }
            }
            (Value::Instance(_), _) => {
                match self.call_dunder(obj, "__delitem__", std::slice::from_ref(idx))? {
                    Some(_) => Ok(()),
                    None => Err(type_err(format!(
                        "'{}' object doesn't support item deletion",
                        obj.type_name()
                    ))),
                }
            }
            _ => Err(type_err(format!(
                "'{}' object doesn't support item deletion",
                obj.type_name()
            ))),
        }
    }
}

fn not_subscriptable(obj: &Value) -> super::Exc {
    type_err(format!("'{}' object is not subscriptable", obj.type_name()))
}

/// Reports a mutation of a list/dict/set to an active capture (tensor item stores are
/// in-place tensor ops, reported by the tensor library).
/// `xs[k]` when `xs` is a list, `k` an int in range and the item a number, outside a
/// capture (which guards item loads): `a[3] - b[3]`, `a[3] -= dx * bm`.
#[inline]
pub fn list_num(o: &Value, k: &Value) -> Option<Num> {
    let (Value::List(l), Value::Int(k)) = (o, k) else {
        return None;
    };
    if trace::active() {
        return None;
    }
    let items = l.try_borrow().ok()?;
    Num::of(items.get(list_pos(*k, items.len())?)?)
}

/// Stores the number `n` at `xs[k]` (see `list_num`); false when `k` is no longer in
/// range (the right-hand side shrank the list) or a capture notes stores, for the
/// general store to do it (or raise).
#[inline]
pub fn set_list_num(o: &Value, k: &Value, n: Num) -> bool {
    let (Value::List(l), Value::Int(k)) = (o, k) else {
        return false;
    };
    if trace::active() || trace::in_speculation() {
        return false;
    }
    let Ok(mut items) = l.try_borrow_mut() else {
        return false;
    };
    match list_pos(*k, items.len()) {
        Some(j) => {
            Value::set_slot(&mut items[j], n.value());
            true
        }
        None => false,
    }
}

impl Interp {
    /// `xs[k]` for a list or tuple `xs` in a local or closure variable and an int `k` (a
    /// constant or a local) in range, outside a capture (which notes item loads): the
    /// item read through the slots, with no clone of the list and no index value.
    #[inline(always)]
    /// `xs[i] = v` when `xs` is a local (or cell) holding a list and `i` an int the
    /// scalar fast path computes (`xs[j + 1] = x`), outside captures: no clone of the
    /// list, no generic dispatch. Gives `v` back when it does not apply; then nothing
    /// was evaluated (loading a local and the scalar fast path run no code).
    pub(crate) fn store_local_item(
        &self,
        o: &super::tree::Ex,
        i: &super::tree::Ex,
        v: Value,
    ) -> Result<R<()>, Value> {
        use super::tree::{ExKind, Place};
        let Some(Num::I(k)) = self.num_rhs(i) else {
            return Err(v);
        };
        if trace::active() || trace::in_speculation() || super::capture::symint::has_sym(&v) {
            return Err(v);
        }
        let mut v = Some(v);
        let r = match &o.kind {
            ExKind::Load(Place::Local(s, _)) => list_store(self.local(*s), k, &mut v),
            ExKind::Load(Place::Cell(s, _)) => match self.local(*s) {
                Value::Cell(c) => match c.try_borrow() {
                    Ok(xs) => list_store(&xs, k, &mut v),
                    Err(_) => None,
                },
                _ => None,
            },
            _ => None,
        };
        match (r, v) {
            (Some(r), _) => Ok(r),
            (None, Some(v)) => Err(v),
            (None, None) => Ok(Ok(())),
        }
    }

    pub(crate) fn local_item(&self, o: &super::tree::Ex, i: &super::tree::Ex) -> Option<Value> {
        use super::tree::{ExKind, Place};
        let k = match &i.kind {
            ExKind::Const(Value::Int(k)) => *k,
            ExKind::Load(Place::Local(t, _)) => match self.local(*t) {
                Value::Int(k) => *k,
                _ => return None,
            },
            // `xs[i + 1]`: the scalar fast path (pure: nothing runs when it gives up)
            ExKind::Binary(..) => match self.num_arg(i) {
                Some(Num::I(k)) => k,
                _ => return None,
            },
            _ => return None,
        };
        if trace::active() {
            return None;
        }
        match &o.kind {
            ExKind::Load(Place::Local(s, _)) => seq_item(self.local(*s), k),
            ExKind::Load(Place::Cell(s, _)) => match self.local(*s) {
                Value::Cell(c) => seq_item(&*c.try_borrow().ok()?, k),
                _ => None,
            },
            _ => None,
        }
    }
}

/// Item `k` of a list or a tuple, if `k` is in range.
#[inline(always)]
/// `xs[k] = v` for a list `xs` whose items are not borrowed: `None` when it does not
/// apply, else the store's outcome (the replaced item is dropped after the borrow ends).
fn list_store(xs: &Value, k: i64, v: &mut Option<Value>) -> Option<R<()>> {
    let Value::List(l) = xs else {
        return None;
    };
    let mut items = l.try_borrow_mut().ok()?;
    let len = items.len();
    let old = match list_pos(k, len) {
        Some(j) => std::mem::replace(&mut items[j], v.take()?),
        None => return Some(norm_index(&Value::Int(k), len, "list assignment").map(drop)),
    };
    drop(items);
    drop(old);
    Some(Ok(()))
}

fn seq_item(v: &Value, k: i64) -> Option<Value> {
    match v {
        Value::List(l) => {
            let items = l.try_borrow().ok()?;
            Some(items.get(list_pos(k, items.len())?)?.clone())
        }
        Value::Tuple(t) | Value::Size(t) => Some(t.get(list_pos(k, t.len())?)?.clone()),
        _ => None,
    }
}

/// The position of index `k` (negative from the end) in a sequence of `len`, if in range.
#[inline]
fn list_pos(k: i64, len: usize) -> Option<usize> {
    let j = if k < 0 { k.checked_add(len as i64)? } else { k };
    usize::try_from(j).ok().filter(|&j| j < len)
}

pub fn note_container_mutation(obj: &Value, what: &'static str) -> R<()> {
    use crate::compile::capture::trace;
    if !trace::active() && !trace::in_speculation() {
        return Ok(());
    }
    let addr = match obj {
        Value::List(l) => Rc::as_ptr(l) as usize,
        Value::Dict(d) | Value::Set(d) => Rc::as_ptr(d) as usize,
        _ => return Ok(()),
    };
    if trace::note_mutation(addr, what) {
        return Err(super::err(
            ErrorKind::RuntimeError,
            "a container change in the branch not taken",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_numbers_read_and_store_in_range_only() {
        let xs = Value::list(vec![Value::Int(1), Value::Float(2.5), Value::Bool(true)]);
        assert_eq!(list_num(&xs, &Value::Int(0)), Some(Num::I(1)));
        assert_eq!(list_num(&xs, &Value::Int(-2)), Some(Num::F(2.5)));
        // a bool item, an index out of range, a non-int index: the general path
        assert_eq!(list_num(&xs, &Value::Int(2)), None);
        assert_eq!(list_num(&xs, &Value::Int(3)), None);
        assert_eq!(list_num(&xs, &Value::Int(-4)), None);
        assert_eq!(list_num(&xs, &Value::Int(i64::MIN)), None);
        assert_eq!(list_num(&xs, &Value::Bool(false)), None);
        assert!(set_list_num(&xs, &Value::Int(-3), Num::F(0.5)));
        assert_eq!(list_num(&xs, &Value::Int(0)), Some(Num::F(0.5)));
        assert!(!set_list_num(&xs, &Value::Int(3), Num::I(7)));
        assert!(!set_list_num(
            &Value::tuple(vec![Value::Int(1)]),
            &Value::Int(0),
            Num::I(7)
        ));
    }
}
