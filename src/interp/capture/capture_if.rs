//! Capture of `if`/`elif`/`else` on a tensor condition as an `IrOp::If`: the taken side
//! runs for real while recording into a region; the other side runs speculatively on a
//! copy of the locals (prints discarded, its errors and graph breaks make the whole
//! function run eagerly); then every local either side changed becomes a result of the
//! branch (tensors of equal dtype and shape on both sides; Python values must be equal),
//! and so does the returned value when both sides `return`.

use super::capture_merge::{merged_outputs, Merge};
use crate::compile::capture::trace::{self, BreakReason, RegionScope};
use crate::compile::ir::control::Branch;
use crate::compile::ir::{Graph, InputKind, IrOp, Node, NodeId};
use crate::interp::builtins::tensor_ops::tensor_truthy;
use crate::interp::tree::St;
use crate::interp::value::Value;
use crate::interp::{at, Flow, Interp, R};
use crate::source::Span;
use crate::tensor::dtype::DType;
use crate::tensor::Tensor;

/// One side of a captured branch after it ran.
pub struct Side<'a> {
    pub region: RegionScope,
    pub locals: Vec<Value>,
    pub flow: Flow,
    /// The returned value when `flow` is `Return` (taken from `Interp::ret`).
    pub ret: Value,
    pub block: &'a [St],
}

impl Interp {
    /// The current frame's local slots (None outside a function or with cells, whose
    /// stores the slot comparison cannot see).
    pub(crate) fn frame_slots(&self) -> Option<std::ops::Range<usize>> {
        let f = self.cur_func.as_ref()?;
        if f.proto.has_cells {
            return None;
        }
        let end = self.fp.checked_add(f.proto.n_slots as usize)?;
        (end <= self.stack.len()).then_some(self.fp..end)
    }

    /// Runs `if` whose condition is tensor `cond` while capturing (see the module doc).
    pub(crate) fn exec_if_traced(
        &mut self,
        cond: &Tensor,
        cspan: Span,
        body: &[St],
        orelse: &[St],
        span: Span,
    ) -> R<Flow> {
        let is_then = trace::paused(|| tensor_truthy(cond)).map_err(|x| at(x, cspan))?;
        let (taken, other) = if is_then {
            (body, orelse)
        } else {
            (orelse, body)
        };
        let cnode = trace::with_tracer(|t| t.node_of(cond)).flatten();
        let (Some(frame), Some(cnode)) = (self.frame_slots(), cnode) else {
            trace::graph_break(BreakReason::ControlFlow(
                "a tensor `if` outside a plain frame",
            ));
            return self.exec_block(taken);
        };
        let snap: Vec<Value> = self.stack[frame.clone()].to_vec();
        trace::enter_region();
        let res = self.exec_block(taken);
        let region = trace::exit_region();
        let flow = res?;
        let Some(region) = region.filter(|_| trace::active()) else {
            return Ok(flow);
        };
        if matches!(flow, Flow::Break | Flow::Continue) {
            trace::graph_break(BreakReason::ControlFlow(
                "break or continue under a tensor `if`",
            ));
            return Ok(flow);
        }
        let after: Vec<Value> = self.stack[frame.clone()].to_vec();
        // The untaken side may `return` too: keep the taken side's value apart.
        let ret = std::mem::take(&mut self.ret);
        let Some(spec) = self.speculate(other, &snap, frame.clone()) else {
            self.stack[frame].clone_from_slice(&after);
            self.ret = ret;
            return Ok(flow);
        };
        self.stack[frame.clone()].clone_from_slice(&after);
        let taken_side = Side {
            region,
            locals: after,
            flow,
            ret,
            block: taken,
        };
        let sides = if is_then {
            [taken_side, spec]
        } else {
            [spec, taken_side]
        };
        self.merge_branch(cnode, sides, is_then, &snap, frame, span)
    }

