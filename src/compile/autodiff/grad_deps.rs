//! Which output gradients reach each gradient a recorded backward gives, by data flow
//! (through branches and loops: a loop's carried values over any number of iterations).
//! Eager leaves a leaf's gradient None when no output the sweep reached leads to it;
//! a compiled backward fed zeros for the outputs the sweep did not reach would give it
//! zeros, so its nodes use these sets to give None instead.

use crate::compile::ir::control::LoopSpec;
use crate::compile::ir::{Graph, IrOp};
use std::collections::HashMap;

/// A set of sources (output gradients), sorted.
type Set = Vec<usize>;

fn union(into: &mut Set, from: &[usize]) -> bool {
    let before = into.len();
    into.extend_from_slice(from);
    into.sort_unstable();
    into.dedup();
    into.len() != before
}

/// True when a gradient fed by the outputs `deps` (some) got none of theirs: eager
/// leaves it None (`reached[j]`: output `j` got a gradient).
pub fn unreached(deps: &[usize], reached: &[bool]) -> bool {
    !deps.is_empty()
        && deps
            .iter()
            .all(|&j| !reached.get(j).copied().unwrap_or(true))
}

/// Per output of `g`, the inputs `first..first + n` (numbered from 0) whose values
/// reach it.
pub fn input_deps(g: &Graph, first: usize, n: usize) -> Vec<Set> {
    let mut inputs: Vec<Set> = vec![Vec::new(); g.inputs.len()];
    for (k, s) in inputs.iter_mut().skip(first).take(n).enumerate() {
        s.push(k);
    }
    flow(g, &inputs)
}

/// Per output of `g`, the sources reaching it when its input `k` carries `inputs[k]`.
fn flow(g: &Graph, inputs: &[Set]) -> Vec<Set> {
    let mut reach: Vec<Set> = vec![Vec::new(); g.nodes.len()];
    for (id, s) in g.inputs.iter().zip(inputs) {
        if let Some(r) = reach.get_mut(id.index()) {
            *r = s.clone();
        }
    }
    let mut results: HashMap<usize, Vec<Set>> = HashMap::new();
    for (i, node) in g.nodes.iter().enumerate() {
        let args: Vec<Set> = node
            .args
            .iter()
            .map(|a| reach.get(a.index()).cloned().unwrap_or_default())
            .collect();
        let mut r = std::mem::take(&mut reach[i]);
        match &node.op {
            IrOp::Out { index } => {
                let ctl = node.args.first().map(|a| a.index());
                let own = ctl.and_then(|c| results.get(&c)?.get(*index));
                let from = own.map_or_else(|| args.concat(), Clone::clone);
                union(&mut r, &from);
            }
            IrOp::Loop(l) => {
                results.insert(i, loop_results(l, &args));
            }
            IrOp::If(b) => {
                let bound = args.get(1..).unwrap_or(&[]);
                let mut outs = flow(&b.then_g, bound);
                for (o, e) in outs.iter_mut().zip(flow(&b.else_g, bound)) {
                    union(o, &e);
                }
                // The condition decides which side's values the results are.
                let cond = args.first().cloned().unwrap_or_default();
                for o in &mut outs {
                    union(o, &cond);
                }
                results.insert(i, outs);
            }
            _ => {
                for a in &args {
                    union(&mut r, a);
                }
            }
        }
        reach[i] = r;
    }
    let outs = g.outputs.iter();
    outs.map(|o| reach.get(o.index()).cloned().unwrap_or_default())
        .collect()
}

/// The sources reaching each result of loop `l` (its final carried values, then its
/// scan outputs) when its arg `k` carries `args[k]`, over any number of iterations.
pub fn loop_results(l: &LoopSpec, args: &[Set]) -> Vec<Set> {
    let nk = l.carried;
    let mut bound: Vec<Set> = vec![Vec::new()];
    bound.extend(args.iter().cloned());
    // Iterate the body until the carried values' sets stop growing.
    let mut outs = flow(&l.body, &bound);
    loop {
        let mut changed = false;
        for (k, o) in outs.iter().take(nk).enumerate() {
            if let Some(b) = bound.get_mut(k + 1) {
                changed |= union(b, o);
            }
        }
        if !changed {
            break;
        }
        outs = flow(&l.body, &bound);
    }
    if let Some(c) = &l.cond {
        let stop = flow(c, &bound).concat();
        for o in &mut outs {
            union(o, &stop);
        }
    }
    let mut results: Vec<Set> = bound.get(1..=nk).unwrap_or(&[]).to_vec();
    results.extend(outs.into_iter().skip(nk));
    results
}
