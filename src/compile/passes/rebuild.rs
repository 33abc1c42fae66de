//! Rebuilding a graph in order: every pass walks the old nodes once and appends copies
//! or replacements to a new graph, so SSA order and input slots hold by construction.

use crate::compile::internal;
use crate::compile::ir::control::LoopSpec;
use crate::compile::ir::{Graph, IrOp, Node, NodeId};
use crate::error::Result;

/// The new graph being built and where each old node went.
pub(crate) struct Rebuild {
    pub g: Graph,
    /// `map[old]` is the new node standing for old node `old`.
    map: Vec<NodeId>,
}

impl Rebuild {
    pub fn new(old: &Graph) -> Rebuild {
        Rebuild {
            g: Graph::new(),
            map: Vec::with_capacity(old.len()),
        }
    }

    /// The new node standing for old node `old`.
    pub fn get(&self, old: NodeId) -> Result<NodeId> {
        self.map
            .get(old.index())
            .copied()
            .ok_or_else(|| internal("a pass read a node before mapping it"))
    }

    /// The node `id` of the new graph.
    pub fn node(&self, id: NodeId) -> Result<&Node> {
        self.g
            .node(id)
            .ok_or_else(|| internal("a pass read a missing node"))
    }

    /// Records that the next old node is represented by new node `to`.
    pub fn map_to(&mut self, to: NodeId) {
        self.map.push(to);
    }

    /// Appends `node` (args already in new ids) to the new graph; inputs keep their slot.
    pub fn push(&mut self, node: Node) -> NodeId {
        let is_input = matches!(node.op, IrOp::Input { .. });
        let id = self.g.push(node);
        if is_input {
            self.g.inputs.push(id);
        }
        id
    }

    /// `node` (in old ids) with its args mapped to new ids.
    pub fn remapped(&self, node: &Node) -> Result<Node> {
        let args = node
            .args
            .iter()
            .map(|&a| self.get(a))
            .collect::<Result<Vec<_>>>()?;
        Ok(Node {
            args,
            ..node.clone()
        })
    }

    /// Copies old `node` unchanged (args remapped) and maps it to the copy.
    pub fn copy(&mut self, node: &Node) -> Result<NodeId> {
        let n = self.remapped(node)?;
        let id = self.push(n);
        self.map_to(id);
        Ok(id)
    }

    /// The finished graph, with `old`'s outputs remapped.
    pub fn finish(mut self, old: &Graph) -> Result<Graph> {
        self.g.outputs = old
            .outputs
            .iter()
            .map(|&o| self.get(o))
            .collect::<Result<Vec<_>>>()?;
        Ok(self.g)
    }
}

/// Rebuilds `g` with every top-level loop node (not loops nested in regions: their own
/// optimization runs the pass on them) replaced by what `rewrite` pushes for it: the
/// node with its args in new ids and a copy of its loop spec. Other nodes are copied.
pub(crate) fn rewrite_loops(
    g: Graph,
    mut rewrite: impl FnMut(&mut Rebuild, Node, LoopSpec) -> Result<NodeId>,
) -> Result<Graph> {
    let mut rb = Rebuild::new(&g);
    for node in &g.nodes {
        let n = rb.remapped(node)?;
        let id = match &n.op {
            IrOp::Loop(l) => {
                let l = (**l).clone();
                rewrite(&mut rb, n, l)?
            }
            _ => rb.push(n),
        };
        rb.map_to(id);
    }
    rb.finish(&g)
}
