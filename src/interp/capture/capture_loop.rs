//! Capture of `while` on a tensor condition as an `IrOp::Loop`: the first test of the
//! condition and the first iteration are recorded into regions, on fresh aliases of the
//! tensor locals (so the body's reads of a local are told apart from reads of the same
//! tensor under another name); the locals the body rebinds are the loop-carried values
//! (same dtype and shape required); the remaining iterations run eagerly, unrecorded,
//! and the final values are bound to the loop's results.

use super::capture_if::{rebind, remap};
use super::capture_merge::same;
use crate::compile::capture::trace::{self, BreakReason, RegionScope};
use crate::compile::ir::control::{LoopSpec, TripCount};
use crate::compile::ir::{IrOp, NodeId};
use crate::error::ErrorKind;
use crate::interp::builtins::tensor_ops::tensor_truthy;
use crate::interp::tree::{Ex, St};
use crate::interp::value::Value;
use crate::interp::{at, err, Flow, Interp, R};
use crate::source::Span;
use crate::tensor::dtype::DType;
use crate::tensor::shape::Dims;
use crate::tensor::Tensor;
use std::ops::Range;

/// A tensor local replaced by an alias for the recording: slot, original, alias, and
/// the outer node of the original.
pub(super) struct Alias {
    pub slot: usize,
    pub orig: Tensor,
    alias: Tensor,
    pub outer: NodeId,
}

/// How a captured loop starts: a `while` test region, or a `for` header.
pub(super) enum LoopHead {
    While {
        cond_r: RegionScope,
        cnode: NodeId,
    },
    /// The index is the body region's input `index_slot`.
    For {
        index_slot: usize,
        trip: ForTrip,
        start: i64,
        step: i64,
    },
}

/// A `for` loop's trip count: a constant, or `len(range(start, size, step))` of dim
/// `dim` of the outer node `node`.
pub(super) enum ForTrip {
    Const(usize),
    Dim { node: NodeId, dim: usize },
}

/// Binds each alias to a new input of the current region (inputs `0..aliases.len()`).
pub(super) fn bind_aliases(aliases: &[Alias]) {
    trace::with_tracer(|t| {
        if let Some(r) = t.regions.last_mut() {
            for a in aliases {
                r.bind_input(&a.alias, a.outer);
            }
        }
    });
}

fn type_of(t: &Tensor) -> (DType, Dims) {
    (t.dtype(), t.shape().into())
}

impl Interp {
    /// A `while` loop during a capture (see the module doc).
    pub(crate) fn exec_while_traced(
        &mut self,
        c: &Ex,
        body: &[St],
        orelse: &[St],
        span: Span,
    ) -> R<Flow> {
        let Some(frame) = self.frame_slots() else {
            return self.while_plain(c, body, orelse, None);
        };
        let aliases = self.alias_locals(frame.clone());
        trace::enter_region();
        bind_aliases(&aliases);
        let cv = self.eval(c);
        let cnode = match &cv {
            Ok(Value::Tensor(t)) => trace::with_tracer(|tr| tr.node_of(t)).flatten(),
            _ => None,
        };
        let cond_r = trace::exit_region();
        let cv = cv?;
        let Value::Tensor(ct) = &cv else {
            self.unalias(&aliases);
            if cond_r.is_some_and(|r| r.graph.len() > aliases.len()) {
                trace::graph_break(BreakReason::ControlFlow(
                    "a Python `while` test computing tensors",
                ));
            }
            let go = self.truthy(&cv).map_err(|x| at(x, c.span))?;
            return self.while_plain(c, body, orelse, Some(go));
        };
        let go = trace::paused(|| tensor_truthy(ct)).map_err(|x| at(x, c.span))?;
        let (Some(cond_r), Some(cnode), true) = (cond_r, cnode, go && trace::active()) else {
            self.unalias(&aliases);
            if go {
                trace::graph_break(BreakReason::ControlFlow("a tensor `while` test"));
            } else {
                trace::graph_break(BreakReason::ControlFlow(
                    "a tensor `while` loop that runs no iteration at capture",
                ));
            }
            return self.while_plain(c, body, orelse, Some(go));
        };
        let snap: Vec<Value> = self.stack[frame.clone()].to_vec();
        trace::enter_region();
        bind_aliases(&aliases);
        let res = self.exec_block(body);
        let body_r = trace::exit_region();
        let flow = res?;
        let body_r = match (body_r, flow) {
            (Some(r), Flow::Normal | Flow::Continue) if trace::active() => r,
            (_, flow) => {
                if trace::active() {
                    trace::graph_break(BreakReason::ControlFlow(
                        "break or return in a tensor `while` loop",
                    ));
                }
                return self.after_first(c, body, orelse, flow);
            }
        };
        let carried = self.carried_slots(&aliases, &snap, frame.clone(), body, span, "while")?;
        let Some(carried) = carried else {
            return self.after_first(c, body, orelse, Flow::Normal);
        };
        if let Some(f) = trace::paused(|| self.while_rest(c, body))? {
            trace::graph_break(BreakReason::ControlFlow(
                "break or return in a tensor `while` loop",
            ));
            return Ok(f);
        }
        let head = LoopHead::While { cond_r, cnode };
        self.build_loop(&aliases, &carried, head, body_r, frame, span);
        self.exec_block(orelse)
    }

