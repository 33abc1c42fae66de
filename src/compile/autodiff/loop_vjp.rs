//! The backward body of a captured loop: the forward body is replayed once through the
//! tensor library on example values (recording autograd and, with a tracer, a copy of
//! the body), eager's own gradient rules are recorded from its outputs as for a whole
//! function (`autodiff::derive`), and both are joined into one region that runs
//! iteration `t`'s vector-Jacobian product. The values that product reads come from the
//! forward loop's scan outputs (row `t` of a stack): the carried values each iteration
//! starts from and every computed body value the rules read (an activation's output,
//! a sum), so the reverse loop does not recompute the forward body; only reads that are
//! rows of an invariant (`x[t]`) or not a value of the forward body are recomputed there
//! from the saved rows.
//!
//! The joined region's inputs are `[index, dcarried..., acc..., stacks..., invariants...]`
//! (stacks: the carried ones, then the saved reads') and its outputs
//! `[dcarried..., acc...]`: the gradients of the carried values flow to the previous
//! iteration, those of the invariants that need one are summed in `acc`.

use crate::compile::autodiff::loop_post::{self, Hoisted, Kind, Rows};
use crate::compile::autodiff::{self, Derived};
use crate::compile::capture::trace::{self, BreakReason, GraphBreak, Tracer};
use crate::compile::ir::control::{LoopSpec, TripCount};
use crate::compile::ir::{Graph, InputKind, IrIndex, IrOp, Node, NodeId, PathStep};
use crate::compile::runtime::exec;
use crate::ops::BinaryOp;
use crate::tensor::shape::Dims;
use crate::tensor::{creation, Tensor};
use std::collections::HashMap;

/// A loop body's backward (see the module doc).
pub struct BodyVjp {
    pub body: Graph,
    /// Positions (among the loop's invariants) of those whose gradient is accumulated.
    pub grad_inv: Vec<usize>,
    /// The invariants whose gradient is summed after the loop from its scan outputs.
    pub hoisted: Vec<Hoisted>,
    /// How many scan outputs the body has (after the carried values).
    pub scan: usize,
    /// Nodes of the forward body whose per-iteration values the backward body reads
    /// (to add as scan outputs of the forward loop, after the carried values' stacks).
    pub saved: Vec<NodeId>,
}

pub(in crate::compile) fn brk(what: &'static str) -> GraphBreak {
    GraphBreak {
        reason: BreakReason::Autograd(what),
        span: None,
    }
}

fn internal(msg: String) -> GraphBreak {
    GraphBreak {
        reason: BreakReason::Internal(format!(
            "compiled autograd: a loop's backward could not be recorded: {msg}"
        )),
        span: None,
    }
}

/// The backward body of loop `fwd` (its body's outputs: the carried values), from
/// example body inputs `ex` (`[index, carried..., invariants...]`) and the number of
/// iterations `n` the saved stacks have at capture.
pub fn derive_body(fwd: &LoopSpec, ex: &[Tensor], n: usize) -> Result<BodyVjp, GraphBreak> {
    let nc = fwd.carried;
    let (mut tr, inputs, vals, outs) = replay(&fwd.body, ex, nc)?;
    let mut of_fwd: HashMap<NodeId, usize> = HashMap::new();
    for (j, v) in vals.iter().enumerate().rev() {
        if let Some(id) = tr.node_of(v) {
            of_fwd.insert(id, j);
        }
    }
    let (derived, _) = trace::isolated(Tracer::default(), || {
        autodiff::derive(&mut tr, &outs, &inputs)
    });
    let d = derived?.ok_or_else(|| internal("no carried value needs grad".into()))?;
    let ni = ex.len().saturating_sub(1 + nc);
    if outs
        .iter()
        .any(|o| inputs[1 + nc..].iter().any(|x| x.same(o)))
    {
        return Err(brk("a loop carrying an invariant value unchanged"));
    }
    let mut grad_inv = Vec::new();
    let mut hoist = Vec::new();
    for i in (0..ni).filter(|i| d.slots.contains(&(1 + nc + i))) {
        let kind = d_out(&d, 1 + nc + i)
            .and_then(|g| loop_post::classify(&d.graph, g, ex[1 + nc + i].shape()));
        match kind {
            Some(k) => hoist.push((i, k)),
            None => grad_inv.push(i),
        }
    }
    let (saved, rows) = saved_reads(&tr.graph, &d.reads, &of_fwd, &vals);
    let rows_of = match fwd.trip {
        TripCount::Dim { arg, dim: 0 } => arg.checked_sub(nc),
        _ => None,
    };
    let join = Join {
        nc,
        n,
        rows_of,
        ex,
        r: &tr.graph,
        d: &d,
        rows,
    };
    let (body, hoisted) = join.build(&grad_inv, &hoist, &outs, &inputs)?;
    Ok(BodyVjp {
        scan: body.outputs.len() - nc - grad_inv.len(),
        body,
        grad_inv,
        hoisted,
        saved: saved.iter().map(|&j| NodeId(j as u32)).collect(),
    })
}

