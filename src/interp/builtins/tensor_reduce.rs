//! Tensor methods for reductions (`sum mean max ... norm`), shape ops (`reshape view
//! ... narrow`), indexing functions (`index_select gather scatter_add`) and products
//! (`matmul mm dot outer`), with PyTorch's keyword names.

use super::tensor::{int_list, int_of, shape_args, sizes, te, tensor_of, Args};
use crate::interp::value::Value;
use crate::interp::{type_err, value_err, R};
use crate::ops::{self, BinaryOp};
use crate::tensor::{linalg, Tensor};

fn tv(r: crate::Result<Tensor>) -> R<Value> {
    r.map(Value::Tensor).map_err(te)
}

fn tuple_of(ts: Vec<Tensor>) -> Value {
    Value::tuple(ts.into_iter().map(Value::Tensor).collect())
}

/// `dim=` that must be a single int.
fn one_dim(a: &Args, i: usize) -> R<Option<i64>> {
    a.int(i, "dim")
}

/// `out`, whose node (made since `since`) is renamed `name` when the call gave `dim`.
fn named_dim_form(
    out: crate::Result<Tensor>,
    since: u64,
    dim: bool,
    name: &'static str,
) -> crate::Result<Tensor> {
    let out = out?;
    if dim {
        crate::autograd::names::name_composite(&out, since, name);
    }
    Ok(out)
}

fn need_dim(a: &Args, i: usize) -> R<i64> {
    one_dim(a, i)?.ok_or_else(|| type_err(format!("{}() missing required argument 'dim'", a.fname)))
}

/// `var`/`std` correction from `unbiased=` or `correction=` (default 1).
fn correction(a: &Args) -> R<f64> {
    if let Some(c) = a.kw("correction") {
        return super::tensor::float_of(c, a.fname);
    }
    Ok(if a.flag(usize::MAX, "unbiased", true)? {
        1.0
    } else {
        0.0
    })
}

/// `norm("nuc", dim)`: the sum of the singular values of the matrices over the two
/// dims `dim` (the last two when empty), as torch.linalg.matrix_norm's "nuc".
fn nuclear_norm(t: &Tensor, dims: &[i64], keepdim: bool) -> crate::Result<Tensor> {
    let nd = t.ndim() as i64;
    let (d0, d1) = match dims {
        [] => (nd - 2, nd - 1),
        [a, b] => (a.rem_euclid(nd.max(1)), b.rem_euclid(nd.max(1))),
        _ => {
            return Err(crate::error::Error::new(
                crate::error::ErrorKind::RuntimeError,
                "linalg.matrix_norm: dim must be a 2-tuple",
                None,
            ))
        }
    };
    if nd < 2 {
        return Err(crate::error::Error::new(
            crate::error::ErrorKind::RuntimeError,
            "linalg.matrix_norm: The input tensor A must have at least 2 dimensions.",
            None,
        ));
    }
    let m = ops::shape_more::movedim(t, &[d0, d1], &[-2, -1])?;
    let s = crate::tensor::linalg_ops::svdvals(&m)?;
    // torch's node: the sum over the singular values' dim, SumBackward1
    let since = crate::autograd::next_node_id();
    let r = named_dim_form(s.sum(&[-1], false), since, true, "SumBackward1")?;
    if !keepdim {
        return Ok(r);
    }
    r.unsqueeze(d0.min(d1))?.unsqueeze(d0.max(d1))
}

