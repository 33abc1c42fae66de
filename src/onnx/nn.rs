//! Neural-network ops as ONNX nodes: MatMul, Conv, MaxPool, AveragePool.

use super::builder::{attr_i, attr_ints};
use super::lower::Lower;
use crate::compile::ir::Node;
use crate::error::Result;
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
}