/// The node of `d`'s graph that is the gradient of forward input `slot`.
fn d_out(d: &Derived, slot: usize) -> Option<NodeId> {
    let k = d.slots.iter().position(|s| *s == slot)?;
    d.graph.outputs.get(k).copied()
}

/// The reads of the backward (nodes of the replayed body `r`) saved by the forward
/// loop: computed values of the forward body (`of_fwd`: replayed node -> forward body
/// node, `vals`: the forward body's example values). Inputs are the loop's own, and an
/// `Index` (a row of an invariant) or a constant costs less to recompute than to save.
/// Returns the forward body nodes to save and, per replayed node, its saved example
/// value and position among them.
fn saved_reads(
    r: &Graph,
    reads: &[NodeId],
    of_fwd: &HashMap<NodeId, usize>,
    vals: &[Tensor],
) -> (Vec<usize>, HashMap<NodeId, (usize, Tensor)>) {
    let mut saved: Vec<usize> = Vec::new();
    let mut rows = HashMap::new();
    for read in reads {
        let cheap = r.node(*read).is_none_or(|n| {
            matches!(
                n.op,
                IrOp::Input { .. } | IrOp::Const(_) | IrOp::Index { .. }
            )
        });
        let (false, Some(&j), false) = (cheap, of_fwd.get(read), rows.contains_key(read)) else {
            continue;
        };
        let Some(v) = vals.get(j) else { continue };
        rows.insert(*read, (saved.len(), v.clone()));
        saved.push(j);
    }
    (saved, rows)
}

/// A replayed body: its tracer, inputs, the values of its nodes and its outputs.
type Replay = (Box<Tracer>, Vec<Tensor>, Vec<Tensor>, Vec<Tensor>);

/// Replays body `b` on fresh handles of `ex` (float carried values and the invariants
/// that require grad made to require grad) with a tracer: the tracer, the inputs, the
/// value of every node of `b` and the body's outputs.
fn replay(b: &Graph, ex: &[Tensor], nc: usize) -> Result<Replay, GraphBreak> {
    let mut inputs = Vec::with_capacity(ex.len());
    for (s, x) in ex.iter().enumerate() {
        let want = match s {
            0 => false,
            s if s <= nc => x.dtype().is_float(),
            _ => x.requires_grad(),
        };
        let t = x.detach();
        if want {
            trace::paused(|| t.set_requires_grad(true)).map_err(|e| internal(e.message))?;
        }
        inputs.push(t);
    }
    let mut tr = Tracer::default();
    for (s, t) in inputs.iter().enumerate() {
        tr.add_arg(t, vec![PathStep::Index(s)]);
    }
    let (outs, tr) = trace::isolated(tr, || {
        let _grad = crate::autograd::enable_grad();
        eval_all(
            b,
            &inputs,
            "backward through a loop with control flow or print inside",
        )
    });
    let tr = tr.ok_or_else(|| internal("the tracer was lost".into()))?;
    let (vals, outs) = outs?;
    if let Some(b) = tr.breaks.first() {
        return Err(b.clone());
    }
    Ok((tr, inputs, vals, outs))
}

