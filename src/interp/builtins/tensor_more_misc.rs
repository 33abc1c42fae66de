//! Tensor methods of PyTorch's API that are not computations (issue 22): sizes and
//! strides (`nelement element_size stride storage_offset is_contiguous`), factories
//! (`new_zeros new_ones new_full new_empty new_tensor`), `type_as`, `detach_` and the
//! in-place forms of ops and of the random fills (`pow_ exp_ masked_fill_ uniform_
//! normal_ bernoulli_`).

use super::tensor::{dtype_of, int_list, scalar_of, te, Args};
use super::tensor_more::{inplace_result, ints, tv};
use crate::interp::value::Value;
use crate::interp::{type_err, R};
use crate::tensor::dtype::{DType, Scalar};
use crate::tensor::Tensor;

/// The methods of this file (None: not one of them).
pub fn misc(t: &Tensor, name: &str, a: &Args) -> R<Option<Value>> {
    let new = |fill: Option<Scalar>| -> R<Value> {
        let dt = a.dtype(usize::MAX)?.unwrap_or(t.dtype());
        let shape = super::tensor::sizes(&ints(a, "size")?, name)?;
        let x = match fill {
            Some(s) => crate::tensor::creation::full(&shape, s, Some(dt)),
            None => crate::tensor::creation::zeros(&shape, dt),
        }
        .map_err(te)?;
        super::tensor::finish(x, a)
    };
    let v = match name {
        "nelement" => {
            a.check(0, &[])?;
            crate::compile::capture::trace::note_size_read(t, None);
            Value::Int(t.numel() as i64)
        }
        "element_size" => {
            a.check(0, &[])?;
            Value::Int(t.dtype().size() as i64)
        }
        "stride" => {
            a.check(1, &["dim"])?;
            let st: Vec<Value> = t.strides().iter().map(|&s| Value::Int(s as i64)).collect();
            match a.int(0, "dim")? {
                None => Value::tuple(st),
                Some(d) => {
                    let d = crate::tensor::shape::norm_dim("stride", d, t.ndim()).map_err(te)?;
                    st.get(d).cloned().unwrap_or(Value::Int(1))
                }
            }
        }
        "storage_offset" => {
            a.check(0, &[])?;
            Value::Int(t.offset() as i64)
        }
        "is_contiguous" => {
            a.check(0, &["memory_format"])?;
            Value::Bool(t.is_contiguous())
        }
        "is_floating_point" => {
            a.check(0, &[])?;
            Value::Bool(t.dtype().is_float())
        }
        "type_as" => {
            a.check(1, &["other"])?;
            tv(crate::ops::to_dtype(t, a.tensor(0, "other")?.dtype()))?
        }
        "new_zeros" | "new_empty" => {
            a.check(usize::MAX, &["size", "dtype", "device", "requires_grad"])?;
            new(None)?
        }
        "new_ones" => {
            a.check(usize::MAX, &["size", "dtype", "device", "requires_grad"])?;
            new(Some(Scalar::Int(1)))?
        }
        "new_full" => {
            a.check(
                2,
                &["size", "fill_value", "dtype", "device", "requires_grad"],
            )?;
            let size = int_list(a.required(0, "size")?, name)?;
            let fill = scalar_of(a.required(1, "fill_value")?)
                .ok_or_else(|| type_err("new_full(): fill_value must be a number"))?;
            let dt = a.dtype(usize::MAX)?.unwrap_or(t.dtype());
            let x =
                crate::tensor::creation::full(&super::tensor::sizes(&size, name)?, fill, Some(dt))
                    .map_err(te)?;
            super::tensor::finish(x, a)?
        }
        "new_tensor" => {
            a.check(1, &["data", "dtype", "device", "requires_grad"])?;
            let data = a.required(0, "data")?;
            let x = super::tensor_create::from_value(
                data,
                a.kw("dtype").map(dtype_of).transpose()?.or(Some(t.dtype())),
            )?;
            super::tensor::finish(x, a)?
        }
        "detach_" => {
            a.check(0, &[])?;
            crate::ir::record::graph_break(crate::ir::record::BreakReason::InPlace("detach_"));
            t.detach_in_place().map_err(te)?;
            Value::Tensor(t.clone())
        }
        "exp_" | "masked_fill_" => {
            let out = match name {
                "exp_" => {
                    a.check(0, &[])?;
                    t.un(crate::ops::UnaryOp::Exp)
                }
                _ => {
                    a.check(2, &["mask", "value"])?;
                    let s = scalar_of(a.required(1, "value")?)
                        .ok_or_else(|| type_err("masked_fill_(): value must be a number"))?;
                    t.masked_fill(&a.tensor(0, "mask")?, s)
                }
            }
            .map_err(te)?;
            inplace_result(t, name, out.cast(t.dtype()).map_err(te)?)?
        }
        "uniform_" | "normal_" | "bernoulli_" => {
            use crate::tensor::creation::{self, Fill};
            let shape = t.shape().to_vec();
            let fdt = crate::tensor::dtype::float_for(t.dtype());
            let out = match name {
                "uniform_" => {
                    a.check(2, &["from", "to", "generator"])?;
                    let lo = a.float(0, "from")?.unwrap_or(0.0);
                    let hi = a.float(1, "to")?.unwrap_or(1.0);
                    if lo > hi {
                        return Err(crate::interp::err(
                            crate::error::ErrorKind::RuntimeError,
                            format!("uniform_ expects to return a [from, to) range, but found from={lo} > to={hi}"),
                        ));
                    }
                    creation::fill_like(t, Fill::Uniform { from: lo, to: hi }, fdt)
                }
                "normal_" => {
                    a.check(2, &["mean", "std", "generator"])?;
                    let m = a.float(0, "mean")?.unwrap_or(0.0);
                    let s = a.float(1, "std")?.unwrap_or(1.0);
                    creation::fill_like(t, Fill::Normal { mean: m, std: s }, fdt)
                }
                _ => {
                    a.check(1, &["p", "generator"])?;
                    match a.get(0, "p") {
                        Some(Value::Tensor(p)) => p
                            .expand(&shape.iter().map(|&d| d as i64).collect::<Vec<_>>())
                            .and_then(|p| creation::bernoulli_each(&p)),
                        _ => {
                            let p = a.float(0, "p")?.unwrap_or(0.5);
                            creation::fill_like(t, Fill::Bernoulli { p }, fdt)
                        }
                    }
                }
            }
            .map_err(te)?;
            out.cast(t.dtype()).and_then(|o| t.copy_(&o)).map_err(te)?;
            Value::Tensor(t.clone())
        }
        "random_" => {
            a.check(2, &["from", "to", "generator"])?;
            out_of_random(t, a)?
        }
        _ => return Ok(None),
    };
    Ok(Some(v))
}

