//! Composite elementwise ops, reductions and sorting ops of PyTorch's API, written over
//! the primitives (so autograd, `@compile` capture and ONNX see only primitives): `isnan
//! isinf isfinite nan_to_num isclose fmod atan2 hypot lerp logit amax amin
//! count_nonzero cumprod cummax cummin logcumsumexp sort topk kthvalue median mode
//! quantile`. Data-dependent indices come from tensor/sorting.rs.

use super::{binary, where_, BinaryOp, UnaryOp};
use crate::autograd::{self, BackwardOp, More, OpSaved, Saved};
use crate::error::{ErrorKind, Result};
use crate::ir::record_op::record_const;
use crate::ir::IrOp;
use crate::tensor::dtype::{float_for, DType, Scalar};
use crate::tensor::shape::{norm_dim, norm_dims};
use crate::tensor::sorting::sort_indices;
use crate::tensor::{err, Tensor};

/// A constant int64 tensor (a graph constant inside a capture).
pub fn index_const(v: Vec<i64>, shape: &[usize]) -> Result<Tensor> {
    record_const(|| crate::tensor::creation::from_i64(v, shape))
}

fn s(v: f64) -> Tensor {
    Tensor::scalar(Scalar::Float(v))
}

pub fn isnan(x: &Tensor) -> Result<Tensor> {
    binary(BinaryOp::Ne, x, x)
}

pub fn isinf(x: &Tensor) -> Result<Tensor> {
    x.un(UnaryOp::Abs)?.cmp_s(BinaryOp::Eq, f64::INFINITY)
}

pub fn isfinite(x: &Tensor) -> Result<Tensor> {
    if !x.dtype().is_float() {
        let shape = x.shape().to_vec();
        return record_const(|| {
            crate::tensor::creation::full(&shape, Scalar::Bool(true), Some(DType::Bool))
        });
    }
    x.un(UnaryOp::Abs)?.cmp_s(BinaryOp::Lt, f64::INFINITY)
}

/// `nan_to_num(x, nan=0.0, posinf=None, neginf=None)` (None: float32's extremes).
pub fn nan_to_num(
    x: &Tensor,
    nan: f64,
    posinf: Option<f64>,
    neginf: Option<f64>,
) -> Result<Tensor> {
    if !x.dtype().is_float() {
        return super::clone(x);
    }
    let pos = posinf.unwrap_or(f64::from(f32::MAX));
    let neg = neginf.unwrap_or(f64::from(f32::MIN));
    let y = where_(&isnan(x)?, &s(nan), x)?;
    let y = where_(&x.cmp_s(BinaryOp::Eq, f64::INFINITY)?, &s(pos), &y)?;
    where_(&x.cmp_s(BinaryOp::Eq, f64::NEG_INFINITY)?, &s(neg), &y)
}

/// `isclose(a, b, rtol, atol, equal_nan)`: `|a - b| <= atol + rtol * |b|`, equal
/// infinities close.
pub fn isclose(a: &Tensor, b: &Tensor, rtol: f64, atol: f64, equal_nan: bool) -> Result<Tensor> {
    let diff = a.sub(b)?.un(UnaryOp::Abs)?;
    let tol = b.un(UnaryOp::Abs)?.mul_s(rtol)?.add_s(atol)?;
    let close = binary(BinaryOp::Le, &diff, &tol)?;
    let close = binary(BinaryOp::Or, &close, &binary(BinaryOp::Eq, a, b)?)?;
    if equal_nan {
        let both = binary(BinaryOp::And, &isnan(a)?, &isnan(b)?)?;
        return binary(BinaryOp::Or, &close, &both);
    }
    Ok(close)
}

/// `fmod(a, b)`: the remainder with the sign of `a` (from Python's remainder, exact).
pub fn fmod(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let r = binary(BinaryOp::Rem, a, b)?;
    let nonzero = r.cmp_s(BinaryOp::Ne, 0.0)?;
    let sign_differs = binary(
        BinaryOp::Xor,
        &r.cmp_s(BinaryOp::Lt, 0.0)?,
        &a.cmp_s(BinaryOp::Lt, 0.0)?,
    )?;
    let fix = binary(BinaryOp::And, &nonzero, &sign_differs)?;
    where_(&fix, &r.sub(b)?, &r)
}

