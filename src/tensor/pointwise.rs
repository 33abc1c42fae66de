//! The primitive elementwise ops' entry points (`binary`, `binary_scalar`, `unary`,
//! `clamp`, `where_`, `to_dtype`, `clone`; their enums, `BinaryOp` and `UnaryOp`, are the
//! op table's, in `crate::optable`): run the kernel, record an autograd node only when
//! grad mode is on and an input requires grad, and report to a capture through
//! `record_op`. Gradient rules are in `autograd::rules` (which calls these: they are in
//! the bottom layer with it); `crate::ops` re-exports them beside the composites.

use crate::autograd::{self, BackwardOp, Edge, Edges, OpSaved, Saved, SavedShape};
use crate::error::{ErrorKind, Result};
use crate::ir::record_op::{grad_node, record_op};
use crate::ir::IrOp;
use crate::optable::{BinaryOp, Saves, UnaryOp};
use crate::tensor::dtype::{with_elem, DType, Scalar};
use crate::tensor::kernels::binary::{binary_raw, binary_scalar_raw};
use crate::tensor::kernels::unary::unary_raw;
use crate::tensor::shape::broadcast_shapes;
use crate::tensor::{err, Tensor};

fn record_binary(op: BinaryOp, a: &Tensor, b: &Tensor, out: &Tensor) {
    let (sa, sb, so) = op.saves();
    let saved = OpSaved {
        a: sa.then(|| Saved::new(a)),
        b: sb.then(|| Saved::new(b)),
        out: so.then(|| Saved::output(out)),
        a_shape: SavedShape::from_slice(a.shape()),
        b_shape: SavedShape::from_slice(b.shape()),
        ..OpSaved::default()
    };
    let node = BackwardOp::Op {
        op: IrOp::Binary(op),
        saved,
    };
    autograd::record(out, node, &[a, b]);
}

/// `a op b` with broadcasting, type promotion and autograd.
pub fn binary(op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    record_op(&[a, b], |_| IrOp::Binary(op), || binary_eager(op, a, b))
}

fn binary_eager(op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let out = binary_raw(op, a, b)?;
    if op.differentiable() && out.dtype().is_float() && autograd::needs_grad(&[a, b]) {
        record_binary(op, a, b, &out);
    }
    Ok(out)
}

/// `a op s`, or `s op a` when `reverse` (e.g. `1 - x`), without materialising `s`.
pub fn binary_scalar(op: BinaryOp, a: &Tensor, s: Scalar, reverse: bool) -> Result<Tensor> {
    let ir = |_: &Tensor| IrOp::BinaryScalar {
        op,
        scalar: s,
        reverse,
    };
    record_op(&[a], ir, || binary_scalar_eager(op, a, s, reverse))
}

fn binary_scalar_eager(op: BinaryOp, a: &Tensor, s: Scalar, reverse: bool) -> Result<Tensor> {
    let out = binary_scalar_raw(op, a, s, reverse)?;
    if op.differentiable() && out.dtype().is_float() && autograd::needs_grad(&[a]) {
        record_scalar(op, a, s, reverse, &out);
    }
    Ok(out)
}

/// Records `a op s` (`s op a` when `reverse`) as the binary node of `a` and a 0-d
/// tensor, materialising the scalar only when the rule reads it.
fn record_scalar(op: BinaryOp, a: &Tensor, s: Scalar, reverse: bool, out: &Tensor) {
    let (sa, sb, so) = op.saves();
    let (save_t, save_s) = if reverse { (sb, sa) } else { (sa, sb) };
    // A product's tensor operand is read only for the scalar's gradient, which nothing
    // needs (as PyTorch, which saves just the scalar: writing the tensor in place later
    // leaves this node usable).
    let save_t = save_t && op != BinaryOp::Mul;
    let t = save_t.then(|| Saved::new(a));
    let st = save_s.then(|| Saved::constant(Tensor::scalar(s)));
    let edge = Edge::of(a);
    let (a_saved, b_saved, a_shape, b_shape, edges) = if reverse {
        (
            st,
            t,
            SavedShape::new(),
            SavedShape::from_slice(a.shape()),
            [Edge::None, edge],
        )
    } else {
        (
            t,
            st,
            SavedShape::from_slice(a.shape()),
            SavedShape::new(),
            [edge, Edge::None],
        )
    };
    let saved = OpSaved {
        a: a_saved,
        b: b_saved,
        out: so.then(|| Saved::output(out)),
        a_shape,
        b_shape,
        ..OpSaved::default()
    };
    let node = BackwardOp::Op {
        op: IrOp::BinaryScalar {
            op,
            scalar: s,
            reverse,
        },
        saved,
    };
    autograd::record_edges(out, node, Edges::from_buf(edges));
}

