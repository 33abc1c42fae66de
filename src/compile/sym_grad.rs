//! Symbolic sizes of a compiled backward: its inputs (the output gradients and the saved
//! forward values) take the symbolic shapes of the forward outputs they are, and the
//! backward is analysed from those. It may run at every size the forward's guard admits
//! only when the analysis kept every symbol, tied no two together and asks no larger
//! least size; otherwise the version is specialised.

use super::ir::Graph;
use super::sym::{self, InputSpec, SymId, SymInfo};
use std::collections::{HashMap, HashSet};

/// The symbolic sizes of backward `bwd` whose input `k` is output `positions[k]` of the
/// forward graph `fwd` (symbolic sizes `info`). None: the backward cannot follow them;
/// Some(None): its inputs have no symbolic size.
pub fn backward_info(
    bwd: &Graph,
    info: &SymInfo,
    fwd: &Graph,
    positions: &[usize],
) -> Option<Option<SymInfo>> {
    let mut spec = InputSpec {
        dims: Vec::with_capacity(positions.len()),
        example: info.example.clone(),
        min: info.min.clone(),
    };
    for &pos in positions {
        let node = fwd.outputs.get(pos)?;
        let shape = info.shapes.get(node.index())?;
        let dims = shape
            .iter()
            .map(|e| match (e.as_const(), e.as_sym()) {
                (Some(_), _) => Some(None),
                (None, Some(s)) => Some(Some(s)),
                // An affine size (`s0 + 1`) is not an input dim's symbol.
                (None, None) => None,
            })
            .collect::<Option<Vec<_>>>()?;
        spec.dims.push(dims);
    }
    if spec.dims.len() != bwd.inputs.len() {
        return None;
    }
    if spec.dims.iter().flatten().all(Option::is_none) {
        return Some(None);
    }
    let out = sym::analyze(bwd, &spec, None).ok()?;
    let mut map: HashMap<SymId, SymId> = HashMap::new();
    for (want, got) in spec.dims.iter().zip(&out.inputs) {
        for (w, g) in want.iter().zip(got) {
            match (w, g) {
                (None, _) => {}
                (Some(w), Some(g)) if *map.entry(*w).or_insert(*g) == *g => {}
                _ => return None,
            }
        }
    }
    let mut seen = HashSet::new();
    if !map.values().all(|g| seen.insert(*g)) {
        return None;
    }
    let no_larger = map.iter().all(|(w, g)| {
        let (Some(a), Some(b)) = (out.min.get(*g as usize), info.min.get(*w as usize)) else {
            return false;
        };
        a <= b
    });
    no_larger.then_some(Some(out))
}
