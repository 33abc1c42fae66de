//! The tensor-level IR of `@compile`: a typed SSA `Graph` of primitive tensor ops with
//! static shapes, dtypes and the source span each node came from.
//!
//! Layering: this module holds the IR's data types and the capture recorder interface
//! (`record`) only, at the level of the tensor library that records into them; what
//! builds, checks, optimizes and runs graphs is `crate::compile` (which re-exports these
//! types as `compile::ir`).
//!
//! Nodes are appended in execution order; a node's args always precede it (checked by
//! `verify`). Each `IrOp` mirrors one tensor-library entry point, so the executor runs a
//! node by calling the same function eager code calls. Passes (fold, CSE, DCE, fusion)
//! rewrite graphs and re-run `verify::verify` after each step. Control flow (`If`,
//! `Loop`) nests graphs as regions; see `control`.

pub mod breaks;
pub mod control;
pub mod grad_kernel;
pub mod record;
pub mod record_op;
pub mod sym;

use crate::optable::{BinaryOp, UnaryOp};
use crate::source::Span;
use crate::tensor::creation::Fill;
use crate::tensor::dtype::{DType, Scalar};
use crate::tensor::kernels::conv::{ConvParams, PoolParams};
use crate::tensor::linalg_ops::LinalgOp;
use crate::tensor::shape::Dims;
use crate::tensor::Tensor;
use control::{Branch, LoopSpec, PrintSpec};
pub use grad_kernel::GradKernel;
use std::fmt;

/// The index of a node in `Graph::nodes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

impl NodeId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}", self.0)
    }
}

/// One step from an argument to a tensor nested inside it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PathStep {
    /// Position in the argument list, a list or a tuple.
    Index(usize),
    /// A dict key (its repr).
    Key(String),
}

/// Where an `Input` node's tensor comes from at each call.
#[derive(Debug, Clone, PartialEq)]
pub enum InputKind {
    /// A tensor argument, or one nested in a list/tuple/dict argument, by position path
    /// (the first step is the argument's position).
    Arg(Vec<PathStep>),
    /// A tensor the function read that it did not receive nor create: a module
    /// parameter, a global, a closed-over tensor. Read by handle at every call (never a
    /// baked constant); `name` describes its origin for dumps (`self.w`, `W`).
    External { name: String },
    /// Input `slot` of a region (a nested graph of a control node): bound to a value the
    /// enclosing node passes (see `control`).
    Bound,
}

/// One entry of an `Index` node's index list; tensor indices refer to the node's args
/// (`arg` is a position in `Node::args`, always >= 1 since arg 0 is the indexed tensor).
#[derive(Debug, Clone, PartialEq)]
pub enum IrIndex {
    Int(i64),
    Slice {
        start: Option<i64>,
        stop: Option<i64>,
        step: Option<i64>,
    },
    /// A unit-step slice `[start:start + len]` whose length follows symbolic sizes:
    /// `len` is its capture-time length, `sym` the length over input dims
    /// ([`sym::dim_ref`]); a symbolic graph re-evaluates `len` per call (its `targets`).
    SymSlice {
        start: i64,
        len: i64,
        sym: sym::SymExpr,
    },
    NewAxis,
    Ellipsis,
    /// A bool mask tensor.
    Mask {
        arg: usize,
    },
    /// An int64 index tensor.
    Indices {
        arg: usize,
    },
}

