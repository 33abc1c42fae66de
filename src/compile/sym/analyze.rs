//! Symbolic shape analysis of a graph: starting from symbolic input dims, derives every
//! node's shape as affine expressions, ties symbols that ops require equal (broadcast,
//! matmul, cat), and specialises a symbol wherever a shape or attribute would not
//! follow it (an op whose output size is not affine, a size read by Python code, an
//! ambiguous reshape). The result is checked against the capture-time shapes.

use super::expr::{fixed_shape, SymExpr, SymId, SymShape};
use super::solve::Solver;
use super::{SymHints, SymInfo};
use crate::compile::capture::symint::SymFact;
use crate::compile::ir::{GradKernel, Graph, IrIndex, IrOp, Node, NodeId};
use crate::error::{Error, ErrorKind, Result};
use crate::ir::grad_kernel::NormPart;
use crate::ir::sym::dim_of_ref;

fn internal(msg: String) -> Error {
    Error::new(
        ErrorKind::RuntimeError,
        format!("internal compile error: symbolic shapes: {msg}"),
        None,
    )
}

/// What the analysis starts from: per input slot, per dim, the symbol it binds (None:
/// a fixed dim), and per symbol its capture-time size, least and largest size.
#[derive(Debug, Clone, Default)]
pub struct InputSpec {
    pub dims: Vec<Vec<Option<SymId>>>,
    pub example: Vec<i64>,
    pub min: Vec<i64>,
    pub max: Vec<i64>,
}

pub(super) struct Walk<'g> {
    pub g: &'g Graph,
    pub spec: &'g InputSpec,
    pub solver: Solver,
    pub shapes: Vec<SymShape>,
    pub hints: Option<&'g SymHints>,
    pub ctl: super::regions::RegionState,
}

/// Analyses `g` from `spec`; `hints` (from the capture) name sizes Python code read and
/// the shapes reshape/expand calls asked for.
pub fn analyze(g: &Graph, spec: &InputSpec, hints: Option<&SymHints>) -> Result<SymInfo> {
    let mut w = walk(g, spec, hints, g.len())?;
    if let Some(h) = hints {
        w.apply(h, &h.facts);
    }
    w.finish(spec)
}

/// The shapes of `g`'s first `n` nodes.
fn walk<'g>(
    g: &'g Graph,
    spec: &'g InputSpec,
    hints: Option<&'g SymHints>,
    n: usize,
) -> Result<Walk<'g>> {
    let mut w = Walk::new(g, spec);
    w.hints = hints;
    for (i, node) in g.nodes.iter().take(n).enumerate() {
        let s = w.node_shape(NodeId(i as u32), node, spec)?;
        w.shapes.push(s);
    }
    Ok(w)
}

/// During a capture: dim `dim` of node `id` (of the graph so far) over the spec's
/// symbols, given the sizes read and the facts recorded so far.
pub fn size_expr(
    g: &Graph,
    spec: &InputSpec,
    hints: &SymHints,
    facts: &[SymFact],
    id: NodeId,
    dim: usize,
) -> Option<SymExpr> {
    shape_exprs(g, spec, hints, facts, id)?.into_iter().nth(dim)
}

/// During a capture: the shape of node `id` (of the graph so far) over the spec's
/// symbols, given the sizes read and the facts recorded so far.
pub fn shape_exprs(
    g: &Graph,
    spec: &InputSpec,
    hints: &SymHints,
    facts: &[SymFact],
    id: NodeId,
) -> Option<SymShape> {
    let mut w = walk(g, spec, Some(hints), id.index() + 1).ok()?;
    w.apply(hints, facts);
    let s = w.shapes.get(id.index())?;
    Some(s.iter().map(|e| w.solver.norm(e)).collect())
}

impl<'g> Walk<'g> {
    /// A walk of `g` from `spec`'s symbols, without hints.
    pub(super) fn new(g: &'g Graph, spec: &'g InputSpec) -> Walk<'g> {
        let mut solver = Solver::default();
        for (s, (&ex, &m)) in spec.example.iter().zip(&spec.min).enumerate() {
            solver.new_sym(ex, m, spec.max.get(s).copied().unwrap_or(i64::MAX));
        }
        Walk {
            g,
            spec,
            solver,
            shapes: Vec::with_capacity(g.nodes.len()),
            hints: None,
            ctl: Default::default(),
        }
    }
}

