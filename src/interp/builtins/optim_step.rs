//! `_sgd_update_` and `_adam_update_`: the fused eager optimizer updates stdlib/optim.dl
//! tries before its op chain (src/tensor/optim_step.rs). They return False, writing
//! nothing, while a capture records (the recording must see the op chain) or when the
//! tensors do not fit; optim.dl then runs the op chain.

use super::tensor::{float_of, te, Args, Kw};
use crate::compile::capture::trace;
use crate::interp::value::{NativeImpl, Value};
use crate::interp::{Interp, R};
use crate::tensor::optim_step::{adam_update, sgd_update, AdamConsts};

pub const GLOBALS: &[(&str, NativeImpl)] = &[
    ("_sgd_update_", sgd_update_),
    ("_adam_update_", adam_update_),
    ("_compiling", compiling),
];

/// `_compiling()`: True while a `@compile` capture records (optim.dl then skips the
/// fused updates before passing them values, which would fix a runtime scalar such as
/// the learning rate to its value: `compile::capture::symfloat`).
fn compiling(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    Args::new("_compiling", args, kw).check(0, &[])?;
    Ok(Value::Bool(trace::active()))
}

/// `_sgd_update_(p, g, lr)`: `p -= lr * g` in one pass.
fn sgd_update_(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("_sgd_update_", args, kw);
    a.check(3, &[])?;
    if trace::active() {
        return Ok(Value::Bool(false));
    }
    let (p, g) = (a.tensor(0, "p")?, a.tensor(1, "g")?);
    let lr = float_of(a.required(2, "lr")?, a.fname)? as f32;
    Ok(Value::Bool(sgd_update(&p, &g, lr).map_err(te)?))
}

/// `_adam_update_(p, g, m, v, c1, b2, c2, bc2_sqrt, eps, step_size, decay=1)`: one Adam
/// step of `p` and its moments in one pass (c1 = 1 - b1, c2 = 1 - b2), after AdamW's
/// `p *= decay`.
fn adam_update_(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("_adam_update_", args, kw);
    a.check(11, &["decay"])?;
    // Before reading the 0-d constants: `.item()` would break a capture.
    if trace::active() {
        return Ok(Value::Bool(false));
    }
    let [p, g, m, v] = [0, 1, 2, 3].map(|i| a.tensor(i, "tensor"));
    let (p, g, m, v) = (p?, g?, m?, v?);
    let f = |i: usize| -> R<f32> { Ok(float_of(a.required(i, "constant")?, a.fname)? as f32) };
    let k = AdamConsts {
        c1: f(4)?,
        b2: f(5)?,
        c2: f(6)?,
        bc2_sqrt: f(7)?,
        eps: f(8)?,
        step_size: f(9)?,
    };
    let decay = match a.get(10, "decay") {
        Some(d) => float_of(d, a.fname)? as f32,
        None => 1.0,
    };
    Ok(Value::Bool(
        adam_update(&p, &g, &m, &v, k, decay).map_err(te)?,
    ))
}
