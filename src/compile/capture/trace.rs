//! Capture by recording an eager run: while a thread-local `Tracer` is active, every
//! tensor-library entry point reports the op it ran (`Scope::record`), the interpreter
//! reports where the tensors and Python values it loads come from (`note_load`) and
//! what it mutates, and anything that cannot be replayed from the graph becomes a
//! `GraphBreak`. When no tracer is active each hook is one thread-local `Cell` read.

use crate::compile::capture::effects::{Recorded, Target};
use crate::compile::ir::{Graph, InputKind, IrOp, NodeId};
use crate::compile::sym::SymHints;
use crate::ir::record::{set_active, Recorder};
use crate::source::Span;
use crate::tensor::hooks::WeakTensor;
use crate::tensor::Tensor;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

pub use crate::ir::breaks::{BreakReason, GraphBreak};
pub use crate::ir::record::{
    active, dim, graph_break, in_speculation, note_size_read, paused, scope, set_speculating,
};

/// A value read during capture that a cached version depends on, re-checked at every
/// call. The interpreter implements it for the Python values it loads
/// (interp/capture/guards.rs); `GradGuard` below is the state of a leaf's `.grad`.
pub trait LoadGuard: std::fmt::Debug {
    /// True while the place it read still holds the value read during capture.
    fn holds(&self) -> bool;
    /// `self.w`, `W`: how dumps and the compile log name the place.
    fn describe(&self) -> String;
    /// Runtime scalars (`symfloat`): the place's key when the guard is on a float (None:
    /// it is not, and cannot be checked by type only).
    fn float_key(&self) -> Option<GuardKey> {
        None
    }
    /// From now on checks only that the place holds a float (true), or its value (false).
    fn set_by_type(&mut self, _by_type: bool) {}
    /// True when it checks the type only (a runtime scalar's origin).
    fn by_type(&self) -> bool {
        false
    }
    /// The float the place holds now (a runtime scalar's value, read at each call).
    fn read_float(&self) -> Option<f64> {
        None
    }
}

/// The place a guard reads (an object's address, a hash of the name or the index):
/// a capture keeps one guard per place.
pub type GuardKey = (usize, u64);

/// The `.grad` of a leaf tensor, read as its state: None, or its (dtype, contiguous,
/// sizes) (the tensor itself is an external input read at every call).
#[derive(Debug)]
struct GradGuard {
    leaf: Tensor,
    state: Option<GradState>,
}

/// A `.grad`'s state as guards compare it: its dtype, contiguity and sizes.
pub type GradState = (
    crate::tensor::dtype::DType,
    bool,
    crate::tensor::shape::Dims,
);

/// The state of `leaf.grad` (None: no gradient).
pub fn grad_state(leaf: &Tensor) -> Option<GradState> {
    leaf.grad()
        .map(|g| (g.dtype(), g.is_contiguous(), g.shape().into()))
}

impl LoadGuard for GradGuard {
    fn holds(&self) -> bool {
        grad_state(&self.leaf) == self.state
    }

    fn describe(&self) -> String {
        ".grad".into()
    }
}

/// A region being recorded (a branch side, a loop condition or body): ops go to its own
/// graph; a tensor of an enclosing scope it reads becomes a `Bound` input of the region,
/// with the enclosing node it is bound to in `captures` (one per input, in slot order).
#[derive(Default)]
pub struct RegionScope {
    pub graph: Graph,
    pub(in crate::compile) known: HashMap<usize, (Tensor, NodeId)>,
    pub captures: Vec<NodeId>,
}

impl RegionScope {
    /// Pre-binds tensor `t` to a fresh input of this region bound to outer node `outer`
    /// (a loop's carried values).
    pub fn bind_input(&mut self, t: &Tensor, outer: NodeId) -> NodeId {
        let id = self
            .graph
            .add_input(InputKind::Bound, t.dtype(), t.shape().into(), None);
        self.captures.push(outer);
        self.known.insert(t.id(), (t.clone(), id));
        id
    }

