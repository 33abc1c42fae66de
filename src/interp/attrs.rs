//! Instance attribute storage: shared layouts ("hidden classes") mapping attribute names
//! to slots, a value vector per instance, and the live `__dict__` an instance switches
//! to once a program asks for it.
//!
//! A [`Layout`] is the ordered list of an instance's attribute names. Instances whose
//! attributes were added in the same order share one layout: adding an attribute moves
//! the instance along a memoized transition to the child layout. Layouts form a tree
//! per class hierarchy (a class without a user base gets a fresh root; a subclass shares
//! its base's root, so subclass instances that run `super().__init__` first share the
//! base's layouts). Each layout has a unique id; an attribute site remembers
//! (layout id -> slot) in its [`AttrHint`], so a load at a monomorphic site is one
//! comparison and an indexed read, and a miss is remembered too (method calls look at the
//! instance first).
//!
//! An instance falls back to a real dict (its [`Attrs::Dict`], a tracked `dict` object)
//! when a program reads `obj.__dict__` / `vars(obj)` (so that writes through the dict are
//! the object's attributes, as in CPython), or when a layout tree grows past its limits
//! (many attributes, many distinct orders): a bounded number of layouts per tree.

use super::value::{Class, DictMap, FxBuild, Instance, Key, Value};
use indexmap::Equivalent;
use smallvec::SmallVec;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::rc::Rc;

/// Values stored inside the instance itself (no separate allocation).
const INLINE: usize = 4;
/// Name count above which a layout's lookups go through a hash index.
const INDEXED: usize = 16;
/// The most attributes an instance keeps in a layout (more: a dict).
const MAX_SLOTS: usize = 64;
/// The most layouts one tree (class hierarchy) creates (more: new orders get dicts).
const MAX_LAYOUTS: u32 = 4096;
/// The slot an [`AttrHint`] records for a name its layout does not hold.
const ABSENT: u32 = u32::MAX;

thread_local! {
    static NEXT_ID: Cell<u64> = const { Cell::new(1) };
}

/// An ordered list of attribute names shared by instances (see the module doc).
#[derive(Debug)]
pub struct Layout {
    /// Unique for the thread's lifetime (never reused, unlike an address); never 0.
    id: u64,
    names: Box<[Rc<str>]>,
    /// Name -> slot, only for layouts of more than `INDEXED` names.
    index: Option<HashMap<Rc<str>, u32, FxBuild>>,
    /// The memoized transitions: the layout after adding each name.
    next: RefCell<Vec<(Rc<str>, Rc<Layout>)>>,
    /// How many layouts this layout's tree holds (shared by the tree).
    count: Rc<Cell<u32>>,
}

/// True when `k` names the same attribute as `name`.
#[inline(always)]
fn same(k: &Rc<str>, name: &str) -> bool {
    k.len() == name.len() && (std::ptr::eq(k.as_ptr(), name.as_ptr()) || **k == *name)
}

impl Layout {
    /// The empty layout at the root of a new tree.
    pub fn root() -> Rc<Layout> {
        Layout::make(Box::new([]), Rc::new(Cell::new(1)))
    }

