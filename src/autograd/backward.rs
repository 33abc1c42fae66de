//! The backward sweep: visit the nodes reachable from the output in reverse creation
//! order, apply each node's gradient rule, and accumulate into leaf `.grad`. A leaf's
//! gradient is accumulated (and its hooks run) as soon as the last node that feeds it
//! ran, not at the end of the sweep, so a post-accumulate hook (DistributedDataParallel's
//! bucket all-reduce) can start work while the rest of the backward runs.

use super::node::{BackwardOp, Edge, Edges, Node};
use super::rules::Grads;
use super::{create, enable_grad, no_grad, rules};
use crate::error::{ErrorKind, Result};
use crate::ir::record as trace;
use crate::ir::IrOp;
use crate::tensor::shape::fmt_shape;
use crate::tensor::{creation, err, Tensor};
use foldhash::fast::FixedState;
use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

const FREED: &str = "Trying to backward through the graph a second time (or directly access saved \
tensors after they have already been freed). Saved intermediate values of the graph are freed when \
you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through \
the graph a second time or if you need to access saved tensors after calling backward.";

/// Runs one gradient hook (`register_hook`'s callable, opaque here) on a gradient: the
/// replacement gradient it returns, or None to keep it.
pub type HookRunner<'a> = dyn FnMut(&Rc<dyn Any>, &Tensor) -> Result<Option<Tensor>> + 'a;

/// Runs no hook (for callers whose graphs can have none).
pub fn no_hooks(_: &Rc<dyn Any>, _: &Tensor) -> Result<Option<Tensor>> {
    Ok(None)
}

/// `t.backward(grad, retain_graph)` without hooks (for tests: `internals`).
#[cfg(feature = "internals")]
pub fn backward(root: &Tensor, grad: Option<Tensor>, retain_graph: bool) -> Result<()> {
    let sweep = Sweep {
        retain_graph,
        create_graph: false,
    };
    backward_hooked(root, grad, sweep, None, &mut no_hooks)
}

/// How a backward sweep treats the graph: `retain_graph` keeps the nodes' saved
/// tensors for another backward; `create_graph` runs the rules with grad mode on over
/// the saved tensors' histories, so the gradients are differentiable (higher-order
/// gradients; see create.rs).
#[derive(Clone, Copy)]
pub struct Sweep {
    pub retain_graph: bool,
    pub create_graph: bool,
}

impl Sweep {
    /// Grad mode for the sweep (on only when it creates a graph); a capture cannot
    /// record a differentiable backward, so it breaks (the function runs eagerly).
    fn grad_mode(self) -> super::GradModeGuard {
        if !self.create_graph {
            return no_grad();
        }
        if trace::active() {
            trace::graph_break(trace::BreakReason::Autograd("create_graph=True"));
        }
        enable_grad()
    }
}

/// `t.backward(grad, retain_graph, create_graph, inputs)` running tensors' gradient
/// hooks through `hooks`. With `inputs`, only those tensors (leaves or intermediate
/// ones) get their `.grad` accumulated, and only the nodes leading to them run.
pub fn backward_hooked(
    root: &Tensor,
    grad: Option<Tensor>,
    sweep: Sweep,
    inputs: Option<&[Tensor]>,
    hooks: &mut HookRunner,
) -> Result<()> {
    trace::note_backward();
    if let Some(w) = inputs {
        check_inputs(
            w,
            "backward",
            "can't retain_grad on Tensor that has requires_grad=False",
        )?;
    }
    if !root.requires_grad() {
        return Err(err(
            ErrorKind::RuntimeError,
            "element 0 of tensors does not require grad and does not have a grad_fn",
        ));
    }
    let g = match grad {
        Some(g) => {
            if g.shape() != root.shape() {
                return Err(err(
                    ErrorKind::ShapeError,
                    format!(
                        "backward: gradient of shape {} does not match the output's shape {}",
                        fmt_shape(g.shape()),
                        fmt_shape(root.shape())
                    ),
                ));
            }
            g.cast(root.dtype())?
        }
        None => {
            if root.numel() != 1 {
                return Err(err(
                    ErrorKind::RuntimeError,
                    "grad can be implicitly created only for scalar outputs",
                ));
            }
            creation::ones(root.shape(), root.dtype())?
        }
    };
    let _guard = sweep.grad_mode();
    match root.grad_fn() {
        None if inputs.is_some_and(|w| !w.iter().any(|x| x.same(root))) => Ok(()),
        None => {
            let g = run_hooks(root, g, hooks)?;
            accumulate_leaf(root, g)?;
            run_post_hooks(root, hooks)
        }
        Some(node) => run_sweep(node, g, sweep, hooks, true, inputs, accumulate_leaf),
    }
}

