//! Values one node of a graph computes on the way that other nodes would compute
//! again: a max_pool2d forward's argmax (its backward routes the gradient through it,
//! as eager's node does), a training batch_norm's batch statistics (read by the
//! running statistics' updates and the gradient kernels) and batch_norm's gradients
//! (the input and the parameter parts are two nodes; one kernel computes both).
//! `find` pairs the nodes of a graph being lowered; when it runs, a producer stores its
//! value in the run's side table and its consumers read it. Each falls back to its
//! node's own op (the same numbers, recomputed) when a value is missing or a capture
//! is recording (the side kernels record nothing).

use crate::compile::ir::{Graph, IrOp, Node, NodeId};
use crate::compile::runtime::exec::batch_norm_args;
use crate::error::Result;
use crate::ir::grad_kernel::{GradKernel, NormPart};
use crate::tensor::{linalg, norm, views, Tensor};

/// How a node takes part.
#[derive(Debug, Clone, Copy)]
pub(super) enum Side {
    /// max_pool2d storing its argmax in slot `.0`.
    PoolForward(usize),
    /// max_pool2d's backward reading the argmax in slot `.0`.
    PoolBackward(usize),
    /// batch_norm in training storing its statistics in slot `.0`.
    NormForward(usize),
    /// A running statistic's update from the statistics in slot `.0`.
    NormRunning(usize),
    /// A gradient part of batch_norm from the statistics in slot `stats`; with `both`
    /// (the graph has the other part on the same args too) the first part to run
    /// computes both and leaves the other in slot `grads`.
    NormGrad {
        stats: usize,
        grads: usize,
        both: bool,
    },
}

/// A value of the side table.
pub(super) enum Value {
    Argmax(Tensor),
    Stats(norm::BnStats),
    /// batch_norm's input gradient, and its weight and bias gradients stacked `[2, C]`.
    Grads(Option<Tensor>, Option<Tensor>),
}

/// The side roles of `g`'s nodes (among those `free` accepts) and the number of slots
/// a run's table needs.
pub(super) fn find(g: &Graph, free: impl Fn(usize) -> bool) -> (Vec<(usize, Side)>, usize) {
    let mut roles: Vec<Option<Side>> = vec![None; g.nodes.len()];
    let mut slots = 0;
    for (f, node) in g.nodes.iter().enumerate() {
        if roles[f].is_some() || !free(f) {
            continue;
        }
        let Some(&x) = node.args.first() else {
            continue;
        };
        let later = |want: &dyn Fn(&Node) -> bool| -> Vec<usize> {
            let rest = g.nodes.iter().enumerate().skip(f + 1);
            rest.filter(|(j, n)| roles[*j].is_none() && free(*j) && want(n))
                .map(|(j, _)| j)
                .collect()
        };
        match &node.op {
            IrOp::MaxPool2d { params } => {
                let users = later(&|n| {
                    n.args.first() == Some(&x)
                        && matches!(&n.op, IrOp::GradKernel(GradKernel::MaxPool2d { params: p }) if p == params)
                });
                if users.is_empty() {
                    continue;
                }
                roles[f] = Some(Side::PoolForward(slots));
                for j in users {
                    roles[j] = Some(Side::PoolBackward(slots));
                }
                slots += 1;
            }
            IrOp::BatchNorm {
                training: true,
                eps,
                ..
            } => {
                let running = later(&|n| {
                    matches!(n.op, IrOp::BatchNormRunning { .. }) && n.args.get(1) == Some(&x)
                });
                let grads = later(&|n| {
                    n.args.first() == Some(&x)
                        && matches!(&n.op, IrOp::GradKernel(GradKernel::BatchNorm { training: true, eps: e, .. }) if e == eps)
                });
                if running.is_empty() && grads.is_empty() {
                    continue;
                }
                let stats = slots;
                slots += 1;
                roles[f] = Some(Side::NormForward(stats));
                for j in running {
                    roles[j] = Some(Side::NormRunning(stats));
                }
                // The parts on the same args (x, weight, g) share one gradient slot.
                let mut groups: Vec<(&[NodeId], Vec<usize>)> = Vec::new();
                for j in grads {
                    let args = g.nodes[j].args.as_slice();
                    match groups.iter_mut().find(|(a, _)| *a == args) {
                        Some((_, js)) => js.push(j),
                        None => groups.push((args, vec![j])),
                    }
                }
                for (_, js) in groups {
                    let both = js.len() > 1;
                    for &j in &js {
                        roles[j] = Some(Side::NormGrad {
                            stats,
                            grads: slots,
                            both,
                        });
                    }
                    slots += 1;
                }
            }
            _ => {}
        }
    }
    let roles = roles.into_iter().enumerate();
    (roles.filter_map(|(i, r)| Some((i, r?))).collect(), slots)
}

