//! Operators on tensors, as the interpreter's operator code calls them: binary ops with
//! scalars on either side, comparisons (bool tensors), unary ops, truthiness, in-place
//! augmented assignment, `len`, iteration and `in`.

use super::tensor::{scalar_of, te};
use crate::error::ErrorKind;
use crate::interp::value::{IterObj, Value};
use crate::interp::{err, type_err, Interp, R};
use crate::ops::{self, BinaryOp, UnaryOp as TUnary};
use crate::syntax::ast::{BinOp, CmpOp, UnaryOp};
use crate::tensor::indexing::TensorIndex;
use crate::tensor::inplace::Operand;
use crate::tensor::{linalg, Tensor};

/// The tensor op of a Kiln binary operator (`@` is handled separately).
fn binary_op(op: BinOp) -> Option<BinaryOp> {
    Some(match op {
        BinOp::Add => BinaryOp::Add,
        BinOp::Sub => BinaryOp::Sub,
        BinOp::Mul => BinaryOp::Mul,
        BinOp::Div => BinaryOp::Div,
        BinOp::FloorDiv => BinaryOp::FloorDiv,
        BinOp::Mod => BinaryOp::Rem,
        BinOp::Pow => BinaryOp::Pow,
        BinOp::BitAnd => BinaryOp::And,
        BinOp::BitOr => BinaryOp::Or,
        BinOp::BitXor => BinaryOp::Xor,
        BinOp::MatMul | BinOp::LShift | BinOp::RShift => return None,
    })
}

/// The tensor op of a comparison operator (`is`/`in` have none).
pub fn cmp_op(op: CmpOp) -> Option<BinaryOp> {
    Some(match op {
        CmpOp::Eq => BinaryOp::Eq,
        CmpOp::NotEq => BinaryOp::Ne,
        CmpOp::Lt => BinaryOp::Lt,
        CmpOp::LtE => BinaryOp::Le,
        CmpOp::Gt => BinaryOp::Gt,
        CmpOp::GtE => BinaryOp::Ge,
        _ => return None,
    })
}

fn unsupported(op: &str, a: &Value, b: &Value) -> crate::interp::Exc {
    type_err(format!(
        "unsupported operand type(s) for {}: '{}' and '{}'",
        op,
        a.type_name(),
        b.type_name()
    ))
}

/// `a op b` where `op` is an elementwise tensor op and at least one side is a tensor.
/// `None` when the other side is not a number or tensor (the caller tries dunders).
pub fn elementwise(op: BinaryOp, a: &Value, b: &Value) -> R<Option<Value>> {
    let r = match (a, b) {
        (Value::Tensor(x), Value::Tensor(y)) => ops::binary(op, x, y),
        (Value::Tensor(x), other) => match scalar_of(other) {
            Some(s) => ops::binary_scalar(op, x, s, false),
            None => return Ok(None),
        },
        (other, Value::Tensor(y)) => match scalar_of(other) {
            Some(s) => ops::binary_scalar(op, y, s, true),
            None => return Ok(None),
        },
        _ => return Ok(None),
    };
    r.map(|t| Some(Value::Tensor(t))).map_err(te)
}

impl Interp {
    /// A binary operator with a tensor operand; `None` defers to the other operand's
    /// reflected dunder (an instance) or the generic TypeError.
    pub fn tensor_binop(&mut self, op: BinOp, a: &Value, b: &Value) -> R<Option<Value>> {
        if let Some(top) = binary_op(op) {
            return elementwise(top, a, b);
        }
        match (op, a, b) {
            (BinOp::MatMul, Value::Tensor(x), Value::Tensor(y)) => linalg::matmul(x, y)
                .map(|t| Some(Value::Tensor(t)))
                .map_err(te),
            (_, Value::Instance(_), _) | (_, _, Value::Instance(_)) => Ok(None),
            _ => Err(unsupported(op.symbol(), a, b)),
        }
    }

    /// A comparison with a tensor operand: a bool tensor (`==` against a non-number is
    /// plain False/True, as in PyTorch).
    pub fn tensor_compare(&mut self, op: CmpOp, a: &Value, b: &Value) -> R<Value> {
        let Some(top) = cmp_op(op) else {
            return self.compare(op, a, b).map(Value::Bool);
        };
        if let Some(v) = elementwise(top, a, b)? {
            return Ok(v);
        }
        match op {
            CmpOp::Eq => Ok(Value::Bool(false)),
            CmpOp::NotEq => Ok(Value::Bool(true)),
            _ => Err(type_err(format!(
                "'{}' not supported between instances of '{}' and '{}'",
                op.symbol(),
                a.type_name(),
                b.type_name()
            ))),
        }
    }

