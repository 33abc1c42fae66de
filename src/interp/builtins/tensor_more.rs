//! Tensor methods of PyTorch's API beyond the core set (issue 22): elementwise tests
//! and composites (`isnan isclose fmod atan2 lerp ...`), reductions (`amax aminmax
//! cumprod cummax median mode quantile ...`), sorting (`sort argsort topk kthvalue
//! unique ...`), shape and indexing (`flip roll unbind tril diagonal scatter index_add
//! take ...`), products (`bmm mv addmm baddbmm kron cross ...`), in-place variants and
//! tensor factories (`new_zeros ...`). The computations are ops/more.rs and
//! ops/shape_more.rs.

use super::tensor::{float_of, int_list, int_of, shape_args, te, tensor_or_scalar, Args};
use crate::interp::value::Value;
use crate::interp::{type_err, R};
use crate::ops::{more, shape_more as sm, BinaryOp};
use crate::tensor::{linalg, sorting, Tensor};

/// The method names this file handles (for `hasattr` and completion).
pub const MORE_METHODS: &[&str] = &[
    "isnan",
    "isinf",
    "isfinite",
    "nan_to_num",
    "isclose",
    "allclose",
    "equal",
    "fmod",
    "atan2",
    "arctan2",
    "hypot",
    "lerp",
    "logit",
    "true_divide",
    "amax",
    "amin",
    "aminmax",
    "count_nonzero",
    "cumprod",
    "cummax",
    "cummin",
    "logcumsumexp",
    "median",
    "mode",
    "quantile",
    "sort",
    "argsort",
    "topk",
    "kthvalue",
    "unique",
    "bincount",
    "histc",
    "unflatten",
    "swapaxes",
    "swapdims",
    "movedim",
    "moveaxis",
    "broadcast_to",
    "unbind",
    "flip",
    "roll",
    "repeat_interleave",
    "tile",
    "tril",
    "triu",
    "diag",
    "diagonal",
    "diag_embed",
    "trace",
    "scatter",
    "index_add",
    "masked_select",
    "nonzero",
    "argwhere",
    "take",
    "take_along_dim",
    "bmm",
    "mv",
    "vdot",
    "inner",
    "addmm",
    "baddbmm",
    "kron",
    "cross",
    "dist",
    "nelement",
    "element_size",
    "stride",
    "storage_offset",
    "is_contiguous",
    "type_as",
    "new_zeros",
    "new_ones",
    "new_full",
    "new_empty",
    "new_tensor",
    "detach_",
    "exp_",
    "masked_fill_",
    "index_add_",
    "scatter_",
    "scatter_add_",
    "uniform_",
    "normal_",
    "bernoulli_",
    "random_",
    "is_floating_point",
];

pub fn tv(r: crate::Result<Tensor>) -> R<Value> {
    r.map(Value::Tensor).map_err(te)
}

fn pair(r: crate::Result<(Tensor, Tensor)>) -> R<Value> {
    let (a, b) = r.map_err(te)?;
    Ok(Value::tuple(vec![Value::Tensor(a), Value::Tensor(b)]))
}

fn tuple_of(ts: Vec<Tensor>) -> Value {
    Value::tuple(ts.into_iter().map(Value::Tensor).collect())
}

/// A tensor or a number (as a 0-d tensor of the number's kind).
pub fn operand(a: &Args, i: usize, name: &str) -> R<Tensor> {
    tensor_or_scalar(a.required(i, name)?, a.fname)
}

fn dim_or(a: &Args, i: usize, default: i64) -> R<i64> {
    Ok(a.int(i, "dim")?.unwrap_or(default))
}

/// `dim=` as an optional list (`None`/absent: every dim).
fn dims_opt(a: &Args, i: usize) -> R<Vec<i64>> {
    a.dims(i)
}

