//! PyTorch's names of backward nodes (`grad_fn=<MulBackward0>`, `t.grad_fn`): one
//! exhaustive match on [`BackwardOp`] and, for a primitive op's node, on its [`IrOp`]. An op-table row's name is PyTorch's own rule
//! (torchgen's `create_op_name`: each `_`-separated part of the op name title-cased, then
//! `Backward0`, so `log1p` is `Log1PBackward0`); the overload number and the ops PyTorch
//! decomposes differently (a Python scalar operand, `square`, full reductions, indexing,
//! matmul by rank) follow what PyTorch 2.15 prints. Known differences are listed in
//! docs/LANGUAGE.md ("Printing tensors").

use super::node::unrecorded_op;
use super::node::{BackwardOp, More, OpSaved, Saved, ViewCall};
use crate::ir::IrOp;
use crate::optable::{BinaryOp, UnaryOp};
use crate::tensor::indexing::TensorIndex;
use crate::tensor::linalg_grad::LinalgGrad;
use std::fmt;

/// The name of a backward node, kept compact (nodes are made per op) and written out
/// only when shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GradFnName {
    /// `<Title(name)>Backward0` of an op-table row.
    Row(&'static str),
    /// A name as it prints.
    Fixed(&'static str),
}

impl fmt::Display for GradFnName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GradFnName::Row(name) => {
                // Python's str.title() of each part: a letter after a non-letter is upper
                let mut after_letter = false;
                for c in name.chars() {
                    if c != '_' {
                        let out = if after_letter {
                            c.to_ascii_lowercase()
                        } else {
                            c.to_ascii_uppercase()
                        };
                        write!(f, "{out}")?;
                    }
                    after_letter = c.is_ascii_alphabetic();
                }
                f.write_str("Backward0")
            }
            GradFnName::Fixed(s) => f.write_str(s),
        }
    }
}

fn unary(op: UnaryOp) -> GradFnName {
    match op {
        // torch.square is pow(x, 2)
        UnaryOp::Square => GradFnName::Fixed("PowBackward0"),
        _ => GradFnName::Row(op.name()),
    }
}

/// A binary node: `scalar` says which operand, if any, was a Python scalar (`Some(true)`
/// the left one: `1 - x` is PyTorch's `RsubBackward1`, `2 ** x` its `PowBackward2`).
fn binary(op: BinaryOp, scalar: Option<bool>) -> GradFnName {
    use GradFnName::Fixed;
    match (op, scalar) {
        (BinaryOp::Sub, Some(true)) => Fixed("RsubBackward1"),
        // torch's remainder(Tensor, Scalar) is overload 0, (Tensor, Tensor) overload 1
        (BinaryOp::Rem, None) => Fixed("RemainderBackward1"),
        (BinaryOp::Pow, None) => Fixed("PowBackward1"),
        (BinaryOp::Pow, Some(true)) => Fixed("PowBackward2"),
        // `2 / x` is reciprocal(x) * 2
        (BinaryOp::Div, Some(true)) => Fixed("MulBackward0"),
        // PyTorch's floor_divide node is not differentiable
        (BinaryOp::FloorDiv, _) => Fixed("NotImplemented"),
        (_, None | Some(_)) => GradFnName::Row(op.name()),
    }
}

/// Basic indexing applies its indices in order and the node is the last one applied
/// (a full `:` inside a tuple applies nothing; nothing applied is an alias); any tensor
/// index makes the whole an advanced index.
fn index(in_shape: &[usize], indices: &[TensorIndex]) -> GradFnName {
    use GradFnName::Fixed;
    use TensorIndex as I;
    if indices
        .iter()
        .any(|i| matches!(i, I::Mask(_) | I::Indices(_)))
    {
        return Fixed("IndexBackward0");
    }
    if let [I::Slice { .. }] = indices {
        return Fixed("SliceBackward0");
    }
    let consumed = indices
        .iter()
        .filter(|i| matches!(i, I::Int(_) | I::Slice { .. }))
        .count();
    let mut dim = 0;
    let mut last = Fixed("AliasBackward0");
    for i in indices {
        match i {
            I::Int(_) => {
                last = Fixed("SelectBackward0");
                dim += 1;
            }
            I::Slice { start, stop, step } => {
                let n = in_shape.get(dim).copied().unwrap_or(0) as i64;
                let full = start.unwrap_or(0) == 0
                    && stop.is_none_or(|s| s >= n)
                    && step.unwrap_or(1) == 1;
                if !full {
                    last = Fixed("SliceBackward0");
                }
                dim += 1;
            }
            I::NewAxis => last = Fixed("UnsqueezeBackward0"),
            I::Ellipsis => dim += in_shape.len().saturating_sub(consumed),
            I::Mask(_) | I::Indices(_) => {}
        }
    }
    last
}

