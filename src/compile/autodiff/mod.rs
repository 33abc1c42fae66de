//! Compiled autograd, capture side: after a forward capture whose outputs need grad,
//! eager's own gradient rules run once more from the outputs (on the capture run's
//! autograd graph, kept intact) with a tracer recording them into a separate backward
//! graph. Its inputs are the output gradients, then the forward values the rules read
//! (extra outputs of the forward graph); its outputs are the gradients of the forward
//! inputs that need one. The sweep stops at the function's inputs: a non-leaf input's
//! history is the caller's, reached at run time through the compiled node's edges.

pub mod grad_deps;
pub mod grad_node;
pub mod if_grad;
pub(super) mod if_vjp;
pub mod loop_grad;
pub(super) mod loop_post;
pub(super) mod loop_vjp;
pub(super) mod sym_grad;

use crate::autograd::{rules, Edge, Node};
use crate::compile::capture::trace::{self, BreakReason, GraphBreak, Tracer};
use crate::compile::ir::{Graph, InputKind, NodeId, PathStep};
use crate::tensor::hooks::WeakTensor;
use crate::tensor::{creation, Tensor};
use std::collections::HashMap;
use std::rc::Rc;

/// The forward values a backward being recorded may read, and those it read.
pub struct FwdLink {
    known: HashMap<usize, (WeakTensor, NodeId)>,
    /// Forward nodes read, in the order of the backward graph's inputs after the grads.
    pub reads: Vec<NodeId>,
}

impl FwdLink {
    pub fn new(known: HashMap<usize, (WeakTensor, NodeId)>) -> FwdLink {
        FwdLink {
            known,
            reads: Vec::new(),
        }
    }

    /// A new backward input for the forward value of identity `key`, whose values `t`
    /// has (None: not a forward value).
    pub fn read(&mut self, g: &mut Graph, key: usize, t: &Tensor) -> Option<NodeId> {
        let (_, fwd) = self.known.get(&key)?;
        self.reads.push(*fwd);
        let path = vec![PathStep::Index(g.inputs.len())];
        Some(g.add_input(InputKind::Arg(path), t.dtype(), t.shape().into(), None))
    }
}

/// A recorded backward: its graph, the forward nodes it reads, which forward outputs
/// are differentiable (positions in the forward graph's outputs) and which forward
/// inputs (slots) its outputs are the gradients of.
pub struct Derived {
    pub graph: Graph,
    pub reads: Vec<NodeId>,
    pub douts: Vec<usize>,
    pub slots: Vec<usize>,
}

fn brk(reason: BreakReason) -> GraphBreak {
    GraphBreak { reason, span: None }
}

fn internal(msg: String) -> GraphBreak {
    brk(BreakReason::Internal(format!(
        "compiled autograd: the backward could not be recorded: {msg}"
    )))
}

/// Records the backward of a finished forward capture. `outs`: the eager output tensors
/// (by forward output position); `inputs`: the forward inputs by slot. None when no
/// output needs grad.
pub fn derive(
    fwd: &mut Tracer,
    outs: &[Tensor],
    inputs: &[Tensor],
) -> Result<Option<Derived>, GraphBreak> {
    let douts: Vec<usize> = (0..outs.len())
        .filter(|&i| outs[i].requires_grad() && !inputs.iter().any(|x| x.same(&outs[i])))
        .collect();
    if douts.is_empty() {
        return Ok(None);
    }
    let mut grads_in = Vec::with_capacity(douts.len());
    for &i in &douts {
        let y = &outs[i];
        grads_in.push(creation::ones(y.shape(), y.dtype()).map_err(|e| internal(e.message))?);
    }
    let mut bwd = fwd.for_backward();
    for (k, g) in grads_in.iter().enumerate() {
        bwd.add_arg(g, vec![PathStep::Index(k)]);
    }
    trace::start(bwd);
    let swept = {
        let _ng = crate::autograd::no_grad();
        let seeds: Vec<(&Tensor, &Tensor)> =
            douts.iter().map(|&i| &outs[i]).zip(&grads_in).collect();
        Sweep::new(inputs).run(&seeds)
    };
    let Some(mut tr) = trace::finish() else {
        return Err(internal("the tracer was lost".into()));
    };
    let slot_grads = swept?;
    if let Some(b) = tr.breaks.first() {
        return Err(b.clone());
    }
    let mut slots = Vec::new();
    for (slot, g) in slot_grads.into_iter().enumerate() {
        let Some(g) = g else { continue };
        let id = tr
            .node_of(&g)
            .ok_or_else(|| brk(BreakReason::UntracedTensor))?;
        tr.graph.outputs.push(id);
        slots.push(slot);
    }
    let reads = tr.fwd.take().map(|l| l.reads).unwrap_or_default();
    Ok(Some(Derived {
        graph: std::mem::take(&mut tr.graph),
        reads,
        douts,
        slots,
    }))
}

