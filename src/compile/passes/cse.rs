//! Common-subexpression elimination: two nodes applying the same op to the same args
//! compute the same value (every IR op is a pure function of its args), so the later
//! one is replaced by the earlier. Inputs, constants, control nodes and prints are never
//! merged.

use super::rebuild::Rebuild;
use crate::compile::ir::{Graph, IrOp, NodeId};
use crate::error::Result;
use std::collections::HashMap;

/// A key identifying a node's computation, or None for nodes never merged.
fn key(op: &IrOp, args: &[NodeId]) -> Option<String> {
    match op {
        IrOp::Input { .. } | IrOp::Const(_) => None,
        // Effects run once per occurrence; regions are not compared.
        _ if op.has_effect() || op.is_control() => None,
        // The op's full description (kind and attributes) plus its args.
        _ => Some(format!("{op:?}{args:?}")),
    }
}

/// Merges duplicate computations.
pub fn cse(g: Graph) -> Result<Graph> {
    let mut rb = Rebuild::new(&g);
    let mut seen: HashMap<String, NodeId> = HashMap::new();
    for node in &g.nodes {
        let n = rb.remapped(node)?;
        match key(&n.op, &n.args) {
            Some(k) => match seen.get(&k) {
                Some(&earlier) => rb.map_to(earlier),
                None => {
                    let id = rb.push(n);
                    rb.map_to(id);
                    seen.insert(k, id);
                }
            },
            None => {
                let id = rb.push(n);
                rb.map_to(id);
            }
        }
    }
    rb.finish(&g)
}
