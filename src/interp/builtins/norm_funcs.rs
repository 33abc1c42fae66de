//! The fused normalisation globals `_batch_norm`, `_layer_norm` and `_group_norm` that
//! nn.functional's `batch_norm` / `layer_norm` / `group_norm` call (see `tensor::norm`,
//! `tensor::group_norm`).

use super::tensor::{te, tensor_of, Args, Kw};
use crate::interp::value::{NativeImpl, Value};
use crate::interp::{Interp, R};
use crate::tensor::norm::{self, BatchNormArgs};
use crate::tensor::Tensor;

pub const GLOBALS: &[(&str, NativeImpl)] = &[
    ("_batch_norm", batch_norm),
    ("_layer_norm", layer_norm),
    ("_group_norm", group_norm),
];

/// An optional tensor argument (absent or None: None).
fn opt_tensor(a: &Args, i: usize, name: &str) -> R<Option<Tensor>> {
    a.get(i, name).map(|v| tensor_of(v, a.fname)).transpose()
}

fn batch_norm(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("_batch_norm", args, kw);
    let names = [
        "input",
        "running_mean",
        "running_var",
        "weight",
        "bias",
        "training",
        "momentum",
        "eps",
    ];
    a.check(8, &names)?;
    let x = a.tensor(0, "input")?;
    let (rm, rv) = (
        opt_tensor(&a, 1, "running_mean")?,
        opt_tensor(&a, 2, "running_var")?,
    );
    let (w, b) = (opt_tensor(&a, 3, "weight")?, opt_tensor(&a, 4, "bias")?);
    let o = BatchNormArgs {
        running: rm.as_ref().zip(rv.as_ref()),
        weight: w.as_ref(),
        bias: b.as_ref(),
        training: a.flag(5, "training", false)?,
        momentum: a.float(6, "momentum")?.unwrap_or(0.1),
        eps: a.float(7, "eps")?.unwrap_or(1e-5),
    };
    norm::batch_norm(&x, &o).map(Value::Tensor).map_err(te)
}

fn layer_norm(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("_layer_norm", args, kw);
    a.check(5, &["input", "dims", "weight", "bias", "eps"])?;
    let x = a.tensor(0, "input")?;
    let dims = a.int(1, "dims")?.unwrap_or(1).max(0) as usize;
    let (w, b) = (opt_tensor(&a, 2, "weight")?, opt_tensor(&a, 3, "bias")?);
    let eps = a.float(4, "eps")?.unwrap_or(1e-5);
    norm::layer_norm(&x, dims, w.as_ref(), b.as_ref(), eps)
        .map(Value::Tensor)
        .map_err(te)
}

fn group_norm(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("_group_norm", args, kw);
    a.check(5, &["input", "num_groups", "weight", "bias", "eps"])?;
    let x = a.tensor(0, "input")?;
    let groups = a.int(1, "num_groups")?.unwrap_or(1).max(0) as usize;
    let (w, b) = (opt_tensor(&a, 2, "weight")?, opt_tensor(&a, 3, "bias")?);
    let eps = a.float(4, "eps")?.unwrap_or(1e-5);
    crate::tensor::group_norm::group_norm(&x, groups, w.as_ref(), b.as_ref(), eps)
        .map(Value::Tensor)
        .map_err(te)
}