/// The inputs of `backward(inputs=)` / `autograd.grad`: at least one, each requiring
/// grad (torch's errors).
fn check_inputs(inputs: &[Tensor], op: &str, no_grad: &str) -> Result<()> {
    if inputs.is_empty() {
        return Err(err(
            ErrorKind::RuntimeError,
            format!("`inputs` argument to `{op}()` cannot be empty."),
        ));
    }
    if inputs.iter().any(|x| !x.requires_grad()) {
        return Err(err(ErrorKind::RuntimeError, no_grad));
    }
    Ok(())
}

/// Functional gradients (`grad(f)(x...)`): d`root`/d`input` for each input (zeros where
/// `root` does not depend on it), without touching any `.grad`. `root` must be a
/// one-element tensor. The graph is freed afterwards.
pub fn grad_of(root: &Tensor, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
    if root.numel() != 1 {
        return Err(err(
            ErrorKind::RuntimeError,
            format!(
                "grad: the function must return a one-element tensor, got shape {}",
                fmt_shape(root.shape())
            ),
        ));
    }
    let sweep = Sweep {
        retain_graph: false,
        create_graph: false,
    };
    grad_wrt(root, None, inputs, sweep, &mut no_hooks)?
        .into_iter()
        .zip(inputs)
        .map(|(g, x)| match g {
            Some(g) => Ok(g),
            None => creation::zeros(x.shape(), x.dtype()),
        })
        .collect()
}

/// `torch.autograd.grad(root, inputs, grad_output, retain_graph, create_graph)`: the
/// gradient of `root` (weighted by `grad_output`, ones for a one-element root) with
/// respect to each input, a leaf or an intermediate tensor (the summed gradient its
/// node receives; None where `root` does not depend on it), without touching any
/// `.grad`; the graph is freed unless `retain_graph`.
pub fn grad_wrt(
    root: &Tensor,
    grad_output: Option<Tensor>,
    inputs: &[Tensor],
    sweep: Sweep,
    hooks: &mut HookRunner,
) -> Result<Vec<Option<Tensor>>> {
    check_inputs(
        inputs,
        "grad",
        "One of the differentiated Tensors does not require grad",
    )?;
    let g = match grad_output {
        Some(g) if g.shape() == root.shape() => g.cast(root.dtype())?,
        Some(g) => {
            return Err(err(
                ErrorKind::RuntimeError,
                format!(
                    "Mismatch in shape: grad_output[0] has a shape of {} and output[0] has a shape of {}.",
                    fmt_shape(g.shape()),
                    fmt_shape(root.shape())
                ),
            ))
        }
        None if root.numel() == 1 => creation::ones(root.shape(), root.dtype())?,
        None => {
            return Err(err(
                ErrorKind::RuntimeError,
                "grad can be implicitly created only for scalar outputs",
            ))
        }
    };
    let mut acc: Vec<Option<Tensor>> = vec![None; inputs.len()];
    let _guard = sweep.grad_mode();
    let mut sink = |t: &Tensor, g: Tensor| -> Result<()> {
        for (slot, x) in acc.iter_mut().zip(inputs) {
            if x.same(t) {
                let g = if g.shape() == t.shape() {
                    g.clone()
                } else {
                    rules::sum_to(&g, t.shape())?
                };
                *slot = Some(match slot.take() {
                    Some(prev) => prev.add(&g)?,
                    None => g,
                });
            }
        }
        Ok(())
    };
    match root.grad_fn() {
        None => {
            let g = run_hooks(root, g, hooks)?;
            sink(root, g)?
        }
        Some(node) => run_sweep(node, g, sweep, hooks, false, Some(inputs), &mut sink)?,
    }
    acc.into_iter()
        .map(|a| a.map(|g| owned(&g)).transpose())
        .collect()
}

type PtrSet = HashSet<*const Node, FixedState>;

