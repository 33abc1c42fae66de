//! The cycle collector: trial deletion (CPython's algorithm) over weakly tracked containers.
//!
//! Reference counting frees everything but cycles (a micrograd node whose `_backward`
//! closure holds a cell that holds the node). Containers that can take part in a cycle
//! (lists, tuples, dicts, sets, instances, functions, cells, bound methods, classes,
//! modules)
//! register a `Weak` handle when they are created. A collection over a set of tracked
//! objects computes, for each, its strong count minus the references coming from other
//! objects in the set: whatever is left is held from outside (a frame slot, a module,
//! Rust code, an untracked or older object) and is a root. Everything reachable from a
//! root survives; the rest is garbage only cycles keep alive, and clearing its mutable
//! contents (every cycle passes through a list, dict, set, instance, cell, class dict or
//! module: immutable objects are created after their children) lets reference counting
//! free it.
//!
//! The collector is conservative: a reference it cannot see counts as external, and an
//! object it cannot borrow is a root. It never frees anything a program can still reach.
//! Kiln runs no finalizers (`__del__` is an ordinary method that is never called).
//!
//! Collections are generational: the youngest generation is collected once the tracked
//! objects allocated minus those freed exceed `THRESHOLD0`; survivors move up a
//! generation; older generations are collected every `RATIO` younger collections (the
//! oldest only when it has grown by a quarter since its last collection).

use super::value::{Class, DictMap, Instance, ModuleObj, Value};
use std::cell::RefCell;
use std::collections::HashMap;
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

/// A weak handle on a tracked container.
enum Tracked {
    List(Weak<RefCell<Vec<Value>>>),
    Dict(Weak<RefCell<DictMap>>),
    Set(Weak<RefCell<DictMap>>),
    Instance(Weak<Instance>),
    Cell(Weak<RefCell<Value>>),
    Class(Weak<Class>),
    Module(Weak<ModuleObj>),
}

impl Tracked {
    /// A strong handle as a value, if the object is still alive.
    fn upgrade(&self) -> Option<Value> {
        Some(match self {
            Tracked::List(w) => Value::List(w.upgrade()?),
            Tracked::Dict(w) => Value::Dict(w.upgrade()?),
            Tracked::Set(w) => Value::Set(w.upgrade()?),
            Tracked::Instance(w) => Value::Instance(w.upgrade()?),
            Tracked::Cell(w) => Value::Cell(w.upgrade()?),
            Tracked::Class(w) => Value::Class(w.upgrade()?),
            Tracked::Module(w) => Value::Module(w.upgrade()?),
        })
    }

