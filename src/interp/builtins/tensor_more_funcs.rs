//! Functional globals of PyTorch's API beyond the core set (issue 22): the function
//! forms of tensor_more.rs's methods (forwarded to the method of the first argument),
//! and the functions of several tensors or none (`einsum tensordot hstack meshgrid
//! searchsorted multinomial normal logspace var_mean ...`).

use super::tensor::{
    finish, float_of, int_list, int_of, shape_args, sizes, te, tensor_of, Args, Kw,
};
use super::tensor_funcs::{forward, forwarders};
use super::tensor_reduce::tensor_seq;
use crate::interp::value::{GradModeCtx, NativeImpl, Value};
use crate::interp::{type_err, value_err, Interp, R};
use crate::ops::shape_more as sm;
use crate::tensor::dtype::{DType, Scalar};
use crate::tensor::views::cat;
use crate::tensor::{creation, sorting, Tensor};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

forwarders! {
    "isnan" => f_isnan, "isinf" => f_isinf, "isfinite" => f_isfinite,
    "nan_to_num" => f_nan_to_num, "isclose" => f_isclose, "allclose" => f_allclose,
    "equal" => f_equal, "fmod" => f_fmod, "atan2" => f_atan2, "arctan2" => f_arctan2,
    "hypot" => f_hypot, "lerp" => f_lerp, "logit" => f_logit, "true_divide" => f_true_divide,
    "amax" => f_amax,
    "amin" => f_amin, "aminmax" => f_aminmax, "count_nonzero" => f_count_nonzero,
    "cumprod" => f_cumprod, "cummax" => f_cummax, "cummin" => f_cummin,
    "logcumsumexp" => f_logcumsumexp, "median" => f_median, "mode" => f_mode,
    "quantile" => f_quantile, "sort" => f_sort, "argsort" => f_argsort, "topk" => f_topk,
    "kthvalue" => f_kthvalue, "unique" => f_unique, "bincount" => f_bincount,
    "histc" => f_histc, "unflatten" => f_unflatten, "swapaxes" => f_swapaxes,
    "swapdims" => f_swapdims, "movedim" => f_movedim, "moveaxis" => f_moveaxis,
    "broadcast_to" => f_broadcast_to, "unbind" => f_unbind, "flip" => f_flip,
    "roll" => f_roll, "repeat_interleave" => f_repeat_interleave, "tile" => f_tile,
    "tril" => f_tril, "triu" => f_triu, "diag" => f_diag, "diagonal" => f_diagonal,
    "diag_embed" => f_diag_embed, "scatter" => f_scatter,
    "index_add" => f_index_add, "masked_select" => f_masked_select, "nonzero" => f_nonzero,
    "argwhere" => f_argwhere, "take" => f_take, "take_along_dim" => f_take_along_dim,
    "bmm" => f_bmm, "mv" => f_mv, "vdot" => f_vdot, "inner" => f_inner, "addmm" => f_addmm,
    "baddbmm" => f_baddbmm, "kron" => f_kron, "cross" => f_cross, "dist" => f_dist,
    "t" => f_t, "is_floating_point" => f_is_floating_point,
}

pub const GLOBALS: &[(&str, NativeImpl)] = &[
    ("concat", concat),
    ("concatenate", concat),
    ("hstack", hstack),
    ("vstack", vstack),
    ("broadcast_tensors", broadcast_tensors),
    ("meshgrid", meshgrid),
    ("einsum", einsum),
    ("tensordot", tensordot),
    ("cdist", cdist),
    ("searchsorted", searchsorted),
    ("bucketize", bucketize),
    ("is_tensor", is_tensor),
    ("get_default_dtype", get_default_dtype),
    ("set_default_dtype", set_default_dtype),
    ("set_printoptions", set_printoptions),
    ("set_grad_enabled", set_grad_enabled),
    ("inference_mode", inference_mode),
    ("var_mean", var_mean),
    ("std_mean", std_mean),
    ("as_tensor", as_tensor),
    ("randint_like", randint_like),
    ("logspace", logspace),
    ("multinomial", multinomial),
    ("bernoulli", bernoulli),
    ("normal", normal),
];

