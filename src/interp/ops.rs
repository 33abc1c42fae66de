//! Operators: arithmetic with Python's rules, comparisons, truthiness, `in`.

use super::containers;
use super::value::{simple_eq, Value};
use super::{err, type_err, value_err, Interp, R};
use crate::error::ErrorKind;
use crate::pyfmt::{float_floordiv, float_mod, int_floordiv, int_mod, int_pow};
use crate::syntax::ast::{BinOp, CmpOp, UnaryOp};
use std::rc::Rc;

fn overflow() -> super::Exc {
    err(ErrorKind::OverflowError, "integer overflow")
}

fn zero_div(msg: &str) -> super::Exc {
    err(ErrorKind::ZeroDivisionError, msg)
}

#[inline]
pub fn int_op(op: BinOp, x: i64, y: i64) -> R<Value> {
    Ok(match op {
        BinOp::Add => Value::Int(x.checked_add(y).ok_or_else(overflow)?),
        BinOp::Sub => Value::Int(x.checked_sub(y).ok_or_else(overflow)?),
        BinOp::Mul => Value::Int(x.checked_mul(y).ok_or_else(overflow)?),
        BinOp::Div => {
            if y == 0 {
                return Err(zero_div("division by zero"));
            }
            Value::Float(x as f64 / y as f64)
        }
        BinOp::FloorDiv => {
            if y == 0 {
                return Err(zero_div("integer division or modulo by zero"));
            }
            Value::Int(int_floordiv(x, y).ok_or_else(overflow)?)
        }
        BinOp::Mod => {
            if y == 0 {
                return Err(zero_div("integer modulo by zero"));
            }
            Value::Int(int_mod(x, y).ok_or_else(overflow)?)
        }
        BinOp::Pow => {
            if y < 0 {
                if x == 0 {
                    return Err(zero_div("0.0 cannot be raised to a negative power"));
                }
                return float_op(BinOp::Pow, x as f64, y as f64);
            }
            Value::Int(int_pow(x, y).ok_or_else(overflow)?)
        }
        BinOp::BitAnd => Value::Int(x & y),
        BinOp::BitOr => Value::Int(x | y),
        BinOp::BitXor => Value::Int(x ^ y),
        BinOp::LShift => {
            if y < 0 {
                return Err(value_err("negative shift count"));
            }
            if x == 0 {
                return Ok(Value::Int(0));
            }
            if y >= 64 {
                return Err(overflow());
            }
            let r = x << y;
            if r >> y != x {
                return Err(overflow());
            }
            Value::Int(r)
        }
        BinOp::RShift => {
            if y < 0 {
                return Err(value_err("negative shift count"));
            }
            Value::Int(x >> y.min(63))
        }
        BinOp::MatMul => return Err(unsupported(op, "int", "int")),
    })
}

#[inline]
pub fn float_op(op: BinOp, x: f64, y: f64) -> R<Value> {
    Ok(Value::Float(match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => {
            if y == 0.0 {
                return Err(zero_div("float division by zero"));
            }
            x / y
        }
        BinOp::FloorDiv => {
            if y == 0.0 {
                return Err(zero_div("float floor division by zero"));
            }
            float_floordiv(x, y)
        }
        BinOp::Mod => {
            if y == 0.0 {
                return Err(zero_div("float modulo"));
            }
            float_mod(x, y)
        }
        BinOp::Pow => {
            if x == 0.0 && y < 0.0 {
                return Err(zero_div("0.0 cannot be raised to a negative power"));
            }
            if x < 0.0 && y.fract() != 0.0 && y.is_finite() {
                return Err(value_err(
                    "negative number cannot be raised to a fractional power",
                ));
            }
            let r = x.powf(y);
            if r.is_infinite() && x.is_finite() && y.is_finite() {
                return Err(err(
                    ErrorKind::OverflowError,
                    "(34, 'Numerical result out of range')",
                ));
            }
            r
        }
        _ => return Err(unsupported(op, "float", "float")),
    }))
}

