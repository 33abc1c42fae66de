//! Result types of IR ops: each op's dtype and shape re-derived from its args' types with
//! the tensor library's own rules (broadcasting, promotion, reductions, views), so the
//! verifier can check a graph and passes can build new nodes without running kernels.

use crate::compile::ir::{GradKernel, Graph, IrIndex, IrOp, Node, NodeId};
use crate::error::{Error, ErrorKind, Result};
use crate::ir::grad_kernel::NormPart;
use crate::ops::{BinaryOp, UnaryOp};
use crate::source::Span;
use crate::tensor::dtype::{default_float, DType, Scalar};
use crate::tensor::kernels::binary::compute_dtype;
use crate::tensor::kernels::conv::{out_size, ConvParams, PoolParams};
use crate::tensor::linalg_ops::LinalgOp;
use crate::tensor::reduce::reduced_shape;
use crate::tensor::shape::{broadcast_shapes, fmt_shape, numel, Dims};

/// The static type of an IR value.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueType {
    pub dtype: DType,
    pub shape: Dims,
}

impl ValueType {
    pub fn new(dtype: DType, shape: &[usize]) -> ValueType {
        ValueType {
            dtype,
            shape: shape.into(),
        }
    }
}

/// What can be derived for a node: its dtype always, its shape when the op's shape rule
/// depends only on arg shapes (not on index values, e.g. bool-mask indexing).
#[derive(Debug, Clone, PartialEq)]
pub struct Derived {
    pub dtype: DType,
    pub shape: Option<Dims>,
}

fn bad(msg: String) -> Error {
    Error::new(ErrorKind::ShapeError, msg, None)
}

fn full(dtype: DType, shape: Dims) -> Result<Derived> {
    Ok(Derived {
        dtype,
        shape: Some(shape),
    })
}

/// The dtype `unary_raw` produces for `op` on `dt` (None: the op rejects it).
pub fn unary_dtype(op: UnaryOp, dt: DType) -> Option<DType> {
    let int_dt = if op.keeps_int() {
        DType::I64
    } else {
        default_float()
    };
    match dt {
        DType::F32 | DType::F64 => op.takes_float().then_some(dt),
        DType::I32 | DType::U8 if op.keeps_int() => Some(dt),
        DType::I32 | DType::I64 | DType::U8 => Some(int_dt),
        DType::Bool => match op {
            UnaryOp::Not => Some(DType::Bool),
            UnaryOp::Neg => None,
            _ => Some(int_dt),
        },
    }
}

/// The dtype of `a op b` given the promoted operand dtype.
pub fn binary_dtype(op: BinaryOp, promoted: DType) -> Result<DType> {
    let dt = compute_dtype(op, promoted)?;
    Ok(if op.is_comparison() { DType::Bool } else { dt })
}

/// A clamp bound as the scalar `ops::clamp` uses.
fn bound(dt: DType, v: f64) -> Scalar {
    if !dt.is_float() && v.fract() == 0.0 {
        Scalar::Int(v as i64)
    } else {
        Scalar::Float(v)
    }
}

fn clamp_dtype(dt: DType, min: Option<f64>, max: Option<f64>) -> Result<DType> {
    let mut out = dt;
    for (op, b) in [(BinaryOp::Maximum, min), (BinaryOp::Minimum, max)] {
        if let Some(v) = b {
            out = binary_dtype(op, bound(dt, v).promote_with(out))?;
        }
    }
    Ok(out)
}

fn sum_dtype(dt: DType) -> DType {
    if dt.is_float() {
        float_out(dt)
    } else {
        DType::I64
    }
}

/// The dtype of a float result computed from `dt`: float64 stays float64, anything
/// else gives float32.
fn float_out(dt: DType) -> DType {
    if dt == DType::F64 {
        DType::F64
    } else {
        DType::F32
    }
}

