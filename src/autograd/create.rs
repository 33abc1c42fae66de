//! Higher-order gradients (`create_graph=True`): a sweep that builds a differentiable
//! gradient runs the rules with grad mode on and keeps the node whose rule runs here, so
//! its saved tensors unpack as the originals (with their history: the saved input's
//! producer, the leaf itself, or this node for its own output) instead of detached
//! handles. Rules computed by raw kernels refuse instead of returning a gradient that
//! silently lacks part of its history.

use super::node::unrecorded_op;
use super::node::{BackwardOp, Node};
use crate::error::{ErrorKind, Result};
use crate::tensor::err;
use std::cell::RefCell;
use std::rc::Rc;

thread_local! {
    static APPLYING: RefCell<Option<Rc<Node>>> = const { RefCell::new(None) };
}

/// The node whose rule a create-graph sweep is running (None outside one).
pub(crate) fn applying() -> Option<Rc<Node>> {
    APPLYING.with(|a| a.borrow().clone())
}

/// Restores the previous node when dropped.
#[must_use]
pub(crate) struct Applying(Option<Rc<Node>>);

impl Drop for Applying {
    fn drop(&mut self) {
        let prev = self.0.take();
        APPLYING.with(|a| *a.borrow_mut() = prev);
    }
}

/// Marks `node`'s rule as running in a create-graph sweep until the guard drops;
/// `RuntimeError` for an op whose rule is not differentiable.
pub(crate) fn apply_differentiably(node: &Rc<Node>, op: &BackwardOp) -> Result<Applying> {
    if let Some(what) = not_differentiable(op) {
        return Err(err(
            ErrorKind::RuntimeError,
            format!(
                "double backward is not supported for {what} ({}): create_graph=True needs \
                 a differentiable gradient rule",
                node.name()
            ),
        ));
    }
    let prev = APPLYING.with(|a| a.borrow_mut().replace(node.clone()));
    Ok(Applying(prev))
}

/// The ops whose gradient rule runs a kernel with no autograd of its own (its result
/// would carry no history, so a second derivative through it would be silently zero).
fn not_differentiable(op: &BackwardOp) -> Option<&'static str> {
    use crate::ir::IrOp as O;
    use BackwardOp as B;
    Some(match op {
        B::Op { op, .. } => match op {
            O::Prod { .. } => "prod",
            O::Conv2d { .. } => "conv2d",
            O::MaxPool2d { .. } => "max_pool2d",
            O::AvgPool2d { .. } => "avg_pool2d",
            O::Unary(_)
            | O::Binary(_)
            | O::BinaryScalar { .. }
            | O::Clamp { .. }
            | O::Where
            | O::Cast(_)
            | O::Clone
            | O::Sum { .. }
            | O::Mean { .. }
            | O::ExtremeAll { .. }
            | O::ExtremeDim { .. }
            | O::Var { .. }
            | O::LogSumExp { .. }
            | O::Norm { .. }
            | O::Softmax { .. }
            | O::LogSoftmax { .. }
            | O::Cumsum { .. }
            | O::Reshape { .. }
            | O::Permute { .. }
            | O::Expand { .. }
            | O::Index { .. }
            | O::Matmul
            | O::BatchNorm { .. }
            | O::LayerNorm { .. }
            | O::GroupNorm { .. }
            | O::Cat { .. }
            | O::Gather { .. }
            | O::ScatterAdd { .. }
            | O::MaskedFill { .. } => return None,
            // no node is recorded for these (rules.rs `op_grad` refuses them)
            unrecorded_op!() => return None,
        },
        B::LstmLayer { .. } => "the fused LSTM layer",
        B::GruLayer { .. } => "the fused GRU layer",
        B::Attention { .. } => "scaled_dot_product_attention",
        B::AsStrided(_) => "a view modified in place",
        B::CopySlices(_) => "an in-place op on a view",
        B::Linalg(_) => "the torch.linalg functions",
        B::Compiled(_)
        | B::CompiledOut { .. }
        | B::Loop(_)
        | B::LoopOut { .. }
        | B::Branch(_)
        | B::BranchOut { .. } => {
            "a compiled function (call it uncompiled to take higher-order gradients)"
        }
        B::IndexPut { .. } => return None,
    })
}
