//! Tensor indexing `x[...]` as ONNX nodes, with Kiln's semantics (tensor/indexing.rs):
//! ints (Gather), slices (Slice, negative steps included), `None` (Unsqueeze) and `...`
//! apply in order; then the advanced indices: one int64 tensor -> Gather, one 1-d bool
//! mask -> Compress, otherwise (several index tensors, n-d masks) the coordinates
//! (masks through NonZero) are broadcast together, stacked and read with GatherND from
//! `x` transposed to put the indexed dims first; the result dims go where the first
//! indexed dim was when the indexed dims are adjacent, else in front.

use super::builder::{attr_i, attr_ints, unsupported};
use super::lower::Lower;
use crate::compile::ir::{IrIndex, Node};
use crate::compile::sym::SymExpr;
use crate::error::Result;
use crate::tensor::dtype::{DType, Scalar};

/// An advanced index at view dim `axis`: an int64 tensor, or a bool mask over `k` dims.
enum Adv {
    Tensor { axis: usize, arg: usize },
    Mask { axis: usize, arg: usize, k: usize },
}

impl Lower<'_> {
    pub fn index(&mut self, n: &Node, indices: &[IrIndex]) -> Result<String> {
        let a = self.arg(n, 0)?;
        let mut x = a.name.clone();
        let mut rank = a.shape.len();
        let sizes = |axis: usize| a.shape.get(axis).copied();
        let consumed = self.consumed(n, indices)?;
        let mut src = 0usize; // dim of `a` the next index reads
        let mut axis = 0usize; // dim of the current value `x`
        let mut adv = Vec::new();
        for (k, ix) in indices.iter().enumerate() {
            let sym_len = match ix {
                IrIndex::SymSlice { start, sym, .. } => self.dim_ref_expr(sym).map(|l| (*start, l)),
                _ => None,
            };
            if let Some((start, len)) = sym_len {
                // `[start:start + len]`, `len` a size of the inputs read at run time.
                let end = len
                    .add(&SymExpr::konst(start))
                    .ok_or_else(|| self.bad("a slice end out of range"))?;
                let e = self.expr_value(&end)?;
                let s = self.b.const_i64(&[start], false);
                let ax = self.b.const_i64(&[axis as i64], false);
                x = self.b.op("Slice", &[&x, &s, &e, &ax], vec![]);
                axis += 1;
                src += 1;
                continue;
            }
            match ix {
                IrIndex::Ellipsis => {
                    let after: usize = consumed.get(k + 1..).map_or(0, |c| c.iter().sum());
                    let fill = a.shape.len().saturating_sub(src + after);
                    axis += fill;
                    src += fill;
                }
                IrIndex::NewAxis => {
                    let ax = self.b.const_i64(&[axis as i64], false);
                    x = self.b.op("Unsqueeze", &[&x, &ax], vec![]);
                    rank += 1;
                    axis += 1;
                }
                IrIndex::Int(i) => {
                    // Gather takes negative indices from the end, as Python does.
                    let c = self.b.const_i64(&[*i], true);
                    x = self
                        .b
                        .op("Gather", &[&x, &c], vec![attr_i("axis", axis as i64)]);
                    rank = rank.saturating_sub(1);
                    src += 1;
                }
                IrIndex::Slice { .. } | IrIndex::SymSlice { .. } => {
                    let (start, stop, step) = match ix {
                        IrIndex::SymSlice { start, len, .. } => {
                            (Some(*start), Some(start.saturating_add(*len)), None)
                        }
                        IrIndex::Slice { start, stop, step } => (*start, *stop, *step),
                        _ => (None, None, None),
                    };
                    let size = sizes(src).ok_or_else(|| self.bad("an index past the last dim"))?;
                    x = self.slice_index(&x, axis, (start, stop, step), size)?;
                    axis += 1;
                    src += 1;
                }
                IrIndex::Indices { arg } => {
                    adv.push(Adv::Tensor { axis, arg: *arg });
                    axis += 1;
                    src += 1;
                }
                IrIndex::Mask { arg } => {
                    let k = self.arg(n, *arg)?.shape.len();
                    adv.push(Adv::Mask { axis, arg: *arg, k });
                    axis += k;
                    src += k;
                }
            }
        }
        match adv.as_slice() {
            [] => Ok(self.b.op("Identity", &[&x], vec![])),
            [Adv::Tensor { axis, arg }] => {
                let t = self.arg(n, *arg)?;
                let attrs = vec![attr_i("axis", *axis as i64)];
                Ok(self.b.op("Gather", &[&x, &t.name], attrs))
            }
            [Adv::Mask { axis, arg, k: 1 }] => {
                let m = self.arg(n, *arg)?;
                let m = self.b.cast(&m.name, m.dtype, DType::Bool);
                let attrs = vec![attr_i("axis", *axis as i64)];
                Ok(self.b.op("Compress", &[&x, &m], attrs))
            }
            _ => self.gather_nd(n, &x, rank, &adv),
        }
    }

    /// How many dims of the indexed tensor each index reads.
    fn consumed(&self, n: &Node, indices: &[IrIndex]) -> Result<Vec<usize>> {
        indices
            .iter()
            .map(|ix| match ix {
                IrIndex::Int(_)
                | IrIndex::Slice { .. }
                | IrIndex::SymSlice { .. }
                | IrIndex::Indices { .. } => Ok(1),
                IrIndex::Mask { arg } => Ok(self.arg(n, *arg)?.shape.len()),
                IrIndex::NewAxis | IrIndex::Ellipsis => Ok(0),
            })
            .collect()
    }

    /// `x[start:stop:step]` along `axis` (of traced size `size`).
    fn slice_index(
        &mut self,
        x: &str,
        axis: usize,
        (start, stop, step): (Option<i64>, Option<i64>, Option<i64>),
        size: usize,
    ) -> Result<String> {
        let step = step.unwrap_or(1);
        if step > 0 {
            if matches!(start, None | Some(0)) && stop.is_none() && step == 1 {
                return Ok(x.to_string());
            }
            // ONNX Slice clamps positive-step bounds as Python does, at any size.
            let (s, e) = (start.unwrap_or(0), stop.unwrap_or(i64::MAX));
            return Ok(self.slice(x, axis, s, e, step));
        }
        let (s, e, st) = negative_slice(start, stop, step, size)
            .ok_or_else(|| unsupported("a slice with step 0", &self.at))?;
        Ok(self.slice(x, axis, s, e, st))
    }

    /// Several index tensors and/or n-d masks: GatherND over the indexed dims.
    fn gather_nd(&mut self, n: &Node, x: &str, rank: usize, adv: &[Adv]) -> Result<String> {
        let mut coords: Vec<(usize, String)> = Vec::new();
        let mut nb = 1usize; // rank of the broadcast index shape
        for a in adv {
            match a {
                Adv::Tensor { axis, arg } => {
                    let t = self.arg(n, *arg)?;
                    nb = nb.max(t.shape.len());
                    coords.push((*axis, t.name));
                }
                Adv::Mask { axis, arg, k } => {
                    let m = self.arg(n, *arg)?;
                    let m = self.b.cast(&m.name, m.dtype, DType::Bool);
                    let nz = self.b.op("NonZero", &[&m], vec![]);
                    for j in 0..*k {
                        let c = self.b.const_i64(&[j as i64], true);
                        let row = self.b.op("Gather", &[&nz, &c], vec![attr_i("axis", 0)]);
                        coords.push((axis + j, row));
                    }
                }
            }
        }
        let idx = self.stack_broadcast(&coords);
        let dims: Vec<usize> = coords.iter().map(|c| c.0).collect();
        let rest: Vec<usize> = (0..rank).filter(|d| !dims.contains(d)).collect();
        let perm: Vec<i64> = dims.iter().chain(&rest).map(|&d| d as i64).collect();
        let xt = self.b.op("Transpose", &[x], vec![attr_ints("perm", &perm)]);
        let g = self.b.op("GatherND", &[&xt, &idx], vec![]);
        let adjacent = dims.windows(2).all(|w| w[1] == w[0] + 1);
        let first = dims.first().copied().unwrap_or(0);
        if !adjacent || first == 0 {
            return Ok(g);
        }
        // [B..., outer..., inner...] -> [outer..., B..., inner...]
        let outer = nb..nb + first;
        let back: Vec<i64> = outer
            .chain(0..nb)
            .chain(nb + first..nb + rest.len())
            .map(|d| d as i64)
            .collect();
        Ok(self
            .b
            .op("Transpose", &[&g], vec![attr_ints("perm", &back)]))
    }

    /// The coordinate tensors broadcast together (adding a broadcast zero) and stacked
    /// along a new last axis: GatherND's index tensor.
    fn stack_broadcast(&mut self, coords: &[(usize, String)]) -> String {
        let zero = self.b.const_scalar(Scalar::Int(0), DType::I64);
        let mut common: Option<String> = None;
        for (_, c) in coords {
            let z = self.b.op("Mul", &[c, &zero], vec![]);
            common = Some(match common {
                None => z,
                Some(acc) => self.b.op("Add", &[&acc, &z], vec![]),
            });
        }
        let common = common.unwrap_or(zero);
        let last = self.b.const_i64(&[-1], false);
        let cols: Vec<String> = coords
            .iter()
            .map(|(_, c)| {
                let full = self.b.op("Add", &[c, &common], vec![]);
                self.b.op("Unsqueeze", &[&full, &last], vec![])
            })
            .collect();
        let refs: Vec<&str> = cols.iter().map(String::as_str).collect();
        self.b.op("Concat", &refs, vec![attr_i("axis", -1)])
    }
}