/// Every global of this file.
pub fn all_globals() -> impl Iterator<Item = (&'static str, NativeImpl)> {
    FORWARDED.iter().chain(GLOBALS.iter()).copied()
}

fn tv(r: crate::Result<Tensor>) -> R<Value> {
    r.map(Value::Tensor).map_err(te)
}

fn tuple_of(ts: Vec<Tensor>) -> Value {
    Value::tuple(ts.into_iter().map(Value::Tensor).collect())
}

/// Tensors given as varargs or as one list/tuple.
fn tensors(args: &[Value], fname: &str) -> R<Vec<Tensor>> {
    match args {
        [one @ (Value::List(_) | Value::Tuple(_))] => tensor_seq(one, fname),
        _ => args.iter().map(|v| tensor_of(v, fname)).collect(),
    }
}

fn concat(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("concat", args, kw);
    a.check(2, &["tensors", "dim", "axis"])?;
    let ts = tensor_seq(a.required(0, "tensors")?, "concat")?;
    let d = a
        .int(1, "dim")?
        .or(a.kw("axis").map(|v| int_of(v, "concat")).transpose()?);
    tv(cat(&ts, d.unwrap_or(0)))
}

fn hstack(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("hstack", args, kw);
    a.check(1, &["tensors"])?;
    let ts = tensor_seq(a.required(0, "tensors")?, "hstack")?;
    let ts: Vec<Tensor> = ts
        .iter()
        .map(|t| {
            if t.ndim() == 0 {
                t.reshape(&[1])
            } else {
                Ok(t.clone())
            }
        })
        .collect::<crate::Result<_>>()
        .map_err(te)?;
    let d = if ts.iter().all(|t| t.ndim() == 1) {
        0
    } else {
        1
    };
    tv(cat(&ts, d))
}

fn vstack(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("vstack", args, kw);
    a.check(1, &["tensors"])?;
    let ts = tensor_seq(a.required(0, "tensors")?, "vstack")?;
    let ts: Vec<Tensor> = ts
        .iter()
        .map(|t| match t.ndim() {
            0 => t.reshape(&[1, 1]),
            1 => t.unsqueeze(0),
            _ => Ok(t.clone()),
        })
        .collect::<crate::Result<_>>()
        .map_err(te)?;
    tv(cat(&ts, 0))
}

fn broadcast_tensors(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    Args::new("broadcast_tensors", args, kw).check(usize::MAX, &[])?;
    Ok(tuple_of(
        sm::broadcast_tensors(&tensors(args, "broadcast_tensors")?).map_err(te)?,
    ))
}

fn meshgrid(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("meshgrid", args, kw);
    a.check(usize::MAX, &["indexing"])?;
    let xy = match a.kw("indexing") {
        None => false,
        Some(Value::Str(s)) if &**s == "ij" => false,
        Some(Value::Str(s)) if &**s == "xy" => true,
        Some(_) => {
            return Err(crate::interp::err(
                crate::error::ErrorKind::RuntimeError,
                "meshgrid: indexing must be one of \"xy\" or \"ij\"",
            ))
        }
    };
    Ok(tuple_of(
        sm::meshgrid(&tensors(args, "meshgrid")?, xy).map_err(te)?,
    ))
}

fn einsum(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    Args::new("einsum", args, kw).check(usize::MAX, &[])?;
    let Some((Value::Str(eq), rest)) = args.split_first() else {
        return Err(type_err(
            "einsum(): the first argument must be the equation string",
        ));
    };
    tv(crate::ops::einsum::einsum(eq, &tensors(rest, "einsum")?))
}

