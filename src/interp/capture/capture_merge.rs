//! Merging the two sides of a captured tensor `if`: which locals (and returned values)
//! become branch results, the check that both sides agree on their types, and the
//! error naming the variable with both sides' spans when they do not.

use super::capture_if::Side;
use crate::compile::capture::trace;
use crate::compile::ir::NodeId;
use crate::error::ErrorKind;
use crate::interp::tree::{Place, St, StKind, Target};
use crate::interp::value::Value;
use crate::interp::{at, err, Flow, Interp, R};
use crate::source::Span;
use crate::tensor::Tensor;

/// The branch results: each side's region nodes (in that region's numbering, before
/// rebinding) and the tensors they are on each side.
pub struct Merge {
    pub then_outs: Vec<NodeId>,
    pub else_outs: Vec<NodeId>,
    pub then_vals: Vec<Tensor>,
    pub else_vals: Vec<Tensor>,
}

/// Why two values cannot be one branch result: each side's description.
struct Mismatch(String, String);

fn type_text(t: &Tensor) -> String {
    let dt = crate::compile::ir::dump::short(t.dtype());
    let dims: Vec<String> = t.shape().iter().map(|d| d.to_string()).collect();
    format!("a tensor {dt}[{}]", dims.join(", "))
}

fn scalar_eq(a: &Value, b: &Value) -> Option<bool> {
    Some(match (a, b) {
        (Value::None, Value::None) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => x == y,
        _ => return None,
    })
}

/// True when `a` and `b` are the same value (same tensor, equal scalar, same object).
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Tensor(x), Value::Tensor(y)) => x.id() == y.id(),
        (Value::Unbound, Value::Unbound) => true,
        _ => scalar_eq(a, b).unwrap_or_else(|| {
            std::mem::discriminant(a) == std::mem::discriminant(b) && a.ptr_id() == b.ptr_id()
        }),
    }
}

pub(super) fn describe(v: &Value) -> String {
    match v {
        Value::Tensor(t) => type_text(t),
        Value::Str(s) => format!("the str {}", crate::pyfmt::str_repr(s)),
        Value::Int(i) => format!("the int {i}"),
        Value::Float(f) => format!("the float {}", crate::pyfmt::float_repr(*f)),
        Value::Bool(b) => format!("the bool {}", if *b { "True" } else { "False" }),
        other => format!("a {} value", other.type_name()),
    }
}

