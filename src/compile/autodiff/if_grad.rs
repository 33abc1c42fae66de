//! Compiled autograd through a captured tensor `if`. When a branch's results need grad
//! they get one autograd node ([`IfGrad`]) instead of the taken side's history of the
//! capture run. Its rule is a backward branch `If(cond, vjp(then), vjp(else))` on the
//! same condition (saved from the forward), each side the vector-Jacobian product of
//! its forward side (if_vjp.rs): eagerly (the capture call's own backward) the taken
//! side runs, and when compiled autograd records the function's backward it records
//! itself as one `IrOp::If` of the backward graph, so the compiled backward follows
//! whichever side the forward took at each call.

use crate::autograd::{self, BackwardOp, Edge, Edges, Saved, SharedBackward};
use crate::compile::autodiff::grad_node::{attach_shared, stash_grad, take_stash};
use crate::compile::autodiff::if_vjp;
use crate::compile::capture::trace::{self, BreakReason, GraphBreak};
use crate::compile::ir::control::Branch;
use crate::compile::ir::IrOp;
use crate::compile::runtime::exec;
use crate::error::Result;
use crate::source::Span;
use crate::tensor::dtype::DType;
use crate::tensor::shape::Dims;
use crate::tensor::{creation, Tensor};
use std::cell::RefCell;
use std::rc::Rc;

/// The backward of one run of a captured branch (see the module doc).
pub struct IfGrad {
    /// The backward branch; its regions' inputs are `[dresults..., captured...]`.
    branch: Branch,
    /// The side the forward took at this run.
    is_then: bool,
    /// `exec::last_uses` of the taken side's backward region.
    last: Vec<usize>,
    /// Dtype and shape of each result that requires grad (zeros when it gets none).
    results: Vec<(DType, Dims)>,
    cond: Saved,
    /// The branch's captured inputs.
    caps: Vec<Saved>,
    /// The captured inputs whose gradients the backward outputs (the node's edges).
    grads: Vec<usize>,
    /// Per side (`[then, else]`) and gradient output, the results it reads the
    /// gradients of (an output none of whose results got one is None, as in eager).
    deps: [Vec<Vec<usize>>; 2],
    stash: RefCell<Vec<Option<Tensor>>>,
    span: Span,
}

/// Prepares the backward of branch `fwd` (region inputs: `caps`, the captured values at
/// capture, each with its history) taken on `is_then` by condition `cond`; `res`: the
/// results that require grad, `outs`: their values.
pub fn prepare(
    fwd: &Branch,
    cond: &Tensor,
    caps: &[Tensor],
    res: &[usize],
    outs: &[Tensor],
    is_then: bool,
    span: Span,
) -> Result<Rc<IfGrad>, GraphBreak> {
    let vjp = if_vjp::derive_branch(fwd, caps, res)?;
    let taken = if is_then {
        &vjp.branch.then_g
    } else {
        &vjp.branch.else_g
    };
    Ok(Rc::new(IfGrad {
        last: exec::last_uses(taken),
        results: outs
            .iter()
            .map(|t| (t.dtype(), Dims::from(t.shape())))
            .collect(),
        cond: Saved::new(cond),
        caps: caps.iter().map(Saved::new).collect(),
        stash: RefCell::new(vec![None; outs.len()]),
        grads: vjp.grads,
        deps: vjp.deps,
        branch: vjp.branch,
        is_then,
        span,
    }))
}

/// Gives the branch's results that require grad (`outs`, in `res` order) their autograd
/// node, with edges to the captured inputs `caps` that get a gradient.
pub fn attach(grad: &Rc<IfGrad>, caps: &[Tensor], outs: &[Tensor]) {
    let edges: Edges = grad
        .grads
        .iter()
        .map(|&s| caps.get(s).map_or(Edge::None, Edge::of))
        .collect();
    attach_shared(
        BackwardOp::Branch(grad.clone()),
        edges,
        outs.iter().enumerate(),
        |index| BackwardOp::BranchOut {
            shared: grad.clone(),
            index,
        },
    );
}

impl SharedBackward for IfGrad {
    /// Keeps the gradient of result `index` for `apply`; passes a 0-d zero on.
    fn stash(&self, index: usize, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        stash_grad(&self.stash, index, g)
    }

    /// The node lives while any of its results' nodes does.
    fn freed_by_backward(&self) -> bool {
        false
    }

    /// The gradients of the captured inputs from the stashed gradients of the results
    /// (`_g`, the node's own gradient, is unused): the taken side's backward region,
    /// run (and recorded as the whole backward branch when a capture records this
    /// backward).
    fn apply(&self, _g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let stash = take_stash(&self.stash);
        let got: Vec<bool> = stash.iter().map(Option::is_some).collect();
        let mut args = Vec::with_capacity(self.results.len() + self.caps.len());
        for (s, (dt, shape)) in stash.into_iter().zip(&self.results) {
            args.push(match s {
                Some(g) => g,
                None => creation::zeros(shape, *dt)?,
            });
        }
        for c in &self.caps {
            args.push(c.get()?);
        }
        let taken = if self.is_then {
            &self.branch.then_g
        } else {
            &self.branch.else_g
        };
        let outs = trace::paused(|| {
            let _ng = autograd::no_grad();
            exec::run(taken, &args, &self.last)
        })?;
        let side = usize::from(!self.is_then);
        let keep = self.reached(side, &got);
        if trace::active() {
            if self.reached(1 - side, &got) == keep {
                self.record(&args, &outs)?;
            } else {
                trace::graph_break(BreakReason::Autograd(
                    "backward through a tensor `if` whose sides need different results' gradients",
                ));
            }
        }
        Ok(outs
            .into_iter()
            .zip(keep)
            .map(|(o, k)| k.then_some(o))
            .collect())
    }
}

impl IfGrad {
    /// Per gradient output of side `side`: some result it reads got a gradient (`got`).
    fn reached(&self, side: usize, got: &[bool]) -> Vec<bool> {
        let deps = self.deps.get(side).map_or(&[][..], Vec::as_slice);
        deps.iter()
            .map(|d| d.iter().any(|&k| got.get(k) == Some(&true)))
            .collect()
    }

    /// Records the backward branch into the active capture (a break when an arg is not
    /// a value of it).
    fn record(&self, args: &[Tensor], outs: &[Tensor]) -> Result<()> {
        let cond = self.cond.get()?;
        let ok = trace::with_tracer(|t| {
            let Some(mut ids) = t.node_of(&cond).map(|c| vec![c]) else {
                return false;
            };
            for a in args {
                let Some(id) = t.node_of(a) else {
                    return false;
                };
                ids.push(id);
            }
            let results = outs.iter().map(|o| (o.dtype(), o.shape().into())).collect();
            let op = IrOp::If(Box::new(self.branch.clone()));
            let out_ids = t.push_control(op, ids, results, self.span);
            for (o, id) in outs.iter().zip(out_ids) {
                t.bind(o, id);
            }
            true
        });
        if ok != Some(true) {
            trace::graph_break(BreakReason::UntracedTensor);
        }
        Ok(())
    }
}
