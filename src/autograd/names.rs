//! PyTorch's names of backward nodes (`grad_fn=<MulBackward0>`, `t.grad_fn`): one
//! exhaustive match on [`BackwardOp`]. An op-table row's name is PyTorch's own rule
//! (torchgen's `create_op_name`: each `_`-separated part of the op name title-cased, then
//! `Backward0`, so `log1p` is `Log1PBackward0`); the overload number and the ops PyTorch
//! decomposes differently (a Python scalar operand, `square`, full reductions, indexing,
//! matmul by rank) follow what PyTorch 2.15 prints. Known differences are listed in
//! docs/LANGUAGE.md ("Printing tensors").

use super::node::{BackwardOp, Saved, ScalarOperand};
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

fn binary(op: BinaryOp, scalar: ScalarOperand) -> GradFnName {
    use GradFnName::Fixed;
    use ScalarOperand::{Left, Neither, Right};
    match (op, scalar) {
        (BinaryOp::Sub, Left) => Fixed("RsubBackward1"),
        (BinaryOp::Pow, Neither) => Fixed("PowBackward1"),
        (BinaryOp::Pow, Left) => Fixed("PowBackward2"),
        // `2 / x` is reciprocal(x) * 2
        (BinaryOp::Div, Left) => Fixed("MulBackward0"),
        // PyTorch's floor_divide node is not differentiable
        (BinaryOp::FloorDiv, _) => Fixed("NotImplemented"),
        (_, Neither | Left | Right) => GradFnName::Row(op.name()),
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
        LinalgGrad::LogAbsDet(_) => "LinalgSlogdetBackward0",
        LinalgGrad::Solve { .. } => "LinalgSolveExBackward0",
        LinalgGrad::Cholesky { .. } => "LinalgCholeskyExBackward0",
        LinalgGrad::Qr(..) => "LinalgQrBackward0",
        LinalgGrad::Svd(..) => "LinalgSvdBackward0",
        LinalgGrad::EighValues(_) | LinalgGrad::EighVectors { .. } => "LinalgEighBackward0",
        LinalgGrad::Pinv { .. } => "LinalgPinvBackward0",
    })
}

/// PyTorch's overload number of a reduction: 0 for the all-dims form, 1 for `dim=`.
fn reduction(all: &'static str, dim: &'static str, full: bool) -> GradFnName {
    GradFnName::Fixed(if full { all } else { dim })
}

impl BackwardOp {
    /// PyTorch's name of this node.
    pub fn grad_fn_name(&self) -> GradFnName {
        use GradFnName::Fixed;
        let full =
            |in_rank: usize, dims: &[usize], keepdim: bool| !keepdim && dims.len() == in_rank;
        match self {
            BackwardOp::Binary { op, scalar, .. } => binary(*op, *scalar),
            BackwardOp::Unary { op, .. } => unary(*op),
            BackwardOp::Clamp { .. } => Fixed("ClampBackward1"),
            BackwardOp::Where { .. } => Fixed("WhereBackward0"),
            BackwardOp::Identity => Fixed("CloneBackward0"),
            BackwardOp::ToCopy => Fixed("ToCopyBackward0"),
            BackwardOp::Sum {
                in_shape,
                dims,
                keepdim,
                divisor,
                ..
            } => {
                let full = full(in_shape.len(), dims, *keepdim);
                if *divisor == 1 {
                    reduction("SumBackward0", "SumBackward1", full)
                } else {
                    reduction("MeanBackward0", "MeanBackward1", full)
                }
            }
            BackwardOp::ExtremeDim { is_min, .. } => Fixed(if *is_min {
                "MinBackward0"
            } else {
                "MaxBackward0"
            }),
            BackwardOp::ExtremeAll { is_min, dims, .. } => Fixed(match (dims, is_min) {
                (None, true) => "MinBackward1",
                (None, false) => "MaxBackward1",
                (Some(_), true) => "AminBackward0",
                (Some(_), false) => "AmaxBackward0",
            }),
            BackwardOp::Var { std_out, .. } => Fixed(if std_out.is_some() {
                "StdBackward0"
            } else {
                "VarBackward0"
            }),
            BackwardOp::Prod { x, dims, keepdim } => reduction(
                "ProdBackward0",
                "ProdBackward1",
                full(x.ndim(), dims, *keepdim),
            ),
            BackwardOp::LogSumExp { .. } => Fixed("LogsumexpBackward0"),
            BackwardOp::Softmax { .. } => Fixed("SoftmaxBackward0"),
            BackwardOp::LogSoftmax { .. } => Fixed("LogSoftmaxBackward0"),
            BackwardOp::Cumsum { .. } => Fixed("CumsumBackward0"),
            BackwardOp::Norm { .. } => Fixed("LinalgVectorNormBackward0"),
            BackwardOp::Reshape { .. } => Fixed("ViewBackward0"),
            BackwardOp::Permute { .. } => Fixed("PermuteBackward0"),
            BackwardOp::Expand { .. } => Fixed("ExpandBackward0"),
            BackwardOp::Index { in_shape, indices } => index(in_shape, indices),
            BackwardOp::AsStrided(_) => Fixed("AsStridedBackward0"),
            BackwardOp::CopySlices(_) => Fixed("CopySlices"),
            BackwardOp::IndexPut { .. } => Fixed("IndexPutBackward0"),
            BackwardOp::Gather { .. } => Fixed("GatherBackward0"),
            BackwardOp::ScatterAdd { .. } => Fixed("ScatterAddBackward0"),
            BackwardOp::MaskedFill { .. } => Fixed("MaskedFillBackward0"),
            BackwardOp::Cat { .. } => Fixed("CatBackward0"),
            BackwardOp::Matmul { a, b } => matmul(a, b),
            BackwardOp::Conv2d { .. } => Fixed("ConvolutionBackward0"),
            BackwardOp::MaxPool2d { .. } => Fixed("MaxPool2DWithIndicesBackward0"),
            BackwardOp::AvgPool2d { .. } => Fixed("AvgPool2DBackward0"),
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
        }
    }
}
