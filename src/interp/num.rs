//! The scalar fast path: small int/float expressions over locals and constants, computed
//! without building, cloning or dropping `Value` temporaries.
//!
//! Everything here only reads frame slots and constants, so when it gives up (`None`: a
//! non-number, an overflow, a division by zero, a bigger expression) the caller simply
//! evaluates the same expression the general way, which raises the proper error.

use super::tree::{Ex, ExKind, Place};
use super::value::Value;
use super::Interp;
use crate::syntax::ast::{BinOp, CmpOp};

/// An unboxed number.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    I(i64),
    F(f64),
}

impl Num {
    #[inline]
    pub fn of(v: &Value) -> Option<Num> {
        match v {
            Value::Int(i) => Some(Num::I(*i)),
            Value::Float(f) => Some(Num::F(*f)),
            _ => None,
        }
    }

    #[inline]
    pub fn value(self) -> Value {
        match self {
            Num::I(i) => Value::Int(i),
            Num::F(f) => Value::Float(f),
        }
    }

    #[inline]
    fn float(self) -> f64 {
        match self {
            Num::I(i) => i as f64,
            Num::F(f) => f,
        }
    }
}

/// How many nested binary operators the fast path looks through (bounds its recursion).
const MAX_NEST: u32 = 3;

/// `x op y` with Python's semantics, or `None` where it would need the general path
/// (integer overflow, division by zero, a negative shift, `**`, float `//` and `%`).
#[inline]
pub fn num_op(op: BinOp, x: Num, y: Num) -> Option<Num> {
    match (x, y) {
        (Num::I(a), Num::I(b)) => match op {
            BinOp::Add => a.checked_add(b).map(Num::I),
            BinOp::Sub => a.checked_sub(b).map(Num::I),
            BinOp::Mul => a.checked_mul(b).map(Num::I),
            BinOp::Div if b != 0 => Some(Num::F(a as f64 / b as f64)),
            BinOp::Mod if b != 0 => crate::pyfmt::int_mod(a, b).map(Num::I),
            BinOp::FloorDiv if b != 0 => crate::pyfmt::int_floordiv(a, b).map(Num::I),
            BinOp::BitAnd => Some(Num::I(a & b)),
            BinOp::BitOr => Some(Num::I(a | b)),
            BinOp::BitXor => Some(Num::I(a ^ b)),
            BinOp::RShift if b >= 0 => Some(Num::I(a >> b.min(63))),
            BinOp::LShift if (0..63).contains(&b) && (a << b) >> b == a => Some(Num::I(a << b)),
            _ => None,
        },
        _ => {
            let (a, b) = (x.float(), y.float());
            match op {
                BinOp::Add => Some(Num::F(a + b)),
                BinOp::Sub => Some(Num::F(a - b)),
                BinOp::Mul => Some(Num::F(a * b)),
                BinOp::Div if b != 0.0 => Some(Num::F(a / b)),
                _ => None,
            }
        }
    }
}

/// `x + y` and `x - y` on ints inline (`n - 1`, `i + 1`); `None` for other operators
/// and on overflow (the caller then goes the general way, which raises).
#[inline(always)]
pub fn int_add_sub(op: BinOp, x: i64, y: i64) -> Option<Num> {
    match op {
        BinOp::Add => x.checked_add(y).map(Num::I),
        BinOp::Sub => x.checked_sub(y).map(Num::I),
        _ => None,
    }
}

/// `x op y` for two ints or two floats, or `None` (mixed types go the general way,
/// which compares big ints with floats exactly).
#[inline]
pub fn num_cmp(op: CmpOp, x: Num, y: Num) -> Option<bool> {
    match (x, y) {
        (Num::I(a), Num::I(b)) => cmp(op, a, b),
        (Num::F(a), Num::F(b)) => cmp(op, a, b),
        _ => None,
    }
}

#[inline(always)]
fn cmp<T: PartialOrd>(op: CmpOp, a: T, b: T) -> Option<bool> {
    Some(match op {
        CmpOp::Lt => a < b,
        CmpOp::LtE => a <= b,
        CmpOp::Gt => a > b,
        CmpOp::GtE => a >= b,
        CmpOp::Eq => a == b,
        CmpOp::NotEq => a != b,
        _ => return None,
    })
}

