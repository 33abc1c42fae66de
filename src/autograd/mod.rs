//! Define-by-run autograd: the thread-local grad mode, recording of nodes (only when
//! grad mode is on and an input requires grad), and the backward sweep.

pub mod backward;
mod create;
mod grad_kernels;
mod matmul_rules;
pub mod names;
pub mod node;
pub mod norm_rules;
pub mod rules;

#[cfg(feature = "internals")]
pub use backward::{backward, no_hooks};
pub use backward::{backward_hooked, grad_of, grad_wrt, HookRunner, Sweep};
pub use grad_kernels::grad_kernel;
pub use node::{
    BackwardOp, Edge, Edges, KernelGrad, More, Node, OpSaved, Saved, SavedShape, SharedBackward,
    ViewCall,
};

use crate::tensor::Tensor;
use std::cell::Cell;
use std::rc::Rc;

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
    static NEXT_NODE_ID: Cell<u64> = const { Cell::new(0) };
}

/// True unless inside `no_grad` (or grad mode was switched off).
pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(|g| g.get())
}

/// Switch grad mode; returns the previous setting.
pub fn set_grad_enabled(on: bool) -> bool {
    GRAD_ENABLED.with(|g| g.replace(on))
}

/// Restores the previous grad mode when dropped (`with no_grad():`).
#[must_use]
pub struct GradModeGuard {
    prev: bool,
}

impl Drop for GradModeGuard {
    fn drop(&mut self) {
        set_grad_enabled(self.prev);
    }
}

/// Turn grad mode off until the guard drops.
pub fn no_grad() -> GradModeGuard {
    GradModeGuard {
        prev: set_grad_enabled(false),
    }
}

/// Turn grad mode on until the guard drops (`enable_grad`).
pub fn enable_grad() -> GradModeGuard {
    GradModeGuard {
        prev: set_grad_enabled(true),
    }
}

/// Does an op on these inputs need a node? (The whole autograd tax when nothing
/// requires grad: one thread-local read and a flag test per input.)
#[inline]
pub fn needs_grad(inputs: &[&Tensor]) -> bool {
    inputs.iter().any(|t| t.requires_grad()) && is_grad_enabled()
}

/// Record `op` as the producer of `out`, with one edge per entry of `inputs`.
pub fn record(out: &Tensor, op: BackwardOp, inputs: &[&Tensor]) {
    record_edges(out, op, inputs.iter().map(|t| Edge::of(t)).collect());
}

/// Record `op` as the producer of `out` with the given edges (one per gradient the
/// op's rule returns; `Edge::None` for operands that are not tensors).
pub fn record_edges(out: &Tensor, op: BackwardOp, edges: Edges) {
    out.set_grad_fn(Some(new_node(op, edges)));
}

/// The id the next node gets: a composite takes it before its ops run, so
/// [`names::name_composite`] renames only a node it made.
pub fn next_node_id() -> u64 {
    NEXT_NODE_ID.with(|c| c.get())
}

/// A node attached to no tensor yet (newer than every node made before it).
pub fn new_node(op: BackwardOp, edges: Edges) -> Rc<Node> {
    let id = NEXT_NODE_ID.with(|c| {
        let v = c.get();
        c.set(v + 1);
        v
    });
    Node::new_rc(id, op, edges)
}
