//! The data of a graph's symbolic sizes (`Graph::sym`): affine size expressions over
//! symbols and the per-graph table of them. What they mean, and the functions over them,
//! are in `compile::sym`.

use super::NodeId;
use smallvec::SmallVec;

/// A symbol: one symbolic size, numbered `s0, s1, ...` in a graph's `SymInfo`.
pub type SymId = u32;

/// `Σ coef * symbol + k`; terms sorted by symbol, no zero coefficient.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct SymExpr {
    pub terms: SmallVec<[(SymId, i64); 2]>,
    pub k: i64,
}

/// A symbolic shape: one expression per dim.
pub type SymShape = Vec<SymExpr>;

/// The symbol that stands for input `slot`'s dim `dim` in a size expression carried by
/// an op attribute (`IrIndex::SymSlice`): attributes name input dims, not a graph's
/// symbols, so they survive the passes (which drop `Graph::sym`) and renumbering.
pub fn dim_ref(slot: usize, dim: usize) -> Option<SymId> {
    let (s, d) = (u32::try_from(slot).ok()?, u32::try_from(dim).ok()?);
    (s < (1 << 24) && d < 256).then_some((s << 8) | d)
}

/// The (input slot, dim) a [`dim_ref`] names.
pub fn dim_of_ref(r: SymId) -> (usize, usize) {
    ((r >> 8) as usize, (r & 0xff) as usize)
}

/// A graph's symbolic sizes (see `compile::sym`).
#[derive(Debug, Clone, Default)]
pub struct SymInfo {
    pub inputs: Vec<Vec<Option<SymId>>>,
    pub example: Vec<i64>,
    pub min: Vec<i64>,
    /// The largest size each symbol accepts (`i64::MAX`: unbounded); set by a slice
    /// whose symbolic stop must stay within a fixed dim (`w[:T]`: `T <= w.shape[0]`) and
    /// by a Python comparison on a symbolic int (`T <= 64`).
    pub max: Vec<i64>,
    pub shapes: Vec<SymShape>,
    pub targets: Vec<(NodeId, SymShape)>,
    /// The symbolic targets inside the regions of control nodes (those with any).
    pub regions: Vec<RegionTargets>,
}

/// The reshape/expand/symbolic-slice nodes of one region (of control node `node`:
/// region 0 is an `If`'s then-side or a loop's condition, 1 the else-side or the body)
/// whose target is symbolic, over the enclosing graph's symbols, and those of the
/// regions nested in it. A region's node shapes follow the bound values', so its
/// targets are evaluated with the symbols bound at the top-level call.
#[derive(Debug, Clone)]
pub struct RegionTargets {
    pub node: NodeId,
    pub region: usize,
    pub targets: Vec<(NodeId, SymShape)>,
    pub inner: Vec<RegionTargets>,
}
