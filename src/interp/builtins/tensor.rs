//! Tensors in scripts: argument helpers shared by the `tensor_*` builtin files, value
//! conversions (Kiln value <-> tensor, scalar, dtype) and the registration of the
//! tensor globals (`float32`, `int64`, creation functions, autograd API).

use super::{kwarg, native};
use crate::interp::value::{ClassKind, TypeTag, Value};
use crate::interp::{err, type_err, Exc, Interp, R};
use crate::tensor::convert::TensorList;
use crate::tensor::{DType, Scalar, Tensor};
use std::rc::Rc;

pub type Kw<'a> = &'a [(Rc<str>, Value)];

/// A tensor-layer error (span-less) as an exception; the caller attaches the span.
pub fn te(e: crate::Error) -> Exc {
    err(e.kind, e.message)
}

/// Positional-or-keyword argument access for a builtin with PyTorch's parameter names.
pub struct Args<'a> {
    pub fname: &'a str,
    pub pos: &'a [Value],
    pub kw: Kw<'a>,
}

impl<'a> Args<'a> {
    pub fn new(fname: &'a str, pos: &'a [Value], kw: Kw<'a>) -> Args<'a> {
        Args { fname, pos, kw }
    }

    /// The argument at position `i` or named `name` (None when absent or `None`).
    pub fn get(&self, i: usize, name: &str) -> Option<&'a Value> {
        self.pos
            .get(i)
            .or_else(|| kwarg(self.kw, name))
            .filter(|v| !matches!(v, Value::None))
    }

    /// Keyword-only argument.
    pub fn kw(&self, name: &str) -> Option<&'a Value> {
        kwarg(self.kw, name).filter(|v| !matches!(v, Value::None))
    }

    /// Rejects unknown keywords and more than `max_pos` positional arguments.
    pub fn check(&self, max_pos: usize, allowed: &[&str]) -> R<()> {
        if self.pos.len() > max_pos {
            return Err(type_err(format!(
                "{}() takes at most {} positional argument{} ({} given)",
                self.fname,
                max_pos,
                if max_pos == 1 { "" } else { "s" },
                self.pos.len()
            )));
        }
        if self.kw.is_empty() {
            return Ok(());
        }
        super::no_kw(self.fname, self.kw, allowed)?;
        match self.kw("device") {
            Some(d) if allowed.contains(&"device") => check_device(d, self.fname),
            _ => Ok(()),
        }
    }

    pub fn required(&self, i: usize, name: &str) -> R<&'a Value> {
        self.get(i, name).ok_or_else(|| {
            type_err(format!(
                "{}() missing required argument '{}'",
                self.fname, name
            ))
        })
    }

    pub fn int(&self, i: usize, name: &str) -> R<Option<i64>> {
        self.get(i, name).map(|v| int_of(v, self.fname)).transpose()
    }

    pub fn float(&self, i: usize, name: &str) -> R<Option<f64>> {
        self.get(i, name)
            .map(|v| float_of(v, self.fname))
            .transpose()
    }

    pub fn flag(&self, i: usize, name: &str, default: bool) -> R<bool> {
        match self.get(i, name) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(Value::Int(i)) => Ok(*i != 0),
            Some(v) => Err(type_err(format!(
                "{}(): argument '{}' must be bool, not {}",
                self.fname,
                name,
                v.type_name()
            ))),
        }
    }

    pub fn tensor(&self, i: usize, name: &str) -> R<Tensor> {
        tensor_of(self.required(i, name)?, self.fname)
    }

    /// An index tensor argument (`gather`, `index_select`, `scatter*`, `index_add`):
    /// int32 is accepted as torch accepts it, cast to int64.
    pub fn index(&self, i: usize, name: &str) -> R<Tensor> {
        let t = self.tensor(i, name)?;
        if t.dtype() == DType::I32 {
            return t.cast(DType::I64).map_err(te);
        }
        Ok(t)
    }

    pub fn dtype(&self, i: usize) -> R<Option<DType>> {
        self.get(i, "dtype").map(dtype_of).transpose()
    }

    /// `dim=` as a list of dims: absent = all (an empty list), an int, or a tuple/list.
    pub fn dims(&self, i: usize) -> R<Vec<i64>> {
        match self.get(i, "dim") {
            None => Ok(Vec::new()),
            Some(v) => int_list(v, self.fname),
        }
    }
}

