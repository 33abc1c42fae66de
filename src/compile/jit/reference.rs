//! Reference interpreter of the kernel IR: plain scalar loops with Rust's std math.
//!
//! This is the independent truth the JIT is tested against; it shares no code with the
//! code generator except the IR types and the view checks.

use crate::compile::jit::kernel::{BinaryOp, Kernel, Op, ReduceOp, UnaryOp};
use crate::compile::jit::views::{check_run, BufView, BufViewMut};
use crate::error::Result;
use crate::optable::binary::binary_table;
use crate::optable::unary::unary_table;
use crate::tensor::kernels::binary::{fmax_nan, fmin_nan};

/// Runs `kernel` over `extents` one element at a time. Reductions accumulate in f64 in
/// index order; `magnitude`, when given, receives the sum of |terms| per reduction output
/// element (for error bounds in tests).
pub fn run_reference(
    kernel: &Kernel,
    inputs: &[BufView],
    outputs: &mut [BufViewMut],
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
    let mut values = vec![0.0f32; kernel.body.len()];
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
            let v = values[red.value.index()] as f64;
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
            view.data[at] = a as f32;
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

fn eval(kernel: &Kernel, inputs: &[BufView], idx: &[usize], values: &mut [f32]) {
    for (i, op) in kernel.body.iter().enumerate() {
        let v = |id: crate::compile::jit::kernel::ValueId| values[id.index()];
        let r = match *op {
            Op::Load(n) => {
                let view = &inputs[n];
                view.data[address(view.offset, view.strides, idx)]
            }
            Op::Const(c) => c,
            Op::Unary(u, a) => unary(u, v(a)),
            Op::Binary(b, x, y) | Op::Compare(b, x, y) => binary(b, v(x), v(y)),
            Op::Select(m, a, b) => {
                if v(m) != 0.0 {
                    v(a)
                } else {
                    v(b)
                }
            }
        };
        values[i] = r;
    }
}

fn mask(b: bool) -> f32 {
    if b {
        1.0
    } else {
        0.0
    }
}

/// `unary` from the op table's `reference` field.
macro_rules! unary_reference {
    ($($V:ident {
        name: $name:literal, methods: [$($m:literal),*], global: $global:literal,
        saves: $saves:ident, f32: [$($f:tt)*], int: [$($i:tt)*], grad: [$($g:tt)*],
        jit: [$($j:tt)*], reference: [$($r:tt)*], onnx: [$($o:tt)*],
    })*) => {
        /// One unary op, scalar f32 (NaN for ops kernels cannot hold, which
        /// `Kernel::validate` rejects).
        pub fn unary(op: UnaryOp, x: f32) -> f32 {
            match op {
                $(UnaryOp::$V => unary_reference!(@reference x, $($r)*),)*
            }
        }
    };
    (@reference $x:ident, none) => {
        f32::NAN
    };
    (@reference $xx:ident, ($x:ident) $e:expr) => {{
        let $x = $xx;
        $e
    }};
}

unary_table!(unary_reference);

/// `binary` from the op table's `fused` field.
macro_rules! binary_reference {
    ($($V:ident {
        name: $name:literal, methods: [$($m:literal),*], global: $global:literal,
        dtype: $dt:ident, saves: [$($s:ident),*],
        f32: [$($f:tt)*], int: [$($i:tt)*], grad: [$($g:tt)*], fused: [$($k:tt)*],
        onnx: [$($o:tt)*],
    })*) => {
        /// One binary op, scalar f32; a comparison gives its mask as 1.0 / 0.0 (NaN for
        /// ops kernels cannot hold, which `Kernel::validate` rejects).
        pub fn binary(op: BinaryOp, x: f32, y: f32) -> f32 {
            match op {
                $(BinaryOp::$V => binary_reference!(@reference x, y, $($k)*),)*
            }
        }
    };
    (@reference $x:ident, $y:ident, none) => {
        f32::NAN
    };
    (@reference $xx:ident, $yy:ident, compare $cc:ident, ($x:ident, $y:ident) $e:expr) => {{
        let ($x, $y) = ($xx, $yy);
        mask($e)
    }};
    (@reference $xx:ident, $yy:ident,
        ($vx:ident, $a:ident, $b:ident) $j:expr, ($x:ident, $y:ident) $e:expr) => {{
        let ($x, $y) = ($xx, $yy);
        $e
    }};
}

binary_table!(binary_reference);

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

/// `gelu(x, approximate='tanh')` in f64 with the f32 constants of the eager op, written
/// as `x / (1 + e^-u)`, `u = 2 c0 (x + c1 x^3)` (no cancellation for x << 0).
pub fn gelu_tanh64(x: f64) -> f64 {
    let (c0, c1) = (f64::from(0.797_884_6f32), f64::from(0.044_715f32));
    let u = 2.0 * c0 * (x + c1 * x * x * x);
    x / (1.0 + (-u).exp())
}
