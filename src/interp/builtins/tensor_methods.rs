//! Tensor methods and attributes: the dispatcher `tensor_method` (elementwise,
//! conversion, in-place and autograd methods here; reductions, shape and linear algebra
//! in `tensor_reduce`), `.shape .ndim .dtype .grad .T ...` and their setters.

use super::tensor::{
    dtype_of, int_of, list_value, scalar_of, scalar_value, te, tensor_of, tensor_or_scalar, Args,
    Kw,
};
use super::tensor_ops::elementwise;
use crate::compile::capture::trace;
use crate::interp::value::Value;
use crate::interp::{type_err, R};
use crate::ops::{self, BinaryOp, UnaryOp};
use crate::tensor::inplace::Operand;
use crate::tensor::{DType, Scalar, Tensor};
use std::sync::LazyLock;

/// Every tensor method name (for `has_method` and REPL completion): the op table's
/// unary and binary methods and [`OTHER_METHODS`].
pub static TENSOR_METHODS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    let unary = UnaryOp::ALL
        .iter()
        .flat_map(|op| op.methods().iter().copied());
    let binary = BinaryOp::ALL.iter().flat_map(|op| {
        let both = [op.methods(), op.inplace_methods()];
        both.into_iter().flatten().copied()
    });
    unary
        .chain(binary)
        .chain(OTHER_METHODS.iter().copied())
        .chain(super::tensor_more::MORE_METHODS.iter().copied())
        .chain(super::linalg_funcs::METHODS.iter().copied())
        .collect()
});

/// The tensor methods that are not unary or binary ops of the table.
const OTHER_METHODS: &[&str] = &[
    "gelu",
    "clamp",
    "clip",
    "where",
    "masked_fill",
    "matmul",
    "mm",
    "dot",
    "outer",
    "sum",
    "mean",
    "max",
    "min",
    "argmax",
    "argmin",
    "var",
    "std",
    "prod",
    "logsumexp",
    "softmax",
    "log_softmax",
    "cumsum",
    "all",
    "any",
    "norm",
    "reshape",
    "view",
    "flatten",
    "squeeze",
    "unsqueeze",
    "transpose",
    "permute",
    "expand",
    "expand_as",
    "view_as",
    "reshape_as",
    "contiguous",
    "split",
    "chunk",
    "repeat",
    "narrow",
    "t",
    "size",
    "numel",
    "dim",
    "index_select",
    "gather",
    "scatter_add",
    "item",
    "tolist",
    "float",
    "double",
    "long",
    "int",
    "byte",
    "bool",
    "to",
    "cpu",
    "cuda",
    "clone",
    "detach",
    "zero_",
    "fill_",
    "copy_",
    "clamp_",
    "requires_grad_",
    "backward",
    "register_hook",
    "register_post_accumulate_grad_hook",
    "retain_grad",
];

fn tv(r: crate::Result<Tensor>) -> R<Value> {
    r.map(Value::Tensor).map_err(te)
}

/// Calls method `name` of tensor `t`.
pub fn tensor_method(t: &Tensor, name: &str, args: &[Value], kw: Kw) -> R<Value> {
    match super::generator::of_kw(kw) {
        Some(g) => super::generator::with_generator(Some(g), name, || method(t, name, args, kw)),
        None => method(t, name, args, kw),
    }
}

/// `tensor_method` on this thread's stream (or the one `generator=` put in place), its
/// result's node named as torch's for the calls Kiln composes (call_nodes.rs).
fn method(t: &Tensor, name: &str, args: &[Value], kw: Kw) -> R<Value> {
    let since = crate::autograd::next_node_id();
    let a = Args::new(name, args, kw);
    let v = dispatch(t, name, &a)?;
    super::call_nodes::name_result(t, name, &a, since, &v);
    Ok(v)
}

fn dispatch(t: &Tensor, name: &str, a: &Args) -> R<Value> {
    if name == "round" && (!a.pos.is_empty() || !a.kw.is_empty()) {
        a.check(1, &["decimals"])?;
        return tv(ops::more::round_decimals(
            t,
            a.int(0, "decimals")?.unwrap_or(0),
        ));
    }
    if let Some(op) = UnaryOp::of_method(name) {
        a.check(0, &[])?;
        return tv(ops::unary(op, t));
    }
    if let Some(op) = BinaryOp::of_method(name) {
        return binary_method(t, op, a);
    }
    if let Some(v) = elementwise_method(t, name, a)? {
        return Ok(v);
    }
    if let Some(v) = convert_method(t, name, a)? {
        return Ok(v);
    }
    if let Some(v) = inplace_method(t, name, a)? {
        return Ok(v);
    }
    if let Some(v) = super::tensor_reduce::reduce_method(t, name, a)? {
        return Ok(v);
    }
    if let Some(v) = super::tensor_reduce::shape_method(t, name, a)? {
        return Ok(v);
    }
    if let Some(v) = super::tensor_more::more_method(t, name, a)? {
        return Ok(v);
    }
    if let Some(v) = super::linalg_funcs::linalg_method(t, name, a)? {
        return Ok(v);
    }
    Err(crate::interp::err(
        crate::error::ErrorKind::AttributeError,
        format!("'Tensor' object has no attribute '{name}'"),
    ))
}