/// Tensor methods of this file (None: not one of them).
pub fn more_method(t: &Tensor, name: &str, a: &Args) -> R<Option<Value>> {
    if let Some(v) = elementwise(t, name, a)? {
        return Ok(Some(v));
    }
    if let Some(v) = reductions(t, name, a)? {
        return Ok(Some(v));
    }
    if let Some(v) = shapes(t, name, a)? {
        return Ok(Some(v));
    }
    if let Some(v) = products(t, name, a)? {
        return Ok(Some(v));
    }
    super::tensor_more_misc::misc(t, name, a)
}

fn elementwise(t: &Tensor, name: &str, a: &Args) -> R<Option<Value>> {
    let v = match name {
        "isnan" | "isinf" | "isfinite" => {
            a.check(0, &[])?;
            tv(match name {
                "isnan" => more::isnan(t),
                "isinf" => more::isinf(t),
                _ => more::isfinite(t),
            })?
        }
        "nan_to_num" => {
            a.check(3, &["nan", "posinf", "neginf"])?;
            let nan = a.float(0, "nan")?.unwrap_or(0.0);
            tv(more::nan_to_num(
                t,
                nan,
                a.float(1, "posinf")?,
                a.float(2, "neginf")?,
            ))?
        }
        "isclose" | "allclose" => {
            a.check(4, &["other", "rtol", "atol", "equal_nan"])?;
            let o = operand(a, 0, "other")?;
            let rtol = a.float(1, "rtol")?.unwrap_or(1e-5);
            let atol = a.float(2, "atol")?.unwrap_or(1e-8);
            let c = more::isclose(t, &o, rtol, atol, a.flag(3, "equal_nan", false)?).map_err(te)?;
            if name == "isclose" {
                Value::Tensor(c)
            } else {
                crate::ir::record::graph_break(crate::ir::breaks::BreakReason::TensorToPython(
                    "allclose",
                ));
                Value::Bool(c.to_vec::<bool>().map_err(te)?.iter().all(|&b| b))
            }
        }
        "equal" => {
            a.check(1, &["other"])?;
            let o = a.tensor(0, "other")?;
            crate::ir::record::graph_break(crate::ir::breaks::BreakReason::TensorToPython("equal"));
            let same = o.shape() == t.shape()
                && crate::ops::binary(BinaryOp::Eq, t, &o)
                    .and_then(|c| c.to_vec::<bool>())
                    .map_err(te)?
                    .iter()
                    .all(|&b| b);
            Value::Bool(same)
        }
        "fmod" | "atan2" | "arctan2" | "hypot" | "true_divide" => {
            a.check(1, &["other"])?;
            let o = operand(a, 0, "other")?;
            tv(match name {
                "fmod" => more::fmod(t, &o),
                "hypot" => more::hypot(t, &o),
                "true_divide" => t.div(&o),
                _ => more::atan2(t, &o),
            })?
        }
        "lerp" => {
            a.check(2, &["end", "weight"])?;
            tv(more::lerp(
                t,
                &operand(a, 0, "end")?,
                &operand(a, 1, "weight")?,
            ))?
        }
        "logit" => {
            a.check(1, &["eps"])?;
            tv(more::logit(t, a.float(0, "eps")?))?
        }
        _ => return Ok(None),
    };
    Ok(Some(v))
}

