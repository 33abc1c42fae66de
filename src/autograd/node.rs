//! Graph nodes: the closed enum of backward ops with their saved tensors (and the
//! versions those had when saved), and the edges to the inputs' producers.

use super::names::GradFnName;
use crate::error::{ErrorKind, Result};
use crate::ir::IrOp;
use crate::tensor::hooks::WeakTensor;
use crate::tensor::indexing::TensorIndex;
use crate::tensor::shape::Dims;
use crate::tensor::view_grad::ViewMap;
use crate::tensor::DType;
use crate::tensor::{err, Tensor};
use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

/// A tensor saved for backward: detached (no cycle through its own node) with the
/// storage version at save time, and where its history was (for `create_graph`).
#[derive(Clone)]
pub struct Saved {
    t: Tensor,
    version: u64,
    origin: Origin,
}

/// The history of a saved tensor, read back only by a create-graph sweep (see
/// create.rs). Weak: a node never keeps its inputs' producers alive through a saved
/// tensor (those are its edges' job) and builds no cycle through a leaf's `.grad`.
#[derive(Clone)]
enum Origin {
    /// No history (a constant, or an input that does not require grad).
    None,
    /// A leaf that requires grad.
    Leaf(WeakTensor),
    /// An intermediate: its producer at save time.
    Node(Weak<Node>),
    /// The output of the node that saved it.
    Output,
}

impl Saved {
    /// The saved tensor's rank (no version check: it names the node).
    pub fn ndim(&self) -> usize {
        self.t.ndim()
    }

    pub fn new(t: &Tensor) -> Saved {
        let origin = if !t.requires_grad() {
            Origin::None
        } else {
            match t.grad_fn() {
                Some(n) => Origin::Node(Rc::downgrade(&n)),
                None => Origin::Leaf(t.downgrade()),
            }
        };
        Saved::with_origin(t, origin)
    }

    /// OpSaved the output of the op being recorded (its history is the node that saves
    /// it, made after this).
    pub fn output(t: &Tensor) -> Saved {
        Saved::with_origin(t, Origin::Output)
    }

    fn with_origin(t: &Tensor, origin: Origin) -> Saved {
        let d = t.detached();
        Saved {
            t: d,
            version: t.version(),
            origin,
        }
    }

    /// OpSaved a tensor made for this node alone (a scalar operand as a 0-d tensor): it
    /// has no history and nothing else can reach it, so it needs no detached copy.
    pub(crate) fn constant(t: Tensor) -> Saved {
        crate::ir::record::note_constant(&t);
        Saved {
            version: t.version(),
            t,
            origin: Origin::None,
        }
    }

    /// The saved tensor with its history, while a create-graph sweep runs the rule of
    /// `node` (the node that saved it).
    fn with_history(&self, node: Rc<Node>) -> Tensor {
        let producer = match &self.origin {
            Origin::None => return self.t.clone(),
            Origin::Leaf(w) => match w.upgrade() {
                Some(leaf) => return leaf,
                None => return self.t.clone(),
            },
            Origin::Node(w) => match w.upgrade() {
                Some(n) => n,
                None => return self.t.clone(),
            },
            Origin::Output => node,
        };
        let t = self.t.detach();
        t.set_grad_fn(Some(producer));
        t
    }

    /// Did the tensor require grad when saved (has it a gradient edge)?
    pub fn needs_grad(&self) -> bool {
        !matches!(self.origin, Origin::None)
    }

    /// The saved tensor, or `RuntimeError` if it was modified in place since.
    pub fn get(&self) -> Result<Tensor> {
        if self.t.version() != self.version {
            return Err(err(
                ErrorKind::RuntimeError,
                format!(
                    "one of the variables needed for gradient computation has been modified by an \
                     inplace operation: [{}{}] is at version {}; expected version {} instead",
                    self.t.dtype().name(),
                    crate::tensor::shape::fmt_shape(self.t.shape()),
                    self.t.version(),
                    self.version
                ),
            ));
        }
        if matches!(self.origin, Origin::None) {
            return Ok(self.t.clone());
        }
        Ok(match super::create::applying() {
            Some(node) => self.with_history(node),
            None => self.t.clone(),
        })
    }
}

