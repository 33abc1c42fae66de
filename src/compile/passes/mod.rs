//! Graph-to-graph optimization passes over the tensor IR, one file per pass:
//! constant folding, algebraic simplification, matmul layout rewrites,
//! input projections hoisted out of loops (`hoist`), loop-invariant code motion
//! (`licm`), common-subexpression elimination
//! and dead-code elimination. [`optimize`] runs them in order and verifies the graph after
//! each one (a failure is an internal compile error naming the pass). `fuse` finds the
//! elementwise groups that `lower::compile_graph` compiles into kernels.

mod cse;
mod dce;
mod fold;
pub mod fuse;
mod fuse_merge;
mod gelu;
mod hoist;
mod layout;
mod licm;
mod rebuild;
mod relabel;
mod simplify;

use super::ir::{Graph, IrOp};
use crate::compile::ir::verify::verify;
use crate::error::Result;

pub use cse::cse;
pub use dce::dce;
pub use fold::fold;
pub use hoist::hoist;
pub use layout::layout;
pub use licm::licm;
pub use simplify::simplify;

/// A pass: consumes a verified graph and returns an equivalent one.
pub type Pass = fn(Graph) -> Result<Graph>;

/// The passes [`optimize`] runs, in order, with their names (for logs and dumps).
pub const PIPELINE: [(&str, Pass); 7] = [
    ("fold", fold),
    ("simplify", simplify),
    ("layout", layout),
    ("hoist", hoist),
    ("licm", licm),
    ("cse", cse),
    ("dce", dce),
];

/// Verifies `g`, optimizes the regions of its control nodes (each on its own: a
/// control node is opaque to the passes of the graph holding it), then runs every pass
/// of [`PIPELINE`], verifying after each.
pub fn optimize(mut g: Graph) -> Result<Graph> {
    verify(&g)?;
    for node in &mut g.nodes {
        optimize_regions(&mut node.op)?;
    }
    PIPELINE
        .iter()
        .try_fold(g, |g, (name, pass)| run_pass(g, name, *pass))
}

fn optimize_regions(op: &mut IrOp) -> Result<()> {
    let opt = |g: &mut Graph| -> Result<()> {
        *g = optimize(std::mem::take(g))?;
        Ok(())
    };
    match op {
        IrOp::If(b) => {
            opt(&mut b.then_g)?;
            opt(&mut b.else_g)
        }
        IrOp::Loop(l) => {
            if let Some(c) = &mut l.cond {
                opt(c)?;
            }
            opt(&mut l.body)
        }
        _ => Ok(()),
    }
}

/// Runs one pass and verifies its result; a verify failure names the pass.
pub fn run_pass(g: Graph, name: &str, pass: Pass) -> Result<Graph> {
    let out = pass(g)?;
    verify(&out).map_err(|mut e| {
        e.message = format!("after pass {name}: {}", e.message);
        e
    })?;
    Ok(out)
}

#[cfg(test)]
mod relabel_tests;
#[cfg(test)]
mod tests;