/// ONNX Slice `(start, end, step)` for Python's `[start:stop:step]` with `step < 0` on
/// a dim of size `n` (None for step 0). Python clamps a start below the range to
/// "before the first element" (empty), ONNX to the first element, so the bounds are
/// normalised here; the end "before the first element" is `i64::MIN` in ONNX.
pub fn negative_slice(
    start: Option<i64>,
    stop: Option<i64>,
    step: i64,
    n: usize,
) -> Option<(i64, i64, i64)> {
    if step >= 0 {
        return None;
    }
    let n = n as i64;
    let norm = |v: i64| (if v < 0 { v + n } else { v }).clamp(-1, n - 1);
    let a = start.map_or(n - 1, norm);
    let b = stop.map_or(-1, norm);
    if a <= b || a < 0 {
        return Some((0, 0, 1));
    }
    Some((a, if b < 0 { i64::MIN } else { b }, step))
}

#[cfg(test)]
mod tests {
    use super::negative_slice;

    /// Python's `list(range(n))[start:stop:step]`, written out by hand.
    fn python(start: Option<i64>, stop: Option<i64>, step: i64, n: usize) -> Vec<i64> {
        let (s, e, st) = negative_slice(start, stop, step, n).expect("step < 0");
        let mut out = Vec::new();
        let mut i = s;
        // ONNX semantics: walk from `s` by `st` while past `e` (e = MIN: to index 0)
        while (st < 0 && i > e && i >= 0) || (st > 0 && i < e) {
            out.push(i);
            i += st;
        }
        out
    }

    #[test]
    fn negative_steps_follow_python() {
        // values from CPython 3.11: list(range(5))[...]
        assert_eq!(python(None, None, -1, 5), vec![4, 3, 2, 1, 0]);
        assert_eq!(python(None, None, -2, 5), vec![4, 2, 0]);
        assert_eq!(python(Some(3), None, -1, 5), vec![3, 2, 1, 0]);
        assert_eq!(python(Some(3), Some(0), -1, 5), vec![3, 2, 1]);
        assert_eq!(python(Some(-1), Some(-4), -1, 5), vec![4, 3, 2]);
        assert_eq!(python(Some(10), Some(1), -3, 5), vec![4]);
        assert_eq!(python(Some(-100), None, -1, 5), Vec::<i64>::new());
        assert_eq!(python(Some(1), Some(3), -1, 5), Vec::<i64>::new());
        assert_eq!(python(None, Some(-100), -1, 5), vec![4, 3, 2, 1, 0]);
        assert_eq!(negative_slice(None, None, 0, 5), None);
    }
}
