//! Input projections hoisted out of `for` loops: in a loop over the rows of an
//! invariant `x` (`for t in range(x.shape[0])`), a body product `x[t] @ w` of two
//! loop-invariant f32 matrices is row `t` of `x @ w`. The product of every row is then
//! one matrix product `p = x @ w` before the loop (one gemm instead of a vector-matrix
//! product per iteration), passed to the loop as a new invariant, and the body reads
//! its row `p[t]`. Each row is the same sum of the same products (possibly summed in
//! another order by the gemm). Nothing is hoisted when `x` or `w` is carried: their
//! value changes between iterations.

use super::dce::dce;
use super::rebuild::{rewrite_loops, Rebuild};
use crate::compile::ir::control::{LoopSpec, TripCount};
use crate::compile::ir::{Graph, InputKind, IrIndex, IrOp, Node, NodeId};
use crate::error::Result;
use crate::tensor::dtype::DType;
use crate::tensor::shape::Dims;

/// One product to hoist: body node `at` is `x[t] @ w` with `x` and `w` loop args.
struct Projection {
    at: NodeId,
    x: usize,
    w: usize,
}

/// Hoists the input projections of every loop of `g` (not of loops nested in regions:
/// their own optimization runs this pass on them).
pub fn hoist(g: Graph) -> Result<Graph> {
    rewrite_loops(g, |rb, n, l| {
        let found = projections(&l, n.args.len());
        if found.is_empty() {
            Ok(rb.push(n))
        } else {
            rewrite(rb, n, &l, &found)
        }
    })
}

/// The loop arg body input `slot` is bound to (slot 0 is the index).
fn arg_of_slot(slot: usize) -> Option<usize> {
    slot.checked_sub(1)
}

/// The loop arg read by body node `id` when it is an input bound to an invariant of
/// loop `l` (`n_args` args) and a 2-D f32 value.
fn invariant_matrix(l: &LoopSpec, n_args: usize, id: NodeId) -> Option<usize> {
    let node = l.body.node(id)?;
    let IrOp::Input { slot, .. } = node.op else {
        return None;
    };
    let k = arg_of_slot(slot)?;
    let ok = k >= l.carried && k < n_args && node.dtype == DType::F32 && node.shape.len() == 2;
    ok.then_some(k)
}

/// Whether body node `id` is the loop's index (body input 0).
fn is_index(l: &LoopSpec, id: NodeId) -> bool {
    l.body
        .node(id)
        .is_some_and(|n| matches!(n.op, IrOp::Input { slot: 0, .. }))
}

/// The body products `x[t] @ w` of loop `l` worth hoisting: the loop runs over the
/// rows of `x` (so `x @ w` computes no row the loop does not read).
fn projections(l: &LoopSpec, n_args: usize) -> Vec<Projection> {
    let TripCount::Dim {
        arg: rows_of,
        dim: 0,
    } = l.trip
    else {
        return Vec::new();
    };
    if l.cond.is_some() || (l.start, l.step) != (0, 1) {
        return Vec::new();
    }
    // The products' inputs are added after the last input node (the body's inputs
    // keep their slot order); a product before it is left alone.
    let last_input = l.body.inputs.iter().map(|id| id.index()).max();
    let mut found = Vec::new();
    for (i, n) in l.body.nodes.iter().enumerate() {
        let (IrOp::Matmul, &[r, w]) = (&n.op, n.args.as_slice()) else {
            continue;
        };
        if last_input.is_none_or(|k| i < k) {
            continue;
        }
        let Some(row) = l.body.node(r) else { continue };
        let (IrOp::Index { indices }, &[xs, t]) = (&row.op, row.args.as_slice()) else {
            continue;
        };
        let by_index = matches!(indices.as_slice(), [IrIndex::Indices { arg: 1 }]);
        let (Some(x), Some(w)) = (
            invariant_matrix(l, n_args, xs),
            invariant_matrix(l, n_args, w),
        ) else {
            continue;
        };
        let shapes_ok = row.shape.len() == 1 && n.shape.len() == 1 && n.dtype == DType::F32;
        if by_index && is_index(l, t) && x == rows_of && shapes_ok {
            found.push(Projection {
                at: NodeId(i as u32),
                x,
                w,
            });
        }
    }
    found
}