fn reductions(t: &Tensor, name: &str, a: &Args) -> R<Option<Value>> {
    let v = match name {
        "amax" | "amin" => {
            a.check(2, &["dim", "keepdim"])?;
            tv(more::amax(
                t,
                &dims_opt(a, 0)?,
                a.flag(1, "keepdim", false)?,
                name == "amin",
            ))?
        }
        "aminmax" => {
            a.check(0, &["dim", "keepdim"])?;
            let dims = dims_opt(a, usize::MAX)?;
            let k = a.flag(usize::MAX, "keepdim", false)?;
            pair(
                more::amax(t, &dims, k, true)
                    .and_then(|lo| Ok((lo, more::amax(t, &dims, k, false)?))),
            )?
        }
        "count_nonzero" => {
            a.check(1, &["dim"])?;
            tv(more::count_nonzero(t, &dims_opt(a, 0)?))?
        }
        "cumprod" | "logcumsumexp" => {
            a.check(1, &["dim"])?;
            let d = int_of(a.required(0, "dim")?, name)?;
            tv(if name == "cumprod" {
                more::cumprod(t, d)
            } else {
                more::logcumsumexp(t, d)
            })?
        }
        "cummax" | "cummin" => {
            a.check(1, &["dim"])?;
            let d = int_of(a.required(0, "dim")?, name)?;
            pair(more::cumextreme(t, d, name == "cummin"))?
        }
        "median" => {
            a.check(2, &["dim", "keepdim"])?;
            match a.int(0, "dim")? {
                None => tv(more::median_all(t))?,
                Some(d) => pair(more::median_dim(t, d, a.flag(1, "keepdim", false)?))?,
            }
        }
        "mode" => {
            a.check(2, &["dim", "keepdim"])?;
            pair(more::mode(
                t,
                dim_or(a, 0, -1)?,
                a.flag(1, "keepdim", false)?,
            ))?
        }
        "quantile" => {
            a.check(3, &["q", "dim", "keepdim", "interpolation"])?;
            if let Some(Value::Str(s)) = a.kw("interpolation") {
                if &**s != "linear" {
                    return Err(crate::interp::err(
                        crate::error::ErrorKind::NotImplementedError,
                        format!(
                            "quantile(): interpolation='{s}' is not supported yet (only 'linear')"
                        ),
                    ));
                }
            }
            let q = a.required(0, "q")?;
            let (levels, scalar) = match q {
                Value::Tensor(x) => (
                    x.cast(crate::tensor::DType::F64)
                        .and_then(|c| c.to_vec::<f64>())
                        .map_err(te)?,
                    x.ndim() == 0,
                ),
                Value::List(_) | Value::Tuple(_) => (
                    match q {
                        Value::List(l) => l
                            .borrow()
                            .iter()
                            .map(|v| float_of(v, "quantile"))
                            .collect::<R<Vec<_>>>()?,
                        Value::Tuple(l) => l
                            .iter()
                            .map(|v| float_of(v, "quantile"))
                            .collect::<R<Vec<_>>>()?,
                        _ => vec![],
                    },
                    false,
                ),
                v => (vec![float_of(v, "quantile")?], true),
            };
            tv(more::quantile(
                t,
                &levels,
                scalar,
                a.int(1, "dim")?,
                a.flag(2, "keepdim", false)?,
            ))?
        }
        "sort" => {
            a.check(2, &["dim", "descending", "stable"])?;
            pair(more::sort(
                t,
                dim_or(a, 0, -1)?,
                a.flag(1, "descending", false)?,
            ))?
        }
        "argsort" => {
            a.check(2, &["dim", "descending", "stable"])?;
            tv(sorting::sort_indices(
                t,
                dim_or(a, 0, -1)?,
                a.flag(1, "descending", false)?,
            ))?
        }
        "topk" => {
            a.check(4, &["k", "dim", "largest", "sorted"])?;
            let k = int_of(a.required(0, "k")?, "topk")?;
            pair(more::topk(
                t,
                k,
                dim_or(a, 1, -1)?,
                a.flag(2, "largest", true)?,
            ))?
        }
        "kthvalue" => {
            a.check(3, &["k", "dim", "keepdim"])?;
            let k = int_of(a.required(0, "k")?, "kthvalue")?;
            pair(more::kthvalue(
                t,
                k,
                dim_or(a, 1, -1)?,
                a.flag(2, "keepdim", false)?,
            ))?
        }
        "unique" => {
            a.check(3, &["sorted", "return_inverse", "return_counts", "dim"])?;
            if a.get(3, "dim").is_some() {
                return Err(crate::interp::err(
                    crate::error::ErrorKind::NotImplementedError,
                    "unique(dim=...) is not supported yet",
                ));
            }
            let (vals, inv, counts) = sorting::unique(t).map_err(te)?;
            let (ri, rc) = (
                a.flag(1, "return_inverse", false)?,
                a.flag(2, "return_counts", false)?,
            );
            match (ri, rc) {
                (false, false) => Value::Tensor(vals),
                (true, false) => tuple_of(vec![vals, inv]),
                (false, true) => tuple_of(vec![vals, counts]),
                (true, true) => tuple_of(vec![vals, inv, counts]),
            }
        }
        "bincount" => {
            a.check(2, &["weights", "minlength"])?;
            let w = a
                .get(0, "weights")
                .map(|v| super::tensor::tensor_of(v, "bincount"))
                .transpose()?;
            let m = a.int(1, "minlength")?.unwrap_or(0).max(0) as usize;
            tv(sorting::bincount(t, w.as_ref(), m))?
        }
        "histc" => {
            a.check(3, &["bins", "min", "max"])?;
            let bins = a.int(0, "bins")?.unwrap_or(100).max(0) as usize;
            let lo = a.float(1, "min")?.unwrap_or(0.0);
            tv(sorting::histc(
                t,
                bins,
                lo,
                a.float(2, "max")?.unwrap_or(0.0),
            ))?
        }
        _ => return Ok(None),
    };
    Ok(Some(v))
}