    /// The enclosing scope's tensor bound to input `slot` of this region.
    pub fn bound_tensor(&self, slot: usize) -> Option<Tensor> {
        let id = *self.graph.inputs.get(slot)?;
        self.known
            .values()
            .find(|(_, n)| *n == id)
            .map(|(t, _)| t.clone())
    }

    /// Binds tensor `t` (a captured `for` loop's index) to a fresh input of this region
    /// that no enclosing node feeds; returns its slot.
    pub fn bind_index(&mut self, t: &Tensor) -> usize {
        let slot = self.captures.len();
        self.bind_input(t, NodeId(u32::MAX));
        slot
    }
}

/// The f-string pieces of a string value built with tensor holes during capture.
pub type Template = (
    Rc<str>,
    Vec<crate::compile::ir::control::PrintPiece>,
    Vec<Tensor>,
);

/// The state of one capture.
#[derive(Default)]
pub struct Tracer {
    pub graph: Graph,
    /// Tensor identity -> (the tensor, held weakly: its address is not reused while the
    /// entry lives, yet its data is freed when eager frees it, so a capture touches no
    /// more memory than the eager run; its node).
    pub(in crate::compile) known: HashMap<usize, (WeakTensor, NodeId)>,
    /// Regions being recorded, innermost last (empty: ops go to `graph`).
    pub regions: Vec<RegionScope>,
    /// Strings made by f-strings with tensor holes (consumed by `print`).
    pub templates: Vec<Template>,
    /// Tensors the interpreter loaded from a guarded origin, not yet used by an op.
    loaded: HashMap<usize, (Tensor, String)>,
    /// External input tensors, in input-slot order after the argument inputs.
    pub externals: Vec<Tensor>,
    /// (position in `externals`, leaf): externals read as the leaf's `.grad` at each call.
    pub grad_externals: Vec<(usize, Target)>,
    /// (argument slot, state): the `.grad` of an argument tensor read during capture,
    /// checked on each call's argument (a guard on the capturing call's tensor would
    /// fail for every fresh leaf passed in).
    pub arg_grads: Vec<(usize, Option<GradState>)>,
    pub guards: Vec<Box<dyn LoadGuard>>,
    guarded: HashSet<GuardKey>,
    pub breaks: Vec<GraphBreak>,
    /// Sizes Python code read and sizes reshape/expand asked for (symbolic shapes).
    pub hints: SymHints,
    /// Containers (instances, lists, dicts, cells) created during the capture.
    created: HashSet<usize>,
    /// Detached handles (autograd's saved tensors) -> (the handle, its source tensor),
    /// both held weakly: a backward recorded in the capture reads them as their
    /// source's value.
    pub(in crate::compile) aliases: HashMap<usize, (WeakTensor, WeakTensor)>,
    /// Scalar operands an op saved for its backward (made inside the op, unrecorded):
    /// constants of the graph when a recorded backward reads them.
    constants: HashMap<usize, Tensor>,
    /// In-place writes and `.grad` assignments to replay after each run.
    pub effects: Vec<Recorded>,
    /// A `backward()` ran during the capture (a whole training step).
    pub backward_seen: bool,
    /// Recording a compiled function's backward: the forward values it may read.
    pub fwd: Option<Box<crate::compile::autodiff::FwdLink>>,
    /// `for` loops (by span) this capture unrolls instead of capturing as IR loops.
    pub unroll: Vec<Span>,
    /// `for` loops whose capture as an IR loop failed: the next capture unrolls them.
    pub retry: Vec<Span>,
    /// The index tensors of the `for` loops being captured, with the loops' spans.
    pub loop_index: Vec<(Tensor, Span)>,
    pub(in crate::compile) span: Option<Span>,
    pub(in crate::compile) depth: u32,
    /// The input dims this capture makes symbolic (None: a static capture).
    pub spec: Option<crate::compile::sym::InputSpec>,
    /// This capture's generation (`symint`: which symbolic ints are its own).
    pub gen: u64,
    /// Places (by key) whose float value changed between calls: loads of them are
    /// runtime scalars (`symfloat`).
    pub dynamic_scalars: Vec<GuardKey>,
    /// The runtime scalars made so far: (place, their 0-d float64 input, the guard that
    /// reads the place's float at each call).
    pub scalars: Vec<(GuardKey, Tensor, Box<dyn LoadGuard>)>,
}

