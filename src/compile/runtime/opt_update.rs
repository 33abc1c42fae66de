//! Optimizer updates in a compiled training step: a fused group that is exactly
//! stdlib/optim.dl's SGD step (`p - lr * g`) or Adam step (the op chain eager's
//! `_adam_update_` replaces, AdamW's decoupled decay `p * decay` included) runs eager's
//! fused routine (tensor::optim_step: the same
//! f32 operations in the same order, so the same bits as the JIT kernel, on 8 lanes)
//! over chunks claimed by the kernels' team, instead of the generated kernel.
//!
//! Any other layout at run time (broadcast, strided, another dtype) returns false and
//! the group's JIT kernel runs.

use crate::compile::ir::{Graph, IrOp, Node, NodeId};
use crate::compile::passes::fuse::{scalar_f32, Group};
use crate::error::Result;
use crate::ops::{BinaryOp, UnaryOp};
use crate::tensor::dtype::DType;
use crate::tensor::kernels::team;
use crate::tensor::optim_step::{adam_into, sgd_into, AdamConsts, AdamIn, AdamOut};
use crate::tensor::Tensor;
use std::cell::{Ref, RefMut};
use std::sync::Mutex;

/// Elements per task of a split update (as `parallel::TASK_ELEMENTS`): smaller
/// updates run on the calling thread.
const CHUNK: usize = 1 << 16;

/// The update a fused group computes; operands are positions in the group's inputs,
/// results positions in its outputs.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    /// `out = p - g * lr`.
    Sgd {
        p: usize,
        g: usize,
        lr: Rate,
    },
    Adam(AdamPlan),
}

impl Update {
    /// How the graph text names the update.
    pub fn name(&self) -> &'static str {
        match self {
            Update::Sgd { .. } => "fused SGD update",
            Update::Adam(_) => "fused Adam update",
        }
    }
}

/// An SGD update's learning rate: a constant of the graph, or a 0-d float32 input read
/// at each run (a runtime scalar's cast, `capture::symfloat`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rate {
    Const(f32),
    Input(usize),
}

/// The operands and constants of an Adam update.
#[derive(Debug, Clone, PartialEq)]
pub struct AdamPlan {
    /// Inputs: p, g, m, v, then the 0-d `sqrt(1 - b2^t)` and step size.
    ins: [usize; 6],
    /// Outputs: new p, m, v.
    outs: [usize; 3],
    c1: f32,
    b2: f32,
    c2: f32,
    eps: f32,
    /// AdamW's decoupled weight decay factor (1 for Adam).
    decay: f32,
}

/// Reads a group's member nodes by pattern.
pub(super) struct Pat<'g> {
    pub g: &'g Graph,
    pub group: &'g Group,
}

