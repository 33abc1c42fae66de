//! Per-class memo of lookups of the fixed names the interpreter asks for on every
//! operator or constructor call (`__init__`, `__add__`, ...), so they are not hashed
//! through the class chain each time.
//!
//! Any change to any class dict (`set_attr`/`del_attr` on a class, a new class, a
//! collected class) bumps a global epoch; a memo from an older epoch is discarded on
//! its next use. Names are `&'static str`s compared by address (a name is found under
//! every address it is asked with, so two copies of one literal only cost a slot).
//!
//! `SiteCache` is the inline cache of one attribute/method expression (`obj.name`,
//! `obj.name(...)`): for the last few classes seen there, where in the class chain
//! `name` was found (valid for the same epoch; a dropped class bumps the epoch too, so a
//! class address seen again is a new class only after a bump).

use super::value::{Class, Value};
use std::cell::{Cell, RefCell};

thread_local! {
    static EPOCH: Cell<u64> = const { Cell::new(0) };
}

/// Invalidates the memo of every class: some class dict changed.
pub fn classes_changed() {
    EPOCH.with(|e| e.set(e.get().wrapping_add(1)));
}

/// One remembered lookup: the class (by address; 0 = none), the epoch, and where the
/// name was found: `level` 0 is the class itself, `k` its `mro[k - 1]`; `pos` the
/// entry's position in that dict.
#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    class: usize,
    epoch: u64,
    level: u32,
    pos: u32,
}

/// Entries of a site, chosen by the class address (direct-mapped).
const WAYS: usize = 4;

/// The inline cache of one expression site (see the module doc).
#[derive(Debug, Default)]
pub struct SiteCache([Cell<Entry>; WAYS]);

impl SiteCache {
    /// `cls.lookup(name)`, answered from the cache when `cls` was seen here since the
    /// last class change.
    #[inline]
    pub fn lookup(&self, cls: &Class, name: &str) -> Option<Value> {
        let addr = cls as *const Class as usize;
        let slot = &self.0[(addr >> 4) % WAYS];
        let e = slot.get();
        let now = EPOCH.with(Cell::get);
        if e.class == addr && e.epoch == now {
            let k = match e.level {
                0 => Some(cls),
                l => cls.mro.get(l as usize - 1).map(|k| &**k),
            };
            if let Some(d) = k.and_then(|k| k.dict.try_borrow().ok()) {
                if let Some((_, v)) = d.get_index(e.pos as usize) {
                    return Some(v.clone());
                }
            }
        }
        let chain = std::iter::once(cls).chain(cls.mro.iter().map(|k| &**k));
        for (level, k) in chain.enumerate() {
            let found = k
                .dict
                .borrow()
                .get_full(name)
                .map(|(i, _, v)| (i, v.clone()));
            if let Some((pos, v)) = found {
                if let (Ok(level), Ok(pos)) = (u32::try_from(level), u32::try_from(pos)) {
                    slot.set(Entry {
                        class: addr,
                        epoch: now,
                        level,
                        pos,
                    });
                }
                return Some(v);
            }
        }
        None
    }
}

/// `(name, lookup result)` pairs.
pub type Memo = Vec<(&'static str, Option<Value>)>;

/// The memo of one class, valid for `epoch`.
#[derive(Debug, Default)]
pub struct MethodCache {
    epoch: Cell<u64>,
    entries: RefCell<Memo>,
    /// The class's [`Hooks`], with the epoch they were found in.
    hooks: Cell<Option<(u64, Hooks)>>,
    /// The class's [`KeyFlags`], with the epoch they were found in.
    key_flags: Cell<Option<(u64, KeyFlags)>>,
}

/// How instances of a class behave as dict keys and set members (memoized per class, so
/// hashing an instance of a plain class tests one flag).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyFlags {
    /// The chain defines `__hash__` (a function).
    pub user_hash: bool,
    /// The chain sets `__hash__ = None` (or defines `__eq__` alone).
    pub unhashable: bool,
    /// The chain defines `__eq__`.
    pub user_eq: bool,
}

/// What an attribute store or delete on an instance must look for in its class chain
/// (memoized per class, so a class with none of them pays one flag test).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hooks {
    /// Some class of the chain holds a property (a store may reach its setter).
    pub property: bool,
    /// The chain defines `__setattr__`.
    pub setattr: bool,
    /// The chain defines `__delattr__`.
    pub delattr: bool,
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

    /// The memoized hooks, `None` when not known for this epoch.
    #[inline]
    pub fn hooks(&self) -> Option<Hooks> {
        let now = EPOCH.with(Cell::get);
        self.hooks.get().and_then(|(e, v)| (e == now).then_some(v))
    }

    /// Memoizes the hooks for the current epoch.
    pub fn set_hooks(&self, v: Hooks) {
        self.hooks.set(Some((EPOCH.with(Cell::get), v)));
    }

    /// The memoized key flags, `None` when not known for this epoch.
    #[inline]
    pub fn key_flags(&self) -> Option<KeyFlags> {
        let now = EPOCH.with(Cell::get);
        self.key_flags
            .get()
            .and_then(|(e, v)| (e == now).then_some(v))
    }

    /// Memoizes the key flags for the current epoch.
    pub fn set_key_flags(&self, v: KeyFlags) {
        self.key_flags.set(Some((EPOCH.with(Cell::get), v)));
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