/// False when `e` can never be computed on the fast path (a call, an attribute, ...):
/// checking this first skips the fast path's call for such operands.
#[inline(always)]
fn maybe_num(e: &Ex) -> bool {
    matches!(
        e.kind,
        ExKind::Const(_)
            | ExKind::Load(Place::Local(..))
            | ExKind::Binary(..)
            | ExKind::Subscript(..)
    )
}

impl Interp {
    /// The value of `e` if it is a number computable on the fast path.
    #[inline(always)]
    pub fn num(&self, e: &Ex) -> Option<Num> {
        self.num_at(e, 0)
    }

    /// The right-hand side of `x op= e` on the fast path: a binary operator's first
    /// level inline (`s += i * 0.5` makes no call), anything else through `num`.
    #[inline(always)]
    pub fn num_rhs(&self, e: &Ex) -> Option<Num> {
        match &e.kind {
            ExKind::Binary(op, a, b) => self.num_binop(*op, a, b),
            _ => self.num(e),
        }
    }

    /// `a op b` on the fast path, if both sides are numbers it can compute.
    #[inline(always)]
    pub fn num_binop(&self, op: BinOp, a: &Ex, b: &Ex) -> Option<Num> {
        if let Some((x, c)) = self.local_int_const(a, b) {
            return int_add_sub(op, x, c).or_else(|| num_op(op, Num::I(x), Num::I(c)));
        }
        if !(maybe_num(a) && maybe_num(b)) {
            return None;
        }
        // The first level inline (no call for `n - 1`); nested operators via `num_bin`.
        let x = self.num_at(a, 1)?;
        let y = self.num_at(b, 1)?;
        if let (Num::I(p), Num::I(q)) = (x, y) {
            if let Some(n) = int_add_sub(op, p, q) {
                return Some(n);
            }
        }
        num_op(op, x, y)
    }

    /// `(x, c)` when `a` is a local holding the int `x` and `b` the int constant `c`
    /// (`n - 1`, `n < 2`): the most common operand shape, matched in one step.
    #[inline(always)]
    pub fn local_int_const(&self, a: &Ex, b: &Ex) -> Option<(i64, i64)> {
        if let (ExKind::Load(Place::Local(s, _)), ExKind::Const(Value::Int(c))) = (&a.kind, &b.kind)
        {
            if let Value::Int(x) = self.local(*s) {
                return Some((*x, *c));
            }
        }
        None
    }

    /// A call argument that is a binary operator over numbers (`f(n - 1)`), on the fast
    /// path; leaves are left to `operand`, which loads them inline.
    #[inline(always)]
    pub fn num_arg(&self, e: &Ex) -> Option<Num> {
        match &e.kind {
            ExKind::Binary(op, a, b) => self.num_binop(*op, a, b),
            _ => None,
        }
    }

    /// Leaves inline; nested operators through `num_bin` (at most `MAX_NEST` deep).
    #[inline(always)]
    fn num_at(&self, e: &Ex, nest: u32) -> Option<Num> {
        match &e.kind {
            ExKind::Const(v) => Num::of(v),
            ExKind::Load(Place::Local(s, _)) => Num::of(self.local(*s)),
            ExKind::Binary(op, a, b) if nest < MAX_NEST => self.num_bin(*op, a, b, nest + 1),
            ExKind::Subscript(o, i) => self.num_item(o, i),
            _ => None,
        }
    }

    /// `xs[i]` when `xs` is a local holding a list, `i` an int constant or local in
    /// range, and the element a number (see `index::list_num`).
    #[inline]
    fn num_item(&self, o: &Ex, i: &Ex) -> Option<Num> {
        let ExKind::Load(Place::Local(s, _)) = &o.kind else {
            return None;
        };
        let k = match &i.kind {
            ExKind::Const(v) => v,
            ExKind::Load(Place::Local(t, _)) => self.local(*t),
            _ => return None,
        };
        if crate::compile::capture::trace::active() {
            return None;
        }
        super::index::list_num(self.local(*s), k)
    }

