//! Symbolic ints: during a capture with symbolic sizes, a size Python reads from a
//! symbolic dim (`x.shape`, `x.size(d)`, `len(x)`) is a [`SymInt`]: its value at capture
//! and the size as an affine expression over the capture's symbols. Arithmetic that stays
//! affine (`+ - *` with ints) keeps it symbolic; view/reshape requests and tensor slices
//! take it symbolically (`note_request`, `note_slices`). Any other use is a Python-level
//! decision and records a fact the version is guarded by: the value itself
//! ([`SymInt::concrete`]), or for a comparison only the relation that decided it
//! ([`compare`]: `T <= 64` bounds `T`). The facts of a capture are collected here and
//! handed to the symbolic analysis with the capture's hints (`trace::finish`).

use super::trace::{active, with};
use crate::compile::ir::{IrIndex, IrOp};
use crate::compile::sym::{self, SymExpr};
use crate::ir::sym::dim_ref;
use crate::tensor::Tensor;
use std::cell::{Cell, RefCell};

/// A size known symbolically during a capture.
#[derive(Debug, Clone)]
pub struct SymInt {
    /// The size at capture (what eager code computes with).
    pub value: i64,
    /// The size over the capture's symbols (its `InputSpec` numbering).
    pub expr: SymExpr,
    /// The capture it belongs to; outside it the value is a plain int.
    pub gen: u64,
}

/// A fact a version is guarded by.
#[derive(Debug, Clone)]
pub enum SymFact {
    /// The symbols of the expression keep their capture-time sizes.
    Value(SymExpr),
    /// The expression stays `>= 0`.
    NonNeg(SymExpr),
    /// The two expressions stay equal (`target.size(0) != input.size(0)` found them
    /// equal): their symbols are tied, not specialised.
    Equal(SymExpr, SymExpr),
}

/// A comparison of two ints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// An operation on ints that can stay affine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lin {
    Add,
    Sub,
    Mul,
    /// `a // c` by a positive constant that divides every coefficient of `a`.
    FloorDiv,
}

thread_local! {
    static NEXT_GEN: Cell<u64> = const { Cell::new(1) };
    /// The captures in progress (innermost last) and the facts recorded for each.
    static LIVE: RefCell<Vec<(u64, Vec<SymFact>)>> = const { RefCell::new(Vec::new()) };
}

/// Opens the fact list of a new capture; returns its generation.
pub(super) fn open() -> u64 {
    let gen = NEXT_GEN.with(|g| {
        let v = g.get();
        g.set(v + 1);
        v
    });
    LIVE.with(|l| l.borrow_mut().push((gen, Vec::new())));
    gen
}

/// Closes capture `gen`'s fact list and returns its facts.
pub(super) fn close(gen: u64) -> Vec<SymFact> {
    LIVE.with(|l| {
        let mut l = l.borrow_mut();
        match l.iter().position(|e| e.0 == gen) {
            Some(i) => l.remove(i).1,
            None => Vec::new(),
        }
    })
}

/// The facts recorded so far for capture `gen`.
fn facts(gen: u64) -> Vec<SymFact> {
    LIVE.with(|l| {
        l.borrow()
            .iter()
            .find(|e| e.0 == gen)
            .map_or_else(Vec::new, |e| e.1.clone())
    })
}

fn record(gen: u64, fact: SymFact) {
    LIVE.with(|l| {
        if let Some(e) = l.borrow_mut().iter_mut().find(|e| e.0 == gen) {
            e.1.push(fact);
        }
    });
}

impl SymInt {
    /// The value, for a Python-level decision: the version is guarded on it.
    pub fn concrete(&self) -> i64 {
        record(self.gen, SymFact::Value(self.expr.clone()));
        self.value
    }

    /// The expression when `self` belongs to the capture in progress.
    fn live_expr(&self) -> Option<&SymExpr> {
        let gen = with(|t| t.gen)?;
        (gen == self.gen).then_some(&self.expr)
    }
}

