//! The native `io` module: `.npy`, safetensors and CSV files as tensors, on top of
//! `crate::io` (which does the formats and the atomic writes).
//!
//! `save_npy(path, t)` follows `numpy.save(file, arr)`; `save_safetensors(tensors, path)`
//! follows `safetensors.torch.save_file(tensors, filename)` (the other argument order is
//! accepted too: the path is the string). Saved tensors are detached copies in C order.

use super::mathmod::module;
use super::{arity, kwarg, no_kw};
use crate::interp::value::{ClassKind, DictMap, Key, ModuleObj, TypeTag, Value};
use crate::interp::{type_err, value_err, Interp, R};
use crate::io::{Array, ArrayData, CsvHeader};
use crate::tensor::storage::Buffer;
use crate::tensor::{creation, DType, Tensor};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;

type Kw<'a> = &'a [(Rc<str>, Value)];

pub fn io_module() -> Rc<ModuleObj> {
    module(
        "io",
        &[
            ("load_npy", load_npy),
            ("save_npy", save_npy),
            ("load_csv", load_csv),
            ("load_safetensors", load_safetensors),
            ("save_safetensors", save_safetensors),
        ],
        &[],
    )
}

/// Turns a `crate::Error` from the io layer into a Kiln exception of the same kind.
pub fn io_exc(e: crate::Error) -> crate::interp::Exc {
    crate::interp::err(e.kind, e.message)
}

pub fn path_arg(v: &Value, fname: &str) -> R<PathBuf> {
    match v {
        Value::Str(s) => Ok(PathBuf::from(&**s)),
        _ => Err(type_err(format!(
            "{fname}() path must be a string, not {}",
            v.type_name()
        ))),
    }
}

/// A tensor as a neutral array (a detached row-major copy).
pub fn tensor_to_array(t: &Tensor) -> R<Array> {
    let shape = t.shape().to_vec();
    let data = match t.dtype() {
        DType::F32 => ArrayData::F32(t.to_vec::<f32>().map_err(io_exc)?),
        DType::F64 => ArrayData::F64(t.to_vec::<f64>().map_err(io_exc)?),
        DType::I32 => ArrayData::I32(t.to_vec::<i32>().map_err(io_exc)?),
        DType::I64 => ArrayData::I64(t.to_vec::<i64>().map_err(io_exc)?),
        DType::U8 => ArrayData::U8(t.to_vec::<u8>().map_err(io_exc)?),
        DType::Bool => ArrayData::Bool(t.to_vec::<bool>().map_err(io_exc)?),
    };
    Array::new(shape, data).map_err(io_exc)
}

/// A neutral array as a new tensor.
pub fn array_to_tensor(a: Array) -> R<Tensor> {
    let (shape, data) = a.into_parts();
    match data {
        ArrayData::F32(v) => creation::from_f32(v, &shape),
        ArrayData::F64(v) => Tensor::from_buffer(Buffer::F64(v), &shape),
        ArrayData::I32(v) => Tensor::from_buffer(Buffer::I32(v), &shape),
        ArrayData::I64(v) => creation::from_i64(v, &shape),
        ArrayData::U8(v) => Tensor::from_buffer(Buffer::U8(v), &shape),
        ArrayData::Bool(v) => creation::from_bool(v, &shape),
    }
    .map_err(io_exc)
}

fn tensor_arg<'a>(v: &'a Value, fname: &str) -> R<&'a Tensor> {
    match v {
        Value::Tensor(t) => Ok(t),
        _ => Err(type_err(format!(
            "{fname}() expected a Tensor, not {}",
            v.type_name()
        ))),
    }
}

/// `load_npy(path)`.
fn load_npy(_: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    no_kw("load_npy", kw, &[])?;
    arity("load_npy", a, 1, 1)?;
    let arr = crate::io::load_npy(&path_arg(&a[0], "load_npy")?).map_err(io_exc)?;
    Ok(Value::Tensor(array_to_tensor(arr)?))
}

/// `save_npy(path, tensor)` (or `save_npy(tensor, path)`).
fn save_npy(_: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    no_kw("save_npy", kw, &[])?;
    arity("save_npy", a, 2, 2)?;
    let (p, t) = match (&a[0], &a[1]) {
        (Value::Tensor(_), p) => (p, &a[0]),
        (p, t) => (p, t),
    };
    let path = path_arg(p, "save_npy")?;
    let arr = tensor_to_array(tensor_arg(t, "save_npy")?)?;
    crate::io::save_npy(&path, &arr).map_err(io_exc)?;
    Ok(Value::None)
}

