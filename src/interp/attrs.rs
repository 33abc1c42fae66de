//! Instance attribute storage: an insertion-ordered map kept inline in the instance
//! while small (one allocation per instance, no hashing), with a hash index once large.
//!
//! Most instances hold a handful of attributes, stored in the same order by `__init__`,
//! so a lookup is a short scan comparing name pointers first (attribute names of one
//! program are shared `Rc<str>`s) and then lengths and bytes. A map that grows past
//! `INDEXED` entries builds a name -> position index so that a lookup stays O(1).

use super::value::{FxBuild, Value};
use smallvec::SmallVec;
use std::collections::HashMap;
use std::rc::Rc;

/// Entries stored inside the instance itself (no separate allocation).
const INLINE: usize = 4;
/// Entry count above which lookups go through the hash index.
const INDEXED: usize = 16;

type Entries = SmallVec<[(Rc<str>, Value); INLINE]>;

/// An instance's attributes, in assignment order.
#[derive(Debug, Default)]
pub struct AttrMap {
    entries: Entries,
    /// Name -> position, kept only while there are more than `INDEXED` entries. (Boxed:
    /// one word in every instance instead of a map header most never use.)
    #[allow(clippy::box_collection)]
    index: Option<Box<HashMap<Rc<str>, u32, FxBuild>>>,
}

/// True when `k` names the same attribute as `name`.
#[inline(always)]
fn same(k: &Rc<str>, name: &str) -> bool {
    k.len() == name.len() && (std::ptr::eq(k.as_ptr(), name.as_ptr()) || **k == *name)
}

impl AttrMap {
    pub fn new() -> AttrMap {
        AttrMap::default()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The position of `name`, if present.
    #[inline]
    pub fn position(&self, name: &str) -> Option<usize> {
        if let Some(ix) = &self.index {
            return ix.get(name).map(|&i| i as usize);
        }
        self.entries.iter().position(|(k, _)| same(k, name))
    }

    #[inline]
    pub fn get(&self, name: &str) -> Option<&Value> {
        let i = self.position(name)?;
        self.entries.get(i).map(|(_, v)| v)
    }

    pub fn get_mut(&mut self, name: &str) -> Option<&mut Value> {
        let i = self.position(name)?;
        self.entries.get_mut(i).map(|(_, v)| v)
    }

    /// The position, name and value of `name`, if present.
    #[inline]
    pub fn get_full(&self, name: &str) -> Option<(usize, &Rc<str>, &Value)> {
        let i = self.position(name)?;
        self.entries.get(i).map(|(k, v)| (i, k, v))
    }

    #[inline(always)]
    pub fn get_index(&self, i: usize) -> Option<(&Rc<str>, &Value)> {
        self.entries.get(i).map(|(k, v)| (k, v))
    }

    #[inline(always)]
    pub fn get_index_mut(&mut self, i: usize) -> Option<(&Rc<str>, &mut Value)> {
        self.entries.get_mut(i).map(|(k, v)| (&*k, v))
    }

    /// Sets `name` to `v`; returns its position and the value it replaced.
    pub fn insert_full(&mut self, name: Rc<str>, v: Value) -> (usize, Option<Value>) {
        if let Some(i) = self.position(&name) {
            if let Some((_, slot)) = self.entries.get_mut(i) {
                return (i, Some(std::mem::replace(slot, v)));
            }
        }
        let i = self.entries.len();
        if let Some(ix) = &mut self.index {
            ix.insert(name.clone(), i as u32);
        }
        self.entries.push((name, v));
        if self.index.is_none() && self.entries.len() > INDEXED {
            self.reindex();
        }
        (i, None)
    }

    /// Sets `name` to `v`; returns the value it replaced.
    pub fn insert(&mut self, name: Rc<str>, v: Value) -> Option<Value> {
        self.insert_full(name, v).1
    }

    /// Removes `name`, keeping the order of the others; returns its value.
    pub fn shift_remove(&mut self, name: &str) -> Option<Value> {
        let i = self.position(name)?;
        let (_, v) = self.entries.remove(i);
        if self.index.is_some() {
            self.reindex();
        }
        Some(v)
    }

    /// Rebuilds the hash index (or drops it once the map is small again).
    fn reindex(&mut self) {
        if self.entries.len() <= INDEXED {
            self.index = None;
            return;
        }
        let ix = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (k.clone(), i as u32))
            .collect();
        self.index = Some(Box::new(ix));
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Rc<str>, &Value)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    pub fn keys(&self) -> impl Iterator<Item = &Rc<str>> {
        self.entries.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl Iterator<Item = &Value> {
        self.entries.iter().map(|(_, v)| v)
    }

    pub fn into_values(self) -> impl Iterator<Item = Value> {
        self.entries.into_iter().map(|(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> Rc<str> {
        s.into()
    }

    #[test]
    fn keeps_order_and_replaces_in_place() {
        let mut m = AttrMap::new();
        assert_eq!(m.insert_full(name("b"), Value::Int(1)).0, 0);
        assert_eq!(m.insert_full(name("a"), Value::Int(2)).0, 1);
        let (i, old) = m.insert_full(name("b"), Value::Int(3));
        assert_eq!(i, 0);
        assert!(matches!(old, Some(Value::Int(1))));
        let keys: Vec<&str> = m.keys().map(|k| &**k).collect();
        assert_eq!(keys, ["b", "a"]);
        assert!(matches!(m.get("b"), Some(Value::Int(3))));
        assert!(m.get("c").is_none());
    }

    #[test]
    fn large_maps_index_and_remove_keeps_positions_right() {
        let mut m = AttrMap::new();
        for i in 0..40 {
            m.insert(name(&format!("a{i}")), Value::Int(i));
        }
        assert!(m.index.is_some());
        for i in 0..40 {
            assert_eq!(m.position(&format!("a{i}")), Some(i as usize));
        }
        assert!(matches!(m.shift_remove("a3"), Some(Value::Int(3))));
        assert_eq!(m.position("a4"), Some(3));
        assert_eq!(m.position("a3"), None);
        assert!(matches!(m.get("a39"), Some(Value::Int(39))));
        for i in 4..30 {
            m.shift_remove(&format!("a{i}"));
        }
        // small again: back to scanning, positions still right
        assert!(m.index.is_none());
        let keys: Vec<&str> = m.keys().map(|k| &**k).collect();
        assert_eq!(keys[..3], ["a0", "a1", "a2"]);
        assert_eq!(m.position("a30"), Some(3));
        assert_eq!(m.len(), 13);
    }
}