/// Size `d` of `t` as a symbolic int, during a capture with symbolic sizes where that
/// size follows a symbol (None: a plain int; the caller notes the read).
pub fn size(t: &Tensor, d: usize) -> Option<SymInt> {
    if !active() {
        return None;
    }
    with(|tr| {
        if !tr.regions.is_empty() || tr.depth != 0 {
            return None;
        }
        let spec = tr.spec.as_ref()?;
        if spec.example.is_empty() {
            return None;
        }
        let id = tr.known.get(&t.id())?.1;
        let facts = facts(tr.gen);
        let e = sym::analyze::size_expr(&tr.graph, spec, &tr.hints, &facts, id, d)?;
        let value = i64::try_from(*t.shape().get(d)?).ok()?;
        (e.as_const().is_none()).then(|| SymInt {
            value,
            expr: e,
            gen: tr.gen,
        })
    })
    .flatten()
}

/// The argument-tensor dim a symbolic int is exactly the size of (a `for` loop's trip
/// count): its graph input node and dim.
pub fn input_dim(s: &SymInt) -> Option<(crate::compile::ir::NodeId, usize)> {
    with(|tr| {
        if s.gen != tr.gen || !tr.regions.is_empty() {
            return None;
        }
        let sym = s.expr.as_sym()?;
        let spec = tr.spec.as_ref()?;
        spec.dims.iter().enumerate().find_map(|(slot, dims)| {
            let d = dims.iter().position(|x| *x == Some(sym))?;
            let node = *tr.graph.inputs.get(slot)?;
            let n = tr.graph.node(node)?.shape.get(d).copied()?;
            (i64::try_from(n).ok() == Some(s.value)).then_some((node, d))
        })
    })
    .flatten()
}

/// An int operand: its value and, for a live symbolic int, its expression.
pub type Operand<'a> = (i64, Option<&'a SymInt>);

fn expr_of(o: Operand<'_>) -> Option<SymExpr> {
    match o.1 {
        Some(s) => s.live_expr().cloned(),
        None => Some(SymExpr::konst(o.0)),
    }
}

/// `a op b` as a symbolic int when the result stays affine (None: the caller computes
/// with concrete values, which records the facts).
pub fn linear(op: Lin, a: Operand<'_>, b: Operand<'_>, value: i64) -> Option<SymInt> {
    let gen = a.1.or(b.1)?.gen;
    let (x, y) = (expr_of(a)?, expr_of(b)?);
    let e = match op {
        Lin::Add => x.add(&y)?,
        Lin::Sub => x.add(&y.scale(-1)?)?,
        Lin::Mul => match (x.as_const(), y.as_const()) {
            (Some(c), _) => y.scale(c)?,
            (_, Some(c)) => x.scale(c)?,
            _ => return None,
        },
        Lin::FloorDiv => x.floor_div(y.as_const()?)?,
    };
    (e.as_const().is_none()).then_some(SymInt {
        value,
        expr: e,
        gen,
    })
}

/// True when `a % b` is the same at every size (`b` a positive constant dividing every
/// coefficient of `a`: `(4 * T + 2) % 4`), so its value needs no guard.
pub fn mod_is_const(a: Operand<'_>, b: Operand<'_>) -> bool {
    let (Some(x), Some(y)) = (expr_of(a), expr_of(b)) else {
        return false;
    };
    b.1.is_none() && a.1.is_some() && y.as_const().is_some_and(|c| x.floor_div(c).is_some())
}

