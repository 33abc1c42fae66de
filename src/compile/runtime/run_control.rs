//! Running control nodes: a branch runs the compiled region of the taken side, a loop
//! runs its compiled condition and body regions until the trip count is reached or the
//! condition is false. Regions are compiled with the same pipeline as the top graph
//! (optimized, fused kernels) when the enclosing graph is lowered.

use crate::compile::internal;
use crate::compile::ir::control::{LoopSpec, TripCount};
use crate::compile::ir::{Graph, IrOp, Node};
use crate::compile::runtime::lower::{compile_region, CompiledGraph};
use crate::compile::runtime::scan_rows::ScanRows;
use crate::compile::sym::RegionTargets;
use crate::error::{Error, ErrorKind, Result};
use crate::tensor::{Buffer, Tensor};

pub use crate::compile::runtime::printing::print_node;

/// A lowered control node.
pub enum ControlStep {
    If {
        then_c: Box<CompiledGraph>,
        else_c: Box<CompiledGraph>,
    },
    Loop(Box<LoopStep>),
}

/// Lowers region `region` (0: then/cond, 1: else/body) of a control node whose regions
/// have the symbolic targets `targets`.
fn lower_region(
    g: &Graph,
    targets: &[&RegionTargets],
    region: usize,
) -> Result<Box<CompiledGraph>> {
    let own = targets.iter().find(|r| r.region == region);
    let (t, inner) = own.map_or_else(Default::default, |r| (r.targets.clone(), &r.inner[..]));
    Ok(Box::new(compile_region(g.clone(), t, inner)?))
}

impl ControlStep {
    /// Lowers the (already optimized) regions of control op `op`, whose regions have the
    /// symbolic targets `targets`.
    pub fn new(op: &IrOp, targets: &[&RegionTargets]) -> Result<ControlStep> {
        match op {
            IrOp::If(b) => Ok(ControlStep::If {
                then_c: lower_region(&b.then_g, targets, 0)?,
                else_c: lower_region(&b.else_g, targets, 1)?,
            }),
            IrOp::Loop(l) => Ok(Self::new_loop(l, targets)?),
            _ => Err(internal("not a control op")),
        }
    }

    fn new_loop(l: &LoopSpec, targets: &[&RegionTargets]) -> Result<ControlStep> {
        let cond = l.cond.as_ref().map(|c| lower_region(c, targets, 0));
        Ok(ControlStep::Loop(Box::new(LoopStep {
            trip: l.trip.clone(),
            carried: l.carried,
            start: l.start,
            step: l.step,
            cond: cond.transpose()?,
            body: lower_region(&l.body, targets, 1)?,
            scan: l.scan,
            reverse: l.reverse,
        })))
    }

    /// True when a region needs the symbols' values.
    pub fn needs_syms(&self) -> bool {
        self.regions().iter().any(|(_, r)| r.needs_syms())
    }

    /// The regions with their names in dumps ("then"/"else", "cond"/"body").
    pub fn regions(&self) -> Vec<(&'static str, &CompiledGraph)> {
        match self {
            ControlStep::If { then_c, else_c } => vec![("then", then_c), ("else", else_c)],
            ControlStep::Loop(l) => {
                let cond = l.cond.iter().map(|c| ("cond", &**c));
                cond.chain([("body", &*l.body)]).collect()
            }
        }
    }

    /// Runs the node on its args (`syms`: the top-level call's symbol values); returns
    /// its results.
    pub fn run<F>(
        &self,
        args: &[Tensor],
        syms: &[i64],
        eval: &F,
        printed: &mut String,
    ) -> Result<Vec<Tensor>>
    where
        F: Fn(&Node, &[Tensor], &[Tensor]) -> Result<Tensor>,
    {
        match self {
            ControlStep::If { then_c, else_c } => {
                let (cond, bound) = args
                    .split_first()
                    .ok_or_else(|| internal("a branch without a condition"))?;
                let side = if truthy(cond)? { then_c } else { else_c };
                let mut outs = Vec::new();
                side.run_region(bound, syms, eval, printed, &mut outs)?;
                Ok(outs)
            }
            ControlStep::Loop(l) => l.run(args, syms, eval, printed),
        }
    }
}

/// A lowered loop node (its `LoopSpec` with compiled regions).
pub struct LoopStep {
    trip: TripCount,
    carried: usize,
    start: i64,
    step: i64,
    cond: Option<Box<CompiledGraph>>,
    body: Box<CompiledGraph>,
    /// Per-iteration results stacked along a new leading dim (after the carried ones).
    scan: usize,
    /// Iterations run from the last index down to the first.
    reverse: bool,
}

