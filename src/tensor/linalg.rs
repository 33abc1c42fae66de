//! Linear algebra and convolution entry points: `matmul dot outer conv1d conv2d
//! max_pool2d avg_pool2d` (shape checks, autograd recording), plus the backward
//! helpers the gradient rules call.

use super::dtype::with_float;
use super::dtype::DType;
use super::kernels::conv::{self, ConvFloat, ConvParams, Geom, PoolParams};
use super::kernels::matmul::bmm;
use super::kernels::pool2d;
use super::shape::{broadcast_shapes, fmt_shape};
use super::{err, Tensor};
use crate::autograd::{self, BackwardOp, OpSaved, Saved};
use crate::error::{ErrorKind, Result};
use crate::ir::record as trace;
use crate::ir::record_op::record_op;
use crate::ir::IrOp;

fn shape_err(msg: String) -> crate::error::Error {
    err(ErrorKind::ShapeError, msg)
}

/// `a @ b` with PyTorch's 1-D / 2-D / batched rules.
pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let since = autograd::next_node_id();
    let mut lifted = None;
    let out = record_op(
        &[a, b],
        |_| IrOp::Matmul,
        || matmul_eager(a, b, &mut lifted),
    )?;
    // A 1-D operand is unsqueezed inside the scope (unrecorded), but the backward rule
    // saves that view: record it as a graph value so compiled autograd can read it.
    if let Some((src, view)) = lifted {
        let ir = || IrOp::Reshape {
            shape: view.shape().into(),
        };
        trace::record_after(ir, &[&src], &view);
    }
    // PyTorch's node for a 1-D operand (Kiln's is the squeeze or sum around a product).
    let name = match (a.ndim(), b.ndim()) {
        (1, 1) => None, // dot names its own
        (2, 1) => Some("MvBackward0"),
        (1, 2) => Some("SqueezeBackward4"),
        (1, _) | (_, 1) => Some("UnsafeViewBackward0"),
        _ => None,
    };
    if let Some(name) = name {
        autograd::names::name_composite(&out, since, name);
    }
    Ok(out)
}

/// `a @ b`; a 1-D operand's unsqueezed view (with its source) is left in `lifted`.
fn matmul_eager(a: &Tensor, b: &Tensor, lifted: &mut Option<(Tensor, Tensor)>) -> Result<Tensor> {
    let inner_err = |ka: usize, kb: usize| {
        shape_err(format!(
            "matmul: {} @ {}: inner dimensions {ka} and {kb} differ",
            fmt_shape(a.shape()),
            fmt_shape(b.shape())
        ))
    };
    if a.ndim() == 0 || b.ndim() == 0 {
        return Err(shape_err(format!(
            "matmul: {} @ {}: both arguments need at least 1 dimension",
            fmt_shape(a.shape()),
            fmt_shape(b.shape())
        )));
    }
    let ka = a.shape()[a.ndim() - 1];
    let kb = if b.ndim() == 1 {
        b.shape()[0]
    } else {
        b.shape()[b.ndim() - 2]
    };
    if ka != kb {
        return Err(inner_err(ka, kb));
    }
    match (a.ndim(), b.ndim()) {
        (1, 1) => dot(a, b),
        (1, _) => {
            let a2 = a.unsqueeze(0)?;
            let out = matmul(&a2, b)?.squeeze(Some(-2));
            *lifted = Some((a.clone(), a2));
            out
        }
        (_, 1) => {
            let b2 = b.unsqueeze(1)?;
            let out = matmul(a, &b2)?.squeeze(Some(-1));
            *lifted = Some((b.clone(), b2));
            out
        }
        _ => mm(a, b),
    }
}