/// `op(a)` with autograd.
pub fn unary(op: UnaryOp, a: &Tensor) -> Result<Tensor> {
    record_op(&[a], |_| IrOp::Unary(op), || unary_eager(op, a))
}

fn unary_eager(op: UnaryOp, a: &Tensor) -> Result<Tensor> {
    let out = unary_raw(op, a)?;
    if op.differentiable() && out.dtype().is_float() {
        let uses_out = op.saves() == Saves::Out;
        let node = || BackwardOp::Op {
            op: IrOp::Unary(op),
            saved: OpSaved {
                a: (!uses_out).then(|| Saved::new(a)),
                out: uses_out.then(|| Saved::output(&out)),
                ..OpSaved::default()
            },
        };
        grad_node(&out, &[a], node);
    }
    Ok(out)
}

/// `clamp(x, min, max)` (either bound optional).
pub fn clamp(x: &Tensor, min: Option<f64>, max: Option<f64>) -> Result<Tensor> {
    record_op(
        &[x],
        |_| IrOp::Clamp { min, max },
        || clamp_eager(x, min, max),
    )
}

fn clamp_eager(x: &Tensor, min: Option<f64>, max: Option<f64>) -> Result<Tensor> {
    let mut out = x.clone();
    if let Some(lo) = min {
        out = binary_scalar_raw(BinaryOp::Maximum, &out, num(x.dtype(), lo), false)?;
    }
    if let Some(hi) = max {
        out = binary_scalar_raw(BinaryOp::Minimum, &out, num(x.dtype(), hi), false)?;
    }
    if min.is_none() && max.is_none() {
        return Err(err(
            ErrorKind::ValueError,
            "clamp: at least one of min and max must be given",
        ));
    }
    if out.dtype().is_float() {
        let node = || BackwardOp::Op {
            op: IrOp::Clamp { min, max },
            saved: OpSaved {
                a: Some(Saved::new(x)),
                ..OpSaved::default()
            },
        };
        grad_node(&out, &[x], node);
    }
    Ok(out)
}

/// An f64 bound as a scalar of the tensor's kind (int bounds keep int64 tensors int).
fn num(dt: DType, v: f64) -> Scalar {
    if !dt.is_float() && v.fract() == 0.0 {
        Scalar::Int(v as i64)
    } else {
        Scalar::Float(v)
    }
}

/// `where(cond, a, b)`: elements of `a` where `cond`, else of `b` (broadcasting).
pub fn where_(cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    record_op(&[cond, a, b], |_| IrOp::Where, || where_impl(cond, a, b))
}

