//! The load guards of a capture on the Python values the interpreter reads: where a
//! value came from (`Origin`), the guard re-reading it at each call (`ValueGuard`, the
//! interpreter's `trace::LoadGuard`, checked by type only for a runtime scalar's origin),
//! and the hooks the interpreter calls on a load (`note_load`, `note_absent`, and `load`,
//! which makes a float of a dynamic origin a runtime scalar: `compile::capture::symfloat`).

use crate::compile::capture::symfloat;
use crate::compile::capture::trace::{self, active, graph_break, BreakReason, GuardKey};
use crate::interp::capture::cache::same_value;
use crate::interp::value::{CellRef, DictMap, Instance, Key, ModuleObj, Value};
use std::cell::RefCell;
use std::hash::{Hash, Hasher};
use std::rc::Rc;

/// Where a loaded value came from: re-read at every call to check it is unchanged.
#[derive(Debug, Clone)]
pub enum Origin {
    Attr(Rc<Instance>, Rc<str>),
    Global(Rc<ModuleObj>, u32, Rc<str>),
    Cell(CellRef, Rc<str>),
    /// `lst[i]` of a list the function did not create (optimizer state lists).
    Item(Rc<RefCell<Vec<Value>>>, usize),
    /// `d[k]` of a dict the function did not create (optimizer param groups and state).
    Key(Rc<RefCell<DictMap>>, Key),
    /// Element `i` of the tuple of length `n` another origin holds (Adam's `betas`): a
    /// tuple holding a float is guarded element by element, so that a float in it that
    /// changes between calls can become a runtime scalar as a lone float does.
    Elem(Box<Origin>, usize, usize),
}

fn hash_of(x: &impl Hash) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    x.hash(&mut h);
    h.finish()
}

impl Origin {
    /// The value the origin holds now (None when it no longer holds one).
    pub fn read(&self) -> Option<Value> {
        match self {
            Origin::Attr(inst, name) => inst.attr(name),
            Origin::Global(m, slot, _) => m.slots.borrow().get(*slot as usize).cloned(),
            Origin::Cell(c, _) => Some(c.borrow().clone()),
            Origin::Item(l, i) => l.borrow().get(*i).cloned(),
            Origin::Key(d, k) => d.borrow().get(k).cloned(),
            Origin::Elem(o, i, n) => match &o.read()? {
                Value::Tuple(t) | Value::Size(t) if t.len() == *n => t.get(*i).cloned(),
                _ => None,
            },
        }
    }

    /// `self.w`, `W`: how dumps name an external input.
    pub fn describe(&self) -> String {
        match self {
            Origin::Attr(_, n) => format!(".{n}"),
            Origin::Global(_, _, n) | Origin::Cell(_, n) => n.to_string(),
            Origin::Item(_, i) => format!("[{i}]"),
            Origin::Key(_, k) => match &k.0 {
                Value::Str(s) => format!("[{s:?}]"),
                other => format!("[{}]", other.type_name()),
            },
            Origin::Elem(o, i, _) => format!("{}[{i}]", o.describe()),
        }
    }

    fn key(&self) -> GuardKey {
        match self {
            Origin::Attr(i, n) => (Rc::as_ptr(i) as usize, hash_of(n)),
            Origin::Global(m, s, _) => (Rc::as_ptr(m) as usize, u64::from(*s)),
            Origin::Cell(c, _) => (Rc::as_ptr(c) as usize, 0),
            Origin::Item(l, i) => (Rc::as_ptr(l) as usize, *i as u64),
            Origin::Key(d, k) => (Rc::as_ptr(d) as usize, hash_of(k)),
            Origin::Elem(o, i, n) => {
                let (a, h) = o.key();
                (a, hash_of(&(h, *i, *n)))
            }
        }
    }

    /// The address of the container it reads, when that may have been created during
    /// the capture (its contents are then the function's own, not guarded).
    fn container(&self) -> Option<usize> {
        match self {
            Origin::Attr(inst, _) => Some(Rc::as_ptr(inst) as usize),
            Origin::Item(l, _) => Some(Rc::as_ptr(l) as usize),
            Origin::Key(d, _) => Some(Rc::as_ptr(d) as usize),
            Origin::Global(..) | Origin::Cell(..) => None,
            Origin::Elem(o, _, _) => o.container(),
        }
    }
}

/// A value read during capture that the cached version depends on (`Unbound`: the
/// origin held nothing, e.g. an instance attribute found on the class).
#[derive(Debug, Clone)]
pub struct ValueGuard {
    pub origin: Origin,
    pub value: Value,
    /// A runtime scalar's origin (`symfloat`): only the type (float) is checked.
    pub by_type: bool,
}

impl ValueGuard {
    fn new(origin: Origin, value: Value) -> Box<ValueGuard> {
        Box::new(ValueGuard {
            origin,
            value,
            by_type: false,
        })
    }
}

impl trace::LoadGuard for ValueGuard {
    fn holds(&self) -> bool {
        match (self.origin.read(), &self.value) {
            (Some(Value::Float(_)), Value::Float(_)) if self.by_type => true,
            (None, Value::Unbound) => true,
            (Some(v), want) => same_value(&v, want),
            (None, _) => false,
        }
    }

