//! Branch conditions (`if`, `while`, `elif`): `not`, `and`, `or` and single comparisons
//! tested for their truth without making the bool values an expression would evaluate to.

use super::tree::{Ex, ExKind, Place};
use super::value::{discard, Value};
use super::{at, Interp, R};
use crate::source::Span;
use crate::syntax::ast::{BoolOp, CmpOp, UnaryOp};

impl Interp {
    /// The truth of condition `c`, outside captures (a capture branches on tensor values,
    /// see `cond_or_traced`). `blame` is where a failing `bool()` of `c`'s value is
    /// reported: the enclosing `not`/`and`/`or` when there is one, as evaluating it would.
    /// Each operand's `__bool__` runs once, as in CPython's jumps (`if a and b:` tests
    /// `a` once, not again on the value `a and b` gives).
    pub(crate) fn truth(&mut self, c: &Ex, blame: Span) -> R<bool> {
        match &c.kind {
            ExKind::Compare(a, rest) if rest.len() == 1 => {
                let (op, b) = &rest[0];
                if let Some(r) = self.num_compare(a, *op, b) {
                    return Ok(r);
                }
                // `x is None` / `x is not None`: one tag test (a local is not cloned)
                if let (CmpOp::Is | CmpOp::IsNot, ExKind::Const(Value::None)) = (op, &b.kind) {
                    let none = match &a.kind {
                        ExKind::Load(Place::Local(s, _))
                            if !matches!(self.local(*s), Value::Unbound) =>
                        {
                            matches!(self.local(*s), Value::None)
                        }
                        _ => {
                            let x = self.operand(a)?;
                            let none = matches!(x, Value::None);
                            discard(x);
                            none
                        }
                    };
                    return Ok(none == (*op == CmpOp::Is));
                }
                let x = self.operand(a)?;
                let y = self.operand(b)?;
                return match (&x, &y) {
                    (Value::Tensor(_), _) | (_, Value::Tensor(_)) => {
                        let v = self.compare_value(*op, &x, &y).map_err(|e| at(e, c.span))?;
                        self.truthy(&v).map_err(|e| at(e, blame))
                    }
                    _ => self.compare(*op, &x, &y).map_err(|e| at(e, c.span)),
                };
            }
            ExKind::Unary(UnaryOp::Not, x) => return Ok(!self.truth(x, c.span)?),
            ExKind::BoolOp(op, a, b) => {
                let t = self.truth(a, c.span)?;
                return match (op, t) {
                    (BoolOp::And, false) => Ok(false),
                    (BoolOp::Or, true) => Ok(true),
                    _ => self.truth(b, blame),
                };
            }
            _ => {}
        }
        let v = self.eval(c)?;
        self.truthy(&v).map_err(|e| at(e, blame))
    }
}
