//! Tensor subscripts: converting a Kiln index (ints, slices, `None`, `...`, tuples,
//! bool/int tensors, lists of ints) into `TensorIndex` entries, `t[i]` and `t[i] = v`.

use super::tensor::{scalar_of, te};
use super::tensor_create::from_value;
use crate::error::ErrorKind;
use crate::interp::value::Value;
use crate::interp::{err, type_err, R};
use crate::tensor::indexing::TensorIndex;
use crate::tensor::{DType, Tensor};

fn slice_part(v: &Value) -> R<Option<i64>> {
    match v {
        Value::None => Ok(None),
        Value::Int(i) => Ok(Some(*i)),
        Value::Bool(b) => Ok(Some(*b as i64)),
        Value::Tensor(t) if t.numel() == 1 && !t.dtype().is_float() => {
            Ok(Some(t.item().map_err(te)?.as_i64()))
        }
        _ => Err(type_err(
            "slice indices must be integers or None or have an __index__ method",
        )),
    }
}

/// A tensor used as an index: bool -> mask, int64 -> indices.
fn tensor_entry(t: &Tensor) -> R<TensorIndex> {
    match t.dtype() {
        DType::Bool => Ok(TensorIndex::Mask(t.clone())),
        DType::I64 => Ok(TensorIndex::Indices(t.clone())),
        DType::I32 => Ok(TensorIndex::Indices(t.cast(DType::I64).map_err(te)?)),
        DType::U8 => Ok(TensorIndex::Mask(t.cast(DType::Bool).map_err(te)?)),
        DType::F32 | DType::F64 => Err(err(
            ErrorKind::IndexError,
            "tensors used as indices must be long, int or bool tensors",
        )),
    }
}

/// One entry of an index tuple.
fn entry(v: &Value) -> R<TensorIndex> {
    Ok(match v {
        Value::Int(i) => TensorIndex::Int(*i),
        Value::Bool(b) => TensorIndex::Mask(Tensor::scalar(crate::tensor::Scalar::Bool(*b))),
        Value::None => TensorIndex::NewAxis,
        Value::Ellipsis => TensorIndex::Ellipsis,
        Value::Slice(s) => TensorIndex::Slice {
            start: slice_part(&s[0])?,
            stop: slice_part(&s[1])?,
            step: slice_part(&s[2])?,
        },
        Value::Tensor(t) => tensor_entry(t)?,
        Value::List(_) => tensor_entry(&from_value(v, None)?)?,
        other => {
            return Err(err(
                ErrorKind::IndexError,
                format!(
                    "only integers, slices (`:`), ellipsis (`...`), None and long or bool \
                     tensors are valid indices (got {})",
                    other.type_name()
                ),
            ))
        }
    })
}

/// The index entries of `t[idx]`.
pub fn to_index(idx: &Value) -> R<Vec<TensorIndex>> {
    match idx {
        Value::Tuple(items) => items.iter().map(entry).collect(),
        other => Ok(vec![entry(other)?]),
    }
}

/// `t[idx]`.
pub fn get(t: &Tensor, idx: &Value) -> R<Value> {
    if let Value::Int(i) = idx {
        return t
            .index(&[TensorIndex::Int(*i)])
            .map(Value::Tensor)
            .map_err(te);
    }
    t.index(&to_index(idx)?).map(Value::Tensor).map_err(te)
}

/// `t[idx] = v` (a number, a tensor, or nested lists of numbers).
pub fn set(t: &Tensor, idx: &Value, v: &Value) -> R<()> {
    let ix = to_index(idx)?;
    if let Some(s) = scalar_of(v) {
        return t.index_put_scalar_(&ix, s).map_err(te);
    }
    let src = match v {
        Value::Tensor(x) => x.clone(),
        Value::List(_) | Value::Tuple(_) => from_value(v, Some(t.dtype()))?,
        other => {
            return Err(type_err(format!(
                "can't assign a {} to a Tensor",
                other.type_name()
            )))
        }
    };
    t.index_put_(&ix, &src).map_err(te)
}