fn unsupported(op: BinOp, a: &str, b: &str) -> super::Exc {
    type_err(format!(
        "unsupported operand type(s) for {}: '{}' and '{}'",
        op.symbol(),
        a,
        b
    ))
}

/// The dunder method name of a binary operator.
pub fn dunder(op: BinOp) -> (&'static str, &'static str) {
    match op {
        BinOp::Add => ("__add__", "__radd__"),
        BinOp::Sub => ("__sub__", "__rsub__"),
        BinOp::Mul => ("__mul__", "__rmul__"),
        BinOp::Div => ("__truediv__", "__rtruediv__"),
        BinOp::FloorDiv => ("__floordiv__", "__rfloordiv__"),
        BinOp::Mod => ("__mod__", "__rmod__"),
        BinOp::Pow => ("__pow__", "__rpow__"),
        BinOp::MatMul => ("__matmul__", "__rmatmul__"),
        BinOp::BitAnd => ("__and__", "__rand__"),
        BinOp::BitOr => ("__or__", "__ror__"),
        BinOp::BitXor => ("__xor__", "__rxor__"),
        BinOp::LShift => ("__lshift__", "__rlshift__"),
        BinOp::RShift => ("__rshift__", "__rrshift__"),
    }
}

/// The in-place dunder method name of a binary operator (`+=` -> `__iadd__`).
pub fn inplace_dunder(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "__iadd__",
        BinOp::Sub => "__isub__",
        BinOp::Mul => "__imul__",
        BinOp::Div => "__itruediv__",
        BinOp::FloorDiv => "__ifloordiv__",
        BinOp::Mod => "__imod__",
        BinOp::Pow => "__ipow__",
        BinOp::MatMul => "__imatmul__",
        BinOp::BitAnd => "__iand__",
        BinOp::BitOr => "__ior__",
        BinOp::BitXor => "__ixor__",
        BinOp::LShift => "__ilshift__",
        BinOp::RShift => "__irshift__",
    }
}

/// `items * n` (sequence repetition) under the container cap.
fn repeat(items: &[Value], n: i64, what: &str) -> R<Vec<Value>> {
    let n = n.max(0) as usize;
    let mut out = containers::vec_with_capacity(repeat_len(items.len(), n)?, what)?;
    for _ in 0..n {
        out.extend_from_slice(items);
    }
    Ok(out)
}

/// The length of a sequence of `len` repeated `n` times, `MemoryError` on overflow.
fn repeat_len(len: usize, n: usize) -> R<usize> {
    len.checked_mul(n)
        .ok_or_else(|| err(ErrorKind::MemoryError, "repeated sequence is too large"))
}

/// `s * n` under the container and memory caps.
fn repeat_str(s: &str, n: i64) -> R<String> {
    let n = n.max(0) as usize;
    let mut out = containers::string_with_capacity(repeat_len(s.len(), n)?)?;
    for _ in 0..n {
        out.push_str(s);
    }
    Ok(out)
}

/// The tail of the `RecursionError` message of a comparison nested too deeply.
const CMP: &str = " in comparison";

impl Interp {
    #[inline]
    pub fn binop(&mut self, op: BinOp, a: &Value, b: &Value) -> R<Value> {
        match (a, b) {
            (Value::Int(x), Value::Int(y)) => int_op(op, *x, *y),
            (Value::Float(x), Value::Float(y)) => float_op(op, *x, *y),
            (Value::Int(x), Value::Float(y)) => float_op(op, *x as f64, *y),
            (Value::Float(x), Value::Int(y)) => float_op(op, *x, *y as f64),
            _ => self.binop_slow(op, a, b),
        }
    }

