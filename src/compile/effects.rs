//! Graph effects: what a captured whole training step does besides computing its
//! outputs. In-place writes into tensors the function did not create (`p.sub_(...)`,
//! optimizer state `m.mul_(b1)`) and `.grad` assignments (`zero_grad`, `backward`'s
//! leaf accumulation) are recorded during capture and replayed after the graph ran,
//! from extra graph outputs, so the step is one graph with no fallback.

use super::ir::{Graph, NodeId};
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
    Write { target: Target, out: usize },
    SetGrad { target: Target, out: Option<usize> },
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
            },
            Recorded::SetGrad { target, node } => Effect::SetGrad {
                target,
                out: node.map(&mut out_of),
            },
        })
        .collect()
}

fn resolve<'a>(t: &'a Target, inputs: &'a [Tensor]) -> Option<&'a Tensor> {
    match t {
        Target::Slot(i) => inputs.get(*i),
        Target::Handle(h) => Some(h),
    }
}

/// Applies `effects` after a run: `inputs` are the run's input tensors (by slot),
/// `outs` its outputs. Writes bump the targets' versions like eager in-place ops.
pub fn apply(effects: &[Effect], inputs: &[Tensor], outs: &[Tensor]) -> Result<()> {
    let missing = || {
        crate::error::Error::new(
            crate::error::ErrorKind::RuntimeError,
            "internal compile error: an effect's value is missing",
            None,
        )
    };
    for e in effects {
        match e {
            Effect::Write { target, out } => {
                let (Some(t), Some(v)) = (resolve(target, inputs), outs.get(*out)) else {
                    return Err(missing());
                };
                if !v.same(t) {
                    t.overwrite(v)?;
                }
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
