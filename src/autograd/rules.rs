//! Gradient rules: one match arm per backward op, each written with ordinary tensor
//! ops (run with grad mode off), so a compiler can reuse the same rules.

use super::grad_kernels;
use super::matmul_rules::{matmul_grad_a, matmul_grad_b_rows};
pub use super::matmul_rules::{matmul_into_b, matmul_needed};
use super::node::unrecorded_op;
use super::node::{BackwardOp, Edge, More, OpSaved, Saved};
use crate::autograd;
use crate::error::Result;
use crate::ir::record as trace;
use crate::ir::IrOp;
use crate::optable::binary::binary_table;
use crate::optable::unary::unary_table;
use crate::optable::{BinaryOp, UnaryOp};
use crate::tensor::dtype::{float_for, DType, Scalar};
use crate::tensor::indexing::TensorIndex;
use crate::tensor::pointwise::{binary, where_};
use crate::tensor::reduce::reduced_shape;
use crate::tensor::views::flip;
use crate::tensor::{creation, recurrence, seq, Tensor};

/// One gradient per input (`None`: the input needs none).
pub(crate) type Grads = Vec<Option<Tensor>>;

/// `reshape_raw`, recorded when a capture records this backward (and differentiable in
/// a create-graph sweep).
pub(super) fn reshape(t: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let out = t.reshape_raw(shape)?;
    if autograd::needs_grad(&[t]) {
        let saved = OpSaved {
            a_shape: t.shape().into(),
            ..OpSaved::default()
        };
        let node = BackwardOp::Op {
            op: IrOp::Reshape {
                shape: shape.into(),
            },
            saved,
        };
        autograd::record(&out, node, &[t]);
    }
    trace::record_after(
        || IrOp::Reshape {
            shape: shape.into(),
        },
        &[t],
        &out,
    );
    Ok(out)
}

/// `expand_raw`, recorded when a capture records this backward (and differentiable in
/// a create-graph sweep).
fn expand(t: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let out = t.expand_raw(shape)?;
    if !out.same(t) && autograd::needs_grad(&[t]) {
        let saved = OpSaved {
            a_shape: t.shape().into(),
            ..OpSaved::default()
        };
        let node = BackwardOp::Op {
            op: IrOp::Expand {
                shape: shape.into(),
                sym: Box::default(),
            },
            saved,
        };
        autograd::record(&out, node, &[t]);
    }
    trace::record_after(
        || IrOp::Expand {
            shape: shape.into(),
            sym: Box::default(),
        },
        &[t],
        &out,
    );
    Ok(out)
}

/// Sum `g` down to `shape` (undoing broadcasting).
pub fn sum_to(g: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if g.shape() == shape {
        return Ok(g.clone());
    }
    let lead = g.ndim().saturating_sub(shape.len());
    let dims: Vec<i64> = (0..g.ndim())
        .filter(|&i| i < lead || (shape[i - lead] == 1 && g.shape()[i] != 1))
        .map(|i| i as i64)
        .collect();
    let s = if dims.is_empty() {
        g.clone()
    } else {
        g.sum(&dims, true)?
    };
    reshape(&s, shape)
}

/// A reduced gradient broadcast back over the reduced dims of `in_shape`.
fn unreduce(g: &Tensor, in_shape: &[usize], dims: &[usize]) -> Result<Tensor> {
    let kshape = reduced_shape(in_shape, dims, true);
    expand(&reshape(g, &kshape)?, in_shape)
}

fn mask_f(t: &Tensor) -> Result<Tensor> {
    t.cast(DType::F32)
}

fn zeros(shape: &[usize]) -> Result<Tensor> {
    creation::zeros(shape, DType::F32)
}

/// Zeros of `shape` that a gradient `g` accumulates into (g's float dtype, so a float64
/// gradient is not rounded to float32).
fn zeros_for(shape: &[usize], g: &Tensor) -> Result<Tensor> {
    creation::zeros(shape, float_for(g.dtype()))
}