    fn binop_slow(&mut self, op: BinOp, a: &Value, b: &Value) -> R<Value> {
        use Value::*;
        if let (SymInt(_), _) | (_, SymInt(_)) = (a, b) {
            return self.sym_binop(op, a, b);
        }
        if let (SymFloat(_), _) | (_, SymFloat(_)) = (a, b) {
            return self.symfloat_binop(op, a, b);
        }
        // An instance on the left (and no tensor on the right, which the tensor library
        // sees first) can only go to its dunder: try that before the built-in cases.
        if let (Instance(_), false) = (a, matches!(b, Tensor(_))) {
            return match self.binop_dunders(op, a, b)? {
                Some(r) => Ok(r),
                Option::None => Err(unsupported(op, &a.type_name(), &b.type_name())),
            };
        }
        if matches!(a, Tensor(_)) || matches!(b, Tensor(_)) {
            if let Some(r) = self.tensor_binop(op, a, b)? {
                return Ok(r);
            }
        }
        if let Some(r) = self.set_binop(op, a, b) {
            return r;
        }
        match (op, a, b) {
            (_, Bool(x), _) => return self.binop_bool(op, Int(*x as i64), b, a),
            (_, _, Bool(y)) if !matches!(a, Instance(_)) => {
                return self.binop_bool(op, a.clone(), &Int(*y as i64), a)
            }
            (BinOp::Add, Str(x), Str(y)) => {
                let mut s = containers::string_with_capacity(x.len().saturating_add(y.len()))?;
                s.push_str(x);
                s.push_str(y);
                return Ok(Value::str(&s));
            }
            (BinOp::Add, List(x), List(y)) => {
                let (x, y) = (x.borrow(), y.borrow());
                let mut v = containers::vec_with_capacity(x.len().saturating_add(y.len()), "list")?;
                v.extend(x.iter().chain(y.iter()).cloned());
                return Ok(Value::list(v));
            }
            (BinOp::Add, Tuple(x) | Size(x), Tuple(y) | Size(y)) => {
                let mut v =
                    containers::vec_with_capacity(x.len().saturating_add(y.len()), "tuple")?;
                v.extend(x.iter().chain(y.iter()).cloned());
                return match (a, b) {
                    (Size(_), _) | (_, Size(_)) => super::builtins::size::from_items(v),
                    _ => Ok(Value::tuple(v)),
                };
            }
            (BinOp::Mul, Str(s), Int(n)) | (BinOp::Mul, Int(n), Str(s)) => {
                return Ok(Value::Str(repeat_str(s, *n)?.into()));
            }
            (BinOp::Mul, List(x), Int(n)) | (BinOp::Mul, Int(n), List(x)) => {
                let v = repeat(&x.borrow(), *n, "list")?;
                return Ok(Value::list(v));
            }
            (BinOp::Mul, Tuple(x), Int(n)) | (BinOp::Mul, Int(n), Tuple(x)) => {
                return Ok(Value::tuple(repeat(x, *n, "tuple")?));
            }
            (BinOp::Mul, Size(x), Int(n)) | (BinOp::Mul, Int(n), Size(x)) => {
                return Ok(Value::Size(repeat(x, *n, "tuple")?.into()));
            }
            (BinOp::Mod, Str(s), _) => return self.percent_format(s, b),
            (BinOp::BitOr, Dict(x), Dict(y)) => {
                let mut m = x.borrow().clone();
                self.merge_maps(&mut m, y.borrow().clone(), "dict")?;
                return Ok(Value::Dict(Rc::new(std::cell::RefCell::new(m))));
            }
            _ => {}
        }
        if let (Instance(_), _) | (_, Instance(_)) = (a, b) {
            if let Some(r) = self.binop_dunders(op, a, b)? {
                return Ok(r);
            }
        }
        if let (BinOp::Add, Str(_)) = (op, a) {
            return Err(type_err(format!(
                "can only concatenate str (not \"{}\") to str",
                b.type_name()
            )));
        }
        if let (BinOp::Add, List(_)) = (op, a) {
            return Err(type_err(format!(
                "can only concatenate list (not \"{}\") to list",
                b.type_name()
            )));
        }
        if let (BinOp::Add, Size(_)) = (op, a) {
            return Err(type_err(format!(
                "can only concatenate tuple (not {}) to torch.Size",
                b.type_name()
            )));
        }
        Err(unsupported(op, &a.type_name(), &b.type_name()))
    }