fn mm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (na, nb) = (a.ndim(), b.ndim());
    let batch = broadcast_shapes("matmul", &a.shape()[..na - 2], &b.shape()[..nb - 2])?;
    let (da, db) = (a.dtype(), b.dtype());
    if da.is_float() && db.is_float() && da != db {
        return Err(err(
            ErrorKind::RuntimeError,
            format!(
                "expected m1 and m2 to have the same dtype, but got: {} != {}",
                da.name(),
                db.name()
            ),
        ));
    }
    // Ints with a float operand compute in float32 (Kiln's leniency); int32/uint8
    // products run in int64 and wrap back as PyTorch's do.
    let dt = match da.promote(db) {
        DType::F64 => DType::F64,
        DType::F32 => DType::F32,
        DType::I32 | DType::I64 | DType::U8 | DType::Bool => DType::I64,
    };
    let out = bmm(&a.cast(dt)?, &b.cast(dt)?, &batch)?;
    let out = match da.promote(db) {
        d @ (DType::I32 | DType::U8) => out.cast(d)?,
        DType::F32 | DType::F64 | DType::I64 | DType::Bool => out,
    };
    if dt.is_float() && autograd::needs_grad(&[a, b]) {
        let saved = OpSaved {
            a: Some(Saved::new(a)),
            b: Some(Saved::new(b)),
            ..OpSaved::default()
        };
        let node = BackwardOp::Op {
            op: IrOp::Matmul,
            saved,
        };
        autograd::record(&out, node, &[a, b]);
    }
    Ok(out)
}

/// `dot(a, b)` of two 1-D tensors.
pub fn dot(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.ndim() != 1 || b.ndim() != 1 || a.shape() != b.shape() {
        return Err(shape_err(format!(
            "dot: expected two 1-D tensors of the same size, got {} and {}",
            fmt_shape(a.shape()),
            fmt_shape(b.shape())
        )));
    }
    let since = autograd::next_node_id();
    let out = a.mul(b)?.sum(&[], false)?;
    autograd::names::name_composite(&out, since, "DotBackward0");
    Ok(out)
}

/// `outer(a, b)` of two 1-D tensors.
pub fn outer(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.ndim() != 1 || b.ndim() != 1 {
        return Err(shape_err(format!(
            "outer: expected two 1-D tensors, got {} and {}",
            fmt_shape(a.shape()),
            fmt_shape(b.shape())
        )));
    }
    a.unsqueeze(1)?.mul(&b.unsqueeze(0)?)
}

fn geom(op: &str, x: &[usize], kh: usize, kw: usize, p: ConvParams) -> Result<Geom> {
    let (h, w) = (x[2], x[3]);
    Ok(Geom {
        c: x[1],
        h,
        w,
        kh,
        kw,
        oh: conv::out_size(op, h, kh, p.stride.0, p.padding.0, p.dilation.0)?,
        ow: conv::out_size(op, w, kw, p.stride.1, p.padding.1, p.dilation.1)?,
        p,
    })
}

/// `conv2d(x [N,C,H,W], w [O,C,KH,KW], bias [O]?)`.
pub fn conv2d(x: &Tensor, w: &Tensor, bias: Option<&Tensor>, p: ConvParams) -> Result<Tensor> {
    let mut args = vec![x, w];
    args.extend(bias);
    let ir = |_: &Tensor| IrOp::Conv2d {
        params: p,
        bias: bias.is_some(),
    };
    record_op(&args, ir, || conv2d_eager(x, w, bias, p))
}

/// The dtype the conv and pooling kernels compute in: float64 when an operand is
/// float64 (then all must be, as PyTorch's), else float32 (ints convert, Kiln's
/// leniency).
pub(super) fn kernel_dtype(op: &str, ts: &[&Tensor]) -> Result<DType> {
    let f64s = ts.iter().filter(|t| t.dtype() == DType::F64).count();
    if f64s == 0 {
        return Ok(DType::F32);
    }
    match ts.iter().find(|t| t.dtype() != DType::F64) {
        Some(other) => Err(err(
            ErrorKind::RuntimeError,
            format!(
                "{op}: input type (double) and weight type ({}) should be the same",
                other.dtype().torch_name()
            ),
        )),
        None => Ok(DType::F64),
    }
}

