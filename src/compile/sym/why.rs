//! Why an input dim cannot stay symbolic: the first node of a graph whose shape rule
//! specialises it when it is the only symbolic dim (for `dynamic_axes` errors).

use super::analyze::Walk;
use super::expr::SymExpr;
use super::fresh_spec;
use crate::compile::ir::{Graph, NodeId};

/// The first node of `g` that fixes the size of input `slot`'s dim `dim`; when none
/// does, the first that does when the regions' reshapes and expands keep their traced
/// sizes (what a `view`/`reshape` with explicit sizes inside a region makes them do);
/// None when neither finds one (then Python code read the size during the capture).
pub fn fixing_node(g: &Graph, slot: usize, dim: usize) -> Option<NodeId> {
    first_fixing(g, slot, dim, false).or_else(|| first_fixing(g, slot, dim, true))
}

fn first_fixing(g: &Graph, slot: usize, dim: usize, fixed_targets: bool) -> Option<NodeId> {
    let shapes: Vec<&[usize]> = g
        .inputs
        .iter()
        .map(|i| g.node(*i).map_or(&[][..], |n| &n.shape[..]))
        .collect();
    let spec = fresh_spec(&shapes, |s, d| s == slot && d == dim);
    let sym = spec.dims.get(slot)?.get(dim).copied().flatten()?;
    let mut w = Walk::new(g, &spec);
    w.ctl.fixed_targets = fixed_targets;
    for (i, node) in g.nodes.iter().enumerate() {
        let id = NodeId(i as u32);
        let s = w.node_shape(id, node, &spec).ok()?;
        w.shapes.push(s);
        if w.solver.norm(&SymExpr::sym(sym)).as_const().is_some() {
            return Some(id);
        }
    }
    None
}