thread_local! {
    static TRACER: RefCell<Option<Box<Tracer>>> = const { RefCell::new(None) };
}

/// The recorder a capture installs: the tensor library's hooks (`crate::ir::record`)
/// report to the thread's `Tracer` through it.
struct TraceRecorder;

static TRACE_RECORDER: TraceRecorder = TraceRecorder;

/// True while a capture is in progress, even after a graph break stopped its recording
/// (compiled functions called meanwhile run inline, eagerly).
pub fn capturing() -> bool {
    TRACER.with(|t| t.try_borrow().map_or(true, |s| s.is_some()))
}

pub fn with<R>(f: impl FnOnce(&mut Tracer) -> R) -> Option<R> {
    TRACER.with(|t| t.try_borrow_mut().ok()?.as_deref_mut().map(f))
}

/// Starts recording with a fresh tracer (the previous one, if any, is returned to the
/// caller by `finish`).
pub fn start(mut t: Tracer) {
    t.gen = super::symint::open();
    TRACER.with(|slot| {
        if let Ok(mut s) = slot.try_borrow_mut() {
            *s = Some(Box::new(t));
        }
    });
    crate::ir::record::start(&TRACE_RECORDER);
}

/// Runs `f` recording into `t` (an active capture, if any, is set aside meanwhile and
/// restored after); returns `f`'s result and `t` as `f` left it.
pub fn isolated<R>(t: Tracer, f: impl FnOnce() -> R) -> (R, Option<Box<Tracer>>) {
    let outer = TRACER.with(|slot| slot.try_borrow_mut().ok().and_then(|mut s| s.take()));
    let was = active();
    start(t);
    let r = f();
    let inner = finish();
    TRACER.with(|slot| {
        if let Ok(mut s) = slot.try_borrow_mut() {
            *s = outer;
        }
    });
    set_active(was);
    (r, inner)
}

/// Stops recording and returns the tracer.
pub fn finish() -> Option<Box<Tracer>> {
    set_active(false);
    let mut t = TRACER.with(|slot| slot.try_borrow_mut().ok()?.take())?;
    let facts = super::symint::close(t.gen);
    t.hints.facts.extend(facts);
    Some(t)
}

/// Sets the span later recorded ops and breaks are attributed to.
#[inline]
pub fn set_span(span: Span) {
    if active() {
        with(|t| t.span = Some(span));
    }
}

impl Tracer {
    /// Registers the tensor argument at `path` as the next input.
    pub fn add_arg(&mut self, t: &Tensor, path: Vec<crate::compile::ir::PathStep>) {
        if self.known.contains_key(&t.id()) {
            return;
        }
        let id = self
            .graph
            .add_input(InputKind::Arg(path), t.dtype(), t.shape().into(), None);
        self.known.insert(t.id(), (t.downgrade(), id));
    }

    /// The node of a tensor an op consumes in the current scope (see `node_at`).
    pub fn node_of(&mut self, t: &Tensor) -> Option<NodeId> {
        self.node_at(self.regions.len(), t, None)
    }

    /// The nodes of all `args`, or None when one is not a graph value.
    pub(in crate::compile) fn nodes_of(&mut self, args: &[&Tensor]) -> Option<Vec<NodeId>> {
        args.iter().map(|a| self.node_of(a)).collect()
    }

    /// The graph ops are recorded into now.
    pub fn current(&mut self) -> &mut Graph {
        match self.regions.last_mut() {
            Some(r) => &mut r.graph,
            None => &mut self.graph,
        }
    }

    /// Appends `node` to the current graph as the node of tensor `out`.
    pub fn push_bound(&mut self, node: crate::compile::ir::Node, out: &Tensor) -> NodeId {
        let id = self.current().push(node);
        self.bind(out, id);
        id
    }