/// Where the gradient of one input goes.
pub enum Edge {
    /// The input does not require grad.
    None,
    /// A leaf: accumulate into its `.grad`.
    Leaf(Tensor),
    /// An intermediate: pass to its producer.
    Node(Rc<Node>),
}

impl Edge {
    pub fn of(t: &Tensor) -> Edge {
        if !t.requires_grad() {
            return Edge::None;
        }
        match t.grad_fn() {
            Some(n) => Edge::Node(n),
            None => Edge::Leaf(t.clone()),
        }
    }
}

/// A node's edges, one per input (inline for the usual one or two: no allocation).
pub type Edges = smallvec::SmallVec<[Edge; 2]>;

/// The call that made a reshape or permute node: only its PyTorch name differs
/// (`ViewBackward0`, `UnsqueezeBackward0`, `TBackward0`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewCall {
    /// `view`/`reshape`/`flatten` as a view; any permute.
    View,
    /// `reshape` that had to copy.
    UnsafeView,
    Unsqueeze,
    /// `squeeze()` of every size-1 dim.
    SqueezeAll,
    /// `squeeze(dim)`.
    SqueezeDim,
    /// `squeeze(dims)` of a tuple.
    SqueezeDims,
    /// The `t()` method.
    T,
    Transpose,
}

/// One recorded op. `op` is taken (freed) by a backward without `retain_graph`.
pub struct Node {
    pub(crate) id: u64,
    pub(crate) op: RefCell<Option<BackwardOp>>,
    pub(crate) edges: Edges,
    /// PyTorch's name, worked out when first asked for or before `op` is freed (most
    /// nodes are never named: naming each one as it is made cost W2 0.5%).
    name: Cell<Option<GradFnName>>,
    /// Output tensors with gradient hooks or `retain_grad` (see tensor/hooks.rs).
    watchers: RefCell<Vec<WeakTensor>>,
    /// The dtype of the tensors this node produced: gradients sent to it are cast to it.
    out_dtype: Cell<OutDType>,
}

/// What [`Node::out_dtype`] knows of a node's outputs.
#[derive(Clone, Copy, PartialEq)]
enum OutDType {
    /// Attached to no tensor yet.
    Unset,
    One(DType),
    /// Outputs of different dtypes: gradients pass as they come.
    Mixed,
}

impl Node {
    pub(crate) fn new_rc(id: u64, op: BackwardOp, edges: Edges) -> Rc<Node> {
        crate::tensor::rc_in_place!(Node {
            id: id,
            name: Cell::new(None),
            op: RefCell::new(Some(op)),
            edges: edges,
            watchers: RefCell::new(Vec::new()),
            out_dtype: Cell::new(OutDType::Unset),
        })
    }

    /// Notes that a tensor of dtype `d` is one of this node's outputs.
    pub(crate) fn note_output(&self, d: DType) {
        let next = match self.out_dtype.get() {
            OutDType::Unset => OutDType::One(d),
            OutDType::One(e) if e == d => OutDType::One(d),
            _ => OutDType::Mixed,
        };
        self.out_dtype.set(next);
    }

    /// The floating dtype a gradient sent to this node must have (PyTorch's engine casts
    /// each input gradient to its input's dtype): None when unknown or mixed.
    pub(crate) fn grad_dtype(&self) -> Option<DType> {
        match self.out_dtype.get() {
            OutDType::One(d) if d.is_float() => Some(d),
            _ => None,
        }
    }

    /// Runs the sweep's hooks for this node's output when `t` has some.
    pub(crate) fn watch(&self, t: WeakTensor) {
        let mut w = self.watchers.borrow_mut();
        if !w.iter().any(|x| x.same(&t)) {
            w.push(t);
        }
    }

