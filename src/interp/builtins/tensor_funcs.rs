//! Functional tensor globals: `exp(x)`, `softmax(x, dim)`, ... forward to the method of
//! their first argument; `cat stack where one_hot conv1d conv2d max_pool2d avg_pool2d`
//! take several tensors.

use super::tensor::{int_list, te, tensor_or_scalar, Args, Kw};
use super::tensor_methods::tensor_method;
use super::tensor_reduce::tensor_seq;
use crate::interp::value::{NativeImpl, Value};
use crate::interp::{type_err, Interp, R};
use crate::ops::{BinaryOp, UnaryOp};
use crate::optable::binary::binary_table;
use crate::optable::unary::unary_table;
use crate::tensor::kernels::conv::{ConvParams, PoolParams};
use crate::tensor::{indexing, linalg, views, Tensor};

/// Calls `args[0].name(*args[1:])`.
pub fn forward(name: &str, args: &[Value], kw: Kw) -> R<Value> {
    match args.split_first() {
        Some((Value::Tensor(t), rest)) => tensor_method(t, name, rest, kw),
        Some((other, _)) => Err(type_err(format!(
            "{}(): argument 'input' must be Tensor, not {}",
            name,
            other.type_name()
        ))),
        None => Err(type_err(format!(
            "{name}() missing required argument 'input'"
        ))),
    }
}

/// `sum(t)`, `max(t, dim)`, ...: the Python builtins call this for a tensor argument.
pub fn builtin_on_tensor(name: &str, args: &[Value], kw: Kw) -> Option<R<Value>> {
    match args.first() {
        Some(Value::Tensor(_)) => Some(forward(name, args, kw)),
        _ => None,
    }
}

/// Natives that forward to the tensor method of the same name (`FORWARDED` table).
macro_rules! forwarders {
    ($($name:literal => $f:ident),* $(,)?) => {
        $(fn $f(i: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
            let v = forward($name, args, kw)?;
            i.named_result($name, v)
        })*
        const FORWARDED: &[(&str, NativeImpl)] = &[$(($name, $f)),*];
    };
}
pub(super) use forwarders;

forwarders! {
    "gelu" => f_gelu, "clamp" => f_clamp, "clip" => f_clip, "mean" => f_mean, "var" => f_var,
    "std" => f_std, "prod" => f_prod, "logsumexp" => f_logsumexp, "softmax" => f_softmax,
    "log_softmax" => f_log_softmax, "cumsum" => f_cumsum, "argmax" => f_argmax,
    "argmin" => f_argmin, "norm" => f_norm, "reshape" => f_reshape, "flatten" => f_flatten,
    "squeeze" => f_squeeze, "unsqueeze" => f_unsqueeze, "transpose" => f_transpose,
    "permute" => f_permute, "narrow" => f_narrow, "split" => f_split, "chunk" => f_chunk,
    "matmul" => f_matmul, "mm" => f_mm, "dot" => f_dot, "outer" => f_outer,
    "index_select" => f_index_select, "gather" => f_gather, "scatter_add" => f_scatter_add,
    "masked_fill" => f_masked_fill, "numel" => f_numel, "clone" => f_clone,
    "detach" => f_detach,
}

/// A forwarder for every method name of the op table (registered where `global`).
macro_rules! unary_forwarders {
    ($($V:ident {
        name: $name:literal, methods: [$($m:literal),*], global: $global:literal,
        saves: $saves:ident, f32: [$($f:tt)*], int: [$($i:tt)*], grad: [$($g:tt)*],
        jit: [$($j:tt)*], reference: [$($r:tt)*], onnx: [$($o:tt)*],
    })*) => {
        const UNARY_FORWARDED: &[(UnaryOp, &str, NativeImpl)] = &[$($((UnaryOp::$V, $m, {
            fn f(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
                forward($m, args, kw)
            }
            f
        }),)*)*];
    };
}

unary_table!(unary_forwarders);

/// A forwarder for every method name of the binary op table (registered where `global`).
macro_rules! binary_forwarders {
    ($($V:ident {
        name: $name:literal, methods: [$($m:literal),*], global: $global:literal,
        inplace: [$($ip:literal),*], dtype: $dt:ident, saves: [$($s:ident),*],
        f32: [$($f:tt)*], int: [$($i:tt)*], grad: [$($g:tt)*], fused: [$($k:tt)*],
        onnx: [$($o:tt)*],
    })*) => {
        const BINARY_FORWARDED: &[(BinaryOp, &str, NativeImpl)] = &[$($((BinaryOp::$V, $m, {
            fn f(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
                forward($m, args, kw)
            }
            f
        }),)*)*];
    };
}

binary_table!(binary_forwarders);

pub const GLOBALS: &[(&str, NativeImpl)] = &[
    ("cat", cat),
    ("stack", stack),
    ("where", where_),
    ("one_hot", one_hot),
    ("conv1d", conv1d),
    ("conv2d", conv2d),
    ("max_pool2d", max_pool2d),
    ("avg_pool2d", avg_pool2d),
];