    /// Records that tensor `t` is node `id` of the current graph.
    pub fn bind(&mut self, t: &Tensor, id: NodeId) {
        match self.regions.last_mut() {
            Some(r) => {
                r.known.insert(t.id(), (t.clone(), id));
            }
            None => {
                self.known.insert(t.id(), (t.downgrade(), id));
            }
        }
    }

    /// Appends a node with no tensor of its own (a control or print node).
    pub fn push(&mut self, node: crate::compile::ir::Node) -> NodeId {
        self.current().push(node)
    }

    /// Appends control node `op(args)` and one `Out` node per result type; returns the
    /// `Out` nodes (a control node's own type is the placeholder `bool[]`).
    pub fn push_control(
        &mut self,
        op: IrOp,
        args: Vec<NodeId>,
        results: Vec<(crate::tensor::dtype::DType, crate::tensor::shape::Dims)>,
        span: Span,
    ) -> Vec<NodeId> {
        let node = self.push(crate::compile::ir::Node {
            op,
            args,
            dtype: crate::tensor::dtype::DType::Bool,
            shape: Default::default(),
            span: Some(span),
        });
        results
            .into_iter()
            .enumerate()
            .map(|(index, (dtype, shape))| {
                self.push(crate::compile::ir::Node {
                    op: IrOp::Out { index },
                    args: vec![node],
                    dtype,
                    shape,
                    span: Some(span),
                })
            })
            .collect()
    }

    /// The node of `t` at scope `level` (0: the function's graph; k: region k-1): a
    /// value known there, else (in a region) the value of an enclosing scope bound to
    /// a new input of the region. `freed`: the freed alias source `t` stands for (the
    /// function's graph knows it by that identity; `t` has its values).
    fn node_at(&mut self, level: usize, t: &Tensor, freed: Option<&WeakTensor>) -> Option<NodeId> {
        let Some(k) = level.checked_sub(1) else {
            return self.node_of_top(t, freed);
        };
        if let Some((_, id)) = self.regions.get(k)?.known.get(&t.id()) {
            return Some(*id);
        }
        let outer = self.node_at(k, t, freed)?;
        Some(self.regions.get_mut(k)?.bind_input(t, outer))
    }

    /// The node of a tensor (or of the freed alias source `freed` it stands for) in the
    /// function's graph: a known value, or a loaded one (becoming an external input
    /// now); None for a tensor of unknown origin.
    fn node_of_top(&mut self, t: &Tensor, freed: Option<&WeakTensor>) -> Option<NodeId> {
        let key = freed.map_or_else(|| t.id(), WeakTensor::id);
        if let Some((_, id)) = self.known.get(&key) {
            return Some(*id);
        }
        if let (Some((_, src)), None) = (self.aliases.get(&key), freed) {
            let src = src.clone();
            return self.node_of_source(&src, t);
        }
        if let Some(c) = self.constants.remove(&key) {
            let id = self.graph.push(crate::compile::ir::Node {
                op: IrOp::Const(c.clone()),
                args: Vec::new(),
                dtype: c.dtype(),
                shape: c.shape().into(),
                span: self.span,
            });
            self.known.insert(c.id(), (c.downgrade(), id));
            return Some(id);
        }
        if let Some(link) = self.fwd.as_deref_mut() {
            if let Some(id) = link.read(&mut self.graph, key, t) {
                let pin = freed.cloned().unwrap_or_else(|| t.downgrade());
                self.known.insert(key, (pin, id));
                return Some(id);
            }
        }
        let (t, name) = self.loaded.remove(&key)?;
        let kind = InputKind::External { name };
        let id = self
            .graph
            .add_input(kind, t.dtype(), t.shape().into(), self.span);
        self.known.insert(t.id(), (t.downgrade(), id));
        self.externals.push(t);
        Some(id)
    }

