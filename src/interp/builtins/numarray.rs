//! Numbers for the viewers (plots, TensorBoard): a tensor, a number, or a (nested)
//! list or tuple of numbers as a shape and row-major `f64` values.

use crate::interp::value::Value;
use crate::interp::{type_err, value_err, R};

/// `v` as `(shape, values)`: a tensor's elements, a number (shape `[]`), or nested
/// lists/tuples of equal lengths.
pub fn numbers(v: &Value, fname: &str) -> R<(Vec<usize>, Vec<f64>)> {
    match v {
        Value::Tensor(t) => {
            let vals = t
                .cast(crate::tensor::DType::F64)
                .and_then(|c| c.to_vec::<f64>())
                .map_err(super::tensor::te)?;
            Ok((t.shape().to_vec(), vals))
        }
        Value::Int(i) => Ok((vec![], vec![*i as f64])),
        Value::Float(f) => Ok((vec![], vec![*f])),
        Value::Bool(b) => Ok((vec![], vec![f64::from(u8::from(*b))])),
        Value::List(_) | Value::Tuple(_) | Value::Size(_) | Value::Range(_) => {
            let items: Vec<Value> = match v {
                Value::List(l) => l.borrow().clone(),
                Value::Tuple(t) | Value::Size(t) => t.to_vec(),
                Value::Range(r) => (0..r.len())
                    .map(|i| Value::Int(r.start + i * r.step))
                    .collect(),
                _ => Vec::new(),
            };
            let mut vals = Vec::new();
            let mut inner: Option<Vec<usize>> = None;
            for it in &items {
                let (s, v) = numbers(it, fname)?;
                match &inner {
                    Some(prev) if *prev != s => {
                        return Err(value_err(format!(
                            "{fname}(): setting an array element with a sequence: the nested lists have different lengths"
                        )))
                    }
                    _ => inner = Some(s),
                }
                vals.extend(v);
            }
            let mut shape = vec![items.len()];
            shape.extend(inner.unwrap_or_default());
            Ok((shape, vals))
        }
        other => Err(type_err(format!(
            "{fname}(): expected numbers, a list or a Tensor, not {}",
            other.type_name()
        ))),
    }
}

/// `v` as one number (a number or a one-element tensor).
pub fn number(v: &Value, fname: &str) -> R<f64> {
    let (_, vals) = numbers(v, fname)?;
    match vals.as_slice() {
        [x] if !matches!(v, Value::List(_) | Value::Tuple(_) | Value::Size(_)) => Ok(*x),
        _ => Err(type_err(format!(
            "{fname}(): expected a number or a one-element tensor"
        ))),
    }
}
