//! Capture of `if`/`elif`/`else` on a tensor condition as an `IrOp::If`: the taken side
//! runs for real while recording into a region; the other side runs speculatively on a
//! copy of the locals (prints discarded, its errors and graph breaks make the whole
//! function run eagerly); then every local either side changed becomes a result of the
//! branch (tensors of equal dtype and shape on both sides; Python values must be equal),
//! and so does the returned value when both sides `return`.

use super::capture_merge::{merged_outputs, Merge};
use crate::compile::autodiff::if_grad::{self, IfGrad};
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
use std::rc::Rc;

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
        self.merge_branch((cnode, cond), sides, is_then, &snap, frame, span)
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

    /// Builds the `If` node on condition `cond` (its node and tensor) from both sides
    /// (`[then, else]`) and binds the taken side's changed tensors to its results (those
    /// that require grad get the branch's backward node, if_grad.rs).
    fn merge_branch(
        &mut self,
        (cnode, cond): (NodeId, &Tensor),
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
        let Some(res) = grad_results(&m) else {
            return Ok(taken);
        };
        let built = trace::with_tracer(|t| {
            let union = union_captures(&then_s.region.captures, &else_s.region.captures);
            let caps =
                (!res.is_empty()).then(|| cap_tensors(t, &union, [&then_s.region, &else_s.region]));
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
            let fwd = Branch { then_g, else_g };
            let grad_in = caps.map(|c| (fwd.clone(), c));
            let op = IrOp::If(Box::new(fwd));
            (t.push_control(op, args, outs, span), grad_in)
        });
        let Some((out_nodes, grad_in)) = built else {
            return Ok(taken);
        };
        let vals = if is_then { &m.then_vals } else { &m.else_vals };
        let grad = match grad_in {
            None => None,
            Some((fwd, Some(caps))) => {
                let outs: Vec<Tensor> = res.iter().filter_map(|&j| vals.get(j).cloned()).collect();
                match if_grad::prepare(&fwd, cond, &caps, &res, &outs, is_then, span) {
                    Ok(g) => Some((g, caps)),
                    Err(b) => {
                        trace::graph_break(b.reason);
                        return Ok(taken);
                    }
                }
            }
            Some((_, None)) => {
                trace::graph_break(BreakReason::UntracedTensor);
                return Ok(taken);
            }
        };
        let results = Results {
            vals,
            outs: &out_nodes,
            grad,
            res: &res,
        };
        self.bind_results(results, frame, taken)
    }

    /// Replaces each changed value by a fresh alias bound to its `Out` node (an alias,
    /// so a tensor also reachable under another name keeps its own node); the aliases
    /// of the results that require grad get the branch's backward node.
    fn bind_results(&mut self, r: Results, frame: std::ops::Range<usize>, flow: Flow) -> R<Flow> {
        let mut aliases: Vec<(usize, Tensor)> = Vec::with_capacity(r.outs.len());
        for (real, out) in r.vals.iter().zip(r.outs) {
            if aliases.iter().any(|(id, _)| *id == real.id()) {
                trace::graph_break(BreakReason::ControlFlow("one tensor in two branch results"));
                return Ok(flow);
            }
            let alias = real.detach();
            trace::with_tracer(|t| t.bind(&alias, *out));
            aliases.push((real.id(), alias));
        }
        if let Some((g, caps)) = &r.grad {
            let diff: Vec<Tensor> = r
                .res
                .iter()
                .filter_map(|&j| aliases.get(j).map(|(_, a)| a.clone()))
                .collect();
            if_grad::attach(g, caps, &diff);
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

/// A branch's results for `bind_results`: the taken side's values, their `Out` nodes,
/// the backward node with the captured inputs when some need grad, and which (`res`).
struct Results<'a> {
    vals: &'a [Tensor],
    outs: &'a [NodeId],
    grad: Option<(Rc<IfGrad>, Vec<Tensor>)>,
    res: &'a [usize],
}

/// The results that require grad (on both sides), None after a graph break: the sides
/// disagree, or the branch is inside a loop or another branch (whose backward would
/// have to hold it).
fn grad_results(m: &Merge) -> Option<Vec<usize>> {
    let pairs = m.then_vals.iter().zip(&m.else_vals);
    let res: Vec<usize> = pairs
        .clone()
        .enumerate()
        .filter(|(_, (a, b))| a.requires_grad() || b.requires_grad())
        .map(|(j, _)| j)
        .collect();
    if res.is_empty() {
        return Some(res);
    }
    if pairs
        .clone()
        .any(|(a, b)| a.requires_grad() != b.requires_grad())
    {
        trace::graph_break(BreakReason::Autograd(
            "a tensor `if` whose sides differ in which results require grad",
        ));
        return None;
    }
    if trace::with_tracer(|t| t.regions.is_empty()) != Some(true) {
        trace::graph_break(BreakReason::Autograd(
            "a tensor `if` on values that require grad inside a loop or another `if`",
        ));
        return None;
    }
    Some(res)
}

/// The tensors (with their histories) of the outer nodes `union` the regions `sides`
/// read: the ones a region bound, else the function's graph values.
fn cap_tensors(
    t: &trace::Tracer,
    union: &[NodeId],
    sides: [&RegionScope; 2],
) -> Option<Vec<Tensor>> {
    union
        .iter()
        .map(|u| {
            sides
                .iter()
                .find_map(|r| {
                    let slot = r.captures.iter().position(|c| c == u)?;
                    r.bound_tensor(slot)
                })
                .or_else(|| t.tensor_of(*u))
        })
        .collect()
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