/// Ints given as varargs, one list, or keyword `kwname`.
pub fn ints(a: &Args, kwname: &str) -> R<Vec<i64>> {
    if a.pos.is_empty() {
        if let Some(v) = a.kw(kwname) {
            return int_list(v, a.fname);
        }
    }
    shape_args(a.pos, a.fname)
}

fn shapes(t: &Tensor, name: &str, a: &Args) -> R<Option<Value>> {
    let v = match name {
        "unflatten" => {
            a.check(2, &["dim", "sizes"])?;
            let d = crate::tensor::shape::norm_dim(
                "unflatten",
                int_of(a.required(0, "dim")?, name)?,
                t.ndim(),
            )
            .map_err(te)?;
            let sizes = int_list(a.required(1, "sizes")?, name)?;
            let mut s: Vec<i64> = t.shape()[..d].iter().map(|&x| x as i64).collect();
            s.extend(sizes);
            s.extend(t.shape()[d + 1..].iter().map(|&x| x as i64));
            tv(t.reshape(&s))?
        }
        "swapaxes" | "swapdims" => {
            a.check(2, &["axis0", "axis1", "dim0", "dim1"])?;
            let d0 = a
                .get(0, "axis0")
                .or_else(|| a.kw("dim0"))
                .ok_or_else(|| type_err(format!("{name}() missing required argument 'axis0'")))?;
            let d1 = a
                .get(1, "axis1")
                .or_else(|| a.kw("dim1"))
                .ok_or_else(|| type_err(format!("{name}() missing required argument 'axis1'")))?;
            tv(t.transpose(int_of(d0, name)?, int_of(d1, name)?))?
        }
        "movedim" | "moveaxis" => {
            a.check(2, &["source", "destination"])?;
            let s = int_list(a.required(0, "source")?, name)?;
            tv(sm::movedim(
                t,
                &s,
                &int_list(a.required(1, "destination")?, name)?,
            ))?
        }
        "broadcast_to" => {
            a.check(1, &["size"])?;
            tv(t.expand(&int_list(a.required(0, "size")?, name)?))?
        }
        "unbind" => {
            a.check(1, &["dim"])?;
            tuple_of(sm::unbind(t, dim_or(a, 0, 0)?).map_err(te)?)
        }
        "flip" => {
            a.check(usize::MAX, &["dims"])?;
            tv(sm::flip(t, &ints(a, "dims")?))?
        }
        "roll" => {
            a.check(2, &["shifts", "dims"])?;
            let sh = int_list(a.required(0, "shifts")?, name)?;
            let dims = match a.get(1, "dims") {
                Some(v) => int_list(v, name)?,
                None => vec![],
            };
            tv(sm::roll(t, &sh, &dims))?
        }
        "repeat_interleave" => {
            a.check(2, &["repeats", "dim", "output_size"])?;
            let reps = match a.required(0, "repeats")? {
                Value::Tensor(r) => r.to_i64_vec().map_err(te)?,
                v => vec![int_of(v, name)?],
            };
            tv(sm::repeat_interleave(t, &reps, a.int(1, "dim")?))?
        }
        "tile" => {
            a.check(usize::MAX, &["dims"])?;
            tv(sm::tile(t, &ints(a, "dims")?))?
        }
        "tril" | "triu" => {
            a.check(1, &["diagonal"])?;
            tv(sm::triangle(
                t,
                a.int(0, "diagonal")?.unwrap_or(0),
                name == "triu",
            ))?
        }
        "diag" => {
            a.check(1, &["diagonal"])?;
            tv(sm::diag(t, a.int(0, "diagonal")?.unwrap_or(0)))?
        }
        "diagonal" => {
            a.check(3, &["offset", "dim1", "dim2"])?;
            let off = a.int(0, "offset")?.unwrap_or(0);
            tv(sm::diagonal(
                t,
                off,
                a.int(1, "dim1")?.unwrap_or(0),
                a.int(2, "dim2")?.unwrap_or(1),
            ))?
        }
        "diag_embed" => {
            a.check(1, &["offset"])?;
            tv(sm::diag_embed(t, a.int(0, "offset")?.unwrap_or(0)))?
        }
        "trace" => {
            a.check(0, &[])?;
            tv(sm::trace(t))?
        }
        "scatter" | "scatter_" => {
            a.check(3, &["dim", "index", "src", "value", "reduce"])?;
            let d = int_of(a.required(0, "dim")?, name)?;
            let idx = a.index(1, "index")?;
            let src = match a.get(2, "src").or_else(|| a.kw("value")) {
                Some(v) => tensor_or_scalar(v, name)?,
                None => {
                    return Err(type_err(format!(
                        "{name}() missing required argument 'src'"
                    )))
                }
            };
            let out = sm::scatter(t, d, &idx, &src).map_err(te)?;
            inplace_result(t, name, out)?
        }
        "index_add" | "index_add_" => {
            a.check(3, &["dim", "index", "source", "alpha"])?;
            let d = int_of(a.required(0, "dim")?, name)?;
            let alpha = a.float(usize::MAX, "alpha")?.unwrap_or(1.0);
            let out = sm::index_add(t, d, &a.index(1, "index")?, &a.tensor(2, "source")?, alpha)
                .map_err(te)?;
            inplace_result(t, name, out)?
        }
        "scatter_add_" => {
            a.check(3, &["dim", "index", "src"])?;
            let d = int_of(a.required(0, "dim")?, name)?;
            let out = t
                .scatter_add(d, &a.index(1, "index")?, &a.tensor(2, "src")?)
                .map_err(te)?;
            inplace_result(t, name, out)?
        }
        "masked_select" => {
            a.check(1, &["mask"])?;
            tv(sm::masked_select(t, &a.tensor(0, "mask")?))?
        }
        "nonzero" | "argwhere" => {
            a.check(0, &["as_tuple"])?;
            let nz = sorting::nonzero(t).map_err(te)?;
            if name == "nonzero" && a.flag(usize::MAX, "as_tuple", false)? {
                let cols = (0..t.ndim().max(1) as i64)
                    .map(|c| {
                        nz.narrow(1, c.min(nz.ndim() as i64), 1)
                            .and_then(|x| x.reshape(&[-1]))
                    })
                    .collect::<crate::Result<Vec<_>>>()
                    .map_err(te)?;
                tuple_of(cols)
            } else {
                Value::Tensor(nz)
            }
        }
        "take" => {
            a.check(1, &["index"])?;
            tv(sm::take(t, &a.tensor(0, "index")?))?
        }
        "take_along_dim" => {
            a.check(2, &["indices", "dim"])?;
            tv(sm::take_along_dim(
                t,
                &a.tensor(0, "indices")?,
                a.int(1, "dim")?,
            ))?
        }
        _ => return Ok(None),
    };
    Ok(Some(v))
}