/// Nodes reachable from `root`, newest first (creation ids give a topological order).
fn collect(root: &Rc<Node>) -> Vec<Rc<Node>> {
    let mut seen = PtrSet::default();
    let mut stack = vec![root.clone()];
    let mut out = Vec::new();
    while let Some(n) = stack.pop() {
        if !seen.insert(Rc::as_ptr(&n)) {
            continue;
        }
        for e in &n.edges {
            if let Edge::Node(m) = e {
                stack.push(m.clone());
            }
        }
        out.push(n);
    }
    out.sort_unstable_by_key(|n| std::cmp::Reverse(n.id));
    out
}

/// The position of `n` in `order` (newest first; ids are unique per thread).
fn position(order: &[Rc<Node>], n: &Rc<Node>) -> Result<usize> {
    order
        .binary_search_by(|x| n.id.cmp(&x.id))
        .ok()
        .filter(|&i| Rc::ptr_eq(&order[i], n))
        .ok_or_else(|| {
            err(
                ErrorKind::RuntimeError,
                "internal: backward lost a graph node",
            )
        })
}

/// A gradient as a tensor of its own (for `.grad` or autograd.grad's result): a
/// contiguous copy, or in a create-graph sweep the gradient itself, made contiguous
/// with its history.
fn owned(g: &Tensor) -> Result<Tensor> {
    if creating(g) {
        g.contiguous()
    } else {
        g.contiguous_copy()
    }
}

/// Whether `g` is a gradient made by a create-graph sweep (one with history).
fn creating(g: &Tensor) -> bool {
    super::is_grad_enabled() && g.requires_grad()
}

/// `prev + g`: added into `prev`'s buffer when nothing else can see it (outside a
/// capture, whose recording must see every op, and outside a create-graph sweep,
/// whose gradients are graph values), else a new tensor.
fn accumulate(prev: Tensor, g: &Tensor) -> Result<Tensor> {
    if !trace::active() && !g.requires_grad() && !prev.requires_grad() && prev.add_into_unique(g)? {
        return Ok(prev);
    }
    prev.add(g)
}

fn add_to(slot: &mut Option<Tensor>, g: Tensor) -> Result<()> {
    *slot = Some(match slot.take() {
        Some(prev) => accumulate(prev, &g)?,
        None => g,
    });
    Ok(())
}

/// The gradients of one sweep's leaves, summed over all their uses before they reach
/// `.grad` (as PyTorch's engine does): one accumulation into `.grad` per backward.
struct LeafGrads {
    leaves: Vec<(Tensor, Option<Tensor>)>,
    slots: HashMap<usize, usize, FixedState>,
    /// (position in the sweep's order of the last node that feeds the leaf, its slot),
    /// sorted: the leaf's sum is final once that node ran. Leaves that end at the same
    /// node keep the order of their first use.
    ends: Vec<(usize, usize)>,
}

impl LeafGrads {
    /// The leaves fed by the nodes of `order` (the sweep's order).
    fn new(order: &[Rc<Node>]) -> LeafGrads {
        let mut lg = LeafGrads {
            leaves: Vec::new(),
            slots: HashMap::default(),
            ends: Vec::new(),
        };
        for (i, n) in order.iter().enumerate() {
            for e in &n.edges {
                if let Edge::Leaf(t) = e {
                    let next = lg.leaves.len();
                    let k = *lg.slots.entry(t.id()).or_insert(next);
                    if k == next {
                        lg.leaves.push((t.clone(), None));
                        lg.ends.push((i, k));
                    } else {
                        lg.ends[k].0 = i;
                    }
                }
            }
        }
        lg.ends.sort_by_key(|e| e.0);
        lg
    }

    fn add(&mut self, t: &Tensor, g: Tensor) -> Result<()> {
        let g = if g.shape() == t.shape() {
            g
        } else {
            rules::sum_to(&g, t.shape())?
        };
        let i = *self.slots.get(&t.id()).ok_or_else(|| {
            err(
                ErrorKind::RuntimeError,
                "internal: backward reached a leaf outside its graph",
            )
        })?;
        add_to(&mut self.leaves[i].1, g)
    }

    /// The leaves whose sums are final once node `i` (and every node before it) ran,
    /// with their sums taken out (None where no use sent one); `cursor` walks `ends`.
    fn finished(&mut self, i: usize, cursor: &mut usize) -> Vec<(Tensor, Option<Tensor>)> {
        let mut out = Vec::new();
        while let Some(&(_, k)) = self.ends.get(*cursor).filter(|e| e.0 == i) {
            *cursor += 1;
            let (t, g) = &mut self.leaves[k];
            out.push((t.clone(), g.take()));
        }
        out
    }

