//! The built-in eager check (`KILN_CHECK=1`, `@compile(check=True)`): a compiled call
//! also runs eagerly on the same inputs, and every returned tensor, every in-place
//! write and every `.grad` the compiled version would set is compared with eager's;
//! a mismatch raises an error naming the graph output that differs and then the first
//! IR node that differs ([`localize`]): the graph reruns on the call's inputs (as they
//! were before eager ran) keeping every value it materialises, each node is evaluated
//! again with the eager library from the reference values of its args, in graph
//! order, and the first node whose compiled value is off its reference is named with
//! its op, source line, both values and the tolerance (the accuracy minifier torch
//! users build by hand). When every node agrees, the graph itself differs from eager
//! (a capture error), and the message says so.

use crate::compile::capture::cache::GraphEntry;
use crate::compile::capture::effects::{Effect, Target};
use crate::compile::ir::NodeId;
use crate::compile::runtime::exec;
use crate::compile::sym::SymInfo;
use crate::source::SourceMap;
use crate::tensor::Tensor;
use std::sync::OnceLock;

/// Relative and absolute tolerance of the comparison: |c - e| <= ATOL + RTOL * |e|.
pub const RTOL: f64 = 1e-4;
pub const ATOL: f64 = 1e-5;

/// `KILN_CHECK=1`: every compiled call is checked.
pub fn check_env() -> bool {
    static CHECK: OnceLock<bool> = OnceLock::new();
    *CHECK.get_or_init(|| std::env::var("KILN_CHECK").is_ok_and(|v| v == "1"))
}

/// One compared value: what it is, the graph output computing it, the compiled and
/// eager's values (None: eager has none, e.g. a cleared `.grad`).
struct Pair {
    what: String,
    out: Option<usize>,
    compiled: Option<Tensor>,
    eager: Option<Tensor>,
}

/// The first element where `c` and `e` differ beyond the tolerance: (flat index,
/// compiled value, eager value), or a description of a shape/presence mismatch.
fn first_diff(c: &Tensor, e: &Tensor) -> Option<String> {
    if c.shape() != e.shape() {
        return Some(format!("shape {:?} vs eager {:?}", c.shape(), e.shape()));
    }
    let (Ok(cv), Ok(ev)) = (c.to_f32_vec(), e.to_f32_vec()) else {
        return Some("values unreadable".into());
    };
    cv.iter().zip(&ev).enumerate().find_map(|(i, (&a, &b))| {
        let (a, b) = (f64::from(a), f64::from(b));
        let same = a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= ATOL + RTOL * b.abs();
        (!same).then(|| format!("element {i}: compiled {a} vs eager {b}"))
    })
}

/// The graph output positions of the returned tensors, in structure order.
fn output_slots(t: &crate::compile::capture::cache::OutTemplate, out: &mut Vec<usize>) {
    use crate::compile::capture::cache::OutTemplate as O;
    match t {
        O::Tensor(i) => out.push(*i),
        O::List(xs) | O::Tuple(xs) => xs.iter().for_each(|x| output_slots(x, out)),
        O::Const(_) => {}
    }
}

/// The tensors of a run: compiled and eager results in structure order.
pub struct Returned {
    pub compiled: Vec<Tensor>,
    pub eager: Vec<Tensor>,
}

