//! `record_op`: the one wrapper a primitive op runs through to be captured by
//! `@compile` (the only place ops talk to the capture recorder, `ir::record`), and `grad_node`, the
//! "record an autograd node when an input needs a gradient" step of its eager part.

use crate::autograd::{self, BackwardOp};
use crate::error::Result;
use crate::ir::record as trace;
use crate::ir::IrOp;
use crate::tensor::Tensor;

/// Runs `eager` (the op's kernel and autograd node) and, when this is the outermost
/// library call of a `@compile` capture, records `ir(out)` as the graph node computing
/// its result from `args`. Ops that `eager` calls are not recorded themselves.
#[inline]
pub fn record_op(
    args: &[&Tensor],
    ir: impl FnOnce(&Tensor) -> IrOp,
    eager: impl FnOnce() -> Result<Tensor>,
) -> Result<Tensor> {
    let sc = trace::scope();
    let out = eager()?;
    sc.record(|| ir(&out), args, &out);
    Ok(out)
}

/// Runs `eager` (an op with several results) and, when this is the outermost library
/// call of a `@compile` capture, records `ir(i)` as the node computing result `i` from
/// `args` (one node per result).
pub fn record_parts(
    args: &[&Tensor],
    ir: impl Fn(usize) -> IrOp,
    eager: impl FnOnce() -> Result<Vec<Tensor>>,
) -> Result<Vec<Tensor>> {
    let sc = trace::scope();
    let outs = eager()?;
    for (i, out) in outs.iter().enumerate() {
        sc.record(|| ir(i), args, out);
    }
    Ok(outs)
}

/// Runs `eager` (a creation op) and, inside a capture, records its result as a graph
/// constant.
#[inline]
pub fn record_const(eager: impl FnOnce() -> Result<Tensor>) -> Result<Tensor> {
    let sc = trace::scope();
    let out = eager()?;
    sc.record_const(&out);
    Ok(out)
}

/// Records `node()` as the backward of `out` when grad mode is on and one of `inputs`
/// requires grad.
#[inline]
pub fn grad_node(out: &Tensor, inputs: &[&Tensor], node: impl FnOnce() -> BackwardOp) {
    if autograd::needs_grad(inputs) {
        autograd::record(out, node(), inputs);
    }
}
