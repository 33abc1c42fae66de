//! Reference interpreter of the kernel IR: plain scalar loops with Rust's std math.
//!
//! This is the independent truth the JIT is tested against; it shares no code with the
//! code generator except the IR types and the view checks.

use crate::compile::jit::kernel::{BinaryOp, Kernel, Op, ReduceOp, UnaryOp};
use crate::compile::jit::views::{check_run, BufView, BufViewMut, KernelElem};
use crate::error::Result;
use crate::optable::binary::binary_table;
use crate::optable::unary::unary_table;

/// A kernel buffer element the reference evaluator computes in (each op in that type,
/// with its own scalar math: see [`unary`] and [`unary64`]).
pub trait RefElem: KernelElem {
    fn unary(op: UnaryOp, x: Self) -> Self;
    /// A comparison gives its mask as 1.0 / 0.0.
    fn binary(op: BinaryOp, x: Self, y: Self) -> Self;
    fn from_f32(c: f32) -> Self;
    /// `None` for an f64 constant in an f32 kernel (which validation rejects).
    fn from_const64(c: f64) -> Option<Self>;
}

impl RefElem for f32 {
    fn unary(op: UnaryOp, x: f32) -> f32 {
        unary(op, x)
    }
    fn binary(op: BinaryOp, x: f32, y: f32) -> f32 {
        binary(op, x, y)
    }
    fn from_f32(c: f32) -> f32 {
        c
    }
    fn from_const64(_: f64) -> Option<f32> {
        None
    }
}

impl RefElem for f64 {
    fn unary(op: UnaryOp, x: f64) -> f64 {
        unary64(op, x)
    }
    fn binary(op: BinaryOp, x: f64, y: f64) -> f64 {
        binary64(op, x, y)
    }
    fn from_f32(c: f32) -> f64 {
        f64::from(c)
    }
    fn from_const64(c: f64) -> Option<f64> {
        Some(c)
    }
}

/// Runs an f32 `kernel` over `extents` one element at a time
/// ([`run_reference_typed`] for f32 views).
pub fn run_reference(
    kernel: &Kernel,
    inputs: &[BufView],
    outputs: &mut [BufViewMut],
    extents: &[usize],
    magnitude: Option<&mut Vec<f64>>,
) -> Result<()> {
    run_reference_typed(kernel, inputs, outputs, extents, magnitude)
}

/// Runs `kernel` over `extents` one element at a time, in the kernel's float type `T`.
/// Reductions accumulate in f64 in index order; `magnitude`, when given, receives the
/// sum of |terms| per reduction output element (for error bounds in tests).
pub fn run_reference_typed<T: RefElem>(
    kernel: &Kernel,
    inputs: &[BufView<T>],
    outputs: &mut [BufViewMut<T>],
    extents: &[usize],
    magnitude: Option<&mut Vec<f64>>,
) -> Result<()> {
    kernel.validate()?;
    check_run(kernel, inputs, outputs, extents)?;
    let outer_rank = kernel.rank - kernel.reduced_dims();
    let outer: Vec<usize> = extents.iter().take(outer_rank).copied().collect();
    let outer_count: usize = outer.iter().product();
    let mut acc = vec![identity(kernel); outer_count];
    let mut mag = vec![0.0f64; outer_count];
    let mut values = vec![T::from_f32(0.0); kernel.body.len()];
    let total: usize = extents.iter().product();
    let mut idx = vec![0usize; kernel.rank];
    for _ in 0..total {
        eval(kernel, inputs, &idx, &mut values);
        for (view, out) in outputs.iter_mut().zip(&kernel.outputs) {
            let at = address(view.offset, view.strides, &idx);
            view.data[at] = values[out.value.index()];
        }
        if let Some(red) = kernel.reduction {
            let o = flat(&idx[..outer_rank], &outer);
            let v = values[red.value.index()].to_f64();
            acc[o] = combine(red.op, acc[o], v);
            mag[o] += v.abs();
        }
        advance(&mut idx, extents);
    }
    if kernel.reduction.is_some() {
        let view = &mut outputs[kernel.outputs.len()];
        let mut oidx = vec![0usize; outer_rank];
        for a in acc {
            let at = address(view.offset, view.strides, &oidx);
            view.data[at] = T::from_f64(a);
            advance(&mut oidx, &outer);
        }
        if let Some(m) = magnitude {
            *m = mag;
        }
    }
    Ok(())
}

fn identity(kernel: &Kernel) -> f64 {
    match kernel.reduction.map(|r| r.op) {
        Some(ReduceOp::Max) => f64::NEG_INFINITY,
        Some(ReduceOp::Min) => f64::INFINITY,
        _ => 0.0,
    }
}

fn combine(op: ReduceOp, a: f64, v: f64) -> f64 {
    match op {
        ReduceOp::Sum => a + v,
        ReduceOp::Max | ReduceOp::Min if a.is_nan() || v.is_nan() => f64::NAN,
        ReduceOp::Max => a.max(v),
        ReduceOp::Min => a.min(v),
    }
}

