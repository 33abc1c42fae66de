//! Lowering the IR to ONNX nodes: one IR node becomes one or a few ONNX nodes writing
//! the node's value. Dispatch and the elementwise ops live here; reductions, shape ops
//! and nn ops in their own files.

use super::builder::{attr_i, unsupported, Builder};
use super::dims::Syms;
use super::reduce::Reduce;
use super::rnn::Params;
use crate::compile::ir::{Graph, IrOp, Node, NodeId};
use crate::error::Result;
use crate::ops::{BinaryOp, UnaryOp};
use crate::optable::binary::{binary_table, DtypeRule};
use crate::optable::unary::unary_table;
use crate::source::SourceMap;
use crate::tensor::creation::Fill;
use crate::tensor::dtype::{DType, Scalar};
use crate::tensor::linalg_ops::LinalgOp;
use std::collections::HashMap;

/// The ONNX nodes of unary `op` on input `x` (IR node `n`), from the op table's
/// `onnx` field.
macro_rules! unary_onnx {
    ($($V:ident {
        name: $name:literal, methods: [$($m:literal),*], global: $global:literal,
        saves: $saves:ident, f32: [$($f:tt)*], int: [$($i:tt)*], grad: [$($g:tt)*],
        jit: [$($j:tt)*], reference: [$($r:tt)*], onnx: [$($o:tt)*],
    })*) => {
        #[allow(unused_variables)]
        fn unary_onnx(l: &mut Lower, n: &Node, op: UnaryOp, x: &str) -> String {
            match op {
                $(UnaryOp::$V => unary_onnx!(@onnx l, n, x, $($o)*),)*
            }
        }
    };
    (@onnx $l:ident, $n:ident, $x:ident, $ty:literal) => {
        $l.b.op($ty, &[$x], vec![])
    };
    (@onnx $ll:ident, $nn:ident, $xx:ident, ($l:ident, $n:ident, $x:ident) $e:expr) => {{
        let ($l, $n, $x) = (&mut *$ll, $nn, $xx);
        $e
    }};
}

unary_table!(unary_onnx);

/// The ONNX lowering of the binary ops, from the table's `onnx` field (`x`, `y`: the
/// operands cast to the compute dtype `cd`).
macro_rules! binary_onnx {
    ($($V:ident {
        name: $name:literal, methods: [$($m:literal),*], global: $global:literal,
        inplace: [$($ip:literal),*], dtype: $dt:ident, saves: [$($s:ident),*],
        f32: [$($f:tt)*], int: [$($i:tt)*], grad: [$($g:tt)*], fused: [$($k:tt)*],
        onnx: [$($o:tt)*],
    })*) => {
        #[allow(unused_variables)]
        fn binary_onnx(l: &mut Lower, op: BinaryOp, cd: DType, x: &str, y: &str) -> String {
            match op {
                $(BinaryOp::$V => binary_onnx!(@onnx l, cd, x, y, $($o)*),)*
            }
        }
    };
    (@onnx $l:ident, $cd:ident, $x:ident, $y:ident, $ty:literal) => {
        $l.b.op($ty, &[$x, $y], vec![])
    };
    (@onnx $ll:ident, $cdd:ident, $xx:ident, $yy:ident,
     ($l:ident, $cd:ident, $x:ident, $y:ident) $e:expr) => {{
        let ($l, $cd, $x, $y) = (&mut *$ll, $cdd, $xx, $yy);
        $e
    }};
}

binary_table!(binary_onnx);

/// The lowering state: the builder and the ONNX value name of each lowered IR node.
pub struct Lower<'g> {
    pub b: Builder,
    pub g: &'g Graph,
    pub vals: Vec<String>,
    /// `file.dl:3:5` of the node being lowered (for errors).
    pub at: String,
    pub sources: &'g SourceMap,
    /// The result names of each lowered control node (`If`, `Loop`), by IR index.
    pub multi: HashMap<usize, Vec<String>>,
    /// Runtime sizes of a graph with symbolic dims (None: static sizes, a region).
    pub syms: Option<Syms<'g>>,
    /// The IR node being lowered.
    pub cur: NodeId,
    /// The module parameters by node (the top-level graph's; none in a region).
    pub params: Params<'g>,
}

/// An argument of the node being lowered: its value name, dtype and shape.
pub struct Arg<'a> {
    pub id: NodeId,
    pub name: String,
    pub dtype: DType,
    pub shape: &'a [usize],
}