/// A primitive tensor op. Dims are normalised (non-negative, sorted where a set).
#[derive(Debug, Clone)]
pub enum IrOp {
    /// Graph input number `slot` (its position in `Graph::inputs`).
    Input {
        slot: usize,
        kind: InputKind,
    },
    /// A tensor created from Python data during capture (deterministic given guards).
    Const(Tensor),
    Unary(UnaryOp),
    Binary(BinaryOp),
    /// `a op s`, or `s op a` when `reverse`.
    BinaryScalar {
        op: BinaryOp,
        scalar: Scalar,
        reverse: bool,
    },
    Clamp {
        min: Option<f64>,
        max: Option<f64>,
    },
    /// `where(cond, a, b)`.
    Where,
    Cast(DType),
    /// A differentiable contiguous copy (`clone`).
    Clone,
    /// Contiguous layout (a copy only when the input is not contiguous).
    Contiguous,
    Sum {
        dims: Vec<usize>,
        keepdim: bool,
    },
    Mean {
        dims: Vec<usize>,
        keepdim: bool,
    },
    Prod {
        dims: Vec<usize>,
        keepdim: bool,
    },
    /// Max or min over all elements (a 0-d result).
    ExtremeAll {
        is_min: bool,
    },
    /// The values of max/min along `dim`.
    ExtremeDim {
        dim: usize,
        keepdim: bool,
        is_min: bool,
    },
    /// argmax/argmin along `dim`, or of the flattened tensor when `dim` is None.
    ArgExtreme {
        dim: Option<usize>,
        keepdim: bool,
        is_min: bool,
    },
    /// var, or std when `std`.
    Var {
        dims: Vec<usize>,
        correction: f64,
        keepdim: bool,
        std: bool,
    },
    LogSumExp {
        dims: Vec<usize>,
        keepdim: bool,
    },
    Norm {
        p: f64,
        dims: Vec<usize>,
        keepdim: bool,
    },
    /// all / any.
    AllAny {
        dims: Vec<usize>,
        keepdim: bool,
        any: bool,
    },
    Softmax {
        dim: usize,
    },
    LogSoftmax {
        dim: usize,
    },
    /// Cumulative sum along `dim`, from the end when `reverse` (cumsum's gradient).
    Cumsum {
        dim: usize,
        reverse: bool,
    },
    /// Reshape (view when possible) to a fully known shape (also squeeze/unsqueeze/
    /// flatten/view).
    Reshape {
        shape: Dims,
    },
    Permute {
        perm: Vec<usize>,
    },
    /// `sym[i]`, when given, is dim `i`'s size over input dims ([`sym::dim_ref`]): a
    /// size that came from a symbolic int rather than from the input (`zeros(T, C)`);
    /// empty when every target size follows the input or is fixed.
    Expand {
        shape: Dims,
        sym: Box<[Option<sym::SymExpr>]>,
    },
    Narrow {
        dim: usize,
        start: usize,
        len: usize,
    },
    Repeat {
        reps: Vec<usize>,
    },
    /// Basic and advanced indexing; tensor indices are args after the indexed tensor.
    Index {
        indices: Vec<IrIndex>,
    },
    /// The gradient of an `Index` of a tensor of shape `shape`: zeros with the gradient
    /// (arg 0) accumulated at `indices` (tensor indices are the args after it).
    IndexGrad {
        shape: Dims,
        indices: Box<[IrIndex]>,
    },
    Matmul,
    /// conv2d(x, w) or conv2d(x, w, bias) when `bias`.
    Conv2d {
        params: ConvParams,
        bias: bool,
    },
    MaxPool2d {
        params: PoolParams,
    },
    AvgPool2d {
        params: PoolParams,
    },
    /// batch_norm (tensor::norm): args x, the running mean and var unless `training`,
    /// then the weight and the bias when present.
    BatchNorm {
        training: bool,
        eps: f64,
        weight: bool,
        bias: bool,
    },
    /// A running statistic after a training batch: `(1 - momentum) * old + momentum *
    /// stat(x)` (args: old, x), stat the batch mean, or the unbiased variance (its
    /// factor `n / (n - 1)` from x's size as it runs) when `var`; recorded as an
    /// in-place effect on the buffer.
    BatchNormRunning {
        momentum: f64,
        var: bool,
    },
    /// layer_norm over the last `dims` dims: args x, then the weight and the bias
    /// when present.
    LayerNorm {
        dims: usize,
        eps: f64,
        weight: bool,
        bias: bool,
    },
    /// group_norm of x `[N, C, *]` in `groups` groups of channels: args x, then the
    /// per-channel weight and bias when present.
    GroupNorm {
        groups: usize,
        eps: f64,
        weight: bool,
        bias: bool,
    },
    /// Fused scaled dot-product attention (`tensor::seq`): args q `[*, L, E]`, k
    /// `[*, S, E]`, v `[*, S, Ev]` of one batch shape, then the mask when `mask` (bool:
    /// keep, float: added); `scale` None is `1/sqrt(E)`. Dropout is never captured.
    Attention {
        causal: bool,
        scale: Option<f64>,
        mask: bool,
    },
    /// One fused LSTM layer direction (`tensor::recurrence`): args xp `[T, B, 4H]`, h0,
    /// c0 `[B, H]`, W_hh `[4H, H]`; the rows `[T, B, 2H]` (each step's h, then c).
    LstmLayer,
    /// One fused GRU layer direction: args xp `[T, B, 3H]`, h0 `[B, H]`, W_hh
    /// `[3H, H]`, then b_hh `[3H]` when `bias`; the hidden states `[T, B, H]`.
    GruLayer {
        bias: bool,
    },
    Cat {
        dim: usize,
    },
    Stack {
        dim: usize,
    },
    IndexSelect {
        dim: usize,
    },
    Gather {
        dim: usize,
    },
    ScatterAdd {
        dim: usize,
    },
    /// `scatter(dim, index, src)` of a tensor `src` (args x, index, src): the last write
    /// stands where indices repeat (`Tensor::scatter_overwrite`).
    Scatter {
        dim: usize,
    },
    OneHot {
        num_classes: usize,
    },
    /// The int64 positions that sort the arg along `dim` (stable; `k`: only the first
    /// k, `topk`'s), tensor/sorting.rs `sorted_positions`.
    SortIndices {
        dim: usize,
        descending: bool,
        k: Option<usize>,
    },
    /// The int64 position (dim kept, size 1) of the most frequent value along `dim`,
    /// tensor/sorting.rs `mode_positions` (`mode`'s indices).
    ModeIndices {
        dim: usize,
    },
    MaskedFill {
        value: Scalar,
    },
    /// A fresh tensor of the arg's shape filled by `fill` as `dtype` (`zeros_like`,
    /// `rand_like`, dropout's mask); a random fill is an effect (it draws the generator).
    FillLike {
        fill: Fill,
        dtype: DType,
    },
    /// A gradient computed by its dedicated eager kernel (see `GradKernel`).
    GradKernel(GradKernel),
    /// A torch.linalg matrix function run by its eager kernel (tensor/linalg_ops.rs).
    Linalg(LinalgOp),
    /// A branch: only the taken side runs (see `control::Branch`).
    If(Box<Branch>),
    /// A loop with loop-carried values (see `control::LoopSpec`).
    Loop(Box<LoopSpec>),
    /// Result `index` of the control node that is arg 0.
    Out {
        index: usize,
    },
    /// Writes text with tensor holes at run time (see `control::PrintSpec`).
    Print(Box<PrintSpec>),
}