/// Runs `f` on the elements of each tensor converted to `T` (borrowed when already of
/// `T` and contiguous; otherwise one row-major copy of that tensor alone).
pub(super) fn with_elems<T: ConvFloat, R>(
    ts: &[&Tensor],
    f: impl FnOnce(&[&[T]]) -> Result<R>,
) -> Result<R> {
    let dense = |t: &&Tensor| -> Result<Tensor> {
        let c = t.cast(T::DTYPE)?;
        if c.is_contiguous() {
            Ok(c)
        } else {
            c.contiguous_copy()
        }
    };
    let cast: Vec<Tensor> = ts.iter().map(dense).collect::<Result<_>>()?;
    let refs: Vec<_> = cast.iter().map(|t| t.storage().borrow()).collect();
    let mut slices: Vec<&[T]> = Vec::with_capacity(ts.len());
    for (t, b) in cast.iter().zip(&refs) {
        let data = T::slice(b).unwrap_or(&[]);
        let range = t.offset()..t.offset() + t.numel();
        slices.push(data.get(range).ok_or_else(|| {
            err(
                ErrorKind::RuntimeError,
                "internal: a contiguous tensor's elements are out of its storage",
            )
        })?);
    }
    f(&slices)
}

fn conv2d_eager(x: &Tensor, w: &Tensor, bias: Option<&Tensor>, p: ConvParams) -> Result<Tensor> {
    let dt = kernel_dtype("conv2d", &[x, w])?;
    if x.ndim() == 3 {
        return conv2d(&x.unsqueeze(0)?, w, bias, p)?.squeeze(Some(0));
    }
    if x.ndim() != 4 || w.ndim() != 4 || x.shape()[1] != w.shape()[1] {
        return Err(shape_err(format!(
            "conv2d: input {} and weight {} do not match (expected [N, C, H, W] and [O, C, KH, KW])",
            fmt_shape(x.shape()),
            fmt_shape(w.shape())
        )));
    }
    let g = geom("conv2d", x.shape(), w.shape()[2], w.shape()[3], p)?;
    let (n, o) = (x.shape()[0], w.shape()[0]);
    let shape = [n, o, g.oh, g.ow];
    let out = with_float!(dt, T => Tensor::from_vec(
        with_elems::<T, _>(&[x, w], |s| conv::conv2d_forward(s[0], s[1], n, o, &g))?,
        &shape
    ));
    if autograd::needs_grad(&[x, w]) {
        let saved = OpSaved {
            a: Some(Saved::new(x)),
            b: Some(Saved::new(w)),
            ..OpSaved::default()
        };
        // the bias is added after, as its own op
        let op = IrOp::Conv2d {
            params: p,
            bias: false,
        };
        let node = BackwardOp::Op { op, saved };
        autograd::record(&out, node, &[x, w]);
    }
    match bias {
        Some(b) => out.add(&b.reshape(&[1, -1, 1, 1])?),
        None => Ok(out),
    }
}

/// conv2d's gradients (grad_x if `need.0`, grad_w if `need.1`) for the rule table.
pub fn conv2d_grads(
    x: &Tensor,
    w: &Tensor,
    g: &Tensor,
    p: ConvParams,
    need: (bool, bool),
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let gm = geom("conv2d", x.shape(), w.shape()[2], w.shape()[3], p)?;
    let (n, o) = (x.shape()[0], w.shape()[0]);
    let dt = kernel_dtype("conv2d", &[x, w, g])?;
    with_float!(dt, T => {
        let (gx, gw) = with_elems::<T, _>(&[x, w, g], |s| {
            conv::conv2d_backward(s[0], s[1], s[2], (n, o), &gm, need)
        })?;
        Ok((
            gx.map(|v| Tensor::from_vec(v, x.shape())),
            gw.map(|v| Tensor::from_vec(v, w.shape())),
        ))
    })
}