    /// Applies `op`'s rule for a matmul outside a capture: the weight gradient summed
    /// straight into the running sum of its leaf `b` once that sum exists and nothing
    /// else sees it, else only the gradients some edge needs (a capture records the
    /// full rule); `None` for other ops.
    fn fused_rule(&self, op: &BackwardOp, edges: &Edges, g: &Tensor) -> Result<Option<Grads>> {
        let (
            BackwardOp::Op {
                op: crate::ir::IrOp::Matmul,
                ..
            },
            [a, b],
        ) = (op, edges.as_slice())
        else {
            return Ok(None);
        };
        if trace::active() {
            return Ok(None);
        }
        let need_a = !matches!(a, Edge::None);
        if let Edge::Leaf(b) = b {
            if let Some(Some(sum)) = self.slots.get(&b.id()).map(|&i| &self.leaves[i].1) {
                if let Some(ga) = rules::matmul_into_b(op, g, sum, need_a)? {
                    return Ok(Some(vec![ga, None]));
                }
            }
        }
        let need_b = !matches!(b, Edge::None);
        rules::matmul_needed(op, g, need_a, need_b).map(Some)
    }
}

/// Sweeps the graph from `root` with gradient `g`, handing each leaf's summed gradient
/// (after its hooks) to `leaf` as soon as it is final; with `post`, the leaf's
/// post-accumulate hooks run right after (`backward`, not `autograd.grad`). With
/// `wanted` (autograd.grad's or backward's inputs), only those leaves are handed on, an
/// intermediate one gets its node's summed gradient before the node runs, and only the
/// nodes leading to a wanted tensor run (as torch: the rest of the graph is neither
/// computed nor needed alive).
#[allow(clippy::too_many_arguments)]
fn run_sweep<F>(
    root: Rc<Node>,
    g: Tensor,
    sweep: Sweep,
    hooks: &mut HookRunner,
    post: bool,
    wanted: Option<&[Tensor]>,
    mut leaf: F,
) -> Result<()>
where
    F: FnMut(&Tensor, Tensor) -> Result<()>,
{
    let order = collect(&root);
    let taps: Vec<&Tensor> = wanted
        .unwrap_or(&[])
        .iter()
        .filter(|t| !t.is_leaf())
        .collect();
    let needed = match wanted {
        Some(w) => leading_to(&order, w)?,
        None => vec![true; order.len()],
    };
    let mut grads: Vec<Option<Tensor>> = vec![None; order.len()];
    grads[position(&order, &root)?] = Some(g);
    let mut leaves = LeafGrads::new(&order);
    let mut cursor = 0;
    for (i, node) in order.iter().enumerate() {
        if let Some(g) = grads[i].take() {
            // a tapped intermediate tensor gets its node's summed gradient, as a leaf
            for t in &taps {
                if t.grad_fn().is_some_and(|n| Rc::ptr_eq(&n, node)) {
                    leaf(t, g.clone())?;
                }
            }
            if needed[i] {
                node_step(node, g, &order, &mut grads, &mut leaves, sweep, hooks)?;
            }
        }
        for (t, g) in leaves.finished(i, &mut cursor) {
            let Some(g) = g else { continue };
            if wanted.is_some_and(|w| !w.iter().any(|x| x.same(&t))) {
                continue;
            }
            let g = run_hooks(&t, g, hooks)?;
            leaf(&t, g)?;
            if post {
                run_post_hooks(&t, hooks)?;
            }
        }
    }
    Ok(())
}

/// For each node of `order` (newest first), whether it must run: a tensor of `wanted`
/// is upstream of it (a leaf it feeds, or a node whose output is wanted or that must
/// run itself).
fn leading_to(order: &[Rc<Node>], wanted: &[Tensor]) -> Result<Vec<bool>> {
    let mut runs = vec![false; order.len()];
    let mut reaches = vec![false; order.len()];
    for i in (0..order.len()).rev() {
        let n = &order[i];
        let mut hit = false;
        for e in &n.edges {
            hit = hit
                || match e {
                    Edge::Leaf(t) => wanted.iter().any(|w| w.same(t)),
                    Edge::Node(m) => reaches[position(order, m)?],
                    Edge::None => false,
                };
        }
        runs[i] = hit;
        reaches[i] = hit
            || wanted
                .iter()
                .any(|t| t.grad_fn().is_some_and(|m| Rc::ptr_eq(&m, n)));
    }
    Ok(runs)
}