    fn make(names: Box<[Rc<str>]>, count: Rc<Cell<u32>>) -> Rc<Layout> {
        let id = NEXT_ID.with(|n| {
            let id = n.get();
            n.set(id + 1);
            id
        });
        let index = (names.len() > INDEXED).then(|| {
            let ix = names.iter().enumerate();
            ix.map(|(i, k)| (k.clone(), i as u32)).collect()
        });
        Rc::new(Layout {
            id,
            names,
            index,
            next: RefCell::new(Vec::new()),
            count,
        })
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The slot of `name`, if this layout holds it.
    #[inline]
    pub fn position(&self, name: &str) -> Option<usize> {
        if let Some(ix) = &self.index {
            return ix.get(name).map(|&i| i as usize);
        }
        self.names.iter().position(|k| same(k, name))
    }

    /// The memoized child layout for adding `name` (not held here), if made before.
    #[inline]
    fn known_child(&self, name: &Rc<str>) -> Option<Rc<Layout>> {
        let next = self.next.borrow();
        let hit = next.iter().find(|(k, _)| Rc::ptr_eq(k, name));
        hit.or_else(|| next.iter().find(|(k, _)| same(k, name)))
            .map(|(_, l)| l.clone())
    }

    /// The layout after adding `name` (not held here), or `None` past the limits.
    fn child(&self, name: &Rc<str>) -> Option<Rc<Layout>> {
        if let Some(l) = self.known_child(name) {
            return Some(l);
        }
        if self.names.len() >= MAX_SLOTS || self.count.get() >= MAX_LAYOUTS {
            return None;
        }
        self.count.set(self.count.get() + 1);
        let names = self.names.iter().cloned().chain([name.clone()]).collect();
        let l = Layout::make(names, self.count.clone());
        self.next.borrow_mut().push((name.clone(), l.clone()));
        Some(l)
    }
}

/// The (layout id -> slot) memo of one attribute site (load, store or method call): valid
/// for the one name of its site only. It keeps the last two layouts seen, so a site that
/// sees instances of two classes (or two attribute orders) in turn stays on the fast path.
#[derive(Debug, Default)]
pub struct AttrHint {
    layout: Cell<u64>,
    slot: Cell<u32>,
    /// The layout seen before `layout` (0: none), and its slot.
    layout2: Cell<u64>,
    slot2: Cell<u32>,
}

impl AttrHint {
    #[inline(always)]
    fn set(&self, layout: &Layout, slot: Option<usize>) {
        if self.layout.get() != layout.id {
            self.layout2.set(self.layout.get());
            self.slot2.set(self.slot.get());
        }
        self.layout.set(layout.id);
        let slot = slot.and_then(|s| u32::try_from(s).ok());
        self.slot.set(slot.unwrap_or(ABSENT));
    }

    /// The slot of this site's name in a layout the hint does not know, when it is one
    /// of the slots the site saw it at in other layouts: sibling layouts (subclasses
    /// whose `__init__` runs the base's first) hold the base's attributes at the same
    /// slots, so a site that sees more than two of them finds the slot without a scan.
    #[inline]
    fn guess(&self, layout: &Layout, name: &str) -> Option<usize> {
        [self.slot.get(), self.slot2.get()]
            .into_iter()
            .map(|s| s as usize)
            .find(|&s| layout.names.get(s).is_some_and(|k| same(k, name)))
    }

    /// The slot this site remembers for `layout` (`ABSENT` for a name it does not hold).
    #[inline(always)]
    fn slot_for(&self, layout: &Layout) -> Option<u32> {
        if self.layout.get() == layout.id {
            Some(self.slot.get())
        } else if self.layout2.get() == layout.id {
            Some(self.slot2.get())
        } else {
            None
        }
    }
}

impl AttrHint {
    /// A global name load site (which no attribute access shares): the position of its
    /// builtin in the builtin table, as remembered by [`AttrHint::set_position`].
    #[inline(always)]
    pub fn position(&self) -> Option<usize> {
        (self.layout.get() == 0 && self.slot.get() != 0).then(|| self.slot.get() as usize - 1)
    }

    /// Remembers `pos` at a global name load site (see [`AttrHint::position`]).
    pub fn set_position(&self, pos: usize) {
        if let Ok(p) = u32::try_from(pos + 1) {
            self.slot.set(p);
        }
    }
}

/// True when `k` names the same attribute as `name` (for a remembered position).
#[inline(always)]
pub fn same_name(k: &Rc<str>, name: &str) -> bool {
    same(k, name)
}

/// Looks a `str` key up in a dict without building a `Value` (hashes as `Value::Str`).
struct StrKey<'a>(&'a str);

impl Hash for StrKey<'_> {
    fn hash<H: Hasher>(&self, h: &mut H) {
        h.write_i64(super::pyhash::str(self.0))
    }
}

