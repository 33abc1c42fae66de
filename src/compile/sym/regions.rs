//! Symbolic sizes through the regions of control nodes: a branch (`If`), a `while` loop
//! and a `for` loop (a trip count, scan outputs, a reverse backward loop). A region is
//! walked with its bound inputs' symbolic shapes (sharing the enclosing analysis's
//! relations), so a dynamic size flows through `if x.mean() > 0.5: h = h * 2`, through
//! a Newton `while` on a tensor tolerance and through an RNN's `for t in range(T)` over
//! a symbolic batch. Inside a region every op follows sizes as at the top level; a
//! reshape/expand whose target is symbolic is listed with its region
//! ([`RegionTargets`]) and instantiated at each call from the top-level symbols. A
//! symbolic slice's sizes are specialised in a region, and so are those reaching its
//! reshapes and expands when Python code inside a region asked for explicit sizes
//! (`x.view(4, -1)`: the request no graph node records). A size Python code read of a
//! region's value (`g.split(H, dim=1)` reads `g`'s dim 1) is specialised as at the top
//! level (the region graph lists its reads); when the capture could not attribute a
//! read to any graph, every region is opaque. A branch's results take the then-side's
//! shapes (tied to the else-side's); a loop's carried values keep one shape (body
//! outputs tied to the inputs) and a scan result is the trip count over a row.

use super::analyze::{InputSpec, Walk};
use super::expr::{fixed_shape, SymExpr, SymShape};
use super::solve::Solver;
use super::{RegionTargets, SymInfo};
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
    /// The walked regions of this graph's control nodes, with their candidate targets.
    pub kept: Vec<RawRegion>,
    /// Reshapes and expands of symbolic sizes in regions are specialised.
    pub fixed_targets: bool,
}

/// A region walked with symbolic shapes: its reshape/expand nodes with their shapes
/// (not yet normalised: later ties may merge their symbols), and its nested regions.
pub(super) struct RawRegion {
    node: NodeId,
    region: usize,
    targets: Vec<(NodeId, SymShape)>,
    inner: Vec<RawRegion>,
}

