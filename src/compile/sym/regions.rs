//! Symbolic sizes through the regions of a branch (`If`) and of a `while` loop: a
//! region is walked with its bound inputs' symbolic shapes (sharing the enclosing
//! analysis's relations), so a dynamic size flows through `if x.mean() > 0.5: h = h * 2`
//! and through a Newton `while` on a tensor tolerance. Inside a region every op
//! follows sizes as at the top level except those whose attributes a region cannot
//! re-evaluate per call (a reshape/expand target, a symbolic slice): there the sizes
//! reaching them are specialised. When Python code read the size of a tensor created
//! inside a region (a read the capture cannot attribute to a graph node), every region
//! is opaque. A branch's results take the then-side's shapes (tied to the else-side's);
//! a `while` loop's carried values keep one shape (body outputs tied to the inputs).

use super::analyze::{InputSpec, Walk};
use super::expr::{fixed_shape, SymExpr, SymShape};
use super::solve::Solver;
use super::SymInfo;
use crate::compile::ir::control::{Branch, LoopSpec, TripCount};
use crate::compile::ir::{Graph, InputKind, IrIndex, IrOp, Node, NodeId};
use crate::ir::sym::dim_of_ref;
use std::collections::HashMap;

/// The region part of a walk: the bound inputs' shapes (None at the top level) and
/// each walked control node's result shapes (read by its `Out` nodes).
#[derive(Default)]
pub(super) struct RegionState {
    bound: Option<Vec<SymShape>>,
    results: HashMap<NodeId, Vec<SymShape>>,
}

impl Walk<'_> {
    /// The shape of `node` when the region rules decide it (a bound input, a branch, an
    /// op a region cannot follow), else None.
    pub(super) fn region_rule(
        &mut self,
        id: NodeId,
        node: &Node,
        args: &[SymShape],
    ) -> Option<SymShape> {
        match &node.op {
            IrOp::Input {
                slot,
                kind: InputKind::Bound,
            } => {
                let s = self.ctl.bound.as_ref().and_then(|b| b.get(*slot)).cloned();
                Some(s.unwrap_or_else(|| fixed_shape(&node.shape)))
            }
            IrOp::If(b) => Some(self.branch(id, node, b, args)),
            IrOp::Loop(l) => self.while_loop(id, node, l, args),
            IrOp::Out { index } => {
                let ctl = node.args.first()?;
                self.region_result(*ctl, *index)
            }
            IrOp::Reshape { .. } | IrOp::Expand { .. } if self.ctl.bound.is_some() => {
                let symbolic = args.iter().flatten().any(|e| e.as_const().is_none());
                symbolic.then(|| self.opaque(node, args))
            }
            IrOp::Index { indices } if self.ctl.bound.is_some() => {
                let mut sym = false;
                for ix in indices {
                    if let IrIndex::SymSlice { sym: e, .. } = ix {
                        sym = true;
                        for r in e.symbols() {
                            let (slot, d) = dim_of_ref(r);
                            let s = self.spec.dims.get(slot).and_then(|v| v.get(d)).copied();
                            if let Some(s) = s.flatten() {
                                self.solver.specialize(&SymExpr::sym(s));
                            }
                        }
                    }
                }
                sym.then(|| self.opaque(node, args))
            }
            _ => None,
        }
    }

    /// The shape of result `index` of a walked control node.
    fn region_result(&self, ctl: NodeId, index: usize) -> Option<SymShape> {
        self.ctl.results.get(&ctl)?.get(index).cloned()
    }

    fn regions_opaque(&self) -> bool {
        self.hints.is_some_and(|h| h.region_size_read)
    }

    /// Walks region `g` with bound input shapes `bound`; its output shapes, or None
    /// (after specialising `bound`) when the walk does not reproduce the capture-time
    /// shapes.
    fn walk_region(&mut self, g: &Graph, bound: &[SymShape]) -> Option<Vec<SymShape>> {
        let mut sub = Walk {
            g,
            spec: self.spec,
            solver: std::mem::take(&mut self.solver),
            shapes: Vec::with_capacity(g.nodes.len()),
            hints: None,
            ctl: RegionState {
                bound: Some(bound.to_vec()),
                results: HashMap::new(),
            },
        };
        let mut ok = true;
        for (i, node) in g.nodes.iter().enumerate() {
            match sub.node_shape(NodeId(i as u32), node, self.spec) {
                Ok(s) => sub.shapes.push(s),
                Err(_) => {
                    ok = false;
                    break;
                }
            }
        }
        let outs: Option<Vec<SymShape>> = ok
            .then(|| {
                at_capture(g, &sub.shapes, &sub.solver).then(|| {
                    let outs = g.outputs.iter();
                    outs.map(|o| sub.shapes.get(o.index()).cloned())
                        .collect::<Option<Vec<_>>>()
                })
            })
            .flatten()
            .flatten();
        self.solver = sub.solver;
        if outs.is_none() {
            for b in bound {
                self.solver.specialize_all(b);
            }
        }
        outs
    }

    /// An `If`: both sides walked on the bound args (`args[1..]`); results tied.
    fn branch(&mut self, id: NodeId, node: &Node, b: &Branch, args: &[SymShape]) -> SymShape {
        if self.regions_opaque() {
            return self.opaque(node, args);
        }
        let bound = args.get(1..).unwrap_or(&[]);
        let then = self.walk_region(&b.then_g, bound);
        let other = self.walk_region(&b.else_g, bound);
        let (Some(then), Some(other)) = (then, other) else {
            return self.opaque(node, args);
        };
        for (p, q) in then.iter().zip(&other) {
            for (a, c) in p.iter().zip(q) {
                self.solver.unify(a, c);
            }
        }
        self.ctl.results.insert(id, then);
        fixed_shape(&node.shape)
    }

    /// A `while` loop (a condition, no scan outputs): its regions walked on
    /// `[index, carried..., invariant...]`, body outputs tied to the carried inputs.
    /// None for the other loops (see `loops`).
    fn while_loop(
        &mut self,
        id: NodeId,
        node: &Node,
        l: &LoopSpec,
        args: &[SymShape],
    ) -> Option<SymShape> {
        let plain = l.scan == 0 && !l.reverse && !matches!(l.trip, TripCount::Dim { .. });
        if l.cond.is_none() || !plain {
            return None;
        }
        if self.regions_opaque() {
            return Some(self.opaque(node, args));
        }
        let mut bound = vec![Vec::new()];
        bound.extend(args.iter().cloned());
        let cond = l.cond.as_ref().and_then(|c| self.walk_region(c, &bound));
        let body = self.walk_region(&l.body, &bound);
        let (Some(_), Some(body)) = (cond, body) else {
            return Some(self.opaque(node, args));
        };
        let carried = args.get(..l.carried).unwrap_or(&[]);
        for (p, q) in carried.iter().zip(&body) {
            for (a, c) in p.iter().zip(q) {
                self.solver.unify(a, c);
            }
        }
        self.ctl.results.insert(id, carried.to_vec());
        Some(fixed_shape(&node.shape))
    }
}