/// `t.random_(from=0, to=None)` (or `random_(to)`): integers uniform in [from, to - 1]
/// from the seeded generator; without `to`, up to the dtype's bound (2^24 for float32,
/// whose integers are exact up to there; 2^53 for float64, 2^31 - 1 for int32, 255 for
/// uint8, 2^63 - 2 for int64; 1 for bool).
fn out_of_random(t: &Tensor, a: &Args) -> R<Value> {
    let (from, to) = match (a.pos.len(), a.int(0, "from")?, a.int(1, "to")?) {
        (1, Some(to), None) if a.kw("from").is_none() => (0, Some(to)),
        (_, from, to) => (from.unwrap_or(0), to),
    };
    let to = to.unwrap_or(match t.dtype() {
        DType::F32 => (1 << 24) + 1,
        DType::F64 => (1 << 53) + 1,
        DType::I64 => i64::MAX,
        DType::I32 => i64::from(i32::MAX) + 1,
        DType::U8 => 256,
        DType::Bool => 2,
    });
    if from >= to {
        return Err(crate::interp::err(
            crate::error::ErrorKind::RuntimeError,
            format!("random_ expects 'from' to be less than 'to', but got from={from} >= to={to}"),
        ));
    }
    crate::tensor::creation::randint(from, to, t.shape(), DType::I64)
        .and_then(|r| r.cast(t.dtype()))
        .and_then(|o| t.copy_(&o))
        .map_err(te)?;
    Ok(Value::Tensor(t.clone()))
}
