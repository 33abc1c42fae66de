//! The trailing reduction's accumulators in generated code. Sums accumulate in f64
//! (four f64x2 accumulators and an f64 tail), as eager sums do, so a fused sum agrees
//! with eager's to f32 rounding even when its terms cancel; max/min accumulate in f32x4.

use crate::compile::jit::body::reduce_step;
use crate::compile::jit::kernel::ReduceOp;
use cranelift_codegen::ir::types::{F32, F32X4, F64, F64X2, I8X16};
use cranelift_codegen::ir::{Endianness, InstBuilder, MemFlagsData, Value};
use cranelift_frontend::{FunctionBuilder, Variable};

/// Which accumulators an element feeds: the two halves of the unrolled vector loop
/// use separate ones (independent dependency chains); tails use the scalar one.
#[derive(Clone, Copy)]
pub(crate) enum AccSlot {
    V0,
    V1,
    Scalar,
}

/// The accumulator variables of one reduction.
pub(crate) struct Accs {
    op: ReduceOp,
    /// Sum: four f64x2 (slot V0 owns 0 and 1, V1 owns 2 and 3); max/min: two f32x4.
    vec: Vec<Variable>,
    /// The tail accumulator (f64 for sums, f32 otherwise).
    s: Variable,
}

const LE: MemFlagsData = MemFlagsData::new().with_endianness(Endianness::Little);

impl Accs {
    pub fn declare(b: &mut FunctionBuilder, op: ReduceOp) -> Accs {
        let (vty, n, sty) = match op {
            ReduceOp::Sum => (F64X2, 4, F64),
            ReduceOp::Max | ReduceOp::Min => (F32X4, 2, F32),
        };
        Accs {
            op,
            vec: (0..n).map(|_| b.declare_var(vty)).collect(),
            s: b.declare_var(sty),
        }
    }

    /// Sets every accumulator to the op's identity.
    pub fn init(&self, b: &mut FunctionBuilder) {
        let (sc, vc) = match self.op {
            ReduceOp::Sum => {
                let z = b.ins().f64const(0.0);
                (z, b.ins().splat(F64X2, z))
            }
            ReduceOp::Max | ReduceOp::Min => {
                let id = if self.op == ReduceOp::Max {
                    f32::NEG_INFINITY
                } else {
                    f32::INFINITY
                };
                let z = b.ins().f32const(id);
                (z, b.ins().splat(F32X4, z))
            }
        };
        for &v in &self.vec {
            b.def_var(v, vc);
        }
        b.def_var(self.s, sc);
    }

    fn step(&self, b: &mut FunctionBuilder, var: Variable, v: Value) {
        let acc = b.use_var(var);
        let acc = reduce_step(b, self.op, acc, v);
        b.def_var(var, acc);
    }

    /// Folds `v` (an f32x4; only lane 0 for `Scalar`) into the slot's accumulators.
    pub fn add(&self, b: &mut FunctionBuilder, slot: AccSlot, v: Value) {
        let first = match slot {
            AccSlot::V0 => 0,
            AccSlot::V1 => self.vec.len() / 2,
            AccSlot::Scalar => {
                let x = b.ins().extractlane(v, 0);
                let x = match self.op {
                    ReduceOp::Sum => b.ins().fpromote(F64, x),
                    ReduceOp::Max | ReduceOp::Min => x,
                };
                return self.step(b, self.s, x);
            }
        };
        match self.op {
            ReduceOp::Sum => {
                let lo = b.ins().fvpromote_low(v);
                let hi = high_half(b, v);
                let hi = b.ins().fvpromote_low(hi);
                self.step(b, self.vec[first], lo);
                self.step(b, self.vec[first + 1], hi);
            }
            ReduceOp::Max | ReduceOp::Min => self.step(b, self.vec[first], v),
        }
    }

    /// Combines every accumulator into the f32 result.
    pub fn finish(&self, b: &mut FunctionBuilder) -> Value {
        let op = self.op;
        let mut v = b.use_var(self.vec[0]);
        for &var in &self.vec[1..] {
            let x = b.use_var(var);
            v = reduce_step(b, op, v, x);
        }
        let lanes: u8 = if op == ReduceOp::Sum { 2 } else { 4 };
        let mut r = b.ins().extractlane(v, 0);
        for lane in 1..lanes {
            let l = b.ins().extractlane(v, lane);
            r = reduce_step(b, op, r, l);
        }
        let s = b.use_var(self.s);
        let r = reduce_step(b, op, r, s);
        match op {
            ReduceOp::Sum => b.ins().fdemote(F32, r),
            ReduceOp::Max | ReduceOp::Min => r,
        }
    }
}

/// Lanes 2 and 3 of an f32x4 moved to lanes 0 and 1.
fn high_half(b: &mut FunctionBuilder, v: Value) -> Value {
    let bytes = b.ins().bitcast(I8X16, LE, v);
    let mask: Vec<u8> = (8..16).chain(0..8).collect();
    let mask = b.func.dfg.immediates.push(mask.into());
    let s = b.ins().shuffle(bytes, bytes, mask);
    b.ins().bitcast(F32X4, LE, s)
}
