//! Runtime scalars: a Python float a capture loads from outside the function (a dict
//! item such as an optimizer group's `"lr"`, an attribute, a global) whose value already
//! changed between calls (automatic dynamic, as for sizes: `Cache::note_dynamic_scalars`)
//! is a [`SymFloat`] during the next capture. Its value is a 0-d float64 tensor the graph
//! reads as an external input, refreshed from the origin at each call
//! (`GraphEntry::external_inputs`), and its origin is guarded by type only. The origin
//! itself is the interpreter's (interp/capture/guards.rs `load`): here it is a
//! `GuardKey` and a boxed `LoadGuard` that reads its float. Float
//! arithmetic on it (`+ - * /`, negation) records 0-d float64 nodes, the same float64
//! operations Python does; an arithmetic operator with a float tensor takes it as a 0-d
//! tensor of that tensor's dtype (the cast eager's scalar kernels make). Any other use
//! is a Python-level decision: it sees the value and guards the origin on it
//! ([`SymFloat::concrete`]), as before.

use super::symint::{self, SymFact, SymInt};
use super::trace::{with, GuardKey, LoadGuard};
use crate::ops::{self, BinaryOp, UnaryOp};
use crate::tensor::dtype::{DType, Scalar};
use crate::tensor::Tensor;
use std::rc::Rc;

/// A float known at run time only, during a capture.
#[derive(Debug, Clone)]
pub struct SymFloat {
    /// The value at capture (what eager code computes with).
    pub value: f64,
    /// The 0-d float64 tensor holding it (a graph value of the capture).
    pub tensor: Tensor,
    /// The keys of the origins it is computed from (their guards become value guards
    /// when it is used concretely).
    origins: Vec<GuardKey>,
    /// The symbolic ints it is computed from (their values become facts when it is used
    /// concretely).
    ints: Vec<Rc<SymInt>>,
    /// Set when it is exactly symbolic int `n` (a divisor it may be, guarded `n >= 1`).
    whole: Option<Rc<SymInt>>,
    /// The capture it belongs to; outside it the value is a plain float.
    gen: u64,
}

impl SymFloat {
    /// The value, for a Python-level decision: the origins it came from are guarded on
    /// their values.
    pub fn concrete(&self) -> f64 {
        with(|t| {
            if t.gen == self.gen {
                t.guard_values(&self.origins);
            }
        });
        for n in &self.ints {
            n.concrete();
        }
        self.value
    }

    /// True when it may divide: it is a symbolic int now at least 1, and the version is
    /// guarded to keep it so (Python raises on a zero divisor; a graph would not).
    fn divisor(&self) -> bool {
        let Some(n) = self.whole.as_deref() else {
            return false;
        };
        if n.value < 1 {
            return false;
        }
        symint::compare(symint::Cmp::Ge, (n.value, Some(n)), (1, None), true);
        true
    }

    /// `concrete` for finished capture `t` (a returned runtime scalar).
    pub fn concrete_in(&self, t: &mut super::trace::Tracer) -> f64 {
        if t.gen == self.gen {
            t.guard_values(&self.origins);
            let facts = self.ints.iter().map(|n| SymFact::Value(n.expr.clone()));
            t.hints.facts.extend(facts);
        }
        self.value
    }

    /// The value as a 0-d tensor of float dtype `dt` (recorded: a cast of the runtime
    /// value), or None outside its capture.
    pub fn tensor_as(&self, dt: DType) -> Option<Tensor> {
        if with(|t| t.gen) != Some(self.gen) || !dt.is_float() {
            return None;
        }
        if dt == DType::F64 {
            return Some(self.tensor.clone());
        }
        self.tensor.cast(dt).ok()
    }
}