/// `t.add(other, alpha=1)` and the other binary methods.
fn binary_method(t: &Tensor, op: BinaryOp, a: &Args) -> R<Value> {
    if let (BinaryOp::Div, Some(mode)) = (op, a.kw("rounding_mode")) {
        return div_rounding(t, a, mode);
    }
    a.check(1, &["other", "exponent", "alpha", "rounding_mode"])?;
    let other = a
        .get(0, "other")
        .or_else(|| a.kw("exponent"))
        .ok_or_else(|| type_err(format!("{}() missing required argument 'other'", a.fname)))?;
    let other = match (a.kw("alpha"), op) {
        (Some(al), BinaryOp::Add | BinaryOp::Sub) => scaled(t, op, a.fname, other, al)?,
        _ => other.clone(),
    };
    // `&`, `|`, `^` are Tensor methods only as logical_and/or/xor: PyTorch's take each
    // operand as bool (nonzero is True), where the rows are bitwise on integers
    let (t, other) = match op {
        BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => (
            t.cast(DType::Bool).map_err(te)?,
            match &other {
                Value::Tensor(u) => Value::Tensor(u.cast(DType::Bool).map_err(te)?),
                v => {
                    return Err(type_err(format!(
                        "{}(): argument 'other' (position 1) must be Tensor, not {}",
                        a.fname,
                        v.type_name()
                    )))
                }
            },
        ),
        _ => (t.clone(), other),
    };
    match elementwise(op, &Value::Tensor(t), &other)? {
        Some(v) => Ok(v),
        None => Err(type_err(format!(
            "{}(): argument 'other' must be a Tensor or a number, not {}",
            a.fname,
            other.type_name()
        ))),
    }
}

/// `t.div(other, rounding_mode="floor" | "trunc")`.
fn div_rounding(t: &Tensor, a: &Args, mode: &Value) -> R<Value> {
    a.check(1, &["other", "rounding_mode"])?;
    let floor = match mode {
        Value::Str(s) if &**s == "floor" => true,
        Value::Str(s) if &**s == "trunc" => false,
        v => {
            let found = match v {
                Value::Str(s) => format!("'{s}'"),
                v => v.type_name().to_string(),
            };
            return Err(crate::interp::err(
                crate::error::ErrorKind::RuntimeError,
                format!(
                    "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found {found}"
                ),
            ));
        }
    };
    let other = tensor_or_scalar(a.required(0, "other")?, "div")?;
    tv(ops::more::div_rounding(t, &other, floor))
}

/// `other * alpha` for `t.add/sub(other, alpha=)`, computed in the result's dtype as
/// PyTorch's (`i32 + bool * 2` stays int32; on a bool result alpha is a flag, so
/// `b + b * 2` stays bool), with PyTorch's errors for an alpha that dtype does not take.
/// `sub` with a bool operand raises its own error first, whatever alpha is.
fn scaled(t: &Tensor, op: BinaryOp, fname: &str, other: &Value, alpha: &Value) -> R<Value> {
    let bool_operand = t.dtype() == DType::Bool
        || matches!(other, Value::Bool(_))
        || matches!(other, Value::Tensor(u) if u.dtype() == DType::Bool);
    if op == BinaryOp::Sub && bool_operand {
        // PyTorch's NotImplementedError for `-` on bools (the op table's check)
        elementwise(op, &Value::Tensor(t.clone()), other)?;
    }
    let out = match other {
        Value::Tensor(u) => crate::tensor::kernels::binary::result_type(t, u),
        v => match scalar_of(v) {
            Some(s) => s.promote_with(t.dtype()),
            None => return Ok(other.clone()),
        },
    };
    let al = match alpha {
        Value::Tensor(x) if x.numel() == 1 => x.item().map_err(te)?,
        v => scalar_of(v).ok_or_else(|| {
            type_err(format!(
                "{fname}(): argument 'alpha' must be Number, not {}",
                v.type_name()
            ))
        })?,
    };
    let runtime = |m: &str| crate::interp::err(crate::error::ErrorKind::RuntimeError, m);
    let al =
        match (al, out) {
            (Scalar::Float(_), o) if !o.is_float() => return Err(runtime(
                "For integral input tensors, argument alpha must not be a floating point number.",
            )),
            (Scalar::Bool(_), o) if o != DType::Bool => {
                return Err(runtime("Boolean alpha only supported for Boolean results."))
            }
            (al, DType::Bool) => Scalar::Bool(al.as_bool()),
            (al, _) => al,
        };
    Ok(match other {
        Value::Tensor(u) => {
            let u = ops::to_dtype(u, out).map_err(te)?;
            Value::Tensor(ops::binary_scalar(BinaryOp::Mul, &u, al, false).map_err(te)?)
        }
        v => {
            let s = scalar_of(v).unwrap_or(Scalar::Int(0));
            match out {
                DType::Bool => Value::Bool(s.as_bool() && al.as_bool()),
                o if o.is_float() => Value::Float(s.as_f64() * al.as_f64()),
                _ => Value::Int(s.as_i64().wrapping_mul(al.as_i64())),
            }
        }
    })
}

