//! Affine size expressions over symbols: `c1*s1 + c2*s2 + k` with integer coefficients,
//! the form every symbolic dim of a graph takes (a plain symbol, a constant, a sum from
//! `cat`, a multiple from `repeat`/`reshape`, an offset from slicing).

use smallvec::SmallVec;
use std::fmt;

pub use crate::ir::sym::{SymExpr, SymId, SymShape};

impl SymExpr {
    /// The constant `n`.
    pub fn konst(n: i64) -> SymExpr {
        SymExpr {
            terms: SmallVec::new(),
            k: n,
        }
    }

    /// The plain symbol `s`.
    pub fn sym(s: SymId) -> SymExpr {
        let mut terms = SmallVec::new();
        terms.push((s, 1));
        SymExpr { terms, k: 0 }
    }

    /// The constant value when the expression has no symbol.
    pub fn as_const(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.k)
    }

    /// The symbol when the expression is exactly one symbol (coefficient 1, no offset).
    pub fn as_sym(&self) -> Option<SymId> {
        match self.terms.as_slice() {
            [(s, 1)] if self.k == 0 => Some(*s),
            _ => None,
        }
    }

    /// `c * s` when the expression is a single scaled symbol without offset.
    pub fn as_scaled(&self) -> Option<(SymId, i64)> {
        match self.terms.as_slice() {
            [(s, c)] if self.k == 0 => Some((*s, *c)),
            _ => None,
        }
    }

    /// The symbols the expression uses.
    pub fn symbols(&self) -> impl Iterator<Item = SymId> + '_ {
        self.terms.iter().map(|t| t.0)
    }

    /// `self + other` (None on overflow).
    pub fn add(&self, other: &SymExpr) -> Option<SymExpr> {
        let mut out = self.clone();
        out.k = out.k.checked_add(other.k)?;
        for &(s, c) in &other.terms {
            out.add_term(s, c)?;
        }
        Some(out)
    }

    fn add_term(&mut self, s: SymId, c: i64) -> Option<()> {
        match self.terms.iter().position(|t| t.0 >= s) {
            Some(i) if self.terms[i].0 == s => {
                self.terms[i].1 = self.terms[i].1.checked_add(c)?;
                if self.terms[i].1 == 0 {
                    self.terms.remove(i);
                }
            }
            Some(i) => self.terms.insert(i, (s, c)),
            None => self.terms.push((s, c)),
        }
        Some(())
    }

    /// `self * c` (None on overflow).
    pub fn scale(&self, c: i64) -> Option<SymExpr> {
        if c == 0 {
            return Some(SymExpr::konst(0));
        }
        let mut out = self.clone();
        out.k = out.k.checked_mul(c)?;
        for t in &mut out.terms {
            t.1 = t.1.checked_mul(c)?;
        }
        Some(out)
    }

    /// `self // c` (Python's floor division, `c > 0`) when every coefficient divides by
    /// `c`: the quotient is then affine at every size (only the offset is floored).
    pub fn floor_div(&self, c: i64) -> Option<SymExpr> {
        if c <= 0 || self.terms.iter().any(|t| t.1 % c != 0) {
            return None;
        }
        let mut out = self.clone();
        out.k = self.k.div_euclid(c);
        for t in &mut out.terms {
            t.1 /= c;
        }
        Some(out)
    }

    /// `self / c` when every coefficient and the offset divide exactly.
    pub fn div_exact(&self, c: i64) -> Option<SymExpr> {
        if c == 0 || self.k % c != 0 || self.terms.iter().any(|t| t.1 % c != 0) {
            return None;
        }
        let mut out = self.clone();
        out.k /= c;
        for t in &mut out.terms {
            t.1 /= c;
        }
        Some(out)
    }

    /// The value with every symbol replaced by `value(symbol)` (None on overflow or an
    /// unknown symbol).
    pub fn eval(&self, value: impl Fn(SymId) -> Option<i64>) -> Option<i64> {
        self.terms.iter().try_fold(self.k, |acc, &(s, c)| {
            acc.checked_add(value(s)?.checked_mul(c)?)
        })
    }

    /// The expression with every symbol replaced by `f(symbol)`.
    pub fn subst(&self, f: &impl Fn(SymId) -> SymExpr) -> Option<SymExpr> {
        self.terms
            .iter()
            .try_fold(SymExpr::konst(self.k), |acc, &(s, c)| {
                acc.add(&f(s).scale(c)?)
            })
    }
}

impl fmt::Display for SymExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.terms.is_empty() {
            return write!(f, "{}", self.k);
        }
        for (i, &(s, c)) in self.terms.iter().enumerate() {
            let sign = if i > 0 && c >= 0 { "+" } else { "" };
            match c {
                1 => write!(f, "{sign}s{s}")?,
                -1 => write!(f, "-s{s}")?,
                _ => write!(f, "{sign}{c}*s{s}")?,
            }
        }
        match self.k {
            0 => Ok(()),
            k if k > 0 => write!(f, "+{k}"),
            k => write!(f, "{k}"),
        }
    }
}

/// `[s0, 32]`.
pub fn shape_text(s: &[SymExpr]) -> String {
    let parts: Vec<String> = s.iter().map(|e| e.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// A fully constant symbolic shape.
pub fn fixed_shape(shape: &[usize]) -> SymShape {
    shape.iter().map(|&d| SymExpr::konst(d as i64)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_and_display() {
        let s0 = SymExpr::sym(0);
        let s1 = SymExpr::sym(1);
        let e = s0
            .scale(2)
            .unwrap()
            .add(&s1)
            .unwrap()
            .add(&SymExpr::konst(-3))
            .unwrap();
        assert_eq!(e.to_string(), "2*s0+s1-3");
        assert_eq!(e.eval(|s| Some([5, 7][s as usize])), Some(14));
        assert_eq!(e.div_exact(2), None);
        assert_eq!(
            s0.scale(4).unwrap().div_exact(2).unwrap().to_string(),
            "2*s0"
        );
        let cancel = s0.add(&s0.scale(-1).unwrap()).unwrap();
        assert_eq!(cancel.as_const(), Some(0));
        assert_eq!(s1.as_sym(), Some(1));
        let sub = e.subst(&|s| {
            if s == 0 {
                SymExpr::konst(10)
            } else {
                SymExpr::sym(s)
            }
        });
        assert_eq!(sub.unwrap().to_string(), "s1+17");
    }
}