impl IrOp {
    /// The op's name in dumps (PyTorch-like function names).
    pub fn name(&self) -> &'static str {
        match self {
            IrOp::Input { .. } => "input",
            IrOp::Const(_) => "const",
            IrOp::Unary(op) => op.name(),
            IrOp::Binary(op) | IrOp::BinaryScalar { op, .. } => op.name(),
            IrOp::Clamp { .. } => "clamp",
            IrOp::Where => "where",
            IrOp::Cast(_) => "cast",
            IrOp::Clone => "clone",
            IrOp::Contiguous => "contiguous",
            IrOp::Sum { .. } => "sum",
            IrOp::Mean { .. } => "mean",
            IrOp::Prod { .. } => "prod",
            IrOp::ExtremeAll { is_min } | IrOp::ExtremeDim { is_min, .. } => {
                if *is_min {
                    "min"
                } else {
                    "max"
                }
            }
            IrOp::ArgExtreme { is_min, .. } => {
                if *is_min {
                    "argmin"
                } else {
                    "argmax"
                }
            }
            IrOp::Var { std, .. } => {
                if *std {
                    "std"
                } else {
                    "var"
                }
            }
            IrOp::LogSumExp { .. } => "logsumexp",
            IrOp::Norm { .. } => "norm",
            IrOp::AllAny { any, .. } => {
                if *any {
                    "any"
                } else {
                    "all"
                }
            }
            IrOp::Softmax { .. } => "softmax",
            IrOp::LogSoftmax { .. } => "log_softmax",
            IrOp::Cumsum { .. } => "cumsum",
            IrOp::Reshape { .. } => "reshape",
            IrOp::Permute { .. } => "permute",
            IrOp::Expand { .. } => "expand",
            IrOp::Narrow { .. } => "narrow",
            IrOp::Repeat { .. } => "repeat",
            IrOp::Index { .. } => "index",
            IrOp::IndexGrad { .. } => "index_backward",
            IrOp::GradKernel(k) => k.name(),
            IrOp::Matmul => "matmul",
            IrOp::Conv2d { .. } => "conv2d",
            IrOp::MaxPool2d { .. } => "max_pool2d",
            IrOp::AvgPool2d { .. } => "avg_pool2d",
            IrOp::BatchNorm { .. } => "batch_norm",
            IrOp::BatchNormRunning { .. } => "batch_norm_running",
            IrOp::LayerNorm { .. } => "layer_norm",
            IrOp::GroupNorm { .. } => "group_norm",
            IrOp::Attention { .. } => "scaled_dot_product_attention",
            IrOp::LstmLayer => "lstm_layer",
            IrOp::GruLayer { .. } => "gru_layer",
            IrOp::Cat { .. } => "cat",
            IrOp::Stack { .. } => "stack",
            IrOp::IndexSelect { .. } => "index_select",
            IrOp::Gather { .. } => "gather",
            IrOp::ScatterAdd { .. } => "scatter_add",
            IrOp::Scatter { .. } => "scatter",
            IrOp::Linalg(l) => l.name(),
            IrOp::OneHot { .. } => "one_hot",
            IrOp::SortIndices { .. } => "sort",
            IrOp::ModeIndices { .. } => "mode",
            IrOp::MaskedFill { .. } => "masked_fill",
            IrOp::FillLike { fill, .. } => match fill {
                Fill::Value(_) => "full_like",
                Fill::Uniform { .. } => "uniform_like",
                Fill::Normal { .. } => "normal_like",
                Fill::Bernoulli { .. } => "bernoulli_like",
            },
            IrOp::If(_) => "if",
            IrOp::Loop(_) => "loop",
            IrOp::Out { .. } => "out",
            IrOp::Print(_) => "print",
        }
    }

    /// The number of args the op takes, or None when variadic (cat, stack, index).
    pub fn arity(&self) -> Option<usize> {
        match self {
            IrOp::Input { .. } | IrOp::Const(_) => Some(0),
            IrOp::Binary(_)
            | IrOp::Matmul
            | IrOp::IndexSelect { .. }
            | IrOp::Gather { .. }
            | IrOp::MaskedFill { .. } => Some(2),
            IrOp::Where | IrOp::ScatterAdd { .. } | IrOp::Scatter { .. } => Some(3),
            IrOp::Linalg(l) => Some(l.arity()),
            IrOp::BatchNormRunning { .. } => Some(2),
            IrOp::BatchNorm {
                training,
                weight,
                bias,
                ..
            } => {
                Some(1 + usize::from(*weight) + usize::from(*bias) + if *training { 0 } else { 2 })
            }
            IrOp::LayerNorm { weight, bias, .. } | IrOp::GroupNorm { weight, bias, .. } => {
                Some(1 + usize::from(*weight) + usize::from(*bias))
            }
            IrOp::Conv2d { bias, .. } => Some(if *bias { 3 } else { 2 }),
            IrOp::Attention { mask, .. } => Some(3 + usize::from(*mask)),
            IrOp::LstmLayer => Some(4),
            IrOp::GruLayer { bias } => Some(3 + usize::from(*bias)),
            IrOp::GradKernel(k) => Some(k.arity()),
            IrOp::Cat { .. }
            | IrOp::Stack { .. }
            | IrOp::Index { .. }
            | IrOp::IndexGrad { .. }
            | IrOp::If(_)
            | IrOp::Loop(_)
            | IrOp::Print(_) => None,
            IrOp::Unary(_)
            | IrOp::BinaryScalar { .. }
            | IrOp::Clamp { .. }
            | IrOp::Cast(_)
            | IrOp::Clone
            | IrOp::Contiguous
            | IrOp::Sum { .. }
            | IrOp::Mean { .. }
            | IrOp::Prod { .. }
            | IrOp::ExtremeAll { .. }
            | IrOp::ExtremeDim { .. }
            | IrOp::ArgExtreme { .. }
            | IrOp::Var { .. }
            | IrOp::LogSumExp { .. }
            | IrOp::Norm { .. }
            | IrOp::AllAny { .. }
            | IrOp::Softmax { .. }
            | IrOp::LogSoftmax { .. }
            | IrOp::Cumsum { .. }
            | IrOp::Reshape { .. }
            | IrOp::Permute { .. }
            | IrOp::Expand { .. }
            | IrOp::Narrow { .. }
            | IrOp::Repeat { .. }
            | IrOp::MaxPool2d { .. }
            | IrOp::AvgPool2d { .. }
            | IrOp::OneHot { .. }
            | IrOp::FillLike { .. }
            | IrOp::SortIndices { .. }
            | IrOp::ModeIndices { .. }
            | IrOp::Out { .. } => Some(1),
        }
    }

    /// True for ops that only compute from their args (no input, no constant).
    pub fn is_compute(&self) -> bool {
        !matches!(self, IrOp::Input { .. } | IrOp::Const(_))
    }

    /// True for control nodes (`If`, `Loop`): several results, read with `Out`.
    pub fn is_control(&self) -> bool {
        matches!(self, IrOp::If(_) | IrOp::Loop(_))
    }
}

