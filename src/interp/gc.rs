//! The cycle collector: trial deletion (CPython's algorithm) over weakly tracked containers.
//!
//! Reference counting frees everything but cycles (a micrograd node whose `_backward`
//! closure holds a cell that holds the node). Containers that can take part in a cycle
//! (lists, dicts, sets, instances, cells, classes, modules) register a `Weak` handle
//! when they are created; tuples, functions and bound methods (immutable: created after
//! their children) are found from the registered objects while collecting. A collection
//! over a set of candidates computes, for each, its strong count minus the references
//! coming from other candidates: whatever is left is held from outside (a frame slot, a
//! module, Rust code, an untracked or older object) and is a root. Everything reachable
//! from a root survives; the rest is garbage only cycles keep alive, and clearing its
//! mutable contents (every cycle passes through a list, dict, set, instance, cell, class
//! dict or module) lets reference counting free it. `gc_scan.rs` runs one collection,
//! `gc_edges.rs` is the object graph it walks.
//!
//! Instances, cells, functions, classes and modules carry a `GcHeader`: a collection
//! stamps its candidates' headers with its epoch and index, so finding a referenced
//! object among the candidates is one load and one compare (an object stamped by an
//! earlier collection is not a candidate); only lists, dicts, sets, tuples and bound
//! methods are looked up by address.
//!
//! The collector is conservative: a reference it cannot see counts as external, and an
//! object it cannot borrow is a root. It never frees anything a program can still reach.
//! Kiln runs no finalizers (`__del__` is an ordinary method that is never called).
//!
//! Collections are generational: the youngest generation is collected once the tracked
//! objects allocated minus those freed exceed `THRESHOLD0`; survivors move up a
//! generation; older generations are collected every `RATIO` younger collections (the
//! oldest only when it has grown by a quarter since its last collection).

use super::gc_scan::Scan;
use super::value::{CellObj, Class, DictMap, Instance, IterObj, ModuleObj, Value};
use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

/// Net tracked allocations that trigger a young collection. (CPython uses 700 and, since
/// 3.13, 2000; a young generation larger than a typical iteration's working set lets
/// most cyclic garbage die young, so each object is scanned about once.)
const THRESHOLD0: i64 = 8000;
/// Younger collections between two collections of the next generation.
const RATIO: u32 = 10;
/// Young-generation entries (mostly dead ones) that force a pruning collection even
/// when allocations and frees balance.
const MAX_YOUNG_ENTRIES: usize = 16 * THRESHOLD0 as usize;
const GENS: usize = 3;
/// How many of the youngest registry entries a freed container's address is looked for
/// among (`note_freed_at`).
const RECENT: usize = 8;

/// The collector's scratch field in an instance, cell, function, class or module: the
/// collection that last made it a candidate (its epoch) and its index there.
#[derive(Debug, Default)]
pub struct GcHeader {
    epoch: Cell<u64>,
    index: Cell<u32>,
}

impl GcHeader {
    /// The candidate index, if the object is a candidate of collection `epoch`.
    #[inline]
    pub(super) fn get(&self, epoch: u64) -> Option<u32> {
        (self.epoch.get() == epoch).then(|| self.index.get())
    }

    #[inline]
    pub(super) fn set(&self, epoch: u64, index: u32) {
        self.epoch.set(epoch);
        self.index.set(index);
    }
}

/// A weak handle on a tracked container.
pub(super) enum Tracked {
    List(Weak<RefCell<Vec<Value>>>),
    Dict(Weak<RefCell<DictMap>>),
    Set(Weak<RefCell<DictMap>>),
    Instance(Weak<Instance>),
    Cell(Weak<CellObj>),
    Class(Weak<Class>),
    Module(Weak<ModuleObj>),
    /// A generator (its frame can reference the generator itself).
    Gen(Weak<RefCell<IterObj>>),
}

impl Tracked {
    /// A strong handle as a value, if the object is still alive.
    pub(super) fn upgrade(&self) -> Option<Value> {
        Some(match self {
            Tracked::List(w) => Value::List(w.upgrade()?),
            Tracked::Dict(w) => Value::Dict(w.upgrade()?),
            Tracked::Set(w) => Value::Set(w.upgrade()?),
            Tracked::Instance(w) => Value::Instance(w.upgrade()?),
            Tracked::Cell(w) => Value::Cell(w.upgrade()?),
            Tracked::Class(w) => Value::Class(w.upgrade()?),
            Tracked::Module(w) => Value::Module(w.upgrade()?),
            Tracked::Gen(w) => Value::Iter(w.upgrade()?),
        })
    }

