//! Set algebra: the operators `& | - ^`, `<= < >= >` and their in-place forms, and the
//! set methods built on them (`union`, `issubset`, `symmetric_difference_update`, ...).

use crate::interp::value::{DictMap, Value};
use crate::interp::{type_err, Interp, R};
use crate::syntax::ast::{BinOp, CmpOp};
use std::cell::RefCell;
use std::rc::Rc;

/// The set operator a method or operator stands for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum SetOp {
    Union,
    Intersection,
    Difference,
    SymmetricDifference,
}

impl SetOp {
    pub fn of_binop(op: BinOp) -> Option<SetOp> {
        match op {
            BinOp::BitOr => Some(SetOp::Union),
            BinOp::BitAnd => Some(SetOp::Intersection),
            BinOp::Sub => Some(SetOp::Difference),
            BinOp::BitXor => Some(SetOp::SymmetricDifference),
            _ => None,
        }
    }
}

/// `a op b` as a new map, in CPython's result order where it has one (insertion order);
/// members compare by the map's own equality (identity for instances).
pub fn combine(a: &DictMap, b: &DictMap, op: SetOp) -> DictMap {
    match op {
        SetOp::Union => {
            let mut m = a.clone();
            for k in b.keys() {
                if !m.contains_key(k) {
                    m.insert(k.clone(), Value::None);
                }
            }
            m
        }
        SetOp::Intersection => a
            .keys()
            .filter(|k| b.contains_key(*k))
            .map(|k| (k.clone(), Value::None))
            .collect(),
        SetOp::Difference => a
            .keys()
            .filter(|k| !b.contains_key(*k))
            .map(|k| (k.clone(), Value::None))
            .collect(),
        SetOp::SymmetricDifference => a
            .keys()
            .filter(|k| !b.contains_key(*k))
            .chain(b.keys().filter(|k| !a.contains_key(*k)))
            .map(|k| (k.clone(), Value::None))
            .collect(),
    }
}

/// `a <= b` and friends between two sets (subset order).
pub fn compare(a: &DictMap, b: &DictMap, op: CmpOp) -> Option<bool> {
    let sub = |x: &DictMap, y: &DictMap| x.keys().all(|k| y.contains_key(k));
    Some(match op {
        CmpOp::LtE => sub(a, b),
        CmpOp::Lt => a.len() < b.len() && sub(a, b),
        CmpOp::GtE => sub(b, a),
        CmpOp::Gt => a.len() > b.len() && sub(b, a),
        _ => return None,
    })
}

/// A new set, or frozenset when `like` is one (CPython's result type follows the left
/// operand or the receiver).
fn new_set(m: DictMap, like: &Value) -> Value {
    match like {
        Value::FrozenSet(_) => Value::frozenset(m),
        _ => Value::set(m),
    }
}

impl Interp {
    /// The items of any iterable as a set map (for the methods taking iterables).
    pub fn set_map(&mut self, v: &Value) -> R<DictMap> {
        if let Some(d) = v.set_members() {
            return Ok(d.borrow().clone());
        }
        let mut m = DictMap::default();
        for x in self.collect(v)? {
            let k = self.key_in_map(x, &m)?;
            crate::interp::containers::map_insert(&mut m, k, Value::None, "set")?;
        }
        Ok(m)
    }

    /// `a op b` for two sets, `None` when an operand is not a set.
    pub fn set_binop(&mut self, op: BinOp, a: &Value, b: &Value) -> Option<R<Value>> {
        let (Some(x), Some(y), Some(op)) = (a.set_members(), b.set_members(), SetOp::of_binop(op))
        else {
            return None;
        };
        let m = self.set_combine(x, y, op);
        Some(m.map(|m| new_set(m, a)))
    }

    /// `a op= b` for sets: updates `a` in place.
    pub fn set_inplace(&mut self, op: BinOp, a: &Value, b: &Value) -> Option<R<()>> {
        let (Value::Set(x), Some(y), Some(op)) = (a, b.set_members(), SetOp::of_binop(op)) else {
            return None;
        };
        Some(self.set_combine(x, y, op).map(|m| *x.borrow_mut() = m))
    }

    /// `a op b` for two set maps (see `set_combine_maps`).
    fn set_combine(&mut self, a: &RefCell<DictMap>, b: &RefCell<DictMap>, op: SetOp) -> R<DictMap> {
        if !self.user_keys {
            return Ok(combine(&a.borrow(), &b.borrow(), op));
        }
        let (a, b) = (a.borrow().clone(), b.borrow().clone());
        self.set_combine_maps(&a, &b, op)
    }