/// `conv1d(x [N,C,L], w [O,C,K], bias?)` as a conv2d over a height-1 image.
pub fn conv1d(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    stride: usize,
    padding: usize,
    dilation: usize,
) -> Result<Tensor> {
    if x.ndim() == 2 {
        return conv1d(&x.unsqueeze(0)?, w, bias, stride, padding, dilation)?.squeeze(Some(0));
    }
    // checked here so the errors name conv1d, not the conv2d it runs as
    if x.ndim() != 3 || w.ndim() != 3 || x.shape()[1] != w.shape()[1] {
        return Err(shape_err(format!(
            "conv1d: input {} and weight {} do not match (expected [N, C, L] and [O, C, K])",
            fmt_shape(x.shape()),
            fmt_shape(w.shape())
        )));
    }
    conv::out_size(
        "conv1d",
        x.shape()[2],
        w.shape()[2],
        stride,
        padding,
        dilation,
    )?;
    let p = ConvParams {
        stride: (1, stride),
        padding: (0, padding),
        dilation: (1, dilation),
    };
    conv2d(&x.unsqueeze(2)?, &w.unsqueeze(2)?, bias, p)?.squeeze(Some(2))
}

fn pool_geom(op: &str, x: &Tensor, p: PoolParams) -> Result<Geom> {
    if x.ndim() != 4 {
        return Err(shape_err(format!(
            "{op}: expected a 3-D or 4-D input, got {}",
            fmt_shape(x.shape())
        )));
    }
    if p.padding.0 * 2 > p.kernel.0 || p.padding.1 * 2 > p.kernel.1 {
        return Err(err(
            ErrorKind::ValueError,
            format!("{op}: padding should be at most half of kernel size"),
        ));
    }
    let cp = ConvParams {
        stride: p.stride,
        padding: p.padding,
        dilation: (1, 1),
    };
    geom(op, x.shape(), p.kernel.0, p.kernel.1, cp)
}

/// `max_pool2d(x, kernel, stride, padding)` on `[N, C, H, W]` (or `[C, H, W]`).
pub fn max_pool2d(x: &Tensor, p: PoolParams) -> Result<Tensor> {
    record_op(
        &[x],
        |_| IrOp::MaxPool2d { params: p },
        || max_pool2d_eager(x, p),
    )
}

fn max_pool2d_eager(x: &Tensor, p: PoolParams) -> Result<Tensor> {
    kernel_dtype("max_pool2d", &[x])?;
    if x.ndim() == 3 {
        return max_pool2d(&x.unsqueeze(0)?, p)?.squeeze(Some(0));
    }
    let (out, argmax) = max_pool2d_with_indices(x, p)?;
    if autograd::needs_grad(&[x]) {
        let saved = OpSaved {
            a: Some(Saved::new(x)),
            a_shape: x.shape().into(),
            aux: Some(argmax),
            ..OpSaved::default()
        };
        let node = BackwardOp::Op {
            op: IrOp::MaxPool2d { params: p },
            saved,
        };
        autograd::record(&out, node, &[x]);
    }
    Ok(out)
}

/// max_pool2d of a 4-D `x`, not recorded: the output and each window's flat argmax
/// within its plane (what eager's node keeps, and what a compiled graph holding the
/// backward too passes on to `max_pool2d_grad`).
pub fn max_pool2d_with_indices(x: &Tensor, p: PoolParams) -> Result<(Tensor, Tensor)> {
    let dt = kernel_dtype("max_pool2d", &[x])?;
    let g = pool_geom("max_pool2d", x, p)?;
    let planes = x.shape()[0] * x.shape()[1];
    let shape = [x.shape()[0], x.shape()[1], g.oh, g.ow];
    Ok(with_float!(dt, T => {
        let (v, arg) = with_elems::<T, _>(&[x], |s| pool2d::max_pool_forward(s[0], planes, &g))?;
        (Tensor::from_vec(v, &shape), Tensor::from_vec(arg, &shape))
    }))
}