pub fn reduce_method(t: &Tensor, name: &str, a: &Args) -> R<Option<Value>> {
    const RED: &[&str] = &["dim", "keepdim"];
    let v = match name {
        "sum" | "mean" | "prod" | "softmax" | "log_softmax" | "cumsum"
            if a.kw("dtype").is_some() =>
        {
            // torch casts the input to `dtype` first
            match name {
                "sum" | "mean" | "prod" => a.check(2, &["dim", "keepdim", "dtype"])?,
                _ => a.check(1, &["dim", "dtype"])?,
            }
            let dt = super::tensor::dtype_of(a.kw("dtype").unwrap_or(&Value::None))?;
            let x = crate::ops::to_dtype(t, dt).map_err(te)?;
            let kw: Vec<_> =
                a.kw.iter()
                    .filter(|(k, _)| &**k != "dtype")
                    .cloned()
                    .collect();
            // and its result has that dtype (an int32 sum stays int32)
            return match reduce_method(&x, name, &Args::new(a.fname, a.pos, &kw))? {
                Some(Value::Tensor(ref r)) if r.dtype() != dt => {
                    tv(crate::ops::to_dtype(r, dt)).map(Some)
                }
                v => Ok(v),
            };
        }
        "sum" | "mean" | "prod" | "logsumexp" | "all" | "any" => {
            a.check(2, RED)?;
            let (d, k) = (a.dims(0)?, a.flag(1, "keepdim", false)?);
            let since = crate::autograd::next_node_id();
            tv(match name {
                // torch's `dim=` overload names its node ...Backward1 over every dim too
                "sum" => named_dim_form(t.sum(&d, k), since, !d.is_empty(), "SumBackward1"),
                "mean" => named_dim_form(t.mean(&d, k), since, !d.is_empty(), "MeanBackward1"),
                "prod" => t.prod(&d, k),
                "logsumexp" => t.logsumexp(&d, k),
                "all" => t.all_any(&d, k, false),
                _ => t.all_any(&d, k, true),
            })?
        }
        "max" | "min" => extreme(t, name == "min", a)?,
        "argmax" | "argmin" => {
            a.check(2, RED)?;
            tv(t.arg_extreme(
                one_dim(a, 0)?,
                a.flag(1, "keepdim", false)?,
                name == "argmin",
            ))?
        }
        "var" | "std" => {
            a.check(2, &["dim", "unbiased", "keepdim", "correction"])?;
            let d = a.dims(0)?;
            let unb = match a.pos.get(1) {
                Some(Value::Bool(b)) => Some(if *b { 1.0 } else { 0.0 }),
                _ => None,
            };
            let c = match unb {
                Some(c) => c,
                None => correction(a)?,
            };
            tv(t.var_std(&d, c, a.flag(usize::MAX, "keepdim", false)?, name == "std"))?
        }
        "softmax" | "log_softmax" | "cumsum" => {
            a.check(1, &["dim"])?;
            let d = need_dim(a, 0)?;
            tv(match name {
                "softmax" => t.softmax(d),
                "log_softmax" => t.log_softmax(d),
                _ => t.cumsum(d),
            })?
        }
        "norm" if matches!(a.get(0, "p"), Some(Value::Str(s)) if &**s == "nuc") => {
            a.check(3, &["p", "dim", "keepdim"])?;
            tv(nuclear_norm(t, &a.dims(1)?, a.flag(2, "keepdim", false)?))?
        }
        "norm" => {
            a.check(3, &["p", "dim", "keepdim"])?;
            // the Frobenius norm is the 2-norm over the dims
            let p = match a.get(0, "p") {
                Some(Value::Str(s)) if &**s == "fro" => 2.0,
                _ => a.float(0, "p")?.unwrap_or(2.0),
            };
            tv(t.norm(p, &a.dims(1)?, a.flag(2, "keepdim", false)?))?
        }
        "matmul" | "mm" => {
            a.check(1, &["other"])?;
            tv(linalg::matmul(t, &a.tensor(0, "other")?))?
        }
        "dot" => {
            a.check(1, &["other"])?;
            tv(linalg::dot(t, &a.tensor(0, "other")?))?
        }
        "outer" => {
            a.check(1, &["vec2"])?;
            tv(linalg::outer(t, &a.tensor(0, "vec2")?))?
        }
        _ => return Ok(None),
    };
    Ok(Some(v))
}

/// `max()`/`min()`: all elements; with `dim`: a `(values, indices)` tuple; with a
/// tensor argument: the elementwise maximum/minimum.
fn extreme(t: &Tensor, is_min: bool, a: &Args) -> R<Value> {
    a.check(2, &["dim", "keepdim", "other"])?;
    if let Some(Value::Tensor(o)) = a.get(0, "other") {
        let op = if is_min {
            BinaryOp::Minimum
        } else {
            BinaryOp::Maximum
        };
        return tv(ops::binary(op, t, o));
    }
    match one_dim(a, 0)? {
        None => tv(t.extreme_all(is_min)),
        Some(d) => {
            let (v, i) = t
                .extreme_dim(d, a.flag(1, "keepdim", false)?, is_min)
                .map_err(te)?;
            Ok(tuple_of(vec![v, i]))
        }
    }
}

/// A shape/dims argument given as varargs or one tuple/list.
fn var_ints(a: &Args, kwname: &str) -> R<Vec<i64>> {
    if a.pos.is_empty() {
        if let Some(v) = a.kw(kwname) {
            return int_list(v, a.fname);
        }
    }
    shape_args(a.pos, a.fname)
}

