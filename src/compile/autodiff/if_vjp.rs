//! The backward regions of a captured tensor `if`: each side's region is replayed once
//! through the tensor library on the capture-time values of the branch's captured
//! inputs (recording autograd and, with a tracer, a copy of the side), eager's own
//! gradient rules are recorded from its outputs (`autodiff::derive`), and both are
//! joined into one region: the side recomputed from the captured inputs, then its
//! vector-Jacobian product. A side that leaves a result unchanged (the result is a
//! captured input) passes that result's gradient to the input.
//!
//! Each backward region's inputs are `[dresults..., captured...]` (the gradients of the
//! results that require grad, then the forward branch's captured inputs) and its
//! outputs the gradients of the captured inputs that need one. Both sides must need the
//! same inputs' gradients: eager leaves an input the taken side does not differentiate
//! without a gradient (None, not zeros: an optimizer skips it), which one compiled
//! backward serving both sides could not reproduce, so that case is a graph break.

use crate::compile::autodiff::loop_vjp::{bound, brk, eval_all, remapped, sum};
use crate::compile::autodiff::{self, Derived};
use crate::compile::capture::trace::{self, BreakReason, GraphBreak, Tracer};
use crate::compile::ir::control::Branch;
use crate::compile::ir::{Graph, IrOp, NodeId, PathStep};
use crate::tensor::Tensor;

fn internal(msg: &str) -> GraphBreak {
    GraphBreak {
        reason: BreakReason::Internal(format!(
            "compiled autograd: a branch's backward could not be recorded: {msg}"
        )),
        span: None,
    }
}

/// The backward of a branch: its two regions (`[then, else]`, see the module doc), the
/// captured inputs (positions) whose gradients they output and, per side and output,
/// the results (positions in `res`) whose gradients that output reads.
pub struct BranchVjp {
    pub branch: Branch,
    pub grads: Vec<usize>,
    pub deps: [Vec<Vec<usize>>; 2],
}

/// One side replayed and differentiated.
struct Side {
    tr: Box<Tracer>,
    inputs: Vec<Tensor>,
    outs: Vec<Tensor>,
    d: Option<Derived>,
}

/// The backward of branch `fwd` (region inputs: the captured values, outputs: the
/// results) from the captured values `ex` at capture; `res`: the results that require
/// grad (on both sides).
pub fn derive_branch(fwd: &Branch, ex: &[Tensor], res: &[usize]) -> Result<BranchVjp, GraphBreak> {
    let then_s = differentiate(&fwd.then_g, ex, res)?;
    let else_s = differentiate(&fwd.else_g, ex, res)?;
    let grads = then_s.uses(res);
    if grads != else_s.uses(res) {
        return Err(brk(
            "backward through a tensor `if` whose sides differentiate different inputs",
        ));
    }
    if grads.is_empty() {
        return Err(internal("no captured input gets a gradient"));
    }
    let then_g = then_s.join(ex, res, &grads)?;
    let else_g = else_s.join(ex, res, &grads)?;
    let deps = [
        result_deps(&then_g, res.len()),
        result_deps(&else_g, res.len()),
    ];
    Ok(BranchVjp {
        branch: Branch { then_g, else_g },
        grads,
        deps,
    })
}

/// Per output of backward region `g` (its first `nd` inputs: the results' gradients),
/// the results whose gradients it reads: eager gives an input no gradient (None, not
/// zeros) when none of those results got one.
fn result_deps(g: &Graph, nd: usize) -> Vec<Vec<usize>> {
    let dres = g.inputs.get(..nd).unwrap_or_default();
    let mut reads: Vec<Vec<usize>> = Vec::with_capacity(g.nodes.len());
    for (i, node) in g.nodes.iter().enumerate() {
        let mut r: Vec<usize> = dres
            .iter()
            .position(|d| d.index() == i)
            .into_iter()
            .collect();
        for a in &node.args {
            for &k in reads.get(a.index()).map_or(&[][..], Vec::as_slice) {
                if !r.contains(&k) {
                    r.push(k);
                }
            }
        }
        reads.push(r);
    }
    g.outputs
        .iter()
        .map(|o| reads.get(o.index()).cloned().unwrap_or_default())
        .collect()
}

/// Replays side `g` on fresh handles of `ex` (those that require grad made to) with a
/// tracer and records its backward from the results `res`.
fn differentiate(g: &Graph, ex: &[Tensor], res: &[usize]) -> Result<Side, GraphBreak> {
    let mut inputs = Vec::with_capacity(ex.len());
    for x in ex {
        let t = x.detach();
        if x.requires_grad() {
            trace::paused(|| t.set_requires_grad(true)).map_err(|e| internal(&e.message))?;
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
            g,
            &inputs,
            "backward through a tensor `if` with control flow or print inside",
        )
    });
    let mut tr = tr.ok_or_else(|| internal("the tracer was lost"))?;
    let (_, outs) = outs?;
    if let Some(b) = tr.breaks.first() {
        return Err(b.clone());
    }
    let agree = outs
        .iter()
        .enumerate()
        .all(|(j, o)| o.requires_grad() == res.contains(&j));
    if !agree {
        return Err(brk(
            "backward through a tensor `if` whose sides differ in which results require grad",
        ));
    }
    let (derived, _) = trace::isolated(Tracer::default(), || {
        autodiff::derive(&mut tr, &outs, &inputs)
    });
    Ok(Side {
        d: derived?,
        tr,
        inputs,
        outs,
    })
}