fn address(offset: usize, strides: &[isize], idx: &[usize]) -> usize {
    let off: isize = strides.iter().zip(idx).map(|(&s, &i)| s * i as isize).sum();
    (offset as isize + off) as usize
}

fn flat(idx: &[usize], extents: &[usize]) -> usize {
    idx.iter().zip(extents).fold(0, |acc, (&i, &e)| acc * e + i)
}

fn advance(idx: &mut [usize], extents: &[usize]) {
    for d in (0..idx.len()).rev() {
        idx[d] += 1;
        if idx[d] < extents[d] {
            return;
        }
        idx[d] = 0;
    }
}

fn eval<T: RefElem>(kernel: &Kernel, inputs: &[BufView<T>], idx: &[usize], values: &mut [T]) {
    for (i, op) in kernel.body.iter().enumerate() {
        let v = |id: crate::compile::jit::kernel::ValueId| values[id.index()];
        let r = match *op {
            Op::Load(n) => {
                let view = &inputs[n];
                view.data[address(view.offset, view.strides, idx)]
            }
            Op::Const(c) => T::from_f32(c),
            Op::Const64(c) => T::from_const64(c).unwrap_or(T::from_f32(f32::NAN)),
            Op::Unary(u, a) => T::unary(u, v(a)),
            Op::Binary(b, x, y) | Op::Compare(b, x, y) => T::binary(b, v(x), v(y)),
            Op::Select(m, a, b) => {
                if v(m) != T::from_f32(0.0) {
                    v(a)
                } else {
                    v(b)
                }
            }
        };
        values[i] = r;
    }
}

/// `unary` from the op table's `reference` field, once per float type.
macro_rules! unary_reference {
    ($($V:ident {
        name: $name:literal, methods: [$($m:literal),*], global: $global:literal,
        saves: $saves:ident, f32: [$($f:tt)*], int: [$($i:tt)*], grad: [$($g:tt)*],
        jit: [$($j:tt)*], reference: [$($r:tt)*], onnx: [$($o:tt)*],
    })*) => {
        unary_reference!(@fn unary, f32, real32, $($V [$($r)*])*);
        unary_reference!(@fn unary64, f64, real64, $($V [$($r)*])*);
    };
    (@fn $name:ident, $F:ident, $helpers:ident, $($V:ident [$($r:tt)*])*) => {
        /// One unary op, scalar (NaN for ops kernels cannot hold, which
        /// `Kernel::validate` rejects).
        pub fn $name(op: UnaryOp, x: $F) -> $F {
            #[allow(unused_imports)]
            use $helpers::{erf64, gelu_tanh64, mask, via64};
            match op {
                $(UnaryOp::$V => unary_reference!(@reference $F, x, $($r)*),)*
            }
        }
    };
    (@reference $F:ident, $x:ident, none) => {
        $F::NAN
    };
    (@reference $F:ident, $xx:ident, ($x:ident) $e:expr) => {{
        let $x = $xx;
        $e
    }};
}

unary_table!(unary_reference);

/// `binary` from the op table's `fused` field, once per float type.
macro_rules! binary_reference {
    ($($V:ident {
        name: $name:literal, methods: [$($m:literal),*], global: $global:literal,
        inplace: [$($ip:literal),*], dtype: $dt:ident, saves: [$($s:ident),*],
        f32: [$($f:tt)*], int: [$($i:tt)*], grad: [$($g:tt)*], fused: [$($k:tt)*],
        onnx: [$($o:tt)*],
    })*) => {
        binary_reference!(@fn binary, f32, real32, $($V [$($k)*])*);
        binary_reference!(@fn binary64, f64, real64, $($V [$($k)*])*);
    };
    (@fn $name:ident, $F:ident, $helpers:ident, $($V:ident [$($k:tt)*])*) => {
        /// One binary op, scalar; a comparison gives its mask as 1.0 / 0.0 (NaN for
        /// ops kernels cannot hold, which `Kernel::validate` rejects).
        pub fn $name(op: BinaryOp, x: $F, y: $F) -> $F {
            #[allow(unused_imports)]
            use $helpers::{floor_div_ref, fmax_nan, fmin_nan, mask, mod_ref};
            match op {
                $(BinaryOp::$V => binary_reference!(@reference $F, x, y, $($k)*),)*
            }
        }
    };
    (@reference $F:ident, $x:ident, $y:ident, none) => {
        $F::NAN
    };
    (@reference $F:ident, $xx:ident, $yy:ident, compare $cc:ident, ($x:ident, $y:ident) $e:expr) => {{
        let ($x, $y) = ($xx, $yy);
        mask($e)
    }};
    (@reference $F:ident, $xx:ident, $yy:ident,
        ($vx:ident, $a:ident, $b:ident) $j:expr, ($x:ident, $y:ident) $e:expr $(, f64: call)?) => {{
        let ($x, $y) = ($xx, $yy);
        $e
    }};
}

binary_table!(binary_reference);