    /// The address of the object (its allocation, which the `Weak` keeps).
    fn addr(&self) -> usize {
        match self {
            Tracked::List(w) => w.as_ptr() as usize,
            Tracked::Dict(w) | Tracked::Set(w) => w.as_ptr() as usize,
            Tracked::Instance(w) => w.as_ptr() as usize,
            Tracked::Cell(w) => w.as_ptr() as usize,
            Tracked::Class(w) => w.as_ptr() as usize,
            Tracked::Module(w) => w.as_ptr() as usize,
            Tracked::Gen(w) => w.as_ptr() as usize,
        }
    }

    fn alive(&self) -> bool {
        match self {
            Tracked::List(w) => w.strong_count() > 0,
            Tracked::Dict(w) | Tracked::Set(w) => w.strong_count() > 0,
            Tracked::Instance(w) => w.strong_count() > 0,
            Tracked::Cell(w) => w.strong_count() > 0,
            Tracked::Class(w) => w.strong_count() > 0,
            Tracked::Module(w) => w.strong_count() > 0,
            Tracked::Gen(w) => w.strong_count() > 0,
        }
    }
}

/// Counters of the collector (for tests, debugging and embedding hosts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GcStats {
    /// Collections run, per generation (youngest first).
    pub collections: [u64; GENS],
    /// Objects freed by clearing unreachable cycles, in total.
    pub freed: u64,
}

struct Gc {
    gens: [Vec<Tracked>; GENS],
    /// Tracked objects allocated minus containers freed since the last young collection,
    /// never negative (the frees are counted where `Value`'s drop releases a container).
    net: i64,
    /// Collections of generation `g` since the last collection of generation `g + 1`.
    since: [u32; GENS],
    /// Objects moved into the oldest generation since its last collection, and its
    /// size after that collection (CPython's `long_lived_pending` / `_total`).
    pending_old: usize,
    total_old: usize,
    enabled: bool,
    collecting: bool,
    stats: GcStats,
    /// Containers freed since the registry was last pruned of dead entries.
    frees: usize,
    /// Counts collections; stamps the headers of each collection's candidates.
    epoch: u64,
    /// The buffers of a collection, kept between collections (taken while one runs).
    scan: Scan,
}

thread_local! {
    static GC: RefCell<Gc> = RefCell::new(Gc {
        gens: [Vec::new(), Vec::new(), Vec::new()],
        net: 0,
        since: [0; GENS],
        pending_old: 0,
        total_old: 0,
        enabled: true,
        collecting: false,
        stats: GcStats::default(),
        frees: 0,
        epoch: 0,
        scan: Scan::default(),
    });
}

/// Registers a new container; may run a collection (the new object is held by the
/// caller, so it is a root).
fn track(t: Tracked) {
    let due = GC.with(|g| {
        let Ok(mut g) = g.try_borrow_mut() else {
            return None;
        };
        g.gens[0].push(t);
        g.net += 1;
        g.prune();
        g.due()
    });
    if let Some(generation) = due {
        run(generation);
    }
}

pub fn track_list(rc: &Rc<RefCell<Vec<Value>>>) {
    track(Tracked::List(Rc::downgrade(rc)));
}

pub fn track_dict(rc: &Rc<RefCell<DictMap>>) {
    track(Tracked::Dict(Rc::downgrade(rc)));
}

pub fn track_set(rc: &Rc<RefCell<DictMap>>) {
    track(Tracked::Set(Rc::downgrade(rc)));
}

pub fn track_instance(rc: &Rc<Instance>) {
    track(Tracked::Instance(Rc::downgrade(rc)));
}

pub fn track_cell(rc: &Rc<CellObj>) {
    track(Tracked::Cell(Rc::downgrade(rc)));
}

pub fn track_class(rc: &Rc<Class>) {
    track(Tracked::Class(Rc::downgrade(rc)));
}

/// Tracks a generator object.
pub fn track_gen(rc: &Rc<RefCell<IterObj>>) {
    track(Tracked::Gen(Rc::downgrade(rc)));
}

/// Tracks a script module (its functions reference it back through their globals).
pub fn track_module(rc: &Rc<ModuleObj>) {
    track(Tracked::Module(Rc::downgrade(rc)));
}

/// Notes that reference counting freed a container. The balance never goes below zero
/// (as in CPython): the frees of a collection's own garbage, or of objects older than
/// the last collection, must not postpone the next one (they did, by more than the
/// collection freed, and the young generation grew to `MAX_YOUNG_ENTRIES`).
#[inline]
pub fn note_freed() {
    GC.with(|g| {
        if let Ok(mut g) = g.try_borrow_mut() {
            if g.net > 0 {
                g.net -= 1;
            }
            g.frees = g.frees.saturating_add(1);
        }
    });
}