/// Runs `b` node by node through the tensor library (so autograd and the tracer see
/// every op); returns the value of every node and the outputs. `nested`: the break
/// when `b` holds control flow or a print (its replay would not be one region).
pub(super) fn eval_all(
    b: &Graph,
    inputs: &[Tensor],
    nested: &'static str,
) -> Result<(Vec<Tensor>, Vec<Tensor>), GraphBreak> {
    let lost = || internal("a value of the body is missing".into());
    let mut vals: Vec<Tensor> = Vec::with_capacity(b.nodes.len());
    for node in &b.nodes {
        let args: Vec<Tensor> = node
            .args
            .iter()
            .map(|a| vals.get(a.index()).cloned())
            .collect::<Option<_>>()
            .ok_or_else(lost)?;
        let v = match &node.op {
            IrOp::Input { slot, .. } => inputs.get(*slot).cloned().ok_or_else(lost)?,
            IrOp::Const(c) => {
                let sc = trace::scope();
                let v = c.contiguous_copy().map_err(|e| internal(e.message))?;
                sc.record_const(&v);
                v
            }
            op if op.is_control() || op.has_effect() || matches!(op, IrOp::Out { .. }) => {
                return Err(brk(nested));
            }
            _ => exec::eval(node, &args, inputs).map_err(|e| internal(e.message))?,
        };
        vals.push(v);
    }
    let outs = b
        .outputs
        .iter()
        .map(|o| vals.get(o.index()).cloned())
        .collect::<Option<_>>()
        .ok_or_else(lost)?;
    Ok((vals, outs))
}

/// Joins the replayed body `r` and its backward `d` into the backward loop's body.
struct Join<'a> {
    nc: usize,
    n: usize,
    /// The invariant (position) whose rows the forward loop runs over, if any.
    rows_of: Option<usize>,
    ex: &'a [Tensor],
    r: &'a Graph,
    d: &'a Derived,
    /// Replayed nodes read from a saved stack: position among the saved, example value.
    rows: HashMap<NodeId, (usize, Tensor)>,
}

/// The region inputs of the joined body.
struct Inputs {
    index: NodeId,
    dcar: Vec<NodeId>,
    acc: Vec<NodeId>,
    stacks: Vec<NodeId>,
    /// The saved reads' stacks.
    saved: Vec<NodeId>,
    invs: Vec<NodeId>,
}

pub(super) fn bound(c: &mut Graph, t: &Tensor) -> NodeId {
    c.add_input(InputKind::Bound, t.dtype(), t.shape().into(), None)
}

pub(super) fn remapped(node: &Node, map: &[NodeId]) -> Result<Node, GraphBreak> {
    let args = node
        .args
        .iter()
        .map(|a| map.get(a.index()).copied())
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| internal("an arg was not copied".into()))?;
    Ok(Node {
        args,
        ..node.clone()
    })
}