/// max_pool2d's input gradient with each window's argmax recomputed from the 4-D `x`
/// (the IR's `max_pool2d_backward`: a graph holds no argmax tensor).
pub fn max_pool2d_grad_of(x: &Tensor, p: PoolParams, g: &Tensor) -> Result<Tensor> {
    let (_, argmax) = max_pool2d_with_indices(x, p)?;
    max_pool2d_grad_checked(x.shape(), &argmax, g)
}

/// `max_pool2d_grad` once `g` is checked to have the shape of the pooled output (the
/// argmax's).
pub fn max_pool2d_grad_checked(in_shape: &[usize], argmax: &Tensor, g: &Tensor) -> Result<Tensor> {
    if g.shape() != argmax.shape() {
        return Err(err(
            ErrorKind::ShapeError,
            format!(
                "max_pool2d backward: gradient of shape {}, expected {}",
                fmt_shape(g.shape()),
                fmt_shape(argmax.shape())
            ),
        ));
    }
    max_pool2d_grad(in_shape, argmax, g)
}

/// `avg_pool2d(x, kernel, stride, padding)` (padding counted in the average).
pub fn avg_pool2d(x: &Tensor, p: PoolParams) -> Result<Tensor> {
    record_op(
        &[x],
        |_| IrOp::AvgPool2d { params: p },
        || avg_pool2d_eager(x, p),
    )
}

fn avg_pool2d_eager(x: &Tensor, p: PoolParams) -> Result<Tensor> {
    let dt = kernel_dtype("avg_pool2d", &[x])?;
    if x.ndim() == 3 {
        return avg_pool2d(&x.unsqueeze(0)?, p)?.squeeze(Some(0));
    }
    let g = pool_geom("avg_pool2d", x, p)?;
    let planes = x.shape()[0] * x.shape()[1];
    let shape = [x.shape()[0], x.shape()[1], g.oh, g.ow];
    let out = with_float!(dt, T => Tensor::from_vec(
        with_elems::<T, _>(&[x], |s| pool2d::avg_pool_forward(s[0], planes, &g))?,
        &shape
    ));
    if autograd::needs_grad(&[x]) {
        let saved = OpSaved {
            a_shape: x.shape().into(),
            ..OpSaved::default()
        };
        let node = BackwardOp::Op {
            op: IrOp::AvgPool2d { params: p },
            saved,
        };
        autograd::record(&out, node, &[x]);
    }
    Ok(out)
}

/// Pooling gradients for the rule table.
pub fn max_pool2d_grad(in_shape: &[usize], argmax: &Tensor, g: &Tensor) -> Result<Tensor> {
    let planes = in_shape[0] * in_shape[1];
    let gm = Geom {
        c: in_shape[1],
        h: in_shape[2],
        w: in_shape[3],
        kh: 1,
        kw: 1,
        oh: g.shape()[2],
        ow: g.shape()[3],
        p: ConvParams {
            stride: (1, 1),
            padding: (0, 0),
            dilation: (1, 1),
        },
    };
    let dt = kernel_dtype("max_pool2d", &[g])?;
    // the argmax read in place (no copy; it is int64 as max_pool2d_with_indices makes it)
    argmax.cast(DType::I64)?.read(|arg: &[i64]| {
        Ok(with_float!(dt, T => Tensor::from_vec(
            with_elems::<T, _>(&[g], |s| pool2d::max_pool_backward(s[0], arg, planes, &gm))?,
            in_shape
        )))
    })?
}

pub fn avg_pool2d_grad(in_shape: &[usize], p: PoolParams, g: &Tensor) -> Result<Tensor> {
    let cp = ConvParams {
        stride: p.stride,
        padding: p.padding,
        dilation: (1, 1),
    };
    let gm = geom("avg_pool2d", in_shape, p.kernel.0, p.kernel.1, cp)?;
    let planes = in_shape[0] * in_shape[1];
    let dt = kernel_dtype("avg_pool2d", &[g])?;
    Ok(with_float!(dt, T => Tensor::from_vec(
        with_elems::<T, _>(&[g], |s| pool2d::avg_pool_backward(s[0], planes, &gm))?,
        in_shape
    )))
}
