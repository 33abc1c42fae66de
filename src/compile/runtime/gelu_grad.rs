//! The exact GELU's gradient in a compiled training step: a fused group that is
//! exactly the op chain the capture records for it (autograd's `gelu_grad` as tensor
//! ops: `g * (0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2 / 2) / sqrt(2 pi))`, 11 nodes) runs
//! eager's fused f32 pass (`autograd::rules::gelu_grad_into`: its vectorized erf and
//! exp, 8 lanes) over chunks claimed by the kernels' team, so compiled gradients are
//! eager's. Any other layout at run time returns false and the group's JIT kernel runs.

use crate::compile::ir::{Graph, NodeId};
use crate::compile::passes::fuse::Group;
use crate::compile::runtime::opt_update::{either, split, Pat};
use crate::error::Result;
use crate::ops::{BinaryOp, UnaryOp};
use crate::tensor::Tensor;

/// The positions of `x` (GELU's input) and `g` (the incoming gradient) in the group's
/// inputs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GeluGrad {
    x: usize,
    g: usize,
}

/// The constants of the recorded chain, as the kernel rounds them to f32.
const INV_SQRT_2: f32 = std::f32::consts::FRAC_1_SQRT_2;
const INV_SQRT_2PI: f32 = 0.398_942_3;

impl Pat<'_> {
    /// `0.5 * (1 + erf(x * 1/sqrt 2))`: x.
    fn cdf(&self, id: NodeId) -> Option<NodeId> {
        let c = self.scalar(id, BinaryOp::Mul).filter(|(_, k)| *k == 0.5)?.0;
        let r = self.scalar(c, BinaryOp::Add).filter(|(_, k)| *k == 1.0)?.0;
        let u = self.unary(r, UnaryOp::Erf)?;
        Some(
            self.scalar(u, BinaryOp::Mul)
                .filter(|(_, k)| *k == INV_SQRT_2)?
                .0,
        )
    }

    /// `exp((x * x) * -0.5) * 1/sqrt(2 pi)`: x.
    fn pdf(&self, id: NodeId) -> Option<NodeId> {
        let e = self
            .scalar(id, BinaryOp::Mul)
            .filter(|(_, k)| *k == INV_SQRT_2PI)?
            .0;
        let t = self.unary(e, UnaryOp::Exp)?;
        let xx = self.scalar(t, BinaryOp::Mul).filter(|(_, k)| *k == -0.5)?.0;
        let [a, b] = self.binary(xx, BinaryOp::Mul)?;
        (a == b).then_some(a)
    }

    /// `g * (cdf(x) + x * pdf(x))`.
    fn gelu_grad(&self) -> Option<GeluGrad> {
        let (g, x) = either(self.binary(self.group.root, BinaryOp::Mul)?, |g, s| {
            let x = either(self.binary(s, BinaryOp::Add)?, |c, xp| {
                let x = self.cdf(c)?;
                either(self.binary(xp, BinaryOp::Mul)?, |x2, p| {
                    (x2 == x && self.pdf(p)? == x).then_some(x)
                })
            })?;
            Some((g, x))
        })?;
        let sizes_ok = self.group.members.len() == 11 && self.group.outputs.len() == 1;
        sizes_ok.then_some(())?;
        Some(GeluGrad {
            x: self.operand(x, true)?,
            g: self.operand(g, true)?,
        })
    }
}

/// The GELU gradient `group` of `g` computes, if it is one.
pub fn find(g: &Graph, group: &Group) -> Option<GeluGrad> {
    Pat { g, group }.gelu_grad()
}

/// The shape of the gradient on the group's gathered `args` (x's).
pub fn shape<'a>(plan: &GeluGrad, args: &'a [Tensor]) -> Option<&'a [usize]> {
    args.get(plan.x).map(Tensor::shape)
}

/// Runs the gradient on the group's gathered `args` into its fresh output `outs`;
/// false (nothing written) unless x, g and the output are contiguous f32 tensors of
/// one size.
pub fn run(plan: &GeluGrad, args: &[Tensor], outs: &[Tensor]) -> Result<bool> {
    let (Some(x), Some(g), [out]) = (args.get(plan.x), args.get(plan.g), outs) else {
        return Ok(false);
    };
    let n = out.numel();
    if x.shape() != out.shape() || g.shape() != out.shape() {
        return Ok(false);
    }
    let (Some(xs), Some(gs), Some(mut o)) = (x.f32_elems(), g.f32_elems(), out.f32_elems_mut())
    else {
        return Ok(false);
    };
    if xs.len() != n || gs.len() != n {
        return Ok(false);
    }
    let (xs, gs): (&[f32], &[f32]) = (&xs, &gs);
    split(&mut [&mut o[..]], |start, part| {
        let [dst] = part else { return };
        let r = start..start + dst.len();
        if let (Some(x), Some(g)) = (xs.get(r.clone()), gs.get(r)) {
            crate::autograd::rules::gelu_grad_into(dst, x, g);
        }
    });
    Ok(true)
}
