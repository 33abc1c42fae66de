//! The trailing reduction's accumulators in generated code. Sums of an f32 kernel
//! accumulate in f64 (four f64x2 accumulators and an f64 tail), as eager sums do, so a
//! fused sum agrees with eager's to f32 rounding even when its terms cancel; max/min
//! accumulate in f32x4. An f64 kernel accumulates in two f64x2 and an f64 tail.

use crate::compile::jit::body::reduce_step;
use crate::compile::jit::kernel::ReduceOp;
use cranelift_codegen::ir::types::{F32, F32X4, F64, F64X2, I8X16};
use cranelift_codegen::ir::{Endianness, InstBuilder, MemFlagsData, Type, Value};
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
    /// A sum of f32 values, widened to f64 (lanes 0-1 and 2-3 to separate f64x2).
    widen: bool,
    /// The scalar type of the accumulators (f64 for widened sums and f64 kernels).
    sty: Type,
    /// Widened sums: four f64x2 (slot V0 owns 0 and 1, V1 owns 2 and 3); otherwise two
    /// vectors of the kernel's type.
    vec: Vec<Variable>,
    /// The tail accumulator.
    s: Variable,
}

const LE: MemFlagsData = MemFlagsData::new().with_endianness(Endianness::Little);

impl Accs {
    /// The accumulators of `op` over f32 values (f64 values when `wide`).
    pub fn declare(b: &mut FunctionBuilder, op: ReduceOp, wide: bool) -> Accs {
        let widen = op == ReduceOp::Sum && !wide;
        let (vty, n, sty) = match (widen, wide) {
            (true, _) => (F64X2, 4, F64),
            (false, true) => (F64X2, 2, F64),
            (false, false) => (F32X4, 2, F32),
        };
        Accs {
            op,
            widen,
            sty,
            vec: (0..n).map(|_| b.declare_var(vty)).collect(),
            s: b.declare_var(sty),
        }
    }

    /// Sets every accumulator to the op's identity.
    pub fn init(&self, b: &mut FunctionBuilder) {
        let id = match self.op {
            ReduceOp::Sum => 0.0,
            ReduceOp::Max => f64::NEG_INFINITY,
            ReduceOp::Min => f64::INFINITY,
        };
        let (sc, vc) = if self.sty == F64 {
            let z = b.ins().f64const(id);
            (z, b.ins().splat(F64X2, z))
        } else {
            let z = b.ins().f32const(id as f32);
            (z, b.ins().splat(F32X4, z))
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

    /// Folds `v` (a vector of the kernel's type; only lane 0 for `Scalar`) into the
    /// slot's accumulators.
    pub fn add(&self, b: &mut FunctionBuilder, slot: AccSlot, v: Value) {
        let first = match slot {
            AccSlot::V0 => 0,
            AccSlot::V1 => self.vec.len() / 2,
            AccSlot::Scalar => {
                let x = b.ins().extractlane(v, 0);
                let x = if self.widen {
                    b.ins().fpromote(F64, x)
                } else {
                    x
                };
                return self.step(b, self.s, x);
            }
        };
        if self.widen {
            let lo = b.ins().fvpromote_low(v);
            let hi = high_half(b, v);
            let hi = b.ins().fvpromote_low(hi);
            self.step(b, self.vec[first], lo);
            self.step(b, self.vec[first + 1], hi);
        } else {
            self.step(b, self.vec[first], v);
        }
    }

    /// Combines every accumulator into the result (f32 for an f32 kernel).
    pub fn finish(&self, b: &mut FunctionBuilder) -> Value {
        let op = self.op;
        let mut v = b.use_var(self.vec[0]);
        for &var in &self.vec[1..] {
            let x = b.use_var(var);
            v = reduce_step(b, op, v, x);
        }
        let lanes: u8 = if self.sty == F64 { 2 } else { 4 };
        let mut r = b.ins().extractlane(v, 0);
        for lane in 1..lanes {
            let l = b.ins().extractlane(v, lane);
            r = reduce_step(b, op, r, l);
        }
        let s = b.use_var(self.s);
        let r = reduce_step(b, op, r, s);
        if self.widen {
            b.ins().fdemote(F32, r)
        } else {
            r
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
