//! Algebraic simplification: identities that hold exactly for every value, including
//! NaN and infinities (`x*1`, `x/1`, `x**1`, `x-0`, `--x`, a cast to the dtype `x` has);
//! `x+0` (exact except that `-0.0 + 0` is `+0.0`); never `x*0` (NaN*0 is NaN, inf*0 is
//! NaN).
//!
//! And the GELU-tanh rewrite `0.5*x*(1+tanh(u))` -> `x*sigmoid(2u)`: equal in exact
//! arithmetic (1 + tanh(u) = 2 sigmoid(2u)); in f32 the rewrite avoids the cancellation
//! of `1 + tanh(u)` for u << 0, and its sigmoid compiles to one exp and one division.

use super::rebuild::Rebuild;
use crate::compile::ir::{Graph, IrOp, Node, NodeId};
use crate::error::Result;
use crate::ops::{BinaryOp, UnaryOp};
use crate::tensor::dtype::{DType, Scalar};

fn scalar_is(s: Scalar, v: f64) -> bool {
    match s {
        Scalar::Float(f) => f == v,
        Scalar::Int(i) => i as f64 == v,
        Scalar::Bool(_) => false,
    }
}

/// The existing node `n` can be replaced by (an identity), if any.
fn identity(rb: &Rebuild, n: &Node) -> Result<Option<NodeId>> {
    let Some(&x) = n.args.first() else {
        return Ok(None);
    };
    let xn = rb.node(x)?;
    if xn.dtype != n.dtype || xn.shape != n.shape {
        return Ok(None);
    }
    let hit = match n.op {
        IrOp::BinaryScalar {
            op,
            scalar,
            reverse,
        } => match op {
            BinaryOp::Mul => scalar_is(scalar, 1.0),
            BinaryOp::Add => scalar_is(scalar, 0.0),
            BinaryOp::Div | BinaryOp::Pow => !reverse && scalar_is(scalar, 1.0),
            BinaryOp::Sub => !reverse && scalar_is(scalar, 0.0),
            _ => false,
        },
        IrOp::Cast(dt) => dt == xn.dtype,
        IrOp::Unary(UnaryOp::Neg) => match xn.op {
            IrOp::Unary(UnaryOp::Neg) => return Ok(xn.args.first().copied()),
            _ => false,
        },
        _ => false,
    };
    Ok(hit.then_some(x))
}

/// `x` when `id` is `0.5 * x` (either order) of f32.
fn half_of(rb: &Rebuild, id: NodeId) -> Option<NodeId> {
    let n = rb.node(id).ok()?;
    match n.op {
        IrOp::BinaryScalar {
            op: BinaryOp::Mul,
            scalar,
            ..
        } if scalar_is(scalar, 0.5) && n.dtype == DType::F32 => n.args.first().copied(),
        _ => None,
    }
}

/// `u` when `id` is `1 + tanh(u)` (either order) of f32.
fn one_plus_tanh(rb: &Rebuild, id: NodeId) -> Option<NodeId> {
    let n = rb.node(id).ok()?;
    let t = match n.op {
        IrOp::BinaryScalar {
            op: BinaryOp::Add,
            scalar,
            ..
        } if scalar_is(scalar, 1.0) && n.dtype == DType::F32 => *n.args.first()?,
        _ => return None,
    };
    let tn = rb.node(t).ok()?;
    match tn.op {
        IrOp::Unary(UnaryOp::Tanh) => tn.args.first().copied(),
        _ => None,
    }
}

/// Rewrites `0.5*x * (1+tanh(u))` into `x * sigmoid(2*u)`; returns the new node.
fn gelu_tanh(rb: &mut Rebuild, n: &Node) -> Result<Option<NodeId>> {
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
    if xn.dtype != DType::F32 || un.dtype != DType::F32 || n.dtype != DType::F32 {
        return Ok(None);
    }
    let twice = rb.push(Node {
        op: IrOp::BinaryScalar {
            op: BinaryOp::Mul,
            scalar: Scalar::Float(2.0),
            reverse: false,
        },
        args: vec![u],
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

/// Applies the identities and the GELU rewrite to every node.
pub fn simplify(g: Graph) -> Result<Graph> {
    let mut rb = Rebuild::new(&g);
    for node in &g.nodes {
        let n = rb.remapped(node)?;
        let id = match identity(&rb, &n)? {
            Some(same) => same,
            None => match gelu_tanh(&mut rb, &n)? {
                Some(new) => new,
                None => rb.push(n),
            },
        };
        rb.map_to(id);
    }
    rb.finish(&g)
}
