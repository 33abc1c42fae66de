//! Algebraic simplification: identities that hold exactly for every value, including
//! NaN and infinities (`x*1`, `x/1`, `x**1`, `x-0`, `--x`, a cast to the dtype `x` has);
//! `x+0` (exact except that `-0.0 + 0` is `+0.0`); never `x*0` (NaN*0 is NaN, inf*0 is
//! NaN).
//!
//! Chains of reshapes, order-keeping permutes and count-keeping expands collapse into
//! one reshape, or none when the shape ends up unchanged ([`relabel`]).
//!
//! A fill of another fill's shape reads the first fill's own shape source, so a fill made
//! only for its shape (`empty_like(x).bernoulli_(p)`: dropout's mask) is left unread
//! and dead-code elimination drops it.
//!
//! And the GELU-tanh rewrites of [`gelu`]: `0.5*x*(1+tanh(u))` -> the `GeluTanh` op when
//! `u` is GELU's own argument, else `x*sigmoid(2u)`.

use super::gelu;
use super::rebuild::Rebuild;
use super::relabel;
use crate::compile::ir::{Graph, IrOp, Node, NodeId};
use crate::error::Result;
use crate::ops::{BinaryOp, UnaryOp};
use crate::tensor::dtype::Scalar;

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

/// `n`, reading the shape source of its arg when both are fills (`FillLike` reads only
/// its arg's shape, and a fill has its own arg's shape).
fn shape_source(rb: &Rebuild, mut n: Node) -> Result<Node> {
    if let (IrOp::FillLike { .. }, Some(&a)) = (&n.op, n.args.first()) {
        let an = rb.node(a)?;
        if let (IrOp::FillLike { .. }, Some(&src)) = (&an.op, an.args.first()) {
            n.args[0] = src;
        }
    }
    Ok(n)
}

/// Applies the identities, the relabel collapse and the GELU rewrite to every node.
pub fn simplify(g: Graph) -> Result<Graph> {
    let mut rb = Rebuild::new(&g);
    for node in &g.nodes {
        let n = shape_source(&rb, rb.remapped(node)?)?;
        let id = match identity(&rb, &n)? {
            Some(same) => same,
            None => match relabel::rewrite(&mut rb, &n)? {
                Some(new) => new,
                None => match gelu::rewrite(&mut rb, &n)? {
                    Some(new) => new,
                    None => rb.push(n),
                },
            },
        };
        rb.map_to(id);
    }
    rb.finish(&g)
}