    fn describe(&self) -> String {
        self.origin.describe()
    }

    fn float_key(&self) -> Option<GuardKey> {
        matches!(self.value, Value::Float(_)).then(|| self.origin.key())
    }

    fn set_by_type(&mut self, by_type: bool) {
        self.by_type = by_type && matches!(self.value, Value::Float(_));
    }

    fn by_type(&self) -> bool {
        self.by_type
    }

    fn read_float(&self) -> Option<f64> {
        match self.origin.read() {
            Some(Value::Float(f)) => Some(f),
            _ => None,
        }
    }
}

/// An attribute lookup on an instance missed its dict (it found a class attribute):
/// guard that the instance still does not shadow it.
pub fn note_absent(inst: &Rc<Instance>, name: &str) {
    let origin = Origin::Attr(inst.clone(), name.into());
    trace::with(|t| {
        if !t.is_created(Rc::as_ptr(inst) as usize) {
            t.add_guard(origin.key(), || ValueGuard::new(origin, Value::Unbound));
        }
    });
}

/// The interpreter loaded `v` from `origin`: guard it, and remember a tensor's origin.
pub fn note_load(origin: impl FnOnce() -> Origin, v: &Value) {
    if !active() || matches!(v, Value::Unbound) {
        return;
    }
    let origin = origin();
    let aliased = trace::with(|t| {
        if origin.container().is_some_and(|a| t.is_created(a)) {
            return false;
        }
        if let Some(items) = float_tuple(v) {
            for (i, x) in items.iter().enumerate() {
                let elem = Origin::Elem(Box::new(origin.clone()), i, items.len());
                t.add_guard(elem.key(), || ValueGuard::new(elem, x.clone()));
            }
            return false;
        }
        t.add_guard(origin.key(), || ValueGuard::new(origin.clone(), v.clone()));
        let Value::Tensor(x) = v else { return false };
        let item = matches!(origin, Origin::Item(..) | Origin::Key(..));
        t.note_loaded_tensor(x, item, || origin.describe())
    });
    if aliased == Some(true) {
        graph_break(BreakReason::Aliasing);
    }
}

/// The elements of a tuple holding a float (guarded element by element), else None.
fn float_tuple(v: &Value) -> Option<&Rc<[Value]>> {
    match v {
        Value::Tuple(t) if t.iter().any(|x| matches!(x, Value::Float(_))) => Some(t),
        _ => None,
    }
}

fn unguarded(o: &Origin) -> bool {
    let key = o.key();
    trace::with(|t| !t.is_guarded(key)) == Some(true)
}

/// `note_load`, and the value the interpreter goes on with: a runtime scalar for a float
/// of an origin the capture makes dynamic (`compile::capture::symfloat`; its guard then
/// checks the type only), a tuple with such floats in place of its dynamic ones, else
/// `v` itself.
pub fn load(origin: impl FnOnce() -> Origin, v: Value) -> Value {
    if !active() {
        return v;
    }
    let dynamic = trace::with(|t| !t.dynamic_scalars.is_empty()) == Some(true);
    if !dynamic {
        note_load(origin, &v);
        return v;
    }
    if let Some(items) = float_tuple(&v) {
        let origin = origin();
        let n = items.len();
        let elems: Vec<Origin> = (0..n)
            .map(|i| Origin::Elem(Box::new(origin.clone()), i, n))
            .collect();
        let fresh: Vec<bool> = elems.iter().map(unguarded).collect();
        note_load(|| origin, &v);
        let mut any = false;
        let out: Vec<Value> = items
            .iter()
            .zip(elems)
            .zip(fresh)
            .map(|((x, elem), fresh)| match x {
                Value::Float(f) => {
                    let r = runtime_scalar(elem, *f, x, fresh);
                    any |= matches!(r, Value::SymFloat(_));
                    r
                }
                _ => x.clone(),
            })
            .collect();
        return if any { Value::Tuple(out.into()) } else { v };
    }
    let Value::Float(f) = v else {
        note_load(origin, &v);
        return v;
    };
    let origin = origin();
    let fresh = unguarded(&origin);
    note_load(|| origin.clone(), &v);
    runtime_scalar(origin, f, &v, fresh)
}

/// Float `f` (the value `v`) just loaded from `origin` (unguarded before the load when
/// `fresh`): a runtime scalar when the capture makes the place dynamic, else `v`.
fn runtime_scalar(origin: Origin, f: f64, v: &Value, fresh: bool) -> Value {
    let key = origin.key();
    let known = trace::with(|t| t.has_scalar(key)) == Some(true);
    if !(fresh || known) {
        return v.clone();
    }
    let reader = || -> Box<dyn trace::LoadGuard> {
        Box::new(ValueGuard {
            origin: origin.clone(),
            value: v.clone(),
            by_type: true,
        })
    };
    match symfloat::load(key, f, || origin.describe(), reader) {
        Some(s) => super::symfloat::sym_float(s),
        None => v.clone(),
    }
}
