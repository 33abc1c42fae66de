//! Dead-code elimination: drops every node no output depends on (inputs always stay,
//! since their slots are the compiled function's calling convention; so do nodes with an
//! effect, i.e. prints).

use super::rebuild::Rebuild;
use crate::compile::ir::{Graph, IrOp};
use crate::error::Result;

/// Which nodes the outputs depend on (inputs count as live).
fn live(g: &Graph) -> Vec<bool> {
    let mut live = vec![false; g.len()];
    for o in &g.outputs {
        if let Some(l) = live.get_mut(o.index()) {
            *l = true;
        }
    }
    for i in (0..g.len()).rev() {
        let node = &g.nodes[i];
        if matches!(node.op, IrOp::Input { .. }) || node.op.has_effect() {
            live[i] = true;
        }
        if live[i] {
            for a in &node.args {
                if let Some(l) = live.get_mut(a.index()) {
                    *l = true;
                }
            }
        }
    }
    live
}

/// Removes dead nodes.
pub fn dce(g: Graph) -> Result<Graph> {
    let live = live(&g);
    let mut rb = Rebuild::new(&g);
    for (node, &keep) in g.nodes.iter().zip(&live) {
        if keep {
            rb.copy(node)?;
        } else {
            // Never read: no live node uses it. Map it to node 0 to keep indices aligned.
            rb.map_to(crate::compile::ir::NodeId(0));
        }
    }
    rb.finish(&g)
}
