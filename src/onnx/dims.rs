//! Sizes of a graph exported with dynamic axes: each symbol's runtime value read from
//! the graph input that binds it (`Shape(x, start=d, end=d+1)`), affine size
//! expressions and whole shapes as int64 tensors computed from those values, and the
//! `dim_param` text of a symbolic dim. A static graph (or a region, whose shapes the
//! capture keeps fixed) gets constants.

use super::builder::{attr_i, dims_i64};
use super::lower::Lower;
use crate::compile::ir::NodeId;
use crate::compile::sym::{SymExpr, SymInfo, SymShape};
use crate::error::Result;
use crate::tensor::dtype::{DType, Scalar};

/// A symbolic graph's size information for the lowering.
pub struct Syms<'g> {
    pub info: &'g SymInfo,
    /// Per symbol, the `[1]`-shaped int64 value holding its size at run time.
    pub vals: Vec<String>,
}

impl<'g> Syms<'g> {
    /// Symbolic shape of node `id` when at least one of its dims is symbolic.
    pub fn shape(&self, id: NodeId) -> Option<&'g SymShape> {
        let s = self.info.shapes.get(id.index())?;
        s.iter().any(|e| e.as_const().is_none()).then_some(s)
    }
}

/// `dim_param` text of `e`: the symbol's name, or the expression over the names
/// (`2*seq+1`).
pub fn dim_text(e: &SymExpr, names: &[String]) -> String {
    let name = |s: u32| {
        names
            .get(s as usize)
            .cloned()
            .unwrap_or_else(|| format!("s{s}"))
    };
    let mut out = String::new();
    for (i, &(s, c)) in e.terms.iter().enumerate() {
        let sign = if i > 0 && c >= 0 { "+" } else { "" };
        match c {
            1 => out.push_str(&format!("{sign}{}", name(s))),
            -1 => out.push_str(&format!("-{}", name(s))),
            _ => out.push_str(&format!("{sign}{c}*{}", name(s))),
        }
    }
    match e.k {
        0 if !out.is_empty() => {}
        k if k > 0 && !out.is_empty() => out.push_str(&format!("+{k}")),
        k => out.push_str(&k.to_string()),
    }
    out
}

impl Lower<'_> {
    /// Emits one `Shape` node per symbol reading it from the first input dim bound to
    /// it; `input_names[slot]` names argument input `slot`.
    pub fn init_symbols(&mut self, input_names: &[String]) -> Result<()> {
        let Some(info) = self.g.sym.as_deref() else {
            return Ok(());
        };
        let mut vals = vec![String::new(); info.num_symbols()];
        for (slot, dims) in info.inputs.iter().enumerate() {
            for (d, s) in dims.iter().enumerate() {
                let Some(v) = s.and_then(|s| vals.get_mut(s as usize)) else {
                    continue;
                };
                if v.is_empty() {
                    let x = input_names
                        .get(slot)
                        .ok_or_else(|| self.bad("a symbolic size of a missing input"))?;
                    let attrs = vec![attr_i("start", d as i64), attr_i("end", d as i64 + 1)];
                    *v = self.b.op("Shape", &[x], attrs);
                }
            }
        }
        if vals.iter().any(String::is_empty) {
            return Err(self.bad("a symbol bound to no input"));
        }
        self.syms = Some(Syms { info, vals });
        Ok(())
    }

    /// The symbolic shape of node `id` (None: static, or not a symbolic graph).
    pub fn sym_shape(&self, id: NodeId) -> Option<&SymShape> {
        self.syms.as_ref()?.shape(id)
    }

    /// `e` as a `[1]`-shaped int64 value.
    fn expr_value(&mut self, e: &SymExpr) -> Result<String> {
        let mut acc: Option<String> = None;
        for &(s, c) in &e.terms {
            let v = self
                .syms
                .as_ref()
                .and_then(|y| y.vals.get(s as usize))
                .cloned()
                .ok_or_else(|| self.bad("an unknown symbol"))?;
            let t = if c == 1 {
                v
            } else {
                let k = self.b.const_i64(&[c], false);
                self.b.op("Mul", &[&v, &k], vec![])
            };
            acc = Some(match acc {
                None => t,
                Some(a) => self.b.op("Add", &[&a, &t], vec![]),
            });
        }
        Ok(match acc {
            None => self.b.const_i64(&[e.k], false),
            Some(a) if e.k == 0 => a,
            Some(a) => {
                let k = self.b.const_i64(&[e.k], false);
                self.b.op("Add", &[&a, &k], vec![])
            }
        })
    }

    /// The shape of node `id` as a 1-D int64 value: computed from the symbols when it
    /// is symbolic, else the constant `shape`.
    pub fn shape_value(&mut self, id: NodeId, shape: &[usize]) -> Result<String> {
        let Some(s) = self.sym_shape(id).cloned() else {
            return Ok(self.b.const_i64(&dims_i64(shape), false));
        };
        let parts = s
            .iter()
            .map(|e| self.expr_value(e))
            .collect::<Result<Vec<_>>>()?;
        let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
        let attrs = vec![attr_i("axis", 0)];
        Ok(self.b.op("Concat", &refs, attrs))
    }

    /// Dim `dim` of node `id` as a 0-d int64 value (a constant when static).
    pub fn dim_scalar(&mut self, id: NodeId, dim: usize, size: usize) -> Result<String> {
        let e = self.sym_shape(id).and_then(|s| s.get(dim)).cloned();
        match e {
            Some(e) if e.as_const().is_none() => {
                let v = self.expr_value(&e)?;
                let shape = self.b.const_i64(&[], false);
                Ok(self.b.op("Reshape", &[&v, &shape], vec![]))
            }
            _ => Ok(self.b.const_scalar(Scalar::Int(size as i64), DType::I64)),
        }
    }
}
