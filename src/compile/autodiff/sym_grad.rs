//! Symbolic sizes of a compiled backward: its inputs (the output gradients and the saved
//! forward values) take the symbolic shapes of the forward outputs they are, and the
//! backward is analysed from those. It may run at every size the forward's guard admits
//! only when the analysis kept every symbol, tied no two together and asks no larger
//! least size. A forward symbol the backward fixes or ties to another (e.g. a class
//! count a gradient's constant shape names, under `dynamic=True` where every dim starts
//! symbolic) is specialised in the forward too and the backward analysed again
//! ([`settle`]); the other symbols stay symbolic. The backward's outputs (the input
//! gradients) must have their inputs' symbolic shapes too: a forward symbol an input
//! gradient does not follow is specialised likewise. An input gradient the backward
//! ends with a broadcast of (`a.sum()`'s: a 0-d gradient expanded to a constant shape)
//! is returned before the broadcast and expanded to its input's shape at run time
//! ([`runtime_expands`]): only its dims that are not 1 must follow.

use crate::compile::ir::{Graph, IrOp};
use crate::compile::sym::{self, InputSpec, SymId, SymInfo};
use std::collections::{HashMap, HashSet};

/// How a backward follows the forward's symbolic sizes.
enum Follow {
    /// Its inputs have no symbolic size.
    Fixed,
    /// It follows them all (its own analysis).
    All(SymInfo),
    /// It cannot follow these forward symbols (it fixes them or ties them together).
    Pins(Vec<SymId>),
}

/// The symbolic sizes of backward `bwd` whose input `k` is output `positions[k]` of the
/// forward graph `fwd` and whose output `k` is the gradient of forward input `slots[k]`. When the backward cannot follow some of the forward's symbols,
/// those are specialised in `fwd.sym` (re-analysed; `None` when no symbol is left) and
/// the backward analysed again. None: the backward cannot follow the sizes at all (the
/// caller specialises the whole version); Some(None): its inputs have no symbolic size.
pub fn settle(
    bwd: &Graph,
    fwd: &mut Graph,
    positions: &[usize],
    slots: &[usize],
    expanded: &[bool],
) -> Option<Option<SymInfo>> {
    loop {
        let Some(info) = fwd.sym.as_deref() else {
            return Some(None);
        };
        match follow(bwd, info, fwd, positions, slots, expanded)? {
            Follow::Fixed => return Some(None),
            Follow::All(out) => return Some(Some(out)),
            Follow::Pins(pins) => {
                let mut spec = info.spec();
                for d in spec.dims.iter_mut().flatten() {
                    if d.is_some_and(|s| pins.contains(&s)) {
                        *d = None;
                    }
                }
                let narrower = sym::analyze(fwd, &spec, None).ok()?;
                let left = narrower.num_symbols();
                if left >= info.num_symbols() {
                    return None;
                }
                fwd.sym = (left > 0).then(|| Box::new(narrower));
            }
        }
    }
}

/// Replaces each output of `bwd` that is an `Expand` by the expanded value; true for
/// those outputs (the compiled node expands them to their input's shape when it runs).
pub fn runtime_expands(bwd: &mut Graph) -> Vec<bool> {
    let mut out = Vec::with_capacity(bwd.outputs.len());
    for o in bwd.outputs.iter_mut() {
        let node = &bwd.nodes[o.index()];
        match (&node.op, node.args.as_slice()) {
            (IrOp::Expand { .. }, [x]) => {
                *o = *x;
                out.push(true);
            }
            _ => out.push(false),
        }
    }
    out
}