    /// The live tensors produced by this node that have hooks (stale entries dropped).
    pub(crate) fn watched(self: &Rc<Self>) -> Vec<Tensor> {
        if self.watchers.borrow().is_empty() {
            return Vec::new(); // almost every node: no hook on its output
        }
        let live: Vec<Tensor> = {
            let mut w = self.watchers.borrow_mut();
            w.retain(|t| t.upgrade().is_some());
            w.iter().filter_map(WeakTensor::upgrade).collect()
        };
        live.into_iter()
            .filter(|t| t.grad_fn().is_some_and(|n| Rc::ptr_eq(&n, self)))
            .collect()
    }

    /// PyTorch's name of the backward op (`MulBackward0`).
    pub fn name(&self) -> GradFnName {
        if let Some(n) = self.name.get() {
            return n;
        }
        let n = match &*self.op.borrow() {
            Some(op) => op.grad_fn_name(),
            None => GradFnName::Fixed("FreedBackward"), // unreachable: free() names first
        };
        self.name.set(Some(n));
        n
    }

    /// Names the node as the composite function that made it (`StackBackward0`).
    pub(crate) fn rename(&self, n: GradFnName) {
        self.name.set(Some(n));
    }

    /// Frees the op (a backward without `retain_graph`), keeping its name.
    pub(crate) fn free(&self) {
        self.name();
        self.op.borrow_mut().take();
    }
}

/// Moves the producers this node alone keeps alive onto `stack`.
fn take_sole_producers(edges: &mut Edges, stack: &mut Vec<Rc<Node>>) {
    for e in edges.drain(..) {
        if let Edge::Node(n) = e {
            if Rc::strong_count(&n) == 1 {
                stack.push(n);
            }
        }
    }
}

impl Drop for Node {
    /// Frees the chain of producers iteratively: a graph of a million ops (a loss summed
    /// in a loop) must not recurse once per node on the native stack.
    fn drop(&mut self) {
        if !self.edges.iter().any(|e| matches!(e, Edge::Node(_))) {
            return;
        }
        let mut stack = Vec::new();
        take_sole_producers(&mut self.edges, &mut stack);
        while let Some(mut n) = stack.pop() {
            // Emptied in place when nothing else points at it, so the large record is
            // not copied out of its Rc; a node that saved tensors still point at
            // weakly is moved out instead. Either way it then drops with no edges.
            if let Some(node) = Rc::get_mut(&mut n) {
                take_sole_producers(&mut node.edges, &mut stack);
            } else if let Ok(mut node) = Rc::try_unwrap(n) {
                take_sole_producers(&mut node.edges, &mut stack);
            }
        }
    }
}

/// The IR ops eager code records no node for (no gradient, or composites of others):
/// one or-pattern for the exhaustive matches of rules.rs `op_grad`, names.rs and
/// create.rs, so the three agree.
macro_rules! unrecorded_op {
    () => {
        $crate::ir::IrOp::Input { .. }
            | $crate::ir::IrOp::Const(_)
            | $crate::ir::IrOp::Contiguous
            | $crate::ir::IrOp::ArgExtreme { .. }
            | $crate::ir::IrOp::AllAny { .. }
            | $crate::ir::IrOp::Narrow { .. }
            | $crate::ir::IrOp::Repeat { .. }
            | $crate::ir::IrOp::IndexGrad { .. }
            | $crate::ir::IrOp::Stack { .. }
            | $crate::ir::IrOp::IndexSelect { .. }
            | $crate::ir::IrOp::OneHot { .. }
            | $crate::ir::IrOp::FillLike { .. }
            | $crate::ir::IrOp::SortIndices { .. }
            | $crate::ir::IrOp::ModeIndices { .. }
            | $crate::ir::IrOp::BatchNormRunning { .. }
            | $crate::ir::IrOp::GradKernel(_)
            | $crate::ir::IrOp::Attention { .. }
            | $crate::ir::IrOp::LstmLayer
            | $crate::ir::IrOp::GruLayer { .. }
            | $crate::ir::IrOp::Linalg(_)
            | $crate::ir::IrOp::Scatter { .. }
            | $crate::ir::IrOp::If(_)
            | $crate::ir::IrOp::Loop(_)
            | $crate::ir::IrOp::Out { .. }
            | $crate::ir::IrOp::Print(_)
    };
}
pub(crate) use unrecorded_op;