impl Join<'_> {
    fn inputs(&self, c: &mut Graph, grad_inv: &[usize]) -> Inputs {
        let index = c.add_input(
            InputKind::Bound,
            crate::tensor::dtype::DType::I64,
            Dims::new(),
            None,
        );
        let carried = &self.ex[1..=self.nc];
        let invs = &self.ex[1 + self.nc..];
        let dcar = carried.iter().map(|t| bound(c, t)).collect();
        let acc = grad_inv.iter().map(|&i| bound(c, &invs[i])).collect();
        let mut stack = |t: &Tensor| {
            let mut shape = Dims::from(t.shape());
            shape.insert(0, self.n);
            c.add_input(InputKind::Bound, t.dtype(), shape, None)
        };
        let stacks = carried.iter().map(&mut stack).collect();
        let mut by_pos: Vec<&(usize, Tensor)> = self.rows.values().collect();
        by_pos.sort_by_key(|(k, _)| *k);
        let saved = by_pos.into_iter().map(|(_, t)| stack(t)).collect();
        let invs = invs.iter().map(|t| bound(c, t)).collect();
        Inputs {
            index,
            dcar,
            acc,
            stacks,
            saved,
            invs,
        }
    }

    /// The joined body (outputs: the carried values' gradients, the accumulated
    /// invariants' (`grad_inv`), then the rows the hoisted ones (`hoist`) stack, each
    /// once) and the hoisted invariants' plan.
    fn build(
        &self,
        grad_inv: &[usize],
        hoist: &[(usize, Kind)],
        outs: &[Tensor],
        inputs: &[Tensor],
    ) -> Result<(Graph, Vec<Hoisted>), GraphBreak> {
        let mut c = Graph::default();
        let io = self.inputs(&mut c, grad_inv);
        let rmap = self.recompute(&mut c, &io)?;
        let gmap = self.vjp(&mut c, &io, &rmap)?;
        let gout = |slot: usize| {
            let o = d_out(self.d, slot)?;
            gmap.get(o.index()).copied()
        };
        for j in 0..self.nc {
            let mut terms: Vec<NodeId> = gout(1 + j).into_iter().collect();
            for (jj, o) in outs.iter().enumerate() {
                if o.same(&inputs[1 + j]) {
                    terms.push(io.dcar[jj]);
                }
            }
            let g = sum(&mut c, &terms, &self.ex[1 + j])?;
            c.outputs.push(g);
        }
        for (k, &i) in grad_inv.iter().enumerate() {
            let g = gout(1 + self.nc + i).ok_or_else(|| internal("a lost gradient".into()))?;
            let s = sum(&mut c, &[io.acc[k], g], &self.ex[1 + self.nc + i])?;
            c.outputs.push(s);
        }
        let mut stacked = Vec::new();
        let mut hoisted = Vec::with_capacity(hoist.len());
        for &(inv, kind) in hoist {
            let (x, y) = match kind {
                Kind::Outer { x, y } => (x, Some(y)),
                Kind::Sum { g } => (g, None),
            };
            let rows = self.rows(&mut c, &io, &gmap, x, &mut stacked)?;
            let outer = y
                .map(|y| self.rows(&mut c, &io, &gmap, y, &mut stacked))
                .transpose()?;
            hoisted.push(Hoisted { inv, rows, outer });
        }
        Ok((c, hoisted))
    }

    /// Where the rows of node `v` of the recorded backward (copied as `gmap` says) come
    /// from after the loop: a reverse-loop arg holding them all, a scan output already
    /// stacking them (`stacked`: the joined nodes stacked so far, in scan order), or a
    /// new scan output.
    fn rows(
        &self,
        c: &mut Graph,
        io: &Inputs,
        gmap: &[NodeId],
        v: NodeId,
        stacked: &mut Vec<NodeId>,
    ) -> Result<Rows, GraphBreak> {
        let id = *gmap
            .get(v.index())
            .ok_or_else(|| internal("a hoisted gradient's value is missing".into()))?;
        let root = vector_root(c, id);
        if let Some(k) = self.whole(c, io, root) {
            return Ok(Rows::Arg(k));
        }
        if let Some(k) = stacked.iter().position(|s| *s == root) {
            return Ok(Rows::Scan(k));
        }
        let row = self.row_of(c, gmap, v)?;
        c.outputs.push(row);
        stacked.push(root);
        Ok(Rows::Scan(stacked.len() - 1))
    }

    /// The reverse-loop arg whose rows are the values of joined node `id` over the
    /// iterations, in index order, when `id` is row `index` of a 2-D region input: a carried value's or a saved read's stack, or the invariant the
    /// forward loop runs over (`rows_of`; any other invariant may have more rows).
    fn whole(&self, c: &Graph, io: &Inputs, id: NodeId) -> Option<usize> {
        let n = c.node(id)?;
        let want: usize = n.shape.iter().product();
        let (IrOp::Index { indices }, &[src, t]) = (&n.op, n.args.as_slice()) else {
            return None;
        };
        let by_index = matches!(indices.as_slice(), [IrIndex::Indices { arg: 1 }]);
        let s = c.node(src)?;
        let IrOp::Input { slot, .. } = s.op else {
            return None;
        };
        let shape_ok = s.shape.len() == 2 && s.shape.get(1) == Some(&want) && s.dtype == n.dtype;
        let whole = io.stacks.contains(&src)
            || io.saved.contains(&src)
            || io
                .invs
                .iter()
                .position(|&i| i == src)
                .is_some_and(|i| self.rows_of == Some(i));
        if by_index && t == io.index && shape_ok && whole {
            slot.checked_sub(1)
        } else {
            None
        }
    }

    /// Node `v` of the recorded backward (copied as `gmap` says) as a row to stack: a
    /// vector as it is, an `[k, 1]` or `[1, n]` matrix reshaped to a vector.
    fn row_of(&self, c: &mut Graph, gmap: &[NodeId], v: NodeId) -> Result<NodeId, GraphBreak> {
        let lost = || internal("a hoisted gradient's value is missing".into());
        let node = self.d.graph.node(v).ok_or_else(lost)?;
        let id = *gmap.get(v.index()).ok_or_else(lost)?;
        if node.shape.len() <= 1 {
            return Ok(id);
        }
        let numel: usize = node.shape.iter().product();
        let shape = Dims::from(&[numel][..]);
        Ok(c.push(Node {
            op: IrOp::Reshape {
                shape: shape.clone(),
            },
            args: vec![id],
            dtype: node.dtype,
            shape,
            span: None,
        }))
    }

    /// Copies the replayed body: a carried input and a saved read read row `index` of
    /// their stacks (the copies no read needs are left to dead-code elimination).
    fn recompute(&self, c: &mut Graph, io: &Inputs) -> Result<Vec<NodeId>, GraphBreak> {
        let mut map = Vec::with_capacity(self.r.nodes.len());
        let row = |c: &mut Graph, node: &Node, stack: NodeId| {
            c.push(Node {
                op: IrOp::Index {
                    indices: vec![IrIndex::Indices { arg: 1 }],
                },
                args: vec![stack, io.index],
                dtype: node.dtype,
                shape: node.shape.clone(),
                span: None,
            })
        };
        for (i, node) in self.r.nodes.iter().enumerate() {
            let saved = self.rows.get(&NodeId(i as u32));
            let id = match (&node.op, saved.and_then(|(k, _)| io.saved.get(*k))) {
                (_, Some(&stack)) => row(c, node, stack),
                (IrOp::Input { slot: 0, .. }, _) => io.index,
                (IrOp::Input { slot, .. }, _) if *slot <= self.nc => {
                    row(c, node, io.stacks[slot - 1])
                }
                (IrOp::Input { slot, .. }, _) => *io
                    .invs
                    .get(slot - 1 - self.nc)
                    .ok_or_else(|| internal("an input out of range".into()))?,
                _ => c.push(remapped(node, &map)?),
            };
            map.push(id);
        }
        Ok(map)
    }

    /// Copies the recorded backward: its inputs are the carried values' gradients and
    /// values of the recomputed body.
    fn vjp(&self, c: &mut Graph, io: &Inputs, rmap: &[NodeId]) -> Result<Vec<NodeId>, GraphBreak> {
        let nd = self.d.douts.len();
        let lost = || internal("a backward input is unknown".into());
        let mut map = Vec::with_capacity(self.d.graph.nodes.len());
        for node in &self.d.graph.nodes {
            let id = match node.op {
                IrOp::Input { slot, .. } if slot < nd => {
                    *io.dcar.get(self.d.douts[slot]).ok_or_else(lost)?
                }
                IrOp::Input { slot, .. } => {
                    let read = self.d.reads.get(slot - nd).ok_or_else(lost)?;
                    *rmap.get(read.index()).ok_or_else(lost)?
                }
                _ => c.push(remapped(node, &map)?),
            };
            map.push(id);
        }
        Ok(map)
    }
}