/// A `device=` argument: `"cpu"` (or `"cpu:0"`, or `torch.device("cpu")`, which is that
/// string) is where every tensor lives; any other device is PyTorch's device type with no
/// backend here (a RuntimeError saying so), or not a device at all.
pub fn check_device(v: &Value, fname: &str) -> R<()> {
    let Value::Str(s) = v else {
        return Err(type_err(format!(
            "{fname}(): device must be a string or torch.device, not {}",
            v.type_name()
        )));
    };
    device_name(s, fname).and_then(|(kind, _)| match kind {
        "cpu" => Ok(()),
        other => Err(err(
            crate::error::ErrorKind::RuntimeError,
            format!(
                "{fname}(): cannot use device '{s}': Kiln has no {} backend, every tensor \
                 lives on the CPU (torch.cuda.is_available() is False; use device=\"cpu\")",
                other.to_uppercase()
            ),
        )),
    })
}

/// PyTorch's device types a device string may name.
const DEVICE_TYPES: &[&str] = &["cpu", "cuda", "mps", "xpu", "meta", "hip", "xla", "ipu"];

/// `"cuda:1"` as `("cuda", Some(1))`, checked as PyTorch parses a device string.
pub fn device_name<'s>(s: &'s str, fname: &str) -> R<(&'s str, Option<i64>)> {
    let (kind, index) = match s.split_once(':') {
        Some((k, i)) => (k, Some(i)),
        None => (s, None),
    };
    let bad = || {
        err(
            crate::error::ErrorKind::RuntimeError,
            format!(
                "{fname}(): Expected one of {} device type at start of device string: {s}",
                DEVICE_TYPES.join(", ")
            ),
        )
    };
    if !DEVICE_TYPES.contains(&kind) {
        return Err(bad());
    }
    let index = match index {
        None => None,
        Some(i) => Some(i.parse::<i64>().ok().filter(|n| *n >= 0).ok_or_else(|| {
            err(
                crate::error::ErrorKind::RuntimeError,
                format!("{fname}(): Invalid device string: '{s}'"),
            )
        })?),
    };
    Ok((kind, index))
}

pub fn int_of(v: &Value, fname: &str) -> R<i64> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Bool(b) => Ok(*b as i64),
        Value::Tensor(t) if t.numel() == 1 && !t.dtype().is_float() => {
            Ok(t.item().map_err(te)?.as_i64())
        }
        _ => Err(type_err(format!(
            "{}(): expected an int, got {}",
            fname,
            v.type_name()
        ))),
    }
}

pub fn float_of(v: &Value, fname: &str) -> R<f64> {
    match v {
        Value::Int(i) => Ok(*i as f64),
        Value::Bool(b) => Ok(*b as i64 as f64),
        Value::Float(f) => Ok(*f),
        Value::SymFloat(s) => Ok(s.concrete()),
        Value::Tensor(t) if t.numel() == 1 => Ok(t.item().map_err(te)?.as_f64()),
        _ => Err(type_err(format!(
            "{}(): expected a number, got {}",
            fname,
            v.type_name()
        ))),
    }
}

/// An int or a tuple/list of ints.
pub fn int_list(v: &Value, fname: &str) -> R<Vec<i64>> {
    match v {
        Value::Tuple(t) | Value::Size(t) => t.iter().map(|x| int_of(x, fname)).collect(),
        Value::List(l) => l.borrow().iter().map(|x| int_of(x, fname)).collect(),
        other => Ok(vec![int_of(other, fname)?]),
    }
}

/// A shape given as varargs (`zeros(2, 3)`) or one tuple/list (`zeros((2, 3))`).
pub fn shape_args(args: &[Value], fname: &str) -> R<Vec<i64>> {
    match args {
        [one @ (Value::Tuple(_) | Value::Size(_) | Value::List(_))] => int_list(one, fname),
        _ => args.iter().map(|x| int_of(x, fname)).collect(),
    }
}

/// A shape of sizes (negative sizes are PyTorch's RuntimeError).
pub fn sizes(shape: &[i64], fname: &str) -> R<Vec<usize>> {
    shape
        .iter()
        .map(|&d| {
            usize::try_from(d).map_err(|_| {
                err(
                    crate::error::ErrorKind::RuntimeError,
                    format!("{fname}(): negative dimension {d} in the requested shape"),
                )
            })
        })
        .collect()
}

pub fn tensor_of(v: &Value, fname: &str) -> R<Tensor> {
    match v {
        Value::Tensor(t) => Ok(t.clone()),
        _ => Err(type_err(format!(
            "{}(): expected a Tensor, got {}",
            fname,
            v.type_name()
        ))),
    }
}

