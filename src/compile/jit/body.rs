//! Emission of one element's SSA body (all ops as f32x4, or f64x2 in an f64 kernel) and
//! of reduction steps.

use crate::compile::jit::calls64;
use crate::compile::jit::kernel::{BinaryOp, Kernel, Kind, Op, ReduceOp, UnaryOp};
use crate::compile::jit::lanefn::{self, per_lane};
use crate::compile::jit::mathfn::{self, Vx};
use crate::compile::jit::mathgelu;
use crate::optable::binary::binary_table;
use crate::optable::unary::unary_table;
use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{InstBuilder, Value};
use cranelift_frontend::FunctionBuilder;

/// Whether an element is a full vector or a tail element (only lane 0 is meaningful).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Elem {
    Vector,
    Tail,
}

/// Emits the body for one vector of elements; `loads[n]` is input `n`'s vector.
/// Returns one value per op (a float vector, or an integer mask vector for compares).
pub(crate) fn emit_body(
    vx: &mut Vx,
    kernel: &Kernel,
    kinds: &[Kind],
    loads: &[Value],
) -> Vec<Value> {
    let mut values: Vec<Value> = Vec::with_capacity(kernel.body.len());
    for op in &kernel.body {
        let val = |id: crate::compile::jit::kernel::ValueId| values[id.index()];
        let v = match *op {
            Op::Load(n) => loads[n],
            Op::Const(c) => vx.c(c),
            Op::Const64(c) => vx.c64(c),
            Op::Unary(u, a) => unary(vx, u, val(a)),
            Op::Binary(bop, a, b) | Op::Compare(bop, a, b) => binary(vx, bop, val(a), val(b)),
            Op::Select(m, a, b) => vx.sel(val(m), val(a), val(b)),
        };
        values.push(v);
    }
    debug_assert_eq!(values.len(), kinds.len());
    values
}

/// `unary` from the op table's `jit` field: its code for both float types, or its f32x4
/// code and `f64: call` (an f64 kernel calls eager's float64 kernel per lane).
macro_rules! unary_jit {
    ($($V:ident {
        name: $name:literal, methods: [$($m:literal),*], global: $global:literal,
        saves: $saves:ident, f32: [$($f:tt)*], int: [$($i:tt)*], grad: [$($g:tt)*],
        jit: [$($j:tt)*], reference: [$($r:tt)*], onnx: [$($o:tt)*],
    })*) => {
        /// The vector code of `op` on `x` (`Kernel::validate` rejects ops that are not
        /// `fusable`; they give NaN here).
        fn unary(vx: &mut Vx, op: UnaryOp, x: Value) -> Value {
            match op {
                $(UnaryOp::$V => unary_jit!(@jit $V, vx, x, $($j)*),)*
            }
        }
    };
    (@jit $V:ident, $vx:ident, $x:ident, none) => {
        $vx.c(f32::NAN)
    };
    (@jit $V:ident, $vv:ident, $xx:ident, ($vx:ident, $x:ident) $e:expr) => {{
        let ($vx, $x) = (&mut *$vv, $xx);
        $e
    }};
    (@jit $V:ident, $vv:ident, $xx:ident, ($vx:ident, $x:ident) $e:expr, f64: call) => {{
        if $vv.k.wide {
            let f: extern "C" fn(f64) -> f64 = calls64::unary::$V;
            $vv.call(f as usize, &[$xx])
        } else {
            let ($vx, $x) = (&mut *$vv, $xx);
            $e
        }
    }};
}

unary_table!(unary_jit);

/// `binary` from the op table's `fused` field.
macro_rules! binary_jit {
    ($($V:ident {
        name: $name:literal, methods: [$($m:literal),*], global: $global:literal,
        inplace: [$($ip:literal),*], dtype: $dt:ident, saves: [$($s:ident),*],
        f32: [$($f:tt)*], int: [$($i:tt)*], grad: [$($g:tt)*], fused: [$($k:tt)*],
        onnx: [$($o:tt)*],
    })*) => {
        /// The vector code of `op` on `a`, `b` (a mask for comparisons;
        /// `Kernel::validate` rejects ops that are not `fusable`: they give NaN here).
        fn binary(vx: &mut Vx, op: BinaryOp, a: Value, b: Value) -> Value {
            match op {
                $(BinaryOp::$V => binary_jit!(@jit $V, vx, a, b, $($k)*),)*
            }
        }
    };
    (@jit $V:ident, $vx:ident, $a:ident, $b:ident, none) => {
        $vx.c(f32::NAN)
    };
    (@jit $V:ident, $vx:ident, $a:ident, $b:ident, compare $cc:ident, $($r:tt)*) => {
        $vx.cmp(FloatCC::$cc, $a, $b)
    };
    (@jit $V:ident, $vv:ident, $aa:ident, $bb:ident,
        ($vx:ident, $a:ident, $b:ident) $e:expr, ($x:ident, $y:ident) $r:expr, f64: call) => {{
        if $vv.k.wide {
            let f: extern "C" fn(f64, f64) -> f64 = calls64::binary::$V;
            $vv.call(f as usize, &[$aa, $bb])
        } else {
            let ($vx, $a, $b) = (&mut *$vv, $aa, $bb);
            $e
        }
    }};
    (@jit $V:ident, $vv:ident, $aa:ident, $bb:ident,
        ($vx:ident, $a:ident, $b:ident) $e:expr, $($r:tt)*) => {{
        let ($vx, $a, $b) = (&mut *$vv, $aa, $bb);
        $e
    }};
}

binary_table!(binary_jit);

/// One combining step of a reduction (vector or scalar; Max/Min propagate NaN).
pub(crate) fn reduce_step(b: &mut FunctionBuilder, op: ReduceOp, acc: Value, v: Value) -> Value {
    match op {
        ReduceOp::Sum => b.ins().fadd(acc, v),
        ReduceOp::Max => b.ins().fmax(acc, v),
        ReduceOp::Min => b.ins().fmin(acc, v),
    }
}