/// Pushes `p = x @ w` for each projection before the loop node `n` and the loop with
/// the products as new invariants; returns the loop node.
fn rewrite(rb: &mut Rebuild, mut n: Node, l: &LoopSpec, found: &[Projection]) -> Result<NodeId> {
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for p in found {
        if !pairs.contains(&(p.x, p.w)) {
            pairs.push((p.x, p.w));
        }
    }
    let mut body = l.body.clone();
    let mut p_inputs = Vec::with_capacity(pairs.len());
    for &(x, w) in &pairs {
        let (xo, wo) = (arg(&n, x)?, arg(&n, w)?);
        let rows = rb.node(xo)?.shape.first().copied().unwrap_or(0);
        let cols = rb.node(wo)?.shape.get(1).copied().unwrap_or(0);
        let shape = Dims::from(&[rows, cols][..]);
        let p = rb.push(Node {
            op: IrOp::Matmul,
            args: vec![xo, wo],
            dtype: DType::F32,
            shape,
            span: n.span,
        });
        n.args.push(p);
        let cap_rows = body
            .inputs
            .get(x + 1)
            .and_then(|&id| body.node(id))
            .and_then(|xi| xi.shape.first().copied())
            .unwrap_or(rows);
        let cap = Dims::from(&[cap_rows, cols][..]);
        p_inputs.push(body.add_input(InputKind::Bound, DType::F32, cap, None));
    }
    let index = *body
        .inputs
        .first()
        .ok_or_else(|| crate::compile::internal("a loop body without an index"))?;
    let body = reroute(body, found, &pairs, &p_inputs, index)?;
    let mut spec = l.clone();
    spec.body = dce(body)?;
    n.op = IrOp::Loop(Box::new(spec));
    Ok(rb.push(n))
}

fn arg(n: &Node, k: usize) -> Result<NodeId> {
    n.args
        .get(k)
        .copied()
        .ok_or_else(|| crate::compile::internal("a loop arg out of range"))
}

/// `body` (with the products' inputs `p_inputs` appended) where each hoisted product
/// reads row `index` of its product's input instead.
fn reroute(
    body: Graph,
    found: &[Projection],
    pairs: &[(usize, usize)],
    p_inputs: &[NodeId],
    index: NodeId,
) -> Result<Graph> {
    let last_input = body
        .inputs
        .iter()
        .filter(|id| !p_inputs.contains(id))
        .map(|id| id.index())
        .max();
    let mut rb = Rebuild::new(&body);
    let mut copied = vec![NodeId(0); p_inputs.len()];
    for (i, node) in body.nodes.iter().enumerate() {
        if let Some(k) = p_inputs.iter().position(|p| p.index() == i) {
            rb.map_to(copied[k]);
            continue;
        }
        let hit = found.iter().find(|p| p.at.index() == i);
        let id = match hit.and_then(|p| pairs.iter().position(|q| *q == (p.x, p.w))) {
            Some(k) => rb.push(Node {
                op: IrOp::Index {
                    indices: vec![IrIndex::Indices { arg: 1 }],
                },
                args: vec![copied[k], rb.get(index)?],
                ..node.clone()
            }),
            None => rb.push(rb.remapped(node)?),
        };
        rb.map_to(id);
        // The new inputs follow the original ones (their slots are the last).
        if Some(i) == last_input {
            for (c, &p) in copied.iter_mut().zip(p_inputs) {
                let node = body
                    .node(p)
                    .ok_or_else(|| crate::compile::internal("a hoisted input is missing"))?;
                *c = rb.push(node.clone());
            }
        }
    }
    rb.finish(&body)
}
