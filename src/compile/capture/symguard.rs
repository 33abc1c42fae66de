//! Guards of versions compiled with symbolic sizes, and the automatic-dynamic policy:
//! a symbolic version matches a call whose keys agree except in its symbolic dims, when
//! dims bound to one symbol are equal and each symbol is at least its least size; and
//! the dims in which a call differs from an earlier version are the ones a recompile
//! makes symbolic.

use crate::compile::capture::cache::KeyPart;
use crate::compile::sym::{SymId, SymInfo};

/// Which argument-tensor dims of a version are symbolic (per input slot, per dim) and
/// each symbol's least and largest size.
#[derive(Debug, Clone, PartialEq)]
pub struct SymGuard {
    pub dims: Vec<Vec<Option<SymId>>>,
    pub min: Vec<i64>,
    pub max: Vec<i64>,
}

impl SymGuard {
    /// The guard of a symbolic graph whose first `args` input slots are arguments; None
    /// when no symbol is left (the version is static).
    pub fn of(info: &SymInfo, args: usize) -> Option<SymGuard> {
        if info.num_symbols() == 0 {
            return None;
        }
        Some(SymGuard {
            dims: info.inputs.iter().take(args).cloned().collect(),
            min: info.min.clone(),
            max: info.max.clone(),
        })
    }

    /// True when a call keyed `new` may run the version keyed `old`.
    pub fn matches(&self, old: &[KeyPart], new: &[KeyPart]) -> bool {
        let Some(pairs) = argument_shapes(old, new) else {
            return false;
        };
        let mut vals: Vec<Option<usize>> = vec![None; self.min.len()];
        for (slot, shape, s2) in pairs {
            let dims = self.dims.get(slot);
            for (d, (&x, &y)) in shape.iter().zip(s2.iter()).enumerate() {
                match dims.and_then(|v| v.get(d)).copied().flatten() {
                    None if x != y => return false,
                    None => {}
                    Some(s) => {
                        let min = self.min.get(s as usize).copied().unwrap_or(i64::MAX);
                        let max = self.max.get(s as usize).copied().unwrap_or(i64::MIN);
                        let Some(v) = vals.get_mut(s as usize) else {
                            return false;
                        };
                        let n = y as i64;
                        if n < min || n > max || v.is_some_and(|v| v != y) {
                            return false;
                        }
                        *v = Some(y);
                    }
                }
            }
        }
        true
    }
}

/// The (input slot, dim) pairs in which `new` differs from `old` when the two keys
/// agree in everything else (structure, dtypes, ranks, other values); None otherwise.
pub fn differing_dims(old: &[KeyPart], new: &[KeyPart]) -> Option<Vec<(usize, usize)>> {
    let pairs = argument_shapes(old, new)?;
    let mut out = Vec::new();
    for (slot, shape, s2) in pairs {
        let diff = shape.iter().zip(s2.iter()).enumerate();
        out.extend(diff.filter(|(_, (x, y))| x != y).map(|(d, _)| (slot, d)));
    }
    Some(out)
}

/// An argument tensor's input slot with its old and new shapes.
type ShapePair<'a> = (usize, &'a [usize], &'a [usize]);

/// Pairs the argument tensors (input slots; aliases of an earlier tensor skipped) of two
/// keys as (slot, old shape, new shape) when the keys agree in everything but sizes:
/// structure, non-tensor values, dtypes, requires_grad, aliasing and ranks.
fn argument_shapes<'a>(old: &'a [KeyPart], new: &'a [KeyPart]) -> Option<Vec<ShapePair<'a>>> {
    if old.len() != new.len() {
        return None;
    }
    let mut out = Vec::new();
    let mut tensor = 0usize;
    for (a, b) in old.iter().zip(new) {
        match (a, b) {
            (
                KeyPart::Tensor {
                    dtype,
                    shape,
                    requires_grad,
                    contiguous,
                    alias,
                },
                KeyPart::Tensor {
                    dtype: d2,
                    shape: s2,
                    requires_grad: r2,
                    contiguous: c2,
                    alias: a2,
                },
            ) => {
                if dtype != d2
                    || requires_grad != r2
                    || contiguous != c2
                    || alias != a2
                    || shape.len() != s2.len()
                {
                    return None;
                }
                if *alias == tensor {
                    out.push((out.len(), &shape[..], &s2[..]));
                }
                tensor += 1;
            }
            _ if a != b => return None,
            _ => {}
        }
    }
    Some(out)
}
