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

/// A graph's symbolic sizes (see `compile::sym`).
#[derive(Debug, Clone, Default)]
pub struct SymInfo {
    pub inputs: Vec<Vec<Option<SymId>>>,
    pub example: Vec<i64>,
    pub min: Vec<i64>,
    pub shapes: Vec<SymShape>,
    pub targets: Vec<(NodeId, SymShape)>,
}