/// Every functional global (the forwarded ones, the op table's and the multi-tensor ones).
pub fn all_globals() -> impl Iterator<Item = (&'static str, NativeImpl)> {
    let unary = UNARY_FORWARDED
        .iter()
        .filter(|(op, _, _)| op.is_global())
        .map(|&(_, name, f)| (name, f));
    let binary = BINARY_FORWARDED
        .iter()
        .filter(|(op, _, _)| op.is_global())
        .map(|&(_, name, f)| (name, f));
    FORWARDED
        .iter()
        .chain(GLOBALS.iter())
        .copied()
        .chain(unary)
        .chain(binary)
}

fn tv(r: crate::Result<Tensor>) -> R<Value> {
    r.map(Value::Tensor).map_err(te)
}

fn cat(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("cat", args, kw);
    a.check(2, &["tensors", "dim"])?;
    let ts = tensor_seq(a.required(0, "tensors")?, "cat")?;
    tv(views::cat(&ts, a.int(1, "dim")?.unwrap_or(0)))
}

fn stack(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("stack", args, kw);
    a.check(2, &["tensors", "dim"])?;
    let ts = tensor_seq(a.required(0, "tensors")?, "stack")?;
    tv(views::stack(&ts, a.int(1, "dim")?.unwrap_or(0)))
}

fn where_(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("where", args, kw);
    a.check(3, &["condition", "input", "other"])?;
    let c = a.tensor(0, "condition")?;
    let x = tensor_or_scalar(a.required(1, "input")?, "where")?;
    let y = tensor_or_scalar(a.required(2, "other")?, "where")?;
    tv(crate::ops::where_(&c, &x, &y))
}

fn one_hot(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("one_hot", args, kw);
    a.check(2, &["input", "num_classes"])?;
    let t = a.tensor(0, "input")?;
    tv(indexing::one_hot(
        &t,
        a.int(1, "num_classes")?.unwrap_or(-1),
    ))
}

/// An int or a pair (`stride=2`, `stride=(2, 1)`), as non-negative sizes.
fn pair(a: &Args, i: usize, name: &str, default: usize) -> R<(usize, usize)> {
    let v = match a.get(i, name) {
        None => return Ok((default, default)),
        Some(v) => int_list(v, a.fname)?,
    };
    let to = |x: i64| {
        usize::try_from(x).map_err(|_| {
            crate::interp::value_err(format!("{}(): {name} must be non-negative", a.fname))
        })
    };
    match v.as_slice() {
        [x] => Ok((to(*x)?, to(*x)?)),
        [x, y] => Ok((to(*x)?, to(*y)?)),
        _ => Err(type_err(format!(
            "{}(): {name} must be an int or a pair of ints",
            a.fname
        ))),
    }
}

fn bias(a: &Args) -> R<Option<Tensor>> {
    a.get(2, "bias")
        .map(|v| super::tensor::tensor_of(v, a.fname))
        .transpose()
}

fn conv2d(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("conv2d", args, kw);
    a.check(
        6,
        &["input", "weight", "bias", "stride", "padding", "dilation"],
    )?;
    let (x, w, b) = (a.tensor(0, "input")?, a.tensor(1, "weight")?, bias(&a)?);
    let p = ConvParams {
        stride: pair(&a, 3, "stride", 1)?,
        padding: pair(&a, 4, "padding", 0)?,
        dilation: pair(&a, 5, "dilation", 1)?,
    };
    tv(linalg::conv2d(&x, &w, b.as_ref(), p))
}

fn conv1d(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("conv1d", args, kw);
    a.check(
        6,
        &["input", "weight", "bias", "stride", "padding", "dilation"],
    )?;
    let (x, w, b) = (a.tensor(0, "input")?, a.tensor(1, "weight")?, bias(&a)?);
    let one = |i: usize, n: &str, d: usize| pair(&a, i, n, d).map(|p| p.0);
    let (s, p, d) = (
        one(3, "stride", 1)?,
        one(4, "padding", 0)?,
        one(5, "dilation", 1)?,
    );
    tv(linalg::conv1d(&x, &w, b.as_ref(), s, p, d))
}

fn pool(fname: &str, args: &[Value], kw: Kw) -> R<(Tensor, PoolParams)> {
    let a = Args::new(fname, args, kw);
    a.check(4, &["input", "kernel_size", "stride", "padding"])?;
    let x = a.tensor(0, "input")?;
    let k = pair(&a, 1, "kernel_size", 0)?;
    if k.0 == 0 || k.1 == 0 {
        return Err(type_err(format!(
            "{fname}() missing or zero argument 'kernel_size'"
        )));
    }
    let s = match a.get(2, "stride") {
        None => k,
        Some(_) => pair(&a, 2, "stride", 1)?,
    };
    let p = PoolParams {
        kernel: k,
        stride: s,
        padding: pair(&a, 3, "padding", 0)?,
    };
    Ok((x, p))
}

fn max_pool2d(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let (x, p) = pool("max_pool2d", args, kw)?;
    tv(linalg::max_pool2d(&x, p))
}

fn avg_pool2d(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let (x, p) = pool("avg_pool2d", args, kw)?;
    tv(linalg::avg_pool2d(&x, p))
}