/// `atan2(y, x)` in (-pi, pi].
pub fn atan2(y: &Tensor, x: &Tensor) -> Result<Tensor> {
    let dt = float_for(y.dtype().promote(x.dtype()));
    let (y, x) = (y.cast(dt)?, x.cast(dt)?);
    let x_zero = x.cmp_s(BinaryOp::Eq, 0.0)?;
    let safe_x = where_(&x_zero, &s(1.0), &x)?;
    let base = y.div(&safe_x)?.un(UnaryOp::Atan)?;
    let pi = std::f64::consts::PI;
    // x < 0: +pi for y >= 0, -pi for y < 0.
    let shift = where_(&y.cmp_s(BinaryOp::Lt, 0.0)?, &s(-pi), &s(pi))?;
    let left = base.add(&shift)?;
    let vertical = y.un(UnaryOp::Sign)?.mul_s(pi / 2.0)?;
    let r = where_(&x.cmp_s(BinaryOp::Lt, 0.0)?, &left, &base)?;
    where_(&x_zero, &vertical, &r)
}

pub fn hypot(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.mul(a)?.add(&b.mul(b)?)?.un(UnaryOp::Sqrt)
}

/// `lerp(start, end, weight)`: `start + weight * (end - start)`.
pub fn lerp(start: &Tensor, end: &Tensor, weight: &Tensor) -> Result<Tensor> {
    start.add(&weight.mul(&end.sub(start)?)?)
}

/// `logit(x, eps=None)`: `log(x / (1 - x))`, x clamped to [eps, 1 - eps] when given.
pub fn logit(x: &Tensor, eps: Option<f64>) -> Result<Tensor> {
    let x = match eps {
        Some(e) => super::clamp(x, Some(e), Some(1.0 - e))?,
        None => x.cast(float_for(x.dtype()))?,
    };
    x.div(&x.rsub_s(1.0)?)?.un(UnaryOp::Log)
}

/// `amax`/`amin` over `dims` (all when empty): values only.
pub fn amax(x: &Tensor, dims: &[i64], keepdim: bool, is_min: bool) -> Result<Tensor> {
    let name = if is_min { "amin" } else { "amax" };
    if x.ndim() == 0 {
        return super::clone(x);
    }
    let mut ds = norm_dims(name, dims, x.ndim())?;
    ds.sort_unstable();
    ds.dedup();
    if let Some(&d) = ds.iter().find(|&&d| x.shape()[d] == 0) {
        return Err(err(
            ErrorKind::IndexError,
            format!("{name}(): Expected reduction dim {d} to have non-zero size."),
        ));
    }
    let since = crate::autograd::next_node_id();
    let mut out = x.clone();
    {
        // values only: the gradient is shared among each row's tied extremes (below)
        let _g = autograd::no_grad();
        for &d in ds.iter().rev() {
            out = out.extreme_dim(d as i64, true, is_min)?.0;
        }
    }
    if x.dtype().is_float() && autograd::needs_grad(&[x]) {
        let node = BackwardOp::Op {
            op: IrOp::ExtremeAll { is_min },
            saved: OpSaved {
                a: Some(Saved::new(x)),
                out: Some(Saved::output(&out)),
                more: More::Sizes(ds.clone()),
                ..OpSaved::default()
            },
        };
        autograd::record(&out, node, &[x]);
    }
    if !keepdim {
        let shape: Vec<i64> = (0..x.ndim())
            .filter(|i| !ds.contains(i))
            .map(|i| x.shape()[i] as i64)
            .collect();
        out = out.reshape(&shape)?;
    }
    let node = if is_min {
        "AminBackward0"
    } else {
        "AmaxBackward0"
    };
    crate::autograd::names::name_composite(&out, since, node);
    Ok(out)
}

/// `count_nonzero(x, dim=None)`.
pub fn count_nonzero(x: &Tensor, dims: &[i64]) -> Result<Tensor> {
    x.cmp_s(BinaryOp::Ne, 0.0)?
        .cast(DType::I64)?
        .sum(dims, false)
}

