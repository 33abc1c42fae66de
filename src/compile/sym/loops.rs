//! Symbolic sizes at a captured loop whose regions are not walked (`regions` walks the
//! others): a `while` with scan outputs, or any loop when Python code read the size of
//! a tensor made inside a region. The loop's regions keep capture-time shapes, so an
//! arg's symbolic dim survives only where the body reads it through a runtime index
//! (`x[t]` removes that dim, so nothing in the body depends on its size) and as the
//! trip count; every other symbol reaching the loop is specialised. A scan result (the
//! stacked values of every iteration) has the trip count as its leading size.

use super::analyze::Walk;
use super::expr::{fixed_shape, SymShape};
use crate::compile::ir::control::{LoopSpec, TripCount};
use crate::compile::ir::{Graph, IrIndex, IrOp, Node, NodeId};

/// True when every use of region input `input` in `g` (possibly none) is an `Index` of
/// it whose entry for dim `dim` is a 0-d runtime index, with only plain entries before.
fn only_indexed_at(g: &Graph, input: NodeId, dim: usize) -> bool {
    let outputs_ok = !g.outputs.contains(&input);
    outputs_ok
        && g.nodes.iter().all(|n| {
            if !n.args.contains(&input) {
                return true;
            }
            let IrOp::Index { indices } = &n.op else {
                return false;
            };
            n.args.iter().skip(1).all(|a| *a != input)
                && n.args.first() == Some(&input)
                && runtime_index_at(g, n, indices, dim)
        })
}

fn runtime_index_at(g: &Graph, n: &Node, indices: &[IrIndex], dim: usize) -> bool {
    let mut d = 0usize;
    for ix in indices {
        match ix {
            IrIndex::Indices { arg } if d == dim => {
                return n
                    .args
                    .get(*arg)
                    .and_then(|a| g.node(*a))
                    .is_some_and(|a| a.shape.is_empty());
            }
            IrIndex::Int(_)
            | IrIndex::Slice { .. }
            | IrIndex::SymSlice { .. }
            | IrIndex::Indices { .. } => d += 1,
            IrIndex::NewAxis | IrIndex::Ellipsis | IrIndex::Mask { .. } => return false,
        }
    }
    false
}

impl Walk<'_> {
    /// The shape of a `Loop` node (its placeholder) after specialising what must be.
    pub(super) fn loop_node(&mut self, node: &Node, l: &LoopSpec, args: &[SymShape]) -> SymShape {
        for (k, a) in args.iter().enumerate() {
            let input = l.body.inputs.get(k + 1).copied();
            for (d, e) in a.iter().enumerate() {
                let keep = l.cond.is_none()
                    && k >= l.carried
                    && input.is_some_and(|i| only_indexed_at(&l.body, i, d));
                if !keep {
                    self.solver.specialize(e);
                }
            }
        }
        fixed_shape(&node.shape)
    }

    /// The shape of result `index` of a control node (read by `Out`).
    pub(super) fn out_node(&mut self, node: &Node, index: usize, args: &[SymShape]) -> SymShape {
        let ctl = node.args.first().and_then(|a| self.g.node(*a));
        let Some(IrOp::Loop(l)) = ctl.map(|c| &c.op) else {
            return self.opaque(node, args);
        };
        let trip = match l.trip {
            TripCount::Dim { arg, dim } if index >= l.carried && l.cond.is_none() => ctl
                .and_then(|c| c.args.get(arg))
                .and_then(|a| self.shapes.get(a.index()))
                .and_then(|s| s.get(dim))
                .cloned(),
            _ => None,
        };
        let mut shape = fixed_shape(&node.shape);
        match (trip, shape.first_mut()) {
            (Some(t), Some(first)) => *first = t,
            _ => return self.opaque(node, args),
        }
        shape
    }
}
