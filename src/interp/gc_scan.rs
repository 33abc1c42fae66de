//! One collection: trial deletion over the registered objects of the generations being
//! collected, plus the immutable containers found from them.
//!
//! Each candidate gets an index. Objects with a `GcHeader` (instances, cells,
//! functions, classes, modules) carry it in the header, stamped with the collection's
//! epoch, so finding a referenced object among the candidates is one load; the other
//! kinds (lists, dicts, sets, tuples, bound methods) go through a hash map. The
//! buffers live across collections (a collection allocates nothing once they have
//! grown; freeing large buffers made the allocator consolidate its free lists).

use super::gc::Tracked;
use super::gc_edges::{children, clear_one, is_immutable, strong_count, Child, Id};
use super::value::{FxBuild, Value};
use std::collections::HashMap;

/// The external count of an object whose contents could not be read (a root).
const OPAQUE: i64 = i64::MAX / 4;
/// Buffer capacity kept between collections (a larger one is shrunk back to this).
const KEEP: usize = 1 << 16;

/// The scratch state of a collection, kept between collections.
#[derive(Default)]
pub(super) struct Scan {
    /// The candidates, held strongly: registered objects first (in registry order),
    /// then the immutable containers discovered from them.
    objs: Vec<Value>,
    /// References from outside the candidates, then (after `reach`) unused.
    refs: Vec<i64>,
    reached: Vec<bool>,
    todo: Vec<u32>,
    /// Candidate indices of the kinds without a header, by address.
    index: HashMap<usize, u32, FxBuild>,
    /// The contents taken out of garbage objects, dropped after the collection.
    cleared: Vec<Value>,
}

impl Scan {
    /// Runs the collection over `entries` (compacted to the survivors, in order).
    /// Returns how many objects were found unreachable and cleared.
    pub(super) fn collect(&mut self, entries: &mut Vec<Tracked>, epoch: u64) -> usize {
        self.gather(entries, epoch);
        self.subtract(epoch);
        self.reach(epoch);
        let garbage = self.clear();
        let mut i = 0;
        entries.retain(|_| {
            i += 1;
            self.reached[i - 1]
        });
        garbage
    }

    /// Drops the candidates and the cleared contents (frees the garbage); call with no
    /// borrow of the collector's state held.
    pub(super) fn release(&mut self) {
        self.objs.clear();
        self.cleared.clear();
        self.refs.clear();
        self.reached.clear();
        self.todo.clear();
        self.index.clear();
        self.objs.shrink_to(KEEP);
        self.cleared.shrink_to(KEEP);
        self.refs.shrink_to(KEEP);
        self.reached.shrink_to(KEEP);
        self.todo.shrink_to(KEEP);
        self.index.shrink_to(KEEP);
    }

    /// Upgrades the live entries (dead ones leave the registry here) and indexes them.
    fn gather(&mut self, entries: &mut Vec<Tracked>, epoch: u64) {
        entries.retain(|t| match t.upgrade() {
            Some(v) => {
                self.add(v, epoch);
                true
            }
            None => false,
        });
    }

    /// Appends a candidate: its index, and its strong count minus our own handle.
    fn add(&mut self, v: Value, epoch: u64) {
        let i = self.objs.len() as u32;
        match super::gc_edges::id(&v) {
            Id::Header(h) => h.set(epoch, i),
            Id::Addr(a) => {
                self.index.insert(a, i);
            }
            Id::Other => {}
        }
        self.refs.push(strong_count(&v) - 1);
        self.objs.push(v);
    }

    /// Subtracts every reference between candidates from the external counts, and
    /// adds the immutable containers the candidates reference as it meets them (the
    /// first reference to one is the one that discovers it, so none is missed).
    fn subtract(&mut self, epoch: u64) {
        let mut found: Vec<Value> = Vec::new();
        let mut i = 0;
        while i < self.objs.len() {
            let (objs, refs, index) = (&self.objs, &mut self.refs, &mut self.index);
            let seen = children(&objs[i], &mut |c| {
                let j = match lookup(c, epoch, index) {
                    Some(j) => j,
                    None => match c {
                        Child::Value(x) if is_immutable(x) => {
                            let j = refs.len() as u32;
                            match super::gc_edges::id(x) {
                                Id::Header(h) => h.set(epoch, j),
                                Id::Addr(a) => {
                                    index.insert(a, j);
                                }
                                Id::Other => return,
                            }
                            found.push(x.clone());
                            refs.push(strong_count(x) - 1);
                            j
                        }
                        _ => return,
                    },
                };
                if let Some(r) = refs.get_mut(j as usize) {
                    *r -= 1;
                }
            });
            if !seen {
                self.refs[i] = OPAQUE;
            }
            self.objs.append(&mut found);
            i += 1;
        }
    }

    /// Marks everything reachable from the candidates referenced from outside.
    fn reach(&mut self, epoch: u64) {
        let n = self.objs.len();
        self.reached.clear();
        self.reached.resize(n, false);
        self.todo.clear();
        for (i, &r) in self.refs.iter().enumerate() {
            if r > 0 {
                self.reached[i] = true;
                self.todo.push(i as u32);
            }
        }
        let (objs, reached, todo, index) =
            (&self.objs, &mut self.reached, &mut self.todo, &self.index);
        while let Some(i) = todo.pop() {
            children(&objs[i as usize], &mut |c| {
                if let Some(j) = lookup(c, epoch, index) {
                    if let Some(seen) = reached.get_mut(j as usize) {
                        if !*seen {
                            *seen = true;
                            todo.push(j);
                        }
                    }
                }
            });
        }
    }

    /// Takes the mutable contents out of the unreachable candidates; returns how many
    /// there were.
    fn clear(&mut self) -> usize {
        let mut n = 0;
        for (v, &seen) in self.objs.iter().zip(&self.reached) {
            if !seen {
                clear_one(v, &mut self.cleared);
                n += 1;
            }
        }
        n
    }
}

/// The candidate index of a referenced object, if it is one.
#[inline]
fn lookup(c: Child<'_>, epoch: u64, index: &HashMap<usize, u32, FxBuild>) -> Option<u32> {
    match c.id() {
        Id::Header(h) => h.get(epoch),
        Id::Addr(a) if !index.is_empty() => index.get(&a).copied(),
        _ => None,
    }
}