/// `save_safetensors(tensors, path)` with `tensors` a dict of str -> Tensor.
fn save_safetensors(_: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    no_kw("save_safetensors", kw, &["metadata"])?;
    arity("save_safetensors", a, 2, 2)?;
    let (d, p) = match (&a[0], &a[1]) {
        (Value::Str(_), d) => (d, &a[0]),
        (d, p) => (d, p),
    };
    let path = path_arg(p, "save_safetensors")?;
    let Value::Dict(d) = d else {
        return Err(type_err(format!(
            "save_safetensors() expected a dict of name -> Tensor, not {}",
            d.type_name()
        )));
    };
    let mut tensors = BTreeMap::new();
    for (k, v) in d.borrow().iter() {
        let Value::Str(name) = &k.0 else {
            return Err(type_err("save_safetensors() tensor names must be strings"));
        };
        let t = tensor_arg(v, "save_safetensors")?;
        tensors.insert(name.to_string(), tensor_to_array(t)?);
    }
    let meta = match kwarg(kw, "metadata") {
        None | Some(Value::None) => None,
        Some(v) => Some(string_dict(v)?),
    };
    crate::io::save_safetensors(&path, &tensors, meta.as_ref()).map_err(io_exc)?;
    Ok(Value::None)
}

fn string_dict(v: &Value) -> R<BTreeMap<String, String>> {
    let err = || type_err("save_safetensors() metadata must be a dict of str -> str");
    let Value::Dict(d) = v else {
        return Err(err());
    };
    let mut out = BTreeMap::new();
    for (k, v) in d.borrow().iter() {
        match (&k.0, v) {
            (Value::Str(k), Value::Str(v)) => out.insert(k.to_string(), v.to_string()),
            _ => return Err(err()),
        };
    }
    Ok(out)
}

/// `load_safetensors(path)`: a dict of name -> Tensor, in the file's (sorted) order.
fn load_safetensors(_: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    no_kw("load_safetensors", kw, &[])?;
    arity("load_safetensors", a, 1, 1)?;
    let file =
        crate::io::load_safetensors(&path_arg(&a[0], "load_safetensors")?).map_err(io_exc)?;
    let mut map = DictMap::default();
    for (name, arr) in file.tensors {
        map.insert(Key(Value::str(&name)), Value::Tensor(array_to_tensor(arr)?));
    }
    Ok(Value::Dict(Rc::new(RefCell::new(map))))
}

/// `load_csv(path, header=None, delimiter=",", dtype=float32)`: a (rows, columns) tensor.
/// `header=None` detects a header row; with `return_header=True` the result is
/// `(tensor, names)` (names is None without a header).
fn load_csv(_: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    no_kw(
        "load_csv",
        kw,
        &["header", "delimiter", "dtype", "return_header"],
    )?;
    arity("load_csv", a, 1, 1)?;
    let path = path_arg(&a[0], "load_csv")?;
    let header = match kwarg(kw, "header") {
        None | Some(Value::None) => CsvHeader::Auto,
        Some(Value::Bool(true)) => CsvHeader::Yes,
        Some(Value::Bool(false)) => CsvHeader::No,
        Some(v) => {
            return Err(type_err(format!(
                "load_csv() header must be True, False or None, not {}",
                v.type_name()
            )))
        }
    };
    let delim = match kwarg(kw, "delimiter") {
        None => ',',
        Some(Value::Str(s)) if s.chars().count() == 1 => s.chars().next().unwrap_or(','),
        Some(_) => return Err(value_err("load_csv() delimiter must be one character")),
    };
    let dtype = match kwarg(kw, "dtype") {
        None | Some(Value::None) => DType::F32,
        Some(Value::DType(d)) => *d,
        Some(Value::Class(c)) if c.kind == ClassKind::Builtin(TypeTag::Bool) => DType::Bool,
        Some(v) => {
            return Err(type_err(format!(
                "load_csv() dtype must be float32, int64 or bool, not {}",
                v.type_name()
            )))
        }
    };
    let table = crate::io::load_csv(&path, header, delim, dtype).map_err(io_exc)?;
    let t = Value::Tensor(array_to_tensor(table.array)?);
    let with_header = matches!(kwarg(kw, "return_header"), Some(Value::Bool(true)));
    if !with_header {
        return Ok(t);
    }
    let names = match table.header {
        Some(h) => Value::list(h.iter().map(|s| Value::str(s)).collect()),
        None => Value::None,
    };
    Ok(Value::tuple(vec![t, names]))
}
