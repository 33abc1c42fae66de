//! The capture hooks of effects: in-place tensor writes and `.grad` assignments made
//! while a tracer records become graph nodes plus effects replayed after each run
//! (see effects.rs); views, untraced values and writes inside control-flow regions
//! break the capture.

use crate::compile::capture::effects::{same_target, Recorded, Target};
use crate::compile::capture::trace::{active, graph_break, in_region, with, Tracer};
use crate::compile::ir::{InputKind, IrOp, Node};
use crate::ir::breaks::BreakReason;
use crate::tensor::Tensor;

/// Where an effect on `t` lands at replay: its argument slot, or the tensor itself.
fn target_of(tr: &Tracer, t: &Tensor) -> Target {
    let slot = tr
        .known
        .get(&t.id())
        .and_then(|(_, id)| match tr.graph.node(*id) {
            Some(Node {
                op:
                    IrOp::Input {
                        slot,
                        kind: InputKind::Arg(_),
                    },
                ..
            }) => Some(*slot),
            _ => None,
        });
    slot.map_or_else(|| Target::Handle(t.clone()), Target::Slot)
}

/// An in-place op `target = op(args)` (args[0] is the target's old value) ran in a
/// capture: the target now reads as the new node, and a target the function did not
/// create is written back after each run. Views and untraced values break the capture.
pub(in crate::compile) fn record_inplace(
    op: IrOp,
    args: &[&Tensor],
    target: &Tensor,
    what: &'static str,
) {
    if !active() {
        return;
    }
    // Effects inside a control-flow region would need conditional replay: eager.
    if !target.is_whole() || in_region() {
        return graph_break(BreakReason::InPlace(what));
    }
    let ok = with(|t| {
        if t.depth != 0 {
            return true;
        }
        let Some(old) = t.node_of(target) else {
            return false;
        };
        let Some(ids) = t.nodes_of(args) else {
            return false;
        };
        let dest = target_of(t, target);
        let external = matches!(t.graph.node(old).map(|n| &n.op), Some(IrOp::Input { .. }))
            || t.effects.iter().any(|e| match e {
                Recorded::Write { target, .. } => same_target(target, &dest),
                Recorded::SetGrad { .. } => false,
            });
        let node = Node {
            op,
            args: ids,
            dtype: target.dtype(),
            shape: target.shape().into(),
            span: t.span,
        };
        let id = t.graph.push(node);
        // Other handles on the same storage (views, saved aliases) would read stale
        // values from the graph: forget them, so a later use breaks the capture.
        // (A freed tensor's entry stays: an alias of it may still read it.)
        t.known.retain(|_, (k, _)| {
            k.upgrade()
                .is_none_or(|k| k.same(target) || !k.shares_storage(target))
        });
        t.aliases
            .retain(|_, (a, _)| a.upgrade().is_some_and(|a| !a.shares_storage(target)));
        t.known.insert(target.id(), (target.downgrade(), id));
        if external {
            t.effects.push(Recorded::Write {
                target: dest,
                node: id,
            });
        }
        true
    });
    if ok == Some(false) {
        graph_break(BreakReason::UntracedTensor);
    }
}

/// `t.grad = g` (or cleared) during a capture: replayed after each run.
pub(in crate::compile) fn note_set_grad(target: &Tensor, g: Option<&Tensor>) {
    if !active() {
        return;
    }
    if in_region() {
        return graph_break(BreakReason::InPlace("grad assignment"));
    }
    let ok = with(|t| {
        let node = match g {
            Some(g) => match t.node_of(g) {
                Some(id) => Some(id),
                None => return false,
            },
            None => None,
        };
        let dest = target_of(t, target);
        t.effects.push(Recorded::SetGrad { target: dest, node });
        true
    });
    if ok == Some(false) {
        graph_break(BreakReason::UntracedTensor);
    }
}

/// `leaf.grad` (now `g`) was read. A gradient the capture set itself is known already;
/// one from outside the call makes the version depend on it: a guard on its state (None,
/// or its dtype, layout and shape) and, when a tensor, an external input read from
/// `leaf.grad` at every call, so accumulating into it is recorded as an op.
pub(in crate::compile) fn note_grad_read(leaf: &Tensor, g: Option<&Tensor>) {
    if !active() || in_region() {
        return;
    }
    with(|t| {
        let dest = target_of(t, leaf);
        let set_here = t.effects.iter().any(|e| match e {
            Recorded::SetGrad { target, .. } => same_target(target, &dest),
            Recorded::Write { .. } => false,
        });
        if set_here || g.is_some_and(|g| t.known.contains_key(&g.id())) {
            return;
        }
        t.guard_grad(leaf, &dest);
        if let Some(g) = g {
            let kind = InputKind::External {
                name: "grad".into(),
            };
            let id = t.graph.add_input(kind, g.dtype(), g.shape().into(), t.span);
            t.grad_externals.push((t.externals.len(), dest));
            t.externals.push(g.clone());
            t.known.insert(g.id(), (g.downgrade(), id));
        }
    });
}
