//! Reductions, softmax and cumulative sums as ONNX nodes (opset 18: every Reduce* op
//! takes its axes as an input).

use super::builder::{attr_i, dims_i64};
use super::lower::{Arg, Lower};
use crate::compile::ir::Node;
use crate::error::Result;
use crate::tensor::dtype::{DType, Scalar};

/// Which ONNX reduction a node uses.
#[derive(Clone, Copy)]
pub enum Reduce {
    Sum,
    Mean,
    Prod,
    Max,
    Min,
    LogSumExp,
    L1,
    L2,
}

impl Reduce {
    fn op(self) -> &'static str {
        match self {
            Reduce::Sum => "ReduceSum",
            Reduce::Mean => "ReduceMean",
            Reduce::Prod => "ReduceProd",
            Reduce::Max => "ReduceMax",
            Reduce::Min => "ReduceMin",
            Reduce::LogSumExp => "ReduceLogSumExp",
            Reduce::L1 => "ReduceL1",
            Reduce::L2 => "ReduceL2",
        }
    }
}

impl Lower<'_> {
    /// `red(x)` over `dims` (empty: all dims).
    pub fn reduce(&mut self, red: Reduce, x: &str, dims: &[usize], keepdim: bool) -> String {
        let attrs = vec![attr_i("keepdims", i64::from(keepdim))];
        if dims.is_empty() {
            return self.b.op(red.op(), &[x], attrs);
        }
        let axes = self.b.const_i64(&dims_i64(dims), false);
        self.b.op(red.op(), &[x, &axes], attrs)
    }

    /// A reduction node whose input is cast to the result dtype first.
    pub fn reduce_node(
        &mut self,
        n: &Node,
        red: Reduce,
        dims: &[usize],
        keepdim: bool,
    ) -> Result<String> {
        let a = self.arg(n, 0)?;
        let x = self.b.cast(&a.name, a.dtype, n.dtype);
        Ok(self.reduce(red, &x, dims, keepdim))
    }

    /// max/min along one dim (the values).
    pub fn extreme_dim(
        &mut self,
        n: &Node,
        dim: usize,
        keepdim: bool,
        min: bool,
    ) -> Result<String> {
        let red = if min { Reduce::Min } else { Reduce::Max };
        self.reduce_node(n, red, &[dim], keepdim)
    }

    /// argmax/argmin along `dim`, or of the flattened tensor.
    pub fn arg_extreme(&mut self, n: &Node, dim: Option<usize>, min: bool) -> Result<String> {
        let a = self.arg(n, 0)?;
        let op = if min { "ArgMin" } else { "ArgMax" };
        // ArgMax/ArgMin take numbers, not bool (int64 stays exact: as float32, values
        // above 2^24 would tie)
        let x = self.b.cast(&a.name, a.dtype, a.dtype.promote(DType::I64));
        let (x, axis) = match dim {
            Some(d) => (x, d),
            None => {
                let flat = self.b.const_i64(&[-1], false);
                (self.b.op("Reshape", &[&x, &flat], vec![]), 0)
            }
        };
        let attrs = vec![attr_i("axis", axis as i64), attr_i("keepdims", 0)];
        let r = self.b.op(op, &[&x], attrs);
        self.reshape_node(&r, &n.shape)
    }

    /// var/std: `sum((x - mean)^2) / (n - correction)`.
    pub fn var(
        &mut self,
        n: &Node,
        dims: &[usize],
        correction: f64,
        keepdim: bool,
        std: bool,
    ) -> Result<String> {
        let a = self.arg(n, 0)?;
        let x = self.b.cast(&a.name, a.dtype, DType::F32);
        let denom = self.var_denominator(&a, &x, dims, correction);
        let m = self.reduce(Reduce::Mean, &x, dims, true);
        let d = self.b.op("Sub", &[&x, &m], vec![]);
        let d2 = self.b.op("Mul", &[&d, &d], vec![]);
        let s = self.reduce(Reduce::Sum, &d2, dims, keepdim);
        let v = self.b.op("Div", &[&s, &denom], vec![]);
        Ok(if std {
            self.b.op("Sqrt", &[&v], vec![])
        } else {
            v
        })
    }

    /// `count - correction` of a var/std: a constant, or `ReduceProd` of the reduced
    /// sizes read with `Shape` when one of them is symbolic.
    fn var_denominator(&mut self, a: &Arg, x: &str, dims: &[usize], correction: f64) -> String {
        let all: Vec<usize> = (0..a.shape.len()).collect();
        let dims = if dims.is_empty() { &all[..] } else { dims };
        let symbolic = self.sym_shape(a.id).is_some_and(|s| {
            dims.iter()
                .any(|&d| s.get(d).is_some_and(|e| e.as_const().is_none()))
        });
        if !symbolic {
            let count: usize = dims.iter().filter_map(|&d| a.shape.get(d)).product();
            let c = count as f64 - correction;
            return self.b.const_scalar(Scalar::Float(c), DType::F32);
        }
        let shape = self.b.op("Shape", &[x], vec![]);
        let idx = self.b.const_i64(&dims_i64(dims), false);
        let sizes = self
            .b
            .op("Gather", &[&shape, &idx], vec![attr_i("axis", 0)]);
        let count = self
            .b
            .op("ReduceProd", &[&sizes], vec![attr_i("keepdims", 0)]);
        let count = self.b.cast(&count, DType::I64, DType::F32);
        let corr = self.b.const_scalar(Scalar::Float(correction), DType::F32);
        self.b.op("Sub", &[&count, &corr], vec![])
    }

    /// p-norm: ReduceL1/L2, or `sum(|x|^p)^(1/p)`; max-norm for p = inf.
    pub fn norm(&mut self, n: &Node, p: f64, dims: &[usize], keepdim: bool) -> Result<String> {
        let a = self.arg(n, 0)?;
        let x = self.b.cast(&a.name, a.dtype, DType::F32);
        if p == 1.0 {
            return Ok(self.reduce(Reduce::L1, &x, dims, keepdim));
        }
        if p == 2.0 {
            return Ok(self.reduce(Reduce::L2, &x, dims, keepdim));
        }
        let ax = self.b.op("Abs", &[&x], vec![]);
        if p == f64::INFINITY {
            return Ok(self.reduce(Reduce::Max, &ax, dims, keepdim));
        }
        let pc = self.b.const_scalar(Scalar::Float(p), DType::F32);
        let pw = self.b.op("Pow", &[&ax, &pc], vec![]);
        let s = self.reduce(Reduce::Sum, &pw, dims, keepdim);
        let inv = self.b.const_scalar(Scalar::Float(1.0 / p), DType::F32);
        Ok(self.b.op("Pow", &[&s, &inv], vec![]))
    }

    /// all/any: min/max of the truth values as floats.
    pub fn all_any(
        &mut self,
        n: &Node,
        dims: &[usize],
        keepdim: bool,
        any: bool,
    ) -> Result<String> {
        let a = self.arg(n, 0)?;
        let b = self.b.cast(&a.name, a.dtype, DType::Bool);
        let f = self.b.cast(&b, DType::Bool, DType::F32);
        let red = if any { Reduce::Max } else { Reduce::Min };
        let r = self.reduce(red, &f, dims, keepdim);
        Ok(self.b.cast(&r, DType::F32, DType::Bool))
    }

    /// Softmax / LogSoftmax along `dim`.
    pub fn softmax(&mut self, n: &Node, dim: usize, log: bool) -> Result<String> {
        let a = self.arg(n, 0)?;
        let x = self.b.cast(&a.name, a.dtype, DType::F32);
        let op = if log { "LogSoftmax" } else { "Softmax" };
        Ok(self.b.op(op, &[&x], vec![attr_i("axis", dim as i64)]))
    }

    pub fn cumsum(&mut self, n: &Node, dim: usize, reverse: bool) -> Result<String> {
        let a = self.arg(n, 0)?;
        let x = self.b.cast(&a.name, a.dtype, n.dtype);
        let axis = self.b.const_i64(&[dim as i64], true);
        let attrs = if reverse {
            vec![attr_i("reverse", 1)]
        } else {
            vec![]
        };
        Ok(self.b.op("CumSum", &[&x, &axis], attrs))
    }
}