    fn alive(&self) -> bool {
        match self {
            Tracked::List(w) => w.strong_count() > 0,
            Tracked::Dict(w) | Tracked::Set(w) => w.strong_count() > 0,
            Tracked::Instance(w) => w.strong_count() > 0,
            Tracked::Cell(w) => w.strong_count() > 0,
            Tracked::Class(w) => w.strong_count() > 0,
            Tracked::Module(w) => w.strong_count() > 0,
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
    /// Tracked objects allocated minus tracked containers freed since the last young
    /// collection (the frees are counted where `Value`'s drop releases a container).
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

pub fn track_cell(rc: &Rc<RefCell<Value>>) {
    track(Tracked::Cell(Rc::downgrade(rc)));
}

pub fn track_class(rc: &Rc<Class>) {
    track(Tracked::Class(Rc::downgrade(rc)));
}

/// Tracks a script module (its functions reference it back through their globals).
pub fn track_module(rc: &Rc<ModuleObj>) {
    track(Tracked::Module(Rc::downgrade(rc)));
}

/// Notes that reference counting freed a tracked kind of container.
#[inline]
pub fn note_freed() {
    GC.with(|g| {
        if let Ok(mut g) = g.try_borrow_mut() {
            g.net -= 1;
        }
    });
}

/// Runs a full collection now (all generations); returns how many objects it freed.
pub fn collect() -> usize {
    run(GENS - 1)
}

/// Turns automatic collections on or off (`collect` always runs).
pub fn set_enabled(on: bool) {
    GC.with(|g| {
        if let Ok(mut g) = g.try_borrow_mut() {
            g.enabled = on;
        }
    });
}

pub fn stats() -> GcStats {
    GC.with(|g| g.try_borrow().map(|g| g.stats).unwrap_or_default())
}

/// How many tracked objects are alive (a walk over the registry: for tests and
/// debugging, not for hot paths).
pub fn live_objects() -> usize {
    GC.with(|g| {
        g.try_borrow()
            .map(|g| g.gens.iter().flatten().filter(|t| t.alive()).count())
            .unwrap_or(0)
    })
}

impl Gc {
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

    /// Bookkeeping before collecting `generation` (and all younger ones).
    fn start(&mut self, generation: usize) -> Vec<Tracked> {
        self.collecting = true;
        self.net = 0;
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
        let mut all = Vec::new();
        for g in (0..=generation).rev() {
            all.append(&mut self.gens[g]);
        }
        all
    }

    /// Bookkeeping after a collection: survivors join the next generation.
    fn finish(&mut self, generation: usize, survivors: Vec<Tracked>, freed: usize) {
        let next = (generation + 1).min(GENS - 1);
        if next == GENS - 1 {
            if generation == GENS - 1 {
                self.total_old = survivors.len();
            } else {
                self.pending_old += survivors.len();
            }
        }
        self.gens[next].extend(survivors);
        self.stats.freed += freed as u64;
        self.collecting = false;
    }
}

/// Collects `generation` and the younger ones; returns how many objects were freed.
fn run(generation: usize) -> usize {
    let Some(entries) = GC.with(|g| {
        let mut g = g.try_borrow_mut().ok()?;
        if g.collecting {
            return None;
        }
        Some(g.start(generation))
    }) else {
        return 0;
    };
    let mut set = Candidates::new(entries);
    let garbage = set.find_garbage();
    let freed = garbage.len();
    let cleared = set.clear(&garbage);
    let survivors = set.survivors(&garbage);
    drop(set);
    drop(cleared);
    GC.with(|g| {
        if let Ok(mut g) = g.try_borrow_mut() {
            g.finish(generation, survivors, freed);
        }
    });
    freed
}

/// The objects of one collection, held strongly while it runs.
struct Candidates {
    entries: Vec<Tracked>,
    objs: Vec<Value>,
    index: HashMap<usize, u32, super::value::FxBuild>,
}

impl Candidates {
    /// Upgrades the live entries (dead ones are dropped from the registry here).
    fn new(entries: Vec<Tracked>) -> Candidates {
        let mut live = Vec::with_capacity(entries.len());
        let mut objs = Vec::with_capacity(entries.len());
        for t in entries {
            if let Some(v) = t.upgrade() {
                live.push(t);
                objs.push(v);
            }
        }
        let mut index = HashMap::with_capacity_and_hasher(objs.len(), Default::default());
        for (i, v) in objs.iter().enumerate() {
            index.insert(v.ptr_id(), i as u32);
        }
        let mut set = Candidates {
            entries: live,
            objs,
            index,
        };
        set.discover();
        set
    }

    /// Adds the immutable containers the candidates reach through other immutable ones
    /// (after the registered objects, so `entries[i]` still belongs to `objs[i]`).
    fn discover(&mut self) {
        let mut i = 0;
        while let Some(v) = self.objs.get(i).cloned() {
            let (objs, index) = (&mut self.objs, &mut self.index);
            children(&v, &mut |c| {
                if let Child::Value(x) = c {
                    if is_immutable(x) && !index.contains_key(&x.ptr_id()) {
                        index.insert(x.ptr_id(), objs.len() as u32);
                        objs.push(x.clone());
                    }
                }
            });
            i += 1;
        }
    }

    /// Indices of the objects no root reaches, ascending.
    fn find_garbage(&self) -> Vec<usize> {
        let n = self.objs.len();
        // references from outside the set: strong count, minus our own handle, minus
        // every edge from another candidate
        let mut refs: Vec<i64> = self.objs.iter().map(|v| strong_count(v) - 1).collect();
        let mut opaque = vec![false; n];
        for (i, v) in self.objs.iter().enumerate() {
            let seen = children(v, &mut |c| {
                if let Some(&j) = c.addr().and_then(|a| self.index.get(&a)) {
                    refs[j as usize] -= 1;
                }
            });
            opaque[i] = !seen;
        }
        let mut reached = vec![false; n];
        let mut todo: Vec<usize> = (0..n).filter(|&i| refs[i] > 0 || opaque[i]).collect();
        for &i in &todo {
            reached[i] = true;
        }
        while let Some(i) = todo.pop() {
            children(&self.objs[i], &mut |c| {
                if let Some(&j) = c.addr().and_then(|a| self.index.get(&a)) {
                    let j = j as usize;
                    if !reached[j] {
                        reached[j] = true;
                        todo.push(j);
                    }
                }
            });
        }
        (0..n).filter(|&i| !reached[i]).collect()
    }

    /// Takes the mutable contents out of the garbage objects (returned, to be dropped
    /// once no borrow is held).
    fn clear(&self, garbage: &[usize]) -> Vec<Value> {
        let mut out = Vec::new();
        for &i in garbage {
            if let Some(v) = self.objs.get(i) {
                clear_one(v, &mut out);
            }
        }
        out
    }

    /// The registry entries of the objects that survived.
    fn survivors(&mut self, garbage: &[usize]) -> Vec<Tracked> {
        let mut dead = garbage.iter().copied().peekable();
        let mut keep = Vec::with_capacity(self.entries.len());
        for (i, t) in std::mem::take(&mut self.entries).into_iter().enumerate() {
            if dead.peek() == Some(&i) {
                dead.next();
            } else {
                keep.push(t);
            }
        }
        keep
    }
}

/// An immutable container (tuple, function, bound method): not registered (a `Weak`
/// handle would stop `Value`'s drop from taking its children out, and deep nests would
/// then be freed by recursion), but found from the registered objects while collecting.
fn is_immutable(v: &Value) -> bool {
    matches!(v, Value::Tuple(_) | Value::Func(_) | Value::BoundMethod(_))
}

fn strong_count(v: &Value) -> i64 {
    let n = match v {
        Value::List(rc) => Rc::strong_count(rc),
        Value::Tuple(rc) => Rc::strong_count(rc),
        Value::Dict(rc) | Value::Set(rc) => Rc::strong_count(rc),
        Value::Instance(rc) => Rc::strong_count(rc),
        Value::Func(rc) => Rc::strong_count(rc),
        Value::Cell(rc) => Rc::strong_count(rc),
        Value::BoundMethod(rc) => Rc::strong_count(rc),
        Value::Class(rc) => Rc::strong_count(rc),
        Value::Module(rc) => Rc::strong_count(rc),
        _ => 1,
    };
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The address of a value of a kind the collector tracks (none for scalars, strings and
/// other objects, which need no lookup).
#[inline]
fn addr(v: &Value) -> Option<usize> {
    match v {
        Value::List(_)
        | Value::Tuple(_)
        | Value::Dict(_)
        | Value::Set(_)
        | Value::Instance(_)
        | Value::Func(_)
        | Value::Cell(_)
        | Value::BoundMethod(_)
        | Value::Class(_)
        | Value::Module(_) => Some(v.ptr_id()),
        _ => None,
    }
}

/// Reports the address of every tracked kind of object `v` holds a strong reference to
/// (values, closure cells, classes, a function's module). Returns false when `v` is mutably borrowed right now and its
/// contents cannot be seen (the caller then treats it as a root).
fn children(v: &Value, f: &mut impl for<'b> FnMut(Child<'b>)) -> bool {
    match v {
        Value::List(rc) => match rc.try_borrow() {
            Ok(items) => items.iter().for_each(|x| report(x, f)),
            Err(_) => return false,
        },
        Value::Tuple(rc) => rc.iter().for_each(|x| report(x, f)),
        Value::Dict(rc) | Value::Set(rc) => match rc.try_borrow() {
            Ok(m) => m.iter().for_each(|(k, x)| {
                report(&k.0, f);
                report(x, f);
            }),
            Err(_) => return false,
        },
        Value::Instance(inst) => {
            f(Child::Addr(Rc::as_ptr(&inst.class) as usize));
            match inst.dict.try_borrow() {
                Ok(d) => d.values().for_each(|x| report(x, f)),
                Err(_) => return false,
            }
        }
        Value::Func(func) => {
            func.defaults.iter().for_each(|x| report(x, f));
            func.kwdefaults.iter().flatten().for_each(|x| report(x, f));
            func.closure
                .iter()
                .for_each(|c| f(Child::Addr(Rc::as_ptr(c) as usize)));
            f(Child::Addr(Rc::as_ptr(&func.globals) as usize));
        }
        Value::Cell(rc) => match rc.try_borrow() {
            Ok(x) => report(&x, f),
            Err(_) => return false,
        },
        Value::BoundMethod(pair) => {
            report(&pair.0, f);
            report(&pair.1, f);
        }
        Value::Class(c) => {
            if let Some(b) = &c.base {
                f(Child::Addr(Rc::as_ptr(b) as usize));
            }
            match c.dict.try_borrow() {
                Ok(d) => d.values().for_each(|x| report(x, f)),
                Err(_) => return false,
            }
        }
        Value::Module(m) => match m.slots.try_borrow() {
            Ok(slots) => slots.iter().for_each(|x| report(x, f)),
            Err(_) => return false,
        },
        _ => {}
    }
    true
}

/// Reports `x` if it is a kind of object a collection can include.
#[inline]
fn report(x: &Value, f: &mut impl for<'b> FnMut(Child<'b>)) {
    if addr(x).is_some() {
        f(Child::Value(x))
    }
}

/// One strong reference an object holds: a value, or a closure cell, class or module.
#[derive(Clone, Copy)]
enum Child<'a> {
    Value(&'a Value),
    Addr(usize),
}

impl Child<'_> {
    #[inline]
    fn addr(self) -> Option<usize> {
        match self {
            Child::Value(v) => addr(v),
            Child::Addr(a) => Some(a),
        }
    }
}

/// Moves the mutable contents of an unreachable object into `out`.
fn clear_one(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::List(rc) => {
            if let Ok(mut items) = rc.try_borrow_mut() {
                out.append(&mut items);
            }
        }
        Value::Dict(rc) | Value::Set(rc) => {
            if let Ok(mut m) = rc.try_borrow_mut() {
                for (k, x) in std::mem::take(&mut *m) {
                    out.push(k.0);
                    out.push(x);
                }
            }
        }
        Value::Instance(inst) => {
            if let Ok(mut d) = inst.dict.try_borrow_mut() {
                out.extend(std::mem::take(&mut *d).into_values());
            }
        }
        Value::Cell(rc) => {
            if let Ok(mut x) = rc.try_borrow_mut() {
                out.push(std::mem::replace(&mut *x, Value::Unbound));
            }
        }
        Value::Class(c) => {
            if let Ok(mut d) = c.dict.try_borrow_mut() {
                out.extend(std::mem::take(&mut *d).into_values());
            }
        }
        Value::Module(m) => {
            if let Ok(mut slots) = m.slots.try_borrow_mut() {
                for x in slots.iter_mut() {
                    out.push(std::mem::replace(x, Value::Unbound));
                }
            }
        }
        _ => {}
    }
}