fn tensordot(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("tensordot", args, kw);
    a.check(3, &["a", "b", "dims"])?;
    let (x, y) = (a.tensor(0, "a")?, a.tensor(1, "b")?);
    let (da, db) = match a.get(2, "dims") {
        None => ((x.ndim() as i64 - 2..x.ndim() as i64).collect(), vec![0, 1]),
        Some(Value::Int(n)) => {
            let n = *n;
            (
                (x.ndim() as i64 - n..x.ndim() as i64).collect(),
                (0..n).collect(),
            )
        }
        Some(v @ (Value::List(_) | Value::Tuple(_))) => {
            let parts: Vec<Value> = match v {
                Value::List(l) => l.borrow().clone(),
                Value::Tuple(t) => t.to_vec(),
                _ => vec![],
            };
            match parts.as_slice() {
                [p, q] => (int_list(p, "tensordot")?, int_list(q, "tensordot")?),
                _ => {
                    return Err(type_err(
                        "tensordot(): dims must be an int or a pair of dim lists",
                    ))
                }
            }
        }
        Some(v) => {
            return Err(type_err(format!(
                "tensordot(): dims must be an int or a pair of lists, not {}",
                v.type_name()
            )))
        }
    };
    tv(sm::tensordot(&x, &y, &da, &db))
}

fn cdist(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("cdist", args, kw);
    a.check(3, &["x1", "x2", "p", "compute_mode"])?;
    let p = a.float(2, "p")?.unwrap_or(2.0);
    tv(sm::cdist(&a.tensor(0, "x1")?, &a.tensor(1, "x2")?, p))
}

fn searchsorted(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("searchsorted", args, kw);
    a.check(
        2,
        &["sorted_sequence", "input", "right", "side", "out_int32"],
    )?;
    let seq = a.tensor(0, "sorted_sequence")?;
    let v = super::tensor::tensor_or_scalar(a.required(1, "input")?, "searchsorted")?;
    let right = match a.kw("side") {
        Some(Value::Str(s)) => &**s == "right",
        _ => a.flag(usize::MAX, "right", false)?,
    };
    tv(sorting::searchsorted(&seq, &v, right))
}

fn bucketize(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("bucketize", args, kw);
    a.check(2, &["input", "boundaries", "right", "out_int32"])?;
    let v = super::tensor::tensor_or_scalar(a.required(0, "input")?, "bucketize")?;
    let b = a.tensor(1, "boundaries")?;
    if b.ndim() != 1 {
        return Err(crate::interp::err(
            crate::error::ErrorKind::RuntimeError,
            format!(
                "bucketize: boundaries tensor must be 1 dimension, but got dim({})",
                b.ndim()
            ),
        ));
    }
    tv(sorting::searchsorted(
        &b,
        &v,
        a.flag(usize::MAX, "right", false)?,
    ))
}

fn is_tensor(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    super::arity("is_tensor", args, 1, 1)?;
    Ok(Value::Bool(matches!(args[0], Value::Tensor(_))))
}

fn get_default_dtype(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    super::arity("get_default_dtype", args, 0, 0)?;
    Ok(Value::DType(crate::tensor::dtype::default_float()))
}

/// `set_default_dtype(float32 | float64)`: the dtype of Python floats made tensors
/// (`tensor(1.5)`, `zeros(2)`, `arange(0.5, 2)`) and of int inputs to float ops.
fn set_default_dtype(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("set_default_dtype", args, kw);
    a.check(1, &["d"])?;
    match super::tensor::dtype_of(a.required(0, "d")?)? {
        d @ (DType::F32 | DType::F64) => {
            crate::tensor::dtype::set_default_float(d);
            Ok(Value::None)
        }
        DType::I32 | DType::I64 | DType::U8 | DType::Bool => Err(type_err(
            "only floating-point types are supported as the default type",
        )),
    }
}