    /// A comparison that may produce a tensor (what `a < b` evaluates to).
    pub fn compare_value(&mut self, op: CmpOp, a: &Value, b: &Value) -> R<Value> {
        if matches!(a, Value::Tensor(_)) || matches!(b, Value::Tensor(_)) {
            return self.tensor_compare(op, a, b);
        }
        self.compare(op, a, b).map(Value::Bool)
    }

    /// `==` as a bool when a tensor is involved (for `in`, list equality, `sorted`):
    /// the elementwise result's truth value.
    pub fn tensor_cmp_bool(&mut self, op: CmpOp, a: &Value, b: &Value) -> R<bool> {
        let v = self.tensor_compare(op, a, b)?;
        self.truthy(&v)
    }
}

/// `-t`, `+t`, `~t`.
pub fn tensor_unary(op: UnaryOp, t: &Tensor) -> R<Value> {
    let r = match op {
        UnaryOp::Neg => ops::unary(TUnary::Neg, t),
        UnaryOp::Invert => ops::unary(TUnary::Not, t),
        UnaryOp::Pos => return Ok(Value::Tensor(t.clone())),
        UnaryOp::Not => return Ok(Value::Bool(!tensor_truthy(t)?)),
    };
    r.map(Value::Tensor).map_err(te)
}

/// `bool(t)` / `if t:` (one-element tensors only).
pub fn tensor_truthy(t: &Tensor) -> R<bool> {
    if t.numel() != 1 {
        return Err(err(
            ErrorKind::RuntimeError,
            "Boolean value of Tensor with more than one value is ambiguous",
        ));
    }
    Ok(t.item().map_err(te)?.as_bool())
}

/// `t op= rhs`: writes into `t`'s storage (PyTorch's `__iadd__` and friends). Returns
/// false for operators that have no in-place form (the caller rebinds instead).
pub fn tensor_inplace(op: BinOp, t: &Tensor, rhs: &Value) -> R<bool> {
    let Some(top) = binary_op(op) else {
        return Ok(false);
    };
    // A runtime scalar (`compile::capture::symfloat`) as a 0-d tensor of `t`'s dtype.
    let runtime = match rhs {
        Value::SymFloat(s)
            if matches!(
                top,
                BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div
            ) =>
        {
            s.tensor_as(t.dtype())
        }
        _ => None,
    };
    let operand = match (rhs, &runtime) {
        (_, Some(r)) | (Value::Tensor(r), _) => Operand::Tensor(r),
        (other, None) => match scalar_of(other) {
            Some(s) => Operand::Scalar(s),
            None => {
                return Err(type_err(format!(
                    "unsupported operand type(s) for {}=: 'Tensor' and '{}'",
                    op.symbol(),
                    other.type_name()
                )))
            }
        },
    };
    t.binary_(top, operand).map_err(te)?;
    Ok(true)
}

/// `len(t)`: the size of dim 0.
pub fn tensor_len(t: &Tensor) -> R<i64> {
    crate::compile::capture::trace::note_size_read(t, Some(0));
    match t.shape().first() {
        Some(&n) => Ok(n as i64),
        None => Err(type_err("len() of a 0-d tensor")),
    }
}

/// The slices of `t` along dim 0 (what iterating a tensor yields).
pub fn tensor_rows(t: &Tensor) -> R<Vec<Value>> {
    crate::compile::capture::trace::note_size_read(t, Some(0));
    let n = match t.shape().first() {
        Some(&n) => n,
        None => return Err(type_err("iteration over a 0-d tensor")),
    };
    (0..n)
        .map(|i| {
            t.index(&[TensorIndex::Int(i as i64)])
                .map(Value::Tensor)
                .map_err(te)
        })
        .collect()
}

/// An iterator over the rows of `t`.
pub fn tensor_iter(t: &Tensor) -> R<IterObj> {
    Ok(IterObj::Seq {
        items: tensor_rows(t)?.into(),
        pos: 0,
    })
}

/// `x in t`: any element equal to `x`.
pub fn tensor_contains(t: &Tensor, x: &Value) -> R<bool> {
    let r = elementwise(BinaryOp::Eq, &Value::Tensor(t.clone()), x)?;
    let Some(Value::Tensor(eq)) = &r else {
        return Err(type_err(format!(
            "'in <Tensor>' requires a number or tensor as left operand, not {}",
            x.type_name()
        )));
    };
    let any = eq.all_any(&[], false, true).map_err(te)?;
    Ok(any.item().map_err(te)?.as_bool())
}
