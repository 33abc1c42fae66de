//! Compiled autograd, run side: a call of a version with a recorded backward attaches
//! one autograd node to its differentiable outputs. The node keeps the forward values
//! the backward reads (version-checked like eager's saved tensors) and, when the sweep
//! reaches it, runs the compiled backward graph and hands the input gradients to its
//! edges (leaf accumulation or the inputs' own producers, as eager). With several
//! differentiable outputs each gets a small node that stashes its gradient for the
//! shared one (which the sweep reaches after them: it was created first). An input
//! gradient that only outputs the sweep did not reach feed is None, as eager leaves it
//! (the backward runs them as zeros, but no path led there).

use crate::autograd::{self, BackwardOp, Edge, Edges, Saved, SharedBackward};
use crate::compile::autodiff::grad_deps::unreached;
use crate::compile::capture::trace::{self, BreakReason};
use crate::compile::internal;
use crate::compile::runtime::exec;
use crate::compile::runtime::lower::CompiledGraph;
use crate::error::Result;
use crate::tensor::dtype::DType;
use crate::tensor::shape::Dims;
use crate::tensor::{creation, Tensor};
use std::cell::RefCell;
use std::rc::Rc;

/// What a cached version needs to build the node at each call.
pub struct AutoDiff {
    /// The compiled backward graph (inputs: output grads, then `saved` values).
    pub backward: Rc<CompiledGraph>,
    /// Positions (in the forward graph's outputs) of the differentiable outputs.
    pub douts: Vec<usize>,
    /// Position of the first saved value among the forward graph's outputs.
    pub saved_at: usize,
    pub n_saved: usize,
    /// Forward input slots the backward's outputs are the gradients of.
    pub slots: Vec<usize>,
    /// Per backward output: it is returned before its final broadcast, to be expanded
    /// to its input's shape at each call (sym_grad::runtime_expands).
    pub expanded: Vec<bool>,
    /// Per backward output: the differentiable outputs whose gradients reach it.
    pub deps: Vec<Vec<usize>>,
}

/// The shared state of one call's backward.
pub struct CompiledBackward {
    backward: Rc<CompiledGraph>,
    saved: Vec<Saved>,
    /// Shape and dtype of each differentiable output (zeros when it gets no gradient).
    outs: Vec<(Dims, DType)>,
    /// Gradients stashed by the per-output nodes (several differentiable outputs).
    stash: RefCell<Vec<Option<Tensor>>>,
    /// Per backward output: the shape of this call's input it is expanded to.
    expand_to: Vec<Option<Dims>>,
    /// Per backward output: the differentiable outputs whose gradients reach it.
    deps: Vec<Vec<usize>>,
}

/// Makes the differentiable outputs of a run (`outs`: the forward graph's outputs,
/// `inputs`: its inputs by slot) require grad through one compiled backward node.
pub fn attach(ad: &AutoDiff, inputs: &[Tensor], outs: &mut [Tensor]) -> Result<()> {
    let saved = outs
        .get(ad.saved_at..ad.saved_at + ad.n_saved)
        .ok_or_else(|| internal("a saved value is missing"))?
        .iter()
        .map(Saved::new)
        .collect();
    let mut edges = Edges::new();
    let mut expand_to = Vec::with_capacity(ad.slots.len());
    for (&s, &ex) in ad.slots.iter().zip(&ad.expanded) {
        let x = inputs.get(s).ok_or_else(|| internal("missing input"))?;
        edges.push(Edge::of(x));
        expand_to.push(ex.then(|| Dims::from(x.shape())));
    }
    let mut shapes = Vec::with_capacity(ad.douts.len());
    for &d in &ad.douts {
        let y = outs.get(d).ok_or_else(|| internal("missing output"))?;
        shapes.push((Dims::from(y.shape()), y.dtype()));
    }
    let shared = Rc::new(CompiledBackward {
        backward: ad.backward.clone(),
        saved,
        stash: RefCell::new(vec![None; shapes.len()]),
        outs: shapes,
        expand_to,
        deps: ad.deps.clone(),
    });
    if let [d] = ad.douts[..] {
        let y = fresh(outs, d)?;
        autograd::record_edges(&y, BackwardOp::Compiled(shared), edges);
        return Ok(());
    }
    let ys = ad.douts.iter().map(|&d| fresh(outs, d));
    let ys = ys.collect::<Result<Vec<Tensor>>>()?;
    attach_shared(
        BackwardOp::Compiled(shared.clone()),
        edges,
        ys.iter().enumerate(),
        |index| BackwardOp::CompiledOut {
            shared: shared.clone(),
            index,
        },
    );
    Ok(())
}

