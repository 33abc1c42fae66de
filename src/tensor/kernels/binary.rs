//! Binary elementwise kernels: dtype promotion for each op and the per-op loops
//! (tensor-tensor with broadcasting, and tensor-scalar without materialising the scalar).

use super::elementwise::{map, zip};
use crate::error::{ErrorKind, Result};
use crate::optable::binary::{binary_table, DtypeRule};
use crate::optable::BinaryOp;
use crate::tensor::dtype::Elem;
use crate::tensor::dtype::{DType, Scalar};
use crate::tensor::shape::broadcast_shapes;
use crate::tensor::{err, Tensor};

/// Python's float modulo (the result has the divisor's sign).
#[inline]
fn fmod_py(x: f32, y: f32) -> f32 {
    let r = x % y;
    if r != 0.0 && ((r < 0.0) != (y < 0.0)) {
        r + y
    } else {
        r
    }
}

#[inline]
fn imod_py(x: i64, y: i64) -> i64 {
    let r = x.wrapping_rem(y);
    if r != 0 && ((r < 0) != (y < 0)) {
        r + y
    } else {
        r
    }
}

#[inline]
fn idiv_py(x: i64, y: i64) -> i64 {
    let q = x.wrapping_div(y);
    if x.wrapping_rem(y) != 0 && ((x < 0) != (y < 0)) {
        q - 1
    } else {
        q
    }
}

#[inline]
fn ipow(x: i64, y: i64) -> i64 {
    x.wrapping_pow(y.clamp(0, i64::from(u32::MAX)) as u32)
}

/// `maximum` on floats as PyTorch (and IEEE 754-2019 `maximum`, Cranelift's `fmax`,
/// which compiled kernels use): NaN propagates and -0.0 < +0.0.
#[inline]
pub fn fmax_nan(x: f32, y: f32) -> f32 {
    if x.is_nan() || y.is_nan() {
        f32::NAN
    } else if x == y {
        if x.is_sign_negative() {
            y
        } else {
            x
        }
    } else {
        x.max(y)
    }
}

/// `minimum` on floats: NaN propagates and -0.0 < +0.0 (see [`fmax_nan`]).
#[inline]
pub fn fmin_nan(x: f32, y: f32) -> f32 {
    if x.is_nan() || y.is_nan() {
        f32::NAN
    } else if x == y {
        if x.is_sign_negative() {
            x
        } else {
            y
        }
    } else {
        x.min(y)
    }
}

/// PyTorch's error for `-` on bools (`operands`: "two bool tensors" or "a bool tensor").
fn bool_sub_err(operands: &str) -> crate::error::Error {
    err(
        ErrorKind::TypeError,
        format!(
            "Subtraction, the `-` operator, with {operands} is not supported. If you are \
             trying to invert a mask, use the `~` or `logical_not()` operator instead."
        ),
    )
}

/// The dtype an op computes in (its inputs are cast to it).
pub fn compute_dtype(op: BinaryOp, p: DType) -> Result<DType> {
    Ok(match op.dtype_rule() {
        DtypeRule::Float => DType::F32,
        DtypeRule::ArithNoBool if p == DType::Bool => return Err(bool_sub_err("two bool tensors")),
        DtypeRule::Arith | DtypeRule::ArithNoBool => {
            if p == DType::Bool {
                DType::I64
            } else {
                p
            }
        }
        DtypeRule::Compare => p,
        DtypeRule::Logic => {
            if p == DType::F32 {
                return Err(err(
                    ErrorKind::TypeError,
                    format!(
                        "{}: not supported for float32 tensors (use bool or int64)",
                        op.name()
                    ),
                ));
            }
            p
        }
    })
}

/// Runs one elementwise closure over an op's operands: tensor-tensor with broadcasting
/// ([`Zip`]) or tensor-scalar ([`WithScalar`]).
trait Apply {
    fn apply<T: Elem, O: Elem>(&self, f: impl Fn(T, T) -> O + Sync + Send) -> Result<Tensor>;
}

struct Zip<'a> {
    a: &'a Tensor,
    b: &'a Tensor,
    shape: &'a [usize],
}

impl Apply for Zip<'_> {
    fn apply<T: Elem, O: Elem>(&self, f: impl Fn(T, T) -> O + Sync + Send) -> Result<Tensor> {
        zip(self.a, self.b, self.shape, f)
    }
}

/// `a op s`, or `s op a` when `reverse`, without materialising `s`.
struct WithScalar<'a> {
    a: &'a Tensor,
    s: Scalar,
    reverse: bool,
}

impl Apply for WithScalar<'_> {
    fn apply<T: Elem, O: Elem>(&self, f: impl Fn(T, T) -> O + Sync + Send) -> Result<Tensor> {
        let y = T::from_scalar(self.s);
        if self.reverse {
            map(self.a, move |x| f(y, x))
        } else {
            map(self.a, move |x| f(x, y))
        }
    }
}

