//! `save(obj, path)` / `load(path)` (torch.save / torch.load) through safetensors. A
//! dict of str -> Tensor (a `state_dict()`) is written exactly as
//! `safetensors.torch.save_file` writes it, so PyTorch reads it back with
//! `safetensors.torch.load_file`; any other object (an optimizer or scheduler state
//! dict, a checkpoint dict nesting several) stores its tensors under dotted paths
//! (`optimizer.state.0.exp_avg`) and its structure as JSON in the metadata entry
//! [`TREE_KEY`], which `load` rebuilds.

use super::iomod::{array_to_tensor, io_exc, path_arg, tensor_to_array};
use super::tensor::Kw;
use super::{arity, no_kw};
use crate::interp::value::{DictMap, Key, NativeImpl, Value};
use crate::interp::{type_err, value_err, Interp, R};
use crate::io::Array;
use serde_json::{json, Map, Value as Json};
use std::collections::BTreeMap;

pub const GLOBALS: &[(&str, NativeImpl)] = &[("save", save), ("load", load)];

/// The metadata entry holding a non-flat object's structure.
const TREE_KEY: &str = "kiln.tree";

/// Nesting deeper than this is refused (the walk recurses).
const MAX_DEPTH: usize = 200;

/// `save(obj, f)`: `obj` a dict of str -> Tensor, or a tree of dicts, lists, tuples,
/// tensors, numbers, strings, bools and None.
fn save(_: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    no_kw("save", kw, &[])?;
    arity("save", a, 2, 2)?;
    let path = path_arg(&a[1], "save")?;
    let mut tensors = BTreeMap::new();
    let meta = if let Some(flat) = flat_state(&a[0])? {
        tensors = flat;
        None
    } else {
        let tree = encode(&a[0], "", &mut tensors, 0)?;
        Some(BTreeMap::from([(TREE_KEY.to_string(), tree.to_string())]))
    };
    crate::io::save_safetensors(&path, &tensors, meta.as_ref()).map_err(io_exc)?;
    Ok(Value::None)
}

/// The tensors of a dict of str -> Tensor (None for any other value).
fn flat_state(v: &Value) -> R<Option<BTreeMap<String, Array>>> {
    let Value::Dict(d) = v else { return Ok(None) };
    let d = d.borrow();
    if d.is_empty() {
        return Ok(None);
    }
    let mut out = BTreeMap::new();
    for (k, x) in d.iter() {
        match (&k.0, x) {
            (Value::Str(name), Value::Tensor(t)) => {
                out.insert(name.to_string(), tensor_to_array(t)?);
            }
            _ => return Ok(None),
        }
    }
    Ok(Some(out))
}

fn encode(v: &Value, path: &str, out: &mut BTreeMap<String, Array>, depth: usize) -> R<Json> {
    if depth > MAX_DEPTH {
        return Err(value_err("save(): object nested too deeply"));
    }
    let child = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    Ok(match v {
        Value::None => Json::Null,
        Value::Bool(b) => json!(b),
        Value::Int(i) => json!(i),
        Value::Float(f) if f.is_finite() => json!({ "float": f }),
        Value::Float(f) => json!({ "float": f.to_string() }),
        Value::Str(s) => json!(s.to_string()),
        Value::Tensor(t) => {
            let name = if path.is_empty() {
                "tensor".to_string()
            } else {
                path.to_string()
            };
            if out.contains_key(&name) {
                return Err(value_err(format!(
                    "save(): two tensors would be stored as '{name}'"
                )));
            }
            out.insert(name.clone(), tensor_to_array(t)?);
            json!({ "tensor": name })
        }
        Value::List(l) => {
            let items = l.borrow();
            let xs: R<Vec<Json>> = items
                .iter()
                .enumerate()
                .map(|(i, x)| encode(x, &child(&i.to_string()), out, depth + 1))
                .collect();
            Json::Array(xs?)
        }
        Value::Tuple(t) | Value::Size(t) => {
            let xs: R<Vec<Json>> = t
                .iter()
                .enumerate()
                .map(|(i, x)| encode(x, &child(&i.to_string()), out, depth + 1))
                .collect();
            json!({ "tuple": xs? })
        }
        Value::Dict(d) => {
            let mut items = Vec::new();
            for (k, x) in d.borrow().iter() {
                let key = match &k.0 {
                    Value::Str(s) => json!(s.to_string()),
                    Value::Int(i) => json!(i),
                    other => {
                        return Err(type_err(format!(
                            "save(): dict keys must be str or int, not {}",
                            other.type_name()
                        )))
                    }
                };
                let label = match &k.0 {
                    Value::Int(i) => i.to_string(),
                    _ => key.as_str().unwrap_or_default().to_string(),
                };
                items.push(json!([key, encode(x, &child(&label), out, depth + 1)?]));
            }
            json!({ "dict": items })
        }
        other => {
            return Err(type_err(format!(
                "save(): cannot store a {} (tensors, numbers, str, bool, None, lists, tuples \
                 and dicts only)",
                other.type_name()
            )))
        }
    })
}