/// `set_printoptions(precision=, threshold=, edgeitems=, linewidth=, profile=,
/// sci_mode=)` as PyTorch's: the profile first, then each option given; `sci_mode` is
/// always set (None: chosen per tensor).
fn set_printoptions(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    use crate::tensor::format::{print_options, set_print_options, PrintProfile};
    const NAMES: [&str; 6] = [
        "precision",
        "threshold",
        "edgeitems",
        "linewidth",
        "profile",
        "sci_mode",
    ];
    let a = Args::new("set_printoptions", args, kw);
    a.check(NAMES.len(), &NAMES)?;
    let mut o = print_options();
    if let Some(p) = a.get(4, "profile") {
        o = o.with_profile(match p {
            Value::Str(s) if &**s == "default" => PrintProfile::Default,
            Value::Str(s) if &**s == "short" => PrintProfile::Short,
            Value::Str(s) if &**s == "full" => PrintProfile::Full,
            _ => {
                return Err(value_err(format!(
                    "set_printoptions(): profile must be 'default', 'short' or 'full', got {}",
                    p.type_name()
                )))
            }
        });
    }
    let count = |i: usize, name: &str| -> R<Option<usize>> {
        match a.int(i, name)? {
            Some(n) => usize::try_from(n).map(Some).map_err(|_| {
                value_err(format!("set_printoptions(): {name} must be >= 0, got {n}"))
            }),
            None => Ok(None),
        }
    };
    if let Some(p) = count(0, "precision")? {
        if p > 10_000 {
            return Err(value_err(format!(
                "set_printoptions(): precision {p} is too big (at most 10000)"
            )));
        }
        o.precision = p;
    }
    if let Some(t) = a.float(1, "threshold")? {
        o.threshold = t;
    }
    if let Some(e) = count(2, "edgeitems")? {
        o.edgeitems = e;
    }
    if let Some(w) = count(3, "linewidth")? {
        o.linewidth = w;
    }
    o.sci_mode = match a.get(5, "sci_mode") {
        None => None,
        Some(_) => Some(a.flag(5, "sci_mode", false)?),
    };
    set_print_options(o);
    Ok(Value::None)
}

/// `set_grad_enabled(mode)`: switches grad mode now, and as a context manager restores
/// the previous mode on exit.
fn set_grad_enabled(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("set_grad_enabled", args, kw);
    a.check(1, &["mode"])?;
    let on = a.flag(0, "mode", true)?;
    let prev = crate::autograd::set_grad_enabled(on);
    Ok(Value::GradMode(Rc::new(GradModeCtx {
        enable: on,
        saved: RefCell::new(Vec::new()),
        before_call: Cell::new(Some(prev)),
    })))
}

/// `inference_mode(mode=True)`: `no_grad` (Kiln has no separate inference tensors).
fn inference_mode(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("inference_mode", args, kw);
    a.check(1, &["mode"])?;
    Ok(Value::GradMode(Rc::new(GradModeCtx {
        enable: !a.flag(0, "mode", true)?,
        saved: RefCell::new(Vec::new()),
        before_call: Cell::new(None),
    })))
}

fn stat_mean(name: &str, args: &[Value], kw: Kw) -> R<Value> {
    let Some((Value::Tensor(t), rest)) = args.split_first() else {
        return Err(type_err(format!(
            "{name}(): argument 'input' must be Tensor"
        )));
    };
    let since = crate::autograd::next_node_id();
    let stat = super::tensor_methods::tensor_method(
        t,
        if name == "var_mean" { "var" } else { "std" },
        rest,
        kw,
    )?;
    let a = Args::new(name, rest, kw);
    let dims = a.dims(0)?;
    let keep = a.flag(usize::MAX, "keepdim", false)?;
    let mean = t.mean(&dims, keep).map_err(te)?;
    // torch's one node for both results
    let node = if name == "var_mean" {
        "VarMeanBackward0"
    } else {
        "StdMeanBackward0"
    };
    for out in [&mean].into_iter().chain(match &stat {
        Value::Tensor(s) => Some(s),
        _ => None,
    }) {
        crate::autograd::names::name_composite(out, since, node);
    }
    Ok(Value::tuple(vec![stat, Value::Tensor(mean)]))
}

fn var_mean(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    stat_mean("var_mean", args, kw)
}

fn std_mean(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    stat_mean("std_mean", args, kw)
}