/// Records the fact behind a comparison's `outcome`: the relation for an order
/// comparison; for `==`/`!=` nothing when the two differ by a constant, a tie when they
/// are equal, else their values.
pub fn compare(op: Cmp, a: Operand<'_>, b: Operand<'_>, outcome: bool) {
    let Some(gen) = a.1.or(b.1).map(|s| s.gen) else {
        return;
    };
    let (Some(x), Some(y)) = (expr_of(a), expr_of(b)) else {
        return;
    };
    let diff = |p: &SymExpr, q: &SymExpr, k: i64| -> Option<SymExpr> {
        p.add(&q.scale(-1)?)?.add(&SymExpr::konst(k))
    };
    // `x < y` holds iff `y - x - 1 >= 0`; `x <= y` iff `y - x >= 0`.
    let fact = match (op, outcome) {
        (Cmp::Lt, true) | (Cmp::Ge, false) => diff(&y, &x, -1),
        (Cmp::Le, true) | (Cmp::Gt, false) => diff(&y, &x, 0),
        (Cmp::Gt, true) | (Cmp::Le, false) => diff(&x, &y, -1),
        (Cmp::Ge, true) | (Cmp::Lt, false) => diff(&x, &y, 0),
        (Cmp::Eq | Cmp::Ne, _) => None,
    };
    let equal = matches!((op, outcome), (Cmp::Eq, true) | (Cmp::Ne, false));
    match fact {
        Some(f) => record(gen, SymFact::NonNeg(f)),
        // Equal or unequal at every size: no guard needed.
        None if diff(&x, &y, 0).is_some_and(|d| d.as_const().is_some()) => {}
        None if equal => record(gen, SymFact::Equal(x, y)),
        None => {
            record(gen, SymFact::Value(x));
            record(gen, SymFact::Value(y));
        }
    }
}

/// A spec-symbol expression as one over input dims (`dim_ref`), for op attributes.
fn over_input_dims(spec: &sym::InputSpec, e: &SymExpr) -> Option<SymExpr> {
    let mut refs = Vec::new();
    for s in e.symbols() {
        let (slot, d) = spec.dims.iter().enumerate().find_map(|(slot, dims)| {
            let d = dims.iter().position(|x| *x == Some(s))?;
            Some((slot, d))
        })?;
        refs.push((s, dim_ref(slot, d)?));
    }
    e.subst(&|s| {
        refs.iter()
            .find(|r| r.0 == s)
            .map_or(SymExpr::konst(0), |r| SymExpr::sym(r.1))
    })
}

/// `out` is a tensor index whose entry `k` of each `(k, stop)` is a unit-step slice
/// with a symbolic stop: the recorded `Index` node takes it as a `SymSlice`. A stop that
/// cannot be recorded so is specialised (its value becomes a guard).
pub fn note_slices(out: &Tensor, stops: &[(usize, &SymInt)]) {
    let done = with(|tr| {
        let id = tr.known.get(&out.id())?.1;
        let spec = tr.spec.clone()?;
        if !tr.regions.is_empty() {
            return None;
        }
        let node = tr.graph.nodes.get_mut(id.index())?;
        let IrOp::Index { indices } = &mut node.op else {
            return None;
        };
        let mut new = indices.clone();
        let plain = |i: &IrIndex| {
            matches!(
                i,
                IrIndex::Ellipsis | IrIndex::Mask { .. } | IrIndex::Indices { .. }
            )
        };
        if new.iter().any(plain) {
            return None;
        }
        for (k, s) in stops {
            if s.gen != tr.gen {
                return None;
            }
            let Some(IrIndex::Slice {
                start,
                stop: Some(b),
                step: None | Some(1),
            }) = new.get(*k)
            else {
                return None;
            };
            let a = start.unwrap_or(0);
            if a < 0 || *b != s.value || *b < a {
                return None;
            }
            let len = s.expr.add(&SymExpr::konst(-a))?;
            let sym = over_input_dims(&spec, &len)?;
            new[*k] = IrIndex::SymSlice {
                start: a,
                len: b - a,
                sym,
            };
        }
        *indices = new;
        Some(())
    })
    .flatten();
    if done.is_none() {
        for (_, s) in stops {
            s.concrete();
        }
    }
}

/// `out` came from a view/reshape/expand whose requested sizes were `req` (an entry is
/// Some for a symbolic int): the analysis derives its target from them. Unrecorded,
/// the symbolic entries are specialised.
pub fn note_request(out: &Tensor, req: &[Option<&SymInt>]) {
    if req.iter().all(Option::is_none) {
        return;
    }
    let done = with(|tr| {
        let id = tr.known.get(&out.id())?.1;
        if !tr.regions.is_empty() {
            return None;
        }
        let exprs = req
            .iter()
            .map(|r| match r {
                Some(s) if s.gen == tr.gen => Some(Some(s.expr.clone())),
                Some(_) => None,
                None => Some(None),
            })
            .collect::<Option<Vec<_>>>()?;
        tr.hints.sym_requests.insert(id, exprs);
        Some(())
    })
    .flatten();
    if done.is_none() {
        for s in req.iter().flatten() {
            s.concrete();
        }
    }
}

