//! Emission of one element's SSA body (all ops as f32x4) and of reduction steps.

use crate::compile::jit::kernel::{BinaryOp, CmpOp, Kernel, Kind, Op, ReduceOp, UnaryOp};
use crate::compile::jit::lanefn::{self, per_lane};
use crate::compile::jit::mathfn::{self, Vx};
use crate::compile::jit::mathgelu;
use crate::ops::table::unary_table;
use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{InstBuilder, Value};
use cranelift_frontend::FunctionBuilder;

/// Whether an element is a full f32x4 or a tail element (only lane 0 is meaningful).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Elem {
    Vector,
    Tail,
}

/// Emits the body for one f32x4 of elements; `loads[n]` is input `n`'s vector.
/// Returns one value per op (f32x4, or an i32x4 mask for compares).
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
            Op::Unary(u, a) => unary(vx, u, val(a)),
            Op::Binary(bop, a, b) => binary(vx, bop, val(a), val(b)),
            Op::Compare(c, a, b) => vx.cmp(float_cc(c), val(a), val(b)),
            Op::Select(m, a, b) => vx.sel(val(m), val(a), val(b)),
        };
        values.push(v);
    }
    debug_assert_eq!(values.len(), kinds.len());
    values
}

fn float_cc(c: CmpOp) -> FloatCC {
    match c {
        CmpOp::Lt => FloatCC::LessThan,
        CmpOp::Le => FloatCC::LessThanOrEqual,
        CmpOp::Gt => FloatCC::GreaterThan,
        CmpOp::Ge => FloatCC::GreaterThanOrEqual,
        CmpOp::Eq => FloatCC::Equal,
        CmpOp::Ne => FloatCC::NotEqual,
    }
}

/// `unary` from the op table's `jit` field.
macro_rules! unary_jit {
    ($($V:ident {
        name: $name:literal, methods: [$($m:literal),*], global: $global:literal,
        saves: $saves:ident, f32: [$($f:tt)*], int: [$($i:tt)*], grad: [$($g:tt)*],
        jit: [$($j:tt)*], reference: [$($r:tt)*], onnx: [$($o:tt)*],
    })*) => {
        /// The f32x4 code of `op` on `x` (`Kernel::validate` rejects ops that are not
        /// `fusable`; they give NaN here).
        fn unary(vx: &mut Vx, op: UnaryOp, x: Value) -> Value {
            match op {
                $(UnaryOp::$V => unary_jit!(@jit vx, x, $($j)*),)*
            }
        }
    };
    (@jit $vx:ident, $x:ident, none) => {
        $vx.c(f32::NAN)
    };
    (@jit $vv:ident, $xx:ident, ($vx:ident, $x:ident) $e:expr) => {{
        let ($vx, $x) = (&mut *$vv, $xx);
        $e
    }};
}

unary_table!(unary_jit);

fn binary(vx: &mut Vx, op: BinaryOp, a: Value, b: Value) -> Value {
    match op {
        BinaryOp::Add => vx.add(a, b),
        BinaryOp::Sub => vx.sub(a, b),
        BinaryOp::Mul => vx.mul(a, b),
        BinaryOp::Div => vx.div(a, b),
        BinaryOp::Max => vx.b.ins().fmax(a, b),
        BinaryOp::Min => vx.b.ins().fmin(a, b),
        BinaryOp::Pow => per_lane(vx.b, &[a, b], lanefn::pow),
        BinaryOp::FloorDiv => per_lane(vx.b, &[a, b], lanefn::floor_div),
        BinaryOp::Mod => per_lane(vx.b, &[a, b], lanefn::modulo),
    }
}

/// One combining step of a reduction (vector or scalar; Max/Min propagate NaN).
pub(crate) fn reduce_step(b: &mut FunctionBuilder, op: ReduceOp, acc: Value, v: Value) -> Value {
    match op {
        ReduceOp::Sum => b.ins().fadd(acc, v),
        ReduceOp::Max => b.ins().fmax(acc, v),
        ReduceOp::Min => b.ins().fmin(acc, v),
    }
}