/// Gives several results one shared backward node `main` (with `edges`): each result
/// `(index, y)` gets its own node `out(index)`, whose one edge is `main` and which stashes
/// its gradient there (`stash_grad`).
pub(in crate::compile) fn attach_shared<'a>(
    main: BackwardOp,
    edges: Edges,
    outs: impl IntoIterator<Item = (usize, &'a Tensor)>,
    out: impl Fn(usize) -> BackwardOp,
) {
    let main = autograd::new_node(main, edges);
    for (index, y) in outs {
        let mut e = Edges::new();
        e.push(Edge::Node(main.clone()));
        autograd::record_edges(y, out(index), e);
    }
}

/// Takes every stashed gradient out of `stash` (the shared node's rule is running).
pub(in crate::compile) fn take_stash(stash: &RefCell<Vec<Option<Tensor>>>) -> Vec<Option<Tensor>> {
    stash.borrow_mut().iter_mut().map(Option::take).collect()
}

/// Replaces output `d` by a new handle on its data (an output may be an input or a
/// value the graph keeps; their autograd state must not change) and returns it.
fn fresh(outs: &mut [Tensor], d: usize) -> Result<Tensor> {
    let y = outs.get_mut(d).ok_or_else(|| internal("missing output"))?;
    *y = y.detach();
    Ok(y.clone())
}

impl SharedBackward for CompiledBackward {
    /// The gradients of the inputs (one per edge), given the output gradient `g` (with
    /// several differentiable outputs, the stashed ones are used instead).
    fn apply(&self, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        // Inside a capture this run is not recordable: the capture falls back to eager.
        trace::graph_break(BreakReason::Autograd("backward of a compiled function"));
        let mut inputs = Vec::with_capacity(self.outs.len() + self.saved.len());
        let mut reached = vec![true; self.outs.len()];
        if self.outs.len() == 1 {
            inputs.push(g.clone());
        } else {
            let mut stash = self.stash.borrow_mut();
            for ((s, (shape, dt)), r) in stash.iter_mut().zip(&self.outs).zip(&mut reached) {
                *r = s.is_some();
                inputs.push(match s.take() {
                    Some(t) => t,
                    None => creation::zeros(shape, *dt)?,
                });
            }
        }
        for s in &self.saved {
            inputs.push(s.get()?);
        }
        let mut printed = String::new();
        let grads = self.backward.run(&inputs, &exec::eval, &mut printed)?;
        grads
            .into_iter()
            .zip(&self.expand_to)
            .zip(&self.deps)
            .map(|((g, to), deps)| match to {
                _ if unreached(deps, &reached) => Ok(None),
                Some(shape) => g.expand_raw(shape).map(Some),
                None => Ok(Some(g)),
            })
            .collect()
    }

    /// False with several differentiable outputs (the node is reached through theirs).
    fn freed_by_backward(&self) -> bool {
        self.outs.len() <= 1
    }

    /// Keeps the gradient of differentiable output `index` for `apply`; the per-output
    /// node passes a 0-d zero on to the shared node.
    fn stash(&self, index: usize, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        stash_grad(&self.stash, index, g)
    }
}

/// Adds `g` to slot `index` of `stash` (a node with several differentiable results keeps
/// each result's gradient until its rule runs); passes a 0-d zero on.
pub(in crate::compile) fn stash_grad(
    stash: &RefCell<Vec<Option<Tensor>>>,
    index: usize,
    g: &Tensor,
) -> Result<Vec<Option<Tensor>>> {
    let mut stash = stash.borrow_mut();
    let slot = stash
        .get_mut(index)
        .ok_or_else(|| internal("a stashed gradient is out of range"))?;
    *slot = Some(match slot.take() {
        Some(prev) => prev.add(g)?,
        None => g.clone(),
    });
    Ok(vec![Some(creation::zeros(&[], DType::F32)?)])
}