fn check_dims(op: &str, dims: &[usize], ndim: usize) -> Result<()> {
    match dims.iter().find(|&&d| d >= ndim.max(1)) {
        Some(d) => Err(bad(format!("{op}: dim {d} out of range for {ndim} dims"))),
        None => Ok(()),
    }
}

fn reduce(op: &str, x: &ValueType, dims: &[usize], keepdim: bool, dt: DType) -> Result<Derived> {
    check_dims(op, dims, x.shape.len())?;
    full(dt, reduced_shape(&x.shape, dims, keepdim))
}

/// Derives the result of `op` applied to args of types `a`. One exhaustive match: an op
/// without an arm here is a compile error.
pub fn derive(op: &IrOp, a: &[ValueType]) -> Result<Derived> {
    let name = op.name();
    if let Some(n) = op.arity() {
        if a.len() != n {
            return Err(bad(format!("{name}: expected {n} args, got {}", a.len())));
        }
    }
    let first = || a.first().ok_or_else(|| bad(format!("{name}: no tensors")));
    let same = |dt: fn(DType) -> DType| first().and_then(|x| full(dt(x.dtype), x.shape.clone()));
    match op {
        IrOp::Const(t) => full(t.dtype(), t.shape().into()),
        IrOp::Unary(u) => derive_unary(*u, first()?),
        IrOp::Binary(b) => {
            let shape = broadcast_shapes(b.name(), &a[0].shape, &a[1].shape)?;
            full(binary_dtype(*b, a[0].dtype.promote(a[1].dtype))?, shape)
        }
        IrOp::BinaryScalar { op, scalar, .. } => {
            let x = first()?;
            full(
                binary_dtype(*op, scalar.promote_with(x.dtype))?,
                x.shape.clone(),
            )
        }
        IrOp::Clamp { min, max } => {
            let x = first()?;
            full(clamp_dtype(x.dtype, *min, *max)?, x.shape.clone())
        }
        IrOp::Where => derive_where(a),
        IrOp::Cast(dt) => full(*dt, first()?.shape.clone()),
        IrOp::Clone | IrOp::Contiguous | IrOp::BatchNormRunning { .. } => same(|d| d),
        IrOp::Sum { dims, keepdim } | IrOp::Prod { dims, keepdim } => {
            let x = first()?;
            reduce(name, x, dims, *keepdim, sum_dtype(x.dtype))
        }
        IrOp::Mean { dims, keepdim }
        | IrOp::Var { dims, keepdim, .. }
        | IrOp::Norm { dims, keepdim, .. } => {
            let x = first()?;
            float_in(name, x)?;
            reduce(name, x, dims, *keepdim, float_out(x.dtype))
        }
        IrOp::LogSumExp { dims, keepdim } => {
            let x = first()?;
            reduce(name, x, dims, *keepdim, float_out(x.dtype))
        }
        IrOp::ExtremeAll { .. } => full(first()?.dtype, Dims::new()),
        IrOp::ExtremeDim { dim, keepdim, .. } => {
            let x = first()?;
            reduce(name, x, &dim_of(x, *dim), *keepdim, x.dtype)
        }
        IrOp::ArgExtreme { dim: None, .. } => first().and_then(|_| full(DType::I64, Dims::new())),
        IrOp::ArgExtreme {
            dim: Some(d),
            keepdim,
            ..
        } => {
            let x = first()?;
            reduce(name, x, &dim_of(x, *d), *keepdim, DType::I64)
        }
        IrOp::AllAny { dims, keepdim, .. } => reduce(name, first()?, dims, *keepdim, DType::Bool),
        IrOp::Softmax { dim } | IrOp::LogSoftmax { dim } => along(name, first()?, *dim, float_out),
        IrOp::Cumsum { dim, .. } => along(name, first()?, *dim, sum_dtype),
        IrOp::Reshape { shape } => derive_reshape(first()?, shape),
        IrOp::Permute { perm } => derive_permute(first()?, perm),
        IrOp::Expand { shape, .. } => derive_expand(first()?, shape),
        IrOp::Narrow { dim, start, len } => derive_narrow(first()?, *dim, *start, *len),
        IrOp::Repeat { reps } => derive_repeat(first()?, reps),
        IrOp::Matmul => derive_matmul(&a[0], &a[1]),
        IrOp::Attention { .. } => derive_attention(a),
        IrOp::LstmLayer => derive_recurrence("lstm_layer", a, 4, 2),
        IrOp::GruLayer { .. } => derive_recurrence("gru_layer", a, 3, 1),
        IrOp::Conv2d { params, .. } => derive_conv2d(&a[0], &a[1], params),
        IrOp::MaxPool2d { params } | IrOp::AvgPool2d { params } => {
            derive_pool2d(name, first()?, params)
        }
        IrOp::Cat { dim } => first().and_then(|_| derive_cat(a, *dim)),
        IrOp::Stack { dim } => first().and_then(|_| derive_stack(a, *dim)),
        IrOp::BatchNorm { .. } | IrOp::LayerNorm { .. } | IrOp::GroupNorm { .. } => same(float_out),
        IrOp::IndexSelect { dim } => derive_index_select(a, *dim),
        IrOp::Gather { dim } => {
            dim_index(name, a, *dim)?;
            full(a[0].dtype, a[1].shape.clone())
        }
        IrOp::Linalg(op) => derive_linalg(op, a),
        IrOp::ScatterAdd { dim } | IrOp::Scatter { dim } => {
            dim_index(name, a, *dim)?;
            full(a[0].dtype, a[0].shape.clone())
        }
        IrOp::OneHot { num_classes } => derive_one_hot(first()?, *num_classes),
        IrOp::ModeIndices { dim } => {
            let mut shape = first()?.shape.clone();
            check_dims(name, &[*dim], shape.len())?;
            if let Some(e) = shape.get_mut(*dim) {
                *e = 1;
            }
            full(DType::I64, shape)
        }
        IrOp::SortIndices { dim, k, .. } => {
            let mut shape = first()?.shape.clone();
            check_dims(name, &[*dim], shape.len())?;
            if let (Some(k), Some(e)) = (k, shape.get_mut(*dim)) {
                *e = *k;
            }
            full(DType::I64, shape)
        }
        IrOp::MaskedFill { .. } => derive_masked_fill(&a[0], &a[1]),
        IrOp::FillLike { dtype, .. } => full(*dtype, first()?.shape.clone()),
        IrOp::Index { indices } => derive_index(first()?, indices, a),
        IrOp::IndexGrad { shape, .. } => full(first()?.dtype, shape.clone()),
        IrOp::GradKernel(GradKernel::MeanScale { .. }) => same(|d| d),
        IrOp::GradKernel(k) => full(float_out(first()?.dtype), grad_kernel_shape(k, a)),
        // typed where they are made: inputs by their tensors, control nodes by regions
        IrOp::Input { .. } | IrOp::If(_) | IrOp::Loop(_) | IrOp::Out { .. } | IrOp::Print(_) => {
            Err(bad(format!("{name}: cannot derive a type")))
        }
    }
}