/// `out` is an expand (of a one-element constant: `zeros(T, C)`) whose sizes `req` hold
/// symbolic ints: the recorded `Expand` node carries their expressions. Unrecorded,
/// they are specialised.
pub fn note_expand(out: &Tensor, req: &[Option<&SymInt>]) {
    if !note_expand_if(out, req) {
        for s in req.iter().flatten() {
            s.concrete();
        }
    }
}

/// `note_expand` without the fallback: false when the expand could not take the sizes.
pub fn note_expand_if(out: &Tensor, req: &[Option<&SymInt>]) -> bool {
    let done = with(|tr| {
        let id = tr.known.get(&out.id())?.1;
        let spec = tr.spec.clone()?;
        if !tr.regions.is_empty() {
            return None;
        }
        let exprs = req
            .iter()
            .map(|r| match r {
                Some(s) if s.gen == tr.gen => over_input_dims(&spec, &s.expr).map(Some),
                Some(_) => None,
                None => Some(None),
            })
            .collect::<Option<Vec<_>>>()?;
        let node = tr.graph.nodes.get_mut(id.index())?;
        let IrOp::Expand { shape, sym } = &mut node.op else {
            return None;
        };
        if shape.len() != exprs.len() {
            return None;
        }
        *sym = exprs.into();
        Some(())
    })
    .flatten();
    done.is_some()
}

/// `out` is an expand to the shape of graph value `src` (a gradient rule's, to the
/// input of a `sum`/`mean`/`gather`; tril's mask): the recorded `Expand` node carries
/// `src`'s symbolic sizes, so a backward follows the forward's sizes instead of fixing
/// them.
/// Returns which dims of `src` are symbolic (empty when none is, or when `out` could not
/// take them: its target then stays the capture-time shape).
pub fn note_like(out: &Tensor, src: &Tensor) -> Vec<bool> {
    with(|tr| {
        if !tr.regions.is_empty() {
            return None;
        }
        let spec = tr.spec.clone()?;
        if spec.example.is_empty() {
            return None;
        }
        let out_id = tr.known.get(&out.id())?.1;
        let src_id = match tr.known.get(&src.id()) {
            Some((_, id)) => *id,
            None => {
                let s = tr.aliases.get(&src.id())?.1.id();
                tr.known.get(&s)?.1
            }
        };
        let facts = facts(tr.gen);
        let shape = sym::analyze::shape_exprs(&tr.graph, &spec, &tr.hints, &facts, src_id)?;
        let symbolic: Vec<bool> = shape.iter().map(|e| e.as_const().is_none()).collect();
        if !symbolic.contains(&true) {
            return None;
        }
        let exprs = shape
            .iter()
            .map(|e| over_input_dims(&spec, e).map(Some))
            .collect::<Option<Vec<_>>>()?;
        let node = tr.graph.nodes.get_mut(out_id.index())?;
        let IrOp::Expand { shape: target, sym } = &mut node.op else {
            return None;
        };
        if target.len() != exprs.len() || node.shape[..] != *src.shape() {
            return None;
        }
        *sym = exprs.into();
        Some(symbolic)
    })
    .flatten()
    .unwrap_or_default()
}

/// The integer index `i` into dim `d` of `t` as a constant offset from that dim's end
/// (`x[T - 1]` is `x[-1]` when `T` is the dim's size), guarded to stay `>= 0` as at
/// capture; None when it is no such offset.
pub fn from_end(t: &Tensor, d: usize, i: &SymInt) -> Option<i64> {
    let n = size(t, d)?;
    if n.gen != i.gen || i.value < 0 {
        return None;
    }
    let c = i.expr.add(&n.expr.scale(-1)?)?.as_const()?;
    if c >= 0 {
        return None;
    }
    record(i.gen, SymFact::NonNeg(i.expr.clone()));
    Some(c)
}