    fn binop_bool(&mut self, op: BinOp, a: Value, b: &Value, orig: &Value) -> R<Value> {
        if let (Value::Bool(x), Value::Bool(y)) = (orig, b) {
            match op {
                BinOp::BitAnd => return Ok(Value::Bool(*x & *y)),
                BinOp::BitOr => return Ok(Value::Bool(*x | *y)),
                BinOp::BitXor => return Ok(Value::Bool(*x ^ *y)),
                _ => {}
            }
        }
        let b = match b {
            Value::Bool(y) => Value::Int(*y as i64),
            other => other.clone(),
        };
        match (&a, &b) {
            (Value::Int(_) | Value::Float(_), Value::Int(_) | Value::Float(_)) => {
                self.binop(op, &a, &b)
            }
            _ => self.binop_slow(op, &a, &b),
        }
    }

    pub fn unary(&mut self, op: UnaryOp, v: &Value) -> R<Value> {
        use Value::*;
        Ok(match (op, v) {
            (UnaryOp::Not, _) => Bool(!self.truthy(v)?),
            (UnaryOp::Neg, Int(i)) => Int(i.checked_neg().ok_or_else(overflow)?),
            (UnaryOp::Neg, Float(f)) => Float(-f),
            (UnaryOp::Neg, Bool(b)) => Int(-(*b as i64)),
            (UnaryOp::Pos, Int(_) | Float(_)) => v.clone(),
            (UnaryOp::Pos, Bool(b)) => Int(*b as i64),
            (UnaryOp::Invert, Int(i)) => Int(!i),
            (UnaryOp::Invert, Bool(b)) => Int(!(*b as i64)),
            (_, Tensor(t)) => return super::builtins::tensor_ops::tensor_unary(op, t),
            (_, SymInt(s)) => return self.sym_unary(op, s),
            (_, SymFloat(s)) => return self.symfloat_unary(op, s),
            _ => {
                let name = match op {
                    UnaryOp::Neg => "__neg__",
                    UnaryOp::Pos => "__pos__",
                    UnaryOp::Invert => "__invert__",
                    UnaryOp::Not => "__bool__",
                };
                if let Some(r) = self.call_dunder(v, name, &[])? {
                    return Ok(r);
                }
                let sym = match op {
                    UnaryOp::Neg => "-",
                    UnaryOp::Pos => "+",
                    _ => "~",
                };
                return Err(type_err(format!(
                    "bad operand type for unary {}: '{}'",
                    sym,
                    v.type_name()
                )));
            }
        })
    }

    /// Python truthiness (`__bool__`, then `__len__`, for instances).
    pub fn truthy(&mut self, v: &Value) -> R<bool> {
        use Value::*;
        Ok(match v {
            None => false,
            Bool(b) => *b,
            Int(i) => *i != 0,
            Float(f) => *f != 0.0,
            Str(s) => !s.is_empty(),
            List(l) => !l.borrow().is_empty(),
            Tuple(t) | Size(t) => !t.is_empty(),
            Dict(d) | Set(d) | FrozenSet(d) => !d.borrow().is_empty(),
            Range(r) => !r.is_empty(),
            Tensor(t) => return super::builtins::tensor_ops::tensor_truthy(t),
            SymInt(s) => super::capture::symint::truthy(s),
            SymFloat(s) => s.concrete() != 0.0,
            Instance(_) => {
                if let Some(r) = self.call_dunder(v, "__bool__", &[])? {
                    return match r {
                        Bool(b) => Ok(b),
                        _ => Err(type_err("__bool__ should return bool")),
                    };
                }
                if let Some(r) = self.call_dunder(v, "__len__", &[])? {
                    return self.truthy(&r);
                }
                true
            }
            _ => true,
        })
    }