/// A matrix function: float args; its result's dtype and (where the args' shapes
/// give it) shape.
fn derive_linalg(op: &LinalgOp, a: &[ValueType]) -> Result<Derived> {
    if let Some(x) = a.iter().find(|x| !x.dtype.is_float()) {
        return Err(bad(format!("{}: unsupported dtype {}", op.name(), x.dtype)));
    }
    let x = a
        .first()
        .ok_or_else(|| bad(format!("{}: no tensors", op.name())))?;
    let shapes: Vec<&[usize]> = a.iter().map(|t| &t.shape[..]).collect();
    Ok(Derived {
        dtype: op.out_dtype(x.dtype),
        shape: op.out_shape(&shapes).map(Dims::from),
    })
}

fn derive_unary(u: UnaryOp, x: &ValueType) -> Result<Derived> {
    match unary_dtype(u, x.dtype) {
        Some(dt) => full(dt, x.shape.clone()),
        None => Err(bad(format!("{}: unsupported dtype {}", u.name(), x.dtype))),
    }
}

/// The dims a max/min/argmax along `dim` reduces: none for a 0-d input.
fn dim_of(x: &ValueType, dim: usize) -> Vec<usize> {
    if x.shape.is_empty() {
        vec![]
    } else {
        vec![dim]
    }
}