    /// The node of the source of alias `alias` (one level: a source is never itself an
    /// alias of something unknown, since `detach` of a detached tensor aliases the
    /// original). A source freed since is found by its identity, the alias (same
    /// values, dtype and shape) standing in for it.
    fn node_of_source(&mut self, src: &WeakTensor, alias: &Tensor) -> Option<NodeId> {
        if self.aliases.contains_key(&src.id()) && !self.known.contains_key(&src.id()) {
            return None;
        }
        match src.upgrade() {
            Some(s) => self.node_of(&s),
            None => self.node_at(self.regions.len(), alias, Some(src)),
        }
    }

    /// A tracer recording the backward of this finished forward capture: forward values
    /// (saved tensors through their aliases, unused scalar constants) become its inputs.
    pub fn for_backward(&mut self) -> Tracer {
        let known = std::mem::take(&mut self.known);
        Tracer {
            aliases: std::mem::take(&mut self.aliases),
            constants: std::mem::take(&mut self.constants),
            fwd: Some(Box::new(crate::compile::autodiff::FwdLink::new(known))),
            ..Tracer::default()
        }
    }

    /// Adds the guard `make` builds unless a guard on `key` exists.
    pub fn add_guard(&mut self, key: GuardKey, make: impl FnOnce() -> Box<dyn LoadGuard>) {
        if self.guarded.insert(key) {
            self.guards.push(make());
        }
    }

    /// True when the capture has a guard on place `key`.
    pub fn is_guarded(&self, key: GuardKey) -> bool {
        self.guarded.contains(&key)
    }

    /// True when place `key` is already a runtime scalar of this capture.
    pub fn has_scalar(&self, key: GuardKey) -> bool {
        self.scalars.iter().any(|s| s.0 == key)
    }

    /// The 0-d float64 tensor a runtime scalar loaded from place `key` (named `name`)
    /// reads (made once per place; it becomes an external input when an op first uses
    /// it, `reader` reading its value at each call), and the place's guard checks the
    /// type only. None when the place has no guard on a float (a container the function
    /// made).
    pub(in crate::compile) fn scalar_input(
        &mut self,
        key: GuardKey,
        v: f64,
        name: impl FnOnce() -> String,
        reader: impl FnOnce() -> Box<dyn LoadGuard>,
    ) -> Option<Tensor> {
        if let Some((_, t, _)) = self.scalars.iter().find(|s| s.0 == key) {
            return Some(t.clone());
        }
        let guard = self
            .guards
            .iter_mut()
            .rev()
            .find(|g| g.float_key() == Some(key))?;
        guard.set_by_type(true);
        let t = Tensor::from_vec(vec![v], &[]);
        self.loaded.insert(t.id(), (t.clone(), name()));
        self.scalars.push((key, t.clone(), reader()));
        Some(t)
    }

    /// Guards the places `keys` on their values (a runtime scalar used concretely).
    pub(in crate::compile) fn guard_values(&mut self, keys: &[GuardKey]) {
        for g in &mut self.guards {
            if g.by_type() && g.float_key().is_some_and(|k| keys.contains(&k)) {
                g.set_by_type(false);
            }
        }
    }

    /// Guards the state of `leaf.grad` (once): an argument's by its slot, checked on
    /// each call's argument; any other leaf's by the tensor.
    pub(in crate::compile) fn guard_grad(&mut self, leaf: &Tensor, place: &Target) {
        if let Target::Slot(n) = *place {
            if !self.arg_grads.iter().any(|(s, _)| *s == n) {
                self.arg_grads.push((n, grad_state(leaf)));
            }
            return;
        }
        let key = (leaf.id(), u64::MAX);
        self.add_guard(key, || {
            Box::new(GradGuard {
                leaf: leaf.clone(),
                state: grad_state(leaf),
            })
        });
    }