fn bound(a: &Args, i: usize, name: &str) -> R<Option<f64>> {
    a.float(i, name)
}

fn elementwise_method(t: &Tensor, name: &str, a: &Args) -> R<Option<Value>> {
    let v = match name {
        "gelu" => {
            a.check(0, &["approximate"])?;
            let op = match a.kw("approximate") {
                None => UnaryOp::Gelu,
                Some(Value::Str(s)) if &**s == "none" => UnaryOp::Gelu,
                Some(Value::Str(s)) if &**s == "tanh" => UnaryOp::GeluTanh,
                Some(v) => {
                    return Err(crate::interp::value_err(format!(
                        "gelu(): approximate must be 'none' or 'tanh', got {}",
                        v.type_name()
                    )))
                }
            };
            tv(ops::unary(op, t))?
        }
        "clamp" | "clip" => {
            a.check(2, &["min", "max"])?;
            let tensor = |i, n| match a.get(i, n) {
                Some(Value::Tensor(b)) => Some(b.clone()),
                _ => None,
            };
            match (tensor(0, "min"), tensor(1, "max")) {
                (None, None) => tv(ops::clamp(t, bound(a, 0, "min")?, bound(a, 1, "max")?))?,
                (lo, hi) => {
                    let num = |i, n, b: &Option<Tensor>| match (b, a.get(i, n)) {
                        (None, Some(v)) => tensor_or_scalar(v, a.fname).map(Some),
                        (b, _) => Ok(b.clone()),
                    };
                    let (lo, hi) = (num(0, "min", &lo)?, num(1, "max", &hi)?);
                    tv(ops::more::clamp_tensors(t, lo.as_ref(), hi.as_ref()))?
                }
            }
        }
        "where" => {
            a.check(2, &["condition", "other"])?;
            let cond = a.tensor(0, "condition")?;
            let other = tensor_or_scalar(a.required(1, "other")?, "where")?;
            tv(ops::where_(&cond, t, &other))?
        }
        "masked_fill" => {
            a.check(2, &["mask", "value"])?;
            let mask = a.tensor(0, "mask")?;
            let v = a.required(1, "value")?;
            let s =
                scalar_of(v).ok_or_else(|| type_err("masked_fill(): value must be a number"))?;
            tv(t.masked_fill(&mask, s))?
        }
        _ => return Ok(None),
    };
    Ok(Some(v))
}

