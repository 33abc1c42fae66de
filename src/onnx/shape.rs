//! Shape and data-movement ops as ONNX nodes: Reshape, Transpose, Expand, Slice, Tile,
//! Concat, Gather(Elements), ScatterElements, OneHot and tensor indexing. Shapes are
//! static in the IR, so every shape operand is a constant.

use super::builder::{attr_i, attr_ints, attr_s, dims_i64, unsupported};
use super::lower::Lower;
use crate::compile::ir::{IrIndex, Node};
use crate::error::Result;

impl Lower<'_> {
    /// `Reshape(x, shape)` with a constant shape.
    pub fn reshape_to(&mut self, x: &str, shape: &[usize]) -> String {
        let s = self.b.const_i64(&dims_i64(shape), false);
        self.b.op("Reshape", &[x, &s], vec![])
    }

    pub fn reshape(&mut self, n: &Node) -> Result<String> {
        let a = self.arg(n, 0)?;
        Ok(self.reshape_to(&a.name, &n.shape))
    }

    pub fn permute(&mut self, n: &Node, perm: &[usize]) -> Result<String> {
        let a = self.arg(n, 0)?;
        let attrs = vec![attr_ints("perm", &dims_i64(perm))];
        Ok(self.b.op("Transpose", &[&a.name], attrs))
    }

    pub fn expand(&mut self, n: &Node) -> Result<String> {
        let a = self.arg(n, 0)?;
        let s = self.b.const_i64(&dims_i64(&n.shape), false);
        Ok(self.b.op("Expand", &[&a.name, &s], vec![]))
    }

    /// `Slice(x, [start], [end], [axis], [step])`.
    pub fn slice(&mut self, x: &str, axis: usize, start: i64, end: i64, step: i64) -> String {
        let s = self.b.const_i64(&[start], false);
        let e = self.b.const_i64(&[end], false);
        let a = self.b.const_i64(&[axis as i64], false);
        let st = self.b.const_i64(&[step], false);
        self.b.op("Slice", &[x, &s, &e, &a, &st], vec![])
    }

    pub fn narrow(&mut self, n: &Node, dim: usize, start: usize, len: usize) -> Result<String> {
        let a = self.arg(n, 0)?;
        let (s, e) = (start as i64, (start + len) as i64);
        Ok(self.slice(&a.name, dim, s, e, 1))
    }

    /// `repeat(reps)`: leading unit dims for extra reps, then Tile.
    pub fn repeat(&mut self, n: &Node, reps: &[usize]) -> Result<String> {
        let a = self.arg(n, 0)?;
        let extra = reps.len().saturating_sub(a.shape.len());
        let mut shape = vec![1usize; extra];
        shape.extend_from_slice(a.shape);
        let x = self.reshape_to(&a.name, &shape);
        let r = self.b.const_i64(&dims_i64(reps), false);
        Ok(self.b.op("Tile", &[&x, &r], vec![]))
    }

    /// All args of a variadic node, cast to the node's dtype.
    fn all_args(&mut self, n: &Node) -> Result<Vec<String>> {
        (0..n.args.len())
            .map(|i| {
                let a = self.arg(n, i)?;
                Ok(self.b.cast(&a.name, a.dtype, n.dtype))
            })
            .collect()
    }

    pub fn cat(&mut self, n: &Node, dim: usize) -> Result<String> {
        let xs = self.all_args(n)?;
        let refs: Vec<&str> = xs.iter().map(String::as_str).collect();
        Ok(self.b.op("Concat", &refs, vec![attr_i("axis", dim as i64)]))
    }

    pub fn stack(&mut self, n: &Node, dim: usize) -> Result<String> {
        let xs = self.all_args(n)?;
        let axes = self.b.const_i64(&[dim as i64], false);
        let us: Vec<String> = xs
            .iter()
            .map(|x| self.b.op("Unsqueeze", &[x, &axes], vec![]))
            .collect();
        let refs: Vec<&str> = us.iter().map(String::as_str).collect();
        Ok(self.b.op("Concat", &refs, vec![attr_i("axis", dim as i64)]))
    }

    /// index_select (Gather) or gather (GatherElements) along `dim`.
    pub fn gather(&mut self, n: &Node, dim: usize, elements: bool) -> Result<String> {
        let (x, i) = (self.arg(n, 0)?, self.arg(n, 1)?);
        let op = if elements { "GatherElements" } else { "Gather" };
        Ok(self
            .b
            .op(op, &[&x.name, &i.name], vec![attr_i("axis", dim as i64)]))
    }

    pub fn scatter_add(&mut self, n: &Node, dim: usize) -> Result<String> {
        let (x, i, u) = (self.arg(n, 0)?, self.arg(n, 1)?, self.arg(n, 2)?);
        let u = self.b.cast(&u.name, u.dtype, x.dtype);
        let attrs = vec![attr_i("axis", dim as i64), attr_s("reduction", "add")];
        Ok(self.b.op("ScatterElements", &[&x.name, &i.name, &u], attrs))
    }

    pub fn one_hot(&mut self, n: &Node, classes: usize) -> Result<String> {
        let a = self.arg(n, 0)?;
        let depth = self.b.const_i64(&[classes as i64], true);
        let values = self.b.const_i64(&[0, 1], false);
        let attrs = vec![attr_i("axis", -1)];
        Ok(self.b.op("OneHot", &[&a.name, &depth, &values], attrs))
    }

    /// Basic indexing (ints, slices, None, ...) and one int64 index tensor.
    pub fn index(&mut self, n: &Node, indices: &[IrIndex]) -> Result<String> {
        let a = self.arg(n, 0)?;
        let mut x = a.name.clone();
        let mut shape: Vec<usize> = a.shape.to_vec();
        let mut axis = 0usize;
        let mut advanced = 0usize;
        for ix in indices {
            match ix {
                IrIndex::Ellipsis => {
                    axis += shape
                        .len()
                        .saturating_sub(axis + consumed_after(indices, ix))
                }
                IrIndex::NewAxis => {
                    let ax = self.b.const_i64(&[axis as i64], false);
                    x = self.b.op("Unsqueeze", &[&x, &ax], vec![]);
                    shape.insert(axis.min(shape.len()), 1);
                    axis += 1;
                }
                IrIndex::Int(i) => {
                    let size = *shape
                        .get(axis)
                        .ok_or_else(|| self.bad("an index past the last dim"))?
                        as i64;
                    let i = if *i < 0 { i + size } else { *i };
                    let c = self.b.const_i64(&[i], true);
                    x = self
                        .b
                        .op("Gather", &[&x, &c], vec![attr_i("axis", axis as i64)]);
                    shape.remove(axis);
                }
                IrIndex::Slice { start, stop, step } => {
                    let size = *shape
                        .get(axis)
                        .ok_or_else(|| self.bad("an index past the last dim"))?;
                    let (s, e, st, len) = slice_bounds(*start, *stop, *step, size)
                        .ok_or_else(|| unsupported("a slice with a non-positive step", &self.at))?;
                    if len != size {
                        x = self.slice(&x, axis, s, e, st);
                        shape[axis] = len;
                    }
                    axis += 1;
                }
                IrIndex::Indices { arg } => {
                    advanced += 1;
                    if advanced > 1 {
                        return Err(unsupported("indexing with several index tensors", &self.at));
                    }
                    let t = self.arg(n, *arg)?;
                    if axis >= shape.len() {
                        return Err(self.bad("an index past the last dim"));
                    }
                    x = self
                        .b
                        .op("Gather", &[&x, &t.name], vec![attr_i("axis", axis as i64)]);
                    shape.splice(axis..=axis, t.shape.iter().copied());
                    axis += t.shape.len();
                }
                IrIndex::Mask { .. } => {
                    return Err(unsupported(
                        "boolean-mask indexing (a data-dependent shape)",
                        &self.at,
                    ))
                }
            }
        }
        if shape != n.shape.as_slice() {
            return Ok(self.reshape_to(&x, &n.shape));
        }
        Ok(self.b.op("Identity", &[&x], vec![]))
    }
}

/// How many dims the indices after `ix` consume.
fn consumed_after(indices: &[IrIndex], ix: &IrIndex) -> usize {
    let pos = indices
        .iter()
        .position(|i| std::ptr::eq(i, ix))
        .unwrap_or(indices.len());
    indices
        .iter()
        .skip(pos + 1)
        .filter(|i| !matches!(i, IrIndex::NewAxis | IrIndex::Ellipsis))
        .count()
}

/// Python slice bounds clamped to `size`: (start, end, step, length); None for a
/// non-positive step.
fn slice_bounds(
    start: Option<i64>,
    stop: Option<i64>,
    step: Option<i64>,
    size: usize,
) -> Option<(i64, i64, i64, usize)> {
    let step = step.unwrap_or(1);
    if step <= 0 {
        return None;
    }
    let n = size as i64;
    let norm = |v: i64| if v < 0 { (v + n).max(0) } else { v.min(n) };
    let s = start.map_or(0, norm);
    let e = stop.map_or(n, norm);
    let len = if e > s {
        ((e - s + step - 1) / step) as usize
    } else {
        0
    };
    Some((s, e.max(s), step, len))
}