/// The eager kernels, from the table's `f32` and `int` fields.
macro_rules! binary_kernels {
    ($($V:ident {
        name: $name:literal, dtype: $dt:ident, saves: [$($s:ident),*],
        f32: [$($f:tt)*], int: [$($i:tt)*], grad: [$($g:tt)*], fused: [$($k:tt)*],
        onnx: [$($o:tt)*],
    })*) => {
        /// Runs `op` computing in `dt` (its dtype rule's compute dtype).
        fn dispatch(op: BinaryOp, dt: DType, ap: &impl Apply) -> Result<Tensor> {
            match op {
                $(BinaryOp::$V => binary_kernels!(@$dt dt, ap, [$($f)*], [$($i)*]),)*
            }
        }
    };
    (@Arith $dt:ident, $ap:ident, [($x:ident, $y:ident) $fe:expr], [($xi:ident, $yi:ident) $ie:expr]) => {
        match $dt {
            DType::F32 => $ap.apply(|$x: f32, $y: f32| $fe),
            _ => $ap.apply(|$xi: i64, $yi: i64| $ie),
        }
    };
    (@ArithNoBool $($t:tt)*) => {
        binary_kernels!(@Arith $($t)*)
    };
    (@Float $dt:ident, $ap:ident, [($x:ident, $y:ident) $fe:expr], [none]) => {
        match $dt {
            DType::F32 => $ap.apply(|$x: f32, $y: f32| $fe),
            _ => Err(not_computed_in($dt)),
        }
    };
    (@Compare $dt:ident, $ap:ident, [($x:ident, $y:ident) $fe:expr], [($xi:ident, $yi:ident) $ie:expr]) => {
        match $dt {
            DType::F32 => $ap.apply(|$x: f32, $y: f32| $fe),
            DType::I64 => $ap.apply(|$xi: i64, $yi: i64| $ie),
            DType::Bool => $ap.apply(|$xi: bool, $yi: bool| $ie),
        }
    };
    (@Logic $dt:ident, $ap:ident, [none], [($xi:ident, $yi:ident) $ie:expr]) => {
        match $dt {
            DType::I64 => $ap.apply(|$xi: i64, $yi: i64| $ie),
            DType::Bool => $ap.apply(|$xi: bool, $yi: bool| $ie),
            DType::F32 => Err(not_computed_in($dt)),
        }
    };
}

binary_table!(binary_kernels);

/// A compute dtype the op's dtype rule never gives (an internal error, not a panic).
fn not_computed_in(dt: DType) -> crate::error::Error {
    err(
        ErrorKind::RuntimeError,
        format!("internal: binary op computed in {}", dt.name()),
    )
}

fn int_checks(op: BinaryOp, dt: DType, rhs: &Tensor) -> Result<()> {
    if dt != DType::I64 {
        return Ok(());
    }
    let bad = |pred: fn(&i64) -> bool| -> Result<bool> {
        rhs.cast(DType::I64)?.read(|s: &[i64]| s.iter().any(pred))
    };
    match op {
        BinaryOp::FloorDiv | BinaryOp::Rem if bad(|&v| v == 0)? => Err(err(
            ErrorKind::ZeroDivisionError,
            format!("{}: integer division by zero", op.name()),
        )),
        BinaryOp::Pow if bad(|&v| v < 0)? => Err(err(
            ErrorKind::ValueError,
            "pow: integers to negative integer powers are not allowed",
        )),
        _ => Ok(()),
    }
}

/// `a op b` with broadcasting and promotion; no autograd.
pub fn binary_raw(op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let shape = broadcast_shapes(op.name(), a.shape(), b.shape())?;
    let dt = compute_dtype(op, a.dtype().promote(b.dtype()))?;
    int_checks(op, dt, b)?;
    let (a, b) = (a.cast(dt)?, b.cast(dt)?);
    let ap = Zip {
        a: &a,
        b: &b,
        shape: &shape,
    };
    dispatch(op, dt, &ap)
}

/// `a op s` (or `s op a` when `reverse`) with a Rust scalar; no autograd.
pub fn binary_scalar_raw(op: BinaryOp, a: &Tensor, s: Scalar, reverse: bool) -> Result<Tensor> {
    let p = s.promote_with(a.dtype());
    if op.dtype_rule() == DtypeRule::ArithNoBool && p == DType::Bool {
        return Err(bool_sub_err("a bool tensor"));
    }
    let dt = compute_dtype(op, p)?;
    if dt == DType::I64 {
        let rhs = if reverse {
            a.clone()
        } else {
            Tensor::scalar(s)
        };
        int_checks(op, dt, &rhs)?;
    }
    let a = a.cast(dt)?;
    dispatch(op, dt, &WithScalar { a: &a, s, reverse })
}