    fn num_bin(&self, op: BinOp, a: &Ex, b: &Ex, nest: u32) -> Option<Num> {
        let x = self.num_at(a, nest)?;
        let y = self.num_at(b, nest)?;
        num_op(op, x, y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_ops_follow_python_and_give_up_on_overflow() {
        assert_eq!(num_op(BinOp::Add, Num::I(2), Num::I(3)), Some(Num::I(5)));
        assert_eq!(num_op(BinOp::Sub, Num::I(2), Num::I(3)), Some(Num::I(-1)));
        assert_eq!(num_op(BinOp::Mul, Num::I(-4), Num::I(3)), Some(Num::I(-12)));
        // Python: 7 / 2 == 3.5 (true division of ints gives a float).
        assert_eq!(num_op(BinOp::Div, Num::I(7), Num::I(2)), Some(Num::F(3.5)));
        assert_eq!(num_op(BinOp::Add, Num::I(i64::MAX), Num::I(1)), None);
        assert_eq!(num_op(BinOp::Div, Num::I(1), Num::I(0)), None);
        // Python's floor division and modulo (signs follow the divisor); by zero, and
        // i64::MIN // -1 (overflow), are left to the general path (which raises)
        assert_eq!(
            num_op(BinOp::FloorDiv, Num::I(7), Num::I(2)),
            Some(Num::I(3))
        );
        assert_eq!(
            num_op(BinOp::FloorDiv, Num::I(-7), Num::I(2)),
            Some(Num::I(-4))
        );
        assert_eq!(num_op(BinOp::Mod, Num::I(7), Num::I(-2)), Some(Num::I(-1)));
        assert_eq!(num_op(BinOp::Mod, Num::I(7), Num::I(0)), None);
        assert_eq!(num_op(BinOp::FloorDiv, Num::I(i64::MIN), Num::I(-1)), None);
        assert_eq!(num_op(BinOp::FloorDiv, Num::F(7.0), Num::I(2)), None);
        assert_eq!(
            num_op(BinOp::RShift, Num::I(-9), Num::I(70)),
            Some(Num::I(-1))
        );
        assert_eq!(num_op(BinOp::LShift, Num::I(1), Num::I(63)), None);
        assert_eq!(num_op(BinOp::RShift, Num::I(1), Num::I(-1)), None);
    }

    #[test]
    fn inline_add_sub_gives_up_on_overflow_and_other_operators() {
        assert_eq!(int_add_sub(BinOp::Sub, 27, 1), Some(Num::I(26)));
        assert_eq!(int_add_sub(BinOp::Add, -3, 1), Some(Num::I(-2)));
        // overflow and other operators are left to the general path (which raises)
        assert_eq!(int_add_sub(BinOp::Add, i64::MAX, 1), None);
        assert_eq!(int_add_sub(BinOp::Sub, i64::MIN, 1), None);
        assert_eq!(int_add_sub(BinOp::Mul, 2, 3), None);
    }

    #[test]
    fn mixed_ops_promote_to_float() {
        assert_eq!(
            num_op(BinOp::Mul, Num::I(3), Num::F(0.5)),
            Some(Num::F(1.5))
        );
        assert_eq!(
            num_op(BinOp::Sub, Num::F(1.0), Num::I(3)),
            Some(Num::F(-2.0))
        );
        assert_eq!(num_op(BinOp::Div, Num::F(1.0), Num::F(0.0)), None);
        assert_eq!(num_op(BinOp::Pow, Num::F(2.0), Num::F(2.0)), None);
    }

    #[test]
    fn comparisons_only_for_same_kind() {
        assert_eq!(num_cmp(CmpOp::Lt, Num::I(1), Num::I(2)), Some(true));
        assert_eq!(num_cmp(CmpOp::GtE, Num::F(1.0), Num::F(2.0)), Some(false));
        assert_eq!(num_cmp(CmpOp::NotEq, Num::I(1), Num::I(1)), Some(false));
        // NaN compares unequal to itself, as in Python.
        assert_eq!(
            num_cmp(CmpOp::Eq, Num::F(f64::NAN), Num::F(f64::NAN)),
            Some(false)
        );
        assert_eq!(num_cmp(CmpOp::Lt, Num::I(1), Num::F(2.0)), None);
        assert_eq!(num_cmp(CmpOp::Is, Num::I(1), Num::I(1)), None);
    }
}