/// A dim-wise op keeping `x`'s shape (softmax, cumsum), of dtype `dt(x.dtype)`.
fn along(name: &str, x: &ValueType, dim: usize, dt: fn(DType) -> DType) -> Result<Derived> {
    check_dims(name, &[dim], x.shape.len())?;
    full(dt(x.dtype), x.shape.clone())
}

fn derive_where(a: &[ValueType]) -> Result<Derived> {
    if a[0].dtype != DType::Bool {
        return Err(bad("where: condition must be bool".into()));
    }
    let s = broadcast_shapes("where", &a[1].shape, &a[2].shape)?;
    let s = broadcast_shapes("where", &a[0].shape, &s)?;
    full(a[1].dtype.promote(a[2].dtype), s)
}

fn float_in(op: &str, x: &ValueType) -> Result<()> {
    if x.dtype.is_float() {
        Ok(())
    } else {
        Err(bad(format!("{op}: expected float32, got {}", x.dtype)))
    }
}

fn derive_reshape(x: &ValueType, shape: &Dims) -> Result<Derived> {
    if numel(shape)? != numel(&x.shape)? {
        return Err(bad(format!(
            "reshape: {} to {}: element counts differ",
            fmt_shape(&x.shape),
            fmt_shape(shape)
        )));
    }
    full(x.dtype, shape.clone())
}

fn derive_expand(x: &ValueType, shape: &Dims) -> Result<Derived> {
    let b = broadcast_shapes("expand", &x.shape, shape)?;
    if b != *shape {
        return Err(bad(format!(
            "expand: {} to {}",
            fmt_shape(&x.shape),
            fmt_shape(shape)
        )));
    }
    full(x.dtype, shape.clone())
}

fn derive_narrow(x: &ValueType, dim: usize, start: usize, len: usize) -> Result<Derived> {
    match x.shape.get(dim).copied() {
        Some(s) if start.saturating_add(len) <= s => {
            let mut shape = x.shape.clone();
            shape[dim] = len;
            full(x.dtype, shape)
        }
        _ => Err(bad(format!(
            "narrow: out of range of {}",
            fmt_shape(&x.shape)
        ))),
    }
}

fn derive_conv2d(x: &ValueType, w: &ValueType, params: &ConvParams) -> Result<Derived> {
    let s = &x.shape;
    let sp = |i: usize, k: usize, st: usize, p: usize, d: usize| out_size("conv2d", i, k, st, p, d);
    if w.shape.len() != 4 || !(3..=4).contains(&s.len()) {
        return Err(bad("conv2d: expected [N,C,H,W] and [O,C,KH,KW]".into()));
    }
    let n = s.len();
    let (st, p, d) = (params.stride, params.padding, params.dilation);
    let oh = sp(s[n - 2], w.shape[2], st.0, p.0, d.0)?;
    let ow = sp(s[n - 1], w.shape[3], st.1, p.1, d.1)?;
    let mut shape: Dims = s[..n - 3].into();
    shape.extend([w.shape[0], oh, ow]);
    full(float_out(x.dtype), shape)
}

fn derive_pool2d(name: &str, x: &ValueType, params: &PoolParams) -> Result<Derived> {
    let s = &x.shape;
    if !(3..=4).contains(&s.len()) {
        return Err(bad("pool2d: expected a 3-D or 4-D input".into()));
    }
    let n = s.len();
    let (p, k, st) = (params.padding, params.kernel, params.stride);
    let oh = out_size(name, s[n - 2], k.0, st.0, p.0, 1)?;
    let ow = out_size(name, s[n - 1], k.1, st.1, p.1, 1)?;
    let mut shape: Dims = s[..n - 2].into();
    shape.extend([oh, ow]);
    full(float_out(x.dtype), shape)
}

