//! Operator dunders of user classes with CPython's `NotImplemented` protocol: a dunder
//! that returns `NotImplemented` hands the operation to the other operand's reflected
//! dunder, and then to the default (identity for `==`/`!=`, a TypeError otherwise). The
//! right operand goes first when its class is a proper subclass of the left's.

use super::ops::dunder;
use super::value::Value;
use super::{type_err, Interp, R};
use crate::syntax::ast::{BinOp, CmpOp};
use std::rc::Rc;

/// True when `b`'s class is a proper subclass of `a`'s (CPython then tries `b`'s
/// reflected method first); `overrides`: only when that class's `rname` is its own.
fn right_first(a: &Value, b: &Value, rname: &str, overrides: bool) -> bool {
    let (Value::Instance(x), Value::Instance(y)) = (a, b) else {
        return false;
    };
    if Rc::ptr_eq(&x.class, &y.class) || !y.class.is_subclass(&x.class) {
        return false;
    }
    if !overrides {
        return true;
    }
    match (y.class.lookup(rname), x.class.lookup(rname)) {
        (Some(p), Some(q)) => !p.is(&q),
        (p, _) => p.is_some(),
    }
}

fn same_class(a: &Value, b: &Value) -> bool {
    matches!((a, b), (Value::Instance(x), Value::Instance(y)) if Rc::ptr_eq(&x.class, &y.class))
}

impl Interp {
    /// Calls `obj.name(*args)` if the object's class defines `name`.
    pub fn call_dunder(
        &mut self,
        obj: &Value,
        name: &'static str,
        args: &[Value],
    ) -> R<Option<Value>> {
        let Value::Instance(inst) = obj else {
            return Ok(None);
        };
        let Some(f) = inst.class.lookup_static(name) else {
            return Ok(None);
        };
        if let Value::Func(func) = &f {
            if func.proto.simple && func.proto.params.len() == args.len() + 1 {
                let base = self.stack.len();
                self.stack.push(obj.clone());
                self.stack.extend_from_slice(args);
                return self.invoke(func.clone(), base).map(Some);
            }
        }
        let mut all = Vec::with_capacity(args.len() + 1);
        all.push(obj.clone());
        all.extend_from_slice(args);
        self.call_value(&f, all, Vec::new()).map(Some)
    }

    /// `call_dunder`, `None` also when the method returns `NotImplemented`.
    pub fn try_dunder(
        &mut self,
        obj: &Value,
        name: &'static str,
        args: &[Value],
    ) -> R<Option<Value>> {
        let r = self.call_dunder(obj, name, args)?;
        Ok(r.filter(|v| !matches!(v, Value::NotImplemented)))
    }

    /// `a op b` through the operands' dunders (`a.__add__(b)`, then `b.__radd__(a)` when
    /// the types differ); `None` when neither handles it.
    pub fn binop_dunders(&mut self, op: BinOp, a: &Value, b: &Value) -> R<Option<Value>> {
        let (name, rname) = dunder(op);
        let b_first = right_first(a, b, rname, true);
        if b_first {
            if let Some(r) = self.try_dunder(b, rname, std::slice::from_ref(a))? {
                return Ok(Some(r));
            }
        }
        if let Some(r) = self.try_dunder(a, name, std::slice::from_ref(b))? {
            return Ok(Some(r));
        }
        if b_first || same_class(a, b) {
            return Ok(None);
        }
        self.try_dunder(b, rname, std::slice::from_ref(a))
    }

    /// `a == b` with an instance operand: `__eq__` either way, then identity.
    pub fn eq_dunders(&mut self, a: &Value, b: &Value) -> R<bool> {
        let b_first = right_first(a, b, "__eq__", false);
        let (x, y) = if b_first { (b, a) } else { (a, b) };
        if let Some(r) = self.try_dunder(x, "__eq__", std::slice::from_ref(y))? {
            return self.truthy(&r);
        }
        if let Some(r) = self.try_dunder(y, "__eq__", std::slice::from_ref(x))? {
            return self.truthy(&r);
        }
        Ok(a.is(b))
    }

    /// `a != b` with an instance operand: `__ne__` (or the inverted `__eq__`, as
    /// `object.__ne__` does) either way, then identity.
    pub fn ne_dunders(&mut self, a: &Value, b: &Value) -> R<bool> {
        let b_first = right_first(a, b, "__ne__", false);
        let (x, y) = if b_first { (b, a) } else { (a, b) };
        if let Some(r) = self.ne_side(x, y)? {
            return Ok(r);
        }
        if let Some(r) = self.ne_side(y, x)? {
            return Ok(r);
        }
        Ok(!a.is(b))
    }

    fn ne_side(&mut self, x: &Value, y: &Value) -> R<Option<bool>> {
        let Value::Instance(inst) = x else {
            return Ok(None);
        };
        if inst.class.lookup_static("__ne__").is_some() {
            return match self.try_dunder(x, "__ne__", std::slice::from_ref(y))? {
                Some(r) => self.truthy(&r).map(Some),
                None => Ok(None),
            };
        }
        match self.try_dunder(x, "__eq__", std::slice::from_ref(y))? {
            Some(r) => Ok(Some(!self.truthy(&r)?)),
            None => Ok(None),
        }
    }

    /// `a < b` (and `<= > >=`) with an instance operand: the method, then the reflected
    /// one (`__gt__` for `<`), then CPython's TypeError.
    pub fn order_dunders(&mut self, op: CmpOp, a: &Value, b: &Value) -> R<bool> {
        let (name, rname) = match op {
            CmpOp::Lt => ("__lt__", "__gt__"),
            CmpOp::LtE => ("__le__", "__ge__"),
            CmpOp::Gt => ("__gt__", "__lt__"),
            _ => ("__ge__", "__le__"),
        };
        let b_first = right_first(a, b, rname, false);
        if b_first {
            if let Some(r) = self.try_dunder(b, rname, std::slice::from_ref(a))? {
                return self.truthy(&r);
            }
        }
        if let Some(r) = self.try_dunder(a, name, std::slice::from_ref(b))? {
            return self.truthy(&r);
        }
        if !b_first {
            if let Some(r) = self.try_dunder(b, rname, std::slice::from_ref(a))? {
                return self.truthy(&r);
            }
        }
        Err(type_err(format!(
            "'{}' not supported between instances of '{}' and '{}'",
            op.symbol(),
            a.type_name(),
            b.type_name()
        )))
    }
}
