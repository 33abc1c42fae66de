//! The GELU-tanh rewrites of the simplification pass.
//!
//! `0.5*x * (1+tanh(u))` equals `x * sigmoid(2u)` in exact arithmetic
//! (1 + tanh(u) = 2 sigmoid(2u)); in f32 the sigmoid form avoids the cancellation of
//! `1 + tanh(u)` for u << 0. When `u` is the GELU argument `c0*(x + c1*x^3)` with the
//! constants of the `gelu(approximate='tanh')` op (as f32; the cube in any grouping or
//! as `x ** 3`), the whole expression becomes that op, which fuses into one routine
//! (compile/jit/mathgelu.rs); any other `u` becomes `x * sigmoid(2u)`, with the exact
//! power-of-two factor folded into a scalar factor of `u` when there is one.

use super::rebuild::Rebuild;
use crate::compile::ir::{IrOp, Node, NodeId};
use crate::error::Result;
use crate::ops::{BinaryOp, UnaryOp};
use crate::tensor::dtype::{DType, Scalar};

use crate::tensor::kernels::unary::{GELU_C as GELU_C1, SQRT_2_OVER_PI as GELU_C0};

fn scalar_f64(s: Scalar) -> Option<f64> {
    match s {
        Scalar::Float(f) => Some(f),
        Scalar::Int(i) => Some(i as f64),
        Scalar::Bool(_) => None,
    }
}

/// The f32 node `id`, if it is one.
fn f32_node(rb: &Rebuild, id: NodeId) -> Option<&Node> {
    rb.node(id).ok().filter(|n| n.dtype == DType::F32)
}

/// `(x, s)` when `id` is `s * x` or `x * s` with a scalar `s`.
fn scaled(rb: &Rebuild, id: NodeId) -> Option<(NodeId, f64)> {
    let n = f32_node(rb, id)?;
    match n.op {
        IrOp::BinaryScalar {
            op: BinaryOp::Mul,
            scalar,
            ..
        } => Some((*n.args.first()?, scalar_f64(scalar)?)),
        _ => None,
    }
}

/// `x` when `id` is `0.5 * x` (either order) of f32.
fn half_of(rb: &Rebuild, id: NodeId) -> Option<NodeId> {
    scaled(rb, id).and_then(|(x, s)| (s == 0.5).then_some(x))
}

/// `u` when `id` is `1 + tanh(u)` (either order) of f32.
fn one_plus_tanh(rb: &Rebuild, id: NodeId) -> Option<NodeId> {
    let n = f32_node(rb, id)?;
    let t = match n.op {
        IrOp::BinaryScalar {
            op: BinaryOp::Add,
            scalar,
            ..
        } if scalar_f64(scalar) == Some(1.0) => *n.args.first()?,
        _ => return None,
    };
    match rb.node(t).ok()?.op {
        IrOp::Unary(UnaryOp::Tanh) => rb.node(t).ok()?.args.first().copied(),
        _ => None,
    }
}

/// `(c, k)` when `id` is a product of scalars and `k` factors `x` (any grouping, or
/// `x ** 3`), `k <= 3`.
fn monomial(rb: &Rebuild, id: NodeId, x: NodeId, depth: usize) -> Option<(f64, u32)> {
    if id == x {
        return Some((1.0, 1));
    }
    if depth == 0 {
        return None;
    }
    if let Some((a, s)) = scaled(rb, id) {
        let (c, k) = monomial(rb, a, x, depth - 1)?;
        return Some((c * s, k));
    }
    let n = f32_node(rb, id)?;
    if let IrOp::BinaryScalar {
        op: BinaryOp::Pow,
        scalar,
        reverse: false,
    } = n.op
    {
        // x ** 3 (as `torch.pow(x, 3.0)` in common GELU code).
        let three = scalar_f64(scalar) == Some(3.0) && n.args.first() == Some(&x);
        return three.then_some((1.0, 3));
    }
    let (IrOp::Binary(BinaryOp::Mul), [a, b]) = (&n.op, n.args.as_slice()) else {
        return None;
    };
    let (ca, ka) = monomial(rb, *a, x, depth - 1)?;
    let (cb, kb) = monomial(rb, *b, x, depth - 1)?;
    (ka + kb <= 3).then_some((ca * cb, ka + kb))
}

/// Whether `u` is `c0 * (x + c1*x^3)` (sums either order) with the GELU constants.
fn is_gelu_arg(rb: &Rebuild, u: NodeId, x: NodeId) -> bool {
    let Some((inner, c0)) = scaled(rb, u) else {
        return false;
    };
    let Some(n) = f32_node(rb, inner) else {
        return false;
    };
    let (IrOp::Binary(BinaryOp::Add), [p, q]) = (&n.op, n.args.as_slice()) else {
        return false;
    };
    let cube = match (*p == x, *q == x) {
        (true, _) => *q,
        (_, true) => *p,
        _ => return false,
    };
    let c1 = monomial(rb, cube, x, 6);
    c0 as f32 == GELU_C0 && matches!(c1, Some((c, 3)) if c as f32 == GELU_C1)
}

/// Rewrites `0.5*x * (1+tanh(u))` (see the module doc); returns the new node.
pub(super) fn rewrite(rb: &mut Rebuild, n: &Node) -> Result<Option<NodeId>> {
    let (IrOp::Binary(BinaryOp::Mul), [p, q]) = (&n.op, n.args.as_slice()) else {
        return Ok(None);
    };
    let found = [(*p, *q), (*q, *p)]
        .into_iter()
        .find_map(|(a, b)| Some((half_of(rb, a)?, one_plus_tanh(rb, b)?)));
    let Some((x, u)) = found else {
        return Ok(None);
    };
    let (un, xn) = (rb.node(u)?.clone(), rb.node(x)?);
    let same = xn.shape == n.shape && un.shape == n.shape;
    if xn.dtype != DType::F32 || un.dtype != DType::F32 || n.dtype != DType::F32 {
        return Ok(None);
    }
    if same && is_gelu_arg(rb, u, x) {
        return Ok(Some(rb.push(Node {
            op: IrOp::Unary(UnaryOp::GeluTanh),
            args: vec![x],
            ..n.clone()
        })));
    }
    // 2 * (s * v) is (2s) * v exactly (a power-of-two scaling) unless s * v overflows.
    let folded =
        scaled(rb, u).filter(|&(v, _)| f32_node(rb, v).is_some_and(|vn| vn.shape == un.shape));
    let (arg, factor) = match folded {
        Some((v, s)) => (v, 2.0 * s),
        None => (u, 2.0),
    };
    let twice = rb.push(Node {
        op: IrOp::BinaryScalar {
            op: BinaryOp::Mul,
            scalar: Scalar::Float(factor),
            reverse: false,
        },
        args: vec![arg],
        span: n.span,
        ..un.clone()
    });
    let sig = rb.push(Node {
        op: IrOp::Unary(UnaryOp::Sigmoid),
        args: vec![twice],
        span: n.span,
        ..un
    });
    Ok(Some(rb.push(Node {
        op: IrOp::Binary(BinaryOp::Mul),
        args: vec![x, sig],
        ..n.clone()
    })))
}