impl Walk<'_> {
    /// Specialises the sizes Python code read and applies the facts of decisions on
    /// symbolic ints.
    fn apply(&mut self, h: &SymHints, facts: &[SymFact]) {
        self.apply_reads(&h.size_reads);
        for f in facts {
            match f {
                SymFact::Value(e) => self.solver.specialize(e),
                SymFact::NonNeg(e) => self.solver.require_nonneg(e),
                SymFact::Equal(a, b) => self.solver.unify(a, b),
            }
        }
    }

    /// Specialises the sizes Python code read (a node and dim, None for all dims).
    pub(super) fn apply_reads(&mut self, reads: &[(NodeId, Option<usize>)]) {
        for &(id, dim) in reads {
            let Some(shape) = self.shapes.get(id.index()).cloned() else {
                continue;
            };
            match dim {
                Some(d) => {
                    if let Some(e) = shape.get(d) {
                        self.solver.specialize(e);
                    }
                }
                None => self.solver.specialize_all(&shape),
            }
        }
    }
}

impl Walk<'_> {
    fn arg_shape(&self, node: &Node, k: usize) -> Result<SymShape> {
        node.args
            .get(k)
            .and_then(|a| self.shapes.get(a.index()))
            .cloned()
            .ok_or_else(|| internal("a node's arg has no shape".into()))
    }

    pub(super) fn arg_example(&self, node: &Node, k: usize) -> Vec<usize> {
        node.args
            .get(k)
            .and_then(|a| self.g.node(*a))
            .map(|n| n.shape.to_vec())
            .unwrap_or_default()
    }

    pub(super) fn node_shape(
        &mut self,
        id: NodeId,
        node: &Node,
        spec: &InputSpec,
    ) -> Result<SymShape> {
        let args: Vec<SymShape> = (0..node.args.len())
            .map(|k| self.arg_shape(node, k))
            .collect::<Result<_>>()?;
        if let Some(s) = self.region_rule(id, node, &args) {
            return Ok(s);
        }
        let x = args.first().cloned().unwrap_or_default();
        Ok(match &node.op {
            IrOp::Input { slot, .. } => input_shape(node, spec.dims.get(*slot)),
            IrOp::Const(_) => fixed_shape(&node.shape),
            IrOp::Unary(_)
            | IrOp::BinaryScalar { .. }
            | IrOp::Clamp { .. }
            | IrOp::Cast(_)
            | IrOp::Clone
            | IrOp::Contiguous
            | IrOp::Softmax { .. }
            | IrOp::LogSoftmax { .. }
            | IrOp::Cumsum { .. }
            | IrOp::BatchNormRunning { .. }
            | IrOp::FillLike { .. }
            | IrOp::ScatterAdd { .. }
            | IrOp::Scatter { .. } => x,
            IrOp::BatchNorm { .. } | IrOp::LayerNorm { .. } | IrOp::GroupNorm { .. } => {
                self.norm_shape(node, &args)
            }
            IrOp::Binary(_) => self.broadcast(&x, &args[1]),
            IrOp::Where => {
                let ab = self.broadcast(&args[1], &args[2]);
                self.broadcast(&x, &ab)
            }
            IrOp::MaskedFill { .. } => {
                self.broadcast(&x, &args[1]);
                x
            }
            IrOp::Sum { dims, keepdim }
            | IrOp::Mean { dims, keepdim }
            | IrOp::Prod { dims, keepdim }
            | IrOp::Var { dims, keepdim, .. }
            | IrOp::LogSumExp { dims, keepdim }
            | IrOp::Norm { dims, keepdim, .. }
            | IrOp::AllAny { dims, keepdim, .. } => reduced(&x, dims, *keepdim),
            IrOp::ExtremeAll { .. } | IrOp::ArgExtreme { dim: None, .. } => Vec::new(),
            IrOp::ExtremeDim { dim, keepdim, .. }
            | IrOp::ArgExtreme {
                dim: Some(dim),
                keepdim,
                ..
            } => reduced(&x, &[*dim], *keepdim),
            IrOp::Permute { perm } => perm.iter().filter_map(|&p| x.get(p).cloned()).collect(),
            IrOp::Repeat { reps } => self.repeat(&x, reps),
            IrOp::Reshape { .. } => self.reshape(id, node, &x),
            IrOp::Expand { .. } => self.expand(id, node, &x),
            IrOp::Narrow { dim, start, len } => {
                let mut out = x.clone();
                if let Some(e) = out.get_mut(*dim) {
                    self.solver
                        .require_min(e, start.saturating_add(*len) as i64);
                    *e = SymExpr::konst(*len as i64);
                }
                out
            }
            IrOp::Index { indices } => self.index(node, &x, indices, &args),
            IrOp::IndexGrad { indices, .. } => self.index_grad(node, indices, &args),
            IrOp::Loop(l) => self.loop_node(node, l, &args),
            IrOp::Matmul => self.matmul(&x, &args[1]),
            IrOp::Attention { .. } => self.attention(node, &args),
            IrOp::LstmLayer => self.recurrence(node, &args, 2),
            IrOp::GruLayer { .. } => self.recurrence(node, &args, 1),
            IrOp::Cat { dim } => self.cat(node, &args, *dim),
            IrOp::Stack { dim } => {
                for a in &args[1..] {
                    self.unify_shapes(&x, a);
                }
                let mut out = x;
                let d = (*dim).min(out.len());
                out.insert(d, SymExpr::konst(args.len() as i64));
                out
            }
            IrOp::IndexSelect { dim } => {
                let n = self.numel(&args[1]);
                let mut out = x;
                if let Some(e) = out.get_mut(*dim) {
                    *e = n;
                }
                out
            }
            IrOp::Gather { .. } => args[1].clone(),
            IrOp::OneHot { num_classes } => {
                let mut out = x;
                out.push(SymExpr::konst(*num_classes as i64));
                out
            }
            IrOp::ModeIndices { dim } => {
                let mut out = x;
                if let Some(e) = out.get_mut(*dim) {
                    *e = SymExpr::konst(1);
                }
                out
            }
            IrOp::SortIndices { dim, k, .. } => {
                let mut out = x;
                if let (Some(k), Some(e)) = (k, out.get_mut(*dim)) {
                    *e = SymExpr::konst(*k as i64);
                }
                out
            }
            IrOp::Conv2d { .. } | IrOp::MaxPool2d { .. } | IrOp::AvgPool2d { .. } => {
                self.batch_only(node, &args)
            }
            IrOp::GradKernel(k) => self.grad_kernel(node, k, &args),
            IrOp::Linalg(op) => self.linalg(node, op, &args),
            // A branch the region rules did not take (they always do); print.
            IrOp::If(_) | IrOp::Print(_) => self.opaque(node, &args),
            IrOp::Out { index } => self.out_node(node, *index, &args),
        })
    }

    /// conv/pool: the batch (dim 0) follows the input's; every other size of the input
    /// and of the weight/bias must be fixed (else all are specialised).
    fn batch_only(&mut self, node: &Node, args: &[SymShape]) -> SymShape {
        let fixed = |s: &[SymExpr]| s.iter().all(|e| e.as_const().is_some());
        match args.split_first() {
            Some((x, rest))
                if x.len() == node.shape.len()
                    && !x.is_empty()
                    && fixed(&x[1..])
                    && rest.iter().all(|a| fixed(a)) =>
            {
                let mut out = vec![x[0].clone()];
                out.extend(fixed_shape(&node.shape[1..]));
                out
            }
            _ => self.opaque(node, args),
        }
    }

    /// A gradient kernel: mean's scale and prod's keep their input's shape; conv/pool
    /// gradients follow the batch as their forward ops do (x and the output gradient
    /// share it, every other size fixed; the weight gradient is fixed); avg_pool's
    /// carries its input shape as an attribute and is specialised.
    fn grad_kernel(&mut self, node: &Node, k: &GradKernel, args: &[SymShape]) -> SymShape {
        let fixed = |s: &[SymExpr]| s.iter().all(|e| e.as_const().is_some());
        match k {
            GradKernel::MeanScale { .. } | GradKernel::ProdOthers { .. } => {
                args.first().cloned().unwrap_or_default()
            }
            GradKernel::Conv2dInput { .. }
            | GradKernel::Conv2dWeight { .. }
            | GradKernel::MaxPool2d { .. } => {
                let (Some(x), Some(g)) = (args.first(), args.last()) else {
                    return self.opaque(node, args);
                };
                if args.len() < 2 {
                    return self.opaque(node, args);
                }
                let others = &args[1..args.len() - 1];
                if x.len() != 4
                    || g.len() != 4
                    || !fixed(&x[1..])
                    || !fixed(&g[1..])
                    || !others.iter().all(|a| fixed(a))
                {
                    return self.opaque(node, args);
                }
                self.solver.unify(&x[0], &g[0]);
                match k {
                    GradKernel::Conv2dWeight { .. } => fixed_shape(&node.shape),
                    _ => x.clone(),
                }
            }
            GradKernel::AvgPool2d { .. } => self.opaque(node, args),
            GradKernel::Attention { part, mask, .. } => {
                let ops = args.get(..3 + usize::from(*mask)).unwrap_or(args);
                let out = self.attention(node, ops);
                if let Some(o) = args.get(3 + usize::from(*mask)) {
                    self.unify_shapes(&out, o);
                }
                if let Some(g) = args.last() {
                    self.unify_shapes(&out, g);
                }
                args.get(*part).cloned().unwrap_or_default()
            }
            GradKernel::LstmLayer { part } | GradKernel::GruLayer { part, .. } => {
                let states = if matches!(k, GradKernel::LstmLayer { .. }) {
                    2
                } else {
                    1
                };
                let n = args.len().saturating_sub(2);
                let out = self.recurrence(node, &args[..n], states);
                for o in &args[n..] {
                    self.unify_shapes(&out, o);
                }
                args.get(*part).cloned().unwrap_or_default()
            }
            GradKernel::BatchNorm { part, .. }
            | GradKernel::LayerNorm { part, .. }
            | GradKernel::GroupNorm { part, .. } => {
                let x = self.norm_shape(node, args);
                if let Some(g) = args.last() {
                    self.unify_shapes(&x, g);
                }
                match part {
                    NormPart::Input => x,
                    NormPart::Params => fixed_shape(&node.shape),
                }
            }
        }
    }

    /// batch_norm / layer_norm / group_norm and their gradients: the input's shape, every size of
    /// the other operands (weight, bias, running statistics) fixed (else all are
    /// specialised).
    fn norm_shape(&mut self, node: &Node, args: &[SymShape]) -> SymShape {
        let fixed = |s: &[SymExpr]| s.iter().all(|e| e.as_const().is_some());
        let last = args.len().saturating_sub(1);
        let others = match node.op {
            IrOp::GradKernel(_) => args.get(1..last).unwrap_or(&[]),
            _ => args.get(1..).unwrap_or(&[]),
        };
        match args.first() {
            Some(x) if others.iter().all(|a| fixed(a)) => x.clone(),
            _ => self.opaque(node, args),
        }
    }

    /// An op whose output sizes are not followed symbolically: its inputs' symbols are
    /// specialised and its shape is the capture-time one.
    pub fn opaque(&mut self, node: &Node, args: &[SymShape]) -> SymShape {
        for a in args {
            self.solver.specialize_all(a);
        }
        fixed_shape(&node.shape)
    }

    /// Broadcasts two shapes (right-aligned): a constant 1 takes the other's size, any
    /// other pair must be equal (symbols never take the size 1: guards keep them >= 2).
    pub fn broadcast(&mut self, a: &[SymExpr], b: &[SymExpr]) -> SymShape {
        let n = a.len().max(b.len());
        let one = SymExpr::konst(1);
        (0..n)
            .map(|i| {
                let p = (i + a.len()).checked_sub(n).and_then(|j| a.get(j));
                let q = (i + b.len()).checked_sub(n).and_then(|j| b.get(j));
                match (p, q) {
                    (Some(p), Some(q)) if *p == one => q.clone(),
                    (Some(p), Some(q)) if *q == one => p.clone(),
                    (Some(p), Some(q)) => {
                        self.solver.unify(p, q);
                        p.clone()
                    }
                    (Some(p), None) => p.clone(),
                    (None, Some(q)) => q.clone(),
                    (None, None) => one.clone(),
                }
            })
            .collect()
    }

    fn unify_shapes(&mut self, a: &[SymExpr], b: &[SymExpr]) {
        for (p, q) in a.iter().zip(b) {
            self.solver.unify(p, q);
        }
    }

    fn repeat(&mut self, x: &[SymExpr], reps: &[usize]) -> SymShape {
        let pad = reps.len().saturating_sub(x.len());
        let mut out = Vec::with_capacity(reps.len());
        for (i, &r) in reps.iter().enumerate() {
            let e = if i < pad {
                SymExpr::konst(r as i64)
            } else {
                let e = x.get(i - pad).cloned().unwrap_or_default();
                match e.scale(r as i64) {
                    Some(v) => v,
                    None => {
                        self.solver.specialize(&e);
                        SymExpr::konst(self.solver.eval(&e).unwrap_or(0) * r as i64)
                    }
                }
            };
            out.push(e);
        }
        out
    }

    /// The product of a shape's sizes when it is affine (at most one symbolic factor),
    /// else the shape's symbols are specialised and the product is a constant.
    pub fn numel(&mut self, s: &[SymExpr]) -> SymExpr {
        match product(s) {
            Some(p) => p,
            None => {
                self.solver.specialize_all(s);
                let n = s
                    .iter()
                    .try_fold(1i64, |acc, e| acc.checked_mul(self.solver.eval(e)?));
                SymExpr::konst(n.unwrap_or(0))
            }
        }
    }

    fn matmul(&mut self, a: &[SymExpr], b: &[SymExpr]) -> SymShape {
        let (na, nb) = (a.len(), b.len());
        if na == 0 || nb == 0 {
            return Vec::new();
        }
        let kb = if nb == 1 { &b[0] } else { &b[nb - 2] };
        self.solver.unify(&a[na - 1], kb);
        let ba = if na > 2 { &a[..na - 2] } else { &[][..] };
        let bb = if nb > 2 { &b[..nb - 2] } else { &[][..] };
        let mut out = self.broadcast(ba, bb);
        if na > 1 {
            out.push(a[na - 2].clone());
        }
        if nb > 1 {
            out.push(b[nb - 1].clone());
        }
        out
    }

    /// scaled_dot_product_attention of q `[*, L, E]`, k `[*, S, E]`, v `[*, S, Ev]` (one
    /// batch shape) and an optional mask broadcasting to `[*, L, S]`: `[*, L, Ev]`, with
    /// L, S and the batch left symbolic (as matmul's).
    fn attention(&mut self, node: &Node, args: &[SymShape]) -> SymShape {
        let (Some(q), Some(k), Some(v)) = (args.first(), args.get(1), args.get(2)) else {
            return self.opaque(node, args);
        };
        let n = q.len();
        if n < 2 || k.len() != n || v.len() != n {
            return self.opaque(node, args);
        }
        self.unify_shapes(&q[..n - 2], &k[..n - 2]);
        self.unify_shapes(&k[..n - 1], &v[..n - 1]);
        self.solver.unify(&q[n - 1], &k[n - 1]);
        if let Some(m) = args.get(3) {
            let mut scores = q[..n - 1].to_vec();
            scores.push(k[n - 2].clone());
            self.broadcast(m, &scores);
        }
        let mut out = q.clone();
        out[n - 1] = v[n - 1].clone();
        out
    }

    /// A fused recurrence over xp `[T, B, G*H]`, `states` initial states `[B, H]`, then
    /// W_hh and the bias: the rows `[T, B, states*H]` with T and B left symbolic (the
    /// states' batch unified with xp's); every other size must be fixed (else all are
    /// specialised). A gradient kernel's node has the forward's rows shape too.
    fn recurrence(&mut self, node: &Node, args: &[SymShape], states: usize) -> SymShape {
        let fixed = |s: &[SymExpr]| s.iter().all(|e| e.as_const().is_some());
        let rows = match node.op {
            IrOp::GradKernel(_) => None,
            _ => node.shape.get(2).copied(),
        };
        let Some(xp) = args.first().filter(|x| x.len() == 3 && fixed(&x[2..])) else {
            return self.opaque(node, args);
        };
        let st = args.get(1..=states).unwrap_or(&[]);
        let rest = args.get(1 + states..).unwrap_or(&[]);
        if st.len() != states
            || !st.iter().all(|s| s.len() == 2 && fixed(&s[1..]))
            || !rest.iter().all(|a| fixed(a))
        {
            return self.opaque(node, args);
        }
        for s in st {
            self.solver.unify(&xp[1], &s[0]);
        }
        let h = rest
            .first()
            .and_then(|w| w.get(1))
            .and_then(SymExpr::as_const);
        let width = rows.map(|r| r as i64).or(h.map(|h| h * states as i64));
        match width {
            Some(w) => vec![xp[0].clone(), xp[1].clone(), SymExpr::konst(w)],
            None => self.opaque(node, args),
        }
    }

    fn cat(&mut self, node: &Node, args: &[SymShape], dim: usize) -> SymShape {
        let first = args.first().cloned().unwrap_or_default();
        let mut total = SymExpr::konst(0);
        for a in args {
            for (d, (p, q)) in first.iter().zip(a).enumerate() {
                if d != dim {
                    self.solver.unify(p, q);
                }
            }
            match a.get(dim).and_then(|e| total.add(e)) {
                Some(t) => total = t,
                None => return self.opaque(node, args),
            }
        }
        let mut out = first;
        if let Some(e) = out.get_mut(dim) {
            *e = total;
        }
        out
    }

    /// Normalises every shape, renumbers live symbols in input order and checks every
    /// shape against the capture-time one.
    fn finish(self, spec: &InputSpec) -> Result<SymInfo> {
        super::finish::finish(self, spec)
    }
}