impl LoopStep {
    /// Runs the loop on its args. The region inputs `[index, carried..., invariant...]`
    /// live in one vector for the whole run: each iteration overwrites the index in
    /// place (its 0-d tensor is rewritten when nothing else holds it) and moves the
    /// body's results into the carried slots, so an iteration allocates nothing of its
    /// own.
    fn run<F>(
        &self,
        args: &[Tensor],
        syms: &[i64],
        eval: &F,
        printed: &mut String,
    ) -> Result<Vec<Tensor>>
    where
        F: Fn(&Node, &[Tensor], &[Tensor]) -> Result<Tensor>,
    {
        let n = trip_count(&self.trip, args)?;
        let mut bound = Vec::new();
        bound
            .try_reserve_exact(args.len() + 1)
            .map_err(|_| internal("out of memory for loop values"))?;
        bound.push(index_tensor(self.start));
        bound.extend(args.iter().cloned());
        let mut scans: Vec<ScanRows> = (0..self.scan).map(|_| ScanRows::Kept(Vec::new())).collect();
        let mut next = Vec::new();
        let mut cond = Vec::new();
        let mut k: usize = 0;
        while n.is_none_or(|n| k < n) {
            // Ctrl-C and the host's wall-time limit reach compiled loops too (the call
            // then reruns eagerly, where the same flag stops it at once).
            crate::tensor::cancel::poll_kernel()?;
            let pos = match (self.reverse, n) {
                (true, Some(n)) => n - 1 - k,
                _ => k,
            };
            let idx = (pos as i64)
                .checked_mul(self.step)
                .and_then(|v| v.checked_add(self.start))
                .ok_or_else(|| internal("loop index overflow"))?;
            if let Some(slot) = bound.first_mut() {
                set_index(slot, idx);
            }
            if let Some(c) = &self.cond {
                c.run_region(&bound, syms, eval, printed, &mut cond)?;
                let go = truthy(
                    cond.first()
                        .ok_or_else(|| internal("empty loop condition"))?,
                )?;
                cond.clear();
                if !go {
                    break;
                }
            }
            self.body
                .run_region(&bound, syms, eval, printed, &mut next)?;
            if next.len() != self.carried + self.scan {
                return Err(internal("loop body returned the wrong number of values"));
            }
            for (acc, t) in scans.iter_mut().zip(next.drain(self.carried..)) {
                acc.push(n, pos, t)?;
            }
            for (v, t) in bound.iter_mut().skip(1).zip(next.drain(..)) {
                *v = t;
            }
            k += 1;
        }
        bound.truncate(self.carried + 1);
        bound.remove(0);
        for s in scans {
            // No iteration: no row to stack (a fallback to eager).
            bound.push(s.finish()?);
        }
        Ok(bound)
    }
}

/// A fresh 0-d i64 tensor holding `i`.
fn index_tensor(i: i64) -> Tensor {
    Tensor::from_vec(vec![i], &[])
}

/// Makes `slot` the 0-d index `i`: rewritten in place when nothing else holds it (the
/// previous iteration's body kept no reference), else a fresh tensor.
fn set_index(slot: &mut Tensor, i: i64) {
    if slot.is_unique() {
        if let Buffer::I64(v) = &mut *slot.storage().borrow_mut() {
            if let Some(x) = v.first_mut() {
                *x = i;
                return;
            }
        }
    }
    *slot = index_tensor(i);
}

/// The trip count of a loop on `args` (None: unbounded).
pub(in crate::compile) fn trip_count(trip: &TripCount, args: &[Tensor]) -> Result<Option<usize>> {
    Ok(match trip {
        TripCount::Const(n) => Some(*n),
        TripCount::Dim { arg, dim } => Some(
            args.get(*arg)
                .and_then(|t| t.shape().get(*dim).copied())
                .ok_or_else(|| internal("loop trip count of a missing dim"))?,
        ),
        TripCount::Unbounded => None,
    })
}

/// Eager's `bool(t)` of a one-element tensor.
fn truthy(t: &Tensor) -> Result<bool> {
    if t.numel() != 1 {
        return Err(Error::new(
            ErrorKind::RuntimeError,
            "Boolean value of Tensor with more than one value is ambiguous",
            None,
        ));
    }
    Ok(t.item()?.as_bool())
}