/// The vector a row value `id` of `c` relabels: through reshapes, permutes and
/// expands of values with at most one dim larger than 1 and the same element count
/// (each the same elements in the same order), the first value that is none.
fn vector_root(c: &Graph, mut id: NodeId) -> NodeId {
    let vector_like = |n: &Node, numel: usize| {
        n.shape.iter().filter(|&&d| d != 1).count() <= 1
            && n.shape.iter().product::<usize>() == numel
    };
    let Some(numel) = c.node(id).map(|n| n.shape.iter().product::<usize>()) else {
        return id;
    };
    while let Some(n) = c.node(id) {
        let relabel = matches!(
            n.op,
            IrOp::Reshape { .. } | IrOp::Permute { .. } | IrOp::Expand { .. }
        );
        match n.args.as_slice() {
            &[a] if relabel
                && vector_like(n, numel)
                && c.node(a).is_some_and(|x| vector_like(x, numel)) =>
            {
                id = a;
            }
            _ => break,
        }
    }
    id
}

/// The sum of `terms` (zeros shaped as `like` when there is none).
pub(super) fn sum(c: &mut Graph, terms: &[NodeId], like: &Tensor) -> Result<NodeId, GraphBreak> {
    let node = |op, args| Node {
        op,
        args,
        dtype: like.dtype(),
        shape: like.shape().into(),
        span: None,
    };
    let Some((&first, rest)) = terms.split_first() else {
        let z = trace::paused(|| creation::zeros(like.shape(), like.dtype()))
            .map_err(|e| internal(e.message))?;
        return Ok(c.push(node(IrOp::Const(z), Vec::new())));
    };
    Ok(rest.iter().fold(first, |acc, &t| {
        c.push(node(IrOp::Binary(BinaryOp::Add), vec![acc, t]))
    }))
}