/// A scan along `dim`: `out[0] = x[0]`, `out[k] = step(out[k-1], x[k])`, as one op per
/// position (differentiable through `step`).
fn scan(
    x: &Tensor,
    dim: usize,
    mut step: impl FnMut(&Tensor, &Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    let n = x.shape()[dim];
    if n == 0 {
        return super::clone(x);
    }
    let mut acc = x.narrow(dim as i64, 0, 1)?;
    let mut parts = vec![acc.clone()];
    for k in 1..n {
        acc = step(&acc, &x.narrow(dim as i64, k as i64, 1)?)?;
        parts.push(acc.clone());
    }
    crate::tensor::views::cat(&parts, dim as i64)
}

fn scan_dim(op: &str, x: &Tensor, dim: i64) -> Result<(Tensor, usize)> {
    if x.ndim() == 0 {
        let d = norm_dim(op, dim, 0)?;
        return Ok((x.reshape(&[1])?, d));
    }
    Ok((x.clone(), norm_dim(op, dim, x.ndim())?))
}

/// `cumprod(x, dim)`.
pub fn cumprod(x: &Tensor, dim: i64) -> Result<Tensor> {
    let (v, d) = scan_dim("cumprod", x, dim)?;
    let v = if v.dtype() == DType::Bool {
        v.cast(DType::I64)?
    } else {
        v
    };
    let since = crate::autograd::next_node_id();
    let out = scan(&v, d, |a, b| a.mul(b))?.reshape(&shape_i64(x))?;
    crate::autograd::names::name_composite(&out, since, "CumprodBackward0");
    Ok(out)
}

/// `logcumsumexp(x, dim)`: `log(exp(acc) + exp(x))` computed stably at each step.
pub fn logcumsumexp(x: &Tensor, dim: i64) -> Result<Tensor> {
    let (v, d) = scan_dim("logcumsumexp", &x.cast(float_for(x.dtype()))?, dim)?;
    scan(&v, d, |a, b| {
        let m = binary(BinaryOp::Maximum, a, b)?;
        let m = where_(&isinf(&m)?, &s(0.0), &m.detached())?;
        a.sub(&m)?
            .un(UnaryOp::Exp)?
            .add(&b.sub(&m)?.un(UnaryOp::Exp)?)?
            .un(UnaryOp::Log)?
            .add(&m)
    })?
    .reshape(&shape_i64(x))
}

/// `cummax`/`cummin(x, dim)`: running values and the index where each was reached (the
/// latest among equal values, as PyTorch).
pub fn cumextreme(x: &Tensor, dim: i64, is_min: bool) -> Result<(Tensor, Tensor)> {
    let (v, d) = scan_dim(if is_min { "cummin" } else { "cummax" }, x, dim)?;
    let n = v.shape()[d];
    let mut shape = vec![1usize; v.ndim()];
    shape[d] = n;
    let pos = index_const((0..n as i64).collect(), &shape)?.expand(&shape_i64(&v))?;
    let stacked = crate::tensor::views::stack(&[v.clone(), pos.cast(v.dtype())?], -1)?;
    let cmp = if is_min { BinaryOp::Le } else { BinaryOp::Ge };
    let out = scan(&stacked, d, |acc, cur| {
        let (av, cv) = (acc.narrow(-1, 0, 1)?, cur.narrow(-1, 0, 1)?);
        let take = binary(BinaryOp::Or, &binary(cmp, &cv, &av)?, &isnan(&cv)?)?;
        let take = binary(BinaryOp::And, &take, &isnan(&av)?.un(UnaryOp::Not)?)?;
        where_(&take, cur, acc)
    })?;
    let values = out
        .narrow(-1, 0, 1)?
        .squeeze(Some(-1))?
        .reshape(&shape_i64(x))?;
    let idx = out
        .narrow(-1, 1, 1)?
        .squeeze(Some(-1))?
        .detached()
        .cast(DType::I64)?;
    Ok((values, idx.reshape(&shape_i64(x))?))
}

fn shape_i64(x: &Tensor) -> Vec<i64> {
    x.shape().iter().map(|&d| d as i64).collect()
}

/// `sort(x, dim, descending)`: (values, indices); the values carry the gradient.
pub fn sort(x: &Tensor, dim: i64, descending: bool) -> Result<(Tensor, Tensor)> {
    let idx = sort_indices(x, dim, descending)?;
    if x.ndim() == 0 {
        return Ok((super::clone(x)?, idx));
    }
    Ok((x.gather(dim, &idx)?, idx))
}

/// `topk(x, k, dim, largest, sorted)`.
pub fn topk(x: &Tensor, k: i64, dim: i64, largest: bool) -> Result<(Tensor, Tensor)> {
    let d = norm_dim("topk", dim, x.ndim())?;
    let n = if x.ndim() == 0 { 1 } else { x.shape()[d] };
    if k < 0 || k as usize > n {
        return Err(err(
            ErrorKind::RuntimeError,
            format!("topk(): selected index k out of range (k={k}, size {n} along dim {dim})"),
        ));
    }
    if x.ndim() == 0 {
        return sort(x, dim, largest);
    }
    let i = crate::tensor::sorting::topk_indices(x, dim, k as usize, largest)?;
    Ok((x.gather(d as i64, &i)?, i))
}

/// The `k`-th smallest (1-based) along `dim`: (values, indices).
pub fn kthvalue(x: &Tensor, k: i64, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    let d = norm_dim("kthvalue", dim, x.ndim())?;
    let n = if x.ndim() == 0 { 1 } else { x.shape()[d] };
    if k < 1 || k as usize > n {
        return Err(err(
            ErrorKind::RuntimeError,
            format!(
                "kthvalue(): selected number k out of range for dimension {dim} (k={k}, size {n})"
            ),
        ));
    }
    let (v, i) = sort(x, dim, false)?;
    if x.ndim() == 0 {
        return Ok((v, i));
    }
    let (v, i) = (v.narrow(d as i64, k - 1, 1)?, i.narrow(d as i64, k - 1, 1)?);
    if keepdim {
        return Ok((v, i));
    }
    Ok((v.squeeze(Some(d as i64))?, i.squeeze(Some(d as i64))?))
}

/// `median(x, dim)`: the lower median (index `(n - 1) / 2` of the sorted values).
pub fn median_dim(x: &Tensor, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    let d = norm_dim("median", dim, x.ndim())?;
    let n = if x.ndim() == 0 { 1 } else { x.shape()[d] };
    if n == 0 {
        return Err(err(
            ErrorKind::IndexError,
            "median(): Expected reduction dim to have non-zero size.",
        ));
    }
    kthvalue(x, (n as i64 - 1) / 2 + 1, dim, keepdim)
}

/// `median(x)` of all elements (the lower median; NaN when one is NaN or `x` is empty).
pub fn median_all(x: &Tensor) -> Result<Tensor> {
    if x.numel() == 0 {
        // PyTorch: NaN for an empty float tensor.
        return Ok(s(f64::NAN));
    }
    Ok(median_dim(&x.reshape(&[-1])?, 0, false)?.0)
}

/// `mode(x, dim)`: the most frequent value (the smallest among ties) and the index of
/// its last occurrence.
pub fn mode(x: &Tensor, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    let d = norm_dim("mode", dim, x.ndim())?;
    if x.ndim() == 0 {
        return Ok((super::clone(x)?, index_const(vec![0], &[])?));
    }
    let idx = crate::tensor::sorting::mode_indices(x, d)?;
    let values = x.gather(d as i64, &idx)?;
    if keepdim {
        return Ok((values, idx));
    }
    Ok((
        values.squeeze(Some(d as i64))?,
        idx.squeeze(Some(d as i64))?,
    ))
}

/// `quantile(x, q, dim=None, keepdim=False)` with linear interpolation; `q` a list of
/// levels in [0, 1] (a 0-d `q` gives no leading dim).
pub fn quantile(
    x: &Tensor,
    q: &[f64],
    scalar_q: bool,
    dim: Option<i64>,
    keepdim: bool,
) -> Result<Tensor> {
    if q.iter().any(|v| !(0.0..=1.0).contains(v)) {
        return Err(err(
            ErrorKind::RuntimeError,
            "quantile() q values must be in the range [0, 1]",
        ));
    }
    if !x.dtype().is_float() {
        return Err(err(
            ErrorKind::RuntimeError,
            format!(
                "quantile() input tensor must be either float or double dtype (got {})",
                x.dtype().name()
            ),
        ));
    }
    let (src, d) = match dim {
        None => (x.reshape(&[-1])?, 0),
        Some(d) => (x.clone(), norm_dim("quantile", d, x.ndim())?),
    };
    let n = src.shape().get(d).copied().unwrap_or(1);
    if n == 0 {
        return Err(err(
            ErrorKind::RuntimeError,
            "quantile() input tensor must be non-empty",
        ));
    }
    let (sorted, _) = sort(&src, d as i64, false)?;
    let mut outs = vec![];
    for &level in q {
        let pos = level * (n - 1) as f64;
        let (lo, hi) = (pos.floor() as i64, pos.ceil() as i64);
        let a = sorted.narrow(d as i64, lo, 1)?;
        let b = sorted.narrow(d as i64, hi, 1)?;
        let v = a.add(&b.sub(&a)?.mul_s(pos - lo as f64)?)?;
        let v = match (dim, keepdim) {
            (None, true) => v.reshape(&vec![1; x.ndim()])?,
            (None, false) => v.reshape(&[])?,
            (Some(_), true) => v,
            (Some(_), false) => v.squeeze(Some(d as i64))?,
        };
        outs.push(v);
    }
    if scalar_q {
        return Ok(outs.remove(0));
    }
    crate::tensor::views::stack(&outs, 0)
}

/// `round(x, decimals=d)` as torch's kernel: `nearbyint(x * 10^d) / 10^d` in x's float
/// dtype (`d < 0`: `nearbyint(x / 10^-d) * 10^-d`), torch's node `RoundBackward1` (a
/// zero gradient, through round's).
pub fn round_decimals(x: &Tensor, d: i64) -> Result<Tensor> {
    if d == 0 {
        return super::unary(UnaryOp::Round, x);
    }
    if !x.dtype().is_float() {
        return Err(err(
            ErrorKind::RuntimeError,
            format!(
                "round(): decimals is only supported for floating point tensors, got {}",
                x.dtype()
            ),
        ));
    }
    let since = autograd::next_node_id();
    let p = Scalar::Float(10f64.powi(d.unsigned_abs().min(400) as i32));
    let scaled = super::binary_scalar(
        if d > 0 { BinaryOp::Mul } else { BinaryOp::Div },
        x,
        p,
        false,
    )?;
    let r = super::unary(UnaryOp::Round, &scaled)?;
    let out = super::binary_scalar(
        if d > 0 { BinaryOp::Div } else { BinaryOp::Mul },
        &r,
        p,
        false,
    )?;
    autograd::names::name_composite(&out, since, "RoundBackward1");
    Ok(out)
}

/// `div(a, b, rounding_mode="floor" | "trunc")`: floor is `floor_divide`; trunc is the
/// true quotient truncated for floats (torch's kernel), and for integers the floor quotient moved one
/// toward zero where it is negative and inexact (exact at any int64). torch's node
/// `DivBackward2` (a zero gradient).
pub fn div_rounding(a: &Tensor, b: &Tensor, floor: bool) -> Result<Tensor> {
    let since = autograd::next_node_id();
    let q = binary(BinaryOp::FloorDiv, a, b)?;
    let out = if floor {
        q
    } else if q.dtype().is_float() {
        // the truncated quotient, differentiated as floor_divide (zero gradients, +0
        // as torch's; through `/` they would take the divisor's sign)
        let t = super::unary(
            UnaryOp::Trunc,
            &binary(BinaryOp::Div, &a.detached(), &b.detached())?,
        )?;
        where_(&Tensor::scalar(Scalar::Bool(false)), &q, &t)?
    } else {
        let inexact = binary(BinaryOp::Rem, a, b)?.cmp_s(BinaryOp::Ne, 0.0)?;
        let negative = q.cmp_s(BinaryOp::Lt, 0.0)?;
        let fix = binary(BinaryOp::And, &inexact, &negative)?.cast(q.dtype())?;
        binary(BinaryOp::Add, &q, &fix)?
    };
    autograd::names::name_composite(&out, since, "DivBackward2");
    Ok(out)
}

/// `clamp(x, min, max)` with tensor bounds (either may be absent): torch's gradient
/// rule (x where `min <= x <= max`, each bound where it clamps) through two `where`s,
/// `min` applied first (so `min > max` gives `max`, as torch's); node `ClampBackward0`.
pub fn clamp_tensors(x: &Tensor, min: Option<&Tensor>, max: Option<&Tensor>) -> Result<Tensor> {
    let since = autograd::next_node_id();
    let mut out = x.clone();
    if let Some(lo) = min {
        out = where_(&binary(BinaryOp::Lt, &out, lo)?, lo, &out)?;
    }
    if let Some(hi) = max {
        out = where_(&binary(BinaryOp::Gt, &out, hi)?, hi, &out)?;
    }
    if min.is_none() && max.is_none() {
        return Err(err(
            ErrorKind::RuntimeError,
            "clamp: At least one of 'min' or 'max' must not be None",
        ));
    }
    autograd::names::name_composite(&out, since, "ClampBackward0");
    Ok(out)
}
