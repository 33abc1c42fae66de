//! The capture recorder interface: tensor-library entry points and autograd report the
//! ops they run, and anything that cannot be replayed, through these hooks. A capture
//! (`compile::trace`) implements [`Recorder`] and installs it with [`start`]; while none
//! records, every hook is one thread-local `Cell` read ([`active`]).

pub use super::breaks::BreakReason;
use super::{IrIndex, IrOp};
use crate::error::{Error, ErrorKind, Result};
use crate::tensor::indexing::TensorIndex;
use crate::tensor::Tensor;
use std::cell::Cell;

/// What a capture does with the events the tensor library and autograd report (each
/// called only while [`active`]; `exit` also after recording stopped).
pub trait Recorder {
    /// A tensor-library entry point was entered (only the outermost one records).
    fn enter(&self);
    /// The entry point `enter` announced returned.
    fn exit(&self);
    /// Records `out = op(args)`.
    fn record(&self, op: IrOp, args: &[&Tensor], out: &Tensor);
    /// Records a graph break and stops recording ops.
    fn graph_break(&self, reason: BreakReason);
    /// An in-place op `target = op(args)` (args[0] is the target's old value) ran.
    fn record_inplace(&self, op: IrOp, args: &[&Tensor], target: &Tensor, what: &'static str);
    /// `target.grad = g` (or cleared).
    fn note_set_grad(&self, target: &Tensor, g: Option<&Tensor>);
    /// `leaf.grad` (currently `g`) was read: by backward's accumulation or by Python.
    fn note_grad_read(&self, leaf: &Tensor, g: Option<&Tensor>);
    /// Python code read the size of `t`'s dim `dim` (all dims when None).
    fn note_size_read(&self, t: &Tensor, dim: Option<usize>);
    /// A reshape/expand producing `out` was asked for the sizes `req`.
    fn note_request(&self, out: &Tensor, req: &[i64]);
    /// `alias` is a detached handle on `src`'s data (a saved tensor).
    fn note_alias(&self, alias: &Tensor, src: &Tensor);
    /// `t` is a constant an op made for its backward alone (a scalar operand).
    fn note_constant(&self, t: &Tensor);
    /// `backward()` runs inside the capture.
    fn note_backward(&self);
    /// `out`, an expand of a one-element tensor, has the shape of the graph value `src`;
    /// returns which of its dims are symbolic (empty: none, or not recorded so).
    fn note_like(&self, out: &Tensor, src: &Tensor) -> Vec<bool>;
    /// True while ops record into a graph with symbolic sizes (outside any branch or
    /// loop region).
    fn symbolic(&self) -> bool;
}

thread_local! {
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    static SPECULATING: Cell<u32> = const { Cell::new(0) };
    static RECORDER: Cell<Option<&'static dyn Recorder>> = const { Cell::new(None) };
}

/// True while a capture is recording (the one check every hook makes).
#[inline]
pub fn active() -> bool {
    ACTIVE.with(|a| a.get())
}

/// Installs `r` as this thread's recorder and starts recording.
pub fn start(r: &'static dyn Recorder) {
    RECORDER.with(|c| c.set(Some(r)));
    ACTIVE.with(|a| a.set(true));
}

/// Starts (`true`) or stops recording with the installed recorder; returns whether it
/// was recording.
pub fn set_active(on: bool) -> bool {
    ACTIVE.with(|a| a.replace(on))
}

fn recorder() -> Option<&'static dyn Recorder> {
    RECORDER.with(|c| c.get())
}

/// Runs `f` on the recorder when a capture records.
#[inline]
fn hook(f: impl FnOnce(&dyn Recorder)) {
    if active() {
        if let Some(r) = recorder() {
            f(r);
        }
    }
}

/// Records a graph break and stops recording ops (the run itself goes on eagerly).
pub fn graph_break(reason: BreakReason) {
    hook(|r| r.graph_break(reason));
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
    hook(|r| r.enter());
    Scope(true)
}

impl Drop for Scope {
    fn drop(&mut self) {
        if self.0 {
            if let Some(r) = recorder() {
                r.exit();
            }
        }
    }
}

impl Scope {
    /// Records `out = op(args)` when this is the outermost library call of a capture.
    #[inline]
    pub fn record(&self, op: impl FnOnce() -> IrOp, args: &[&Tensor], out: &Tensor) {
        if self.0 {
            hook(|r| r.record(op(), args, out));
        }
    }

    /// Records a tensor created from Python data as a constant.
    #[inline]
    pub fn record_const(&self, out: &Tensor) {
        self.record(|| IrOp::Const(out.clone()), &[], out);
    }
}