impl<'g> Lower<'g> {
    /// A lowering of graph `g` (sizes static until `init_symbols`).
    pub fn new(b: Builder, g: &'g Graph, sources: &'g SourceMap, at: String) -> Lower<'g> {
        Lower {
            b,
            g,
            vals: vec![String::new(); g.nodes.len()],
            at,
            sources,
            multi: HashMap::new(),
            syms: None,
            cur: NodeId(0),
            params: Params::new(),
        }
    }

    /// The `i`th argument of `n`.
    pub fn arg(&self, n: &'g Node, i: usize) -> Result<Arg<'g>> {
        let id = n
            .args
            .get(i)
            .copied()
            .ok_or_else(|| self.bad("missing argument"))?;
        let node = self
            .g
            .node(id)
            .ok_or_else(|| self.bad("dangling argument"))?;
        let name = self.vals.get(id.index()).cloned().unwrap_or_default();
        Ok(Arg {
            id,
            name,
            dtype: node.dtype,
            shape: &node.shape,
        })
    }

    /// int32/uint8 values export only through a cast (a uint8 image or int32 ids
    /// turned into float32/int64 first), float64 ones through casts and the elementwise
    /// ops whose lowering follows the node's dtype (arithmetic, comparisons, where,
    /// clamp, masked_fill): the rest of this lowering builds float32 constants and
    /// reductions, so any other use is refused rather than exported wrong or invalid.
    fn check_dtypes(&self, n: &'g Node) -> Result<()> {
        if matches!(n.op, IrOp::Cast(_) | IrOp::Out { .. }) {
            return Ok(());
        }
        let f64_ok = matches!(
            n.op,
            IrOp::Binary(_)
                | IrOp::BinaryScalar { .. }
                | IrOp::Where
                | IrOp::Clamp { .. }
                | IrOp::MaskedFill { .. }
                | IrOp::Clone
                | IrOp::Contiguous
        );
        let refused = |d: DType| match d {
            DType::I32 | DType::U8 => true,
            DType::F64 => !f64_ok,
            DType::F32 | DType::I64 | DType::Bool => false,
        };
        let args = (0..n.args.len()).map(|i| self.arg(n, i).map(|a| a.dtype));
        let dtypes: Vec<DType> = args.chain([Ok(n.dtype)]).collect::<Result<_>>()?;
        match dtypes.into_iter().find(|d| refused(*d)) {
            None => Ok(()),
            Some(d) => Err(unsupported(
                &format!(
                    "{} on a {} tensor (export casts float64/int32/uint8 values to float32 or int64 first: .float() or .long(), or model.float())",
                    n.op.name(),
                    d.name()
                ),
                &self.at,
            )),
        }
    }

    pub fn bad(&self, msg: &str) -> crate::error::Error {
        unsupported(&format!("an IR node with {msg}"), &self.at)
    }

    /// Lowers compute node `id`, returning the name of its value. One exhaustive match:
    /// an op without an arm here is a compile error.
    pub fn node(&mut self, id: NodeId) -> Result<String> {
        let n = self.g.node(id).ok_or_else(|| self.bad("an unknown id"))?;
        self.cur = id;
        self.check_dtypes(n)?;
        match &n.op {
            IrOp::Input { .. } | IrOp::Const(_) => Err(self.bad("an input in the body")),
            IrOp::Unary(op) => self.unary(n, *op),
            IrOp::Binary(op) => {
                let (a, b) = (self.arg(n, 0)?, self.arg(n, 1)?);
                self.binary(n, *op, a, b)
            }
            IrOp::BinaryScalar {
                op,
                scalar,
                reverse,
            } => self.binary_scalar(n, *op, *scalar, *reverse),
            IrOp::Clamp { min, max } => self.clamp(n, *min, *max),
            IrOp::Where => self.where_(n),
            IrOp::Cast(d) => {
                let a = self.arg(n, 0)?;
                Ok(self.b.cast(&a.name, a.dtype, *d))
            }
            IrOp::Clone | IrOp::Contiguous => {
                let a = self.arg(n, 0)?;
                Ok(self.b.op("Identity", &[&a.name], vec![]))
            }
            IrOp::MaskedFill { value } => {
                let (x, m) = (self.arg(n, 0)?, self.arg(n, 1)?);
                let v = self.b.const_scalar(*value, n.dtype);
                let m = self.b.cast(&m.name, m.dtype, DType::Bool);
                Ok(self.b.op("Where", &[&m, &v, &x.name], vec![]))
            }
            IrOp::If(_) | IrOp::Loop(_) | IrOp::Out { .. } | IrOp::Print(_) => self.control(id, n),
            IrOp::Sum { dims, keepdim } => self.reduce_node(n, Reduce::Sum, dims, *keepdim),
            IrOp::Mean { dims, keepdim } => self.reduce_node(n, Reduce::Mean, dims, *keepdim),
            IrOp::Prod { dims, keepdim } => self.reduce_node(n, Reduce::Prod, dims, *keepdim),
            IrOp::LogSumExp { dims, keepdim } => {
                self.reduce_node(n, Reduce::LogSumExp, dims, *keepdim)
            }
            IrOp::ExtremeAll { is_min } => {
                let red = if *is_min { Reduce::Min } else { Reduce::Max };
                self.reduce_node(n, red, &[], false)
            }
            IrOp::ExtremeDim {
                dim,
                keepdim,
                is_min,
            } => self.extreme_dim(n, *dim, *keepdim, *is_min),
            IrOp::ArgExtreme { dim, is_min, .. } => self.arg_extreme(n, *dim, *is_min),
            IrOp::Var {
                dims,
                correction,
                keepdim,
                std,
            } => self.var(n, dims, *correction, *keepdim, *std),
            IrOp::Norm { p, dims, keepdim } => self.norm(n, *p, dims, *keepdim),
            IrOp::AllAny { dims, keepdim, any } => self.all_any(n, dims, *keepdim, *any),
            IrOp::Softmax { dim } => self.softmax(n, *dim, false),
            IrOp::LogSoftmax { dim } => self.softmax(n, *dim, true),
            IrOp::Cumsum { dim, reverse } => self.cumsum(n, *dim, *reverse),
            IrOp::Reshape { .. } => self.reshape(n),
            IrOp::Permute { perm } => self.permute(n, perm),
            IrOp::Expand { .. } => self.expand(n),
            IrOp::Narrow { dim, start, len } => self.narrow(n, *dim, *start, *len),
            IrOp::Repeat { reps } => self.repeat(n, reps),
            IrOp::Index { indices } => self.index(n, indices),
            IrOp::Matmul => self.matmul(n),
            IrOp::Conv2d { params, bias } => self.conv2d(n, params, *bias),
            IrOp::BatchNorm {
                training: false,
                eps,
                weight,
                bias,
            } => self.batch_norm(n, *eps, (*weight, *bias)),
            IrOp::LayerNorm {
                dims,
                eps,
                weight,
                bias,
            } => self.layer_norm(n, *dims, *eps, (*weight, *bias)),
            IrOp::GroupNorm {
                groups,
                eps,
                weight,
                bias,
            } => self.group_norm(n, *groups, *eps, (*weight, *bias)),
            IrOp::Attention {
                causal,
                scale,
                mask,
            } => self.attention(n, *causal, *scale, *mask),
            IrOp::MaxPool2d { params } => self.pool2d(n, params, false),
            IrOp::AvgPool2d { params } => self.pool2d(n, params, true),
            IrOp::Cat { dim } => self.cat(n, *dim),
            IrOp::Stack { dim } => self.stack(n, *dim),
            IrOp::IndexSelect { dim } => self.gather(n, *dim, false),
            IrOp::Gather { dim } => self.gather(n, *dim, true),
            IrOp::ScatterAdd { dim } => self.scatter_add(n, *dim),
            IrOp::Scatter { dim } => self.scatter(n, *dim),
            IrOp::Linalg(LinalgOp::Det) => self.det(n),
            IrOp::OneHot { num_classes } => self.one_hot(n, *num_classes),
            IrOp::FillLike { fill: Fill::Value(v), .. } => self.fill_like(n, *v),
            // its numbers are the generator's: ONNX Runtime's random ops draw others
            IrOp::FillLike { .. } => Err(unsupported(
                "a random fill (dropout or rand_like in training mode: call model.eval())",
                &self.at,
            )),
            IrOp::SortIndices { dim, descending, k } => self.sort_indices(n, *dim, *descending, *k),
            IrOp::LstmLayer => self.lstm_layer(n),
            IrOp::GruLayer { .. } => self.gru_layer(n),
            // training-only and backward-only ops: no ONNX form
            IrOp::BatchNorm { training: true, .. }
            | IrOp::BatchNormRunning { .. }
            | IrOp::IndexGrad { .. }
            | IrOp::GradKernel(_)
            // torch.linalg's other functions (ONNX's Inverse is com.microsoft only)
            | IrOp::Linalg(_)
            // ONNX has no mode (most frequent value)
            | IrOp::ModeIndices { .. } => Err(unsupported(n.op.name(), &self.at)),
        }
    }

    fn unary(&mut self, n: &Node, op: UnaryOp) -> Result<String> {
        let a = self.arg(n, 0)?;
        let x = self.b.cast(&a.name, a.dtype, n.dtype);
        Ok(unary_onnx(self, n, op, &x))
    }

    fn fconst(&mut self, v: f64) -> String {
        self.b.const_scalar(Scalar::Float(v), DType::F32)
    }

    /// `0.5 x (1 + erf(x / sqrt 2))`.
    fn gelu_erf(&mut self, x: &str) -> String {
        let r = self.fconst(std::f64::consts::FRAC_1_SQRT_2);
        let t = self.b.op("Mul", &[x, &r], vec![]);
        let e = self.b.op("Erf", &[&t], vec![]);
        self.half_x_one_plus(x, &e)
    }

    /// `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
    fn gelu_tanh(&mut self, x: &str) -> String {
        let c = self.fconst(0.044715);
        let k = self.fconst((2.0 / std::f64::consts::PI).sqrt());
        let x2 = self.b.op("Mul", &[x, x], vec![]);
        let x3 = self.b.op("Mul", &[&x2, x], vec![]);
        let cx3 = self.b.op("Mul", &[&x3, &c], vec![]);
        let inner = self.b.op("Add", &[x, &cx3], vec![]);
        let kin = self.b.op("Mul", &[&inner, &k], vec![]);
        let t = self.b.op("Tanh", &[&kin], vec![]);
        self.half_x_one_plus(x, &t)
    }

    fn half_x_one_plus(&mut self, x: &str, e: &str) -> String {
        let one = self.fconst(1.0);
        let half = self.fconst(0.5);
        let p = self.b.op("Add", &[e, &one], vec![]);
        let hx = self.b.op("Mul", &[x, &half], vec![]);
        self.b.op("Mul", &[&hx, &p], vec![])
    }

    /// The dtype both operands are cast to: the result's for arithmetic, the operands'
    /// promoted one (`promoted`, torch's result type) for comparisons and logic.
    /// (Arithmetic on bools, whose result is bool, runs in int64 and casts back: ONNX's
    /// Add/Mul/Pow/Max/Min take no bool operands.)
    fn compute_dtype(op: BinaryOp, out: DType, promoted: DType) -> DType {
        match op.dtype_rule() {
            DtypeRule::Compare | DtypeRule::Logic => promoted,
            DtypeRule::Arith | DtypeRule::ArithNoBool if out == DType::Bool => DType::I64,
            DtypeRule::Arith | DtypeRule::ArithNoBool | DtypeRule::Float => out,
        }
    }

    /// An arithmetic result computed in int64 for a bool node, cast back to bool.
    fn arith_back(&mut self, op: BinaryOp, n: &Node, cd: DType, y: String) -> String {
        match op.dtype_rule() {
            DtypeRule::Arith | DtypeRule::ArithNoBool => self.b.cast(&y, cd, n.dtype),
            _ => y,
        }
    }

    pub fn binary(&mut self, n: &Node, op: BinaryOp, a: Arg, b: Arg) -> Result<String> {
        let promoted =
            DType::result_of((a.dtype, a.shape.is_empty()), (b.dtype, b.shape.is_empty()));
        let cd = Self::compute_dtype(op, n.dtype, promoted);
        let x = self.b.cast(&a.name, a.dtype, cd);
        let y = self.b.cast(&b.name, b.dtype, cd);
        let r = binary_onnx(self, op, cd, &x, &y);
        Ok(self.arith_back(op, n, cd, r))
    }

    fn binary_scalar(&mut self, n: &Node, op: BinaryOp, s: Scalar, rev: bool) -> Result<String> {
        let a = self.arg(n, 0)?;
        let cd = Self::compute_dtype(op, n.dtype, s.promote_with(a.dtype));
        let x = self.b.cast(&a.name, a.dtype, cd);
        let c = self.b.const_scalar(s, cd);
        let r = if rev {
            binary_onnx(self, op, cd, &c, &x)
        } else {
            binary_onnx(self, op, cd, &x, &c)
        };
        Ok(self.arith_back(op, n, cd, r))
    }

    fn clamp(&mut self, n: &Node, min: Option<f64>, max: Option<f64>) -> Result<String> {
        let a = self.arg(n, 0)?;
        let x = self.b.cast(&a.name, a.dtype, n.dtype);
        let bound = |me: &mut Self, v: Option<f64>| match v {
            None => String::new(),
            Some(v) if n.dtype == DType::I64 => {
                me.b.const_scalar(Scalar::Int(v as i64), DType::I64)
            }
            Some(v) => me.b.const_scalar(Scalar::Float(v), n.dtype),
        };
        let (lo, hi) = (bound(self, min), bound(self, max));
        Ok(self.b.op("Clip", &[&x, &lo, &hi], vec![]))
    }

    fn where_(&mut self, n: &Node) -> Result<String> {
        let (c, a, b) = (self.arg(n, 0)?, self.arg(n, 1)?, self.arg(n, 2)?);
        let c = self.b.cast(&c.name, c.dtype, DType::Bool);
        let x = self.b.cast(&a.name, a.dtype, n.dtype);
        let y = self.b.cast(&b.name, b.dtype, n.dtype);
        Ok(self.b.op("Where", &[&c, &x, &y], vec![]))
    }
}
