//! The end of an analysis: shapes over root symbols, live symbols renumbered `s0, s1,
//! ...` in input order, the symbolic targets of reshape/expand nodes (those inside
//! regions too), and a check that every symbolic shape evaluates to the capture-time
//! shape.

use super::analyze::{InputSpec, Walk};
use super::expr::{shape_text, SymExpr, SymId, SymShape};
use super::SymInfo;
use crate::compile::ir::{IrIndex, IrOp, NodeId};
use crate::error::{Error, ErrorKind, Result};
use crate::tensor::shape::fmt_shape;
use std::collections::HashMap;

pub(super) fn finish(w: Walk<'_>, spec: &InputSpec) -> Result<SymInfo> {
    let solver = &w.solver;
    let mut renum: HashMap<SymId, SymId> = HashMap::new();
    let mut example = Vec::new();
    let mut min = Vec::new();
    let mut max = Vec::new();
    let inputs: Vec<Vec<Option<SymId>>> = spec
        .dims
        .iter()
        .map(|dims| {
            dims.iter()
                .map(|d| {
                    let s = (*d)?;
                    let r = solver.norm(&SymExpr::sym(s)).as_sym()?;
                    let next = renum.len() as SymId;
                    Some(*renum.entry(r).or_insert_with(|| {
                        example.push(solver.example.get(r as usize).copied().unwrap_or(0));
                        min.push(solver.min_of(r));
                        max.push(solver.max_of(r));
                        next
                    }))
                })
                .collect()
        })
        .collect();
    let rename = |e: &SymExpr| -> Result<SymExpr> {
        solver
            .norm(e)
            .subst(&|s| {
                renum
                    .get(&s)
                    .map_or(SymExpr::konst(-1), |&n| SymExpr::sym(n))
            })
            .ok_or_else(|| bug("size overflow".into()))
    };
    let mut shapes = Vec::with_capacity(w.shapes.len());
    let mut targets = Vec::new();
    for (i, s) in w.shapes.iter().enumerate() {
        let shape: SymShape = s.iter().map(&rename).collect::<Result<_>>()?;
        let node = w.g.nodes.get(i).ok_or_else(|| bug("missing node".into()))?;
        let value = shape
            .iter()
            .map(|e| e.eval(|s| example.get(s as usize).copied()))
            .collect::<Option<Vec<i64>>>();
        let want: Vec<i64> = node.shape.iter().map(|&d| d as i64).collect();
        if value.as_deref() != Some(&want[..]) {
            return Err(bug(format!(
                "%{i} is {} but was {} at capture",
                shape_text(&shape),
                fmt_shape(&node.shape)
            )));
        }
        let symbolic = shape.iter().any(|e| e.as_const().is_none());
        let sym_index = match &node.op {
            IrOp::Index { indices } => indices
                .iter()
                .any(|i| matches!(i, IrIndex::SymSlice { .. })),
            _ => false,
        };
        if symbolic && (sym_index || has_target(&node.op)) {
            targets.push((NodeId(i as u32), shape.clone()));
        }
        shapes.push(shape);
    }
    let mut regions = Vec::new();
    for r in &w.ctl.kept {
        regions.extend(r.finish(&rename)?);
    }
    Ok(SymInfo {
        inputs,
        example,
        min,
        max,
        shapes,
        targets,
        regions,
    })
}

fn bug(msg: String) -> Error {
    Error::new(
        ErrorKind::RuntimeError,
        format!("internal compile error: symbolic shapes: {msg}"),
        None,
    )
}

/// Reshape, expand and index_backward carry their output shape as an attribute: a
/// symbolic one is a per-call target.
pub(super) fn has_target(op: &IrOp) -> bool {
    matches!(
        op,
        IrOp::Reshape { .. } | IrOp::Expand { .. } | IrOp::IndexGrad { .. }
    )
}
