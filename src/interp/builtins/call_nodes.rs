//! PyTorch's node names for the tensor methods (and their function forms) that Kiln
//! computes from several primitives, so `y.grad_fn` prints torch's one node
//! (`FlipBackward0`, `SortBackward0`, ...) rather than Kiln's last primitive. The rows
//! are torch 2.15's names (tests/golden/torchapi/grad_fn_calls.dl, whose .out is
//! torch's); the overload number follows the arguments where torch's does.

use super::tensor::Args;
use crate::autograd::names::{name_composite, name_inplace};
use crate::interp::value::Value;
use crate::tensor::Tensor;

/// Whether argument `i` / `name` of the call is a tensor.
fn is_tensor(a: &Args, i: usize, name: &str) -> bool {
    matches!(a.get(i, name), Some(Value::Tensor(_)))
}

/// The node torch records for method `name` of `t` called with `a`, when Kiln's last
/// primitive would name it otherwise.
fn node_of(t: &Tensor, name: &str, a: &Args) -> Option<&'static str> {
    let by =
        |tensor: bool, yes: &'static str, no: &'static str| Some(if tensor { yes } else { no });
    match name {
        "nan_to_num" => Some("NanToNumBackward0"),
        "fmod" => by(is_tensor(a, 0, "other"), "FmodBackward1", "FmodBackward0"),
        "atan2" | "arctan2" => Some("Atan2Backward0"),
        "lerp" => by(is_tensor(a, 1, "weight"), "LerpBackward1", "LerpBackward0"),
        "logit" => Some("LogitBackward0"),
        "aminmax" => Some("AminmaxBackward0"),
        "cummax" => Some("CummaxBackward0"),
        "cummin" => Some("CumminBackward0"),
        "logcumsumexp" => Some("LogcumsumexpBackward0"),
        "median" => by(
            a.get(0, "dim").is_some(),
            "MedianBackward1",
            "MedianBackward0",
        ),
        "mode" => Some("ModeBackward0"),
        "quantile" => Some("SqueezeBackward4"),
        "sort" => Some("SortBackward0"),
        "topk" => Some("TopkBackward0"),
        "kthvalue" => Some("KthvalueBackward0"),
        "flip" => Some("FlipBackward0"),
        "roll" => Some("RollBackward0"),
        // torch repeats an int count through expand and a view
        "repeat_interleave" if !is_tensor(a, 0, "repeats") => Some("ViewBackward0"),
        "diag" => by(
            t.ndim() == 1,
            "DiagEmbedBackward0",
            "DiagonalBackward0_copy",
        ),
        "diagonal" => Some("DiagonalBackward0"),
        "diag_embed" => Some("DiagEmbedBackward0"),
        "index_add" => Some("IndexAddBackward0"),
        "masked_select" => Some("MaskedSelectBackward0"),
        "take" => Some("TakeBackward0"),
        "bmm" => Some("BmmBackward0"),
        "vdot" => Some("VdotBackward0"),
        "kron" => Some("UnsafeViewBackward0"),
        "cross" => Some("LinalgCrossBackward0"),
        "dist" => Some("DistBackward0"),
        _ => None,
    }
}

/// The node torch records for in-place method `name` on a tensor that is not a view
/// (Kiln writes the whole tensor, an `IndexPutBackward0`; on a view both are
/// `CopySlices`).
fn inplace_node_of(name: &str, a: &Args) -> Option<&'static str> {
    Some(match name {
        "exp_" => "ExpBackward0",
        "fill_" if is_tensor(a, 0, "value") => "FillBackward3",
        "fill_" => "FillBackward2",
        "zero_" => "ZeroBackward0",
        "copy_" => "CopyBackwards",
        "masked_fill_" => "MaskedFillBackward0",
        "index_add_" => "IndexAddBackward0",
        "scatter_" if is_tensor(a, 2, "src") => "ScatterBackward0",
        "scatter_" => "ScatterBackward1",
        "scatter_add_" => "ScatterAddBackward0",
        _ => return None,
    })
}

/// Names the nodes (made since `since`) of the tensors method `name` returned.
pub fn name_result(t: &Tensor, name: &str, a: &Args, since: u64, v: &Value) {
    // most calls record nothing (no gradient, or no_grad): skip the name lookup
    if crate::autograd::next_node_id() == since {
        return;
    }
    let fresh = |x: &Value| match x {
        Value::Tensor(o) => o.grad_fn().is_some_and(|n| n.id >= since),
        _ => false,
    };
    let recorded = match v {
        Value::Tuple(items) => items.iter().any(fresh),
        v => fresh(v),
    };
    if !recorded {
        return;
    }
    if let Some(node) = inplace_node_of(name, a) {
        if let Value::Tensor(out) = v {
            name_inplace(out, since, node);
        }
        return;
    }
    let Some(node) = node_of(t, name, a) else {
        return;
    };
    match v {
        Value::Tensor(out) => name_composite(out, since, node),
        Value::Tuple(items) => {
            for item in items.iter() {
                if let Value::Tensor(out) = item {
                    name_composite(out, since, node);
                }
            }
        }
        _ => {}
    }
}