    /// The interpreter loaded tensor `x` from a guarded place named `name` (`item`: an
    /// item of a list or dict): remember where it came from, so a later op reads it as
    /// an external input. True when it is an argument's tensor loaded again through
    /// another name (aliasing: the caller breaks the graph).
    pub fn note_loaded_tensor(
        &mut self,
        x: &Tensor,
        item: bool,
        name: impl FnOnce() -> String,
    ) -> bool {
        if let Some((_, id)) = self.known.get(&x.id()) {
            if item {
                // An item of an argument list: the argument input already reads it.
                return false;
            }
            return matches!(
                self.graph.node(*id).map(|n| &n.op),
                Some(IrOp::Input {
                    kind: InputKind::Arg(_),
                    ..
                })
            );
        }
        self.loaded.insert(x.id(), (x.clone(), name()));
        false
    }

    /// A tensor the function's graph knows as node `id` (None: none is).
    pub fn tensor_of(&self, id: NodeId) -> Option<Tensor> {
        self.known
            .values()
            .find_map(|(t, n)| if *n == id { t.upgrade() } else { None })
    }

    /// The node of an output tensor (None: unknown origin).
    pub fn output_node(&mut self, t: &Tensor) -> Option<NodeId> {
        self.node_of(t)
    }

    /// The span recorded ops are attributed to now.
    pub fn span(&self) -> Option<Span> {
        self.span
    }

    pub fn is_created(&self, addr: usize) -> bool {
        self.created.contains(&addr)
    }
}

/// A container (instance, list, dict, cell) was created: mutating it is local.
#[inline]
pub fn note_created(addr: usize) {
    if active() {
        with(|t| t.created.insert(addr));
    }
}

/// A Python-level mutation of the container at `addr`: a break unless it was created
/// during the capture. True when it must not happen: an untaken branch running
/// speculatively may not change anything outside itself (the caller raises).
#[inline]
pub fn note_mutation(addr: usize, what: &'static str) -> bool {
    if !(active() || in_speculation()) {
        return false;
    }
    // In the recorded iteration of a `for` loop even a local container's change is a
    // break (its contents after the loop would depend on the trip count): that loop is
    // recaptured unrolled.
    let in_for = with(|t| t.loop_index.last().map(|(_, s)| *s)).flatten();
    if let (Some(span), true) = (in_for, active()) {
        with(|t| t.retry.push(span));
        graph_break(BreakReason::Mutation(what));
        return in_speculation();
    }
    // Inside a branch or `while` body even a container created during the capture is
    // an outside effect of the region: its contents after the node would depend on the
    // outcome or trip count of that call, which the graph cannot replay.
    if with(|t| t.is_created(addr)) != Some(false) && !in_region() {
        return false;
    }
    graph_break(BreakReason::Mutation(what));
    in_speculation()
}

/// Runs `f` on the active capture's tracer (None when there is none).
pub fn with_tracer<R>(f: impl FnOnce(&mut Tracer) -> R) -> Option<R> {
    with(f)
}

/// True while a control-flow region records.
pub(in crate::compile) fn in_region() -> bool {
    with(|t| !t.regions.is_empty()) == Some(true)
}

/// Starts recording a region (ops go to its graph until `exit_region`).
pub fn enter_region() {
    with(|t| t.regions.push(RegionScope::default()));
}

/// Stops recording the innermost region and returns it.
pub fn exit_region() -> Option<RegionScope> {
    with(|t| t.regions.pop()).flatten()
}

/// Stops recording after a break at the outermost library level (the run goes on
/// eagerly); a break inside a library call is the outer op's, which records nothing.
fn break_now(reason: BreakReason) {
    let outer = with(|t| {
        if t.depth == 0 {
            t.breaks.push(GraphBreak {
                reason: reason.clone(),
                span: t.span,
            });
        }
        t.depth == 0
    });
    if outer == Some(true) {
        set_active(false);
    }
}

impl Recorder for TraceRecorder {
    fn enter(&self) {
        with(|t| t.depth += 1);
    }

    fn exit(&self) {
        with(|t| t.depth = t.depth.saturating_sub(1));
    }

