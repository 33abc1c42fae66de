//! PyTorch's matrix functions (tensor/linalg_decomp.rs): the Tensor methods and torch
//! globals `inverse det logdet slogdet svd pinverse` (torch 2.15 removed `cholesky`
//! and `qr` there), and the natives
//! `_linalg_*` that stdlib/linalg.dl's `torch.linalg` functions call (the named tuples
//! they return are built there).

use super::tensor::{te, Args, Kw};
use super::tensor_funcs::{forward, forwarders};
use crate::interp::value::{NativeImpl, Value};
use crate::interp::{value_err, Interp, R};
use crate::tensor::linalg_decomp::{self as ld, QrMode};
use crate::tensor::linalg_ops as lo;
use crate::tensor::Tensor;

/// The method names this file handles (for `hasattr` and completion).
pub const METHODS: &[&str] = &["inverse", "det", "logdet", "slogdet", "svd", "pinverse"];

fn tv(r: crate::Result<Tensor>) -> R<Value> {
    r.map(Value::Tensor).map_err(te)
}

fn tuple(ts: Vec<Tensor>) -> Value {
    Value::tuple(ts.into_iter().map(Value::Tensor).collect())
}

/// Calls matrix method `name` of `t`, or `None` if it is not one.
pub fn linalg_method(t: &Tensor, name: &str, a: &Args) -> R<Option<Value>> {
    let v = match name {
        "inverse" => {
            a.check(0, &[])?;
            tv(lo::inv(t))?
        }
        "det" => {
            a.check(0, &[])?;
            tv(lo::det(t))?
        }
        "logdet" => {
            // log(det): NaN for a negative determinant, -inf for a singular matrix.
            a.check(0, &[])?;
            let (sign, logabs) = lo::slogdet(t).map_err(te)?;
            let nan = sign.cmp_s(crate::ops::BinaryOp::Lt, 0.0).map_err(te)?;
            tv(logabs.masked_fill(&nan, crate::tensor::Scalar::Float(f64::NAN)))?
        }
        "slogdet" => {
            a.check(0, &[])?;
            let (s, l) = lo::slogdet(t).map_err(te)?;
            tuple(vec![s, l])
        }
        "svd" => {
            // torch.svd(A, some=True, compute_uv=True): (U, S, V), V not transposed.
            a.check(2, &["some", "compute_uv"])?;
            let some = a.flag(0, "some", true)?;
            let (u, s, vh) = lo::svd(t, !some).map_err(te)?;
            if !a.flag(1, "compute_uv", true)? {
                let zeros = |x: &Tensor| x.mul_s(0.0);
                let (u, vh) = (zeros(&u).map_err(te)?, zeros(&vh).map_err(te)?);
                return Ok(Some(tuple(vec![
                    u,
                    s.detach(),
                    vh.transpose(-2, -1).map_err(te)?,
                ])));
            }
            tuple(vec![u, s, vh.transpose(-2, -1).map_err(te)?])
        }
        "pinverse" => {
            a.check(1, &["rcond"])?;
            let rcond = a.float(0, "rcond")?.unwrap_or(1e-15);
            tv(lo::pinv(t, None, Some(rcond)))?
        }
        _ => return Ok(None),
    };
    Ok(Some(v))
}

forwarders! {
    "inverse" => f_inverse, "det" => f_det, "logdet" => f_logdet, "slogdet" => f_slogdet,
    "svd" => f_svd, "pinverse" => f_pinverse,
}

/// Every global of this file: the forwarders and the `_linalg_*` natives.
pub fn all_globals() -> impl Iterator<Item = (&'static str, NativeImpl)> {
    FORWARDED.iter().copied().chain(NATIVES.iter().copied())
}

const NATIVES: &[(&str, NativeImpl)] = &[
    ("_linalg_solve", linalg_solve),
    ("_linalg_cholesky", linalg_cholesky),
    ("_linalg_qr", linalg_qr),
    ("_linalg_svd", linalg_svd),
    ("_linalg_svdvals", linalg_svdvals),
    ("_linalg_eigh", linalg_eigh),
    ("_linalg_pinv", linalg_pinv),
];

/// `_linalg_solve(A, B, left)`.
fn linalg_solve(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("linalg.solve", args, kw);
    a.check(3, &[])?;
    tv(ld::solve_general(
        &a.tensor(0, "A")?,
        &a.tensor(1, "B")?,
        a.flag(2, "left", true)?,
    ))
}

/// `_linalg_cholesky(A, upper)`.
fn linalg_cholesky(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("linalg.cholesky", args, kw);
    a.check(2, &[])?;
    tv(lo::cholesky(&a.tensor(0, "A")?, a.flag(1, "upper", false)?))
}

/// `_linalg_qr(A, mode)`.
fn linalg_qr(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("linalg.qr", args, kw);
    a.check(2, &[])?;
    let mode = match a.get(1, "mode") {
        Some(Value::Str(s)) if &**s == "reduced" => QrMode::Reduced,
        Some(Value::Str(s)) if &**s == "complete" => QrMode::Complete,
        Some(Value::Str(s)) if &**s == "r" => QrMode::R,
        Some(v) => {
            return Err(crate::interp::err(
                crate::error::ErrorKind::RuntimeError,
                format!(
                    "qr received unrecognized mode '{}' but expected one of 'reduced' \
                     (default), 'r', or 'complete'",
                    match v {
                        Value::Str(s) => s.to_string(),
                        other => other.type_name().to_string(),
                    }
                ),
            ))
        }
        None => QrMode::Reduced,
    };
    let (q, r) = lo::qr(&a.tensor(0, "A")?, mode).map_err(te)?;
    Ok(tuple(vec![q, r]))
}

/// `_linalg_svd(A, full_matrices)`.
fn linalg_svd(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("linalg.svd", args, kw);
    a.check(2, &[])?;
    let (u, s, vh) = lo::svd(&a.tensor(0, "A")?, a.flag(1, "full_matrices", true)?).map_err(te)?;
    Ok(tuple(vec![u, s, vh]))
}

/// `_linalg_svdvals(A)`.
fn linalg_svdvals(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("linalg.svdvals", args, kw);
    a.check(1, &[])?;
    tv(lo::svdvals(&a.tensor(0, "A")?))
}

/// `_linalg_eigh(A, UPLO)`.
fn linalg_eigh(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("linalg.eigh", args, kw);
    a.check(2, &[])?;
    let upper = match a.get(1, "UPLO") {
        None => false,
        Some(Value::Str(s)) if &**s == "L" => false,
        Some(Value::Str(s)) if &**s == "U" => true,
        Some(_) => return Err(value_err("Expected UPLO argument to be 'L' or 'U'")),
    };
    let (l, v) = lo::eigh(&a.tensor(0, "A")?, upper).map_err(te)?;
    Ok(tuple(vec![l, v]))
}

/// `_linalg_pinv(A, atol, rtol)`.
fn linalg_pinv(_: &mut Interp, args: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("linalg.pinv", args, kw);
    a.check(3, &[])?;
    tv(lo::pinv(
        &a.tensor(0, "A")?,
        a.float(1, "atol")?,
        a.float(2, "rtol")?,
    ))
}