/// `a @ b` as PyTorch's matmul dispatches it by rank (batched: a bmm viewed back,
/// `UnsafeViewBackward0`; `torch.bmm` itself would be `BmmBackward0`).
fn matmul(a: &Saved, b: &Saved) -> GradFnName {
    GradFnName::Fixed(match (a.ndim(), b.ndim()) {
        (1, 1) => "DotBackward0",
        (2, 1) => "MvBackward0",
        (2, 2) => "MmBackward0",
        (1, _) => "SqueezeBackward4",
        _ => "UnsafeViewBackward0",
    })
}

fn linalg(l: &LinalgGrad) -> GradFnName {
    GradFnName::Fixed(match l {
        LinalgGrad::Inv(_) => "LinalgInvExBackward0",
        LinalgGrad::Det(_) => "LinalgDetBackward0",
        LinalgGrad::LogAbsDet(_) | LinalgGrad::SlogdetSign => "LinalgSlogdetBackward0",
        LinalgGrad::Solve { .. } => "LinalgSolveExBackward0",
        LinalgGrad::Cholesky { .. } => "LinalgCholeskyExBackward0",
        LinalgGrad::Qr(..) => "LinalgQrBackward0",
        LinalgGrad::Svd(..) => "LinalgSvdBackward0",
        LinalgGrad::EighValues(_) | LinalgGrad::EighVectors { .. } => "LinalgEighBackward0",
        LinalgGrad::Pinv { .. } => "LinalgPinvBackward0",
    })
}

/// A reshape (`permute`: a permute) node by the call that made it.
fn view(permute: bool, call: ViewCall) -> GradFnName {
    GradFnName::Fixed(match call {
        ViewCall::View if permute => "PermuteBackward0",
        ViewCall::View => "ViewBackward0",
        ViewCall::UnsafeView => "UnsafeViewBackward0",
        ViewCall::Unsqueeze => "UnsqueezeBackward0",
        ViewCall::SqueezeAll => "SqueezeBackward0",
        ViewCall::SqueezeDim => "SqueezeBackward1",
        ViewCall::SqueezeDims => "SqueezeBackward2",
        ViewCall::T => "TBackward0",
        ViewCall::Transpose => "TransposeBackward0",
    })
}

/// PyTorch's overload number of a reduction: 0 for the all-dims form, 1 for `dim=`.
fn reduction(all: &'static str, dim: &'static str, full: bool) -> GradFnName {
    GradFnName::Fixed(if full { all } else { dim })
}

/// The name of a primitive op's node (`s`: what it saved).
fn op_name(op: &IrOp, s: &OpSaved) -> GradFnName {
    use GradFnName::Fixed;
    use IrOp as O;
    let full = |in_rank: usize, dims: &[usize], keepdim: bool| !keepdim && dims.len() == in_rank;
    match op {
        O::Binary(op) => binary(*op, None),
        O::BinaryScalar { op, reverse, .. } => binary(*op, Some(*reverse)),
        O::Unary(op) => unary(*op),
        O::Clamp { .. } => Fixed("ClampBackward1"),
        O::Where => Fixed("WhereBackward0"),
        O::Clone => Fixed("CloneBackward0"),
        O::Cast(_) => Fixed("ToCopyBackward0"),
        O::Sum { dims, keepdim } => reduction(
            "SumBackward0",
            "SumBackward1",
            full(s.a_shape.len(), dims, *keepdim),
        ),
        O::Mean { dims, keepdim } => reduction(
            "MeanBackward0",
            "MeanBackward1",
            full(s.a_shape.len(), dims, *keepdim),
        ),
        O::ExtremeDim { is_min, .. } => Fixed(if *is_min {
            "MinBackward0"
        } else {
            "MaxBackward0"
        }),
        O::ExtremeAll { is_min } => Fixed(match (&s.more, is_min) {
            (More::Sizes(_), true) => "AminBackward0",
            (More::Sizes(_), false) => "AmaxBackward0",
            (_, true) => "MinBackward1",
            (_, false) => "MaxBackward1",
        }),
        O::Var { std, .. } => Fixed(if *std { "StdBackward0" } else { "VarBackward0" }),
        O::Prod { dims, keepdim } => reduction(
            "ProdBackward0",
            "ProdBackward1",
            full(s.a.as_ref().map_or(0, Saved::ndim), dims, *keepdim),
        ),
        O::LogSumExp { .. } => Fixed("LogsumexpBackward0"),
        O::Softmax { .. } => Fixed("SoftmaxBackward0"),
        O::LogSoftmax { .. } => Fixed("LogSoftmaxBackward0"),
        O::Cumsum { .. } => Fixed("CumsumBackward0"),
        O::Norm { .. } => Fixed("LinalgVectorNormBackward0"),
        O::Reshape { .. } | O::Permute { .. } => {
            let call = match s.more {
                More::View(c) => c,
                _ => ViewCall::View,
            };
            view(matches!(op, O::Permute { .. }), call)
        }
        O::Expand { .. } => Fixed("ExpandBackward0"),
        O::Index { .. } => match &s.more {
            More::Index(indices) => index(&s.a_shape, indices),
            _ => Fixed("IndexBackward0"),
        },
        O::Gather { .. } => Fixed("GatherBackward0"),
        O::ScatterAdd { .. } => Fixed("ScatterAddBackward0"),
        O::MaskedFill { .. } => Fixed("MaskedFillBackward0"),
        O::Cat { .. } => Fixed("CatBackward0"),
        O::Matmul => match (&s.a, &s.b) {
            (Some(a), Some(b)) => matmul(a, b),
            _ => Fixed("MmBackward0"),
        },
        O::Conv2d { .. } => Fixed("ConvolutionBackward0"),
        O::MaxPool2d { .. } => Fixed("MaxPool2DWithIndicesBackward0"),
        O::AvgPool2d { .. } => Fixed("AvgPool2DBackward0"),
        O::BatchNorm { .. } => Fixed("NativeBatchNormBackward0"),
        O::LayerNorm { .. } => Fixed("NativeLayerNormBackward0"),
        O::GroupNorm { .. } => Fixed("NativeGroupNormBackward0"),
        // ops eager code records no node for (rules.rs `op_grad` refuses them)
        unrecorded_op!() => Fixed("NotImplemented"),
    }
}

