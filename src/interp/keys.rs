//! Dict keys and set members with the user's `__hash__`/`__eq__`: an instance whose class
//! defines `__hash__` hashes by it, and one whose class defines `__eq__` is found under
//! an equal key already in the map (the map's own comparison stays identity for
//! instances, so its borrow is never held while user code runs).

use super::value::{DictMap, Instance, Key, Value, MAX_KEY_DEPTH};
use super::{type_err, Interp, R};
use indexmap::Equivalent;
use std::cell::RefCell;
use std::hash::{BuildHasher, Hash, Hasher};
use std::rc::Rc;

/// An instance's user hash (see [`Instance::hash`](super::value::Instance::hash)); one
/// word, `i64::MIN` for none.
#[derive(Debug)]
pub struct UserHash(std::cell::Cell<i64>);

impl Default for UserHash {
    fn default() -> Self {
        UserHash(std::cell::Cell::new(i64::MIN))
    }
}

impl UserHash {
    #[inline(always)]
    pub fn get(&self) -> Option<i64> {
        Some(self.0.get()).filter(|&h| h != i64::MIN)
    }

    /// Records a user hash (`i64::MIN`, the "none" mark, is stored as its neighbour).
    #[inline(always)]
    pub fn set(&self, h: i64) {
        self.0.set(h.max(i64::MIN + 1))
    }

    /// Back to identity hashing (the class has no `__hash__` of its own now).
    #[inline(always)]
    pub fn clear(&self) {
        self.0.set(i64::MIN)
    }
}

/// True when finding `v` in a map may need a user `__eq__` (an instance of a class
/// defining it, also inside a tuple).
fn needs_user_eq(v: &Value, depth: usize) -> bool {
    match v {
        Value::Instance(i) => i.class.key_flags().user_eq,
        Value::Tuple(t) if depth < MAX_KEY_DEPTH => t.iter().any(|x| needs_user_eq(x, depth + 1)),
        _ => false,
    }
}

/// A lookup that finds `key` by identity and collects the other keys with its hash
/// (the ones a user `__eq__` may call equal).
struct Probe<'a> {
    key: &'a Key,
    hash: u64,
    build: super::value::FxBuild,
    same_hash: RefCell<Vec<Value>>,
}

impl Hash for Probe<'_> {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.key.hash(h)
    }
}

impl Equivalent<Key> for Probe<'_> {
    fn equivalent(&self, k: &Key) -> bool {
        if *k == *self.key {
            return true;
        }
        if self.build.hash_one(k) == self.hash {
            self.same_hash.borrow_mut().push(k.0.clone());
        }
        false
    }
}

/// The keys of `map` that hash like `k` (empty when `k` itself is there).
fn same_hash_keys(map: &DictMap, k: &Key) -> Vec<Value> {
    let build = *map.hasher();
    let probe = Probe {
        key: k,
        hash: build.hash_one(k),
        build,
        same_hash: RefCell::new(Vec::new()),
    };
    if map.get_index_of(&probe).is_some() {
        return Vec::new();
    }
    probe.same_hash.into_inner()
}

impl Interp {
    /// Wraps a value as a dict key: `TypeError` for unhashable values; an instance with a
    /// user `__hash__` (also inside a tuple) gets its hash computed now.
    pub fn key(&mut self, v: Value) -> R<Key> {
        self.key_eq(v).map(|(k, _)| k)
    }

    /// `key`, and whether finding the key in a map may need a user `__eq__` (an instance
    /// of a class defining it, also inside a tuple). An instance's class flags are read
    /// once.
    fn key_eq(&mut self, v: Value) -> R<(Key, bool)> {
        if let Value::Instance(inst) = &v {
            let f = inst.class.key_flags();
            if f.unhashable {
                return Err(type_err(format!("unhashable type: '{}'", inst.class.name)));
            }
            match f.user_hash {
                true => self.user_hash(inst)?,
                false => inst.hash.clear(),
            }
            return Ok((Key(v), f.user_eq));
        }
        self.user_hashes(&v, 0)?;
        let eq = needs_user_eq(&v, 0);
        Ok((Key::new(v)?, eq))
    }