/// Zeros of `in_shape` a gradient `g` accumulates into. In a capture (`src`: the
/// forward input, kept only then) an expanded zero that takes `src`'s symbolic sizes,
/// so the recorded backward follows the forward's sizes rather than fixing them.
fn zeros_like_src(in_shape: &[usize], g: &Tensor, src: &Option<Tensor>) -> Result<Tensor> {
    zeros_like(in_shape, float_for(g.dtype()), src)
}

/// Zeros of `shape` and dtype `dt`; in a symbolic capture (`src`: a tensor of that
/// shape) an expanded zero that takes `src`'s symbolic sizes.
pub fn zeros_like(shape: &[usize], dt: DType, src: &Option<Tensor>) -> Result<Tensor> {
    let x = match src {
        Some(x) if trace::symbolic() => x,
        _ => return creation::zeros(shape, dt),
    };
    let z = expand(&creation::zeros(&vec![1; shape.len()], dt)?, shape)?;
    trace::note_like(&z, x);
    z.contiguous()
}

/// `1/n` rounded in a gradient's float type (f32: as float32 arithmetic, f64: exact):
/// mean's gradient scale, here and in the compiled `GradKernel::MeanScale`.
pub(crate) fn mean_scale(dtype: DType, n: usize) -> f64 {
    match dtype {
        DType::F64 => 1.0 / n as f64,
        DType::F32 | DType::I32 | DType::I64 | DType::U8 | DType::Bool => {
            f64::from(1.0f32 / n as f32)
        }
    }
}

/// A saved tensor (or, when the rule does not read it, an empty placeholder).
fn opt(s: &Option<Saved>) -> Result<Tensor> {
    match s {
        Some(s) => s.get(),
        None => zeros(&[0]),
    }
}

/// `maximum`/`minimum`'s gradients: `g` goes to the winner (`win`: `Gt` for maximum,
/// `Lt` for minimum), split evenly on ties.
fn min_max_grads(win: BinaryOp, a: &Tensor, b: &Tensor, g: &Tensor) -> Result<(Tensor, Tensor)> {
    let win = mask_f(&binary(win, a, b)?)?;
    let tie = mask_f(&binary(BinaryOp::Eq, a, b)?)?.mul_s(0.5)?;
    let wa = win.add(&tie)?;
    Ok((g.mul(&wa)?, g.mul(&wa.rsub_s(1.0)?)?))
}

/// The gradients, from the table's `grad` field.
macro_rules! binary_grads {
    ($($V:ident {
        name: $name:literal, methods: [$($m:literal),*], global: $global:literal,
        inplace: [$($ip:literal),*], dtype: $dt:ident, saves: [$($s:ident),*],
        f32: [$($f:tt)*], int: [$($i:tt)*], grad: [$($gr:tt)*], fused: [$($k:tt)*],
        onnx: [$($o:tt)*],
    })*) => {
        /// The two input gradients of `a op b` for incoming gradient `g` (`a`/`b`/`out`:
        /// the saved operands and result; those the op does not save are empty).
        #[allow(unused_variables)]
        fn binary_grads(
            op: BinaryOp,
            a: &Tensor,
            b: &Tensor,
            out: &Tensor,
            g: &Tensor,
        ) -> Result<(Tensor, Tensor)> {
            Ok(match op {
                $(BinaryOp::$V => binary_grads!(@grad g, a, b, out, $($gr)*),)*
            })
        }
    };
    (@grad $g:ident, $a:ident, $b:ident, $out:ident, none) => {
        ($g.mul_s(0.0)?, $g.mul_s(0.0)?)
    };
    (@grad $gg:ident, $aa:ident, $bb:ident, $oo:ident,
     ($g:ident, $a:ident, $b:ident, $out:ident) $e:expr) => {{
        let ($g, $a, $b, $out) = ($gg, $aa, $bb, $oo);
        $e
    }};
}

binary_table!(binary_grads);