/// One SSA value: an op applied to earlier nodes, with its static result type.
#[derive(Debug, Clone)]
pub struct Node {
    pub op: IrOp,
    pub args: Vec<NodeId>,
    pub dtype: DType,
    pub shape: Dims,
    /// The source expression that produced it (None for inputs read by handle).
    pub span: Option<Span>,
}

/// A captured function body: nodes in execution order, its inputs (the `Input`
/// nodes, in slot order) and its tensor outputs (a node may appear several times).
///
/// Symbolic sizes: `sym` is set on a graph compiled with symbolic dims (by
/// `@compile(dynamic=True)` or an automatic dynamic recompile). Then `Node::shape` is
/// the capture-time example and `sym.shapes[i]` node `i`'s shape as affine expressions
/// over symbols `s0, s1, ...`; `sym.inputs[slot][dim]` says which input dims are
/// symbolic (an ONNX export names those axes), `sym.min[s]` the least size accepted,
/// and `sym.targets` the reshape/expand nodes whose target shape is symbolic (the
/// runtime evaluates them per call). See `compile::sym`. Passes drop `sym` (they
/// rebuild the graph); it is recomputed on the optimized graph.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    pub nodes: Vec<Node>,
    pub inputs: Vec<NodeId>,
    pub outputs: Vec<NodeId>,
    pub sym: Option<Box<sym::SymInfo>>,
    /// In a region (a branch side, a loop's condition or body) as captured: the sizes
    /// Python code read of its values (a node and dim, None for all), which the
    /// symbolic analysis specialises (the top level's are the capture's hints). Passes
    /// drop them with `sym`.
    pub size_reads: Vec<(NodeId, Option<usize>)>,
}