/// `as_tensor(data, dtype=None)`: a tensor argument is returned as is (cast when asked).
fn as_tensor(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("as_tensor", args, kw);
    a.check(2, &["data", "dtype", "device"])?;
    let dt = a.dtype(1)?;
    match a.required(0, "data")? {
        Value::Tensor(t) => match dt {
            Some(d) if d != t.dtype() => tv(crate::ops::to_dtype(t, d)),
            _ => Ok(Value::Tensor(t.clone())),
        },
        v => Ok(Value::Tensor(super::tensor_create::from_value(v, dt)?)),
    }
}

fn randint_like(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("randint_like", args, kw);
    a.check(
        3,
        &[
            "input",
            "low",
            "high",
            "generator",
            "dtype",
            "device",
            "requires_grad",
        ],
    )?;
    let t = a.tensor(0, "input")?;
    let (low, high) = match (a.int(1, "low")?, a.int(2, "high")?) {
        (Some(h), None) => (0, h),
        (Some(l), Some(h)) => (l, h),
        (None, Some(h)) => (0, h),
        (None, None) => return Err(type_err("randint_like() missing required argument 'high'")),
    };
    let dt = a.dtype(usize::MAX)?.unwrap_or(t.dtype());
    let out = super::generator::with_generator(a.kw("generator"), "randint_like", || {
        creation::randint(low, high, t.shape(), dt).map_err(te)
    })?;
    finish(out, &a)
}

fn logspace(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("logspace", args, kw);
    a.check(
        4,
        &[
            "start",
            "end",
            "steps",
            "base",
            "dtype",
            "device",
            "requires_grad",
        ],
    )?;
    let start = float_of(a.required(0, "start")?, "logspace")?;
    let end = float_of(a.required(1, "end")?, "logspace")?;
    let steps = usize::try_from(int_of(a.required(2, "steps")?, "logspace")?)
        .map_err(|_| value_err("logspace(): number of steps must be non-negative"))?;
    let base = a.float(3, "base")?.unwrap_or(10.0);
    let v: Vec<f32> = (0..steps)
        .map(|i| {
            let e = if steps == 1 {
                start
            } else {
                start + (end - start) * i as f64 / (steps - 1) as f64
            };
            base.powf(e) as f32
        })
        .collect();
    let mut t = creation::from_f32(v, &[steps]).map_err(te)?;
    if let Some(d) = a.dtype(usize::MAX)? {
        t = t.cast(d).map_err(te)?;
    }
    finish(t, &a)
}

fn multinomial(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("multinomial", args, kw);
    a.check(3, &["input", "num_samples", "replacement", "generator"])?;
    let n = int_of(a.required(1, "num_samples")?, "multinomial")?;
    let (p, replace) = (a.tensor(0, "input")?, a.flag(2, "replacement", false)?);
    super::generator::with_generator(a.kw("generator"), "multinomial", || {
        tv(sorting::multinomial(&p, n, replace))
    })
}

/// `bernoulli(input, p=None)`: 1 with probability `p` (a number) or each element of
/// `input`, drawn as torch's CPU kernels draw.
fn bernoulli(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("bernoulli", args, kw);
    a.check(2, &["input", "p", "generator"])?;
    let p = a.tensor(0, "input")?;
    let dt = crate::tensor::dtype::float_for(p.dtype());
    let prob = a.float(1, "p")?;
    super::generator::with_generator(a.kw("generator"), "bernoulli", || {
        tv(match prob {
            Some(v) => creation::bernoulli(p.shape(), v, dt),
            None => creation::bernoulli_each(&p.detach()),
        })
    })
}