    /// Runs the class's `__hash__` and records the result in the instance.
    fn user_hash(&mut self, inst: &Rc<Instance>) -> R<()> {
        let f = inst.class.lookup_static("__hash__");
        let Some(f) = f.filter(|f| !matches!(f, Value::None)) else {
            return Ok(());
        };
        let h = match self.call_value(&f, vec![Value::Instance(inst.clone())], vec![])? {
            Value::Int(i) => i,
            Value::Bool(b) => b as i64,
            _ => return Err(type_err("__hash__ method should return an integer")),
        };
        // as CPython: -1 is reserved for errors
        inst.hash.set(if h == -1 { -2 } else { h });
        self.user_keys = true;
        Ok(())
    }

    fn user_hashes(&mut self, v: &Value, depth: usize) -> R<()> {
        match v {
            Value::Instance(inst) => match inst.class.key_flags().user_hash {
                true => self.user_hash(inst),
                false => {
                    inst.hash.clear();
                    Ok(())
                }
            },
            Value::Tuple(t) if depth < MAX_KEY_DEPTH => {
                t.iter().try_for_each(|x| self.user_hashes(x, depth + 1))
            }
            _ => Ok(()),
        }
    }

    /// The key under which `v` is (or would be) in `map`: an equal key already there
    /// when a user `__eq__` says so (as CPython keeps the first key of equal ones).
    pub fn key_in(&mut self, v: Value, map: &RefCell<DictMap>) -> R<Key> {
        let (k, eq) = self.key_eq(v)?;
        if !eq && !self.user_keys {
            return Ok(k);
        }
        let cands = match map.try_borrow() {
            Ok(m) => same_hash_keys(&m, &k),
            Err(_) => Vec::new(),
        };
        self.first_equal(k, cands)
    }

    /// `key_in` for a map being built (not reachable from user code).
    pub fn key_in_map(&mut self, v: Value, map: &DictMap) -> R<Key> {
        let (k, eq) = self.key_eq(v)?;
        if !eq && !self.user_keys {
            return Ok(k);
        }
        let cands = same_hash_keys(map, &k);
        self.first_equal(k, cands)
    }

    /// True when a map may hold a key that differs from `k` by identity but equals it
    /// by a user `__eq__` (either side's: `1 in {V(1)}` asks `V.__eq__`).
    #[inline]
    fn may_user_eq(&self, k: &Key) -> bool {
        self.user_keys || needs_user_eq(&k.0, 0)
    }

    /// The key of `map` that `k` is, or equals by a user `__eq__` (CPython's set and dict
    /// membership); `None` when there is none. `k`'s user hash is already computed (it is
    /// a key of another map, or came through `key`).
    pub fn find_key(&mut self, map: &DictMap, k: &Key) -> R<Option<Key>> {
        if map.contains_key(k) {
            return Ok(Some(k.clone()));
        }
        if !self.may_user_eq(k) {
            return Ok(None);
        }
        for c in same_hash_keys(map, k) {
            if self.eq(&c, &k.0)? {
                return Ok(Some(Key(c)));
            }
        }
        Ok(None)
    }

    /// `into.update(other)`: a key of `other` equal to one of `into` by a user `__eq__`
    /// replaces that one's value and keeps its key, as CPython's dict.
    pub fn merge_maps(&mut self, into: &mut DictMap, other: DictMap, what: &str) -> R<()> {
        if !self.user_keys {
            return super::containers::map_extend(into, other, what);
        }
        for (k, v) in other {
            let k = self.find_key(into, &k)?.unwrap_or(k);
            super::containers::map_insert(into, k, v, what)?;
        }
        Ok(())
    }

    /// `merge_maps` into a live map (no borrow held while a user `__eq__` runs).
    pub fn merge_into(&mut self, into: &RefCell<DictMap>, other: DictMap, what: &str) -> R<()> {
        if !self.user_keys {
            return super::containers::map_extend(&mut into.borrow_mut(), other, what);
        }
        let mut m = into.borrow().clone();
        self.merge_maps(&mut m, other, what)?;
        *into.borrow_mut() = m;
        Ok(())
    }

    fn first_equal(&mut self, k: Key, cands: Vec<Value>) -> R<Key> {
        for c in cands {
            if self.eq(&c, &k.0)? {
                return Ok(Key(c));
            }
        }
        Ok(k)
    }
}
