//! The relation store of one symbolic analysis: symbols tied equal (union-find),
//! symbols specialised to their capture-time size, and lower bounds on sizes. Every
//! decision keeps the capture-time example valid, so it only narrows what the graph
//! accepts (guards), never what it computes.

use super::expr::{SymExpr, SymId};

#[derive(Debug, Clone, Default)]
pub struct Solver {
    parent: Vec<SymId>,
    /// The size each symbol had at capture.
    pub example: Vec<i64>,
    /// Per root: specialised to its example.
    fixed: Vec<bool>,
    /// Per root: the least size the graph is valid for.
    min: Vec<i64>,
    /// Per root: the largest size the graph is valid for.
    max: Vec<i64>,
}

impl Solver {
    /// A new symbol of capture-time size `example`, valid from `min` up to `max`.
    pub fn new_sym(&mut self, example: i64, min: i64, max: i64) -> SymId {
        let id = self.parent.len() as SymId;
        self.parent.push(id);
        self.example.push(example);
        self.fixed.push(false);
        self.min.push(min.max(2));
        self.max.push(max);
        id
    }

    pub fn find(&self, mut s: SymId) -> SymId {
        while let Some(&p) = self.parent.get(s as usize) {
            if p == s {
                break;
            }
            s = p;
        }
        s
    }

    fn root_expr(&self, s: SymId) -> SymExpr {
        let r = self.find(s);
        if self.fixed.get(r as usize).copied().unwrap_or(true) {
            SymExpr::konst(self.example.get(s as usize).copied().unwrap_or(0))
        } else {
            SymExpr::sym(r)
        }
    }

    /// `e` over root symbols, specialised symbols replaced by their size (a constant on
    /// overflow, which cannot happen for expressions of real tensor sizes).
    pub fn norm(&self, e: &SymExpr) -> SymExpr {
        e.subst(&|s| self.root_expr(s))
            .unwrap_or_else(|| SymExpr::konst(self.eval(e).unwrap_or(0)))
    }

    /// The capture-time value of `e`.
    pub fn eval(&self, e: &SymExpr) -> Option<i64> {
        e.eval(|s| self.example.get(s as usize).copied())
    }

    /// The least size of root `s` (0 for unknown symbols).
    pub fn min_of(&self, s: SymId) -> i64 {
        self.min.get(self.find(s) as usize).copied().unwrap_or(0)
    }

    /// The largest size of root `s` (`i64::MAX`: unbounded).
    pub fn max_of(&self, s: SymId) -> i64 {
        self.max
            .get(self.find(s) as usize)
            .copied()
            .unwrap_or(i64::MAX)
    }

    /// Requires `e >= 0` at every call (it holds at capture): a bound on `e`'s symbol
    /// when `e` is `c * s + k` (`s >= ceil(-k / c)` for `c > 0`, `s <= floor(k / -c)`
    /// for `c < 0`: batch_norm's `48 * n - 2 >= 0`), else `e`'s symbols are specialised.
    pub fn require_nonneg(&mut self, e: &SymExpr) {
        let e = self.norm(e);
        if e.as_const().is_some() {
            return;
        }
        if self.eval(&e).is_some_and(|v| v >= 0) {
            match e.terms.as_slice() {
                [(s, c)] if *c > 0 => {
                    let a = e.k.saturating_neg();
                    let least = a.div_euclid(*c) + i64::from(a.rem_euclid(*c) != 0);
                    return self.require_min(&SymExpr::sym(*s), least);
                }
                [(s, c)] if *c < 0 => {
                    return self.require_max(&SymExpr::sym(*s), e.k.div_euclid(c.saturating_neg()))
                }
                _ => {}
            }
        }
        self.specialize(&e);
    }

    /// Requires `e <= m` at every call: an upper bound when `e` is a plain symbol whose
    /// capture-time size satisfies it, else `e` is specialised.
    pub fn require_max(&mut self, e: &SymExpr, m: i64) {
        let e = self.norm(e);
        match e.as_sym() {
            Some(s) if self.example.get(s as usize).is_some_and(|&x| x <= m) => {
                if let Some(v) = self.max.get_mut(s as usize) {
                    *v = (*v).min(m);
                }
            }
            _ => self.specialize(&e),
        }
    }

    /// Specialises every symbol of `e` to its capture-time size.
    pub fn specialize(&mut self, e: &SymExpr) {
        for s in e.symbols().collect::<Vec<_>>() {
            let r = self.find(s) as usize;
            if let Some(f) = self.fixed.get_mut(r) {
                *f = true;
            }
        }
    }

    pub fn specialize_all(&mut self, shape: &[SymExpr]) {
        for e in shape {
            self.specialize(e);
        }
    }

    /// Requires `e >= m` at every call: a lower bound when `e` is a plain symbol whose
    /// capture-time size satisfies it, else `e` is specialised.
    pub fn require_min(&mut self, e: &SymExpr, m: i64) {
        let e = self.norm(e);
        match e.as_sym() {
            Some(s) if self.example.get(s as usize).is_some_and(|&x| x >= m) => {
                if let Some(v) = self.min.get_mut(s as usize) {
                    *v = (*v).max(m);
                }
            }
            _ => self.specialize(&e),
        }
    }

    /// Records that `a` and `b` are equal at every call: tied symbols, a symbol
    /// specialised to a constant, or (for compound expressions) both specialised.
    pub fn unify(&mut self, a: &SymExpr, b: &SymExpr) {
        let (na, nb) = (self.norm(a), self.norm(b));
        if na == nb {
            return;
        }
        match (na.as_sym(), nb.as_sym()) {
            (Some(x), Some(y)) if self.eval(&na) == self.eval(&nb) => {
                let m = self.min_of(x).max(self.min_of(y));
                let hi = self.max_of(x).min(self.max_of(y));
                self.parent[y as usize] = x;
                self.min[x as usize] = m;
                self.max[x as usize] = hi;
            }
            (Some(_), None) if nb.as_const().is_some() => self.specialize(&na),
            (None, Some(_)) if na.as_const().is_some() => self.specialize(&nb),
            _ => {
                self.specialize(&na);
                self.specialize(&nb);
            }
        }
    }
}