    /// Python `==`.
    pub fn eq(&mut self, a: &Value, b: &Value) -> R<bool> {
        use Value::*;
        match (a, b) {
            (Int(x), Int(y)) => Ok(x == y),
            (Float(x), Float(y)) => Ok(x == y),
            (Str(x), Str(y)) => Ok(x == y),
            (SymInt(_) | SymFloat(_), _) | (_, SymInt(_) | SymFloat(_)) => {
                self.sym_compare(CmpOp::Eq, a, b)
            }
            (List(x), List(y)) => {
                if Rc::ptr_eq(x, y) {
                    return Ok(true);
                }
                let (x, y) = (x.borrow().clone(), y.borrow().clone());
                self.nested(CMP, |me| me.seq_eq(&x, &y))
            }
            (Tuple(x) | Size(x), Tuple(y) | Size(y)) => self.nested(CMP, |me| me.seq_eq(x, y)),
            (Dict(x), Dict(y)) => {
                let (x, y) = (x.borrow().clone(), y.borrow().clone());
                if x.len() != y.len() {
                    return Ok(false);
                }
                self.nested(CMP, |me| {
                    for (k, v) in x.iter() {
                        match y.get(k) {
                            Some(w) => {
                                if !me.eq(v, w)? {
                                    return Ok(false);
                                }
                            }
                            Option::None => return Ok(false),
                        }
                    }
                    Ok(true)
                })
            }
            (Set(x) | FrozenSet(x), Set(y) | FrozenSet(y)) => self.set_compare(x, y, CmpOp::Eq),
            (Range(x), Range(y)) => Ok(x.len() == y.len()
                && (x.is_empty() || (x.start == y.start && (x.len() == 1 || x.step == y.step)))),
            (Instance(_), _) | (_, Instance(_)) => self.eq_dunders(a, b),
            (Tensor(_), _) | (_, Tensor(_)) => self.tensor_cmp_bool(CmpOp::Eq, a, b),
            _ => Ok(simple_eq(a, b)),
        }
    }