impl Equivalent<Key> for StrKey<'_> {
    fn equivalent(&self, k: &Key) -> bool {
        matches!(&k.0, Value::Str(s) if **s == *self.0)
    }
}

/// What a hinted load found among an instance's own attributes.
#[derive(Debug)]
pub enum Own {
    Hit(Value),
    /// Not an attribute of its own: look in its class chain.
    Miss,
    /// A dict instance: ask `Interp::get_attr` (a property then wins over the dict).
    Dict,
}

/// An instance's attributes.
#[derive(Debug)]
pub enum Attrs {
    /// The values of `layout`'s names, slot by slot.
    Shaped {
        layout: Rc<Layout>,
        values: SmallVec<[Value; INLINE]>,
    },
    /// A `dict` object (`Value::Dict`) holding the attributes, shared with the program
    /// once it read `__dict__`; any other value: no attributes (a collected instance).
    Dict(Value),
}

impl Default for Attrs {
    /// No attributes and no layout (what a cleared instance is left with).
    fn default() -> Attrs {
        Attrs::Dict(Value::None)
    }
}

impl Attrs {
    /// No attributes yet, at the root of `root`'s tree.
    pub fn new(root: &Rc<Layout>) -> Attrs {
        Attrs::Shaped {
            layout: root.clone(),
            values: SmallVec::new(),
        }
    }

    /// `name`'s value, through a site's hint.
    #[inline]
    pub fn load(&self, name: &Rc<str>, hint: &AttrHint) -> Own {
        if let Attrs::Shaped { layout, values } = self {
            if let Some(slot) = hint.slot_for(layout) {
                return match values.get(slot as usize) {
                    Some(v) => Own::Hit(v.fast_clone()),
                    None => Own::Miss,
                };
            }
        }
        self.load_miss(name, hint)
    }

    #[inline(never)]
    fn load_miss(&self, name: &str, hint: &AttrHint) -> Own {
        let Attrs::Shaped { layout, values } = self else {
            return Own::Dict;
        };
        let pos = hint.guess(layout, name).or_else(|| layout.position(name));
        hint.set(layout, pos);
        match pos.and_then(|p| values.get(p)) {
            Some(v) => Own::Hit(v.clone()),
            None => Own::Miss,
        }
    }

    /// True for a dict instance (see [`Own::Dict`]).
    pub fn is_dict(&self) -> bool {
        matches!(self, Attrs::Dict(_))
    }

    /// `name`'s value.
    pub fn get(&self, name: &str) -> Option<Value> {
        match self {
            Attrs::Shaped { layout, values } => values.get(layout.position(name)?).cloned(),
            Attrs::Dict(Value::Dict(d)) => d.borrow().get(&StrKey(name)).cloned(),
            Attrs::Dict(_) => None,
        }
    }

    /// True when `name` is set.
    pub fn contains(&self, name: &str) -> bool {
        match self {
            Attrs::Shaped { layout, .. } => layout.position(name).is_some(),
            Attrs::Dict(Value::Dict(d)) => d.borrow().contains_key(&StrKey(name)),
            Attrs::Dict(_) => false,
        }
    }

    /// Replaces an existing attribute through a site's hint: gives `v` back when the
    /// site's hint does not apply (then call [`Attrs::set`]).
    #[inline]
    pub fn replace_hinted(&mut self, hint: &AttrHint, v: Value) -> Result<Value, Value> {
        if let Attrs::Shaped { layout, values } = self {
            if let Some(slot) = hint.slot_for(layout) {
                if let Some(slot) = values.get_mut(slot as usize) {
                    return Ok(std::mem::replace(slot, v));
                }
            }
        }
        Err(v)
    }