fn derive_permute(x: &ValueType, perm: &[usize]) -> Result<Derived> {
    let n = x.shape.len();
    let mut seen = vec![false; n];
    for &p in perm {
        match seen.get_mut(p) {
            Some(s) if !*s => *s = true,
            _ => {
                return Err(bad(format!(
                    "permute: {perm:?} is not a permutation of {n} dims"
                )))
            }
        }
    }
    if perm.len() != n {
        return Err(bad(format!(
            "permute: {perm:?} is not a permutation of {n} dims"
        )));
    }
    full(x.dtype, perm.iter().map(|&p| x.shape[p]).collect())
}

fn derive_repeat(x: &ValueType, reps: &[usize]) -> Result<Derived> {
    if reps.len() < x.shape.len() {
        return Err(bad("repeat: fewer repeats than dims".into()));
    }
    let pad = reps.len() - x.shape.len();
    let mut shape = Dims::new();
    for (i, &r) in reps.iter().enumerate() {
        let s = if i < pad { 1 } else { x.shape[i - pad] };
        shape.push(
            s.checked_mul(r)
                .ok_or_else(|| bad("repeat: too many elements".into()))?,
        );
    }
    full(x.dtype, shape)
}

fn derive_matmul(a: &ValueType, b: &ValueType) -> Result<Derived> {
    let (sa, sb) = (&a.shape, &b.shape);
    let (na, nb) = (sa.len(), sb.len());
    if na == 0 || nb == 0 {
        return Err(bad(
            "matmul: both arguments need at least 1 dimension".into()
        ));
    }
    let kb = if nb == 1 { sb[0] } else { sb[nb - 2] };
    if sa[na - 1] != kb {
        return Err(bad(format!(
            "matmul: {} @ {}: inner dimensions differ",
            fmt_shape(sa),
            fmt_shape(sb)
        )));
    }
    let dt = if a.dtype.is_float() || b.dtype.is_float() {
        float_out(a.dtype.promote(b.dtype))
    } else {
        DType::I64
    };
    let ba = if na > 2 { &sa[..na - 2] } else { &[][..] };
    let bb = if nb > 2 { &sb[..nb - 2] } else { &[][..] };
    let mut shape = broadcast_shapes("matmul", ba, bb)?;
    if na > 1 {
        shape.push(sa[na - 2]);
    }
    if nb > 1 {
        shape.push(sb[nb - 1]);
    }
    full(dt, shape)
}

fn derive_cat(a: &[ValueType], dim: usize) -> Result<Derived> {
    let first = &a[0];
    if dim >= first.shape.len() {
        return Err(bad(format!(
            "cat: dim {dim} out of range for {} dims",
            first.shape.len()
        )));
    }
    let mut shape = first.shape.clone();
    let mut dt = first.dtype;
    for t in &a[1..] {
        let same_rank = t.shape.len() == shape.len();
        let others_match =
            same_rank && (0..shape.len()).all(|d| d == dim || t.shape[d] == shape[d]);
        if !others_match {
            return Err(bad(format!(
                "cat: {} and {} differ outside dim {dim}",
                fmt_shape(&first.shape),
                fmt_shape(&t.shape)
            )));
        }
        shape[dim] += t.shape[dim];
        dt = dt.promote(t.dtype);
    }
    full(dt, shape)
}

fn derive_stack(a: &[ValueType], dim: usize) -> Result<Derived> {
    let first = &a[0];
    if dim > first.shape.len() || a.iter().any(|t| t.shape != first.shape) {
        return Err(bad("stack: tensors must have equal shapes".into()));
    }
    let dt = a.iter().fold(first.dtype, |acc, t| acc.promote(t.dtype));
    let mut shape = first.shape.clone();
    shape.insert(dim, a.len());
    full(dt, shape)
}