/// Runs one node of the sweep on its summed output gradient `g`: the hooks of its
/// watched outputs, then its rule, whose input gradients go to the nodes and leaves
/// it feeds.
fn node_step(
    node: &Rc<Node>,
    mut g: Tensor,
    order: &[Rc<Node>],
    grads: &mut [Option<Tensor>],
    leaves: &mut LeafGrads,
    sweep: Sweep,
    hooks: &mut HookRunner,
) -> Result<()> {
    for t in node.watched() {
        g = run_hooks(&t, g, hooks)?;
        if t.retains_grad() {
            let kept = match t.grad() {
                Some(prev) => prev.add(&g)?,
                None => owned(&g)?,
            };
            t.set_grad(Some(kept));
        }
    }
    let input_grads = {
        let op = node.op.borrow();
        let op = op
            .as_ref()
            .ok_or_else(|| err(ErrorKind::RuntimeError, FREED))?;
        if sweep.create_graph {
            let _applying = create::apply_differentiably(node, op)?;
            rules::apply(op, &g)?
        } else {
            match leaves.fused_rule(op, &node.edges, &g)? {
                Some(grads) => grads,
                None => rules::apply(op, &g)?,
            }
        }
    };
    drop(g);
    if !sweep.retain_graph
        && node
            .op
            .borrow()
            .as_ref()
            .is_some_and(|o| o.freed_by_backward())
    {
        node.free();
    }
    for (edge, ig) in node.edges.iter().zip(input_grads) {
        let Some(ig) = ig else { continue };
        match edge {
            Edge::None => {}
            // a leaf's gradient has the leaf's dtype (f32 @ f64 graphs, as PyTorch)
            Edge::Leaf(t) if t.dtype().is_float() && ig.dtype() != t.dtype() => {
                leaves.add(t, ig.cast(t.dtype())?)?
            }
            Edge::Leaf(t) => leaves.add(t, ig)?,
            Edge::Node(m) => {
                let ig = match m.grad_dtype() {
                    Some(d) if ig.dtype() != d => ig.cast(d)?,
                    _ => ig,
                };
                add_to(&mut grads[position(order, m)?], ig)?
            }
        }
    }
    Ok(())
}

/// `t`'s post-accumulate hooks, each called with `t` once its `.grad` was updated; a
/// hook must return None.
fn run_post_hooks(t: &Tensor, hooks: &mut HookRunner) -> Result<()> {
    for f in t.post_hook_fns() {
        if hooks(&f, t)?.is_some() {
            return Err(err(
                ErrorKind::RuntimeError,
                "a post-accumulate-grad hook must return None",
            ));
        }
    }
    Ok(())
}

/// `t`'s hooks on its gradient `g`, in registration order, each seeing the previous
/// one's result; a hook may not change the gradient's shape (PyTorch's rule).
fn run_hooks(t: &Tensor, mut g: Tensor, hooks: &mut HookRunner) -> Result<Tensor> {
    if !t.has_grad_hooks() {
        return Ok(g);
    }
    for f in t.hook_fns() {
        if let Some(new) = hooks(&f, &g)? {
            if new.shape() != g.shape() {
                return Err(err(
                    ErrorKind::RuntimeError,
                    format!(
                        "hook 'hook' has changed the size of value: expected {}, got {}",
                        fmt_shape(g.shape()),
                        fmt_shape(new.shape())
                    ),
                ));
            }
            g = new.cast(g.dtype())?;
        }
    }
    Ok(g)
}

/// `.grad += g` on a leaf (a fresh tensor, never aliasing the graph's gradients).
fn accumulate_leaf(t: &Tensor, g: Tensor) -> Result<()> {
    let g = if g.shape() == t.shape() {
        g
    } else {
        rules::sum_to(&g, t.shape())?
    };
    let prev = t.grad();
    trace::note_grad_read(t, prev.as_ref());
    let new = match prev {
        Some(prev) => prev.add(&g)?,
        // A create-graph sweep's gradient keeps its history in `.grad`.
        None if creating(&g) => owned(&g)?,
        // The sweep's own sum, seen by nothing else: it becomes `.grad` as it is.
        None if !trace::active() && g.is_whole_unique() => g,
        None => {
            let c = g.contiguous_copy()?;
            trace::record_after(|| IrOp::Contiguous, &[&g], &c);
            c
        }
    };
    t.set_grad(Some(new));
    Ok(())
}