impl Graph {
    pub fn new() -> Graph {
        Graph::default()
    }

    /// Appends a node and returns its id.
    pub fn push(&mut self, node: Node) -> NodeId {
        let id = NodeId(self.nodes.len() as u32);
        self.nodes.push(node);
        id
    }

    /// Appends an `Input` node at the next slot.
    pub fn add_input(
        &mut self,
        kind: InputKind,
        dtype: DType,
        shape: Dims,
        span: Option<Span>,
    ) -> NodeId {
        let slot = self.inputs.len();
        let id = self.push(Node {
            op: IrOp::Input { slot, kind },
            args: Vec::new(),
            dtype,
            shape,
            span,
        });
        self.inputs.push(id);
        id
    }

    /// The node `id`, or None when out of range.
    pub fn node(&self, id: NodeId) -> Option<&Node> {
        self.nodes.get(id.index())
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// How many times each node is used (as an arg or an output).
    pub fn use_counts(&self) -> Vec<usize> {
        let mut uses = vec![0usize; self.nodes.len()];
        let all = self.nodes.iter().flat_map(|n| n.args.iter());
        for id in all.chain(self.outputs.iter()) {
            if let Some(u) = uses.get_mut(id.index()) {
                *u += 1;
            }
        }
        uses
    }
}