fn convert_method(t: &Tensor, name: &str, a: &Args) -> R<Option<Value>> {
    let cast = |d: DType| -> R<Value> {
        a.check(0, &[])?;
        tv(ops::to_dtype(t, d))
    };
    let v = match name {
        "item" => {
            a.check(0, &[])?;
            scalar_value(t.item().map_err(te)?)
        }
        "tolist" => {
            a.check(0, &[])?;
            list_value(t.tolist().map_err(te)?)
        }
        "float" => cast(DType::F32)?,
        "double" => cast(DType::F64)?,
        "long" => cast(DType::I64)?,
        "int" => cast(DType::I32)?,
        "byte" => cast(DType::U8)?,
        "bool" => cast(DType::Bool)?,
        "to" => to_method(t, a)?,
        "cpu" => {
            a.check(0, &["memory_format"])?;
            Value::Tensor(t.clone())
        }
        "cuda" => {
            a.check(1, &["device", "non_blocking", "memory_format"])?;
            return Err(crate::interp::err(
                crate::error::ErrorKind::RuntimeError,
                "cuda(): Kiln has no GPU backend; every tensor lives on the CPU \
                 (torch.cuda.is_available() is False)",
            ));
        }
        "clone" => {
            a.check(0, &[])?;
            tv(ops::clone(t))?
        }
        "detach" => {
            a.check(0, &[])?;
            Value::Tensor(t.detached())
        }
        "numel" => {
            a.check(0, &[])?;
            crate::interp::capture::symint::numel_value(t)
        }
        "dim" => {
            a.check(0, &[])?;
            Value::Int(t.ndim() as i64)
        }
        "size" => {
            a.check(1, &["dim"])?;
            match a.int(0, "dim")? {
                Some(d) => {
                    t.size(d).map_err(te)?;
                    crate::interp::capture::symint::size_value(t, trace::dim(d, t.ndim()))
                }
                None => shape_value(t),
            }
        }
        "register_hook" => super::tensor_grad::register_hook(t, a.pos, a.kw)?,
        "register_post_accumulate_grad_hook" => {
            super::tensor_grad::register_post_accumulate_grad_hook(t, a.pos, a.kw)?
        }
        "retain_grad" => {
            a.check(0, &[])?;
            t.retain_grad();
            Value::None
        }
        _ => return Ok(None),
    };
    Ok(Some(v))
}

/// An op table row's in-place method (`t.add_(u, alpha=2)`, `t.pow_(exponent=2)`):
/// returns the tensor.
fn binary_inplace(t: &Tensor, op: BinaryOp, name: &str, a: &Args) -> R<Value> {
    a.check(1, &["other", "exponent", "alpha"])?;
    let mut other = a
        .get(0, "other")
        .or_else(|| a.kw("exponent"))
        .ok_or_else(|| type_err(format!("{name}() missing required argument 'other'")))?
        .clone();
    if let (Some(al), BinaryOp::Add | BinaryOp::Sub) = (a.kw("alpha"), op) {
        other = scaled(t, op, name, &other, al)?;
    }
    let operand = match &other {
        Value::Tensor(x) => Operand::Tensor(x),
        v => Operand::Scalar(
            scalar_of(v)
                .ok_or_else(|| type_err(format!("{name}(): other must be a Tensor or a number")))?,
        ),
    };
    t.binary_(op, operand).map_err(te)?;
    Ok(Value::Tensor(t.clone()))
}

/// The in-place methods; each returns the tensor itself.
fn inplace_method(t: &Tensor, name: &str, a: &Args) -> R<Option<Value>> {
    if let Some(op) = BinaryOp::of_inplace_method(name) {
        return binary_inplace(t, op, name, a).map(Some);
    }
    match name {
        "zero_" => {
            a.check(0, &[])?;
            t.zero_().map_err(te)?;
        }
        "fill_" => {
            a.check(1, &["value"])?;
            let v = a.required(0, "value")?;
            let s = scalar_of(v)
                .or_else(|| match v {
                    Value::Tensor(x) => x.item().ok(),
                    _ => None,
                })
                .ok_or_else(|| type_err("fill_(): value must be a number"))?;
            t.fill_(s).map_err(te)?;
        }
        "copy_" => {
            a.check(1, &["src"])?;
            t.copy_(&a.tensor(0, "src")?).map_err(te)?;
        }
        "clamp_" => {
            a.check(2, &["min", "max"])?;
            t.clamp_(bound(a, 0, "min")?, bound(a, 1, "max")?)
                .map_err(te)?;
        }
        "requires_grad_" => {
            a.check(1, &["requires_grad"])?;
            t.set_requires_grad(a.flag(0, "requires_grad", true)?)
                .map_err(te)?;
        }
        _ => return Ok(None),
    }
    Ok(Some(Value::Tensor(t.clone())))
}

/// `t.shape` as a tuple.
pub fn shape_value(t: &Tensor) -> Value {
    crate::interp::capture::symint::shape_value(t)
}