/// `note_freed` for the tracked container at `addr`, whose last reference is being
/// dropped: when it is among the youngest few registry entries (a temporary list,
/// dict or instance), the entry goes now, so that dropping the reference frees the
/// allocation at once (a dead entry's `Weak` keeps it until the next pruning, and
/// thousands of such blocks defeat the allocator's per-size caches). Addresses are
/// unambiguous: an entry's `Weak` keeps its allocation, so no other object has it.
#[inline]
pub fn note_freed_at(addr: usize) {
    GC.with(|g| {
        if let Ok(mut g) = g.try_borrow_mut() {
            if g.net > 0 {
                g.net -= 1;
            }
            if !g.forget_recent(addr) {
                g.frees = g.frees.saturating_add(1);
            }
        }
    });
}

/// Runs a full collection now (all generations); returns how many objects it freed.
pub fn collect() -> usize {
    run(GENS - 1)
}

/// Turns automatic collections on or off (`collect` always runs; for tests: `internals`).
#[cfg(feature = "internals")]
pub fn set_enabled(on: bool) {
    GC.with(|g| {
        if let Ok(mut g) = g.try_borrow_mut() {
            g.enabled = on;
        }
    });
}

/// The collector's counters (for tests: `internals`).
#[cfg(feature = "internals")]
pub fn stats() -> GcStats {
    GC.with(|g| g.try_borrow().map(|g| g.stats).unwrap_or_default())
}

/// How many entries the registry holds, dead ones (not yet pruned) included: what a
/// full collection would scan (for tests: `internals`).
#[cfg(feature = "internals")]
pub fn registered() -> usize {
    GC.with(|g| {
        g.try_borrow()
            .map(|g| g.gens.iter().map(Vec::len).sum())
            .unwrap_or(0)
    })
}

/// How many tracked objects are alive (a walk over the registry: for tests and
/// debugging, not for hot paths: `internals`).
#[cfg(feature = "internals")]
pub fn live_objects() -> usize {
    GC.with(|g| {
        g.try_borrow()
            .map(|g| g.gens.iter().flatten().filter(|t| t.alive()).count())
            .unwrap_or(0)
    })
}

/// Approximate bytes held by the live tracked containers, for the memory limit (a walk
/// over the registry, run only when the growth counter passes the cap): list buffers,
/// dict and set entries, module globals, instance attributes and cells, and the strings
/// and tuples they hold (each counted once). A container borrowed right now (the one
/// being grown) is skipped; the caller adds it. `extra` is counted with the rest: the
/// items of a list under construction, or the interpreter's value stack (the locals of
/// every running frame, see `containers::remeasure_roots`).
pub fn live_container_bytes(extra: &[Value]) -> usize {
    use super::containers::MAP_ENTRY_BYTES;
    const SLOT: usize = std::mem::size_of::<Value>();
    let mut seen = std::collections::HashSet::new();
    let mut held = |v: &Value| -> usize {
        match v {
            Value::Str(s) if s.len() >= 16 && seen.insert(s.as_ptr() as usize) => s.len(),
            Value::Tuple(t) if !t.is_empty() && seen.insert(t.as_ptr() as usize) => {
                t.len() * SLOT
                    + t.iter()
                        .map(|x| match x {
                            Value::Str(s) => s.len(),
                            _ => 0,
                        })
                        .sum::<usize>()
            }
            _ => 0,
        }
    };
    GC.with(|g| {
        let Ok(g) = g.try_borrow() else {
            return 0;
        };
        let mut total: usize = extra.iter().map(&mut held).sum();
        for t in g.gens.iter().flatten() {
            total += match t {
                Tracked::List(w) => w.upgrade().map_or(0, |l| match l.try_borrow() {
                    Ok(v) => v.capacity() * SLOT + v.iter().map(&mut held).sum::<usize>(),
                    Err(_) => 0,
                }),
                Tracked::Dict(w) | Tracked::Set(w) => {
                    w.upgrade().map_or(0, |d| match d.try_borrow() {
                        Ok(m) => {
                            m.capacity() * MAP_ENTRY_BYTES
                                + m.iter().map(|(k, x)| held(&k.0) + held(x)).sum::<usize>()
                        }
                        Err(_) => 0,
                    })
                }
                Tracked::Instance(w) => w
                    .upgrade()
                    .and_then(|i| {
                        i.attrs.try_borrow().ok().map(|m| {
                            let mut n = m.len() * MAP_ENTRY_BYTES;
                            m.for_each_held(|x| n += held(x));
                            n
                        })
                    })
                    .unwrap_or(0),
                Tracked::Cell(w) => w
                    .upgrade()
                    .and_then(|c| c.try_borrow().ok().map(|v| held(&v)))
                    .unwrap_or(0),
                Tracked::Module(w) => w
                    .upgrade()
                    .and_then(|m| {
                        m.slots.try_borrow().ok().map(|v| {
                            v.len() * MAP_ENTRY_BYTES + v.iter().map(&mut held).sum::<usize>()
                        })
                    })
                    .unwrap_or(0),
                // a suspended generator's frame: its slots and the iterator it
                // delegates to (a running one's slots are on the value stack)
                Tracked::Gen(w) => w
                    .upgrade()
                    .and_then(|it| match it.try_borrow().as_deref() {
                        Ok(IterObj::Gen(gen)) => gen.inner.try_borrow().ok().map(|inner| {
                            inner.slots.len() * SLOT
                                + inner.slots.iter().map(&mut held).sum::<usize>()
                                + inner.delegate.iter().map(&mut held).sum::<usize>()
                        }),
                        _ => None,
                    })
                    .unwrap_or(0),
                Tracked::Class(_) => 0,
            };
        }
        total
    })
}