/// The dims of output `k` of shape `got` (symbols, or None for a constant) that must
/// follow `want`: all of them, or for an output expanded at run time those not 1
/// (aligned from the right).
fn checked_dims<'a, T: Clone>(
    want: &'a [Option<SymId>],
    got: &'a [T],
    expanded: bool,
    is_one: impl Fn(&T) -> bool + 'a,
) -> impl Iterator<Item = (&'a Option<SymId>, Option<T>)> + 'a {
    let lead = want.len().saturating_sub(got.len());
    want.iter().enumerate().filter_map(move |(i, w)| {
        if !expanded {
            return Some((w, got.get(i).cloned()));
        }
        let g = i.checked_sub(lead).and_then(|j| got.get(j))?;
        (!is_one(g)).then(|| (w, Some(g.clone())))
    })
}

/// How backward `bwd` follows the symbols `info` of `fwd` (None: not at all).
fn follow(
    bwd: &Graph,
    info: &SymInfo,
    fwd: &Graph,
    positions: &[usize],
    slots: &[usize],
    expanded: &[bool],
) -> Option<Follow> {
    let spec = backward_spec(info, fwd, positions)?;
    if spec.dims.len() != bwd.inputs.len() || slots.len() != bwd.outputs.len() {
        return None;
    }
    // The forward symbols each input gradient's shape must follow, by output.
    let wanted: Vec<&[Option<SymId>]> = slots
        .iter()
        .map(|&s| info.inputs.get(s).map_or(&[][..], Vec::as_slice))
        .collect();
    if spec.dims.iter().flatten().all(Option::is_none) {
        // Nothing symbolic reaches the backward: its outputs have fixed shapes.
        let mut pins: Vec<SymId> = Vec::new();
        for ((want, &o), &ex) in wanted.iter().zip(&bwd.outputs).zip(expanded) {
            let got = &bwd.nodes.get(o.index())?.shape;
            let dims = checked_dims(want, got, ex, |&d| d == 1);
            pins.extend(dims.filter_map(|(w, _)| *w));
        }
        return Some(if pins.is_empty() {
            Follow::Fixed
        } else {
            Follow::Pins(dedup(pins))
        });
    }
    let out = sym::analyze(bwd, &spec, None).ok()?;
    let mut map: HashMap<SymId, SymId> = HashMap::new();
    let mut pins: Vec<SymId> = Vec::new();
    for (want, got) in spec.dims.iter().zip(&out.inputs) {
        for (w, g) in want.iter().zip(got) {
            match (w, g) {
                (None, _) => {}
                (Some(w), Some(g)) if *map.entry(*w).or_insert(*g) == *g => {}
                (Some(w), _) => pins.push(*w),
            }
        }
    }
    // An input gradient whose shape is not its input's (a dim it fixes).
    for ((want, &o), &ex) in wanted.iter().zip(&bwd.outputs).zip(expanded) {
        let got = out.shapes.get(o.index())?;
        let one = |e: &crate::compile::sym::SymExpr| e.as_const() == Some(1);
        for (w, e) in checked_dims(want, got, ex, one) {
            if let Some(w) = w {
                let sym = e.and_then(|e| e.as_sym());
                if sym.is_none() || map.get(w) != sym.as_ref() {
                    pins.push(*w);
                }
            }
        }
    }
    // Two forward symbols the backward ties into one: both specialised.
    let mut by_got: HashMap<SymId, Vec<SymId>> = HashMap::new();
    for (w, g) in &map {
        by_got.entry(*g).or_default().push(*w);
    }
    pins.extend(by_got.values().filter(|ws| ws.len() > 1).flatten());
    // A backward asking a larger least size than the forward's guard admits.
    pins.extend(map.iter().filter_map(|(w, g)| {
        let (a, b) = (out.min.get(*g as usize), info.min.get(*w as usize));
        let (c, d) = (out.max.get(*g as usize), info.max.get(*w as usize));
        (a.is_none() || b.is_none() || a > b || c.is_none() || d.is_none() || c < d).then_some(*w)
    }));
    if pins.is_empty() {
        return Some(Follow::All(out));
    }
    Some(Follow::Pins(dedup(pins)))
}

/// `pins` without repeats, in first-seen order.
fn dedup(mut pins: Vec<SymId>) -> Vec<SymId> {
    let mut seen = HashSet::new();
    pins.retain(|s| seen.insert(*s));
    pins
}

/// The backward's input spec: input `k` the symbolic shape of forward output
/// `positions[k]` (None: an affine size such as `s0 + 1`, not an input dim's symbol).
fn backward_spec(info: &SymInfo, fwd: &Graph, positions: &[usize]) -> Option<InputSpec> {
    let mut spec = InputSpec {
        dims: Vec::with_capacity(positions.len()),
        example: info.example.clone(),
        min: info.min.clone(),
        max: info.max.clone(),
    };
    for &pos in positions {
        let node = fwd.outputs.get(pos)?;
        let shape = info.shapes.get(node.index())?;
        let dims = shape
            .iter()
            .map(|e| match (e.as_const(), e.as_sym()) {
                (Some(_), _) => Some(None),
                (None, Some(s)) => Some(Some(s)),
                (None, None) => None,
            })
            .collect::<Option<Vec<_>>>()?;
        spec.dims.push(dims);
    }
    Some(spec)
}
