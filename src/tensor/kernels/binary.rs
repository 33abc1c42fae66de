//! Binary elementwise kernels: dtype promotion for each op and the per-op loops
//! (tensor-tensor with broadcasting, and tensor-scalar without materialising the scalar).

use super::elementwise::{map, zip};
use crate::error::{ErrorKind, Result};
use crate::optable::binary::{binary_table, DtypeRule};
use crate::optable::BinaryOp;
use crate::tensor::dtype::Elem;
use crate::tensor::dtype::{default_float, DType, Scalar};
use crate::tensor::shape::broadcast_shapes;
use crate::tensor::{err, Tensor};

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

/// The float helpers of the table's float kernels, once per float type (the f64 arm
/// of [`dispatch`] imports `real64`'s).
macro_rules! float_helpers {
    ($m:ident, $F:ident) => {
        pub(crate) mod $m {
            type F = $F;

            /// Python's float modulo (the result has the divisor's sign).
            #[inline]
            pub fn fmod_py(x: F, y: F) -> F {
                let r = x % y;
                if r != 0.0 && ((r < 0.0) != (y < 0.0)) {
                    r + y
                } else {
                    r
                }
            }

            /// `maximum` on floats as PyTorch (and IEEE 754-2019 `maximum`, Cranelift's `fmax`,
            /// which compiled kernels use): NaN propagates and -0.0 < +0.0.
            #[inline]
            pub fn fmax_nan(x: F, y: F) -> F {
                if x.is_nan() || y.is_nan() {
                    F::NAN
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
            pub fn fmin_nan(x: F, y: F) -> F {
                if x.is_nan() || y.is_nan() {
                    F::NAN
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
        }
    };
}

float_helpers!(real32, f32);
float_helpers!(real64, f64);
use real32::fmod_py;
pub use real32::{fmax_nan, fmin_nan};
pub use real64::{fmax_nan as fmax_nan64, fmin_nan as fmin_nan64};

/// PyTorch's error for `-` on bools (`operands`: "two bool tensors" or "a bool tensor").
fn bool_sub_err(operands: &str) -> crate::error::Error {
    let hint = match operands {
        "two bool tensors" => "Use the `^` or `logical_xor()` operator instead.",
        _ => "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.",
    };
    err(
        ErrorKind::NotImplementedError,
        format!("Subtraction, the `-` operator, with {operands} is not supported. {hint}"),
    )
}

/// The dtype of an arithmetic op on bool operands, as PyTorch's: add, mul, pow,
/// maximum and minimum stay bool (computed in int64, then nonzero is True: `+` is a
/// logical or, `*` an and); floor division and remainder have no bool kernel.
fn bool_arith(op: BinaryOp) -> Result<DType> {
    match op {
        BinaryOp::FloorDiv => Err(no_bool_kernel("div_floor_cpu")),
        BinaryOp::Rem => Err(no_bool_kernel("remainder_cpu")),
        _ => Ok(DType::Bool),
    }
}

/// PyTorch's error for an op with no bool kernel (`kernel`: its kernel's name).
fn no_bool_kernel(kernel: &str) -> crate::error::Error {
    err(
        ErrorKind::NotImplementedError,
        format!("\"{kernel}\" not implemented for 'Bool'"),
    )
}

/// The dtype an op computes in (its inputs are cast to it).
pub fn compute_dtype(op: BinaryOp, p: DType) -> Result<DType> {
    Ok(match op.dtype_rule() {
        DtypeRule::Float if p.is_float() => p,
        DtypeRule::Float => default_float(),
        DtypeRule::ArithNoBool if p == DType::Bool => return Err(bool_sub_err("two bool tensors")),
        DtypeRule::Arith if p == DType::Bool => bool_arith(op)?,
        DtypeRule::Arith | DtypeRule::ArithNoBool => p,
        DtypeRule::Compare => p,
        DtypeRule::Logic => {
            if p.is_float() {
                return Err(err(
                    ErrorKind::TypeError,
                    format!(
                        "{}: not supported for {} tensors (use bool or int64)",
                        op.name(),
                        p.name()
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
        name: $name:literal, methods: [$($m:literal),*], global: $global:literal,
        inplace: [$($ip:literal),*], dtype: $dt:ident, saves: [$($s:ident),*],
        f32: [$($f:tt)*], int: [$($i:tt)*], grad: [$($g:tt)*], fused: [$($k:tt)*],
        onnx: [$($o:tt)*],
    })*) => {
        /// Runs `op` computing in `dt` (its dtype rule's compute dtype).
        fn dispatch(op: BinaryOp, dt: DType, ap: &impl Apply) -> Result<Tensor> {
            match op {
                $(BinaryOp::$V => binary_kernels!(@$dt dt, ap, [$($f)*], [$($i)*]),)*
            }
        }

        /// `add sub mul` and the comparisons of two int32 or two uint8 operands in
        /// their own dtype (wrapping, as PyTorch's); None: the int64 kernel runs.
        fn dispatch_narrow(op: BinaryOp, dt: DType, ap: &impl Apply) -> Option<Result<Tensor>> {
            match op {
                $(BinaryOp::$V => binary_kernels!(@narrow $V, dt, ap, [$($i)*]),)*
            }
        }
    };
    (@narrow $V:ident, $dt:ident, $ap:ident, [none]) => { None };
    (@narrow Add, $($t:tt)*) => { binary_kernels!(@narrow_in $($t)*) };
    (@narrow Sub, $($t:tt)*) => { binary_kernels!(@narrow_in $($t)*) };
    (@narrow Mul, $($t:tt)*) => { binary_kernels!(@narrow_in $($t)*) };
    (@narrow Eq, $($t:tt)*) => { binary_kernels!(@narrow_in $($t)*) };
    (@narrow Ne, $($t:tt)*) => { binary_kernels!(@narrow_in $($t)*) };
    (@narrow Lt, $($t:tt)*) => { binary_kernels!(@narrow_in $($t)*) };
    (@narrow Le, $($t:tt)*) => { binary_kernels!(@narrow_in $($t)*) };
    (@narrow Gt, $($t:tt)*) => { binary_kernels!(@narrow_in $($t)*) };
    (@narrow Ge, $($t:tt)*) => { binary_kernels!(@narrow_in $($t)*) };
    (@narrow $V:ident, $($t:tt)*) => { None };
    (@narrow_in $dt:ident, $ap:ident, [($xi:ident, $yi:ident) $ie:expr]) => {
        match $dt {
            DType::I32 => Some($ap.apply(|$xi: i32, $yi: i32| $ie)),
            DType::U8 => Some($ap.apply(|$xi: u8, $yi: u8| $ie)),
            _ => None,
        }
    };
    (@Arith $dt:ident, $ap:ident, [($x:ident, $y:ident) $fe:expr], [($xi:ident, $yi:ident) $ie:expr]) => {
        match $dt {
            DType::F32 => $ap.apply(|$x: f32, $y: f32| $fe),
            DType::F64 => {
                #[allow(unused_imports)]
                use real64::{fmax_nan, fmin_nan, fmod_py};
                $ap.apply(|$x: f64, $y: f64| $fe)
            }
            DType::I32 | DType::I64 | DType::U8 | DType::Bool => {
                $ap.apply(|$xi: i64, $yi: i64| $ie)
            }
        }
    };
    (@ArithNoBool $($t:tt)*) => {
        binary_kernels!(@Arith $($t)*)
    };
    (@Float $dt:ident, $ap:ident, [($x:ident, $y:ident) $fe:expr], [none]) => {
        match $dt {
            DType::F32 => $ap.apply(|$x: f32, $y: f32| $fe),
            DType::F64 => $ap.apply(|$x: f64, $y: f64| $fe),
            DType::I32 | DType::I64 | DType::U8 | DType::Bool => Err(not_computed_in($dt)),
        }
    };
    (@Compare $dt:ident, $ap:ident, [($x:ident, $y:ident) $fe:expr], [($xi:ident, $yi:ident) $ie:expr]) => {
        match $dt {
            DType::F32 => $ap.apply(|$x: f32, $y: f32| $fe),
            DType::F64 => $ap.apply(|$x: f64, $y: f64| $fe),
            DType::I32 | DType::I64 | DType::U8 => $ap.apply(|$xi: i64, $yi: i64| $ie),
            DType::Bool => $ap.apply(|$xi: bool, $yi: bool| $ie),
        }
    };
    (@Logic $dt:ident, $ap:ident, [none], [($xi:ident, $yi:ident) $ie:expr]) => {
        match $dt {
            DType::I32 | DType::I64 | DType::U8 => $ap.apply(|$xi: i64, $yi: i64| $ie),
            DType::Bool => $ap.apply(|$xi: bool, $yi: bool| $ie),
            DType::F32 | DType::F64 => Err(not_computed_in($dt)),
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
    if !dt.is_int() {
        return Ok(());
    }
    let bad = |pred: fn(&i64) -> bool| -> Result<bool> {
        rhs.cast(DType::I64)?.read(|s: &[i64]| s.iter().any(pred))
    };
    match op {
        // PyTorch's class and message for an integer tensor divided by zero
        BinaryOp::FloorDiv | BinaryOp::Rem if bad(|&v| v == 0)? => Err(err(
            ErrorKind::RuntimeError,
            format!("{}: ZeroDivisionError", op.name()),
        )),
        BinaryOp::Pow if bad(|&v| v < 0)? => Err(err(
            ErrorKind::ValueError,
            "pow: integers to negative integer powers are not allowed",
        )),
        _ => Ok(()),
    }
}

/// PyTorch's `result_type` of two tensors: dimensioned tensors decide the dtype within
/// a category; a 0-d tensor raises it only to a higher category (`f32[3] * f64[]` is
/// float32, `i32[3] * f64[]` is float64).
pub fn result_type(a: &Tensor, b: &Tensor) -> DType {
    DType::result_of(
        (a.dtype(), a.shape().is_empty()),
        (b.dtype(), b.shape().is_empty()),
    )
}

/// Integer ops on int32/uint8 run the int64 kernel; the result wraps back (as
/// PyTorch's, whose uint8 and int32 arithmetic wraps).
fn kernel_dtype(dt: DType) -> DType {
    match dt {
        DType::I32 | DType::U8 | DType::Bool => DType::I64,
        DType::F32 | DType::F64 | DType::I64 => dt,
    }
}

/// The kernel's result in the op's dtype `dt` (int64 results of int32/uint8 ops wrap).
fn wrap_back(out: Tensor, dt: DType) -> Result<Tensor> {
    if out.dtype() == DType::I64 && dt != DType::I64 {
        out.cast(dt)
    } else {
        Ok(out)
    }
}

/// `a op b` with broadcasting and promotion; no autograd.
pub fn binary_raw(op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let shape = broadcast_shapes(op.name(), a.shape(), b.shape())?;
    if op == BinaryOp::Pow && a.dtype() == DType::Bool && b.dtype() == DType::Bool {
        // (a bool tensor to a Python bool power has a kernel; to a bool tensor, not)
        return Err(no_bool_kernel("pow"));
    }
    if op.dtype_rule() == DtypeRule::ArithNoBool
        && (a.dtype() == DType::Bool) != (b.dtype() == DType::Bool)
    {
        // PyTorch's sub_check: one bool operand (two are compute_dtype's error)
        return Err(bool_sub_err("a bool tensor"));
    }
    let dt = compute_dtype(op, result_type(a, b))?;
    int_checks(op, dt, b)?;
    if a.dtype() == dt && b.dtype() == dt {
        let ap = Zip {
            a,
            b,
            shape: &shape,
        };
        if let Some(out) = dispatch_narrow(op, dt, &ap) {
            return out;
        }
    }
    let kt = kernel_dtype(dt);
    let (a, b) = (a.cast(kt)?, b.cast(kt)?);
    let ap = Zip {
        a: &a,
        b: &b,
        shape: &shape,
    };
    wrap_back(dispatch(op, kt, &ap)?, dt)
}

/// `a op s` (or `s op a` when `reverse`) with a Rust scalar; no autograd.
pub fn binary_scalar_raw(op: BinaryOp, a: &Tensor, s: Scalar, reverse: bool) -> Result<Tensor> {
    let p = s.promote_with(a.dtype());
    let bool_scalar = matches!(s, Scalar::Bool(_));
    if op.dtype_rule() == DtypeRule::ArithNoBool && (a.dtype() == DType::Bool || bool_scalar) {
        // a Python bool is taken as a bool tensor (torch wraps it), any other number not
        return Err(bool_sub_err(match p {
            DType::Bool => "two bool tensors",
            _ => "a bool tensor",
        }));
    }
    let dt = compute_dtype(op, p)?;
    if dt.is_int() {
        let rhs = if reverse {
            a.clone()
        } else {
            Tensor::scalar(s)
        };
        int_checks(op, dt, &rhs)?;
    }
    let kt = kernel_dtype(dt);
    let a = a.cast(kt)?;
    wrap_back(dispatch(op, kt, &WithScalar { a: &a, s, reverse })?, dt)
}
