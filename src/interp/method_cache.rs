//! Per-class memo of lookups of the fixed names the interpreter asks for on every
//! operator or constructor call (`__init__`, `__add__`, ...), so they are not hashed
//! through the class chain each time.
//!
//! Any change to any class dict (`set_attr`/`del_attr` on a class, a new class, a
//! collected class) bumps a global epoch; a memo from an older epoch is discarded on
//! its next use. Names are `&'static str`s compared by address (a name is found under
//! every address it is asked with, so two copies of one literal only cost a slot).

use super::value::Value;
use std::cell::{Cell, RefCell};

thread_local! {
    static EPOCH: Cell<u64> = const { Cell::new(0) };
}

/// Invalidates the memo of every class: some class dict changed.
pub fn classes_changed() {
    EPOCH.with(|e| e.set(e.get().wrapping_add(1)));
}

/// `(name, lookup result)` pairs.
pub type Memo = Vec<(&'static str, Option<Value>)>;

/// The memo of one class, valid for `epoch`.
#[derive(Debug, Default)]
pub struct MethodCache {
    epoch: Cell<u64>,
    entries: RefCell<Memo>,
    /// Whether the class or its MRO holds a property, with the epoch it was found in.
    property: Cell<Option<(u64, bool)>>,
}

impl MethodCache {
    /// The memoized lookup of `name`, or `None` when not memoized (or stale).
    #[inline]
    pub fn get(&self, name: &'static str) -> Option<Option<Value>> {
        let now = EPOCH.with(Cell::get);
        let mut entries = self.entries.try_borrow_mut().ok()?;
        if self.epoch.get() != now {
            self.epoch.set(now);
            entries.clear();
            return None;
        }
        entries
            .iter()
            .find(|(k, _)| std::ptr::eq(*k, name))
            .map(|(_, v)| v.clone())
    }

    /// Memoizes the lookup result `v` of `name` (for the current epoch).
    pub fn put(&self, name: &'static str, v: Option<Value>) {
        if self.epoch.get() != EPOCH.with(Cell::get) {
            return;
        }
        if let Ok(mut entries) = self.entries.try_borrow_mut() {
            entries.push((name, v));
        }
    }

    /// The memoized "holds a property" flag, `None` when not known for this epoch.
    #[inline]
    pub fn has_property(&self) -> Option<bool> {
        let now = EPOCH.with(Cell::get);
        self.property
            .get()
            .and_then(|(e, v)| (e == now).then_some(v))
    }

    /// Memoizes the "holds a property" flag for the current epoch.
    pub fn set_has_property(&self, v: bool) {
        self.property.set(Some((EPOCH.with(Cell::get), v)));
    }

    /// The memoized values (the cycle collector's view of the references they hold).
    /// `None` when the memo is in use right now.
    pub fn values(&self) -> Option<std::cell::Ref<'_, Memo>> {
        self.entries.try_borrow().ok()
    }

    /// Empties the memo, moving its values into `out` (a collected class).
    pub fn clear_into(&self, out: &mut Vec<Value>) {
        if let Ok(mut entries) = self.entries.try_borrow_mut() {
            out.extend(entries.drain(..).filter_map(|(_, v)| v));
        }
    }
}
