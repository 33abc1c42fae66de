//! Symbolic sizes for `@compile(dynamic=True)` and automatic dynamic recompiles.
//!
//! Representation (what other parts read): a graph compiled with symbolic sizes carries
//! `Graph::sym = Some(SymInfo)`. `SymInfo::inputs[slot][dim]` names the symbol an input
//! dim binds (`None`: a fixed size, the node's own `shape` value); `shapes[node]` is
//! every node's shape as affine [`SymExpr`]s over the symbols `s0, s1, ...`;
//! `min[s]` is the least size a symbol accepts (always >= 2: sizes 0 and 1 are
//! specialised, as broadcasting depends on them) and `example[s]` its size at capture.
//! `Node::shape` stays the capture-time example. Reshape/expand nodes whose target
//! depends on symbols are listed in `targets` with their symbolic target; every other
//! op attribute is size-independent by construction (a size that would be baked in is
//! specialised instead). Two input dims bound to the same symbol must be equal at
//! every call (a guard), as must fixed dims equal their size.

pub mod analyze;
pub mod expr;
mod finish;
mod linalg;
mod loops;
mod regions;
mod reshape;
mod solve;
mod why;

pub use analyze::{analyze, InputSpec};
pub use expr::{shape_text, SymExpr, SymId, SymShape};
pub use regions::region_shapes;
pub use why::fixing_node;

use crate::compile::ir::{IrIndex, IrOp, Node, NodeId};
use crate::tensor::Tensor;
use std::collections::HashMap;

/// What a capture learned about sizes besides the graph: sizes Python code read (a
/// node and dim, `None` for all dims) and the sizes reshape/expand calls asked for.
#[derive(Debug, Clone, Default)]
pub struct SymHints {
    pub size_reads: Vec<(NodeId, Option<usize>)>,
    pub requests: HashMap<NodeId, Vec<i64>>,
    /// Requests with symbolic ints (`view(B, T, H, D)`): Some for a symbolic entry.
    pub sym_requests: HashMap<NodeId, Vec<Option<SymExpr>>>,
    /// What Python-level decisions on symbolic ints fixed (`compile::capture::symint`).
    pub facts: Vec<crate::compile::capture::symint::SymFact>,
    /// Python code read a size of a tensor made inside a region (`if`/loop body),
    /// which no graph node names: regions then keep their capture-time sizes.
    pub region_size_read: bool,
    /// A `view`/`reshape`/`expand` call inside a region asked for explicit sizes (which
    /// no graph node records): regions then specialise the sizes reaching their
    /// reshapes and expands, whose structural targets alone might not follow them.
    pub region_request: bool,
}

pub use crate::ir::sym::{RegionTargets, SymInfo};

impl SymInfo {
    pub fn num_symbols(&self) -> usize {
        self.example.len()
    }

    /// The spec that re-analyses another graph over the same inputs with these symbols.
    pub fn spec(&self) -> InputSpec {
        InputSpec {
            dims: self.inputs.clone(),
            example: self.example.clone(),
            min: self.min.clone(),
            max: self.max.clone(),
        }
    }

    /// Each symbol's value in a call, read from the first input dim bound to it.
    pub fn bind(&self, inputs: &[Tensor]) -> Vec<i64> {
        let mut vals = vec![0i64; self.example.len()];
        for (slot, dims) in self.inputs.iter().enumerate() {
            let Some(t) = inputs.get(slot) else { break };
            for (d, s) in dims.iter().enumerate() {
                if let (Some(s), Some(&n)) = (s, t.shape().get(d)) {
                    if let Some(v) = vals.get_mut(*s as usize) {
                        *v = n as i64;
                    }
                }
            }
        }
        vals
    }

    /// `node` with its symbolic target evaluated for symbol values `vals`.
    pub fn instantiate(node: &Node, target: &[SymExpr], vals: &[i64]) -> Option<Node> {
        let shape = target
            .iter()
            .map(|e| usize::try_from(e.eval(|s| vals.get(s as usize).copied())?).ok())
            .collect::<Option<_>>()?;
        let op = match &node.op {
            IrOp::Reshape { .. } => IrOp::Reshape { shape },
            IrOp::Expand { sym, .. } => IrOp::Expand {
                shape,
                sym: sym.clone(),
            },
            IrOp::Index { indices } => IrOp::Index {
                indices: sym_slices(indices, &shape)?,
            },
            IrOp::IndexGrad { indices, .. } => IrOp::IndexGrad {
                shape,
                indices: indices.clone(),
            },
            _ => return None,
        };
        Some(Node {
            op,
            args: node.args.clone(),
            dtype: node.dtype,
            shape: node.shape.clone(),
            span: node.span,
        })
    }
}

/// An index list whose `SymSlice` lengths are those of output `shape` (None with an
/// `...`, which `compile::capture::symint` never makes symbolic).
fn sym_slices(indices: &[IrIndex], shape: &[usize]) -> Option<Vec<IrIndex>> {
    let mut o = 0usize;
    let mut out = Vec::with_capacity(indices.len());
    for ix in indices {
        out.push(match ix {
            IrIndex::SymSlice { start, sym, .. } => {
                o += 1;
                IrIndex::SymSlice {
                    start: *start,
                    len: i64::try_from(*shape.get(o - 1)?).ok()?,
                    sym: sym.clone(),
                }
            }
            IrIndex::Slice { .. } | IrIndex::NewAxis => {
                o += 1;
                ix.clone()
            }
            IrIndex::Int(_) | IrIndex::Indices { .. } => ix.clone(),
            IrIndex::Ellipsis | IrIndex::Mask { .. } => return None,
        });
    }
    Some(out)
}

/// A fresh capture's spec: one symbol per input dim `symbolic(slot, dim)` selects whose
/// size is at least 2 (sizes 0 and 1 stay fixed).
pub fn fresh_spec(shapes: &[&[usize]], symbolic: impl Fn(usize, usize) -> bool) -> InputSpec {
    let mut spec = InputSpec::default();
    for (slot, shape) in shapes.iter().enumerate() {
        let dims = shape
            .iter()
            .enumerate()
            .map(|(d, &n)| {
                (n >= 2 && symbolic(slot, d)).then(|| {
                    spec.example.push(n as i64);
                    spec.min.push(2);
                    spec.max.push(i64::MAX);
                    (spec.example.len() - 1) as SymId
                })
            })
            .collect();
        spec.dims.push(dims);
    }
    spec
}

#[cfg(test)]
mod tests;
