//! Emission of one element's SSA body (all ops as f32x4) and of reduction steps.

use super::kernel::{BinaryOp, CmpOp, Kernel, Kind, Op, ReduceOp, UnaryOp};
use super::lanefn::{self, per_lane};
use super::mathfn::{self, Vx};
use super::mathgelu;
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
        let val = |id: super::kernel::ValueId| values[id.index()];
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

fn unary(vx: &mut Vx, op: UnaryOp, x: Value) -> Value {
    match op {
        UnaryOp::Neg => vx.b.ins().fneg(x),
        UnaryOp::Abs => vx.b.ins().fabs(x),
        UnaryOp::Exp => mathfn::exp(vx, x),
        UnaryOp::Log => mathfn::log(vx, x),
        UnaryOp::Sqrt => vx.b.ins().sqrt(x),
        UnaryOp::Rsqrt => {
            let s = vx.b.ins().sqrt(x);
            let one = vx.c(1.0);
            vx.div(one, s)
        }
        UnaryOp::Tanh => mathfn::tanh(vx, x),
        UnaryOp::Sigmoid => mathfn::sigmoid(vx, x),
        UnaryOp::GeluTanh => mathgelu::gelu_tanh(vx, x),
        UnaryOp::Relu => mathfn::relu(vx, x),
        UnaryOp::Erf => mathfn::erf(vx, x),
        UnaryOp::Sin => per_lane(vx.b, &[x], lanefn::sin),
        UnaryOp::Cos => per_lane(vx.b, &[x], lanefn::cos),
        UnaryOp::Floor => vx.b.ins().floor(x),
        UnaryOp::Round => vx.b.ins().nearest(x),
        UnaryOp::Sign => mathfn::sign(vx, x),
        UnaryOp::Recip => {
            let one = vx.c(1.0);
            vx.div(one, x)
        }
    }
}

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