impl BackwardOp {
    /// PyTorch's name of this node.
    pub fn grad_fn_name(&self) -> GradFnName {
        use GradFnName::Fixed;
        match self {
            BackwardOp::Op { op, saved } => op_name(op, saved),
            BackwardOp::AsStrided(_) => Fixed("AsStridedBackward0"),
            BackwardOp::CopySlices(_) => Fixed("CopySlices"),
            BackwardOp::IndexPut { .. } => Fixed("IndexPutBackward0"),
            // PyTorch's CPU kernels: a fused LSTM layer, a GRU's stacked steps
            BackwardOp::LstmLayer { .. } => Fixed("MkldnnRnnLayerBackward0"),
            BackwardOp::GruLayer { .. } => Fixed("StackBackward0"),
            BackwardOp::Linalg(l) => linalg(l),
            BackwardOp::Attention { .. } => Fixed("ScaledDotProductFlashAttentionForCpuBackward0"),
            // torch.compile's name for a compiled function's outputs
            BackwardOp::Compiled(_) | BackwardOp::CompiledOut { .. } => {
                Fixed("CompiledFunctionBackward")
            }
            // Kiln's own: a loop captured inside a compiled function
            BackwardOp::Loop(_) => Fixed("LoopBackward"),
            BackwardOp::LoopOut { .. } => Fixed("LoopOutputBackward"),
            // and a tensor `if` captured inside one
            BackwardOp::Branch(_) => Fixed("BranchBackward"),
            BackwardOp::BranchOut { .. } => Fixed("BranchOutputBackward"),
        }
    }
}

/// Names the node that made `out` as the composite function that ran (torch's one node,
/// e.g. `StackBackward0` where Kiln recorded unsqueeze and cat), when that node is the
/// composite's own (made at or after `since`, from [`super::next_node_id`]).
pub fn name_composite(out: &crate::tensor::Tensor, since: u64, name: &'static str) {
    if let Some(n) = out.grad_fn().filter(|n| n.id >= since) {
        n.rename(GradFnName::Fixed(name));
    }
}

/// Names the node of `out` after an in-place op as torch's node for that op, when the
/// op made it (at or after `since`) as a whole-tensor write (`IndexPutBackward0`; a
/// write through a view stays `CopySlices`, as in torch).
pub fn name_inplace(out: &crate::tensor::Tensor, since: u64, name: &'static str) {
    if let Some(n) = out.grad_fn().filter(|n| n.id >= since) {
        if n.name() == GradFnName::Fixed("IndexPutBackward0") {
            n.rename(GradFnName::Fixed(name));
        }
    }
}

/// The nodes PyTorch records for the functions Kiln's stdlib writes as several
/// primitives (nn.functional's losses and activations), which the stdlib names through
/// `_name_node` (tests/golden/torchapi/grad_fn_losses.dl, whose .out is torch's).
const STDLIB_COMPOSITES: &[&str] = &[
    "MseLossBackward0",
    "SmoothL1LossBackward0",
    "HuberLossBackward0",
    "NllLossBackward0",
    "DivBackward1",
    "BinaryCrossEntropyBackward0",
    "BinaryCrossEntropyWithLogitsBackward0",
    "LeakyReluBackward0",
    "EluBackward0",
    "SoftplusBackward0",
    "LogSigmoidBackward0",
    "HardtanhBackward0",
    "EmbeddingBackward0",
    "UnsafeViewBackward0",
    "NativeGroupNormBackward0",
    "CeluBackward0",
    "MishBackward0",
    "HardswishBackward0",
    "HardsigmoidBackward0",
    "GluBackward0",
    "ConstantPadNdBackward0",
    "LinalgVectorNormBackward0",
    "LinalgSolveExBackward0",
    "LinalgLstsqBackward0",
];

/// `name` as one of the stdlib composites' node names.
pub fn stdlib_composite(name: &str) -> Option<&'static str> {
    STDLIB_COMPOSITES.iter().copied().find(|&n| n == name)
}
