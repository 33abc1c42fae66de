//! Shape and data-movement ops as ONNX nodes: Reshape, Transpose, Expand, Slice, Tile,
//! Concat, Gather(Elements), ScatterElements, OneHot and tensor indexing. A shape
//! operand is a constant, or computed from the input sizes when it has symbolic dims
//! (see `dims`).

use super::builder::{attr_i, attr_ints, attr_s, dims_i64};
use super::lower::Lower;
use crate::compile::ir::Node;
use crate::error::Result;
use crate::tensor::dtype::Scalar;

impl Lower<'_> {
    /// `Reshape(x)` to the shape of the node being lowered (`shape` when static).
    pub fn reshape_node(&mut self, x: &str, shape: &[usize]) -> Result<String> {
        let s = self.shape_value(self.cur, shape)?;
        Ok(self.b.op("Reshape", &[x, &s], vec![]))
    }

    pub fn reshape(&mut self, n: &Node) -> Result<String> {
        let a = self.arg(n, 0)?;
        self.reshape_node(&a.name, &n.shape)
    }

    pub fn permute(&mut self, n: &Node, perm: &[usize]) -> Result<String> {
        let a = self.arg(n, 0)?;
        let attrs = vec![attr_ints("perm", &dims_i64(perm))];
        Ok(self.b.op("Transpose", &[&a.name], attrs))
    }

    pub fn expand(&mut self, n: &Node) -> Result<String> {
        let a = self.arg(n, 0)?;
        let s = self.shape_value(self.cur, &n.shape)?;
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
        let x = if extra > 0 {
            let axes: Vec<i64> = (0..extra as i64).collect();
            let axes = self.b.const_i64(&axes, false);
            self.b.op("Unsqueeze", &[&a.name, &axes], vec![])
        } else {
            a.name
        };
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

    /// `scatter` of a tensor src: ScatterElements with no reduction.
    pub fn scatter(&mut self, n: &Node, dim: usize) -> Result<String> {
        let (x, i, u) = (self.arg(n, 0)?, self.arg(n, 1)?, self.arg(n, 2)?);
        let u = self.b.cast(&u.name, u.dtype, x.dtype);
        let attrs = vec![attr_i("axis", dim as i64)];
        Ok(self.b.op("ScatterElements", &[&x.name, &i.name, &u], attrs))
    }

    /// `linalg.det`: ONNX's Det (batched over leading dims).
    pub fn det(&mut self, n: &Node) -> Result<String> {
        let a = self.arg(n, 0)?;
        Ok(self.b.op("Det", &[&a.name], vec![]))
    }

    /// `full_like(x, v)`: the value expanded to x's runtime shape.
    pub fn fill_like(&mut self, n: &Node, v: Scalar) -> Result<String> {
        let a = self.arg(n, 0)?;
        let shape = self.b.op("Shape", &[&a.name], vec![]);
        let value = self.b.const_scalar(v, n.dtype);
        Ok(self.b.op("Expand", &[&value, &shape], vec![]))
    }

    /// `sort`/`topk` positions: TopK's indices (sorted; ONNX puts the lower index first
    /// among equal elements, the stable order), k the dim's size for a whole sort.
    pub fn sort_indices(
        &mut self,
        n: &Node,
        dim: usize,
        descending: bool,
        k: Option<usize>,
    ) -> Result<String> {
        let a = self.arg(n, 0)?;
        let k = match k {
            Some(k) => self.b.const_i64(&[k as i64], false),
            None => {
                let shape = self.b.op("Shape", &[&a.name], vec![]);
                let at = self.b.const_i64(&[dim as i64], false);
                self.b.op("Gather", &[&shape, &at], vec![])
            }
        };
        let attrs = vec![
            attr_i("axis", dim as i64),
            attr_i("largest", i64::from(descending)),
            attr_i("sorted", 1),
        ];
        let (values, indices) = (self.b.fresh("TopK"), self.b.fresh("TopK"));
        self.b
            .op_outs("TopK", &[&a.name, &k], attrs, vec![values, indices.clone()]);
        Ok(indices)
    }

    pub fn one_hot(&mut self, n: &Node, classes: usize) -> Result<String> {
        let a = self.arg(n, 0)?;
        let depth = self.b.const_i64(&[classes as i64], true);
        let values = self.b.const_i64(&[0, 1], false);
        let attrs = vec![attr_i("axis", -1)];
        Ok(self.b.op("OneHot", &[&a.name, &depth, &values], attrs))
    }
}
