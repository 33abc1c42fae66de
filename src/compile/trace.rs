//! Capture by recording an eager run: while a thread-local `Tracer` is active, every
//! tensor-library entry point reports the op it ran (`Scope::record`), the interpreter
//! reports where the tensors and Python values it loads come from (`note_load`) and
//! what it mutates, and anything that cannot be replayed from the graph becomes a
//! `GraphBreak`. When no tracer is active each hook is one thread-local `Cell` read.

use super::ir::{Graph, InputKind, IrIndex, IrOp, NodeId};
use crate::interp::value::{CellRef, Instance, ModuleObj, Value};
use crate::source::Span;
use crate::tensor::indexing::TensorIndex;
use crate::tensor::Tensor;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

/// Why a function cannot be replayed from its graph (it then runs eagerly).
#[derive(Debug, Clone, PartialEq)]
pub enum BreakReason {
    /// A tensor value turned into a Python value (`.item()`, `bool(t)`, `.tolist()`).
    TensorToPython(&'static str),
    /// `print` inside the function (issue 6 captures it).
    Print,
    /// Random tensor creation (`rand`, `randn`, `dropout` in training, ...).
    Random(&'static str),
    /// An in-place tensor op (optimizer steps, `x += 1` on a tensor, `x[i] = v`).
    InPlace(&'static str),
    /// `backward()` / `grad` inside the function (issue 6).
    Autograd(&'static str),
    /// A tensor produced by an op with no IR op, or of unknown origin.
    UntracedTensor,
    /// A Python-level mutation visible outside the function.
    Mutation(&'static str),
    /// A call of a native function registered by the host.
    HostFunction(Rc<str>),
    /// A return value the executor cannot rebuild (an object created inside).
    Output(&'static str),
    /// The same tensor reached the function both as an argument and by a load.
    Aliasing,
    /// The captured graph failed verification (a compiler bug; the message says where).
    Internal(String),
    /// Control flow on a tensor value that cannot be captured (`break` under a tensor
    /// condition, a `return` in only one side of a branch, ...).
    ControlFlow(&'static str),
    /// The side of a branch not taken at capture failed when run speculatively.
    UntakenBranch(String),
}

impl BreakReason {
    pub fn describe(&self) -> String {
        match self {
            BreakReason::TensorToPython(w) => format!("tensor converted to a Python value ({w})"),
            BreakReason::Print => "print inside a compiled function".into(),
            BreakReason::Random(w) => format!("random tensor creation ({w})"),
            BreakReason::InPlace(w) => format!("in-place tensor op ({w})"),
            BreakReason::Autograd(w) => format!("autograd inside a compiled function ({w})"),
            BreakReason::UntracedTensor => "a tensor op with no IR op".into(),
            BreakReason::Mutation(w) => format!("Python-level mutation ({w})"),
            BreakReason::HostFunction(n) => format!("call of host function {n}"),
            BreakReason::Output(w) => format!("unsupported return value ({w})"),
            BreakReason::Aliasing => "a tensor is both an argument and a loaded value".into(),
            BreakReason::Internal(m) => m.clone(),
            BreakReason::ControlFlow(w) => format!("control flow on a tensor: {w}"),
            BreakReason::UntakenBranch(m) => format!("the branch not taken at capture fails: {m}"),
        }
    }
}

/// A graph break with the source span of the operation that caused it.
#[derive(Debug, Clone)]
pub struct GraphBreak {
    pub reason: BreakReason,
    pub span: Option<Span>,
}

/// Where a loaded value came from: re-read at every call to check it is unchanged.
#[derive(Debug, Clone)]
pub enum Origin {
    Attr(Rc<Instance>, Rc<str>),
    Global(Rc<ModuleObj>, u32, Rc<str>),
    Cell(CellRef, Rc<str>),
}

impl Origin {
    /// The value the origin holds now (None when it no longer holds one).
    pub fn read(&self) -> Option<Value> {
        match self {
            Origin::Attr(inst, name) => inst.dict.borrow().get(&**name).cloned(),
            Origin::Global(m, slot, _) => m.slots.borrow().get(*slot as usize).cloned(),
            Origin::Cell(c, _) => Some(c.borrow().clone()),
        }
    }

    /// `self.w`, `W`: how dumps name an external input.
    pub fn describe(&self) -> String {
        match self {
            Origin::Attr(_, n) => format!(".{n}"),
            Origin::Global(_, _, n) | Origin::Cell(_, n) => n.to_string(),
        }
    }

    fn key(&self) -> (usize, u64) {
        match self {
            Origin::Attr(i, n) => {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                n.hash(&mut h);
                (Rc::as_ptr(i) as usize, h.finish())
            }
            Origin::Global(m, s, _) => (Rc::as_ptr(m) as usize, u64::from(*s)),
            Origin::Cell(c, _) => (Rc::as_ptr(c) as usize, 0),
        }
    }
}

/// A value read during capture that the cached version depends on (`Unbound`: the
/// origin held nothing, e.g. an instance attribute found on the class).
#[derive(Debug, Clone)]
pub struct LoadGuard {
    pub origin: Origin,
    pub value: Value,
}

/// An attribute lookup on an instance missed its dict (it found a class attribute):
/// guard that the instance still does not shadow it.
pub fn note_absent(inst: &Rc<Instance>, name: &str) {
    let origin = Origin::Attr(inst.clone(), name.into());
    with(|t| {
        if !t.created.contains(&(Rc::as_ptr(inst) as usize)) && t.guarded.insert(origin.key()) {
            t.guards.push(LoadGuard {
                origin,
                value: Value::Unbound,
            });
        }
    });
}

/// A region being recorded (a branch side, a loop condition or body): ops go to its own
/// graph; a tensor of an enclosing scope it reads becomes a `Bound` input of the region,
/// with the enclosing node it is bound to in `captures` (one per input, in slot order).
#[derive(Default)]
pub struct RegionScope {
    pub graph: Graph,
    known: HashMap<usize, (Tensor, NodeId)>,
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
}

/// The f-string pieces of a string value built with tensor holes during capture.
pub type Template = (Rc<str>, Vec<super::control::PrintPiece>, Vec<Tensor>);

/// The state of one capture.
#[derive(Default)]
pub struct Tracer {
    pub graph: Graph,
    /// Tensor identity -> (the tensor, kept so its address is not reused; its node).
    known: HashMap<usize, (Tensor, NodeId)>,
    /// Regions being recorded, innermost last (empty: ops go to `graph`).
    pub regions: Vec<RegionScope>,
    /// Strings made by f-strings with tensor holes (consumed by `print`).
    pub templates: Vec<Template>,
    /// Tensors the interpreter loaded from a guarded origin, not yet used by an op.
    loaded: HashMap<usize, (Tensor, String)>,
    /// External input tensors, in input-slot order after the argument inputs.
    pub externals: Vec<Tensor>,
    pub guards: Vec<LoadGuard>,
    guarded: HashSet<(usize, u64)>,
    pub breaks: Vec<GraphBreak>,
    /// Containers (instances, lists, dicts, cells) created during the capture.
    created: HashSet<usize>,
    span: Option<Span>,
    depth: u32,
}

thread_local! {
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    static SPECULATING: Cell<u32> = const { Cell::new(0) };
    static TRACER: RefCell<Option<Box<Tracer>>> = const { RefCell::new(None) };
}

/// True while a capture is recording (the one check every hook makes).
#[inline]
pub fn active() -> bool {
    ACTIVE.with(|a| a.get())
}

/// True while a capture is in progress, even after a graph break stopped its recording
/// (compiled functions called meanwhile run inline, eagerly).
pub fn capturing() -> bool {
    TRACER.with(|t| t.try_borrow().map_or(true, |s| s.is_some()))
}

fn with<R>(f: impl FnOnce(&mut Tracer) -> R) -> Option<R> {
    TRACER.with(|t| t.try_borrow_mut().ok()?.as_deref_mut().map(f))
}

/// Starts recording with a fresh tracer (the previous one, if any, is returned to the
/// caller by `finish`).
pub fn start(t: Tracer) {
    TRACER.with(|slot| {
        if let Ok(mut s) = slot.try_borrow_mut() {
            *s = Some(Box::new(t));
        }
    });
    ACTIVE.with(|a| a.set(true));
}

/// Stops recording and returns the tracer.
pub fn finish() -> Option<Box<Tracer>> {
    ACTIVE.with(|a| a.set(false));
    TRACER.with(|slot| slot.try_borrow_mut().ok()?.take())
}

/// Records a graph break and stops recording ops (the run itself goes on eagerly).
pub fn graph_break(reason: BreakReason) {
    if !active() {
        return;
    }
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
        ACTIVE.with(|a| a.set(false));
    }
}

/// Sets the span later recorded ops and breaks are attributed to.
#[inline]
pub fn set_span(span: Span) {
    if active() {
        with(|t| t.span = Some(span));
    }
}

/// A tensor-library call in progress: only the outermost one records (library functions
/// call each other; their internal ops are part of the outer op).
pub struct Scope(bool);

/// Enters a tensor-library entry point.
#[inline]
pub fn scope() -> Scope {
    if !active() {
        return Scope(false);
    }
    with(|t| t.depth += 1);
    Scope(true)
}

impl Drop for Scope {
    fn drop(&mut self) {
        if self.0 {
            with(|t| t.depth = t.depth.saturating_sub(1));
        }
    }
}

impl Scope {
    /// Records `out = op(args)` when this is the outermost library call of a capture.
    #[inline]
    pub fn record(&self, op: impl FnOnce() -> IrOp, args: &[&Tensor], out: &Tensor) {
        if self.0 && active() {
            record_slow(op(), args, out);
        }
    }

    /// Records a tensor created from Python data as a constant.
    #[inline]
    pub fn record_const(&self, out: &Tensor) {
        if self.0 && active() {
            record_slow(IrOp::Const(out.clone()), &[], out);
        }
    }
}

fn record_slow(op: IrOp, args: &[&Tensor], out: &Tensor) {
    let ok = with(|t| {
        if t.depth != 1 {
            return true;
        }
        let mut ids = Vec::with_capacity(args.len());
        for a in args {
            match t.node_of(a) {
                Some(id) => ids.push(id),
                None => return false,
            }
        }
        let node = super::ir::Node {
            op,
            args: ids,
            dtype: out.dtype(),
            shape: out.shape().into(),
            span: t.span,
        };
        t.push_bound(node, out);
        true
    });
    if ok == Some(false) {
        with(|t| t.depth = 0);
        graph_break(BreakReason::UntracedTensor);
    }
}

impl Tracer {
    /// Registers the tensor argument at `path` as the next input.
    pub fn add_arg(&mut self, t: &Tensor, path: Vec<super::ir::PathStep>) {
        if self.known.contains_key(&t.id()) {
            return;
        }
        let id = self
            .graph
            .add_input(InputKind::Arg(path), t.dtype(), t.shape().into(), None);
        self.known.insert(t.id(), (t.clone(), id));
    }

    /// The node of a tensor an op consumes in the current scope (see `node_at`).
    pub fn node_of(&mut self, t: &Tensor) -> Option<NodeId> {
        self.node_at(self.regions.len(), t)
    }

    /// The graph ops are recorded into now.
    pub fn current(&mut self) -> &mut Graph {
        match self.regions.last_mut() {
            Some(r) => &mut r.graph,
            None => &mut self.graph,
        }
    }

    /// Appends `node` to the current graph as the node of tensor `out`.
    pub fn push_bound(&mut self, node: super::ir::Node, out: &Tensor) -> NodeId {
        let id = self.current().push(node);
        self.bind(out, id);
        id
    }

    /// Records that tensor `t` is node `id` of the current graph.
    pub fn bind(&mut self, t: &Tensor, id: NodeId) {
        let known = match self.regions.last_mut() {
            Some(r) => &mut r.known,
            None => &mut self.known,
        };
        known.insert(t.id(), (t.clone(), id));
    }

    /// Appends a node with no tensor of its own (a control or print node).
    pub fn push(&mut self, node: super::ir::Node) -> NodeId {
        self.current().push(node)
    }

    /// The node of `t` at scope `level` (0: the function's graph; k: region k-1): a
    /// value known there, else (in a region) the value of an enclosing scope bound to
    /// a new input of the region.
    fn node_at(&mut self, level: usize, t: &Tensor) -> Option<NodeId> {
        let Some(k) = level.checked_sub(1) else {
            return self.node_of_top(t);
        };
        if let Some((_, id)) = self.regions.get(k)?.known.get(&t.id()) {
            return Some(*id);
        }
        let outer = self.node_at(k, t)?;
        Some(self.regions.get_mut(k)?.bind_input(t, outer))
    }

    /// The node of a tensor in the function's graph: a known value, or a loaded one
    /// (becoming an external input now); None for a tensor of unknown origin.
    fn node_of_top(&mut self, t: &Tensor) -> Option<NodeId> {
        if let Some((_, id)) = self.known.get(&t.id()) {
            return Some(*id);
        }
        let (t, name) = self.loaded.remove(&t.id())?;
        let kind = InputKind::External { name };
        let id = self
            .graph
            .add_input(kind, t.dtype(), t.shape().into(), self.span);
        self.externals.push(t.clone());
        self.known.insert(t.id(), (t, id));
        Some(id)
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

/// The interpreter loaded `v` from `origin`: guard it, and remember a tensor's origin.
pub fn note_load(origin: impl FnOnce() -> Origin, v: &Value) {
    if !active() || matches!(v, Value::Unbound) {
        return;
    }
    let origin = origin();
    let aliased = with(|t| {
        if let Origin::Attr(inst, _) = &origin {
            if t.created.contains(&(Rc::as_ptr(inst) as usize)) {
                return false;
            }
        }
        if t.guarded.insert(origin.key()) {
            t.guards.push(LoadGuard {
                origin: origin.clone(),
                value: v.clone(),
            });
        }
        let Value::Tensor(x) = v else { return false };
        if let Some((_, id)) = t.known.get(&x.id()) {
            let is_arg = matches!(
                t.graph.node(*id).map(|n| &n.op),
                Some(IrOp::Input {
                    kind: InputKind::Arg(_),
                    ..
                })
            );
            return is_arg;
        }
        t.loaded.insert(x.id(), (x.clone(), origin.describe()));
        false
    });
    if aliased == Some(true) {
        graph_break(BreakReason::Aliasing);
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
    if !(active() || in_speculation()) || with(|t| t.is_created(addr)) != Some(false) {
        return false;
    }
    graph_break(BreakReason::Mutation(what));
    in_speculation()
}

/// True while an untaken branch runs speculatively (even after a break stopped recording).
#[inline]
pub fn in_speculation() -> bool {
    SPECULATING.with(|s| s.get() > 0)
}

/// Enters (`true`) or leaves a speculative run of an untaken branch.
pub fn set_speculating(on: bool) {
    SPECULATING.with(|s| {
        s.set(if on {
            s.get() + 1
        } else {
            s.get().saturating_sub(1)
        })
    });
}

/// Refuses an effect (an in-place tensor op) while an untaken branch runs speculatively.
pub fn refuse_effect(what: &'static str) -> crate::error::Result<()> {
    if in_speculation() {
        return Err(speculation_error(what));
    }
    Ok(())
}

/// The error that stops a speculative run before an effect (never shown: the capture
/// then falls back to eager).
pub fn speculation_error(what: &str) -> crate::error::Error {
    crate::error::Error::new(
        crate::error::ErrorKind::RuntimeError,
        format!("{what} in the branch not taken"),
        None,
    )
}

/// A normalised dim of a call that succeeded (so it is in range).
pub fn dim(d: i64, ndim: usize) -> usize {
    crate::tensor::shape::norm_dim("", d, ndim).unwrap_or(0)
}

/// Normalised dims of a reduction that succeeded (empty = all dims).
pub fn dims(d: &[i64], ndim: usize) -> Vec<usize> {
    crate::tensor::shape::norm_dims("", d, ndim).unwrap_or_default()
}

/// An `Index` op for a tensor-library index list and its tensor args (in arg order 1..).
pub fn index_op(idx: &[TensorIndex]) -> (IrOp, Vec<Tensor>) {
    let mut tensors = Vec::new();
    let indices = idx
        .iter()
        .map(|i| match i {
            TensorIndex::Int(v) => IrIndex::Int(*v),
            TensorIndex::Slice { start, stop, step } => IrIndex::Slice {
                start: *start,
                stop: *stop,
                step: *step,
            },
            TensorIndex::NewAxis => IrIndex::NewAxis,
            TensorIndex::Ellipsis => IrIndex::Ellipsis,
            TensorIndex::Mask(t) => {
                tensors.push(t.clone());
                IrIndex::Mask { arg: tensors.len() }
            }
            TensorIndex::Indices(t) => {
                tensors.push(t.clone());
                IrIndex::Indices { arg: tensors.len() }
            }
        })
        .collect();
    (IrOp::Index { indices }, tensors)
}

/// Runs `f` on the active capture's tracer (None when there is none).
pub fn with_tracer<R>(f: impl FnOnce(&mut Tracer) -> R) -> Option<R> {
    with(f)
}

/// Runs `f` with recording paused: its tensor ops are neither recorded nor breaks.
pub fn paused<R>(f: impl FnOnce() -> R) -> R {
    let was = ACTIVE.with(|a| a.replace(false));
    let r = f();
    ACTIVE.with(|a| a.set(was));
    r
}

/// Starts recording a region (ops go to its graph until `exit_region`).
pub fn enter_region() {
    with(|t| t.regions.push(RegionScope::default()));
}

/// Stops recording the innermost region and returns it.
pub fn exit_region() -> Option<RegionScope> {
    with(|t| t.regions.pop()).flatten()
}