pub fn shape_method(t: &Tensor, name: &str, a: &Args) -> R<Option<Value>> {
    let v = match name {
        "reshape" | "view" => {
            a.check(usize::MAX, &["shape"])?;
            let s = var_ints(a, "shape")?;
            tv(if name == "view" {
                t.view(&s)
            } else {
                t.reshape(&s)
            })?
        }
        "flatten" => {
            a.check(2, &["start_dim", "end_dim"])?;
            let s = a.int(0, "start_dim")?.unwrap_or(0);
            tv(t.flatten(s, a.int(1, "end_dim")?.unwrap_or(-1)))?
        }
        "squeeze" => {
            a.check(1, &["dim"])?;
            match a.get(0, "dim") {
                Some(Value::Tuple(_) | Value::List(_)) => tv(t.squeeze_dims(&a.dims(0)?))?,
                _ => tv(t.squeeze(one_dim(a, 0)?))?,
            }
        }
        "unsqueeze" => {
            a.check(1, &["dim"])?;
            tv(t.unsqueeze(need_dim(a, 0)?))?
        }
        "transpose" => {
            a.check(2, &["dim0", "dim1"])?;
            let d0 = int_of(a.required(0, "dim0")?, "transpose")?;
            tv(t.transpose(d0, int_of(a.required(1, "dim1")?, "transpose")?))?
        }
        "permute" => {
            a.check(usize::MAX, &["dims"])?;
            tv(t.permute(&var_ints(a, "dims")?))?
        }
        "expand" => {
            a.check(usize::MAX, &["size"])?;
            tv(t.expand(&var_ints(a, "size")?))?
        }
        "repeat" => {
            a.check(usize::MAX, &["repeats"])?;
            tv(t.repeat(&sizes(&var_ints(a, "repeats")?, "repeat")?))?
        }
        "expand_as" | "view_as" | "reshape_as" => {
            a.check(1, &["other"])?;
            let o = a.tensor(0, "other")?;
            crate::compile::capture::trace::note_size_read(&o, None);
            let s: Vec<i64> = o.shape().iter().map(|&d| d as i64).collect();
            tv(match name {
                "expand_as" => t.expand(&s),
                "view_as" => t.view(&s),
                _ => t.reshape(&s),
            })?
        }
        "contiguous" => {
            a.check(0, &[])?;
            tv(t.contiguous())?
        }
        "t" => {
            a.check(0, &[])?;
            if t.ndim() > 2 {
                return Err(value_err(format!(
                    "t() expects a tensor with <= 2 dimensions, but self is {}D",
                    t.ndim()
                )));
            }
            Value::Tensor(t.t_method())
        }
        "split" => split(t, a)?,
        "chunk" => {
            a.check(2, &["chunks", "dim"])?;
            let n = sizes(&[int_of(a.required(0, "chunks")?, "chunk")?], "chunk")?[0];
            tuple_of(t.chunk(n, a.int(1, "dim")?.unwrap_or(0)).map_err(te)?)
        }
        "narrow" => {
            a.check(3, &["dim", "start", "length"])?;
            let d = need_dim(a, 0)?;
            let s = int_of(a.required(1, "start")?, "narrow")?;
            tv(t.narrow(d, s, int_of(a.required(2, "length")?, "narrow")?))?
        }
        "index_select" | "gather" => {
            a.check(2, &["dim", "index"])?;
            let (d, i) = (need_dim(a, 0)?, a.index(1, "index")?);
            tv(if name == "gather" {
                t.gather(d, &i)
            } else {
                t.index_select(d, &i)
            })?
        }
        "scatter_add" => {
            a.check(3, &["dim", "index", "src"])?;
            let (d, i) = (need_dim(a, 0)?, a.index(1, "index")?);
            tv(t.scatter_add(d, &i, &a.tensor(2, "src")?))?
        }
        _ => return Ok(None),
    };
    Ok(Some(v))
}

/// `split(split_size_or_sections, dim=0)`.
fn split(t: &Tensor, a: &Args) -> R<Value> {
    a.check(2, &["split_size_or_sections", "split_size", "dim"])?;
    let arg = a
        .get(0, "split_size_or_sections")
        .or_else(|| a.kw("split_size"))
        .ok_or_else(|| type_err("split() missing required argument 'split_size'"))?;
    let dim = a.int(1, "dim")?.unwrap_or(0);
    let parts = match arg {
        Value::List(_) | Value::Tuple(_) | Value::Size(_) => {
            t.split_sizes(&sizes(&int_list(arg, "split")?, "split")?, dim)
        }
        v => t.split(sizes(&[int_of(v, "split")?], "split")?[0], dim),
    };
    Ok(tuple_of(parts.map_err(te)?))
}

/// A tensor argument for the functional forms (`cat`, `stack`): a list/tuple of them.
pub fn tensor_seq(v: &Value, fname: &str) -> R<Vec<Tensor>> {
    let items: Vec<Value> = match v {
        Value::List(l) => l.borrow().clone(),
        Value::Tuple(t) => t.to_vec(),
        other => {
            return Err(type_err(format!(
                "{}(): expected a list or tuple of tensors, got {}",
                fname,
                other.type_name()
            )))
        }
    };
    items.iter().map(|x| tensor_of(x, fname)).collect()
}