/// Runs node `node` in role `side` on `args`, with the run's side `table`; `own` runs
/// the node's own op.
pub(super) fn run(
    side: Side,
    node: &Node,
    args: &[Tensor],
    table: &mut [Option<Value>],
    own: impl FnOnce() -> Result<Tensor>,
) -> Result<Tensor> {
    if crate::ir::record::active() {
        return own();
    }
    match (side, &node.op, args) {
        (Side::PoolForward(k), IrOp::MaxPool2d { params }, [x]) if x.ndim() == 4 => {
            let (y, argmax) = linalg::max_pool2d_with_indices(x, *params)?;
            put(table, k, Value::Argmax(argmax));
            Ok(y)
        }
        (Side::PoolBackward(k), _, [x, g]) => match table.get(k) {
            Some(Some(Value::Argmax(a))) => linalg::max_pool2d_grad_checked(x.shape(), a, g),
            _ => own(),
        },
        (Side::NormForward(k), op @ IrOp::BatchNorm { .. }, [x, ..]) => {
            let (y, stats) = norm::batch_norm_stats(x, &batch_norm_args(op, args)?)?;
            put(table, k, Value::Stats(stats));
            Ok(y)
        }
        (Side::NormRunning(k), IrOp::BatchNormRunning { momentum, var }, [old, x]) => {
            match table.get(k) {
                Some(Some(Value::Stats(norm::BnStats { batch: Some(b), .. }))) => {
                    norm::batch_norm_running_of(old, x.shape(), b, *momentum, *var)
                }
                _ => own(),
            }
        }
        (
            Side::NormGrad { stats, grads, both },
            IrOp::GradKernel(GradKernel::BatchNorm { part, weight, .. }),
            _,
        ) => match norm_grad(stats, grads, both, *part, *weight, args, table)? {
            Some(t) => Ok(t),
            None => own(),
        },
        _ => own(),
    }
}

/// Stores `v` in slot `k` (a slot out of range keeps nothing: consumers fall back).
fn put(table: &mut [Option<Value>], k: usize, v: Value) {
    if let Some(s) = table.get_mut(k) {
        *s = Some(v);
    }
}

/// A batch_norm gradient part: left by the other part, or computed from the stored
/// statistics (with both parts when `both`, leaving the other one); None when the
/// statistics are missing.
fn norm_grad(
    stats: usize,
    grads: usize,
    both: bool,
    part: NormPart,
    weight: bool,
    args: &[Tensor],
    table: &mut [Option<Value>],
) -> Result<Option<Tensor>> {
    if let Some(Some(Value::Grads(dx, p))) = table.get_mut(grads) {
        let left = match part {
            NormPart::Input => dx.take(),
            NormPart::Params => p.take(),
        };
        if left.is_some() {
            return Ok(left);
        }
    }
    let Some(Some(Value::Stats(st))) = table.get(stats) else {
        return Ok(None);
    };
    let (Some(x), Some(g)) = (args.first(), args.last()) else {
        return Ok(None);
    };
    let w = if weight { args.get(1) } else { None };
    let input = matches!(part, NormPart::Input);
    let need = match both {
        true => (true, true, true),
        false => (input, !input, !input),
    };
    let (dx, dw, db) = norm::batch_norm_grads(x, w, (&st.mean, &st.rstd), true, g, need)?;
    let params = match (dw, db) {
        (Some(dw), Some(db)) => Some(views::stack(&[dw, db], 0)?),
        _ => None,
    };
    let (mine, other) = match part {
        NormPart::Input => (dx, (None, params)),
        NormPart::Params => (params, (dx, None)),
    };
    if both {
        put(table, grads, Value::Grads(other.0, other.1));
    }
    Ok(mine)
}