/// The shapes of region `g`'s nodes over `info`'s symbols when it runs on bound inputs
/// of shapes `bound` (the enclosing graph's shapes of the control node's bound values),
/// for lowerings that need a region's symbolic sizes (ONNX export). None when the
/// region does not follow them (its sizes are then the capture-time ones).
pub fn region_shapes(info: &SymInfo, g: &Graph, bound: &[SymShape]) -> Option<Vec<SymShape>> {
    let spec = InputSpec {
        dims: Vec::new(),
        example: info.example.clone(),
        min: info.min.clone(),
        max: info.max.clone(),
    };
    let mut w = Walk::new(g, &spec);
    w.ctl.bound = Some(bound.to_vec());
    for (i, node) in g.nodes.iter().enumerate() {
        let s = w.node_shape(NodeId(i as u32), node, &spec).ok()?;
        w.shapes.push(s);
    }
    let shapes: Vec<SymShape> = w
        .shapes
        .iter()
        .map(|s| s.iter().map(|e| w.solver.norm(e)).collect())
        .collect();
    at_capture(g, &shapes, &w.solver).then_some(shapes)
}

/// True when every node's symbolic shape evaluates to its capture-time shape.
fn at_capture(g: &Graph, shapes: &[SymShape], solver: &Solver) -> bool {
    g.nodes.len() == shapes.len()
        && g.nodes.iter().zip(shapes).all(|(n, s)| {
            let v: Option<Vec<i64>> = s.iter().map(|e| solver.eval(e)).collect();
            v.is_some_and(|v| v.iter().copied().eq(n.shape.iter().map(|&d| d as i64)))
        })
}
