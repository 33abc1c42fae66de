//! The load guards of a capture on the Python values the interpreter reads: where a
//! value came from (`Origin`), the guard re-reading it at each call (`ValueGuard`, the
//! interpreter's `trace::LoadGuard`), and the hooks the interpreter calls on a load
//! (`note_load`, `note_absent`).

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
        }
    }

    fn key(&self) -> GuardKey {
        match self {
            Origin::Attr(i, n) => (Rc::as_ptr(i) as usize, hash_of(n)),
            Origin::Global(m, s, _) => (Rc::as_ptr(m) as usize, u64::from(*s)),
            Origin::Cell(c, _) => (Rc::as_ptr(c) as usize, 0),
            Origin::Item(l, i) => (Rc::as_ptr(l) as usize, *i as u64),
            Origin::Key(d, k) => (Rc::as_ptr(d) as usize, hash_of(k)),
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
        }
    }
}

/// A value read during capture that the cached version depends on (`Unbound`: the
/// origin held nothing, e.g. an instance attribute found on the class).
#[derive(Debug, Clone)]
pub struct ValueGuard {
    pub origin: Origin,
    pub value: Value,
}

impl trace::LoadGuard for ValueGuard {
    fn holds(&self) -> bool {
        match (self.origin.read(), &self.value) {
            (None, Value::Unbound) => true,
            (Some(v), want) => same_value(&v, want),
            (None, _) => false,
        }
    }

    fn describe(&self) -> String {
        self.origin.describe()
    }
}

/// An attribute lookup on an instance missed its dict (it found a class attribute):
/// guard that the instance still does not shadow it.
pub fn note_absent(inst: &Rc<Instance>, name: &str) {
    let origin = Origin::Attr(inst.clone(), name.into());
    trace::with(|t| {
        if !t.is_created(Rc::as_ptr(inst) as usize) {
            t.add_guard(origin.key(), || {
                Box::new(ValueGuard {
                    origin,
                    value: Value::Unbound,
                })
            });
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
        t.add_guard(origin.key(), || {
            Box::new(ValueGuard {
                origin: origin.clone(),
                value: v.clone(),
            })
        });
        let Value::Tensor(x) = v else { return false };
        let item = matches!(origin, Origin::Item(..) | Origin::Key(..));
        t.note_loaded_tensor(x, item, || origin.describe())
    });
    if aliased == Some(true) {
        graph_break(BreakReason::Aliasing);
    }
}