impl Side {
    /// The results (among `res`) that are captured input `s` itself.
    fn passed(&self, res: &[usize], s: usize) -> Vec<usize> {
        (0..res.len())
            .filter(|&k| {
                let x = self.inputs.get(s);
                self.outs
                    .get(res[k])
                    .is_some_and(|o| x.is_some_and(|x| x.same(o)))
            })
            .collect()
    }

    /// The captured inputs this side gives a gradient, in order.
    fn uses(&self, res: &[usize]) -> Vec<usize> {
        (0..self.inputs.len())
            .filter(|&s| {
                let derived = self.d.as_ref().is_some_and(|d| d.slots.contains(&s));
                self.inputs.get(s).is_some_and(Tensor::requires_grad)
                    && (derived || !self.passed(res, s).is_empty())
            })
            .collect()
    }

    /// The side's backward region (see the module doc) with outputs the gradients of
    /// the captured inputs `grads`.
    fn join(&self, ex: &[Tensor], res: &[usize], grads: &[usize]) -> Result<Graph, GraphBreak> {
        let mut c = Graph::default();
        let dres: Vec<NodeId> = res
            .iter()
            .map(|&j| {
                let o = self.outs.get(j).ok_or_else(|| internal("a lost result"))?;
                Ok(bound(&mut c, o))
            })
            .collect::<Result<_, GraphBreak>>()?;
        let caps: Vec<NodeId> = ex.iter().map(|x| bound(&mut c, x)).collect();
        let rmap = self.recompute(&mut c, &caps)?;
        let gmap = self.vjp(&mut c, res, &dres, &rmap)?;
        for &s in grads {
            let mut terms: Vec<NodeId> = Vec::new();
            if let Some(o) = self.d_out(s) {
                terms.push(
                    *gmap
                        .get(o.index())
                        .ok_or_else(|| internal("a lost gradient"))?,
                );
            }
            terms.extend(self.passed(res, s).iter().filter_map(|&k| dres.get(k)));
            let like = ex.get(s).ok_or_else(|| internal("a lost input"))?;
            let g = sum(&mut c, &terms, like)?;
            c.outputs.push(g);
        }
        Ok(c)
    }

    /// The node of the recorded backward that is the gradient of captured input `s`.
    fn d_out(&self, s: usize) -> Option<NodeId> {
        let d = self.d.as_ref()?;
        let k = d.slots.iter().position(|x| *x == s)?;
        d.graph.outputs.get(k).copied()
    }

    /// Copies the replayed side: its inputs are the captured inputs `caps`.
    fn recompute(&self, c: &mut Graph, caps: &[NodeId]) -> Result<Vec<NodeId>, GraphBreak> {
        let r = &self.tr.graph;
        let mut map = Vec::with_capacity(r.nodes.len());
        for node in &r.nodes {
            let id = match node.op {
                IrOp::Input { slot, .. } => *caps
                    .get(slot)
                    .ok_or_else(|| internal("an input out of range"))?,
                _ => c.push(remapped(node, &map)?),
            };
            map.push(id);
        }
        Ok(map)
    }

    /// Copies the recorded backward: its inputs are the results' gradients `dres` and
    /// values of the recomputed side (`rmap`).
    fn vjp(
        &self,
        c: &mut Graph,
        res: &[usize],
        dres: &[NodeId],
        rmap: &[NodeId],
    ) -> Result<Vec<NodeId>, GraphBreak> {
        let Some(d) = &self.d else {
            return Ok(Vec::new());
        };
        let nd = d.douts.len();
        let lost = || internal("a backward input is unknown");
        let mut map = Vec::with_capacity(d.graph.nodes.len());
        for node in &d.graph.nodes {
            let id = match node.op {
                IrOp::Input { slot, .. } if slot < nd => {
                    let k = res.iter().position(|&j| j == d.douts[slot]);
                    *k.and_then(|k| dres.get(k)).ok_or_else(lost)?
                }
                IrOp::Input { slot, .. } => {
                    let read = d.reads.get(slot - nd).ok_or_else(lost)?;
                    *rmap.get(read.index()).ok_or_else(lost)?
                }
                _ => c.push(remapped(node, &map)?),
            };
            map.push(id);
        }
        Ok(map)
    }
}