    fn seq_eq(&mut self, x: &[Value], y: &[Value]) -> R<bool> {
        if x.len() != y.len() {
            return Ok(false);
        }
        for (p, q) in x.iter().zip(y.iter()) {
            if !p.is(q) && !self.eq(p, q)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// `a < b` (strict) for orderable values; user classes via `__lt__`/`__gt__`.
    pub fn lt(&mut self, a: &Value, b: &Value) -> R<bool> {
        self.order(CmpOp::Lt, a, b)
    }

    fn order(&mut self, op: CmpOp, a: &Value, b: &Value) -> R<bool> {
        use std::cmp::Ordering::*;
        use Value::*;
        let ord = match (a, b) {
            (Int(x), Int(y)) => Some(x.cmp(y)),
            (SymInt(_) | SymFloat(_), _) | (_, SymInt(_) | SymFloat(_)) => {
                return self.sym_compare(op, a, b)
            }
            (Int(_) | Float(_) | Bool(_), Int(_) | Float(_) | Bool(_)) => {
                num(a).partial_cmp(&num(b))
            }
            (Str(x), Str(y)) => Some(x.cmp(y)),
            (List(x), List(y)) => {
                let (x, y) = (x.borrow().clone(), y.borrow().clone());
                return self.nested(CMP, |me| me.seq_order(op, &x, &y));
            }
            (Tuple(x) | Size(x), Tuple(y) | Size(y)) => {
                let (x, y) = (x.clone(), y.clone());
                return self.nested(CMP, |me| me.seq_order(op, &x, &y));
            }
            (Set(x) | FrozenSet(x), Set(y) | FrozenSet(y)) => return self.set_compare(x, y, op),
            (Instance(_), _) | (_, Instance(_)) => return self.order_dunders(op, a, b),
            (Tensor(_), _) | (_, Tensor(_)) => return self.tensor_cmp_bool(op, a, b),
            _ => {
                return Err(type_err(format!(
                    "'{}' not supported between instances of '{}' and '{}'",
                    op.symbol(),
                    a.type_name(),
                    b.type_name()
                )))
            }
        };
        Ok(match (op, ord) {
            (_, Option::None) => false,
            (CmpOp::Lt, Some(o)) => o == Less,
            (CmpOp::LtE, Some(o)) => o != Greater,
            (CmpOp::Gt, Some(o)) => o == Greater,
            (_, Some(o)) => o != Less,
        })
    }

    fn seq_order(&mut self, op: CmpOp, x: &[Value], y: &[Value]) -> R<bool> {
        for (p, q) in x.iter().zip(y.iter()) {
            if !self.eq(p, q)? {
                return self.order(op, p, q);
            }
        }
        let (n, m) = (x.len(), y.len());
        Ok(match op {
            CmpOp::Lt => n < m,
            CmpOp::LtE => n <= m,
            CmpOp::Gt => n > m,
            _ => n >= m,
        })
    }

    /// One comparison operator.
    #[inline]
    pub fn compare(&mut self, op: CmpOp, a: &Value, b: &Value) -> R<bool> {
        match (op, a, b) {
            (CmpOp::Lt, Value::Int(x), Value::Int(y)) => Ok(x < y),
            (CmpOp::Lt, Value::Float(x), Value::Float(y)) => Ok(x < y),
            (CmpOp::Eq, _, _) => self.eq(a, b),
            (CmpOp::NotEq, Value::Instance(_), _) | (CmpOp::NotEq, _, Value::Instance(_)) => {
                self.ne_dunders(a, b)
            }
            (CmpOp::NotEq, _, _) => Ok(!self.eq(a, b)?),
            (CmpOp::Is, _, _) => Ok(a.is(b)),
            (CmpOp::IsNot, _, _) => Ok(!a.is(b)),
            (CmpOp::In, _, _) => self.contains(b, a),
            (CmpOp::NotIn, _, _) => Ok(!self.contains(b, a)?),
            _ => self.order(op, a, b),
        }
    }

    /// `item in container`.
    pub fn contains(&mut self, container: &Value, item: &Value) -> R<bool> {
        use Value::*;
        match container {
            Str(s) => match item {
                Str(t) => Ok(super::builtins::strmethods::contains_sub(s, t)),
                _ => Err(type_err(format!(
                    "'in <string>' requires string as left operand, not {}",
                    item.type_name()
                ))),
            },
            List(l) => {
                let items = l.borrow().clone();
                self.any_eq(&items, item)
            }
            Tuple(t) | Size(t) => self.any_eq(&t.clone(), item),
            Dict(d) | Set(d) | FrozenSet(d) => {
                let k = self.key_in(item.clone(), d)?;
                Ok(d.borrow().contains_key(&k))
            }
            Range(r) => Ok(match item {
                Int(i) => {
                    let n = r.len();
                    n > 0 && (i - r.start) % r.step == 0 && {
                        let k = (i - r.start) / r.step;
                        k >= 0 && k < n
                    }
                }
                _ => false,
            }),
            Tensor(t) => super::builtins::tensor_ops::tensor_contains(t, item),
            // an iterator (a generator) is consumed up to the first equal item
            Iter(_) => {
                while let Some(v) = self.next_of(container)? {
                    if v.is(item) || self.eq(&v, item)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            Instance(_) => {
                if let Some(r) =
                    self.call_dunder(container, "__contains__", std::slice::from_ref(item))?
                {
                    return self.truthy(&r);
                }
                let items = self.collect(container)?;
                self.any_eq(&items, item)
            }
            _ => Err(type_err(format!(
                "argument of type '{}' is not iterable",
                container.type_name()
            ))),
        }
    }

    fn any_eq(&mut self, items: &[Value], item: &Value) -> R<bool> {
        for x in items {
            if x.is(item) || self.eq(x, item)? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// A number as f64 (ints, floats, bools).
pub fn num(v: &Value) -> f64 {
    match v {
        Value::Int(i) => *i as f64,
        Value::Float(f) => *f,
        Value::Bool(b) => *b as i64 as f64,
        _ => f64::NAN,
    }
}
