//! Compiled autograd through a captured loop. When a captured `for` loop's carried values
//! need grad, the loop node also saves each iteration's carried values and the body
//! values its backward reads (scan outputs: `[n, ...]` stacks) and its results get one autograd node ([`LoopGrad`]) instead of
//! the unrolled history of the capture run. That node's rule is a backward loop (same
//! trip count, run in reverse) whose body is the forward body's VJP (loop_vjp.rs): it
//! runs eagerly for the capture call's own backward, and when compiled autograd records
//! the function's backward (autodiff.rs sweeps the capture's autograd graph with a
//! tracer) it records itself as one `IrOp::Loop` of the backward graph, so the compiled
//! backward has a loop too and follows symbolic trip counts.
//!
//! The backward loop's args are `[dcarried..., acc..., stacks..., invariants...]`; its
//! results the gradients of the carried initial values and of the invariants in
//! `grad_inv` (the others get none, as in eager). A gradient only results the sweep did
//! not reach feed (a parameter that moves only a carried value the loss ignores) is
//! None, as eager leaves it, not the zeros the backward loop computes for it.

use crate::autograd::{self, rules, BackwardOp, Edge, Edges, Saved, SharedBackward};
use crate::compile::autodiff::grad_deps::{loop_results, unreached};
use crate::compile::autodiff::grad_node::{attach_shared, stash_grad, take_stash};
use crate::compile::autodiff::loop_post::{self, Hoisted, Rows};
use crate::compile::autodiff::loop_vjp::{self, brk};
use crate::compile::capture::trace::{self, BreakReason, GraphBreak};
use crate::compile::internal;
use crate::compile::ir::control::{LoopSpec, TripCount};
use crate::compile::ir::{IrOp, NodeId};
use crate::compile::runtime::exec;
use crate::compile::runtime::run_control;
use crate::compile::runtime::scan_rows::ScanRows;
use crate::error::{Error, Result};
use crate::source::Span;
use crate::tensor::dtype::{DType, Scalar};
use crate::tensor::shape::Dims;
use crate::tensor::{creation, Tensor};
use std::cell::RefCell;
use std::rc::Rc;

/// The backward of one run of a captured loop (see the module doc).
pub struct LoopGrad {
    spec: LoopSpec,
    last: Vec<usize>,
    carried: Vec<(DType, Dims)>,
    /// In a symbolic capture, the carried initial values (a result the sweep did not
    /// reach gets zeros taking their symbolic sizes, not fixed ones; held strongly: the
    /// capture does not keep its tensors alive).
    like: Vec<Option<Tensor>>,
    grad_inv: Vec<usize>,
    /// The invariants whose gradients are summed after the backward loop.
    hoisted: Vec<Hoisted>,
    /// Which results' gradients reach each gradient it gives.
    deps: Deps,
    /// How many of `saved` are stacks.
    n_stacks: usize,
    /// The stacks (the carried values', then the saved reads'), then the invariants.
    saved: Vec<Saved>,
    stash: RefCell<Vec<Option<Tensor>>>,
    span: Span,
}

fn gb(e: Error) -> GraphBreak {
    GraphBreak {
        reason: BreakReason::Internal(format!(
            "compiled autograd: a loop's backward could not be built: {}",
            e.message
        )),
        span: None,
    }
}

/// A captured loop prepared for gradients: the forward spec with its scan outputs, the
/// stacks of the capture run and the backward node's state.
pub struct Prepared {
    pub spec: LoopSpec,
    pub stacks: Vec<Tensor>,
    pub grad: Rc<LoopGrad>,
}