/// The reference's scalar helpers for f32 kernels (transcendental values computed in
/// f64 and rounded once).
mod real32 {
    pub use super::erf64;
    pub use crate::tensor::kernels::binary::{fmax_nan, fmin_nan};

    pub fn mask(b: bool) -> f32 {
        if b {
            1.0
        } else {
            0.0
        }
    }

    /// `f` computed in f64, rounded to f32.
    pub fn via64(x: f32, f: fn(f64) -> f64) -> f32 {
        f(f64::from(x)) as f32
    }

    pub use super::gelu_tanh64;

    pub fn floor_div_ref(x: f32, y: f32) -> f32 {
        super::floor_div_ref(x, y)
    }

    pub fn mod_ref(x: f32, y: f32) -> f32 {
        super::mod_ref(x, y)
    }
}

/// The reference's scalar helpers for f64 kernels (Rust's f64 math; Python's `//` and
/// `%` semantics as eager float64 code has them).
mod real64 {
    /// erf to ~1e-15 relative: the Maclaurin series below 2, `1 - erfc` by erfc's
    /// continued fraction above (the f32 reference's `erf64` stops at 4).
    pub fn erf64(x: f64) -> f64 {
        if x.is_nan() || x.abs() < 2.0 {
            return super::erf64(x);
        }
        let ax = x.abs();
        let mut t = ax;
        for k in (1..=200).rev() {
            t = ax + f64::from(k) / 2.0 / t;
        }
        let erfc = (-ax * ax).exp() / std::f64::consts::PI.sqrt() / t;
        (1.0 - erfc).copysign(x)
    }
    pub use crate::tensor::kernels::binary::{fmax_nan64 as fmax_nan, fmin_nan64 as fmin_nan};

    pub fn mask(b: bool) -> f64 {
        if b {
            1.0
        } else {
            0.0
        }
    }

    pub fn via64(x: f64, f: fn(f64) -> f64) -> f64 {
        f(x)
    }

    /// `gelu(x, approximate='tanh')` with the f64 constants of the f64 eager op.
    pub fn gelu_tanh64(x: f64) -> f64 {
        super::gelu_tanh_with(x, (2.0 / std::f64::consts::PI).sqrt(), 0.044_715)
    }

    /// `floor(x / y)`: eager float64's floor division.
    pub fn floor_div_ref(x: f64, y: f64) -> f64 {
        (x / y).floor()
    }

    pub fn mod_ref(x: f64, y: f64) -> f64 {
        super::python_divmod(x, y).1
    }
}

/// Python `//` on floats by CPython's algorithm; `x // 0` is `x / 0`.
fn floor_div_ref(x: f32, y: f32) -> f32 {
    if y == 0.0 {
        return x / y;
    }
    python_divmod(f64::from(x), f64::from(y)).0 as f32
}

/// Python `%` on floats by CPython's algorithm (the result has the divisor's sign).
fn mod_ref(x: f32, y: f32) -> f32 {
    python_divmod(f64::from(x), f64::from(y)).1 as f32
}

/// CPython's `float_divmod` (Objects/floatobject.c), except that `y == 0` gives NaN.
fn python_divmod(vx: f64, wx: f64) -> (f64, f64) {
    let mut m = vx % wx;
    let mut div = (vx - m) / wx;
    if m != 0.0 {
        if (wx < 0.0) != (m < 0.0) {
            m += wx;
            div -= 1.0;
        }
    } else {
        m = 0.0f64.copysign(wx);
    }
    let floordiv = if div != 0.0 {
        let f = div.floor();
        if div - f > 0.5 {
            f + 1.0
        } else {
            f
        }
    } else {
        0.0f64.copysign(vx / wx)
    };
    (floordiv, m)
}

/// erf in f64: its Maclaurin series below 4 (terms summed until negligible), else ±1
/// (erfc(4) < 2e-8 rounds away in f32). Accurate to ~1e-15 absolute.
pub fn erf64(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let ax = x.abs();
    if ax >= 4.0 {
        return 1.0f64.copysign(x);
    }
    let x2 = ax * ax;
    let (mut term, mut sum) = (ax, ax);
    let mut n = 0.0;
    while term.abs() > 1e-17 * sum {
        n += 1.0;
        term *= -x2 / n;
        sum += term / (2.0 * n + 1.0);
    }
    (sum * std::f64::consts::FRAC_2_SQRT_PI).copysign(x)
}

/// `gelu(x, approximate='tanh')` in f64 with the f32 constants of the eager f32 op.
pub fn gelu_tanh64(x: f64) -> f64 {
    gelu_tanh_with(x, f64::from(0.797_884_6f32), f64::from(0.044_715f32))
}

/// `gelu(x, approximate='tanh')` in f64 with the constants `c0`, `c1`, written as
/// `x / (1 + e^-u)`, `u = 2 c0 (x + c1 x^3)` (no cancellation for x << 0).
fn gelu_tanh_with(x: f64, c0: f64, c1: f64) -> f64 {
    let u = 2.0 * c0 * (x + c1 * x * x * x);
    x / (1.0 + (-u).exp())
}