impl<'g> Pat<'g> {
    pub fn member(&self, id: NodeId) -> Option<&'g Node> {
        self.group.members.contains(&id).then(|| self.g.node(id))?
    }

    pub fn input(&self, id: NodeId) -> Option<usize> {
        self.group.inputs.iter().position(|x| *x == id)
    }

    pub fn output(&self, id: NodeId) -> Option<usize> {
        self.group.outputs.iter().position(|x| *x == id)
    }

    /// `id` is a member `op(a, b)`: [a, b].
    pub fn binary(&self, id: NodeId, op: BinaryOp) -> Option<[NodeId; 2]> {
        let n = self.member(id)?;
        match (&n.op, n.args.as_slice()) {
            (IrOp::Binary(o), &[a, b]) if *o == op => Some([a, b]),
            _ => None,
        }
    }

    /// `id` is a member `op(x, scalar)` of a commutative `op`: (x, scalar as f32).
    pub fn scalar(&self, id: NodeId, op: BinaryOp) -> Option<(NodeId, f32)> {
        let n = self.member(id)?;
        match (&n.op, n.args.as_slice()) {
            (IrOp::BinaryScalar { op: o, scalar, .. }, &[x]) if *o == op => {
                Some((x, scalar_f32(*scalar)?))
            }
            _ => None,
        }
    }

    pub fn unary(&self, id: NodeId, op: UnaryOp) -> Option<NodeId> {
        let n = self.member(id)?;
        match (&n.op, n.args.as_slice()) {
            (IrOp::Unary(o), &[x]) if *o == op => Some(x),
            _ => None,
        }
    }

    /// An input of the root's shape (`full`) or a 0-d one.
    pub fn operand(&self, id: NodeId, full: bool) -> Option<usize> {
        let (n, root) = (self.g.node(id)?, self.g.node(self.group.root)?);
        let shape_ok = if full {
            n.shape == root.shape
        } else {
            n.shape.is_empty()
        };
        (shape_ok && n.dtype == DType::F32).then(|| self.input(id))?
    }

    fn sgd(&self) -> Option<Update> {
        let [p, t] = self.binary(self.group.root, BinaryOp::Sub)?;
        let (g, lr) = match self.scalar(t, BinaryOp::Mul) {
            Some((g, lr)) => (g, Rate::Const(lr)),
            None => either(self.binary(t, BinaryOp::Mul)?, |g, r| {
                Some((g, Rate::Input(self.operand(r, false)?)))
            })?,
        };
        let shape_ok = self.group.members.len() == 2 && self.group.outputs.len() == 1;
        shape_ok.then_some(())?;
        Some(Update::Sgd {
            p: self.operand(p, true)?,
            g: self.operand(g, true)?,
            lr,
        })
    }

    /// `p - m_new / (sqrt(v_new) / bc2 + eps) * step` with `m_new = m + (g - m) * c1`
    /// and `v_new = v * b2 + g * c2 * g`; AdamW's `p` is `p * decay`.
    fn adam(&self) -> Option<Update> {
        let root = self.group.root;
        let [p_dec, q] = self.binary(root, BinaryOp::Sub)?;
        let (p, decay, members) = match self.scalar(p_dec, BinaryOp::Mul) {
            Some((p, decay)) => (p, decay, 14),
            None => (p_dec, 1.0, 13),
        };
        let (d, step) = either(self.binary(q, BinaryOp::Mul)?, |d, s| {
            Some((self.binary(d, BinaryOp::Div)?, self.operand(s, false)?))
        })?;
        let [m_new, den] = d;
        let (s, eps) = self.scalar(den, BinaryOp::Add)?;
        let [sq, bc2] = self.binary(s, BinaryOp::Div)?;
        let v_new = self.unary(sq, UnaryOp::Sqrt)?;
        let (v, b2, g, c2) = either(self.binary(v_new, BinaryOp::Add)?, |vb, gg| {
            let (v, b2) = self.scalar(vb, BinaryOp::Mul)?;
            let (g, c2) = either(self.binary(gg, BinaryOp::Mul)?, |gc, g| {
                let (g2, c2) = self.scalar(gc, BinaryOp::Mul)?;
                (g2 == g).then_some((g, c2))
            })?;
            Some((v, b2, g, c2))
        })?;
        let (m, c1) = either(self.binary(m_new, BinaryOp::Add)?, |m, mm| {
            let (dm, c1) = self.scalar(mm, BinaryOp::Mul)?;
            (self.binary(dm, BinaryOp::Sub)? == [g, m]).then_some((m, c1))
        })?;
        let sizes_ok = self.group.members.len() == members && self.group.outputs.len() == 3;
        sizes_ok.then_some(())?;
        let full = |id| self.operand(id, true);
        Some(Update::Adam(AdamPlan {
            ins: [
                full(p)?,
                full(g)?,
                full(m)?,
                full(v)?,
                self.operand(bc2, false)?,
                step,
            ],
            outs: [self.output(root)?, self.output(m_new)?, self.output(v_new)?],
            c1,
            b2,
            c2,
            eps,
            decay,
        }))
    }
}

/// `f(a, b)`, else `f(b, a)`: the operands of a commutative op in either order.
pub(super) fn either<T>([a, b]: [NodeId; 2], f: impl Fn(NodeId, NodeId) -> Option<T>) -> Option<T> {
    f(a, b).or_else(|| f(b, a))
}

/// The optimizer update `group` of `g` computes, if it is one.
pub fn find(g: &Graph, group: &Group) -> Option<Update> {
    let pat = Pat { g, group };
    pat.sgd().or_else(|| pat.adam())
}

/// The contiguous f32 elements of `args[i]`, when it has `n` elements.
fn elems(args: &[Tensor], i: usize, n: usize) -> Option<Ref<'_, [f32]>> {
    args.get(i)
        .filter(|t| t.numel() == n)
        .and_then(|t| t.f32_elems())
}

