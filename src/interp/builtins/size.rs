//! `torch.Size`, the type of `t.shape` and `t.size()`: a tuple subclass of ints
//! (`Value::Size`, the same items as a tuple) that prints as `torch.Size([2, 3])`
//! (interp/repr.rs), has `numel()`, and stays a `torch.Size` through slicing, `+` and
//! `*` (PyTorch's rules: interp/index.rs, interp/ops.rs).

use super::arity;
use crate::interp::value::Value;
use crate::interp::{type_err, Interp, R};
use crate::syntax::ast::BinOp;
use std::rc::Rc;

/// `torch.Size(seq)`: the items of an iterable of ints (bools count as ints).
pub fn construct(me: &mut Interp, args: &[Value]) -> R<Value> {
    arity("Size", args, 0, 1)?;
    let items = match args.first() {
        None => Vec::new(),
        Some(v) => me.collect(v)?,
    };
    from_items(items)
}

/// A `torch.Size` of `items`, or PyTorch's TypeError naming the first non-int item
/// (also the result of `+`/`*` where a `torch.Size` took part).
pub fn from_items(items: Vec<Value>) -> R<Value> {
    let mut out = Vec::with_capacity(items.len());
    for (k, v) in items.into_iter().enumerate() {
        out.push(match v {
            Value::Bool(b) => Value::Int(b as i64),
            Value::Int(_) | Value::SymInt(_) => v,
            other => {
                return Err(type_err(format!(
                    "torch.Size() takes an iterable of 'int' (item {k} is '{}')",
                    other.type_name()
                )))
            }
        });
    }
    Ok(Value::Size(out.into()))
}

/// The methods of a `torch.Size`: `numel()` (the product, wrapping as PyTorch's int64
/// does; symbolic while it stays affine, as a tensor's `numel()`) and tuple's
/// `count`/`index`.
pub fn method(me: &mut Interp, t: &Rc<[Value]>, name: &str, args: &[Value]) -> R<Value> {
    if name != "numel" {
        return super::seqmethods::tuple_method(me, t, name, args);
    }
    arity(name, args, 0, 0)?;
    let mut n = Value::Int(1);
    for v in t.iter() {
        n = match (&n, v) {
            (Value::Int(a), Value::Int(b)) => Value::Int(a.wrapping_mul(*b)),
            _ => me.sym_binop(BinOp::Mul, &n, v)?,
        };
    }
    Ok(n)
}

/// Whether a `torch.Size` has a method of this name.
pub fn has_method(name: &str) -> bool {
    name == "numel" || super::seqmethods::TUPLE_METHODS.contains(&name)
}