fn want(op: &str, t: &ValueType, dt: DType) -> Result<()> {
    if t.dtype == dt {
        Ok(())
    } else {
        Err(bad(format!("{op}: expected {dt} index, got {}", t.dtype)))
    }
}

/// Checks an index arg (arg 1, int64) and `dim` of a gather-like op.
fn dim_index(name: &str, a: &[ValueType], dim: usize) -> Result<()> {
    want(name, &a[1], DType::I64)?;
    check_dims(name, &[dim], a[0].shape.len())
}

fn derive_index_select(a: &[ValueType], dim: usize) -> Result<Derived> {
    dim_index("index_select", a, dim)?;
    let mut shape = a[0].shape.clone();
    if let Some(s) = shape.get_mut(dim) {
        *s = numel(&a[1].shape)?;
    }
    full(a[0].dtype, shape)
}

fn derive_one_hot(x: &ValueType, num_classes: usize) -> Result<Derived> {
    want("one_hot", x, DType::I64)?;
    let mut shape = x.shape.clone();
    shape.push(num_classes);
    full(DType::I64, shape)
}

fn derive_masked_fill(x: &ValueType, mask: &ValueType) -> Result<Derived> {
    want("masked_fill", mask, DType::Bool)?;
    if broadcast_shapes("masked_fill", &x.shape, &mask.shape)? != x.shape {
        return Err(bad(
            "masked_fill: mask does not broadcast to the input".into()
        ));
    }
    full(x.dtype, x.shape.clone())
}

/// scaled_dot_product_attention of q `[*, L, E]`, k `[*, S, E]`, v `[*, S, Ev]` (one
/// batch shape, as captured): `[*, L, Ev]`.
fn derive_attention(a: &[ValueType]) -> Result<Derived> {
    let (Some(q), Some(k), Some(v)) = (a.first(), a.get(1), a.get(2)) else {
        return Err(bad("scaled_dot_product_attention: needs q, k and v".into()));
    };
    let n = q.shape.len();
    let ok = n >= 2
        && k.shape.len() == n
        && v.shape.len() == n
        && q.shape[..n - 2] == k.shape[..n - 2]
        && k.shape[..n - 1] == v.shape[..n - 1]
        && q.shape[n - 1] == k.shape[n - 1];
    if !ok {
        return Err(bad(format!(
            "scaled_dot_product_attention: q {}, k {}, v {} do not fit",
            fmt_shape(&q.shape),
            fmt_shape(&k.shape),
            fmt_shape(&v.shape)
        )));
    }
    let mut shape = q.shape.clone();
    shape[n - 1] = v.shape[n - 1];
    full(float_out(q.dtype), shape)
}

/// A fused recurrence of `gates` gates (`states` initial states follow xp, then W_hh
/// and the bias): xp `[T, B, gates*H]`, states `[B, H]`, W_hh `[gates*H, H]`, b_hh
/// `[gates*H]`; the rows `[T, B, states*H]` of xp's dtype.
fn derive_recurrence(name: &str, a: &[ValueType], gates: usize, states: usize) -> Result<Derived> {
    let (Some(xp), Some(w)) = (a.first(), a.get(1 + states)) else {
        return Err(bad(format!("{name}: needs xp, the states and weight_hh")));
    };
    let fits = |v: &ValueType, shape: &[usize]| v.shape[..] == *shape && v.dtype == xp.dtype;
    let ok = xp.shape.len() == 3 && w.shape.len() == 2 && xp.dtype.is_float() && {
        let (t, b, h) = (xp.shape[0], xp.shape[1], w.shape[1]);
        fits(xp, &[t, b, gates * h])
            && fits(w, &[gates * h, h])
            && a[1..=states].iter().all(|s| fits(s, &[b, h]))
            && a[2 + states..].iter().all(|s| fits(s, &[gates * h]))
    };
    if !ok {
        let shapes: Vec<String> = a.iter().map(|v| fmt_shape(&v.shape)).collect();
        return Err(bad(format!(
            "{name}: operands {} do not fit",
            shapes.join(", ")
        )));
    }
    let shape = [xp.shape[0], xp.shape[1], states * w.shape[1]];
    full(xp.dtype, shape.into_iter().collect())
}

