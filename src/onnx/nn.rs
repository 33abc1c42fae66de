//! Neural-network ops as ONNX nodes: MatMul, Conv, MaxPool, AveragePool,
//! BatchNormalization (eval mode), LayerNormalization, and the fused attention as
//! MatMul / Softmax.

use super::builder::{attr_f, attr_i, attr_ints};
use super::lower::Lower;
use crate::compile::ir::Node;
use crate::error::Result;
use crate::tensor::dtype::{DType, Scalar};
use crate::tensor::kernels::conv::{ConvParams, PoolParams};

fn pair(p: (usize, usize)) -> [i64; 2] {
    [p.0 as i64, p.1 as i64]
}

fn pads(p: (usize, usize)) -> [i64; 4] {
    [p.0 as i64, p.1 as i64, p.0 as i64, p.1 as i64]
}

impl Lower<'_> {
    pub fn matmul(&mut self, n: &Node) -> Result<String> {
        let (a, b) = (self.arg(n, 0)?, self.arg(n, 1)?);
        let x = self.b.cast(&a.name, a.dtype, n.dtype);
        let y = self.b.cast(&b.name, b.dtype, n.dtype);
        Ok(self.b.op("MatMul", &[&x, &y], vec![]))
    }

    /// scaled_dot_product_attention (args q, k, v, the mask when `mask`): MatMul(q, k^T)
    /// times the scale, the mask (bool: Where(mask, s, -inf); float: Add) or the causal
    /// keep `j <= i` (Range / LessOrEqual over the runtime L and S), Softmax with rows
    /// that see no key as zeros (Kiln's and PyTorch's), MatMul with v.
    pub fn attention(
        &mut self,
        n: &Node,
        causal: bool,
        scale: Option<f64>,
        mask: bool,
    ) -> Result<String> {
        let (q, k, v) = (self.arg(n, 0)?, self.arg(n, 1)?, self.arg(n, 2)?);
        let nd = q.shape.len();
        if nd < 2 || k.shape.len() != nd {
            return Err(self.bad("attention operands of under 2 dims"));
        }
        let dt = DType::F32;
        let scale = scale.unwrap_or(1.0 / (q.shape[nd - 1].max(1) as f64).sqrt());
        let mut perm: Vec<i64> = (0..nd as i64).collect();
        perm.swap(nd - 2, nd - 1);
        let qn = self.b.cast(&q.name, q.dtype, dt);
        let kn = self.b.cast(&k.name, k.dtype, dt);
        let vn = self.b.cast(&v.name, v.dtype, dt);
        let kt = self
            .b
            .op("Transpose", &[&kn], vec![attr_ints("perm", &perm)]);
        let s = self.b.op("MatMul", &[&qn, &kt], vec![]);
        let c = self.b.const_scalar(Scalar::Float(scale), dt);
        let mut s = self.b.op("Mul", &[&s, &c], vec![]);
        let ninf = self.b.const_scalar(Scalar::Float(f64::NEG_INFINITY), dt);
        if mask {
            let m = self.arg(n, 3)?;
            s = if m.dtype == DType::Bool {
                self.b.op("Where", &[&m.name, &s, &ninf], vec![])
            } else {
                let mf = self.b.cast(&m.name, m.dtype, dt);
                self.b.op("Add", &[&s, &mf], vec![])
            };
        }
        if causal {
            let l = self.dim_scalar(q.id, nd - 2, q.shape[nd - 2])?;
            let sk = self.dim_scalar(k.id, nd - 2, k.shape[nd - 2])?;
            let zero = self.b.const_scalar(Scalar::Int(0), DType::I64);
            let one = self.b.const_scalar(Scalar::Int(1), DType::I64);
            let rows = self.b.op("Range", &[&zero, &l, &one], vec![]);
            let cols = self.b.op("Range", &[&zero, &sk, &one], vec![]);
            let axes = self.b.const_i64(&[1], false);
            let rows = self.b.op("Unsqueeze", &[&rows, &axes], vec![]);
            let keep = self.b.op("LessOrEqual", &[&cols, &rows], vec![]);
            s = self.b.op("Where", &[&keep, &s, &ninf], vec![]);
        }
        let p = self.b.op("Softmax", &[&s], vec![attr_i("axis", -1)]);
        let dead = self.b.op("IsNaN", &[&p], vec![]);
        let zero = self.b.const_scalar(Scalar::Float(0.0), dt);
        let p = self.b.op("Where", &[&dead, &zero, &p], vec![]);
        let out = self.b.op("MatMul", &[&p, &vn], vec![]);
        Ok(self.b.cast(&out, dt, n.dtype))
    }

    pub fn conv2d(&mut self, n: &Node, p: &ConvParams, bias: bool) -> Result<String> {
        let (x, w) = (self.arg(n, 0)?, self.arg(n, 1)?);
        let mut inputs = vec![x.name, w.name];
        if bias {
            inputs.push(self.arg(n, 2)?.name);
        }
        let attrs = vec![
            attr_ints("strides", &pair(p.stride)),
            attr_ints("pads", &pads(p.padding)),
            attr_ints("dilations", &pair(p.dilation)),
        ];
        let refs: Vec<&str> = inputs.iter().map(String::as_str).collect();
        Ok(self.b.op("Conv", &refs, attrs))
    }

    /// MaxPool, or AveragePool counting padded cells (Kiln divides by the window size).
    pub fn pool2d(&mut self, n: &Node, p: &PoolParams, avg: bool) -> Result<String> {
        let x = self.arg(n, 0)?;
        let mut attrs = vec![
            attr_ints("kernel_shape", &pair(p.kernel)),
            attr_ints("strides", &pair(p.stride)),
            attr_ints("pads", &pads(p.padding)),
        ];
        if avg {
            attrs.push(attr_i("count_include_pad", 1));
        }
        let op = if avg { "AveragePool" } else { "MaxPool" };
        Ok(self.b.op(op, &[&x.name], attrs))
    }

    /// Arg `i` of `n`, or an initializer of shape `shape` filled with `fill` (an
    /// absent weight or bias).
    fn arg_or(&mut self, n: &Node, i: Option<usize>, shape: &[usize], fill: f64) -> Result<String> {
        if let Some(i) = i {
            return Ok(self.arg(n, i)?.name);
        }
        let t = crate::tensor::creation::full(shape, Scalar::Float(fill), Some(n.dtype))?;
        let name = self.b.fresh("c");
        self.b.init_tensor(&name, &t)?;
        Ok(name)
    }

    /// Eval-mode batch_norm (args x, running mean, running var, weight?, bias?).
    pub fn batch_norm(&mut self, n: &Node, eps: f64, (w, b): (bool, bool)) -> Result<String> {
        let c = [n.shape.get(1).copied().unwrap_or(0)];
        let (x, m, v) = (
            self.arg(n, 0)?.name,
            self.arg(n, 1)?.name,
            self.arg(n, 2)?.name,
        );
        let scale = self.arg_or(n, w.then_some(3), &c, 1.0)?;
        let shift = self.arg_or(n, b.then_some(3 + usize::from(w)), &c, 0.0)?;
        let attrs = vec![attr_f("epsilon", eps as f32)];
        Ok(self
            .b
            .op("BatchNormalization", &[&x, &scale, &shift, &m, &v], attrs))
    }

    /// layer_norm over the last `dims` dims (args x, weight?, bias?).
    pub fn layer_norm(
        &mut self,
        n: &Node,
        dims: usize,
        eps: f64,
        (w, b): (bool, bool),
    ) -> Result<String> {
        let norm = n.shape[n.shape.len().saturating_sub(dims)..].to_vec();
        let x = self.arg(n, 0)?.name;
        let scale = self.arg_or(n, w.then_some(1), &norm, 1.0)?;
        let shift = self.arg_or(n, b.then_some(1 + usize::from(w)), &norm, 0.0)?;
        let attrs = vec![
            attr_i("axis", -(dims as i64)),
            attr_f("epsilon", eps as f32),
        ];
        Ok(self
            .b
            .op("LayerNormalization", &[&x, &scale, &shift], attrs))
    }

    /// group_norm (args x `[N, C, *]`, weight?, bias?): x as `[N, G, -1]` through
    /// LayerNormalization over its last axis, back to x's shape, then the per-channel
    /// affine (ONNX's GroupNormalization takes its scale and bias per group before opset
    /// 21). The batch stays dynamic (Reshape's 0 and Shape(x)).
    pub fn group_norm(
        &mut self,
        n: &Node,
        groups: usize,
        eps: f64,
        (w, b): (bool, bool),
    ) -> Result<String> {
        let x = self.arg(n, 0)?.name;
        let rest = n.shape.iter().skip(1).product::<usize>() / groups.max(1);
        let grouped = self.b.const_i64(&[0, groups as i64, -1], false);
        let g = self.b.op("Reshape", &[&x, &grouped], vec![]);
        let scale = self.arg_or(n, None, &[rest], 1.0)?;
        let shift = self.arg_or(n, None, &[rest], 0.0)?;
        let attrs = vec![attr_i("axis", -1), attr_f("epsilon", eps as f32)];
        let y = self
            .b
            .op("LayerNormalization", &[&g, &scale, &shift], attrs);
        let shape = self.b.op("Shape", &[&x], vec![]);
        let mut y = self.b.op("Reshape", &[&y, &shape], vec![]);
        let mut chan = vec![1i64; n.shape.len().saturating_sub(1)];
        if let Some(c) = chan.first_mut() {
            *c = -1;
        }
        for (present, i, op) in [(w, 1, "Mul"), (b, 1 + usize::from(w), "Add")] {
            if present {
                let p = self.arg(n, i)?.name;
                let cs = self.b.const_i64(&chan, false);
                let p = self.b.op("Reshape", &[&p, &cs], vec![]);
                y = self.b.op(op, &[&y, &p], vec![]);
            }
        }
        Ok(y)
    }
}