/// The tensor pairs of two values that must agree: Ok(None) when one side leaves it
/// unbound (the value is then unknown to the graph, and any later use breaks).
fn pair(a: &Value, b: &Value, out: &mut Vec<(Tensor, Tensor)>) -> Result<bool, Mismatch> {
    let bad = || Mismatch(describe(a), describe(b));
    match (a, b) {
        (Value::Unbound, _) | (_, Value::Unbound) => Ok(false),
        (Value::Tensor(x), Value::Tensor(y)) => {
            if x.dtype() != y.dtype() || x.shape() != y.shape() {
                return Err(bad());
            }
            out.push((x.clone(), y.clone()));
            Ok(true)
        }
        (Value::Tuple(xs), Value::Tuple(ys)) | (Value::Size(xs), Value::Size(ys))
            if xs.len() == ys.len() =>
        {
            for (x, y) in xs.iter().zip(ys.iter()) {
                if !pair(x, y, out)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        _ if same(a, b) => Ok(true),
        _ => Err(bad()),
    }
}

/// The merged results of both sides, None when only one side returns. Errors name the
/// variable that disagrees with both sides' spans.
pub fn merged_outputs(
    me: &mut Interp,
    then_s: &mut Side,
    else_s: &mut Side,
    snap: &[Value],
    span: Span,
) -> R<Option<Merge>> {
    let mut pairs = Vec::new();
    for (j, s) in snap.iter().enumerate() {
        let (Some(a), Some(b)) = (then_s.locals.get(j), else_s.locals.get(j)) else {
            continue;
        };
        if same(s, a) && same(s, b) {
            continue;
        }
        let mut found = Vec::new();
        match pair(a, b, &mut found) {
            Ok(true) => pairs.extend(found),
            Ok(false) => {}
            Err(m) => {
                let name =
                    slot_name(me, j, then_s.block).or_else(|| slot_name(me, j, else_s.block));
                let what = format!("variable '{}'", name.unwrap_or_else(|| "?".into()));
                let spans = (assign_span(then_s.block, j), assign_span(else_s.block, j));
                return Err(mismatch(me, &what, m, spans, span));
            }
        }
    }
    match (&then_s.flow, &else_s.flow) {
        (Flow::Return, Flow::Return) => {
            let mut found = Vec::new();
            match pair(&then_s.ret, &else_s.ret, &mut found) {
                Ok(true) => pairs.extend(found),
                Ok(false) => return Ok(None),
                Err(m) => {
                    let spans = (return_span(then_s.block), return_span(else_s.block));
                    return Err(mismatch(me, "the returned value", m, spans, span));
                }
            }
        }
        (Flow::Normal, Flow::Normal) => {}
        _ => return Ok(None),
    }
    let (then_vals, else_vals): (Vec<Tensor>, Vec<Tensor>) = pairs.into_iter().unzip();
    let then_outs = region_nodes(&mut then_s.region, &then_vals);
    let else_outs = region_nodes(&mut else_s.region, &else_vals);
    match (then_outs, else_outs) {
        (Some(then_outs), Some(else_outs)) => Ok(Some(Merge {
            then_outs,
            else_outs,
            then_vals,
            else_vals,
        })),
        _ => {
            trace::graph_break(trace::BreakReason::UntracedTensor);
            Ok(None)
        }
    }
}

/// The nodes of `vals` inside `region` (capturing values of enclosing scopes).
fn region_nodes(region: &mut trace::RegionScope, vals: &[Tensor]) -> Option<Vec<NodeId>> {
    trace::with_tracer(|t| {
        t.regions.push(std::mem::take(region));
        let ids: Option<Vec<NodeId>> = vals.iter().map(|v| t.node_of(v)).collect();
        if let Some(r) = t.regions.pop() {
            *region = r;
        }
        ids
    })
    .flatten()
}

fn mismatch(
    me: &Interp,
    what: &str,
    m: Mismatch,
    (a, b): (Option<Span>, Option<Span>),
    span: Span,
) -> crate::interp::Exc {
    let loc =
        |s: Option<Span>| crate::compile::capture::log::where_text(&me.sources, s.or(Some(span)));
    let msg = format!(
        "@compile: {what} is {} after the `if` side (at {}) but {} after the `else` side \
         (at {}); both sides of an `if` on a tensor must give it the same dtype and shape \
         (tensors) or equal values",
        m.0,
        loc(a),
        m.1,
        loc(b)
    );
    at(err(ErrorKind::TypeError, msg), span)
}

/// The last statement in `block` (or nested in it) assigning local slot `j`.
pub(super) fn assign_span(block: &[St], j: usize) -> Option<Span> {
    let mut found = None;
    for s in block {
        let hit = match &s.kind {
            StKind::AssignLocal(k, _) | StKind::AugLocal(k, ..) => *k as usize == j,
            StKind::Assign(ts, _) => ts.iter().any(|t| target_has(t, j)),
            StKind::AugAssign(t, ..) => target_has(t, j),
            StKind::For(t, ..) if target_has(t, j) => true,
            _ => false,
        };
        let nested = nested_blocks(s)
            .into_iter()
            .filter_map(|b| assign_span(b, j))
            .last();
        if hit {
            found = Some(s.span);
        } else if nested.is_some() {
            found = nested;
        }
    }
    found
}

fn target_has(t: &Target, j: usize) -> bool {
    match t {
        Target::Place(Place::Local(k, _)) => *k as usize == j,
        Target::Unpack(ts, _, _) => ts.iter().any(|t| target_has(t, j)),
        _ => false,
    }
}

fn nested_blocks(s: &St) -> Vec<&[St]> {
    match &s.kind {
        StKind::If(_, a, b) | StKind::While(_, a, b) | StKind::For(_, _, a, b) => vec![a, b],
        _ => Vec::new(),
    }
}

/// The last `return` in `block` (or nested in it).
fn return_span(block: &[St]) -> Option<Span> {
    block.iter().rev().find_map(|s| match &s.kind {
        StKind::Return(_) => Some(s.span),
        _ => nested_blocks(s).into_iter().rev().find_map(return_span),
    })
}

/// `variable 'x'` for local slot `j` assigned in `block`.
pub(super) fn slot_label(me: &Interp, j: usize, block: &[St]) -> String {
    format!(
        "variable '{}'",
        slot_name(me, j, block).unwrap_or_else(|| "?".into())
    )
}

/// The name of local slot `j` as written where `block` assigns it.
fn slot_name(me: &Interp, j: usize, block: &[St]) -> Option<String> {
    for s in block {
        let name = match &s.kind {
            StKind::AugLocal(k, n, ..) if *k as usize == j => Some(n.to_string()),
            StKind::AssignLocal(k, _) if *k as usize == j => leading_ident(me, s.span),
            StKind::Assign(ts, _) => ts.iter().find_map(|t| target_name(t, j)),
            _ => None,
        };
        let name = name.or_else(|| {
            nested_blocks(s)
                .into_iter()
                .find_map(|b| slot_name(me, j, b))
        });
        if name.is_some() {
            return name;
        }
    }
    None
}

fn target_name(t: &Target, j: usize) -> Option<String> {
    match t {
        Target::Place(Place::Local(k, n)) if *k as usize == j => Some(n.to_string()),
        Target::Unpack(ts, _, _) => ts.iter().find_map(|t| target_name(t, j)),
        _ => None,
    }
}

/// The identifier a statement starts with (`y` of `y = x * 2`).
fn leading_ident(me: &Interp, span: Span) -> Option<String> {
    let text = &me.sources.get(span.file)?.text;
    let rest = text.get(span.start as usize..)?;
    let id: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!id.is_empty()).then_some(id)
}

/// `v` with each tensor listed in `aliases` (by id) replaced by its alias (tuples
/// rebuilt; other containers are left alone).
pub fn replace_tensors(v: &Value, aliases: &[(usize, Tensor)]) -> Value {
    match v {
        Value::Tensor(t) => match aliases.iter().find(|(id, _)| *id == t.id()) {
            Some((_, a)) => Value::Tensor(a.clone()),
            None => v.clone(),
        },
        Value::Tuple(xs) => Value::tuple(xs.iter().map(|x| replace_tensors(x, aliases)).collect()),
        _ => v.clone(),
    }
}