    /// Replaces each tensor local the graph knows by an alias (None: grad is needed).
    pub(super) fn alias_locals(&mut self, frame: Range<usize>) -> Vec<Alias> {
        let mut out = Vec::new();
        for i in frame {
            let Value::Tensor(x) = &self.stack[i] else {
                continue;
            };
            if x.requires_grad() && crate::autograd::is_grad_enabled() {
                continue;
            }
            let Some(outer) = trace::with_tracer(|t| t.node_of(x)).flatten() else {
                continue;
            };
            let alias = x.detach();
            out.push(Alias {
                slot: i,
                orig: x.clone(),
                alias: alias.clone(),
                outer,
            });
            self.stack[i] = Value::Tensor(alias);
        }
        out
    }

    /// True when a carried local's final value requires grad (binding it to the loop's
    /// result would cut its autograd history).
    pub(super) fn carried_need_grad(&self, aliases: &[Alias], carried: &[(usize, Tensor)]) -> bool {
        carried.iter().any(|(k, _)| {
            aliases.get(*k).is_some_and(
                |a| matches!(self.stack.get(a.slot), Some(Value::Tensor(z)) if z.requires_grad()),
            )
        })
    }

    /// Puts the originals back where a local still holds its alias.
    pub(super) fn unalias(&mut self, aliases: &[Alias]) {
        for a in aliases {
            if let Some(Value::Tensor(t)) = self.stack.get(a.slot) {
                if t.id() == a.alias.id() {
                    self.stack[a.slot] = Value::Tensor(a.orig.clone());
                }
            }
        }
    }

    /// The aliases the first iteration rebound (the carried values), with their new
    /// tensors; None (after a break) when a Python local changed; an error when a
    /// carried tensor changed its dtype or shape.
    pub(super) fn carried_slots(
        &mut self,
        aliases: &[Alias],
        snap: &[Value],
        frame: Range<usize>,
        body: &[St],
        span: Span,
        kw: &str,
    ) -> R<Option<Vec<(usize, Tensor)>>> {
        let base = frame.start;
        let mut carried = Vec::new();
        for (j, i) in frame.enumerate() {
            let now = &self.stack[i];
            let before = &snap[j];
            match aliases.iter().position(|a| a.slot == i) {
                Some(k) => match now {
                    Value::Tensor(y) if y.id() == aliases[k].alias.id() => {}
                    Value::Tensor(y) if type_of(y) == type_of(&aliases[k].alias) => {
                        carried.push((k, y.clone()));
                    }
                    _ => {
                        let what = super::capture_merge::slot_label(self, i - base, body);
                        let msg = format!(
                            "@compile: {what} is {} before a `{kw}` loop on a tensor but {} \
                             after its body (at {}); a loop-carried value must keep its dtype \
                             and shape",
                            super::capture_merge::describe(&Value::Tensor(
                                aliases[k].alias.clone()
                            )),
                            super::capture_merge::describe(now),
                            crate::compile::capture::log::where_text(
                                &self.sources,
                                super::capture_merge::assign_span(body, i - base).or(Some(span))
                            ),
                        );
                        return Err(at(err(ErrorKind::TypeError, msg), span));
                    }
                },
                None if same(before, now) || matches!(before, Value::Unbound) => {}
                None => {
                    trace::graph_break(BreakReason::ControlFlow(
                        "a Python value changes in a captured loop",
                    ));
                    return Ok(None);
                }
            }
        }
        Ok(Some(carried))
    }

    /// The loop goes on eagerly after its first iteration left with `flow`.
    fn after_first(&mut self, c: &Ex, body: &[St], orelse: &[St], flow: Flow) -> R<Flow> {
        match flow {
            Flow::Break => Ok(Flow::Normal),
            Flow::Return => Ok(Flow::Return),
            _ => self.while_plain(c, body, orelse, None),
        }
    }

    /// The remaining iterations; Some(flow) when the loop left by `break` or `return`.
    fn while_rest(&mut self, c: &Ex, body: &[St]) -> R<Option<Flow>> {
        loop {
            self.check_interrupt()?;
            if !self.cond(c)? {
                return Ok(None);
            }
            match self.exec_block(body)? {
                Flow::Break => return Ok(Some(Flow::Normal)),
                Flow::Return => return Ok(Some(Flow::Return)),
                Flow::Normal | Flow::Continue => {}
            }
        }
    }