/// `t.to(dtype)`, `t.to(device)`, `t.to(device, dtype)`, `t.to(other)` and the keywords
/// `dtype= device= non_blocking= copy=` (PyTorch's overloads). The CPU is the only
/// device, so the result is `t` itself unless the dtype changes or `copy=True`.
fn to_method(t: &Tensor, a: &Args) -> R<Value> {
    a.check(
        4,
        &["dtype", "device", "non_blocking", "copy", "memory_format"],
    )?;
    let mut dtype = a.kw("dtype").map(dtype_of).transpose()?;
    let device_first = matches!(a.pos.first(), Some(Value::Str(_)));
    for (i, v) in a.pos.iter().enumerate() {
        match (i, v) {
            (_, Value::None) => {}
            (0, Value::Str(_)) => super::tensor::check_device(v, "to")?,
            (0, Value::Tensor(o)) => dtype = Some(o.dtype()),
            (0, v) => dtype = Some(dtype_of(v)?),
            (1, v) if device_first => dtype = Some(dtype_of(v)?),
            // non_blocking, copy
            (_, Value::Bool(_)) => {}
            (_, v) => {
                return Err(type_err(format!(
                    "to() received an invalid combination of arguments: argument {} is {}",
                    i + 1,
                    v.type_name()
                )))
            }
        }
    }
    let copy = a.kw("copy").is_some_and(|v| matches!(v, Value::Bool(true)));
    match dtype {
        Some(d) if d != t.dtype() => tv(ops::to_dtype(t, d)),
        _ if copy => tv(ops::clone(t)),
        _ => Ok(Value::Tensor(t.clone())),
    }
}

/// `t.data = u`: u's values replace t's, outside autograd (t keeps its identity, its
/// `.grad` and its flags). Kiln copies them into t's storage rather than making t share
/// u's, so u must have t's shape and dtype (anything else is refused: a tensor's layout
/// never changes under the handles that hold it); the copy bumps t's version, so a graph
/// that saved t's old values refuses to backward instead of reading the new ones.
fn set_data(t: &Tensor, v: &Value) -> R<()> {
    let Value::Tensor(u) = v else {
        return Err(type_err(format!(
            "Variable data has to be a tensor, but got {}",
            v.type_name()
        )));
    };
    if u.shape() != t.shape() || u.dtype() != t.dtype() {
        return Err(crate::interp::err(
            crate::error::ErrorKind::RuntimeError,
            format!(
                "t.data = u: Kiln copies u's values into t, so u must have t's shape {} and dtype {} (got {} {}); make a new tensor instead",
                crate::tensor::shape::fmt_shape(t.shape()),
                t.dtype().torch_name(),
                crate::tensor::shape::fmt_shape(u.shape()),
                u.dtype().torch_name()
            ),
        ));
    }
    crate::ir::record::graph_break(crate::ir::record::BreakReason::InPlace("t.data = u"));
    let _off = crate::autograd::no_grad();
    t.detach().copy_(u).map_err(te)
}

/// Data attributes of a tensor.
pub fn tensor_attr(t: &Tensor, name: &str) -> Option<Value> {
    Some(match name {
        "shape" => shape_value(t),
        "ndim" => Value::Int(t.ndim() as i64),
        "dtype" => Value::DType(t.dtype()),
        "requires_grad" => Value::Bool(t.requires_grad()),
        "grad" => {
            let g = t.grad();
            crate::ir::record::note_grad_read(t, g.as_ref());
            g.map(Value::Tensor).unwrap_or(Value::None)
        }
        "is_leaf" => Value::Bool(t.is_leaf()),
        // every tensor lives on the CPU (`torch.device("cpu")` is that string)
        "device" => Value::str("cpu"),
        "is_cuda" => Value::Bool(false),
        "is_cpu" => Value::Bool(true),
        "retains_grad" => Value::Bool(t.retains_grad()),
        "T" => Value::Tensor(t.t()),
        "mT" if t.ndim() >= 2 => Value::Tensor(t.transpose(-2, -1).ok()?),
        "data" => Value::Tensor(t.detached()),
        "grad_fn" => super::grad_fn::of_tensor(t),
        _ => return None,
    })
}

/// `t.grad = g`, `t.requires_grad = b`, `t.data = u`.
pub fn set_tensor_attr(t: &Tensor, name: &str, v: &Value) -> R<()> {
    match name {
        "data" => set_data(t, v)?,
        "grad" => match v {
            Value::None => t.set_grad(None),
            other => {
                let g = tensor_of(other, "grad")?;
                if g.shape() != t.shape() {
                    return Err(crate::interp::err(
                        crate::error::ErrorKind::ShapeError,
                        "assigned grad has data of a different size",
                    ));
                }
                t.set_grad(Some(g));
            }
        },
        "requires_grad" => {
            let on = match v {
                Value::Bool(b) => *b,
                other => int_of(other, "requires_grad")? != 0,
            };
            t.set_requires_grad(on).map_err(te)?;
        }
        _ => {
            return Err(crate::interp::err(
                crate::error::ErrorKind::AttributeError,
                format!("'Tensor' object attribute '{name}' is read-only"),
            ))
        }
    }
    Ok(())
}