fn where_impl(cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if cond.dtype() != DType::Bool {
        return Err(err(
            ErrorKind::TypeError,
            format!(
                "where: condition must be a bool tensor, got {}",
                cond.dtype().name()
            ),
        ));
    }
    let shape = broadcast_shapes("where", a.shape(), b.shape())?;
    let shape = broadcast_shapes("where", cond.shape(), &shape)?;
    let dt = crate::tensor::kernels::binary::result_type(a, b);
    let va = a.cast(dt)?.expand_raw(&shape)?;
    let vb = b.cast(dt)?.expand_raw(&shape)?;
    let c = cond.expand_raw(&shape)?.to_vec::<bool>()?;
    let out = with_elem!(dt, T => select(&c, &va.to_vec::<T>()?, &vb.to_vec::<T>()?, &shape))?;
    if dt.is_float() {
        let node = || BackwardOp::Op {
            op: IrOp::Where,
            saved: OpSaved {
                a: Some(Saved::new(cond)),
                a_shape: SavedShape::from_slice(a.shape()),
                b_shape: SavedShape::from_slice(b.shape()),
                ..OpSaved::default()
            },
        };
        grad_node(&out, &[a, b], node);
    }
    Ok(out)
}

fn select<T: crate::tensor::Elem>(c: &[bool], a: &[T], b: &[T], shape: &[usize]) -> Result<Tensor> {
    let it = c
        .iter()
        .zip(a.iter().zip(b.iter()))
        .map(|(&c, (&x, &y))| if c { x } else { y });
    let v = crate::tensor::storage::collect_vec(c.len(), it)?;
    Ok(Tensor::from_vec(v, shape))
}

/// `x.to(dtype)` / `.float()` / `.long()` / `.bool()`: float->float keeps the graph;
/// other casts are not differentiable (as in PyTorch).
pub fn to_dtype(x: &Tensor, dtype: DType) -> Result<Tensor> {
    let out = x.cast(dtype)?;
    // float -> float keeps the graph (PyTorch's ToCopyBackward; the leaf's gradient
    // is cast back to its dtype by the backward sweep)
    if dtype != x.dtype() && dtype.is_float() && x.dtype().is_float() {
        grad_node(&out, &[x], || BackwardOp::Op {
            op: IrOp::Cast(dtype),
            saved: OpSaved::default(),
        });
    }
    Ok(out)
}

/// `x.clone()`: a differentiable copy.
pub fn clone(x: &Tensor) -> Result<Tensor> {
    record_op(&[x], |_| IrOp::Clone, || clone_eager(x))
}

fn clone_eager(x: &Tensor) -> Result<Tensor> {
    let out = x.contiguous_copy()?;
    grad_node(&out, &[x], || BackwardOp::Op {
        op: IrOp::Clone,
        saved: OpSaved::default(),
    });
    Ok(out)
}

/// Method sugar used by the gradient rules and by Rust callers.
impl Tensor {
    pub fn add(&self, o: &Tensor) -> Result<Tensor> {
        binary(BinaryOp::Add, self, o)
    }
    pub fn sub(&self, o: &Tensor) -> Result<Tensor> {
        binary(BinaryOp::Sub, self, o)
    }
    pub fn mul(&self, o: &Tensor) -> Result<Tensor> {
        binary(BinaryOp::Mul, self, o)
    }
    pub fn div(&self, o: &Tensor) -> Result<Tensor> {
        binary(BinaryOp::Div, self, o)
    }
    pub fn add_s(&self, s: f64) -> Result<Tensor> {
        binary_scalar(BinaryOp::Add, self, Scalar::Float(s), false)
    }
    pub fn mul_s(&self, s: f64) -> Result<Tensor> {
        binary_scalar(BinaryOp::Mul, self, Scalar::Float(s), false)
    }
    pub fn pow_s(&self, s: f64) -> Result<Tensor> {
        binary_scalar(BinaryOp::Pow, self, Scalar::Float(s), false)
    }
    /// `s - self`.
    pub fn rsub_s(&self, s: f64) -> Result<Tensor> {
        binary_scalar(BinaryOp::Sub, self, Scalar::Float(s), true)
    }
    pub fn neg(&self) -> Result<Tensor> {
        unary(UnaryOp::Neg, self)
    }
    pub fn un(&self, op: UnaryOp) -> Result<Tensor> {
        unary(op, self)
    }
    pub fn cmp_s(&self, op: BinaryOp, s: f64) -> Result<Tensor> {
        binary_scalar(op, self, Scalar::Float(s), false)
    }
}
