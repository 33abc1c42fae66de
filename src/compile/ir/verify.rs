//! The IR verifier: SSA order, arity, input slots, outputs, and every node's recorded
//! dtype and shape against the ones `infer::derive` re-derives. Run after capture and
//! after every pass; a failure is a compiler bug, reported as an internal RuntimeError
//! naming the node. Regions of control nodes are verified recursively, with their
//! inputs against the node's args and their outputs against each other.

use crate::compile::ir::control::{PrintPiece, TripCount};
use crate::compile::ir::infer::{derive, ValueType};
use crate::compile::ir::{Graph, IrOp, Node, NodeId};
use crate::error::{Error, ErrorKind, Result};
use crate::tensor::dtype::DType;
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
    check_tuple_uses(g, node).map_err(|m| fail(id, Some(node), m))?;
    if let Some(r) = check_control(g, node, &types) {
        return r.map_err(|m| fail(id, Some(node), m));
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

/// A control or print node's results are read only by `Out`, and `Out` reads only them.
fn check_tuple_uses(g: &Graph, node: &Node) -> std::result::Result<(), String> {
    let is_out = matches!(node.op, IrOp::Out { .. });
    for (k, a) in node.args.iter().enumerate() {
        let op = &g.nodes[a.index()].op;
        let tuple = op.is_control() || matches!(op, IrOp::Print(_));
        if tuple != (is_out && k == 0) {
            return Err(format!("arg {a} ({}) cannot be read here", op.name()));
        }
    }
    Ok(())
}

fn ty(n: &Node) -> ValueType {
    ValueType {
        dtype: n.dtype,
        shape: n.shape.clone(),
    }
}

/// The output types of region `g`.
fn out_types(g: &Graph) -> Vec<ValueType> {
    g.outputs
        .iter()
        .filter_map(|o| g.node(*o).map(ty))
        .collect()
}

/// Checks a region: valid itself, its inputs of the types `want`.
fn check_region(name: &str, g: &Graph, want: &[ValueType]) -> std::result::Result<(), String> {
    verify(g).map_err(|e| format!("in {name} region: {}", e.message))?;
    if g.inputs.len() != want.len() {
        return Err(format!(
            "{name} region takes {} inputs but is bound to {}",
            g.inputs.len(),
            want.len()
        ));
    }
    for (k, (i, w)) in g.inputs.iter().zip(want).enumerate() {
        let n = g.node(*i).map(ty);
        if n.as_ref() != Some(w) {
            return Err(format!(
                "{name} region input {k} does not match its binding"
            ));
        }
    }
    Ok(())
}

fn one_element(t: &ValueType) -> bool {
    t.shape.iter().product::<usize>() == 1
}

/// Checks a control, `Out` or `Print` node (None for other ops).
fn check_control(
    g: &Graph,
    node: &Node,
    args: &[ValueType],
) -> Option<std::result::Result<(), String>> {
    let placeholder = node.dtype == DType::Bool && node.shape.is_empty();
    Some(match &node.op {
        IrOp::If(b) => {
            if !placeholder {
                return Some(Err("a branch's own type must be bool[]".into()));
            }
            check_if(args, &b.then_g, &b.else_g)
        }
        IrOp::Loop(l) => {
            if !placeholder {
                return Some(Err("a loop's own type must be bool[]".into()));
            }
            check_loop(l, args)
        }
        IrOp::Out { index } => check_out(g, node, *index),
        IrOp::Print(p) => {
            let bad = p
                .pieces
                .iter()
                .any(|piece| matches!(piece, PrintPiece::Tensor { arg, .. } if *arg >= args.len()));
            match (bad, placeholder) {
                (true, _) => Err("a print hole refers to a missing arg".into()),
                (_, false) => Err("a print's own type must be bool[]".into()),
                _ => Ok(()),
            }
        }
        _ => return None,
    })
}

fn check_if(args: &[ValueType], then_g: &Graph, else_g: &Graph) -> std::result::Result<(), String> {
    let Some((cond, bound)) = args.split_first() else {
        return Err("a branch needs a condition".into());
    };
    if !one_element(cond) {
        return Err("the branch condition must have one element".into());
    }
    check_region("then", then_g, bound)?;
    check_region("else", else_g, bound)?;
    if out_types(then_g) != out_types(else_g) || then_g.outputs.len() != else_g.outputs.len() {
        return Err("the two sides of a branch return different types".into());
    }
    Ok(())
}

fn check_loop(
    l: &crate::compile::ir::control::LoopSpec,
    args: &[ValueType],
) -> std::result::Result<(), String> {
    if args.len() < l.carried {
        return Err(format!(
            "{} carried values but {} args",
            l.carried,
            args.len()
        ));
    }
    if let TripCount::Dim { arg, dim } = l.trip {
        if args.get(arg).is_none_or(|a| dim >= a.shape.len()) {
            return Err("the trip count refers to a missing arg or dim".into());
        }
    }
    if l.trip == TripCount::Unbounded && l.cond.is_none() {
        return Err("an unbounded loop needs a condition".into());
    }
    let mut want = vec![ValueType::new(DType::I64, &[])];
    want.extend(args.iter().cloned());
    if let Some(c) = &l.cond {
        check_region("cond", c, &want)?;
        match out_types(c).as_slice() {
            [t] if one_element(t) => {}
            _ => return Err("a loop condition returns one one-element tensor".into()),
        }
    }
    check_region("body", &l.body, &want)?;
    let outs = out_types(&l.body);
    if outs.get(..l.carried) != Some(&args[..l.carried])
        || l.body.outputs.len() != l.carried + l.scan
    {
        return Err("the loop body changes the type of a carried value".into());
    }
    if l.reverse && l.trip == TripCount::Unbounded {
        return Err("a reverse loop needs a bounded trip count".into());
    }
    Ok(())
}

fn check_out(g: &Graph, node: &Node, index: usize) -> std::result::Result<(), String> {
    let [a] = node.args.as_slice() else {
        return Err("out takes one arg".into());
    };
    let op = &g.nodes[a.index()].op;
    let outs = match op {
        IrOp::If(b) => out_types(&b.then_g),
        IrOp::Loop(l) if index >= l.carried => {
            // A scan result: the body output stacked over the iterations.
            return match out_types(&l.body).get(index) {
                Some(t) if t.dtype == node.dtype && node.shape.get(1..) == Some(&t.shape[..]) => {
                    Ok(())
                }
                Some(_) => Err(format!("scan out {index} has the wrong type")),
                None => Err(format!("out {index} of a loop with fewer results")),
            };
        }
        IrOp::Loop(l) => out_types(&l.body),
        _ => return Err("out reads a control node".into()),
    };
    match outs.get(index) {
        Some(t) if *t == ty(node) => Ok(()),
        Some(_) => Err(format!("out {index} has the wrong type")),
        None => Err(format!("out {index} of a node with {} results", outs.len())),
    }
}
