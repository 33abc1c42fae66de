//! The IR verifier: SSA order, arity, input slots, outputs, and every node's recorded
//! dtype and shape against the ones `infer::derive` re-derives. Run after capture and
//! after every pass; a failure is a compiler bug, reported as an internal RuntimeError
//! naming the node.

use super::infer::{derive, ValueType};
use super::ir::{Graph, IrOp, Node, NodeId};
use crate::error::{Error, ErrorKind, Result};
use crate::tensor::shape::fmt_shape;

fn fail(id: NodeId, node: Option<&Node>, msg: String) -> Error {
    let what = node.map_or("", |n| n.op.name());
    Error::new(
        ErrorKind::RuntimeError,
        format!("internal compile error: IR verify: {id} = {what}: {msg}"),
        node.and_then(|n| n.span),
    )
}

/// Checks `g`; Ok when every invariant holds.
pub fn verify(g: &Graph) -> Result<()> {
    check_inputs(g)?;
    for (i, node) in g.nodes.iter().enumerate() {
        let id = NodeId(i as u32);
        check_node(g, id, node)?;
    }
    for &o in &g.outputs {
        if o.index() >= g.nodes.len() {
            return Err(fail(o, None, "output refers to a missing node".into()));
        }
    }
    Ok(())
}

/// `inputs[k]` is an `Input { slot: k }` node and every Input node is listed.
fn check_inputs(g: &Graph) -> Result<()> {
    for (k, &id) in g.inputs.iter().enumerate() {
        match g.node(id).map(|n| &n.op) {
            Some(IrOp::Input { slot, .. }) if *slot == k => {}
            _ => {
                return Err(fail(
                    id,
                    g.node(id),
                    format!("inputs[{k}] is not an input node of slot {k}"),
                ))
            }
        }
    }
    let listed = g
        .nodes
        .iter()
        .filter(|n| matches!(n.op, IrOp::Input { .. }))
        .count();
    if listed != g.inputs.len() {
        return Err(fail(
            NodeId(0),
            None,
            format!("{listed} input nodes but {} inputs", g.inputs.len()),
        ));
    }
    Ok(())
}

fn check_node(g: &Graph, id: NodeId, node: &Node) -> Result<()> {
    let mut types = Vec::with_capacity(node.args.len());
    for &a in &node.args {
        if a >= id {
            return Err(fail(id, Some(node), format!("arg {a} does not precede it")));
        }
        let arg = &g.nodes[a.index()];
        types.push(ValueType {
            dtype: arg.dtype,
            shape: arg.shape.clone(),
        });
    }
    if matches!(node.op, IrOp::Input { .. }) {
        return if node.args.is_empty() {
            Ok(())
        } else {
            Err(fail(id, Some(node), "an input takes no args".into()))
        };
    }
    let d = derive(&node.op, &types).map_err(|e| fail(id, Some(node), e.message.clone()))?;
    if d.dtype != node.dtype {
        return Err(fail(
            id,
            Some(node),
            format!("recorded dtype {} but the op gives {}", node.dtype, d.dtype),
        ));
    }
    match d.shape {
        Some(s) if s != node.shape => Err(fail(
            id,
            Some(node),
            format!(
                "recorded shape {} but the op gives {}",
                fmt_shape(&node.shape),
                fmt_shape(&s)
            ),
        )),
        _ => Ok(()),
    }
}