    /// Sets `name` to `v`, remembering where in `hint`; returns the value replaced.
    pub fn set_hinted(&mut self, name: &Rc<str>, v: Value, hint: &AttrHint) -> Option<Value> {
        if let Attrs::Shaped { layout, values } = self {
            // a new attribute along a known transition (no scan of the names)
            if let Some(child) = layout.known_child(name) {
                values.push(v);
                hint.set(&child, Some(values.len() - 1));
                *layout = child;
                return None;
            }
            if let Some(pos) = hint.guess(layout, name).or_else(|| layout.position(name)) {
                hint.set(layout, Some(pos));
                return values.get_mut(pos).map(|slot| std::mem::replace(slot, v));
            }
        }
        self.set(name.clone(), v)
    }

    /// Sets `name` to `v`; returns the value it replaced.
    pub fn set(&mut self, name: Rc<str>, v: Value) -> Option<Value> {
        if let Attrs::Shaped { layout, values } = self {
            if let Some(pos) = layout.position(&name) {
                return values.get_mut(pos).map(|slot| std::mem::replace(slot, v));
            }
            if let Some(child) = layout.child(&name) {
                values.push(v);
                *layout = child;
                return None;
            }
        }
        let d = self.as_dict();
        let mut m = d.borrow_mut();
        m.insert(Key(Value::Str(name)), v)
    }

    /// Removes `name`, keeping the order of the others; returns its value. A layout
    /// instance moves to the layout of the names left (`root`: its class's tree).
    pub fn remove(&mut self, name: &str, root: &Rc<Layout>) -> Option<Value> {
        let Attrs::Shaped { layout, values } = self else {
            let Attrs::Dict(Value::Dict(d)) = self else {
                return None;
            };
            return d.borrow_mut().shift_remove(&StrKey(name));
        };
        let pos = layout.position(name)?;
        let mut to = Some(root.clone());
        for (i, k) in layout.names.iter().enumerate() {
            if i != pos {
                to = to.and_then(|l| l.child(k));
            }
        }
        match to {
            Some(to) if pos < values.len() => {
                *layout = to;
                Some(values.remove(pos))
            }
            _ => {
                let d = self.as_dict();
                let mut m = d.borrow_mut();
                m.shift_remove(&StrKey(name))
            }
        }
    }

    /// The attributes as a live dict (switching to one if needed): `obj.__dict__`.
    pub fn dict(&mut self) -> Value {
        Value::Dict(self.as_dict())
    }

    /// Switches to a dict holding the attributes (if not one already) and returns it.
    fn as_dict(&mut self) -> Rc<RefCell<DictMap>> {
        if let Attrs::Dict(Value::Dict(d)) = self {
            return d.clone();
        }
        let mut m = DictMap::default();
        if let Attrs::Shaped { layout, values } = std::mem::take(self) {
            let names = layout.names.iter().cloned();
            for (k, v) in names.zip(values) {
                m.insert(Key(Value::Str(k)), v);
            }
        }
        let v = Value::dict(m);
        let Value::Dict(d) = &v else {
            return Rc::new(RefCell::new(DictMap::default()));
        };
        let d = d.clone();
        *self = Attrs::Dict(v);
        d
    }

    /// `obj.__dict__ = d`: `d` becomes the attribute dict.
    pub fn replace_dict(&mut self, d: Value) -> Attrs {
        std::mem::replace(self, Attrs::Dict(d))
    }

