//! Graph effects: what a captured whole training step does besides computing its
//! outputs. In-place writes into tensors the function did not create (`p.sub_(...)`,
//! optimizer state `m.mul_(b1)`) and `.grad` assignments (`zero_grad`, `backward`'s
//! leaf accumulation) are recorded during capture and replayed after the graph ran,
//! from extra graph outputs, so the step is one graph with no fallback.
//!
//! A write whose value the run computed into a buffer nothing else sees (a kernel's
//! output, not returned, not a `.grad`) exchanges buffers with its target instead of
//! copying: O(1), and the target's old buffer becomes the kernel's next output buffer.

use crate::compile::ir::{Graph, NodeId};
use crate::error::Result;
use crate::tensor::Tensor;

/// The tensor an effect applies to.
#[derive(Clone)]
pub enum Target {
    /// The argument tensor in input slot `n` (a different tensor at each call).
    Slot(usize),
    /// A tensor read by handle: a module parameter, optimizer state, a global.
    Handle(Tensor),
}

/// An effect recorded during capture (values are graph nodes).
#[derive(Clone)]
pub enum Recorded {
    /// The target's elements become the value of `node`.
    Write { target: Target, node: NodeId },
    /// The target's `.grad` becomes the value of `node` (None: cleared).
    SetGrad {
        target: Target,
        node: Option<NodeId>,
    },
}

/// An effect of a compiled version (values are positions in the graph's outputs).
#[derive(Clone)]
pub enum Effect {
    /// `sole`: the value's node is this one graph output (nothing else returns it).
    Write {
        target: Target,
        out: usize,
        sole: bool,
    },
    SetGrad {
        target: Target,
        out: Option<usize>,
    },
}

/// True when both name the same tensor.
pub fn same_target(a: &Target, b: &Target) -> bool {
    match (a, b) {
        (Target::Slot(x), Target::Slot(y)) => x == y,
        (Target::Handle(x), Target::Handle(y)) => x.same(y),
        _ => false,
    }
}

/// Keeps the last effect of each kind per target (only the final state is visible)
/// and appends the values they need to `g.outputs`.
pub fn finish(recorded: Vec<Recorded>, g: &mut Graph) -> Vec<Effect> {
    let mut kept: Vec<Recorded> = Vec::new();
    for r in recorded.into_iter().rev() {
        let dup = kept.iter().any(|k| match (k, &r) {
            (Recorded::Write { target: a, .. }, Recorded::Write { target: b, .. })
            | (Recorded::SetGrad { target: a, .. }, Recorded::SetGrad { target: b, .. }) => {
                same_target(a, b)
            }
            _ => false,
        });
        if !dup {
            kept.push(r);
        }
    }
    kept.reverse();
    let mut out_of = |n: NodeId| {
        g.outputs.push(n);
        g.outputs.len() - 1
    };
    kept.into_iter()
        .map(|r| match r {
            Recorded::Write { target, node } => Effect::Write {
                target,
                out: out_of(node),
                sole: false,
            },
            Recorded::SetGrad { target, node } => Effect::SetGrad {
                target,
                out: node.map(&mut out_of),
            },
        })
        .collect()
}

/// The tensor `t` names in a call whose inputs (arguments first) are `inputs`.
pub fn resolve<'a>(t: &'a Target, inputs: &'a [Tensor]) -> Option<&'a Tensor> {
    match t {
        Target::Slot(i) => inputs.get(*i),
        Target::Handle(h) => Some(h),
    }
}

/// Marks the writes whose value node appears once among the (optimized) graph's
/// `outputs`: their value may be swapped into the target.
pub fn mark_sole(effects: &mut [Effect], outputs: &[NodeId]) {
    for e in effects {
        if let Effect::Write { out, sole, .. } = e {
            let node = outputs.get(*out);
            *sole = node.is_some_and(|n| outputs.iter().filter(|o| *o == n).count() == 1);
        }
    }
}

/// Writes `v` into `t` by exchanging their buffers when both are whole contiguous
/// buffers of one dtype and shape; false when it cannot (the caller copies).
fn swap_into(t: &Tensor, v: &Tensor) -> bool {
    t.dtype() == v.dtype()
        && t.shape() == v.shape()
        && t.is_whole()
        && v.is_whole()
        && t.storage().swap_buffers(v.storage())
}

/// Applies `effects` after a run: `inputs` are the run's input tensors (by slot),
/// `outs` its outputs. Writes bump the targets' versions like eager in-place ops.
/// `private(v)`: `v` is held only by `outs` and the graph's own buffer reuse, so its
/// buffer may be given away.
pub fn apply(
    effects: &[Effect],
    inputs: &[Tensor],
    outs: &[Tensor],
    private: impl Fn(&Tensor) -> bool,
) -> Result<()> {
    let missing = || {
        crate::error::Error::new(
            crate::error::ErrorKind::RuntimeError,
            "internal compile error: an effect's value is missing",
            None,
        )
    };
    for e in effects {
        match e {
            Effect::Write { target, out, sole } => {
                let (Some(t), Some(v)) = (resolve(target, inputs), outs.get(*out)) else {
                    return Err(missing());
                };
                if v.same(t) || (*sole && private(v) && swap_into(t, v)) {
                    continue;
                }
                t.overwrite(v)?;
            }
            Effect::SetGrad { target, out } => {
                let t = resolve(target, inputs).ok_or_else(missing)?;
                let g = match out {
                    Some(i) => Some(outs.get(*i).cloned().ok_or_else(missing)?),
                    None => None,
                };
                t.set_grad(g);
            }
        }
    }
    Ok(())
}