fn input_shape(node: &Node, dims: Option<&Vec<Option<SymId>>>) -> SymShape {
    node.shape
        .iter()
        .enumerate()
        .map(
            |(d, &n)| match dims.and_then(|v| v.get(d)).copied().flatten() {
                Some(s) => SymExpr::sym(s),
                None => SymExpr::konst(n as i64),
            },
        )
        .collect()
}

fn reduced(x: &[SymExpr], dims: &[usize], keepdim: bool) -> SymShape {
    let mut out = Vec::new();
    for (i, e) in x.iter().enumerate() {
        if dims.contains(&i) {
            if keepdim {
                out.push(SymExpr::konst(1));
            }
        } else {
            out.push(e.clone());
        }
    }
    out
}

/// The product of `s` when at most one factor is symbolic.
pub fn product(s: &[SymExpr]) -> Option<SymExpr> {
    let mut acc = SymExpr::konst(1);
    for e in s {
        acc = match (acc.as_const(), e.as_const()) {
            (_, Some(c)) => acc.scale(c)?,
            (Some(c), None) => e.scale(c)?,
            (None, None) => return None,
        };
    }
    Some(acc)
}

impl Walk<'_> {
    fn index(
        &mut self,
        node: &Node,
        x: &[SymExpr],
        indices: &[IrIndex],
        args: &[SymShape],
    ) -> SymShape {
        // A 0-d int index (a loop index) removes its dim like an int.
        let scalar = |arg: &usize| args.get(*arg).is_some_and(|s| s.is_empty());
        let tensor_index = indices.iter().any(|i| match i {
            IrIndex::Mask { .. } => true,
            IrIndex::Indices { arg } => !scalar(arg),
            _ => false,
        });
        if tensor_index {
            return self.opaque(node, args);
        }
        let consumed = indices
            .iter()
            .filter(|i| {
                matches!(
                    i,
                    IrIndex::Int(_)
                        | IrIndex::Slice { .. }
                        | IrIndex::SymSlice { .. }
                        | IrIndex::Indices { .. }
                )
            })
            .count();
        let mut out = Vec::new();
        let mut d = 0usize;
        for ix in indices {
            match ix {
                IrIndex::Int(_) | IrIndex::Indices { .. } => d += 1,
                IrIndex::Slice { start, stop, step } => {
                    let Some(e) = x.get(d) else {
                        return self.opaque(node, args);
                    };
                    out.push(self.slice(e, *start, *stop, *step));
                    d += 1;
                }
                IrIndex::SymSlice { start, len, sym } => {
                    let Some(e) = x.get(d).cloned() else {
                        return self.opaque(node, args);
                    };
                    out.push(self.sym_slice_len(&e, *start, *len, sym));
                    d += 1;
                }
                IrIndex::NewAxis => out.push(SymExpr::konst(1)),
                IrIndex::Ellipsis => {
                    let fill = x.len().saturating_sub(consumed);
                    out.extend(x.iter().skip(d).take(fill).cloned());
                    d += fill;
                }
                IrIndex::Mask { .. } => {}
            }
        }
        out.extend(x.iter().skip(d).cloned());
        out
    }

    /// The length of `e[start:stop:step]`.
    fn slice(
        &mut self,
        e: &SymExpr,
        start: Option<i64>,
        stop: Option<i64>,
        step: Option<i64>,
    ) -> SymExpr {
        let e = self.solver.norm(e);
        let n = self.solver.eval(&e).unwrap_or(0);
        if e.as_const().is_none() && matches!(step, None | Some(1)) {
            if let Some(r) = self.sym_slice(&e, start.unwrap_or(0), stop) {
                return r;
            }
        }
        self.solver.specialize(&e);
        SymExpr::konst(slice_len(n, start, stop, step.unwrap_or(1)))
    }

    /// A size over input dims (`dim_ref`) as an expression over this analysis's symbols
    /// (a fixed input dim is its size).
    pub(super) fn over_symbols(&self, e: &SymExpr) -> Option<SymExpr> {
        let ok = std::cell::Cell::new(true);
        let out = e.subst(&|r| {
            let (slot, d) = dim_of_ref(r);
            if let Some(s) = self
                .spec
                .dims
                .get(slot)
                .and_then(|v| v.get(d))
                .copied()
                .flatten()
            {
                return SymExpr::sym(s);
            }
            let n = self.g.inputs.get(slot).and_then(|i| self.g.node(*i));
            match n.and_then(|n| n.shape.get(d)) {
                Some(&v) => SymExpr::konst(v as i64),
                None => {
                    ok.set(false);
                    SymExpr::konst(0)
                }
            }
        });
        out.filter(|_| ok.get())
    }

    /// The length of a `SymSlice` `[start:start + len]` of a dim of size `e`: `len`
    /// while `0 <= len` and `start + len <= e` (guards), else its capture-time length.
    fn sym_slice_len(&mut self, e: &SymExpr, start: i64, len: i64, sym: &SymExpr) -> SymExpr {
        let l = self.over_symbols(sym).map(|l| self.solver.norm(&l));
        let room = l
            .as_ref()
            .and_then(|l| e.add(&SymExpr::konst(-start))?.add(&l.scale(-1)?));
        match (l, room) {
            (Some(l), Some(room)) if self.solver.eval(&l) == Some(len) => {
                self.solver.require_nonneg(&l);
                self.solver.require_nonneg(&room);
                self.solver.norm(&l)
            }
            (l, _) => {
                if let Some(l) = l {
                    self.solver.specialize(&l);
                }
                self.solver.specialize(e);
                SymExpr::konst(len)
            }
        }
    }

    /// A unit-step slice of a symbolic size whose length is affine given a lower bound.
    fn sym_slice(&mut self, e: &SymExpr, start: i64, stop: Option<i64>) -> Option<SymExpr> {
        e.as_sym()?;
        let n = self.solver.eval(e)?;
        let (len, need) = match (start, stop) {
            (a, None) if a >= 0 => (e.add(&SymExpr::konst(-a))?, a + 2),
            (a, None) => (SymExpr::konst(-a), -a),
            (a, Some(b)) if a >= 0 && b >= a => (SymExpr::konst(b - a), b),
            (a, Some(b)) if a >= 0 && b < 0 => (e.add(&SymExpr::konst(b - a))?, a - b + 2),
            _ => return None,
        };
        if n < need {
            return None;
        }
        self.solver.require_min(e, need);
        Some(len)
    }
}

/// Python's slice length for a dim of size `n`.
pub fn slice_len(n: i64, start: Option<i64>, stop: Option<i64>, step: i64) -> i64 {
    if step == 0 {
        return 0;
    }
    let clamp = |v: i64, lo: i64, hi: i64| v.max(lo).min(hi);
    let norm = |v: i64, lo: i64, hi: i64| clamp(if v < 0 { v + n } else { v }, lo, hi);
    let (a, b) = if step > 0 {
        (
            start.map_or(0, |v| norm(v, 0, n)),
            stop.map_or(n, |v| norm(v, 0, n)),
        )
    } else {
        (
            start.map_or(n - 1, |v| norm(v, -1, n - 1)),
            stop.map_or(-1, |v| norm(v, -1, n - 1)),
        )
    };
    if step > 0 {
        ((b - a).max(0) + step - 1) / step
    } else {
        ((a - b).max(0) + (-step) - 1) / (-step)
    }
}
