//! Control-flow and effect nodes of the IR: a branch (`IrOp::If`), a loop (`IrOp::Loop`),
//! reading one result of either (`IrOp::Out`) and `IrOp::Print`.
//!
//! Regions: each side of a branch and a loop's condition and body is a nested [`Graph`]
//! (a *region*). A region's inputs are `Input { kind: InputKind::Bound, slot }` nodes
//! bound, in slot order, to values the enclosing node passes (listed below per op); its
//! `outputs` are returned to the node. Regions capture nothing implicitly: every outer
//! value a region reads is an arg of the control node, so passes can treat a control
//! node as one opaque op of its args (and recurse into its regions separately).
//!
//! A control node computes several tensors (a tuple); its own `Node::dtype`/`shape` are
//! the placeholder `bool[]` and its results are read with `Out { index }` nodes, whose
//! type is the region output's type. A node with an effect (`Print`, or a control node
//! whose regions print) is never removed, merged or reordered across other effects.

use crate::compile::ir::{Graph, IrOp};

pub use crate::ir::control::{Branch, LoopSpec, PrintPiece, PrintSpec, TripCount};

impl IrOp {
    /// True when running the node has an effect besides its value (a print or a random
    /// draw, directly or in a region): never removed, merged or moved across another effect.
    pub fn has_effect(&self) -> bool {
        match self {
            IrOp::Print(_) => true,
            // a draw advances the generator: never merged, dropped or reordered
            IrOp::FillLike { fill, .. } => fill.is_random(),
            IrOp::If(_) | IrOp::Loop(_) => regions(self).iter().any(|(_, g)| has_effect(g)),
            // pure: listed one by one so that a new op must say whether it has an effect
            // (CSE and DCE would merge or drop an effectful op silently)
            IrOp::Input { .. }
            | IrOp::Const(_)
            | IrOp::Unary(_)
            | IrOp::Binary(_)
            | IrOp::BinaryScalar { .. }
            | IrOp::Clamp { .. }
            | IrOp::Where
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
            | IrOp::Index { .. }
            | IrOp::IndexGrad { .. }
            | IrOp::Matmul
            | IrOp::Conv2d { .. }
            | IrOp::MaxPool2d { .. }
            | IrOp::AvgPool2d { .. }
            | IrOp::BatchNorm { .. }
            | IrOp::BatchNormRunning { .. }
            | IrOp::LayerNorm { .. }
            | IrOp::GroupNorm { .. }
            | IrOp::Attention { .. }
            | IrOp::LstmLayer
            | IrOp::GruLayer { .. }
            | IrOp::Cat { .. }
            | IrOp::Stack { .. }
            | IrOp::IndexSelect { .. }
            | IrOp::Gather { .. }
            | IrOp::ScatterAdd { .. }
            | IrOp::Scatter { .. }
            | IrOp::Linalg(_)
            | IrOp::OneHot { .. }
            | IrOp::SortIndices { .. }
            | IrOp::ModeIndices { .. }
            | IrOp::MaskedFill { .. }
            | IrOp::GradKernel(_)
            | IrOp::Out { .. } => false,
        }
    }
}

impl LoopSpec {
    /// The number of loop-invariant args given the node's arg count.
    pub fn invariants(&self, n_args: usize) -> usize {
        n_args.saturating_sub(self.carried)
    }
}

/// The nested regions of a control op, in execution order (for verify, dumps, passes).
pub fn regions(op: &crate::compile::ir::IrOp) -> Vec<(&'static str, &Graph)> {
    use crate::compile::ir::IrOp;
    match op {
        IrOp::If(b) => vec![("then", &b.then_g), ("else", &b.else_g)],
        IrOp::Loop(l) => {
            let mut v = Vec::with_capacity(2);
            if let Some(c) = &l.cond {
                v.push(("cond", c));
            }
            v.push(("body", &l.body));
            v
        }
        _ => Vec::new(),
    }
}

/// True when running `g` has an effect besides its outputs (it prints).
pub fn has_effect(g: &Graph) -> bool {
    g.nodes.iter().any(|n| n.op.has_effect())
}