/// Eager's backward sweep with the function's inputs as its boundary: gradients that
/// reach an input (a leaf, or a non-leaf's producer) are summed per input slot.
struct Sweep<'a> {
    inputs: &'a [Tensor],
    /// Producer node of each non-leaf input requiring grad -> its slot.
    boundary: HashMap<*const Node, usize>,
    slot_grads: Vec<Option<Tensor>>,
}

impl<'a> Sweep<'a> {
    fn new(inputs: &'a [Tensor]) -> Sweep<'a> {
        let mut boundary = HashMap::new();
        for (slot, x) in inputs.iter().enumerate() {
            if let (true, Some(n)) = (x.requires_grad(), x.grad_fn()) {
                boundary.entry(Rc::as_ptr(&n)).or_insert(slot);
            }
        }
        Sweep {
            inputs,
            boundary,
            slot_grads: vec![None; inputs.len()],
        }
    }

    fn run(mut self, seeds: &[(&Tensor, &Tensor)]) -> Result<Vec<Option<Tensor>>, GraphBreak> {
        let mut grads: HashMap<*const Node, (Rc<Node>, Tensor)> = HashMap::new();
        for (y, g) in seeds {
            match y.grad_fn() {
                Some(n) => self.send(&mut grads, &n, (*g).clone())?,
                None => return Err(created_leaf()),
            }
        }
        let mut order: Vec<Rc<Node>> = grads.values().map(|(n, _)| n.clone()).collect();
        self.reachable(&mut order);
        for node in order {
            let Some((_, g)) = grads.remove(&Rc::as_ptr(&node)) else {
                continue;
            };
            let input_grads = {
                let op = node.op.borrow();
                let op = op
                    .as_ref()
                    .ok_or_else(|| internal("the graph was freed".into()))?;
                rules::apply(op, &g).map_err(|e| internal(e.message))?
            };
            for (edge, ig) in node.edges.iter().zip(input_grads) {
                let Some(ig) = ig else { continue };
                match edge {
                    Edge::None => {}
                    Edge::Leaf(t) => {
                        let slot = self.leaf_slot(t)?;
                        self.add_slot(slot, ig)?;
                    }
                    Edge::Node(m) => self.send(&mut grads, m, ig)?,
                }
            }
        }
        Ok(self.slot_grads)
    }

    /// Nodes reachable from `roots` without crossing the boundary, newest first.
    fn reachable(&self, order: &mut Vec<Rc<Node>>) {
        let mut seen = std::collections::HashSet::new();
        let mut stack = std::mem::take(order);
        while let Some(n) = stack.pop() {
            if !seen.insert(Rc::as_ptr(&n)) {
                continue;
            }
            for e in &n.edges {
                if let Edge::Node(m) = e {
                    if !self.boundary.contains_key(&Rc::as_ptr(m)) {
                        stack.push(m.clone());
                    }
                }
            }
            order.push(n);
        }
        order.sort_by_key(|n| std::cmp::Reverse(n.id));
    }

    fn send(
        &mut self,
        grads: &mut HashMap<*const Node, (Rc<Node>, Tensor)>,
        m: &Rc<Node>,
        g: Tensor,
    ) -> Result<(), GraphBreak> {
        if let Some(&slot) = self.boundary.get(&Rc::as_ptr(m)) {
            return self.add_slot(slot, g);
        }
        let key = Rc::as_ptr(m);
        let sum = match grads.remove(&key) {
            Some((_, prev)) => prev.add(&g).map_err(|e| internal(e.message))?,
            None => g,
        };
        grads.insert(key, (m.clone(), sum));
        Ok(())
    }

    fn leaf_slot(&self, t: &Tensor) -> Result<usize, GraphBreak> {
        self.inputs
            .iter()
            .position(|x| x.same(t))
            .ok_or_else(created_leaf)
    }

    /// Adds `g` (summed down to the input's shape) to slot `slot`'s gradient.
    fn add_slot(&mut self, slot: usize, g: Tensor) -> Result<(), GraphBreak> {
        let shape = self.inputs.get(slot).map(|x| x.shape().to_vec());
        let g = match shape {
            Some(s) if s.as_slice() != g.shape() => {
                rules::sum_to(&g, &s).map_err(|e| internal(e.message))?
            }
            _ => g,
        };
        let cell = self
            .slot_grads
            .get_mut(slot)
            .ok_or_else(|| internal("an input slot is out of range".into()))?;
        *cell = Some(match cell.take() {
            Some(prev) => prev.add(&g).map_err(|e| internal(e.message))?,
            None => g,
        });
        Ok(())
    }
}

fn created_leaf() -> GraphBreak {
    brk(BreakReason::Autograd(
        "a tensor requiring grad created inside the function",
    ))
}

/// A recorded, optimized backward not yet compiled (see [`finish`]).
pub struct Pending {
    graph: Graph,
    douts: Vec<usize>,
    saved_at: usize,
    n_saved: usize,
    slots: Vec<usize>,
}

/// Records the backward of a finished forward capture whose return value holds the
/// tensors `outs` (`args`: the argument tensors by input slot; externals follow them),
/// appending the forward values it reads to the forward graph's outputs. None: no output
/// needs grad.
pub fn build(
    t: &mut Tracer,
    outs: &[Tensor],
    args: &[Tensor],
) -> Result<Option<Pending>, GraphBreak> {
    if !t.effects.is_empty() {
        // An in-place write rebases the written tensor's history inside the function.
        return Err(brk(BreakReason::Autograd(
            "an in-place write while gradients are needed",
        )));
    }
    let mut inputs = args.to_vec();
    inputs.extend(t.externals.iter().cloned());
    let Some(d) = derive(t, outs, &inputs)? else {
        return Ok(None);
    };
    let saved_at = t.graph.outputs.len();
    t.graph.outputs.extend(d.reads.iter().copied());
    let fail = |e: crate::error::Error| internal(e.message);
    crate::compile::ir::verify::verify(&d.graph).map_err(fail)?;
    let graph = crate::compile::passes::optimize(d.graph).map_err(fail)?;
    Ok(Some(Pending {
        graph,
        douts: d.douts,
        saved_at,
        n_saved: d.reads.len(),
        slots: d.slots,
    }))
}

/// Compiles a recorded backward. `fwd`: the optimized forward graph (outputs: the
/// function's, then the saved values); when it has symbolic sizes the backward gets
/// them too (its inputs' sizes follow the forward's; symbols the backward fixes are
/// specialised in `fwd.sym`, see sym_grad::settle), and `sym` says whether it could:
/// false means the backward is specialised and so must the forward be.
pub fn finish(
    p: Pending,
    fwd: &mut Graph,
) -> Result<(crate::compile::autodiff::grad_node::AutoDiff, bool), GraphBreak> {
    let fail = |e: crate::error::Error| internal(e.message);
    let mut graph = p.graph;
    let expanded = crate::compile::autodiff::sym_grad::runtime_expands(&mut graph);
    let sym = fwd.sym.is_none() || {
        let positions: Vec<usize> = p
            .douts
            .iter()
            .copied()
            .chain(p.saved_at..p.saved_at + p.n_saved)
            .collect();
        let info = crate::compile::autodiff::sym_grad::settle(
            &graph, fwd, &positions, &p.slots, &expanded,
        );
        let ok = info.is_some();
        graph.sym = info.flatten().map(Box::new);
        ok
    };
    let deps = crate::compile::autodiff::grad_deps::input_deps(&graph, 0, p.douts.len());
    let backward = crate::compile::runtime::lower::compile_graph(graph).map_err(fail)?;
    let ad = crate::compile::autodiff::grad_node::AutoDiff {
        backward: Rc::new(backward),
        douts: p.douts,
        saved_at: p.saved_at,
        n_saved: p.n_saved,
        slots: p.slots,
        expanded,
        deps,
    };
    Ok((ad, sym))
}