/// Compares a compiled run (graph outputs `outs`, effects not applied) with the eager
/// run that followed it on the same inputs (`ret`; targets now hold eager's state).
/// Err: the message naming the first differing value.
pub fn compare(
    g: &GraphEntry,
    inputs: &[Tensor],
    outs: &[Tensor],
    ret: Returned,
    sources: &SourceMap,
) -> Result<(), String> {
    let mut slots = Vec::new();
    output_slots(&g.output, &mut slots);
    if ret.compiled.len() != ret.eager.len() {
        return Err(format!(
            "@compile check: the compiled version returns {} tensors, eager {}",
            ret.compiled.len(),
            ret.eager.len()
        ));
    }
    let mut pairs = Vec::new();
    for (k, (c, e)) in ret.compiled.into_iter().zip(ret.eager).enumerate() {
        pairs.push(Pair {
            what: format!("returned tensor {k}"),
            out: slots.get(k).copied(),
            compiled: Some(c),
            eager: Some(e),
        });
    }
    let resolve = |t: &Target| match t {
        Target::Slot(i) => inputs.get(*i).cloned(),
        Target::Handle(h) => Some(h.clone()),
    };
    for e in &g.effects {
        match e {
            Effect::Write { target, out, .. } => pairs.push(Pair {
                what: "an in-place write".into(),
                out: Some(*out),
                compiled: outs.get(*out).cloned(),
                eager: resolve(target),
            }),
            Effect::SetGrad { target, out } => pairs.push(Pair {
                what: "a .grad assignment".into(),
                out: *out,
                compiled: out.and_then(|i| outs.get(i).cloned()),
                eager: resolve(target).and_then(|t| t.grad()),
            }),
        }
    }
    let graph = &g.compiled.graph;
    let mut worst: Option<(u32, String)> = None;
    for p in pairs {
        let diff = match (&p.compiled, &p.eager) {
            (Some(c), Some(e)) => first_diff(c, e),
            (None, None) => None,
            (Some(_), None) => Some("compiled has a value, eager none".into()),
            (None, Some(_)) => Some("eager has a value, compiled none".into()),
        };
        let Some(diff) = diff else { continue };
        let node = p.out.and_then(|i| graph.outputs.get(i)).copied();
        let id = node.map_or(u32::MAX, |n| n.0);
        if worst.as_ref().is_some_and(|(w, _)| *w <= id) {
            continue;
        }
        let at = node.and_then(|n| graph.node(n)).map_or_else(
            || "an unknown node".to_string(),
            |n| {
                format!(
                    "{} = {}(...) at {}",
                    node.map_or(String::new(), |x| x.to_string()),
                    n.op.name(),
                    crate::compile::capture::log::where_text(sources, n.span)
                )
            },
        );
        worst = Some((
            id,
            format!(
                "@compile check: compiled and eager differ in {} computed by {at}: {diff} \
                 (tolerance {ATOL} + {RTOL} * |eager|)",
                p.what
            ),
        ));
    }
    worst.map_or(Ok(()), |(_, msg)| Err(msg))
}

/// The first node of `g`'s graph whose compiled value differs from its reference
/// evaluation on `inputs` (the call's inputs before eager ran), as a sentence.
pub fn localize(g: &GraphEntry, inputs: &[Tensor], sources: &SourceMap) -> String {
    let cg = &g.compiled;
    let kept = match cg.run_keeping(inputs, &exec::eval) {
        Ok(k) => k,
        Err(e) => return format!("rerunning the graph to find the node failed: {}", e.message),
    };
    let graph = &cg.graph;
    let syms = graph.sym.as_deref().map(|info| (info, info.bind(inputs)));
    let mut refs: Vec<Option<Tensor>> = Vec::with_capacity(graph.len());
    for (i, node) in graph.nodes.iter().enumerate() {
        let id = NodeId(i as u32);
        let inst = syms.as_ref().and_then(|(info, vals)| {
            let target = info.targets.iter().find(|t| t.0 == id)?;
            SymInfo::instantiate(node, &target.1, vals)
        });
        let node = inst.as_ref().unwrap_or(node);
        let compiled = kept.get(i).cloned().flatten();
        let args: Option<Vec<Tensor>> = node
            .args
            .iter()
            .map(|a| refs.get(a.index()).cloned().flatten())
            .collect();
        // Control nodes and their results have no eager evaluation of their own, and a
        // random fill would draw other numbers: the compiled values stand for them.
        let reference = args
            .filter(|_| !node.op.has_effect())
            .and_then(|a| exec::eval(node, &a, inputs).ok())
            .or_else(|| compiled.clone());
        if let (Some(c), Some(r)) = (&compiled, &reference) {
            if let Some(diff) = first_diff(c, r) {
                return format!(
                    "the first IR node that differs from its reference evaluation is {id} = \
                     {}(...) at {}: {}",
                    node.op.name(),
                    crate::compile::capture::log::where_text(sources, node.span),
                    diff.replace("eager", "reference")
                );
            }
        }
        refs.push(reference);
    }
    "every IR node equals its reference evaluation: the captured graph itself differs \
     from eager (a capture error)"
        .into()
}