    /// A `while` loop run as eager runs it; `first` is the already evaluated first test.
    pub(crate) fn while_plain(
        &mut self,
        c: &Ex,
        body: &[St],
        orelse: &[St],
        mut first: Option<bool>,
    ) -> R<Flow> {
        loop {
            self.check_interrupt()?;
            let go = match first.take() {
                Some(g) => g,
                None => self.cond(c)?,
            };
            if !go {
                return self.exec_block(orelse);
            }
            match self.exec_block(body)? {
                Flow::Break => return Ok(Flow::Normal),
                Flow::Return => return Ok(Flow::Return),
                Flow::Normal | Flow::Continue => {}
            }
        }
    }

    /// Appends the `Loop` node and its `Out`s; binds the final carried values to them
    /// and puts the other aliased locals' originals back.
    pub(super) fn build_loop(
        &mut self,
        aliases: &[Alias],
        carried: &[(usize, Tensor)],
        head: LoopHead,
        mut body_r: RegionScope,
        frame: Range<usize>,
        span: Span,
    ) {
        let body_outs: Option<Vec<NodeId>> = trace::with_tracer(|t| {
            t.regions.push(std::mem::take(&mut body_r));
            let ids = carried.iter().map(|(_, y)| t.node_of(y)).collect();
            if let Some(r) = t.regions.pop() {
                body_r = r;
            }
            ids
        })
        .flatten();
        let Some(body_outs) = body_outs else {
            trace::graph_break(BreakReason::UntracedTensor);
            return;
        };
        let need_grad = self.carried_need_grad(aliases, carried);
        let top = trace::with_tracer(|t| t.regions.is_empty()) == Some(true);
        let is_for = matches!(head, LoopHead::For { .. });
        // A `for` loop whose backward cannot be a loop is recaptured unrolled.
        let give_up = |reason| {
            if is_for {
                trace::with_tracer(|t| t.retry.push(span));
            }
            trace::graph_break(reason);
        };
        if need_grad && (!top || !is_for) {
            give_up(BreakReason::Autograd(
                "a captured loop on values that require grad",
            ));
            self.unalias(aliases);
            return;
        }
        let built = trace::with_tracer(|t| {
            let layout = Layout::new(aliases, carried, &head, &body_r);
            let types = layout.types(t, aliases, carried);
            let tensors =
                need_grad.then(|| arg_tensors(t, aliases, carried, &layout.args, &body_r));
            let pos = |slot, cap| layout.pos(slot, cap);
            let (cond, trip, start, step) = match head {
                LoopHead::While { cond_r, cnode } => {
                    let (mut cond_g, cmap) = rebind(cond_r, &types, pos);
                    cond_g.outputs = vec![remap(&cmap, cnode)];
                    (Some(cond_g), TripCount::Unbounded, 0, 1)
                }
                LoopHead::For {
                    trip, start, step, ..
                } => (None, layout.trip(&trip), start, step),
            };
            let (mut body_g, bmap) = rebind(body_r, &types, pos);
            body_g.outputs = body_outs.iter().map(|o| remap(&bmap, *o)).collect();
            let spec = LoopSpec {
                trip,
                carried: carried.len(),
                start,
                step,
                cond,
                body: body_g,
                scan: 0,
                reverse: false,
            };
            let results = types[1..=carried.len()].to_vec();
            (spec, layout.args, results, tensors)
        });
        self.unalias(aliases);
        let Some((spec, args, mut results, tensors)) = built else {
            return;
        };
        let (spec, grad) = match tensors {
            None => (spec, None),
            Some(Some(ts)) => match crate::compile::autodiff::loop_grad::prepare(spec, &ts, span) {
                Ok(p) => {
                    results.extend(p.stacks.iter().map(type_of));
                    (p.spec, Some((p.grad, p.stacks, ts)))
                }
                Err(b) => return give_up(b.reason),
            },
            Some(None) => return give_up(BreakReason::UntracedTensor),
        };
        let op = IrOp::Loop(Box::new(spec));
        let Some(outs) = trace::with_tracer(|t| t.push_control(op, args, results, span)) else {
            return;
        };
        if let Some((_, stacks, _)) = &grad {
            trace::with_tracer(|t| {
                for (s, out) in stacks.iter().zip(&outs[carried.len()..]) {
                    t.bind(s, *out);
                }
            });
        }
        let mut diff = vec![None; carried.len()];
        for (j, ((k, _), out)) in carried.iter().zip(outs).enumerate() {
            let slot = aliases[*k].slot;
            if !frame.contains(&slot) {
                continue;
            }
            if let Value::Tensor(z) = &self.stack[slot] {
                let fresh = z.detach();
                trace::with_tracer(|t| t.bind(&fresh, out));
                if z.requires_grad() {
                    diff[j] = Some(fresh.clone());
                }
                self.stack[slot] = Value::Tensor(fresh);
            }
        }
        if let Some((g, _, ts)) = grad {
            crate::compile::autodiff::loop_grad::attach(&g, &ts, &diff);
        }
    }
}