/// `normal(mean, std)` (tensors or numbers; numbers need `size`).
fn normal(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("normal", args, kw);
    a.check(
        3,
        &[
            "mean",
            "std",
            "size",
            "generator",
            "dtype",
            "device",
            "requires_grad",
        ],
    )?;
    let num = |v: Option<&Value>, d: f64| match v {
        None => Some(d),
        Some(v) => super::tensor::scalar_of(v).map(|s| s.as_f64()),
    };
    let (mean_v, std_v) = (a.get(0, "mean"), a.get(1, "std"));
    let (mean_n, std_n) = (num(mean_v, 0.0), num(std_v, 1.0));
    let as_t = |v: Option<&Value>, n: Option<f64>| match (v, n) {
        (_, Some(x)) => Ok(Tensor::scalar(Scalar::Float(x))),
        (Some(v), None) => tensor_of(v, "normal").map(|t| t.detach()),
        (None, None) => Err(type_err("normal(): missing argument")),
    };
    if let Some(s) = std_n.filter(|s| *s < 0.0) {
        return Err(crate::interp::err(
            crate::error::ErrorKind::RuntimeError,
            format!("normal expects std >= 0.0, but found std {s}"),
        ));
    }
    let (mean, std) = (as_t(mean_v, mean_n)?, as_t(std_v, std_n)?);
    if std_n.is_none() {
        let negative = std
            .cast(DType::F64)
            .and_then(|s| s.read(|s: &[f64]| s.iter().any(|v| *v < 0.0)))
            .map_err(te)?;
        if negative {
            return Err(crate::interp::err(
                crate::error::ErrorKind::RuntimeError,
                "normal expects all elements of std >= 0.0",
            ));
        }
    }
    let shape: Vec<usize> = match a.get(2, "size") {
        Some(v) => sizes(&shape_args(std::slice::from_ref(v), "normal")?, "normal")?,
        None if mean_n.is_some() && std_n.is_some() => {
            return Err(type_err(
                "normal() received an invalid combination of arguments: two numbers need size",
            ))
        }
        None => crate::tensor::shape::broadcast_shapes("normal", mean.shape(), std.shape())
            .map_err(te)?
            .to_vec(),
    };
    let tensor_dt = match (mean_n, std_n) {
        (None, _) => Some(mean.dtype()),
        (_, None) => Some(std.dtype()),
        _ => None,
    };
    let dt = match a.dtype(usize::MAX)? {
        Some(d) => d,
        None => tensor_dt.map_or_else(crate::tensor::dtype::default_float, |d| {
            crate::tensor::dtype::float_for(d)
        }),
    };
    // torch: normal_(mean, std) for two numbers; normal_(0, std) + mean for a tensor
    // mean and a number std; normal_(0, 1) * std + mean otherwise.
    let out = super::generator::with_generator(a.kw("generator"), "normal", || {
        match (mean_n, std_n) {
            (Some(m), Some(s)) => creation::normal(&shape, dt, m, s),
            (None, Some(s)) => creation::normal(&shape, dt, 0.0, s).and_then(|z| z.add(&mean)),
            _ => creation::randn(&shape, dt)
                .and_then(|z| z.mul(&std))
                .and_then(|z| z.add(&mean)),
        }
        .map_err(te)
    })?;
    let grad_src = |v: Option<&Value>| match v {
        Some(Value::Tensor(t)) if t.requires_grad() => Some(t.clone()),
        _ => None,
    };
    let srcs: Vec<Tensor> = [grad_src(mean_v), grad_src(std_v)]
        .into_iter()
        .flatten()
        .collect();
    if srcs.is_empty() {
        return finish(out, &a);
    }
    // torch's normal is not reparameterised: a tensor mean/std gets a zero gradient
    // (NormalBackward1: tensor mean, 2: tensor std, 3: both)
    let since = crate::autograd::next_node_id();
    let never = Tensor::scalar(Scalar::Bool(false));
    let mut out = out;
    for t in &srcs {
        out = crate::ops::where_(&never, t, &out).map_err(te)?;
    }
    let node = match (mean_n, std_n) {
        (None, Some(_)) => "NormalBackward1",
        (Some(_), None) => "NormalBackward2",
        _ => "NormalBackward3",
    };
    crate::autograd::names::name_composite(&out, since, node);
    finish(out, &a)
}