    fn record(&self, op: IrOp, args: &[&Tensor], out: &Tensor) {
        let ok = with(|t| {
            if t.depth != 1 {
                return Ok(());
            }
            let Some(ids) = t.nodes_of(args) else {
                return Err(BreakReason::UntracedTensor);
            };
            let node = crate::compile::ir::Node {
                op,
                args: ids,
                dtype: out.dtype(),
                shape: out.shape().into(),
                span: t.span,
            };
            t.push_bound(node, out);
            Ok(())
        });
        if let Some(Err(reason)) = ok {
            with(|t| t.depth = 0);
            graph_break(reason);
        }
    }

    fn graph_break(&self, reason: BreakReason) {
        break_now(reason);
    }

    fn record_inplace(&self, op: IrOp, args: &[&Tensor], target: &Tensor, what: &'static str) {
        crate::compile::capture::trace_effects::record_inplace(op, args, target, what);
    }

    fn note_set_grad(&self, target: &Tensor, g: Option<&Tensor>) {
        crate::compile::capture::trace_effects::note_set_grad(target, g);
    }

    fn note_grad_read(&self, leaf: &Tensor, g: Option<&Tensor>) {
        crate::compile::capture::trace_effects::note_grad_read(leaf, g);
    }

    fn note_size_read(&self, t: &Tensor, dim: Option<usize>) {
        with(|tr| match tr.known.get(&t.id()) {
            Some((_, id)) => tr.hints.size_reads.push((*id, dim)),
            None => {
                let in_region = !tr.regions.is_empty();
                let region = tr.regions.iter_mut().rev().find_map(|r| {
                    let id = r.known.get(&t.id())?.1;
                    Some((r, id))
                });
                match region {
                    Some((r, id)) => r.graph.size_reads.push((id, dim)),
                    None if in_region => tr.hints.region_size_read = true,
                    None => {}
                }
            }
        });
    }

    fn note_request(&self, out: &Tensor, req: &[i64]) {
        with(|tr| match tr.known.get(&out.id()) {
            Some((_, id)) => {
                tr.hints.requests.insert(*id, req.to_vec());
            }
            None if !tr.regions.is_empty() && !structural_expand(tr, out, req) => {
                tr.hints.region_request = true;
            }
            None => {}
        });
    }

    fn note_alias(&self, alias: &Tensor, src: &Tensor) {
        with(|t| {
            let src = match t.aliases.get(&src.id()) {
                Some((_, s)) => s.clone(),
                None => src.downgrade(),
            };
            t.aliases.insert(alias.id(), (alias.downgrade(), src));
        });
    }

    fn note_constant(&self, t: &Tensor) {
        with(|tr| tr.constants.insert(t.id(), t.clone()));
    }

    fn note_backward(&self) {
        with(|t| t.backward_seen = true);
    }

    fn note_like(&self, out: &Tensor, src: &Tensor) -> Vec<bool> {
        super::symint::note_like(out, src)
    }

    fn symbolic(&self) -> bool {
        with(|t| t.regions.is_empty() && t.spec.as_ref().is_some_and(|s| !s.example.is_empty()))
            .unwrap_or(false)
    }
}

/// True when `out`, made inside the current region by an `expand` asking for `req`,
/// takes its sizes from its structure alone: each explicit size names a new leading
/// dim or broadcasts a size-1 dim (a `-1` keeps the input's size). An explicit size
/// of a dim the input already has, and every `view`/`reshape` request, is not.
fn structural_expand(tr: &Tracer, out: &Tensor, req: &[i64]) -> bool {
    let Some(region) = tr.regions.last() else {
        return false;
    };
    let node = region
        .known
        .get(&out.id())
        .and_then(|(_, id)| region.graph.node(*id));
    let Some(node) = node.filter(|n| matches!(n.op, IrOp::Expand { .. })) else {
        return false;
    };
    let Some(x) = node.args.first().and_then(|a| region.graph.node(*a)) else {
        return false;
    };
    let lead = req.len().saturating_sub(x.shape.len());
    req.iter()
        .enumerate()
        .all(|(i, &r)| r == -1 || i < lead || x.shape.get(i - lead) == Some(&1))
}