/// The capture-time tensors of a loop's args (`[carried_init..., invariant...]`): the
/// locals' originals, the tensors the body read, or values of the function's graph.
fn arg_tensors(
    t: &trace::Tracer,
    aliases: &[Alias],
    carried: &[(usize, Tensor)],
    args: &[NodeId],
    body_r: &RegionScope,
) -> Option<Vec<Tensor>> {
    let mut out: Vec<Tensor> = carried
        .iter()
        .map(|(k, _)| aliases.get(*k).map(|a| a.orig.clone()))
        .collect::<Option<_>>()?;
    for &node in args.get(carried.len()..)? {
        let x = aliases
            .iter()
            .find(|a| a.outer == node)
            .map(|a| a.orig.clone())
            .or_else(|| {
                let s = body_r.captures.iter().position(|c| *c == node)?;
                body_r.bound_tensor(s)
            })
            .or_else(|| t.tensor_of(node))?;
        out.push(x);
    }
    Some(out)
}

/// The args of a loop node (`[carried_init..., invariant...]`) and where each region
/// input goes among the regions' new inputs `[index, carried..., invariant...]`.
struct Layout {
    args: Vec<NodeId>,
    /// Region input slots `0..n_alias` are the aliases.
    n_alias: usize,
    /// Per alias: its position among the carried values, if carried.
    carried_at: Vec<Option<usize>>,
    index_slot: Option<usize>,
}

impl Layout {
    fn new(
        aliases: &[Alias],
        carried: &[(usize, Tensor)],
        head: &LoopHead,
        body_r: &RegionScope,
    ) -> Layout {
        let carried_at: Vec<Option<usize>> = (0..aliases.len())
            .map(|k| carried.iter().position(|(c, _)| *c == k))
            .collect();
        let mut args: Vec<NodeId> = carried.iter().map(|(k, _)| aliases[*k].outer).collect();
        let nc = args.len();
        let push = |args: &mut Vec<NodeId>, c: NodeId| {
            if !args[nc..].contains(&c) {
                args.push(c);
            }
        };
        for (k, a) in aliases.iter().enumerate() {
            if carried_at[k].is_none() {
                push(&mut args, a.outer);
            }
        }
        let (cond_caps, index_slot): (&[NodeId], Option<usize>) = match head {
            LoopHead::While { cond_r, .. } => (&cond_r.captures, None),
            LoopHead::For { index_slot, .. } => (&[], Some(*index_slot)),
        };
        let body_caps = body_r
            .captures
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != index_slot)
            .map(|(_, c)| c);
        for c in cond_caps.iter().chain(body_caps) {
            if !aliases.iter().any(|a| a.outer == *c) {
                push(&mut args, *c);
            }
        }
        if let LoopHead::For {
            trip: ForTrip::Dim { node, .. },
            ..
        } = head
        {
            if !args.contains(node) {
                args.push(*node);
            }
        }
        Layout {
            args,
            n_alias: aliases.len(),
            carried_at,
            index_slot,
        }
    }

    fn nc(&self) -> usize {
        self.carried_at.iter().filter(|c| c.is_some()).count()
    }

    /// The new position of old region input `slot` (bound to outer node `cap`).
    fn pos(&self, slot: usize, cap: Option<NodeId>) -> Option<usize> {
        if Some(slot) == self.index_slot {
            return Some(0);
        }
        if let Some(Some(p)) = self.carried_at.get(slot).filter(|_| slot < self.n_alias) {
            return Some(1 + p);
        }
        let nc = self.nc();
        let cap = cap?;
        Some(1 + nc + self.args[nc..].iter().position(|u| *u == cap)?)
    }

    /// The regions' input types: the index, then the args'.
    fn types(
        &self,
        t: &mut trace::Tracer,
        aliases: &[Alias],
        carried: &[(usize, Tensor)],
    ) -> Vec<(DType, Dims)> {
        let mut types = vec![(DType::I64, Dims::new())];
        types.extend(carried.iter().map(|(k, _)| type_of(&aliases[*k].alias)));
        for u in &self.args[carried.len()..] {
            let n = t.current().node(*u);
            types.push(n.map_or((DType::Bool, Dims::new()), |n| (n.dtype, n.shape.clone())));
        }
        types
    }

    fn trip(&self, trip: &ForTrip) -> TripCount {
        match trip {
            ForTrip::Const(n) => TripCount::Const(*n),
            ForTrip::Dim { node, dim } => TripCount::Dim {
                arg: self.args.iter().position(|a| a == node).unwrap_or(0),
                dim: *dim,
            },
        }
    }
}