/// ReLU's gradient: a select, not a product with a 0/1 mask (PyTorch's
/// threshold_backward gives +0.0 where x <= 0, never -0.0 for a negative incoming
/// gradient). Outside a capture one pass over same-shaped f32 tensors; a capture
/// records the select.
fn relu_grad(x: &Tensor, g: &Tensor) -> Result<Tensor> {
    if fused_unary_grad(x, g) {
        let keep = |x: f32, g: f32| if x > 0.0 { g } else { 0.0 };
        return crate::tensor::kernels::elementwise::zip(x, g, x.shape(), keep);
    }
    where_(&x.cmp_s(BinaryOp::Gt, 0.0)?, g, &zeros(&[])?)
}

/// Whether a unary op's gradient can run as one fused f32 pass over `x` and `g` (eager,
/// no create-graph sweep, no broadcasting).
fn fused_unary_grad(x: &Tensor, g: &Tensor) -> bool {
    !trace::active()
        && g.dtype() == DType::F32
        && x.dtype() == DType::F32
        && g.shape() == x.shape()
        && !autograd::needs_grad(&[x, g])
}

/// The exact GELU's fused f32 gradient, element by element as PyTorch's vectorized
/// kernel computes it (its `erf` and `exp`, both branch-free): a [`Zip2`], so the body
/// is inlined into the loop and vectorizes (as an `Fn` it is over the inline threshold
/// and runs as one scalar call per element).
///
/// [`Zip2`]: crate::tensor::kernels::elementwise::Zip2
struct GeluGrad;

impl crate::tensor::kernels::elementwise::Zip2<f32, f32, f32> for GeluGrad {
    #[inline(always)]
    fn apply(&self, x: f32, g: f32) -> f32 {
        use crate::tensor::kernels::fastmath::{erf, exp};
        let cdf = 0.5 * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2));
        let pdf = exp(-0.5 * x * x) * 0.398_942_3;
        g * (cdf + x * pdf)
    }
}

/// The exact GELU's gradient `g * (Phi(x) + x phi(x))`: one fused pass in f32 when it
/// can, else as tensor ops (differentiable, recorded by a capture).
fn gelu_grad(x: &Tensor, g: &Tensor) -> Result<Tensor> {
    if fused_unary_grad(x, g) {
        return crate::tensor::kernels::elementwise::zip_with(x, g, x.shape(), &GeluGrad);
    }
    let cdf = x
        .mul_s(std::f64::consts::FRAC_1_SQRT_2)?
        .un(UnaryOp::Erf)?
        .add_s(1.0)?
        .mul_s(0.5)?;
    let pdf = x
        .mul(x)?
        .mul_s(-0.5)?
        .un(UnaryOp::Exp)?
        .mul_s(0.398_942_280_401_432_7)?;
    g.mul(&cdf.add(&x.mul(&pdf)?)?)
}

/// The exact GELU's gradient `dst[i] = g[i] * (Phi(x[i]) + x[i] phi(x[i]))` in f32 into
/// an existing buffer (over the shortest slice): the values of eager's fused pass
/// (a compiled step's GELU-gradient group runs it, `compile::runtime::gelu_grad`).
pub fn gelu_grad_into(dst: &mut [f32], x: &[f32], g: &[f32]) {
    crate::tensor::kernels::elementwise::zip_into(x, g, dst, &GeluGrad)
}

/// The tanh GELU's gradient: with `u = k (x + c x^3)`, `t = tanh u`,
/// `g * (0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2))`; fused in f32 as [`gelu_grad`].
fn gelu_tanh_grad(x: &Tensor, g: &Tensor) -> Result<Tensor> {
    if fused_unary_grad(x, g) {
        use crate::tensor::kernels::unary::{GELU_C, SQRT_2_OVER_PI};
        let d = |x: f32, g: f32| {
            let x2 = x * x;
            let t = crate::tensor::kernels::fastmath::tanh((x + x2 * x * GELU_C) * SQRT_2_OVER_PI);
            let du = (x2 * (3.0 * GELU_C) + 1.0) * SQRT_2_OVER_PI;
            g * ((t + 1.0) * 0.5 + x * 0.5 * (1.0 - t * t) * du)
        };
        return crate::tensor::kernels::elementwise::zip(x, g, x.shape(), d);
    }
    let (k, c) = (0.797_884_560_802_865_4, 0.044_715);
    let x2 = x.mul(x)?;
    let t = x.add(&x2.mul(x)?.mul_s(c)?)?.mul_s(k)?.un(UnaryOp::Tanh)?;
    let left = t.add_s(1.0)?.mul_s(0.5)?;
    let du = x2.mul_s(3.0 * c)?.add_s(1.0)?.mul_s(k)?;
    let right = x.mul_s(0.5)?.mul(&t.mul(&t)?.rsub_s(1.0)?)?.mul(&du)?;
    g.mul(&left.add(&right)?)
}