    /// The number of attributes.
    pub fn len(&self) -> usize {
        match self {
            Attrs::Shaped { values, .. } => values.len(),
            Attrs::Dict(Value::Dict(d)) => d.borrow().len(),
            Attrs::Dict(_) => 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The attributes with `str` names, in insertion order.
    pub fn items(&self) -> Vec<(Rc<str>, Value)> {
        match self {
            Attrs::Shaped { layout, values } => {
                let names = layout.names.iter().cloned();
                names.zip(values.iter().cloned()).collect()
            }
            Attrs::Dict(Value::Dict(d)) => d
                .borrow()
                .iter()
                .filter_map(|(k, v)| match &k.0 {
                    Value::Str(s) => Some((s.clone(), v.clone())),
                    _ => None,
                })
                .collect(),
            Attrs::Dict(_) => Vec::new(),
        }
    }

    /// The attribute names, in insertion order.
    pub fn names(&self) -> Vec<Rc<str>> {
        match self {
            Attrs::Shaped { layout, values } => {
                layout.names.iter().take(values.len()).cloned().collect()
            }
            _ => self.items().into_iter().map(|(k, _)| k).collect(),
        }
    }

    /// Calls `f` with each value this storage holds strongly (the values of a layout
    /// instance; the dict object of a dict one), for the cycle collector.
    pub fn for_each_held(&self, mut f: impl FnMut(&Value)) {
        match self {
            Attrs::Shaped { values, .. } => values.iter().for_each(f),
            Attrs::Dict(d) => f(d),
        }
    }

    /// Takes every value held out (the instance is left without attributes).
    pub fn take_values(&mut self) -> impl Iterator<Item = Value> {
        let vals: SmallVec<[Value; INLINE]> = match std::mem::take(self) {
            Attrs::Shaped { values, .. } => values,
            Attrs::Dict(d) => smallvec::smallvec![d],
        };
        vals.into_iter()
    }
}

impl Instance {
    /// A fresh instance of `class` without attributes (not yet tracked by the collector).
    pub fn new(class: Rc<Class>) -> Instance {
        Instance {
            attrs: RefCell::new(Attrs::new(&class.layout)),
            class,
            hash: Default::default(),
            gc: Default::default(),
        }
    }

    /// The instance's own attribute `name`.
    pub fn attr(&self, name: &str) -> Option<Value> {
        self.attrs.borrow().get(name)
    }

    /// Sets the instance's own attribute `name` (no `__setattr__`, no descriptor);
    /// returns the value replaced.
    pub fn put_attr(&self, name: impl Into<Rc<str>>, v: Value) -> Option<Value> {
        self.attrs.borrow_mut().set(name.into(), v)
    }

    /// Removes the instance's own attribute `name`; returns its value.
    pub fn take_attr(&self, name: &str) -> Option<Value> {
        self.attrs.borrow_mut().remove(name, &self.class.layout)
    }

    /// The instance's own attributes, in insertion order.
    pub fn attr_items(&self) -> Vec<(Rc<str>, Value)> {
        self.attrs.borrow().items()
    }

    /// `obj.__dict__`: the live dict of the instance's attributes.
    pub fn attr_dict(&self) -> Value {
        self.attrs.borrow_mut().dict()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> Rc<str> {
        s.into()
    }

    fn keys(a: &Attrs) -> Vec<String> {
        a.names().iter().map(|k| k.to_string()).collect()
    }

    #[test]
    fn instances_share_layouts_and_hints_find_slots() {
        let root = Layout::root();
        let (x, y) = (name("x"), name("y"));
        let mut a = Attrs::new(&root);
        let mut b = Attrs::new(&root);
        for m in [&mut a, &mut b] {
            m.set(x.clone(), Value::Int(1));
            m.set(y.clone(), Value::Int(2));
        }
        let (Attrs::Shaped { layout: la, .. }, Attrs::Shaped { layout: lb, .. }) = (&a, &b) else {
            panic!("not shaped");
        };
        assert!(Rc::ptr_eq(la, lb));
        let hint = AttrHint::default();
        assert!(matches!(a.load(&y, &hint), Own::Hit(Value::Int(2))));
        assert_eq!(hint.slot.get(), 1);
        b.set(y.clone(), Value::Int(5));
        assert!(matches!(b.load(&y, &hint), Own::Hit(Value::Int(5))));
        // a miss is remembered as such and stays a miss (a hint belongs to one site,
        // so to one name)
        let hz = AttrHint::default();
        assert!(matches!(a.load(&name("z"), &hz), Own::Miss));
        assert_eq!(hz.slot.get(), ABSENT);
        assert!(matches!(a.load(&name("z"), &hz), Own::Miss));
        a.dict();
        assert!(matches!(a.load(&y, &hint), Own::Dict));
        // a store through the hint replaces in place
        let hint = AttrHint::default();
        assert!(b.set_hinted(&x, Value::Int(7), &hint).is_some());
        assert!(matches!(
            b.replace_hinted(&hint, Value::Int(8)),
            Ok(Value::Int(7))
        ));
        assert!(matches!(b.get("x"), Some(Value::Int(8))));
        assert!(matches!(a.get("x"), Some(Value::Int(1))));
    }

    #[test]
    fn a_hint_keeps_two_layouts() {
        let root = Layout::root();
        let (x, y) = (name("x"), name("y"));
        let mut a = Attrs::new(&root);
        let mut b = Attrs::new(&root);
        a.set(x.clone(), Value::Int(1));
        a.set(y.clone(), Value::Int(2));
        b.set(y.clone(), Value::Int(3));
        let hint = AttrHint::default();
        for _ in 0..2 {
            assert!(matches!(a.load(&y, &hint), Own::Hit(Value::Int(2))));
            assert!(matches!(b.load(&y, &hint), Own::Hit(Value::Int(3))));
        }
        let (Attrs::Shaped { layout: la, .. }, Attrs::Shaped { layout: lb, .. }) = (&a, &b) else {
            panic!("not shaped");
        };
        assert_eq!((hint.slot_for(la), hint.slot_for(lb)), (Some(1), Some(0)));
        // a third layout pushes out the oldest
        let mut c = Attrs::new(&root);
        c.set(name("z"), Value::Int(0));
        c.set(y.clone(), Value::Int(4));
        assert!(matches!(c.load(&y, &hint), Own::Hit(Value::Int(4))));
        assert_eq!(hint.slot_for(la), None);
        assert!(b.replace_hinted(&hint, Value::Int(5)).is_ok());
        assert!(matches!(b.load(&y, &hint), Own::Hit(Value::Int(5))));
    }

    #[test]
    fn remove_keeps_order_and_dict_mode_is_live() {
        let root = Layout::root();
        let mut a = Attrs::new(&root);
        for (i, k) in ["a", "b", "c"].iter().enumerate() {
            a.set(name(k), Value::Int(i as i64));
        }
        assert!(matches!(a.remove("b", &root), Some(Value::Int(1))));
        assert_eq!(keys(&a), ["a", "c"]);
        assert!(a.remove("b", &root).is_none());
        let dv = a.dict();
        let Value::Dict(d) = &dv else {
            panic!("not a dict");
        };
        d.borrow_mut()
            .insert(Key(Value::Str(name("z"))), Value::Int(9));
        assert!(matches!(a.get("z"), Some(Value::Int(9))));
        a.set(name("q"), Value::Int(3));
        assert_eq!(d.borrow().len(), 4);
        assert_eq!(keys(&a), ["a", "c", "z", "q"]);
        assert!(matches!(a.remove("a", &root), Some(Value::Int(0))));
        assert!(!d.borrow().contains_key(&StrKey("a")));
    }

    #[test]
    fn large_and_many_layouts_fall_back_to_dicts() {
        let root = Layout::root();
        let mut a = Attrs::new(&root);
        for i in 0..100 {
            a.set(name(&format!("a{i}")), Value::Int(i));
        }
        assert!(matches!(a, Attrs::Dict(Value::Dict(_))));
        for i in 0..100 {
            assert!(matches!(a.get(&format!("a{i}")), Some(Value::Int(j)) if j == i));
        }
        let mut b = Attrs::new(&root);
        for i in 0..40 {
            b.set(name(&format!("a{i}")), Value::Int(i));
        }
        assert!(matches!(b, Attrs::Shaped { .. }));
        assert_eq!(
            b.get("a39").map(|v| matches!(v, Value::Int(39))),
            Some(true)
        );
        for i in 0..MAX_LAYOUTS {
            let mut c = Attrs::new(&root);
            c.set(name(&format!("u{i}")), Value::Int(0));
        }
        assert!(root.count.get() <= MAX_LAYOUTS);
    }
}