/// `load(f, map_location=None, weights_only=None)`: what `save` stored (a plain
/// safetensors file loads as a dict of name -> Tensor, in name order).
fn load(_: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    no_kw("load", kw, &["map_location", "weights_only"])?;
    arity("load", a, 1, 1)?;
    let file = crate::io::load_safetensors(&path_arg(&a[0], "load")?).map_err(io_exc)?;
    let mut tensors = file.tensors;
    let tree = file.metadata.as_ref().and_then(|m| m.get(TREE_KEY));
    let Some(tree) = tree else {
        let mut map = DictMap::default();
        for (name, arr) in tensors {
            map.insert(Key(Value::str(&name)), Value::Tensor(array_to_tensor(arr)?));
        }
        return Ok(Value::dict(map));
    };
    let bad = || value_err("load(): the file's object description is damaged");
    let j: Json = serde_json::from_str(tree).map_err(|_| bad())?;
    decode(&j, &mut tensors, 0)
}

fn decode(j: &Json, tensors: &mut BTreeMap<String, Array>, depth: usize) -> R<Value> {
    let bad = || value_err("load(): the file's object description is damaged");
    if depth > MAX_DEPTH {
        return Err(bad());
    }
    Ok(match j {
        Json::Null => Value::None,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => Value::Int(n.as_i64().ok_or_else(bad)?),
        Json::String(s) => Value::str(s),
        Json::Array(xs) => Value::list(
            xs.iter()
                .map(|x| decode(x, tensors, depth + 1))
                .collect::<R<Vec<_>>>()?,
        ),
        Json::Object(m) => decode_tagged(m, tensors, depth)?,
    })
}

fn decode_tagged(
    m: &Map<String, Json>,
    tensors: &mut BTreeMap<String, Array>,
    depth: usize,
) -> R<Value> {
    let bad = || value_err("load(): the file's object description is damaged");
    let (tag, body) = m.iter().next().ok_or_else(bad)?;
    Ok(match (tag.as_str(), body) {
        ("float", Json::Number(n)) => Value::Float(n.as_f64().ok_or_else(bad)?),
        ("float", Json::String(s)) => Value::Float(s.parse().map_err(|_| bad())?),
        ("tensor", Json::String(name)) => {
            let arr = tensors.remove(name).ok_or_else(bad)?;
            Value::Tensor(array_to_tensor(arr)?)
        }
        ("tuple", Json::Array(xs)) => Value::tuple(
            xs.iter()
                .map(|x| decode(x, tensors, depth + 1))
                .collect::<R<Vec<_>>>()?,
        ),
        ("dict", Json::Array(items)) => {
            let mut map = DictMap::default();
            for it in items {
                let Json::Array(kv) = it else {
                    return Err(bad());
                };
                let [k, v] = kv.as_slice() else {
                    return Err(bad());
                };
                let key = match k {
                    Json::String(s) => Value::str(s),
                    Json::Number(n) => Value::Int(n.as_i64().ok_or_else(bad)?),
                    _ => return Err(bad()),
                };
                map.insert(Key(key), decode(v, tensors, depth + 1)?);
            }
            Value::dict(map)
        }
        _ => return Err(bad()),
    })
}