/// A runtime scalar for float `v` just loaded from place `key` (named `name`; `reader`
/// reads its float at each call), when the capture makes that place dynamic (None: the
/// load stays a plain, value-guarded float). The interpreter calls it on its loads
/// (interp/capture/guards.rs `load`).
pub fn load(
    key: GuardKey,
    v: f64,
    name: impl FnOnce() -> String,
    reader: impl FnOnce() -> Box<dyn LoadGuard>,
) -> Option<SymFloat> {
    with(|t| {
        if !t.regions.is_empty() {
            return None;
        }
        if !t.dynamic_scalars.contains(&key) {
            return None;
        }
        let tensor = t.scalar_input(key, v, name, reader)?;
        Some(SymFloat {
            value: v,
            tensor,
            origins: vec![key],
            ints: Vec::new(),
            whole: None,
            gen: t.gen,
        })
    })
    .flatten()
}

/// The float operand of a value: a float, an int or a bool (exactly convertible), or a
/// live runtime scalar.
pub enum Operand<'a> {
    Plain(f64),
    Sym(&'a SymFloat),
}

/// `a op b` for float operands, one of them symbolic, when it stays a runtime scalar:
/// `+ - *` and `/` by a plain non-zero divisor or a symbolic int guarded to stay at
/// least 1 (another symbolic divisor could become zero, where Python raises). None: the caller computes with concrete values.
pub fn arith(op: BinaryOp, a: Operand<'_>, b: Operand<'_>, value: f64) -> Option<SymFloat> {
    if !matches!(
        op,
        BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div
    ) {
        return None;
    }
    let gen = with(|t| t.gen)?;
    let live = |s: &SymFloat| s.gen == gen;
    let out = match (&a, &b) {
        (Operand::Sym(x), Operand::Sym(y)) if live(x) && live(y) => {
            if op == BinaryOp::Div && !y.divisor() {
                return None;
            }
            ops::binary(op, &x.tensor, &y.tensor).ok()?
        }
        (Operand::Sym(x), Operand::Plain(c)) if live(x) => {
            if op == BinaryOp::Div && *c == 0.0 {
                return None;
            }
            ops::binary_scalar(op, &x.tensor, Scalar::Float(*c), false).ok()?
        }
        (Operand::Plain(c), Operand::Sym(y)) if live(y) && (op != BinaryOp::Div || y.divisor()) => {
            ops::binary_scalar(op, &y.tensor, Scalar::Float(*c), true).ok()?
        }
        _ => return None,
    };
    let (mut origins, mut ints) = (Vec::new(), Vec::new());
    for o in [&a, &b] {
        if let Operand::Sym(s) = o {
            origins.extend(s.origins.iter().copied());
            ints.extend(s.ints.iter().cloned());
        }
    }
    Some(SymFloat {
        value,
        tensor: out,
        origins,
        ints,
        whole: None,
        gen,
    })
}

/// `-s` as a runtime scalar (None outside its capture).
pub fn neg(s: &SymFloat) -> Option<SymFloat> {
    if with(|t| t.gen) != Some(s.gen) {
        return None;
    }
    Some(SymFloat {
        value: -s.value,
        tensor: ops::unary(UnaryOp::Neg, &s.tensor).ok()?,
        origins: s.origins.clone(),
        ints: s.ints.clone(),
        whole: None,
        gen: s.gen,
    })
}

/// Symbolic int `n` as a runtime scalar (`T / 2`, `x / T`): a one-element int64 tensor
/// expanded to `n` (the expand keeps its expression) and summed, as float64 (exact).
/// None outside its capture.
pub fn from_int(n: &Rc<SymInt>) -> Option<SymFloat> {
    let gen = with(|t| t.regions.is_empty().then_some(t.gen)).flatten()?;
    if n.gen != gen || n.value < 0 || n.value >= 1 << 53 {
        return None;
    }
    let one = crate::tensor::creation::ones(&[1], DType::I64).ok()?;
    let wide = one.expand(&[n.value]).ok()?;
    let live = symint::note_expand_if(&wide, &[Some(&**n)]);
    if !live {
        return None;
    }
    let tensor = wide.sum(&[0], false).ok()?.cast(DType::F64).ok()?;
    Some(SymFloat {
        value: n.value as f64,
        tensor,
        origins: Vec::new(),
        ints: vec![n.clone()],
        whole: Some(n.clone()),
        gen,
    })
}
