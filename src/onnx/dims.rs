//! Sizes of a graph exported with dynamic axes: each symbol's runtime value read from
//! the graph input that binds it (`Shape(x, start=d, end=d+1)`), affine size
//! expressions and whole shapes as int64 tensors computed from those values, and the
//! `dim_param` text of a symbolic dim. A region (an `If` side, a `Loop` body) gets the
//! symbolic shapes of its nodes from its bound values' (`sym::region_shapes`) and reads
//! the symbols' values from the enclosing graph by name; a static graph gets constants.

use super::builder::{attr_i, dims_i64};
use super::lower::Lower;
use crate::compile::ir::{Graph, NodeId};
use crate::compile::sym::{region_shapes, SymExpr, SymInfo, SymShape};
use crate::error::Result;
use crate::ir::sym::dim_of_ref;
use crate::tensor::dtype::{DType, Scalar};

/// A symbolic graph's size information for the lowering.
#[derive(Clone)]
pub struct Syms<'g> {
    pub info: &'g SymInfo,
    /// The exported (top-level) graph.
    pub top: &'g Graph,
    /// Per node of the graph being lowered (the top graph or a region), its shape.
    pub shapes: Vec<SymShape>,
    /// Per symbol, the `[1]`-shaped int64 value holding its size at run time.
    pub vals: Vec<String>,
    /// Per symbol, its `dim_param` name (that of the first input axis bound to it).
    pub names: Vec<String>,
}

impl Syms<'_> {
    /// Symbolic shape of node `id` when at least one of its dims is symbolic.
    pub fn shape(&self, id: NodeId) -> Option<&SymShape> {
        let s = self.shapes.get(id.index())?;
        s.iter().any(|e| e.as_const().is_none()).then_some(s)
    }
}

/// `dim_param` text of `e`: the symbol's name, or the expression over the names
/// (`2*seq+1`).
pub fn dim_text(e: &SymExpr, names: &[String]) -> String {
    let name = |s: u32| {
        names
            .get(s as usize)
            .filter(|n| !n.is_empty())
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

impl<'g> Lower<'g> {
    /// Emits one `Shape` node per symbol reading it from the first input dim bound to
    /// it; `input_names[slot]` names argument input `slot`.
    pub fn init_symbols(&mut self, input_names: &[String], names: Vec<String>) -> Result<()> {
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
        self.syms = Some(Syms {
            info,
            top: self.g,
            shapes: info.shapes.clone(),
            vals,
            names,
        });
        Ok(())
    }

    /// The size information of region `g` run on the values `bound` (IR nodes of the
    /// graph being lowered; None: the index of a loop, a 0-d value). None when this
    /// graph is static or the region does not follow the symbols.
    pub fn region_syms(&self, g: &Graph, bound: &[Option<NodeId>]) -> Option<Syms<'g>> {
        let y = self.syms.as_ref()?;
        let shapes: Vec<SymShape> = bound
            .iter()
            .map(|b| match b {
                Some(id) => y.shapes.get(id.index()).cloned(),
                None => Some(Vec::new()),
            })
            .collect::<Option<_>>()?;
        let shapes = region_shapes(y.info, g, &shapes)?;
        Some(Syms {
            shapes,
            ..y.clone()
        })
    }

    /// The `dim_param` text of each dim of node `id` (None for fixed dims), or None
    /// when its shape is static.
    pub fn dim_params(&self, id: NodeId) -> Option<Vec<Option<String>>> {
        let y = self.syms.as_ref()?;
        let s = y.shape(id)?;
        Some(
            s.iter()
                .map(|e| e.as_const().is_none().then(|| dim_text(e, &y.names)))
                .collect(),
        )
    }

    /// A size expression over input dims (`IrIndex::SymSlice`'s `sym`) as one over the
    /// symbols, or None when it has none (every dim it names is fixed).
    pub fn dim_ref_expr(&self, e: &SymExpr) -> Option<SymExpr> {
        let y = self.syms.as_ref()?;
        let known = std::cell::Cell::new(true);
        let out = e.subst(&|r| {
            let (slot, d) = dim_of_ref(r);
            let s = y.info.inputs.get(slot).and_then(|v| v.get(d)).copied();
            if let Some(s) = s.flatten() {
                return SymExpr::sym(s);
            }
            let n = y.top.inputs.get(slot).and_then(|i| y.top.node(*i));
            match n.and_then(|n| n.shape.get(d)) {
                Some(&size) => SymExpr::konst(size as i64),
                None => {
                    known.set(false);
                    SymExpr::konst(0)
                }
            }
        })?;
        (known.get() && out.as_const().is_none()).then_some(out)
    }

    /// The symbolic shape of node `id` (None: static, or not a symbolic graph).
    pub fn sym_shape(&self, id: NodeId) -> Option<&SymShape> {
        self.syms.as_ref()?.shape(id)
    }

    /// `e` as a `[1]`-shaped int64 value.
    pub fn expr_value(&mut self, e: &SymExpr) -> Result<String> {
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