/// What a primitive op's gradient rule reads besides the op's attributes (those are its
/// [`IrOp`]'s). Which slot holds what is the op's own, written beside its rule in
/// rules.rs; a slot the op does not use stays empty.
#[derive(Default)]
pub struct OpSaved {
    /// The first saved operand (`x`, `a`, where's `cond`) and the second (`b`, conv's
    /// `w`): checked against in-place changes when read.
    pub a: Option<Saved>,
    pub b: Option<Saved>,
    /// The saved output (std's, for var's rule).
    pub out: Option<Saved>,
    /// The shapes of the op's first and second tensor input (`x`'s; a Python scalar
    /// operand's is empty; scatter_add's second is `src`'s, masked_fill's none). Four
    /// dims inline (a node is made per op: its size is memcpy'd on every record).
    pub a_shape: SavedShape,
    pub b_shape: SavedShape,
    /// A tensor the rule reads as it is: the indices of max(dim), gather and
    /// scatter_add, a max pool's argmax, masked_fill's mask.
    pub aux: Option<Tensor>,
    /// The input, while a capture records the forward: its backward then follows the
    /// input's symbolic sizes rather than `a_shape` (sum, mean, max(dim), gather). Held
    /// strongly: the capture does not keep its tensors alive.
    pub src: Option<Tensor>,
    /// What else the rule or the node's name needs.
    pub more: More,
}

/// A shape an [`OpSaved`] keeps: up to four dims inline.
pub type SavedShape = smallvec::SmallVec<[usize; 4]>;

/// The rarer parts of [`OpSaved`].
#[derive(Default)]
pub enum More {
    #[default]
    None,
    /// The call that made a reshape or permute (it names the node).
    View(ViewCall),
    /// cat: each input's size along the dim; amax/amin: the reduced dims.
    Sizes(Vec<usize>),
    /// The indices of an indexing op.
    Index(Vec<TensorIndex>),
    /// A fused primitive's own saved state and rule (batch_norm, layer_norm).
    Kernel(Box<dyn KernelGrad>),
}

/// The saved state and gradient rule of a fused primitive whose rule is a kernel of
/// its own (tensor/norm.rs's batch_norm and layer_norm, autograd/norm_rules.rs).
pub trait KernelGrad {
    /// One gradient per edge, for the output gradient `g`.
    fn grads(&self, g: &Tensor) -> Result<Vec<Option<Tensor>>>;
}