/// `unary_grad` from the op table's `grad` field.
macro_rules! unary_grads {
    ($($V:ident {
        name: $name:literal, methods: [$($m:literal),*], global: $global:literal,
        saves: $saves:ident, f32: [$($f:tt)*], int: [$($i:tt)*], grad: [$($gr:tt)*],
        jit: [$($j:tt)*], reference: [$($r:tt)*], onnx: [$($o:tt)*],
    })*) => {
        /// The input gradient of `op` for incoming gradient `g` (`x`/`out`: the saved
        /// input and result; the one the op does not save is empty).
        #[allow(unused_variables)]
        fn unary_grad(op: UnaryOp, x: &Tensor, out: &Tensor, g: &Tensor) -> Result<Tensor> {
            use UnaryOp::*;
            let x = &x.cast(float_for(x.dtype()))?;
            match op {
                $(UnaryOp::$V => unary_grads!(@grad g, x, out, $($gr)*),)*
            }
        }
    };
    (@grad $g:ident, $x:ident, $out:ident, none) => {
        $g.mul_s(0.0)
    };
    (@grad $gg:ident, $xx:ident, $oo:ident, ($g:ident, $x:ident, $out:ident) $e:expr) => {{
        let ($g, $x, $out) = ($gg, $xx, $oo);
        $e
    }};
}

unary_table!(unary_grads);

fn index_grad(in_shape: &[usize], indices: &[TensorIndex], g: &Tensor) -> Result<Tensor> {
    // A fresh buffer accumulated into in place: recorded as one `IndexGrad` op.
    let z = trace::paused(|| zeros_for(in_shape, g))?;
    z.index_put_raw(indices, g, true)?;
    if autograd::needs_grad(&[g]) {
        // Differentiable in a create-graph sweep: `z[indices] += g` on a constant `z`.
        let node = BackwardOp::IndexPut {
            indices: indices.to_vec(),
            value_shape: g.shape().into(),
            accumulate: true,
        };
        autograd::record_edges(&z, node, [Edge::None, Edge::of(g)].into());
    }
    if !trace::active() {
        return Ok(z);
    }
    if let (IrOp::Index { indices }, tensors) = trace::index_op(indices) {
        let mut args = vec![g];
        args.extend(tensors.iter());
        trace::record_after(
            || IrOp::IndexGrad {
                shape: in_shape.into(),
                indices: indices.into(),
            },
            &args,
            &z,
        );
    }
    Ok(z)
}

/// The rules computed by kernels with no IR op (a capture recording them breaks).
fn unrecorded(op: &BackwardOp) -> Option<&'static str> {
    use BackwardOp as B;
    Some(match op {
        // recorded as gradient kernels when their forward was captured as an IR op
        B::LstmLayer { ir: None, .. } => "LSTM layer backward",
        B::GruLayer { ir: None, .. } => "GRU layer backward",
        B::Attention { ir: None, .. } => "scaled_dot_product_attention backward",
        B::AsStrided(_) => "a view's backward after an in-place op",
        B::CopySlices(_) => "an in-place op on a view's backward",
        B::Op { .. }
        | B::Attention { ir: Some(_), .. }
        | B::LstmLayer { ir: Some(_), .. }
        | B::GruLayer { ir: Some(_), .. }
        | B::IndexPut { .. }
        | B::Linalg(_)
        | B::Compiled(_)
        | B::CompiledOut { .. }
        | B::Loop(_)
        | B::LoopOut { .. }
        | B::Branch(_)
        | B::BranchOut { .. } => return None,
    })
}