/// The shape of a gradient kernel's result: its input's (conv2d's weight's).
fn grad_kernel_shape(k: &GradKernel, a: &[ValueType]) -> Dims {
    match k {
        GradKernel::Attention { part, .. } => a[(*part).min(2)].shape.clone(),
        GradKernel::LstmLayer { part } | GradKernel::GruLayer { part, .. } => {
            a.get(*part).map(|v| v.shape.clone()).unwrap_or_default()
        }
        GradKernel::AvgPool2d { in_shape, .. } => Dims::from_slice(in_shape),
        GradKernel::Conv2dWeight { .. } => a[1].shape.clone(),
        GradKernel::BatchNorm {
            part: NormPart::Params,
            ..
        }
        | GradKernel::GroupNorm {
            part: NormPart::Params,
            ..
        } => [2, a[0].shape.get(1).copied().unwrap_or(0)]
            .into_iter()
            .collect(),
        GradKernel::LayerNorm {
            part: NormPart::Params,
            dims,
            ..
        } => {
            let s = &a[0].shape;
            std::iter::once(2)
                .chain(s[s.len().saturating_sub(*dims)..].iter().copied())
                .collect()
        }
        GradKernel::ProdOthers { .. }
        | GradKernel::Conv2dInput { .. }
        | GradKernel::MaxPool2d { .. }
        | GradKernel::MeanScale { .. }
        | GradKernel::BatchNorm {
            part: NormPart::Input,
            ..
        }
        | GradKernel::LayerNorm {
            part: NormPart::Input,
            ..
        }
        | GradKernel::GroupNorm {
            part: NormPart::Input,
            ..
        } => a[0].shape.clone(),
    }
}

/// Indexing keeps the dtype; its shape depends on mask contents, so only arg kinds and
/// positions are checked here.
fn derive_index(x: &ValueType, indices: &[IrIndex], a: &[ValueType]) -> Result<Derived> {
    let mut used = 1;
    for ix in indices {
        let (arg, dt) = match ix {
            IrIndex::Mask { arg } => (*arg, DType::Bool),
            IrIndex::Indices { arg } => (*arg, DType::I64),
            _ => continue,
        };
        match a.get(arg) {
            Some(t) if arg == used => want("index", t, dt)?,
            _ => return Err(bad(format!("index: tensor index refers to arg {arg}"))),
        }
        used += 1;
    }
    if used != a.len() {
        return Err(bad("index: unused tensor args".into()));
    }
    Ok(Derived {
        dtype: x.dtype,
        shape: None,
    })
}

impl Graph {
    /// Appends `op(args)` with its type derived from its args' types (`derive`): an
    /// error when the op is ill-typed or its shape depends on tensor values.
    ///
    /// Hand-built graphs (pass and lowering tests) use it instead of spelling types out.
    pub fn push_derived(
        &mut self,
        op: IrOp,
        args: &[NodeId],
        span: Option<Span>,
    ) -> Result<NodeId> {
        let types = args
            .iter()
            .map(|a| {
                self.node(*a)
                    .map(|n| ValueType {
                        dtype: n.dtype,
                        shape: n.shape.clone(),
                    })
                    .ok_or_else(|| bad(format!("{}: arg {a} is not in the graph", op.name())))
            })
            .collect::<Result<Vec<_>>>()?;
        let d = derive(&op, &types)?;
        let shape = d
            .shape
            .ok_or_else(|| bad(format!("{}: shape depends on tensor values", op.name())))?;
        Ok(self.push(Node {
            op,
            args: args.to_vec(),
            dtype: d.dtype,
            shape,
            span,
        }))
    }
}