/// Prepares loop `fwd` (body outputs: the carried values) on its capture-time args
/// `args` (`[carried_init..., invariants...]`).
pub fn prepare(mut fwd: LoopSpec, args: &[Tensor], span: Span) -> Result<Prepared, GraphBreak> {
    if fwd.cond.is_some() || fwd.trip == TripCount::Unbounded {
        return Err(brk("backward through a tensor `while` loop"));
    }
    if (fwd.start, fwd.step) != (0, 1) {
        return Err(brk(
            "backward through a loop over a range not starting at 0 by 1",
        ));
    }
    let nc = fwd.carried;
    let n = trips(&fwd, args).map_err(gb)?;
    if n == 0 {
        return Err(brk("backward through a loop without iterations"));
    }
    let mut ex = vec![Tensor::scalar(Scalar::Int(fwd.start))];
    ex.extend(args.iter().cloned());
    let vjp = loop_vjp::derive_body(&fwd, &ex, n)?;
    let m = vjp.grad_inv.len();
    let bwd = LoopSpec {
        trip: TripCount::Dim {
            arg: nc + m,
            dim: 0,
        },
        carried: nc + m,
        start: fwd.start,
        step: fwd.step,
        cond: None,
        body: vjp.body,
        scan: vjp.scan,
        reverse: true,
    };
    let carried_in: Vec<NodeId> = fwd.body.inputs.get(1..=nc).unwrap_or_default().to_vec();
    fwd.body.outputs.extend(carried_in);
    fwd.body.outputs.extend(vjp.saved.iter().copied());
    fwd.scan = nc + vjp.saved.len();
    let stacks = trace::paused(|| scan_stacks(&fwd, args, n)).map_err(gb)?;
    let mut saved: Vec<Saved> = stacks.iter().map(Saved::new).collect();
    saved.extend(args[nc..].iter().map(Saved::new));
    let deps = Deps::of(&bwd, nc, &vjp.hoisted);
    let grad = LoopGrad {
        deps,
        last: exec::last_uses(&bwd.body),
        spec: bwd,
        carried: args[..nc]
            .iter()
            .map(|t| (t.dtype(), Dims::from(t.shape())))
            .collect(),
        like: args[..nc]
            .iter()
            .map(|t| crate::ir::record::symbolic().then(|| t.clone()))
            .collect(),
        grad_inv: vjp.grad_inv,
        hoisted: vjp.hoisted,
        n_stacks: stacks.len(),
        saved,
        stash: RefCell::new(vec![None; nc]),
        span,
    };
    Ok(Prepared {
        spec: fwd,
        stacks,
        grad: Rc::new(grad),
    })
}

/// The scan outputs of `fwd` over its `n` iterations on `args`, stacked (the carried
/// values each iteration starts from, then the saved body values).
fn scan_stacks(fwd: &LoopSpec, args: &[Tensor], n: usize) -> Result<Vec<Tensor>> {
    Ok(run_eager(fwd, &exec::last_uses(&fwd.body), n, args)?.1)
}

/// The trip count of loop `l` (a `for` loop) on its args.
fn trips(l: &LoopSpec, args: &[Tensor]) -> Result<usize> {
    run_control::trip_count(&l.trip, args)?.ok_or_else(|| internal("an unbounded loop"))
}

/// Runs loop `l` node by node for `n` iterations (from the last index down when
/// `l.reverse`) without recording grad. Returns the final carried values and the scan
/// outputs stacked by index (row `t`: the iteration whose index is `t`).
fn run_eager(
    l: &LoopSpec,
    last: &[usize],
    n: usize,
    args: &[Tensor],
) -> Result<(Vec<Tensor>, Vec<Tensor>)> {
    let _ng = autograd::no_grad();
    let mut vals = args.to_vec();
    let mut rows: Vec<ScanRows> = (0..l.scan).map(|_| ScanRows::Kept(Vec::new())).collect();
    for k in 0..n {
        crate::tensor::cancel::poll_kernel()?;
        let pos = if l.reverse { n - 1 - k } else { k };
        let idx = l.start + (pos as i64) * l.step;
        let mut bound = vec![Tensor::scalar(Scalar::Int(idx))];
        bound.extend(vals.iter().cloned());
        let next = exec::run(&l.body, &bound, last)?;
        for (r, v) in rows
            .iter_mut()
            .zip(next.get(l.carried..).unwrap_or_default())
        {
            r.push(Some(n), pos, v.clone())?;
        }
        for (v, t) in vals.iter_mut().zip(next).take(l.carried) {
            *v = t;
        }
    }
    vals.truncate(l.carried);
    let stacks = rows
        .into_iter()
        .map(ScanRows::finish)
        .collect::<Result<_>>()?;
    Ok((vals, stacks))
}

/// Gives the loop's results `outs` (the carried values; `None` where the result is not
/// a float tensor) their autograd node, with edges to the loop's args `args`.
pub fn attach(grad: &Rc<LoopGrad>, args: &[Tensor], outs: &[Option<Tensor>]) {
    let edges: Edges = args.iter().map(Edge::of).collect();
    let outs = outs
        .iter()
        .enumerate()
        .filter_map(|(i, y)| Some((i, y.as_ref()?)));
    attach_shared(BackwardOp::Loop(grad.clone()), edges, outs, |index| {
        BackwardOp::LoopOut {
            shared: grad.clone(),
            index,
        }
    });
}

impl SharedBackward for LoopGrad {
    /// Keeps the gradient of result `index` for `apply`; passes a 0-d zero on.
    fn stash(&self, index: usize, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        stash_grad(&self.stash, index, g)
    }

    /// The node lives while any of its results' nodes does.
    fn freed_by_backward(&self) -> bool {
        false
    }