/// A recorded op: a primitive op of the IR (autograd records and IR nodes share the
/// one enum [`IrOp`]; its gradient rule, rules.rs `op_grad`, and its name, names.rs,
/// are exhaustive matches on it), or one of the nodes that exist only in the backward
/// graph.
pub enum BackwardOp {
    /// The forward op with its attributes, and what its rule reads.
    Op { op: IrOp, saved: OpSaved },
    /// A view's history read from its base's after the base was modified in place:
    /// the view's gradient placed into the base's shape.
    AsStrided(ViewMap),
    /// An in-place op on a view, recorded on its base (inputs: the base's old value,
    /// the view's new value): the view region's gradient goes to the new value.
    CopySlices(ViewMap),
    /// `x[indices] = value` recorded on x (inputs: old x, value).
    IndexPut {
        indices: Vec<TensorIndex>,
        value_shape: Dims,
        accumulate: bool,
    },
    /// A fused LSTM layer (`tensor::seq::lstm_layer`); edges xp, h0, c0, W_hh.
    LstmLayer {
        h0: Saved,
        c0: Saved,
        w: Saved,
        out: Saved,
        acts: Tensor,
        /// Set when the forward was recorded as `IrOp::LstmLayer`: the backward then
        /// records its gradient kernels.
        ir: Option<crate::tensor::recurrence::RnnIr>,
    },
    /// A fused GRU layer (`tensor::seq::gru_layer`); edges xp, h0, W_hh (, b_hh).
    GruLayer {
        h0: Saved,
        w: Saved,
        out: Saved,
        saved: Tensor,
        bias: bool,
        /// Set when the forward was recorded as `IrOp::GruLayer` (see `LstmLayer`).
        ir: Option<crate::tensor::recurrence::RnnIr>,
    },
    /// A matrix function of torch.linalg (tensor/linalg_grad.rs); edges A (and B for
    /// `solve`).
    Linalg(Box<crate::tensor::linalg_grad::LinalgGrad>),
    /// Fused scaled dot-product attention; edges q, k, v (the mask is a constant).
    Attention {
        q: Saved,
        k: Saved,
        v: Saved,
        mask: Option<(Vec<f32>, Vec<usize>)>,
        dims: crate::tensor::kernels::attention::Dims,
        out: Saved,
        lse: Tensor,
        /// The mask and scale the forward was captured with (set when it was recorded
        /// as `IrOp::Attention`: the backward then records its gradient kernels).
        ir: Option<crate::tensor::seq::AttnIr>,
    },
    /// A compiled function's recorded backward (one node for all its outputs).
    Compiled(Rc<dyn SharedBackward>),
    /// Differentiable output `index` of a compiled function with several: stashes its
    /// gradient for the shared `Compiled` node (its one edge).
    CompiledOut {
        shared: Rc<dyn SharedBackward>,
        index: usize,
    },
    /// A loop captured by a compiled function (its backward is a reverse loop); reached
    /// through its results' `LoopOut` nodes.
    Loop(Rc<dyn SharedBackward>),
    /// Result `index` of a captured loop: stashes its gradient for the `Loop` node.
    LoopOut {
        shared: Rc<dyn SharedBackward>,
        index: usize,
    },
    /// A tensor `if` captured by a compiled function (its backward is a branch on the
    /// same condition); reached through its results' `BranchOut` nodes.
    Branch(Rc<dyn SharedBackward>),
    /// Result `index` of a captured branch: stashes its gradient for the `Branch` node.
    BranchOut {
        shared: Rc<dyn SharedBackward>,
        index: usize,
    },
}

/// The backward of a compiled function or of a loop it captured, shared by the nodes of
/// its outputs (`compile` implements it; autograd only runs it).
pub trait SharedBackward {
    /// Runs the backward: `g` is the gradient of the node's output (a compiled function
    /// with one differentiable output); a shared node reads the gradients its outputs'
    /// nodes stashed instead.
    fn apply(&self, g: &Tensor) -> Result<Vec<Option<Tensor>>>;
    /// Stashes the gradient `g` of output `index` for the shared node (its outputs'
    /// nodes run this).
    fn stash(&self, index: usize, g: &Tensor) -> Result<Vec<Option<Tensor>>>;
    /// False when the node lives while any of its outputs' nodes does.
    fn freed_by_backward(&self) -> bool;
}

impl BackwardOp {
    /// False for the shared node of a compiled function with several differentiable
    /// outputs: it lives while any output's node does (each of those is freed, so a
    /// second backward through the same output errors as eager).
    pub fn freed_by_backward(&self) -> bool {
        match self {
            BackwardOp::Compiled(c) | BackwardOp::Loop(c) | BackwardOp::Branch(c) => {
                c.freed_by_backward()
            }
            BackwardOp::Op { .. }
            | BackwardOp::AsStrided(_)
            | BackwardOp::CopySlices(_)
            | BackwardOp::IndexPut { .. }
            | BackwardOp::LstmLayer { .. }
            | BackwardOp::GruLayer { .. }
            | BackwardOp::Linalg(_)
            | BackwardOp::Attention { .. }
            | BackwardOp::CompiledOut { .. }
            | BackwardOp::LoopOut { .. }
            | BackwardOp::BranchOut { .. } => true,
        }
    }
}