impl Gc {
    /// Drops the registry entries of dead objects once the containers freed since the
    /// last pruning are more than half the entries (and more than `THRESHOLD0`): a dead
    /// entry's `Weak` keeps the object's allocation, and objects promoted by a collection
    /// mostly die by reference counting long before their generation is collected
    /// again. Amortized O(1) per free; dead entries stay about as few as live ones.
    fn prune(&mut self) {
        if self.collecting {
            return;
        }
        let held: usize = self.gens.iter().map(Vec::len).sum();
        if self.frees <= (held / 2).max(THRESHOLD0 as usize) {
            return;
        }
        self.frees = 0;
        for g in self.gens.iter_mut() {
            g.retain(Tracked::alive);
        }
    }

    /// Removes the entry of the object at `addr` if it is one of the `RECENT` youngest
    /// (see `note_freed_at`); true when it did. The young generation's order does not
    /// matter (a collection takes its entries as a set).
    fn forget_recent(&mut self, addr: usize) -> bool {
        if self.collecting {
            return false;
        }
        let young = &mut self.gens[0];
        let lo = young.len().saturating_sub(RECENT);
        match young[lo..].iter().rposition(|t| t.addr() == addr) {
            Some(i) => {
                young.swap_remove(lo + i);
                true
            }
            None => false,
        }
    }

    /// The oldest generation due for collection, if any.
    fn due(&mut self) -> Option<usize> {
        if !self.enabled || self.collecting {
            return None;
        }
        if self.net <= THRESHOLD0 && self.gens[0].len() <= MAX_YOUNG_ENTRIES {
            return None;
        }
        if self.since[1] >= RATIO && self.pending_old > self.total_old / 4 {
            return Some(2);
        }
        if self.since[0] >= RATIO {
            return Some(1);
        }
        Some(0)
    }

    /// Bookkeeping before collecting `generation` (and all younger ones): the entries to
    /// scan, the scratch buffers and the collection's epoch.
    fn start(&mut self, generation: usize) -> (Vec<Tracked>, Scan, u64) {
        self.collecting = true;
        self.net = 0;
        self.epoch += 1;
        self.stats.collections[generation] += 1;
        for g in 0..GENS {
            if g < generation {
                self.since[g] = 0;
            }
        }
        if generation + 1 < GENS {
            self.since[generation] += 1;
        } else {
            self.pending_old = 0;
        }
        let mut all = std::mem::take(&mut self.gens[generation]);
        for g in (0..generation).rev() {
            all.append(&mut self.gens[g]);
        }
        (all, std::mem::take(&mut self.scan), self.epoch)
    }

    /// Bookkeeping after a collection: survivors join the next generation.
    fn finish(&mut self, generation: usize, mut survivors: Vec<Tracked>, scan: Scan) {
        let next = (generation + 1).min(GENS - 1);
        if next == GENS - 1 {
            if generation == GENS - 1 {
                self.total_old = survivors.len();
            } else {
                self.pending_old += survivors.len();
            }
        }
        if self.gens[next].is_empty() {
            std::mem::swap(&mut self.gens[next], &mut survivors);
        } else {
            self.gens[next].append(&mut survivors);
        }
        // the emptied buffer keeps its capacity for the young generation
        if self.gens[0].is_empty() && self.gens[0].capacity() < survivors.capacity() {
            self.gens[0] = survivors;
        }
        self.scan = scan;
        self.collecting = false;
    }
}

/// Collects `generation` and the younger ones; returns how many objects were freed.
fn run(generation: usize) -> usize {
    let Some((mut entries, mut scan, epoch)) = GC.with(|g| {
        let mut g = g.try_borrow_mut().ok()?;
        if g.collecting {
            return None;
        }
        Some(g.start(generation))
    }) else {
        return 0;
    };
    let freed = scan.collect(&mut entries, epoch);
    scan.release();
    GC.with(|g| {
        if let Ok(mut g) = g.try_borrow_mut() {
            g.stats.freed += freed as u64;
            g.finish(generation, entries, scan);
        }
    });
    freed
}