/// Gradients for each input edge of `op`, given the output gradient `g`.
pub fn apply(op: &BackwardOp, g: &Tensor) -> Result<Grads> {
    use BackwardOp as B;
    if trace::active() {
        if let Some(what) = unrecorded(op) {
            trace::graph_break(trace::BreakReason::Autograd(what));
        }
    }
    Ok(match op {
        B::Op { op, saved } => op_grad(op, saved, g)?,
        B::AsStrided(map) => vec![Some(map.scatter(g)?)],
        B::CopySlices(map) => {
            let (rest, region) = map.split(g)?;
            vec![Some(rest), Some(region)]
        }
        B::IndexPut {
            indices,
            value_shape,
            accumulate,
        } => {
            let gx = if *accumulate {
                g.clone()
            } else if autograd::needs_grad(&[g]) {
                // Differentiable: zeros written into a copy, both recorded.
                let c = crate::tensor::pointwise::clone(g)?;
                c.index_put_(indices, &zeros(&[])?)?;
                c
            } else {
                let c = g.contiguous_copy()?;
                c.index_put_raw(indices, &zeros(&[])?, false)?;
                c
            };
            let gv = sum_to(&g.index(indices)?, value_shape)?;
            vec![Some(gx), Some(gv)]
        }
        B::LstmLayer {
            h0,
            c0,
            w,
            out,
            acts,
            ir,
        } => recurrence::lstm_layer_grads(
            g,
            &h0.get()?,
            &c0.get()?,
            &w.get()?,
            &out.get()?,
            acts,
            ir.as_ref(),
        )?,
        B::GruLayer {
            h0,
            w,
            out,
            saved,
            bias,
            ir,
        } => recurrence::gru_layer_grads(
            g,
            &h0.get()?,
            &w.get()?,
            (&out.get()?, saved),
            *bias,
            ir.as_ref(),
        )?,
        B::Attention {
            q,
            k,
            v,
            mask,
            dims,
            out,
            lse,
            ir,
        } => seq::attention_grads(
            g,
            &q.get()?,
            &k.get()?,
            &v.get()?,
            mask,
            dims,
            &out.get()?,
            lse,
            ir.as_ref(),
        )?,
        B::Linalg(l) => l.grads(g)?,
        B::Compiled(c) => c.apply(g)?,
        B::CompiledOut { shared, index } => shared.stash(*index, g)?,
        B::Loop(l) => l.apply(g)?,
        B::LoopOut { shared, index } => shared.stash(*index, g)?,
        B::Branch(b) => b.apply(g)?,
        B::BranchOut { shared, index } => shared.stash(*index, g)?,
    })
}

/// A slot every record of the op fills.
fn slot(s: &Option<Saved>) -> Result<&Saved> {
    s.as_ref().ok_or_else(|| {
        crate::tensor::err(
            crate::error::ErrorKind::RuntimeError,
            "internal error: a backward node lacks a tensor its rule reads",
        )
    })
}

/// The saved tensor of a slot every record of the op fills.
fn req(s: &Option<Saved>) -> Result<Tensor> {
    slot(s)?.get()
}

/// The raw tensor (`OpSaved::aux`) every record of the op keeps.
fn aux(s: &OpSaved) -> Result<&Tensor> {
    s.aux.as_ref().ok_or_else(|| {
        crate::tensor::err(
            crate::error::ErrorKind::RuntimeError,
            "internal error: a backward node lacks the index tensor its rule reads",
        )
    })
}

