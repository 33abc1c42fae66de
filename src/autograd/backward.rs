//! The backward sweep: visit the nodes reachable from the output in reverse creation
//! order, apply each node's gradient rule, and accumulate into leaf `.grad`.

use super::node::{Edge, Node};
use super::{no_grad, rules};
use crate::compile::ir::IrOp;
use crate::compile::trace;
use crate::error::{ErrorKind, Result};
use crate::tensor::shape::fmt_shape;
use crate::tensor::{creation, err, Tensor};
use std::collections::HashMap;
use std::rc::Rc;

const FREED: &str = "Trying to backward through the graph a second time (or directly access saved \
tensors after they have already been freed). Saved intermediate values of the graph are freed when \
you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through \
the graph a second time or if you need to access saved tensors after calling backward.";

/// `t.backward(grad, retain_graph)`.
pub fn backward(root: &Tensor, grad: Option<Tensor>, retain_graph: bool) -> Result<()> {
    trace::note_backward();
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
    let _guard = no_grad();
    match root.grad_fn() {
        None => accumulate_leaf(root, &g),
        Some(node) => sweep(node, g, retain_graph, accumulate_leaf),
    }
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
    let mut acc: Vec<Option<Tensor>> = vec![None; inputs.len()];
    let _guard = no_grad();
    let g = creation::ones(root.shape(), root.dtype())?;
    let mut sink = |t: &Tensor, g: &Tensor| -> Result<()> {
        for (slot, x) in acc.iter_mut().zip(inputs) {
            if x.same(t) {
                let g = if g.shape() == t.shape() {
                    g.clone()
                } else {
                    rules::sum_to(g, t.shape())?
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
        None => sink(root, &g)?,
        Some(node) => sweep(node, g, false, &mut sink)?,
    }
    acc.into_iter()
        .zip(inputs)
        .map(|(a, x)| match a {
            Some(g) => g.contiguous_copy(),
            None => creation::zeros(x.shape(), x.dtype()),
        })
        .collect()
}

/// Nodes reachable from `root`, newest first (creation ids give a topological order).
fn collect(root: &Rc<Node>) -> Vec<Rc<Node>> {
    let mut seen: HashMap<*const Node, ()> = HashMap::new();
    let mut stack = vec![root.clone()];
    let mut out = Vec::new();
    while let Some(n) = stack.pop() {
        if seen.insert(Rc::as_ptr(&n), ()).is_some() {
            continue;
        }
        for e in &n.edges {
            if let Edge::Node(m) = e {
                stack.push(m.clone());
            }
        }
        out.push(n);
    }
    out.sort_by_key(|n| std::cmp::Reverse(n.id));
    out
}

fn sweep<F>(root: Rc<Node>, g: Tensor, retain: bool, mut leaf: F) -> Result<()>
where
    F: FnMut(&Tensor, &Tensor) -> Result<()>,
{
    let order = collect(&root);
    let mut grads: HashMap<*const Node, Tensor> = HashMap::new();
    grads.insert(Rc::as_ptr(&root), g);
    for node in order {
        let Some(g) = grads.remove(&Rc::as_ptr(&node)) else {
            continue;
        };
        let input_grads = {
            let op = node.op.borrow();
            let op = op
                .as_ref()
                .ok_or_else(|| err(ErrorKind::RuntimeError, FREED))?;
            rules::apply(op, &g)?
        };
        if !retain
            && node
                .op
                .borrow()
                .as_ref()
                .is_some_and(|o| o.freed_by_backward())
        {
            node.op.borrow_mut().take();
        }
        for (edge, ig) in node.edges.iter().zip(input_grads) {
            let Some(ig) = ig else { continue };
            match edge {
                Edge::None => {}
                Edge::Leaf(t) => leaf(t, &ig)?,
                Edge::Node(m) => {
                    let key = Rc::as_ptr(m);
                    let sum = match grads.remove(&key) {
                        Some(prev) => prev.add(&ig)?,
                        None => ig,
                    };
                    grads.insert(key, sum);
                }
            }
        }
    }
    Ok(())
}

/// `.grad += g` on a leaf (a fresh tensor, never aliasing the graph's gradients).
fn accumulate_leaf(t: &Tensor, g: &Tensor) -> Result<()> {
    let g = if g.shape() == t.shape() {
        g.clone()
    } else {
        rules::sum_to(g, t.shape())?
    };
    let new = match t.grad() {
        Some(prev) => prev.add(&g)?,
        None => {
            let c = g.contiguous_copy()?;
            trace::record_after(|| IrOp::Contiguous, &[&g], &c);
            c
        }
    };
    t.set_grad(Some(new));
    Ok(())
}