    /// Runs `block` speculatively from the locals `snap`: prints discarded, recorded
    /// into a region. None (after a graph break) when it failed or broke.
    fn speculate<'a>(
        &mut self,
        block: &'a [St],
        snap: &[Value],
        frame: std::ops::Range<usize>,
    ) -> Option<Side<'a>> {
        self.stack[frame.clone()].clone_from_slice(snap);
        let saved = std::mem::replace(&mut self.output, Box::new(|_| {}));
        let rngs = (crate::tensor::random::save_rng(), self.rng.clone());
        trace::set_speculating(true);
        trace::enter_region();
        let res = self.exec_block(block);
        let region = trace::exit_region();
        trace::set_speculating(false);
        self.output = saved;
        crate::tensor::random::restore_rng(rngs.0);
        self.rng = rngs.1;
        let locals = self.stack[frame].to_vec();
        let ret = std::mem::take(&mut self.ret);
        let flow = match res {
            Ok(f) => f,
            Err(e) => {
                trace::graph_break(BreakReason::UntakenBranch(e.error.message.clone()));
                return None;
            }
        };
        if matches!(flow, Flow::Break | Flow::Continue) {
            trace::graph_break(BreakReason::ControlFlow(
                "break or continue under a tensor `if`",
            ));
            return None;
        }
        let region = region.filter(|_| trace::active())?;
        Some(Side {
            region,
            locals,
            flow,
            ret,
            block,
        })
    }

    /// Builds the `If` node from both sides (`[then, else]`) and binds the taken side's
    /// changed tensors to its results.
    fn merge_branch(
        &mut self,
        cnode: NodeId,
        sides: [Side; 2],
        is_then: bool,
        snap: &[Value],
        frame: std::ops::Range<usize>,
        span: Span,
    ) -> R<Flow> {
        let [mut then_s, mut else_s] = sides;
        // Every way out returns the taken side's flow (and value, for `return`).
        self.ret = if is_then {
            then_s.ret.clone()
        } else {
            else_s.ret.clone()
        };
        let m: Merge = match merged_outputs(self, &mut then_s, &mut else_s, snap, span)? {
            Some(m) => m,
            None => {
                trace::graph_break(BreakReason::ControlFlow(
                    "a `return` in only one side of a tensor `if`",
                ));
                let taken = if is_then { then_s } else { else_s };
                return Ok(taken.flow);
            }
        };
        let effect = crate::compile::ir::control::has_effect(&then_s.region.graph)
            || crate::compile::ir::control::has_effect(&else_s.region.graph);
        let taken = if is_then { then_s.flow } else { else_s.flow };
        if m.then_outs.is_empty() && !effect {
            return Ok(taken);
        }
        let built = trace::with_tracer(|t| {
            let union = union_captures(&then_s.region.captures, &else_s.region.captures);
            let types: Vec<(DType, crate::tensor::shape::Dims)> = union
                .iter()
                .map(|u| {
                    let n = t.current().node(*u);
                    n.map_or((DType::Bool, Default::default()), |n| {
                        (n.dtype, n.shape.clone())
                    })
                })
                .collect();
            let pos =
                |_: usize, c: Option<NodeId>| c.and_then(|c| union.iter().position(|u| *u == c));
            let (mut then_g, tmap) = rebind(then_s.region, &types, pos);
            let (mut else_g, emap) = rebind(else_s.region, &types, pos);
            then_g.outputs = m.then_outs.iter().map(|o| remap(&tmap, *o)).collect();
            else_g.outputs = m.else_outs.iter().map(|o| remap(&emap, *o)).collect();
            let outs: Vec<(DType, crate::tensor::shape::Dims)> = then_g
                .outputs
                .iter()
                .filter_map(|o| then_g.node(*o).map(|n| (n.dtype, n.shape.clone())))
                .collect();
            let mut args = vec![cnode];
            args.extend(union);
            let op = IrOp::If(Box::new(Branch { then_g, else_g }));
            t.push_control(op, args, outs, span)
        });
        let Some(out_nodes) = built else {
            return Ok(taken);
        };
        let vals = if is_then { &m.then_vals } else { &m.else_vals };
        self.bind_results(vals, &out_nodes, frame, taken)
    }

    /// Replaces each changed value by a fresh alias bound to its `Out` node (an alias,
    /// so a tensor also reachable under another name keeps its own node).
    fn bind_results(
        &mut self,
        vals: &[Tensor],
        outs: &[NodeId],
        frame: std::ops::Range<usize>,
        flow: Flow,
    ) -> R<Flow> {
        let mut aliases: Vec<(usize, Tensor)> = Vec::with_capacity(outs.len());
        for (real, out) in vals.iter().zip(outs) {
            if aliases.iter().any(|(id, _)| *id == real.id()) {
                trace::graph_break(BreakReason::ControlFlow("one tensor in two branch results"));
                return Ok(flow);
            }
            if real.requires_grad() {
                trace::graph_break(BreakReason::Autograd(
                    "a tensor `if` on values that require grad",
                ));
                return Ok(flow);
            }
            let alias = real.detach();
            trace::with_tracer(|t| t.bind(&alias, *out));
            aliases.push((real.id(), alias));
        }
        let swap = |v: &Value| super::capture_merge::replace_tensors(v, &aliases);
        for i in frame {
            let v = swap(&self.stack[i]);
            self.stack[i] = v;
        }
        if flow == Flow::Return {
            self.ret = swap(&self.ret);
        }
        Ok(flow)
    }
}

/// The outer nodes both regions read, each once, in first-use order.
fn union_captures(a: &[NodeId], b: &[NodeId]) -> Vec<NodeId> {
    let mut u: Vec<NodeId> = Vec::with_capacity(a.len() + b.len());
    for id in a.iter().chain(b) {
        if !u.contains(id) {
            u.push(*id);
        }
    }
    u
}

/// A region's graph with new inputs of types `types`; old input `slot` becomes new
/// input `position(slot)` (ids in the old numbering map through the returned table).
pub(super) fn rebind(
    r: RegionScope,
    types: &[(DType, crate::tensor::shape::Dims)],
    position: impl Fn(usize, Option<NodeId>) -> Option<usize>,
) -> (Graph, Vec<NodeId>) {
    let mut g = Graph::new();
    for (dtype, shape) in types {
        g.add_input(InputKind::Bound, *dtype, shape.clone(), None);
    }
    let mut map: Vec<NodeId> = Vec::with_capacity(r.graph.len());
    for node in r.graph.nodes {
        if let IrOp::Input { slot, .. } = node.op {
            let k = position(slot, r.captures.get(slot).copied());
            map.push(
                k.and_then(|k| g.inputs.get(k).copied())
                    .unwrap_or(NodeId(0)),
            );
            continue;
        }
        let args = node
            .args
            .iter()
            .map(|a| map.get(a.index()).copied().unwrap_or(NodeId(0)))
            .collect();
        map.push(g.push(Node { args, ..node }));
    }
    (g, map)
}

/// The new id of old region node `old` through `rebind`'s table.
pub(super) fn remap(map: &[NodeId], old: NodeId) -> NodeId {
    map.get(old.index()).copied().unwrap_or(NodeId(0))
}