/// The gradient rule of a primitive op: its attributes are `op`'s, what it saved is
/// `s` (the slots each arm reads are the ones its record fills).
fn op_grad(op: &IrOp, s: &OpSaved, g: &Tensor) -> Result<Grads> {
    use IrOp as O;
    Ok(match op {
        // a, b, out: the operands and the result the row saves; a_shape, b_shape
        O::Binary(BinaryOp::Mul)
        | O::BinaryScalar {
            op: BinaryOp::Mul, ..
        } if s.a.is_none() || s.b.is_none() => {
            // A product with a scalar: only the tensor operand's gradient.
            let grad = |t: &Option<Saved>, shape: &[usize]| -> Result<Option<Tensor>> {
                t.as_ref()
                    .map(|t| sum_to(&g.mul(&t.get()?)?, shape))
                    .transpose()
            };
            vec![grad(&s.b, &s.a_shape[..])?, grad(&s.a, &s.b_shape[..])?]
        }
        O::Binary(op) | O::BinaryScalar { op, .. } => {
            let (ga, gb) = binary_grads(*op, &opt(&s.a)?, &opt(&s.b)?, &opt(&s.out)?, g)?;
            vec![
                Some(sum_to(&ga, &s.a_shape)?),
                Some(sum_to(&gb, &s.b_shape)?),
            ]
        }
        // a: x (or out: the result, as the row saves)
        O::Unary(op) => vec![Some(unary_grad(*op, &opt(&s.a)?, &opt(&s.out)?, g)?)],
        // a: x
        O::Clamp { min, max } => {
            let x = req(&s.a)?;
            let mut m = creation::ones(x.shape(), DType::F32)?;
            if let Some(lo) = min {
                m = m.mul(&mask_f(&x.cmp_s(BinaryOp::Ge, *lo)?)?)?;
            }
            if let Some(hi) = max {
                m = m.mul(&mask_f(&x.cmp_s(BinaryOp::Le, *hi)?)?)?;
            }
            // Selected, not multiplied, so clamped positions get +0.0 (as in PyTorch).
            vec![Some(where_(&m.cmp_s(BinaryOp::Gt, 0.5)?, g, &zeros(&[])?)?)]
        }
        // a: cond; a_shape, b_shape: the two values'
        O::Where => {
            let c = req(&s.a)?;
            let z = zeros(&[])?;
            let ga = where_(&c, g, &z)?;
            let gb = where_(&c, &z, g)?;
            vec![
                Some(sum_to(&ga, &s.a_shape)?),
                Some(sum_to(&gb, &s.b_shape)?),
            ]
        }
        O::Clone | O::Cast(_) => vec![Some(g.clone())],
        // a_shape: x's; src
        O::Sum { dims, .. } | O::Mean { dims, .. } => {
            let in_shape = &s.a_shape;
            let divisor: usize = match op {
                O::Mean { .. } => dims.iter().map(|&d| in_shape[d]).product(),
                _ => 1,
            };
            let e = unreduce(g, in_shape, dims)?;
            // In a capture with symbolic sizes the expand follows the input's sizes, and
            // a count over a symbolic dim is taken at run time.
            let sym = match &s.src {
                Some(x) => trace::note_like(&e, x),
                None => Vec::new(),
            };
            vec![Some(if divisor == 1 {
                e
            } else if dims.iter().any(|&d| sym.get(d) == Some(&true)) {
                grad_kernels::mean_scale(&e, dims)?
            } else {
                e.mul_s(mean_scale(e.dtype(), divisor))?
            })]
        }
        // a_shape: x's; aux: the indices; src
        O::ExtremeDim { dim, keepdim, .. } => {
            let (in_shape, indices) = (&s.a_shape, aux(s)?);
            let (gk, ik) = if *keepdim || in_shape.is_empty() {
                (g.clone(), indices.clone())
            } else {
                (g.unsqueeze(*dim as i64)?, indices.unsqueeze(*dim as i64)?)
            };
            if in_shape.is_empty() {
                return Ok(vec![Some(g.clone())]);
            }
            vec![Some(zeros_like_src(in_shape, &gk, &s.src)?.scatter_add(
                *dim as i64,
                &ik,
                &gk,
            )?)]
        }
        // a: x, out; more: amax/amin's dims (`Sizes`; out kept their size-1 dims), or
        // nothing for the full max/min: shared evenly among the tied maxima of each row
        O::ExtremeAll { .. } => {
            let m = mask_f(&binary(BinaryOp::Eq, &req(&s.a)?, &req(&s.out)?)?)?;
            let cnt = match &s.more {
                More::Sizes(d) => m.sum(&d.iter().map(|&i| i as i64).collect::<Vec<_>>(), true)?,
                _ => m.sum(&[], false)?,
            };
            vec![Some(m.mul(g)?.div(&cnt)?)]
        }
        // a: x; out: std's result when `std`
        O::Var {
            dims,
            correction,
            std,
            ..
        } => {
            let x = req(&s.a)?;
            let n: usize = dims.iter().map(|&d| x.shape()[d]).product();
            let di: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
            let centered = x.sub(&x.mean(&di, true)?)?;
            let ge = unreduce(g, x.shape(), dims)?;
            let denom = (n as f64 - correction).max(0.0);
            let gx = if *std {
                let se = unreduce(&req(&s.out)?, x.shape(), dims)?;
                ge.mul(&centered)?.div(&se)?.mul_s(1.0 / denom)?
            } else {
                ge.mul(&centered)?.mul_s(2.0 / denom)?
            };
            vec![Some(gx)]
        }
        // a: x
        O::Prod { dims, .. } => {
            let x = req(&s.a)?;
            let ge = unreduce(g, x.shape(), dims)?;
            let others = grad_kernels::prod_others(&x, dims)?;
            vec![Some(ge.mul(&others)?)]
        }
        // a: x, out
        O::LogSumExp { dims, .. } => {
            let x = req(&s.a)?;
            let oe = unreduce(&req(&s.out)?, x.shape(), dims)?;
            let ge = unreduce(g, x.shape(), dims)?;
            vec![Some(ge.mul(&x.sub(&oe)?.un(UnaryOp::Exp)?)?)]
        }
        // out
        O::Softmax { dim } => {
            let y = req(&s.out)?;
            let s = g.mul(&y)?.sum(&[*dim as i64], true)?;
            vec![Some(y.mul(&g.sub(&s)?)?)]
        }
        // out
        O::LogSoftmax { dim } => {
            let y = req(&s.out)?;
            let s = g.sum(&[*dim as i64], true)?;
            vec![Some(g.sub(&y.un(UnaryOp::Exp)?.mul(&s)?)?)]
        }
        O::Cumsum { dim, .. } if autograd::needs_grad(&[g]) => {
            // Differentiable: a cumsum over the reversed dim, reversed back.
            let d = [*dim as i64];
            vec![Some(flip(&flip(g, &d)?.cumsum(d[0])?, &d)?)]
        }
        O::Cumsum { dim, .. } => vec![Some(g.cumsum_reverse(*dim)?)],
        // a: x, out
        O::Norm { p, dims, .. } => {
            let x = req(&s.a)?;
            let oe = unreduce(&req(&s.out)?, x.shape(), dims)?;
            let ge = unreduce(g, x.shape(), dims)?;
            let zero = oe.cmp_s(BinaryOp::Eq, 0.0)?;
            let gx = if p.is_infinite() {
                let m = mask_f(&binary(BinaryOp::Eq, &x.un(UnaryOp::Abs)?, &oe)?)?;
                let cnt = m.sum(&dims.iter().map(|&d| d as i64).collect::<Vec<_>>(), true)?;
                ge.mul(&m)?.mul(&x.un(UnaryOp::Sign)?)?.div(&cnt)?
            } else {
                let num = x
                    .un(UnaryOp::Sign)?
                    .mul(&x.un(UnaryOp::Abs)?.pow_s(p - 1.0)?)?;
                ge.mul(&num)?.div(&oe.pow_s(p - 1.0)?)?
            };
            vec![Some(gx.masked_fill(
                &expand(&zero, x.shape())?,
                Scalar::Float(0.0),
            )?)]
        }
        // a_shape: x's (more: the call, for the name)
        O::Reshape { .. } => vec![Some(reshape(g, &s.a_shape)?)],
        O::Permute { perm } => {
            let mut inv = vec![0; perm.len()];
            for (i, &p) in perm.iter().enumerate() {
                inv[p] = i;
            }
            let out = g.permute_raw(&inv, autograd::needs_grad(&[g]));
            trace::record_after(|| IrOp::Permute { perm: inv.clone() }, &[g], &out);
            vec![Some(out)]
        }
        // a_shape: x's
        O::Expand { .. } => vec![Some(sum_to(g, &s.a_shape)?)],
        // a_shape: x's; more: the indices (`Index`)
        O::Index { .. } => {
            let More::Index(indices) = &s.more else {
                return Err(crate::tensor::err(
                    crate::error::ErrorKind::RuntimeError,
                    "internal error: an index node lacks its indices",
                ));
            };
            vec![Some(index_grad(&s.a_shape, indices, g)?)]
        }
        // a_shape: x's; aux: the index; src
        O::Gather { dim } => {
            vec![Some(zeros_like_src(&s.a_shape, g, &s.src)?.scatter_add(
                *dim as i64,
                aux(s)?,
                g,
            )?)]
        }
        // aux: the index; b_shape: src's
        O::ScatterAdd { dim } => {
            let index = aux(s)?;
            let part = g.gather(*dim as i64, index)?;
            let gs = if part.shape() == s.b_shape.as_slice() {
                part
            } else {
                let idx: Vec<TensorIndex> = index
                    .shape()
                    .iter()
                    .map(|&n| TensorIndex::Slice {
                        start: None,
                        stop: Some(n as i64),
                        step: None,
                    })
                    .collect();
                index_grad(&s.b_shape, &idx, &part)?
            };
            vec![Some(g.clone()), Some(gs)]
        }
        // aux: the mask
        O::MaskedFill { .. } => vec![Some(g.masked_fill(aux(s)?, Scalar::Float(0.0))?)],
        // more: each input's size along dim (`Sizes`)
        O::Cat { dim } => {
            let sizes = match &s.more {
                More::Sizes(v) => &v[..],
                _ => &[],
            };
            let mut start = 0;
            let mut out = Vec::with_capacity(sizes.len());
            for &n in sizes {
                out.push(Some(g.narrow(*dim as i64, start as i64, n as i64)?));
                start += n;
            }
            out
        }
        // a, b
        O::Matmul => {
            let (a, b) = (req(&s.a)?, req(&s.b)?);
            vec![
                Some(matmul_grad_a(g, &a, &b)?),
                Some(matmul_grad_b_rows(g, &a, &b)?),
            ]
        }
        // a: x, b: w
        O::Conv2d { params, .. } => {
            let (x, w) = (slot(&s.a)?, slot(&s.b)?);
            // only the gradients an edge takes (an input without history has none)
            let need = (x.needs_grad(), w.needs_grad());
            let (gx, gw) = grad_kernels::conv2d(&x.get()?, &w.get()?, g, *params, need)?;
            vec![gx, gw]
        }
        // a_shape: x's; aux: the argmax; a: x
        O::MaxPool2d { params } => vec![Some(grad_kernels::max_pool2d(
            &s.a_shape,
            aux(s)?,
            slot(&s.a)?,
            *params,
            g,
        )?)],
        // a_shape: x's
        O::AvgPool2d { params } => {
            vec![Some(grad_kernels::avg_pool2d(&s.a_shape, *params, g)?)]
        }
        // more: the kernel's own saved state and rule
        O::BatchNorm { .. } | O::LayerNorm { .. } | O::GroupNorm { .. } => match &s.more {
            More::Kernel(k) => k.grads(g)?,
            _ => return Err(no_rule(op)),
        },
        // ops eager code records no node for (no gradient, or composites of others)
        unrecorded_op!() => return Err(no_rule(op)),
    })
}

/// An autograd node of an op that eager code never records one for.
fn no_rule(op: &IrOp) -> crate::error::Error {
    crate::tensor::err(
        crate::error::ErrorKind::RuntimeError,
        format!("internal error: no gradient rule for {}", op.name()),
    )
}