    /// The gradients of the loop's args from the stashed gradients of its results (`_g`,
    /// the `Loop` node's own gradient, is unused: its results' nodes stash theirs): the
    /// backward loop, run (and recorded when a capture records this backward).
    fn apply(&self, _g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let stash = take_stash(&self.stash);
        let reached: Vec<bool> = stash.iter().map(Option::is_some).collect();
        let saved = self
            .saved
            .iter()
            .map(Saved::get)
            .collect::<Result<Vec<_>>>()?;
        let nc = self.carried.len();
        let (stacks, invs) = saved.split_at(self.n_stacks.min(saved.len()));
        let mut args = Vec::with_capacity(nc + self.grad_inv.len() + saved.len());
        for ((s, (dt, shape)), like) in stash.into_iter().zip(&self.carried).zip(&self.like) {
            args.push(match s {
                Some(g) => g,
                None => rules::zeros_like(shape, *dt, like)?,
            });
        }
        for &i in &self.grad_inv {
            let x = invs.get(i).ok_or_else(|| internal("a lost invariant"))?;
            args.push(creation::zeros(x.shape(), x.dtype())?);
        }
        args.extend(stacks.iter().cloned());
        args.extend(invs.iter().cloned());
        let outs = trace::paused(|| self.run(&args))?;
        if trace::active() {
            self.record(&args, &outs);
        }
        let live = |k: usize, deps: &[Vec<usize>]| {
            !unreached(deps.get(k).map_or(&[][..], Vec::as_slice), &reached)
        };
        let mut grads: Vec<Option<Tensor>> = (0..nc)
            .map(|k| live(k, &self.deps.carried).then(|| outs[k].clone()))
            .collect();
        grads.resize(nc + invs.len(), None);
        for (k, &i) in self.grad_inv.iter().enumerate() {
            if let (Some(cell), Some(g)) = (grads.get_mut(nc + i), outs.get(nc + k)) {
                *cell = live(k, &self.deps.inv).then(|| g.clone());
            }
        }
        let scans = outs.get(self.spec.carried..).unwrap_or_default();
        let hoisted = loop_post::finish(&self.hoisted, scans, &args)?;
        for (k, (i, g)) in hoisted.into_iter().enumerate() {
            if let Some(cell) = grads.get_mut(nc + i) {
                *cell = live(k, &self.deps.hoisted).then_some(g);
            }
        }
        Ok(grads)
    }
}

impl LoopGrad {
    /// Runs the backward loop node by node: its carried results, then its stacks.
    fn run(&self, args: &[Tensor]) -> Result<Vec<Tensor>> {
        let n = trips(&self.spec, args)?;
        let (mut outs, stacks) = run_eager(&self.spec, &self.last, n, args)?;
        outs.extend(stacks);
        Ok(outs)
    }

    /// Records the backward loop into the active capture (a break when an arg is not a
    /// value of it).
    fn record(&self, args: &[Tensor], outs: &[Tensor]) {
        let ok = trace::with_tracer(|t| {
            let Some(ids) = args
                .iter()
                .map(|a| t.node_of(a))
                .collect::<Option<Vec<_>>>()
            else {
                return false;
            };
            let results = outs.iter().map(|o| (o.dtype(), o.shape().into())).collect();
            let op = IrOp::Loop(Box::new(self.spec.clone()));
            let out_ids = t.push_control(op, ids, results, self.span);
            for (o, id) in outs.iter().zip(out_ids) {
                t.bind(o, id);
            }
            true
        });
        if ok != Some(true) {
            trace::graph_break(BreakReason::UntracedTensor);
        }
    }
}

/// Which of a loop's results (by carried position) feed each gradient its backward
/// gives: the carried initial values', the accumulated invariants' (`grad_inv` order)
/// and the hoisted ones'. Found on the backward loop's body by data flow, over any
/// number of iterations.
struct Deps {
    carried: Vec<Vec<usize>>,
    inv: Vec<Vec<usize>>,
    hoisted: Vec<Vec<usize>>,
}

impl Deps {
    fn of(bwd: &LoopSpec, nc: usize, hoisted: &[Hoisted]) -> Deps {
        // The backward loop's args: the results' gradients (`dcarried`) feed
        // themselves; the accumulators, stacks and invariants none.
        let n_args = bwd.body.inputs.len().saturating_sub(1);
        let args: Vec<Vec<usize>> = (0..n_args)
            .map(|k| if k < nc { vec![k] } else { Vec::new() })
            .collect();
        let mut carried = loop_results(bwd, &args);
        let scans = carried.split_off(bwd.carried.min(carried.len()));
        let rows = |r: Rows| match r {
            Rows::Scan(j) => scans.get(j).cloned().unwrap_or_default(),
            Rows::Arg(_) => Vec::new(),
        };
        let hoisted = hoisted
            .iter()
            .map(|h| {
                let mut d = rows(h.rows);
                d.extend(h.outer.map(rows).unwrap_or_default());
                d
            })
            .collect();
        let inv = carried.split_off(nc.min(carried.len()));
        Deps {
            carried,
            inv,
            hoisted,
        }
    }
}