impl RawRegion {
    /// The region's targets that are symbolic after `norm`, or None when neither it nor
    /// a region nested in it has one.
    pub(super) fn finish(
        &self,
        norm: &dyn Fn(&SymExpr) -> crate::error::Result<SymExpr>,
    ) -> crate::error::Result<Option<RegionTargets>> {
        let mut targets = Vec::new();
        for (id, shape) in &self.targets {
            let s: SymShape = shape
                .iter()
                .map(norm)
                .collect::<crate::error::Result<_>>()?;
            if s.iter().any(|e| e.as_const().is_none()) {
                targets.push((*id, s));
            }
        }
        let mut inner = Vec::new();
        for r in &self.inner {
            inner.extend(r.finish(norm)?);
        }
        Ok(
            (!targets.is_empty() || !inner.is_empty()).then(|| RegionTargets {
                node: self.node,
                region: self.region,
                targets,
                inner,
            }),
        )
    }
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
            IrOp::Loop(l) => self.region_loop(id, node, l, args),
            IrOp::Out { index } => {
                let ctl = node.args.first()?;
                self.region_result(*ctl, *index)
            }
            IrOp::Reshape { .. } | IrOp::Expand { .. }
                if self.ctl.bound.is_some() && self.ctl.fixed_targets =>
            {
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

    /// Walks region `g` with bound input shapes `bound`; its output shapes and its walk
    /// (as region `region` of control node `id`), or None (after specialising `bound`)
    /// when the walk does not reproduce the capture-time shapes.
    fn walk_region(
        &mut self,
        g: &Graph,
        bound: &[SymShape],
        (id, region): (NodeId, usize),
    ) -> Option<(Vec<SymShape>, RawRegion)> {
        let fixed_targets = self.ctl.fixed_targets || self.hints.is_some_and(|h| h.region_request);
        let mut sub = Walk {
            g,
            spec: self.spec,
            solver: std::mem::take(&mut self.solver),
            shapes: Vec::with_capacity(g.nodes.len()),
            hints: None,
            ctl: RegionState {
                bound: Some(bound.to_vec()),
                results: HashMap::new(),
                kept: Vec::new(),
                fixed_targets,
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
        sub.apply_reads(&g.size_reads);
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
        self.solver = std::mem::take(&mut sub.solver);
        let Some(outs) = outs else {
            for b in bound {
                self.solver.specialize_all(b);
            }
            return None;
        };
        let targets = g
            .nodes
            .iter()
            .zip(&sub.shapes)
            .enumerate()
            .filter(|(_, (n, _))| super::finish::has_target(&n.op))
            .map(|(i, (_, s))| (NodeId(i as u32), s.clone()))
            .collect();
        let raw = RawRegion {
            node: id,
            region,
            targets,
            inner: sub.ctl.kept,
        };
        Some((outs, raw))
    }

    /// An `If`: both sides walked on the bound args (`args[1..]`); results tied.
    fn branch(&mut self, id: NodeId, node: &Node, b: &Branch, args: &[SymShape]) -> SymShape {
        if self.regions_opaque() {
            return self.opaque(node, args);
        }
        let bound = args.get(1..).unwrap_or(&[]);
        let then = self.walk_region(&b.then_g, bound, (id, 0));
        let other = self.walk_region(&b.else_g, bound, (id, 1));
        let (Some((then, raw_then)), Some((other, raw_else))) = (then, other) else {
            return self.opaque(node, args);
        };
        for (p, q) in then.iter().zip(&other) {
            for (a, c) in p.iter().zip(q) {
                self.solver.unify(a, c);
            }
        }
        self.ctl.kept.extend([raw_then, raw_else]);
        self.ctl.results.insert(id, then);
        fixed_shape(&node.shape)
    }

    /// A loop: its regions walked on `[index, carried..., invariant...]`, body outputs
    /// tied to the carried inputs; a scan result is `[trip, row...]` (a `for` loop's trip
    /// count: a constant or a dim of an arg). None for a `while` with scan outputs and
    /// when regions are opaque (see `loops`).
    fn region_loop(
        &mut self,
        id: NodeId,
        node: &Node,
        l: &LoopSpec,
        args: &[SymShape],
    ) -> Option<SymShape> {
        let trip = match (&l.trip, &l.cond) {
            (_, Some(_)) if l.scan > 0 || l.reverse => return None,
            (TripCount::Const(n), _) => Some(SymExpr::konst(i64::try_from(*n).ok()?)),
            (TripCount::Dim { arg, dim }, _) => Some(args.get(*arg)?.get(*dim)?.clone()),
            (TripCount::Unbounded, Some(_)) => None,
            (TripCount::Unbounded, None) => return None,
        };
        if self.regions_opaque() {
            return None;
        }
        let mut bound = vec![Vec::new()];
        bound.extend(args.iter().cloned());
        let cond = l
            .cond
            .as_ref()
            .map(|c| self.walk_region(c, &bound, (id, 0)));
        let body = self.walk_region(&l.body, &bound, (id, 1));
        let (Some((body, raw_body)), false) = (body, matches!(cond, Some(None))) else {
            return Some(self.opaque(node, args));
        };
        let carried = args.get(..l.carried).unwrap_or(&[]);
        for (p, q) in carried.iter().zip(&body) {
            for (a, c) in p.iter().zip(q) {
                self.solver.unify(a, c);
            }
        }
        let mut results = carried.to_vec();
        for row in body.iter().skip(l.carried).take(l.scan) {
            let mut shape = vec![trip.clone().unwrap_or_default()];
            shape.extend(row.iter().cloned());
            results.push(shape);
        }
        self.ctl.kept.extend(cond.flatten().map(|c| c.1));
        self.ctl.kept.push(raw_body);
        self.ctl.results.insert(id, results);
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