/// A Python number as a tensor-layer scalar.
pub fn scalar_of(v: &Value) -> Option<Scalar> {
    match v {
        Value::Int(i) => Some(Scalar::Int(*i)),
        Value::Float(f) => Some(Scalar::Float(*f)),
        Value::SymFloat(s) => Some(Scalar::Float(s.concrete())),
        Value::Bool(b) => Some(Scalar::Bool(*b)),
        _ => None,
    }
}

/// A tensor, or a number turned into a 0-d tensor.
pub fn tensor_or_scalar(v: &Value, fname: &str) -> R<Tensor> {
    match scalar_of(v) {
        Some(s) => Ok(Tensor::scalar(s)),
        None => tensor_of(v, fname),
    }
}

/// `dtype=` values: `float32`, `float64`, `int32`, `int64`, `uint8`, `bool` (the
/// class), and `float`/`int` as PyTorch accepts them.
pub fn dtype_of(v: &Value) -> R<DType> {
    match v {
        Value::DType(d) => Ok(*d),
        Value::Class(c) => match c.kind {
            ClassKind::Builtin(TypeTag::Bool) => Ok(DType::Bool),
            ClassKind::Builtin(TypeTag::Float) => Ok(DType::F32),
            ClassKind::Builtin(TypeTag::Int) => Ok(DType::I64),
            _ => Err(type_err(format!("'{}' is not a dtype", c.name))),
        },
        _ => Err(type_err(format!(
            "dtype must be a torch.dtype (float32, float64, int64, int32, uint8 or bool), not {}",
            v.type_name()
        ))),
    }
}

/// A tensor-layer scalar as a Kiln number (float32 widened exactly to f64).
pub fn scalar_value(s: Scalar) -> Value {
    match s {
        Scalar::Bool(b) => Value::Bool(b),
        Scalar::Int(i) => Value::Int(i),
        Scalar::Float(f) => Value::Float(f),
    }
}

/// The one element of a tensor as a Kiln number (`int(t)`, `float(t)`).
/// `int(t)` / `float(t)`: a one-element tensor's number (PyTorch's ValueError for
/// more elements, where `t.item()` raises a RuntimeError).
pub fn tensor_scalar(t: &Tensor) -> R<Value> {
    if t.numel() != 1 {
        return Err(crate::interp::value_err(
            "only one element tensors can be converted to Python scalars",
        ));
    }
    Ok(scalar_value(t.item().map_err(te)?))
}

/// `.tolist()` as nested Kiln lists.
pub fn list_value(l: TensorList) -> Value {
    match l {
        TensorList::Scalar(s) => scalar_value(s),
        TensorList::List(items) => Value::list(items.into_iter().map(list_value).collect()),
    }
}

/// Applies `requires_grad=` to a freshly created tensor.
pub fn finish(t: Tensor, a: &Args) -> R<Value> {
    if a.flag(usize::MAX, "requires_grad", false)? {
        t.set_requires_grad(true).map_err(te)?;
    }
    Ok(Value::Tensor(t))
}

/// Registers every tensor global.
pub fn register(names: &mut super::Names) {
    names.insert("float32".into(), Value::DType(DType::F32));
    names.insert("int64".into(), Value::DType(DType::I64));
    names.insert("float64".into(), Value::DType(DType::F64));
    names.insert("double".into(), Value::DType(DType::F64));
    names.insert("int32".into(), Value::DType(DType::I32));
    names.insert("uint8".into(), Value::DType(DType::U8));
    names.insert("long".into(), Value::DType(DType::I64));
    let all = super::tensor_create::GLOBALS
        .iter()
        .chain(super::tensor_grad::GLOBALS)
        .copied()
        .chain(super::tensor_funcs::all_globals())
        .chain(super::tensor_more_funcs::all_globals())
        .chain(super::linalg_funcs::all_globals())
        .chain(super::compile::GLOBALS.iter().copied())
        .chain(super::export::GLOBALS.iter().copied())
        .chain(super::optim_step::GLOBALS.iter().copied())
        .chain(super::checkpoint::GLOBALS.iter().copied())
        .chain(super::seq_funcs::GLOBALS.iter().copied())
        .chain(super::norm_funcs::GLOBALS.iter().copied());
    for (n, f) in all {
        names.insert(n.into(), native(n, f));
    }
}

impl Interp {
    /// `repr`/`str` of the tensor-related values.
    pub fn tensor_repr(&self, v: &Value) -> Option<String> {
        match v {
            Value::Tensor(t) => Some(crate::tensor::format::format_tensor(t)),
            Value::DType(d) => Some(format!("torch.{}", d.name())),
            Value::GradMode(g) => Some(format!(
                "<{} object>",
                if g.enable { "enable_grad" } else { "no_grad" }
            )),
            _ => None,
        }
    }
}