/// Records `out = op(args)` for a computation that has no entry point of its own (the
/// raw reshapes and views gradient rules use); nested inside a library call it is part
/// of that call and records nothing.
#[inline]
pub fn record_after(op: impl FnOnce() -> IrOp, args: &[&Tensor], out: &Tensor) {
    if active() {
        scope().record(op, args, out);
    }
}

/// An in-place op `target = op(args)` (args[0] is the target's old value) ran: see
/// `compile::trace_effects`.
pub fn record_inplace(op: IrOp, args: &[&Tensor], target: &Tensor, what: &'static str) {
    hook(|r| r.record_inplace(op, args, target, what));
}

/// `t.grad = g` (or cleared) during a capture: replayed after each run.
pub fn note_set_grad(target: &Tensor, g: Option<&Tensor>) {
    hook(|r| r.note_set_grad(target, g));
}

/// `leaf.grad` (currently `g`) was read during a capture: a gradient the function did
/// not set itself becomes a guarded input (accumulation into an existing `.grad`).
pub fn note_grad_read(leaf: &Tensor, g: Option<&Tensor>) {
    hook(|r| r.note_grad_read(leaf, g));
}

/// Python code read the size of `t`'s dim `dim` (all dims when None): under symbolic
/// shapes that size is specialised (guarded), since the int may steer control flow or
/// become an op attribute.
pub fn note_size_read(t: &Tensor, dim: Option<usize>) {
    hook(|r| r.note_size_read(t, dim));
}

/// A reshape/expand producing `out` was asked for the sizes `req` (a `-1` inferred).
pub fn note_request(out: &Tensor, req: &[i64]) {
    hook(|r| r.note_request(out, req));
}

/// `alias` is a detached handle on `src`'s data (a saved tensor): it reads as `src`.
#[inline]
pub fn note_alias(alias: &Tensor, src: &Tensor) {
    hook(|r| r.note_alias(alias, src));
}

/// `t` is a constant an op made for its backward alone (a scalar operand).
#[inline]
pub fn note_constant(t: &Tensor) {
    hook(|r| r.note_constant(t));
}

/// `backward()` runs inside a capture: its gradient rules record into the graph.
pub fn note_backward() {
    hook(|r| r.note_backward());
}

/// `out`, an expand to the shape of the graph value `src` (a gradient rule's expand to
/// a reduction's input, tril's mask), takes `src`'s symbolic sizes in a capture with
/// symbolic shapes. Returns which dims are symbolic (empty outside such a capture).
pub fn note_like(out: &Tensor, src: &Tensor) -> Vec<bool> {
    match recorder() {
        Some(r) if active() => r.note_like(out, src),
        _ => Vec::new(),
    }
}

/// True while a capture with symbolic sizes records (outside branch and loop regions):
/// then ops that would bake a size may record a size-following form instead.
pub fn symbolic() -> bool {
    match recorder() {
        Some(r) if active() => r.symbolic(),
        _ => false,
    }
}

/// Runs `f` with recording paused: its tensor ops are neither recorded nor breaks.
pub fn paused<R>(f: impl FnOnce() -> R) -> R {
    let was = set_active(false);
    let r = f();
    set_active(was);
    r
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
pub fn refuse_effect(what: &'static str) -> Result<()> {
    if in_speculation() {
        return Err(speculation_error(what));
    }
    Ok(())
}

/// The error that stops a speculative run before an effect (never shown: the capture
/// then falls back to eager).
pub fn speculation_error(what: &str) -> Error {
    Error::new(
        ErrorKind::RuntimeError,
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
    let tensors = idx
        .iter()
        .filter_map(|i| match i {
            TensorIndex::Mask(t) | TensorIndex::Indices(t) => Some(t.clone()),
            _ => None,
        })
        .collect();
    (
        IrOp::Index {
            indices: ir_indices(idx),
        },
        tensors,
    )
}

/// The IR form of `idx`: its tensor indices numbered as the args after the indexed
/// tensor, in order.
pub fn ir_indices(idx: &[TensorIndex]) -> Vec<IrIndex> {
    let mut arg = 0;
    idx.iter()
        .map(|i| match i {
            TensorIndex::Int(v) => IrIndex::Int(*v),
            TensorIndex::Slice { start, stop, step } => IrIndex::Slice {
                start: *start,
                stop: *stop,
                step: *step,
            },
            TensorIndex::NewAxis => IrIndex::NewAxis,
            TensorIndex::Ellipsis => IrIndex::Ellipsis,
            TensorIndex::Mask(_) => {
                arg += 1;
                IrIndex::Mask { arg }
            }
            TensorIndex::Indices(_) => {
                arg += 1;
                IrIndex::Indices { arg }
            }
        })
        .collect()
}