fn elems_mut(outs: &[Tensor], i: usize, n: usize) -> Option<RefMut<'_, [f32]>> {
    outs.get(i)
        .filter(|t| t.numel() == n)
        .and_then(|t| t.f32_elems_mut())
}

/// Runs `u` on the group's gathered `args` into its fresh output tensors `outs`; false
/// (nothing written) when a tensor does not fit (the JIT kernel runs instead).
pub fn run(u: &Update, args: &[Tensor], outs: &[Tensor]) -> Result<bool> {
    let n = outs.last().map_or(0, Tensor::numel);
    let same_shape = args
        .iter()
        .all(|a| a.numel() == 1 || a.shape() == outs.last().map_or(&[][..], |o| o.shape()));
    if !same_shape {
        return Ok(false);
    }
    Ok(match u {
        Update::Sgd { p, g, lr } => {
            let lr = match *lr {
                Rate::Const(c) => c,
                Rate::Input(i) => match args.get(i).filter(|t| t.numel() == 1) {
                    Some(t) => t.item()?.as_f64() as f32,
                    None => return Ok(false),
                },
            };
            sgd(args, outs, n, [*p, *g], lr).is_some()
        }
        Update::Adam(plan) => adam(args, outs, n, plan).is_some(),
    })
}

fn sgd(args: &[Tensor], outs: &[Tensor], n: usize, [p, g]: [usize; 2], lr: f32) -> Option<()> {
    let (p, g) = (elems(args, p, n)?, elems(args, g, n)?);
    let mut out = elems_mut(outs, 0, n)?;
    let (p, g): (&[f32], &[f32]) = (&p, &g);
    split(&mut [&mut out[..]], |start, o| {
        let [o] = o else { return };
        let len = o.len();
        if let (Some(p), Some(g)) = (p.get(start..start + len), g.get(start..start + len)) {
            sgd_into(o, p, g, lr);
        }
    });
    Some(())
}

fn adam(args: &[Tensor], outs: &[Tensor], n: usize, plan: &AdamPlan) -> Option<()> {
    let [p, g, m, v, bc2, step] = plan.ins;
    let scalar = |i: usize| elems(args, i, 1).and_then(|d| d.first().copied());
    let k = AdamConsts {
        c1: plan.c1,
        b2: plan.b2,
        c2: plan.c2,
        bc2_sqrt: scalar(bc2)?,
        eps: plan.eps,
        step_size: scalar(step)?,
    };
    let [p, g, m, v] = [p, g, m, v].map(|i| elems(args, i, n));
    let (p, g, m, v) = (p?, g?, m?, v?);
    let decay = plan.decay;
    let [op, om, ov] = plan.outs.map(|i| elems_mut(outs, i, n));
    let (mut op, mut om, mut ov) = (op?, om?, ov?);
    let x = AdamIn {
        p: &p,
        g: &g,
        m: &m,
        v: &v,
    };
    split(&mut [&mut op[..], &mut om[..], &mut ov[..]], |start, o| {
        let [op, om, ov] = o else { return };
        let len = op.len();
        let r = start..start + len;
        let (Some(p), Some(g), Some(m), Some(v)) = (
            x.p.get(r.clone()),
            x.g.get(r.clone()),
            x.m.get(r.clone()),
            x.v.get(r),
        ) else {
            return;
        };
        let out = AdamOut {
            p: op,
            m: om,
            v: ov,
        };
        adam_into(out, AdamIn { p, g, m, v }, k, decay);
    });
    Some(())
}

