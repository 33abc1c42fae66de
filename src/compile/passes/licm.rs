//! Loop-invariant code motion: a loop body's pure node whose args are all invariant
//! (the loop's invariant args, or nodes moved themselves) computes the same value at
//! every iteration, so it runs once before the loop and the body reads it as a new
//! invariant. A reverse loop's `dpre @ permute(W)` (eager's backward of `h @ W`) then
//! multiplies by one transposed copy of `W` made before the loop: a moved permute is
//! made contiguous there, so the body's product reads a row-major matrix.
//!
//! Only shape-preserving-by-value ops move (elementwise, casts, permutes, products):
//! nothing with an effect, a region, a runtime index or a symbolic target shape. Nodes
//! before the body's last input and body outputs stay (the new inputs follow the old
//! ones; an output stays a body value).

use super::dce::dce;
use super::rebuild::{rewrite_loops, Rebuild};
use crate::compile::internal;
use crate::compile::ir::control::LoopSpec;
use crate::compile::ir::{Graph, InputKind, IrOp, Node, NodeId};
use crate::error::Result;

/// Moves the invariant nodes of every loop of `g` (not of loops nested in regions: their
/// own optimization runs this pass on them).
pub fn licm(g: Graph) -> Result<Graph> {
    rewrite_loops(g, |rb, n, l| {
        let moved = invariant_nodes(&l);
        if moved.iter().any(|&m| m) {
            rewrite(rb, n, &l, &moved)
        } else {
            Ok(rb.push(n))
        }
    })
}

/// Whether `op` may run once before the loop instead of at every iteration.
fn movable(op: &IrOp) -> bool {
    matches!(
        op,
        IrOp::Unary(_)
            | IrOp::Binary(_)
            | IrOp::BinaryScalar { .. }
            | IrOp::Clamp { .. }
            | IrOp::Cast(_)
            | IrOp::Contiguous
            | IrOp::Permute { .. }
            | IrOp::Matmul
    )
}

/// Per body node of loop `l`, whether it moves out of the loop.
fn invariant_nodes(l: &LoopSpec) -> Vec<bool> {
    let body = &l.body;
    let last_input = body.inputs.iter().map(|id| id.index()).max();
    let mut inv = vec![false; body.nodes.len()];
    let mut moved = vec![false; body.nodes.len()];
    for (i, n) in body.nodes.iter().enumerate() {
        let arg_inv = |a: &NodeId| inv.get(a.index()).copied().unwrap_or(false);
        let (is_inv, moves) = match n.op {
            // Slot 0 is the index, then the carried values, then the invariants.
            IrOp::Input { slot, .. } => (slot > l.carried, false),
            _ => {
                let ok = movable(&n.op)
                    && !n.args.is_empty()
                    && n.args.iter().all(arg_inv)
                    && last_input.is_some_and(|k| i > k)
                    && !body.outputs.iter().any(|o| o.index() == i);
                (ok, ok)
            }
        };
        inv[i] = is_inv;
        moved[i] = moves;
    }
    moved
}

/// Pushes the moved nodes of loop `l` (node `n`) before it, the values the body still
/// reads as new loop args, then the loop with a body reading them as inputs.
fn rewrite(rb: &mut Rebuild, mut n: Node, l: &LoopSpec, moved: &[bool]) -> Result<NodeId> {
    let body = &l.body;
    let used_inside = read_by_rest(body, moved);
    // Outer ids of the moved nodes (and of the body's inputs, for their args).
    let mut outer: Vec<Option<NodeId>> = vec![None; body.nodes.len()];
    let mut new_inputs: Vec<(usize, Node)> = Vec::new();
    for (i, node) in body.nodes.iter().enumerate() {
        match node.op {
            IrOp::Input { slot, .. } if slot > 0 => {
                outer[i] = n.args.get(slot - 1).copied();
            }
            _ if moved.get(i) == Some(&true) => {
                let args = node
                    .args
                    .iter()
                    .map(|a| outer.get(a.index()).copied().flatten())
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| internal("a moved node's arg is not invariant"))?;
                let mut id = rb.push(Node {
                    args,
                    ..node.clone()
                });
                if used_inside.get(i) == Some(&true) {
                    if matches!(node.op, IrOp::Permute { .. }) {
                        id = rb.push(Node {
                            op: IrOp::Contiguous,
                            args: vec![id],
                            ..node.clone()
                        });
                    }
                    n.args.push(id);
                    new_inputs.push((i, node.clone()));
                }
                outer[i] = Some(id);
            }
            _ => {}
        }
    }
    let mut spec = l.clone();
    spec.body = dce(reroute(body, &new_inputs)?)?;
    n.op = IrOp::Loop(Box::new(spec));
    Ok(rb.push(n))
}

/// Per body node, whether a node that stays in the body (or a body output) reads it.
fn read_by_rest(body: &Graph, moved: &[bool]) -> Vec<bool> {
    let mut used = vec![false; body.nodes.len()];
    for (i, node) in body.nodes.iter().enumerate() {
        if moved.get(i) == Some(&true) {
            continue;
        }
        for a in &node.args {
            if let Some(u) = used.get_mut(a.index()) {
                *u = true;
            }
        }
    }
    used
}

/// `body` where each node of `new_inputs` (body node, its value) is read from a new
/// input appended after the existing ones.
fn reroute(body: &Graph, new_inputs: &[(usize, Node)]) -> Result<Graph> {
    let last_input = body
        .inputs
        .iter()
        .map(|id| id.index())
        .max()
        .ok_or_else(|| internal("a loop body without inputs"))?;
    let mut rb = Rebuild::new(body);
    let mut slot = body.inputs.len();
    let mut added: Vec<NodeId> = Vec::with_capacity(new_inputs.len());
    for (i, node) in body.nodes.iter().enumerate() {
        let id = match new_inputs.iter().position(|(k, _)| *k == i) {
            Some(j) => *added
                .get(j)
                .ok_or_else(|| internal("a moved value's input is missing"))?,
            None => rb.push(rb.remapped(node)?),
        };
        rb.map_to(id);
        if i == last_input {
            for (_, v) in new_inputs {
                added.push(rb.push(Node {
                    op: IrOp::Input {
                        slot,
                        kind: InputKind::Bound,
                    },
                    args: Vec::new(),
                    dtype: v.dtype,
                    shape: v.shape.clone(),
                    span: None,
                }));
                slot += 1;
            }
        }
    }
    rb.finish(body)
}
