//! Runtime scalars in the interpreter (`compile::capture::symfloat`): a float the
//! capture loads as a `Value::SymFloat`. Float arithmetic keeps it a runtime scalar, and
//! `+ - * /` with a float tensor take it as a 0-d tensor of that tensor's dtype; every
//! other use sees its (then guarded) value through `symint::concrete`.

use super::symint::concrete;
use crate::compile::capture::symfloat::{self, Operand, SymFloat};
use crate::interp::builtins::tensor_ops::elementwise;
use crate::interp::ops::float_op;
use crate::interp::value::Value;
use crate::interp::{Interp, R};
use crate::ops::BinaryOp;
use crate::syntax::ast::{BinOp, UnaryOp};
use std::rc::Rc;

/// The float operand of `v`: a float, a bool, an int a float holds exactly, or a
/// runtime scalar.
fn operand(v: &Value) -> Option<Operand<'_>> {
    const EXACT: i64 = 1 << 53;
    match v {
        Value::Float(f) => Some(Operand::Plain(*f)),
        Value::Bool(b) => Some(Operand::Plain(f64::from(u8::from(*b)))),
        Value::Int(i) if (-EXACT..=EXACT).contains(i) => Some(Operand::Plain(*i as f64)),
        Value::SymFloat(s) => Some(Operand::Sym(s)),
        _ => None,
    }
}

/// A runtime scalar as a value (noted as a symbolic value made: `symint::note_made`).
pub(crate) fn sym_float(s: SymFloat) -> Value {
    super::symint::note_made();
    Value::SymFloat(Rc::new(s))
}

fn value_of(o: &Operand<'_>) -> f64 {
    match o {
        Operand::Plain(f) => *f,
        Operand::Sym(s) => s.value,
    }
}

/// The operators that stay runtime scalars (and take one with a float tensor).
fn arith_op(op: BinOp) -> Option<BinaryOp> {
    Some(match op {
        BinOp::Add => BinaryOp::Add,
        BinOp::Sub => BinaryOp::Sub,
        BinOp::Mul => BinaryOp::Mul,
        BinOp::Div => BinaryOp::Div,
        _ => return None,
    })
}

impl Interp {
    /// `a op b` when one side is a runtime scalar.
    pub(crate) fn symfloat_binop(&mut self, op: BinOp, a: &Value, b: &Value) -> R<Value> {
        if let Some(top) = arith_op(op) {
            let as_tensor =
                |s: &SymFloat, t: &crate::tensor::Tensor| s.tensor_as(t.dtype()).map(Value::Tensor);
            let pair = match (a, b) {
                (Value::Tensor(x), Value::SymFloat(s)) => as_tensor(s, x).map(|st| (a.clone(), st)),
                (Value::SymFloat(s), Value::Tensor(y)) => as_tensor(s, y).map(|st| (st, b.clone())),
                _ => None,
            };
            if let Some((x, y)) = pair {
                if let Some(r) = elementwise(top, &x, &y)? {
                    return Ok(r);
                }
            }
            if let (Some(x), Some(y)) = (operand(a), operand(b)) {
                if let Ok(Value::Float(v)) = float_op(op, value_of(&x), value_of(&y)) {
                    if let Some(s) = symfloat::arith(top, x, y, v) {
                        return Ok(sym_float(s));
                    }
                }
            }
        }
        self.binop(op, &concrete(a), &concrete(b))
    }

    /// `a op b` with a symbolic int where the result is a float (`T / 2`, `T * 0.5`,
    /// `x / T` of a float tensor): the int as a runtime scalar (None: not such a use).
    pub(crate) fn symint_as_float(&mut self, op: BinOp, a: &Value, b: &Value) -> Option<R<Value>> {
        arith_op(op)?;
        let floaty = |v: &Value| match v {
            Value::Float(_) | Value::SymFloat(_) => true,
            Value::Tensor(t) => t.dtype().is_float(),
            _ => false,
        };
        if !(op == BinOp::Div || floaty(a) || floaty(b)) {
            return None;
        }
        let lift = |v: &Value| match v {
            Value::SymInt(n) => symfloat::from_int(n).map(sym_float),
            other => Some(other.clone()),
        };
        let (x, y) = (lift(a)?, lift(b)?);
        Some(self.symfloat_binop(op, &x, &y))
    }

    /// A unary operator on a runtime scalar.
    pub(crate) fn symfloat_unary(&mut self, op: UnaryOp, s: &Rc<SymFloat>) -> R<Value> {
        match op {
            UnaryOp::Pos => Ok(Value::SymFloat(s.clone())),
            UnaryOp::Neg => match symfloat::neg(s) {
                Some(r) => Ok(sym_float(r)),
                None => Ok(Value::Float(-s.value)),
            },
            _ => self.unary(op, &Value::Float(s.concrete())),
        }
    }
}