/// Calls `f(start, chunks)` for each `CHUNK`-element range of the equally long `outs`
/// (`chunks`: that range of each), on the team's threads.
pub(super) fn split<const K: usize>(
    outs: &mut [&mut [f32]; K],
    f: impl Fn(usize, &mut [&mut [f32]]) + Sync,
) {
    let n = outs.first().map_or(0, |o| o.len());
    let mut parts: Vec<Vec<&mut [f32]>> = (0..n.div_ceil(CHUNK)).map(|_| Vec::new()).collect();
    for o in outs.iter_mut() {
        for (part, c) in parts.iter_mut().zip(o.chunks_mut(CHUNK)) {
            part.push(c);
        }
    }
    let tasks: Vec<Mutex<Vec<&mut [f32]>>> = parts.into_iter().map(Mutex::new).collect();
    team::for_each(tasks.len(), &|t| {
        if let Some(Ok(mut part)) = tasks.get(t).map(Mutex::lock) {
            f(t * CHUNK, &mut part);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: &[f32], shape: &[usize]) -> Tensor {
        Tensor::from_vec(v.to_vec(), shape)
    }

    fn values(t: &Tensor) -> Vec<f32> {
        t.f32_elems().map(|d| d.to_vec()).unwrap_or_default()
    }

    /// `p - g * lr` on every element, across several team chunks.
    #[test]
    fn sgd_writes_p_minus_lr_g_over_chunks() {
        let n = CHUNK * 2 + 3;
        let p: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let g: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
        let out = t(&vec![0.0; n], &[n]);
        let u = Update::Sgd {
            p: 1,
            g: 0,
            lr: Rate::Const(0.5),
        };
        let args = [t(&g, &[n]), t(&p, &[n])];
        assert_eq!(run(&u, &args, std::slice::from_ref(&out)).ok(), Some(true));
        let want: Vec<f32> = p.iter().zip(&g).map(|(p, g)| p - g * 0.5).collect();
        assert_eq!(values(&out), want);
    }

    /// A broadcast gradient or a strided parameter leaves the work to the kernel.
    #[test]
    fn other_layouts_are_left_to_the_kernel() {
        let u = Update::Sgd {
            p: 0,
            g: 1,
            lr: Rate::Const(0.5),
        };
        let out = t(&[0.0; 6], &[2, 3]);
        let p = t(&[1.0; 6], &[2, 3]);
        let row = t(&[1.0; 3], &[3]);
        let args = [p.clone(), row];
        assert_eq!(run(&u, &args, std::slice::from_ref(&out)).ok(), Some(false));
        let strided = p
            .permute(&[1, 0])
            .ok()
            .and_then(|x| x.reshape(&[2, 3]).ok());
        if let Some(s) = strided.filter(|s| !s.is_contiguous()) {
            let args = [s, p.clone()];
            assert_eq!(run(&u, &args, std::slice::from_ref(&out)).ok(), Some(false));
        }
        assert_eq!(values(&out), vec![0.0; 6], "nothing written");
    }

    /// One Adam step from p = `p0` (g = 2, m = v = 0, bc2 = 0.5, step 0.01) with AdamW's
    /// `decay`: the outputs [p, m, v].
    fn adam_step(p0: f32, decay: f32) -> [Vec<f32>; 3] {
        let plan = AdamPlan {
            ins: [0, 1, 2, 3, 4, 5],
            outs: [0, 1, 2],
            c1: 0.1,
            b2: 0.999,
            c2: 0.001,
            eps: 1e-8,
            decay,
        };
        let args = [
            t(&[p0], &[1]),
            t(&[2.0], &[1]),
            t(&[0.0], &[1]),
            t(&[0.0], &[1]),
            t(&[0.5], &[]),
            t(&[0.01], &[]),
        ];
        let outs = [t(&[0.0], &[1]), t(&[0.0], &[1]), t(&[0.0], &[1])];
        assert_eq!(run(&Update::Adam(plan), &args, &outs).ok(), Some(true));
        [values(&outs[0]), values(&outs[1]), values(&outs[2])]
    }

    /// One Adam step by hand: m = 0 + (2 - 0) * 0.1 = 0.2, v = 0 + 2 * 0.001 * 2 =
    /// 0.004, p = 1 - 0.2 / (sqrt(0.004) / 0.5 + 1e-8) * 0.01.
    #[test]
    fn adam_updates_p_m_and_v() {
        let (m, v) = (2.0f32 * 0.1, 2.0f32 * 0.001 * 2.0);
        let p = 1.0 - m / (v.sqrt() / 0.5 + 1e-8) * 0.01;
        assert_eq!(adam_step(1.0, 1.0), [vec![p], vec![m], vec![v]]);
    }

    /// AdamW: p is multiplied by the decay before the Adam step (0.5 * 4 = 2, then
    /// 2 - 0.2 / (sqrt(0.004) / 0.5 + 1e-8) * 0.01).
    #[test]
    fn adamw_decays_p_first() {
        let (m, v) = (2.0f32 * 0.1, 2.0f32 * 0.001 * 2.0);
        let p = 4.0f32 * 0.5 - m / (v.sqrt() / 0.5 + 1e-8) * 0.01;
        assert_eq!(adam_step(4.0, 0.5), [vec![p], vec![m], vec![v]]);
    }
}