    /// `a op b` where a member of one equal to a member of the other by a user `__eq__`
    /// counts once, as in CPython (which keeps `a`'s member for `|`, `-`, `^` and the
    /// smaller set's for `&`).
    pub fn set_combine_maps(&mut self, a: &DictMap, b: &DictMap, op: SetOp) -> R<DictMap> {
        if !self.user_keys {
            return Ok(combine(a, b, op));
        }
        let mut m = DictMap::default();
        match op {
            SetOp::Union => {
                m = a.clone();
                for k in b.keys() {
                    if self.find_key(&m, k)?.is_none() {
                        m.insert(k.clone(), Value::None);
                    }
                }
            }
            SetOp::Intersection => {
                let (small, big) = if b.len() > a.len() { (a, b) } else { (b, a) };
                for k in small.keys() {
                    if self.find_key(big, k)?.is_some() {
                        m.insert(k.clone(), Value::None);
                    }
                }
            }
            SetOp::Difference => {
                for k in a.keys() {
                    if self.find_key(b, k)?.is_none() {
                        m.insert(k.clone(), Value::None);
                    }
                }
            }
            SetOp::SymmetricDifference => {
                m = a.clone();
                for k in b.keys() {
                    match self.find_key(&m, k)? {
                        Some(f) => {
                            m.shift_remove(&f);
                        }
                        None => {
                            m.insert(k.clone(), Value::None);
                        }
                    }
                }
            }
        }
        Ok(m)
    }

    /// Every member of `a` is in `b` (by a user `__eq__` too).
    fn subset(&mut self, a: &DictMap, b: &DictMap) -> R<bool> {
        if a.len() > b.len() {
            return Ok(false);
        }
        for k in a.keys() {
            if self.find_key(b, k)?.is_none() {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// `a <= b`, `a == b` and friends between two sets.
    pub fn set_compare(
        &mut self,
        a: &RefCell<DictMap>,
        b: &RefCell<DictMap>,
        op: CmpOp,
    ) -> R<bool> {
        let (a, b) = if self.user_keys {
            (a.borrow().clone(), b.borrow().clone())
        } else {
            let (a, b) = (a.borrow(), b.borrow());
            return Ok(match op {
                CmpOp::Eq => a.len() == b.len() && a.keys().all(|k| b.contains_key(k)),
                _ => compare(&a, &b, op).unwrap_or(false),
            });
        };
        Ok(match op {
            CmpOp::Eq => a.len() == b.len() && self.subset(&a, &b)?,
            CmpOp::LtE => self.subset(&a, &b)?,
            CmpOp::Lt => a.len() < b.len() && self.subset(&a, &b)?,
            CmpOp::GtE => self.subset(&b, &a)?,
            CmpOp::Gt => a.len() > b.len() && self.subset(&b, &a)?,
            _ => false,
        })
    }

    /// The set methods of the algebra: `union(*others)`, `issubset(other)`, ...
    pub fn set_algebra_method(
        &mut self,
        d: &Rc<RefCell<DictMap>>,
        like: &Value,
        name: &str,
        args: &[Value],
    ) -> R<Option<Value>> {
        let (op, update) = match name {
            "union" => (SetOp::Union, false),
            "intersection" => (SetOp::Intersection, false),
            "difference" => (SetOp::Difference, false),
            "symmetric_difference" => (SetOp::SymmetricDifference, false),
            "update" => (SetOp::Union, true),
            "intersection_update" => (SetOp::Intersection, true),
            "difference_update" => (SetOp::Difference, true),
            "symmetric_difference_update" => (SetOp::SymmetricDifference, true),
            "issubset" | "issuperset" | "isdisjoint" => {
                let [other] = args else {
                    return Err(type_err(format!(
                        "set.{name}() takes exactly one argument ({} given)",
                        args.len()
                    )));
                };
                let o = self.set_map(other)?;
                let me = d.borrow().clone();
                let r = match name {
                    "issubset" => self.subset(&me, &o)?,
                    "issuperset" => self.subset(&o, &me)?,
                    _ => self
                        .set_combine_maps(&me, &o, SetOp::Intersection)?
                        .is_empty(),
                };
                return Ok(Some(Value::Bool(r)));
            }
            _ => return Ok(None),
        };
        if op == SetOp::SymmetricDifference && args.len() != 1 {
            return Err(type_err(format!(
                "set.{name}() takes exactly one argument ({} given)",
                args.len()
            )));
        }
        let mut m = d.borrow().clone();
        for a in args {
            let o = self.set_map(a)?;
            m = self.set_combine_maps(&m, &o, op)?;
        }
        // the result is charged and capped as any other growth (max_container_len)
        let mut capped = DictMap::default();
        crate::interp::containers::map_extend(&mut capped, m, "set")?;
        let m = capped;
        if update {
            *d.borrow_mut() = m;
            return Ok(Some(Value::None));
        }
        Ok(Some(new_set(m, like)))
    }
}