/// The result of an op: for its in-place form (`name` ends in `_`), written into `t`.
pub fn inplace_result(t: &Tensor, name: &str, out: Tensor) -> R<Value> {
    if name.ends_with('_') {
        t.copy_(&out).map_err(te)?;
        return Ok(Value::Tensor(t.clone()));
    }
    Ok(Value::Tensor(out))
}

fn products(t: &Tensor, name: &str, a: &Args) -> R<Option<Value>> {
    let v = match name {
        "bmm" => {
            a.check(1, &["mat2"])?;
            tv(sm::bmm(t, &a.tensor(0, "mat2")?))?
        }
        "mv" => {
            a.check(1, &["vec"])?;
            let v = a.tensor(0, "vec")?;
            if t.ndim() != 2 || v.ndim() != 1 {
                return Err(crate::interp::err(
                    crate::error::ErrorKind::RuntimeError,
                    format!(
                        "mv: expected a matrix and a vector, got {:?} and {:?}",
                        t.shape(),
                        v.shape()
                    ),
                ));
            }
            tv(linalg::matmul(t, &v))?
        }
        "vdot" => {
            a.check(1, &["other"])?;
            tv(linalg::dot(t, &a.tensor(0, "other")?))?
        }
        "inner" => {
            a.check(1, &["other"])?;
            let o = a.tensor(0, "other")?;
            if t.ndim() == 0 || o.ndim() == 0 {
                tv(t.mul(&o))?
            } else {
                tv(sm::tensordot(t, &o, &[-1], &[-1]))?
            }
        }
        "addmm" | "baddbmm" => {
            a.check(2, &["mat1", "mat2", "batch1", "batch2", "beta", "alpha"])?;
            let (n1, n2) = if name == "addmm" {
                ("mat1", "mat2")
            } else {
                ("batch1", "batch2")
            };
            let (m1, m2) = (a.tensor(0, n1)?, a.tensor(1, n2)?);
            let beta = a.float(usize::MAX, "beta")?.unwrap_or(1.0);
            let alpha = a.float(usize::MAX, "alpha")?.unwrap_or(1.0);
            let since = crate::autograd::next_node_id();
            let p = if name == "addmm" {
                linalg::matmul(&m1, &m2)
            } else {
                sm::bmm(&m1, &m2)
            }
            .map_err(te)?;
            let p = if alpha == 1.0 {
                p
            } else {
                p.mul_s(alpha).map_err(te)?
            };
            let out = if beta == 0.0 {
                p.add(&t.mul_s(0.0).map_err(te)?)
            } else if beta == 1.0 {
                t.add(&p)
            } else {
                t.mul_s(beta).and_then(|s| s.add(&p))
            }
            .map_err(te)?;
            // torch's one node (`nn.Linear` on a 2-d input is an addmm)
            let node = if name == "addmm" {
                "AddmmBackward0"
            } else {
                "BaddbmmBackward0"
            };
            crate::autograd::names::name_composite(&out, since, node);
            Value::Tensor(out)
        }
        "kron" => {
            a.check(1, &["other"])?;
            tv(sm::kron(t, &a.tensor(0, "other")?))?
        }
        "cross" => {
            a.check(2, &["other", "dim"])?;
            tv(sm::cross(t, &a.tensor(0, "other")?, a.int(1, "dim")?))?
        }
        "dist" => {
            a.check(2, &["other", "p"])?;
            let p = a.float(1, "p")?.unwrap_or(2.0);
            tv(t.sub(&a.tensor(0, "other")?)
                .and_then(|d| d.norm(p, &[], false)))?
        }
        _ => return Ok(None),
    };
    Ok(Some(v))
}
