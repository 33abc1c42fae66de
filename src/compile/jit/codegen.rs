//! Kernel IR → Cranelift IR: the loop nest, unrolled inner loops of 128-bit vectors
//! (f32x4, or f64x2 in an f64 kernel), scalar tails and the trailing reduction's
//! accumulators.
//!
//! The function reads a [`crate::compile::jit::KernelArgs`]: base pointers, extents, element
//! strides, the `[start, end)` range of dimension 0 and the constant table. Buffers are numbered inputs, then
//! outputs, then the reduction output. Every element is computed as a vector (tails load
//! one element splatted and keep lane 0).

use crate::compile::jit::accum::{AccSlot, Accs};
use crate::compile::jit::body::{emit_body, Elem};
use crate::compile::jit::consts::{Consts, Splat4};
use crate::compile::jit::kernel::{Access, FloatType, Kernel, Kind};
use crate::compile::jit::mathfn::Vx;
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::types::{F32, F32X4, F64, F64X2, I32, I64};
use cranelift_codegen::ir::{Function, InstBuilder, MemFlagsData, Type, Value};
use cranelift_codegen::isa::TargetFrontendConfig;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};

/// Memory flags of every buffer access: cannot trap (bounds were checked), never aligned.
pub(crate) const MEM: MemFlagsData = MemFlagsData::new().with_notrap();

/// Builds the kernel function into `func` (signature already set: `(i64) -> i32`) and
/// returns its constant table. `fma`: the host has native fused multiply-add.
pub(crate) fn build(
    kernel: &Kernel,
    kinds: &[Kind],
    func: &mut Function,
    fctx: &mut FunctionBuilderContext,
    config: TargetFrontendConfig,
    fma: bool,
) -> Vec<Splat4> {
    let mut b = FunctionBuilder::new(func, fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let args = b.block_params(entry)[0];
    let mut g = Gen::new(b, kernel, kinds, args, fma);
    let zero = g.b.ins().iconst(I64, 0);
    let offs = vec![zero; kernel.inputs.len() + kernel.outputs.len()];
    g.level(0, &offs, zero);
    let ok = g.b.ins().iconst(I32, 0);
    g.b.ins().return_(&[ok]);
    g.b.seal_all_blocks();
    g.b.finalize(config);
    g.consts.into_table()
}

/// The element types of a kernel's code: scalar, vector, lanes, log2 of the byte size.
#[derive(Clone, Copy)]
struct Ty {
    scalar: Type,
    vector: Type,
    lanes: i64,
    shift: i64,
}

impl Ty {
    fn of(ft: FloatType) -> Ty {
        let (scalar, vector) = match ft {
            FloatType::F32 => (F32, F32X4),
            FloatType::F64 => (F64, F64X2),
        };
        Ty {
            scalar,
            vector,
            lanes: ft.lanes(),
            shift: ft.shift(),
        }
    }
}

struct Gen<'a, 'f> {
    b: FunctionBuilder<'f>,
    ty: Ty,
    kernel: &'a Kernel,
    kinds: &'a [Kind],
    bases: Vec<Value>,
    /// Byte strides per buffer per dim (the reduction output has only outer dims).
    strides: Vec<Vec<Value>>,
    extents: Vec<Value>,
    start: Value,
    end: Value,
    accs: Option<Accs>,
    consts: Consts,
    /// The `KernelArgs` pointer (the constant table's address is re-read from it).
    args: Value,
}

impl<'a, 'f> Gen<'a, 'f> {
    fn new(
        mut b: FunctionBuilder<'f>,
        kernel: &'a Kernel,
        kinds: &'a [Kind],
        args: Value,
        fma: bool,
    ) -> Self {
        let field = |b: &mut FunctionBuilder, at: i32| b.ins().load(I64, MEM, args, at);
        let (ptrs, ext, strd) = (field(&mut b, 0), field(&mut b, 8), field(&mut b, 16));
        let (start, end) = (field(&mut b, 24), field(&mut b, 32));
        let wide = kernel.dtype == FloatType::F64;
        let ty = Ty::of(kernel.dtype);
        let consts = Consts::new(field(&mut b, 40), fma, wide);
        let rank = kernel.rank;
        let n_full = kernel.inputs.len() + kernel.outputs.len();
        let n_buf = kernel.inputs.len() + kernel.output_buffers();
        let bases = (0..n_buf)
            .map(|i| b.ins().load(I64, MEM, ptrs, 8 * i as i32))
            .collect();
        let extents = (0..rank)
            .map(|d| b.ins().load(I64, MEM, ext, 8 * d as i32))
            .collect();
        let outer = rank - kernel.reduced_dims();
        let strides = (0..n_buf)
            .map(|i| {
                let dims = if i < n_full { rank } else { outer };
                (0..dims)
                    .map(|d| {
                        let s = b.ins().load(I64, MEM, strd, 8 * (i * rank + d) as i32);
                        b.ins().ishl_imm_s(s, ty.shift)
                    })
                    .collect()
            })
            .collect();
        let accs = kernel.reduction.map(|r| Accs::declare(&mut b, r.op, wide));
        Gen {
            b,
            ty,
            kernel,
            kinds,
            bases,
            strides,
            extents,
            start,
            end,
            accs,
            consts,
            args,
        }
    }

    fn range(&mut self, d: usize) -> (Value, Value) {
        if d == 0 {
            (self.start, self.end)
        } else {
            (self.b.ins().iconst(I64, 0), self.extents[d])
        }
    }

    /// Emits the loop of dimension `d` (and everything inside it).
    fn level(&mut self, d: usize, offs: &[Value], red_off: Value) {
        let rank = self.kernel.rank;
        let red_start = rank - self.kernel.reduced_dims();
        let opens_reduction = self.accs.is_some() && d == red_start;
        if opens_reduction {
            self.init_accs();
        }
        let (lo, hi) = self.range(d);
        if d + 1 == rank {
            self.inner(offs, lo, hi);
        } else {
            let i = self.b.declare_var(I64);
            self.b.def_var(i, lo);
            let (header, body, exit) = (
                self.b.create_block(),
                self.b.create_block(),
                self.b.create_block(),
            );
            self.b.ins().jump(header, &[]);
            self.b.switch_to_block(header);
            let iv = self.b.use_var(i);
            let more = self.b.ins().icmp(IntCC::SignedLessThan, iv, hi);
            self.b.ins().brif(more, body, &[], exit, &[]);
            self.b.switch_to_block(body);
            let inner_offs: Vec<Value> = offs
                .iter()
                .enumerate()
                .map(|(n, &o)| {
                    let step = self.b.ins().imul(iv, self.strides[n][d]);
                    self.b.ins().iadd(o, step)
                })
                .collect();
            let inner_red = if d < red_start {
                let last = self.strides.len() - 1;
                let step = self.b.ins().imul(iv, self.strides[last][d]);
                self.b.ins().iadd(red_off, step)
            } else {
                red_off
            };
            self.level(d + 1, &inner_offs, inner_red);
            let iv = self.b.use_var(i);
            let next = self.b.ins().iadd_imm_s(iv, 1);
            self.b.def_var(i, next);
            self.b.ins().jump(header, &[]);
            self.b.switch_to_block(exit);
        }
        if opens_reduction {
            let row = (d + 1 == rank).then_some((offs, lo, hi));
            self.finish_accs(red_off, row);
        }
    }

    fn init_accs(&mut self) {
        if let Some(accs) = &self.accs {
            accs.init(&mut self.b);
        }
    }

    /// Stores the reduction's result; `row` (the reduced row's offsets and range when
    /// one innermost dim is reduced) lets a `first` reduction rescan for its zero.
    fn finish_accs(&mut self, red_off: Value, row: Option<(&[Value], Value, Value)>) {
        let Some(accs) = &self.accs else { return };
        let mut r = accs.finish(&mut self.b);
        if let (Some(true), Some((offs, lo, hi))) = (self.kernel.reduction.map(|r| r.first), row) {
            r = self.first_zero(r, offs, lo, hi);
        }
        let last = self.bases.len() - 1;
        let addr = self.b.ins().iadd(self.bases[last], red_off);
        self.b.ins().store(MEM, r, addr, 0);
    }

    /// Each operand's row start at `offs` and its innermost-dim step.
    fn row_starts(&mut self, offs: &[Value]) -> (Vec<Value>, Vec<Value>) {
        let rank = self.kernel.rank;
        let rows = offs
            .iter()
            .enumerate()
            .map(|(n, &o)| self.b.ins().iadd(self.bases[n], o))
            .collect();
        let steps = (0..offs.len()).map(|n| self.strides[n][rank - 1]).collect();
        (rows, steps)
    }

    /// `r` or, when `r` is ±0, the row's first element equal to zero (a scalar rescan,
    /// run only for such rows): the sign PyTorch's max(dim)/min(dim) returns.
    fn first_zero(&mut self, r: Value, offs: &[Value], lo: Value, hi: Value) -> Value {
        let (rows, steps) = self.row_starts(offs);
        let res = self.b.declare_var(self.ty.scalar);
        self.b.def_var(res, r);
        let i = self.b.declare_var(I64);
        self.b.def_var(i, lo);
        let [header, body, found, next, done] = [(); 5].map(|_| self.b.create_block());
        let zero = if self.ty.scalar == F64 {
            self.b.ins().f64const(0.0)
        } else {
            self.b.ins().f32const(0.0)
        };
        let is_zero = self.b.ins().fcmp(FloatCC::Equal, r, zero);
        self.b.ins().brif(is_zero, header, &[], done, &[]);
        self.b.switch_to_block(header);
        let iv = self.b.use_var(i);
        let more = self.b.ins().icmp(IntCC::SignedLessThan, iv, hi);
        self.b.ins().brif(more, body, &[], done, &[]);
        self.b.switch_to_block(body);
        self.reload_consts();
        let values = self.body_values(&rows, &steps, iv, Elem::Tail);
        let v = self.reduced(&values);
        let v = self.b.ins().extractlane(v, 0);
        let z = self.b.ins().fcmp(FloatCC::Equal, v, zero);
        self.b.ins().brif(z, found, &[], next, &[]);
        self.b.switch_to_block(found);
        self.b.def_var(res, v);
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(next);
        let iv = self.b.use_var(i);
        let n = self.b.ins().iadd_imm_s(iv, 1);
        self.b.def_var(i, n);
        self.b.ins().jump(header, &[]);
        self.b.switch_to_block(done);
        self.b.use_var(res)
    }

    /// The innermost loop: 4 vectors per iteration (2 with a reduction), then one vector,
    /// then scalars.
    fn inner(&mut self, offs: &[Value], lo: Value, hi: Value) {
        let (rows, steps) = self.row_starts(offs);
        let i = self.b.declare_var(I64);
        self.b.def_var(i, lo);
        // Without a reduction the loop body holds 4 vectors (`sched` interleaves the
        // chains of f32 kernels); a reduction has accumulators for 2.
        let vectors: i64 = if self.accs.is_some() { 2 } else { 4 };
        let lanes = self.ty.lanes;
        let vector_loops = [(lanes * vectors, true), (lanes, false)];
        // A tiny kernel (one element) has the one-element loop only.
        let plan = match self.kernel.tiny {
            true => &vector_loops[..0],
            false => &vector_loops[..],
        };
        let blocks: Vec<_> = (0..2 * plan.len() + 3)
            .map(|_| self.b.create_block())
            .collect();
        self.b.ins().jump(blocks[0], &[]);
        for (k, &(width, repeat)) in plan.iter().enumerate() {
            let (header, body, next) = (blocks[2 * k], blocks[2 * k + 1], blocks[2 * k + 2]);
            self.b.switch_to_block(header);
            let iv = self.b.use_var(i);
            let end = self.b.ins().iadd_imm_s(iv, width);
            let fits = self.b.ins().icmp(IntCC::SignedLessThanOrEqual, end, hi);
            self.b.ins().brif(fits, body, &[], next, &[]);
            self.b.switch_to_block(body);
            self.reload_consts();
            self.element(&rows, &steps, iv, Elem::Vector, AccSlot::V0);
            for u in 1..width / lanes {
                let iv2 = self.b.ins().iadd_imm_s(iv, lanes * u);
                self.element(&rows, &steps, iv2, Elem::Vector, AccSlot::V1);
            }
            self.b.def_var(i, end);
            let target = if repeat { header } else { next };
            self.b.ins().jump(target, &[]);
        }
        let t = 2 * plan.len();
        let (header, body, exit) = (blocks[t], blocks[t + 1], blocks[t + 2]);
        self.b.switch_to_block(header);
        let iv = self.b.use_var(i);
        let more = self.b.ins().icmp(IntCC::SignedLessThan, iv, hi);
        self.b.ins().brif(more, body, &[], exit, &[]);
        self.b.switch_to_block(body);
        self.reload_consts();
        self.element(&rows, &steps, iv, Elem::Tail, AccSlot::Scalar);
        let next = self.b.ins().iadd_imm_s(iv, 1);
        self.b.def_var(i, next);
        self.b.ins().jump(header, &[]);
        self.b.switch_to_block(exit);
    }

    /// Re-reads the constant table's address in the current loop body, which keeps the
    /// body's constant loads inside it (see `consts`).
    fn reload_consts(&mut self) {
        self.consts.base = self.b.ins().load(I64, MEM, self.args, 40);
    }

    /// Loads, computes, stores and accumulates the element(s) at inner index `iv`.
    fn element(&mut self, rows: &[Value], steps: &[Value], iv: Value, mode: Elem, slot: AccSlot) {
        let n_in = self.kernel.inputs.len();
        let values = self.body_values(rows, steps, iv, mode);
        let mut vx = Vx {
            b: &mut self.b,
            k: &mut self.consts,
        };
        for (o, out) in self.kernel.outputs.iter().enumerate() {
            let v = as_float(&mut vx, self.kinds, &values, out.value.index());
            store(
                vx.b,
                self.ty,
                rows[n_in + o],
                steps[n_in + o],
                iv,
                out.access,
                mode,
                v,
            );
        }
        if self.kernel.reduction.is_none() {
            return;
        }
        let v = self.reduced(&values);
        if let Some(accs) = &self.accs {
            accs.add(&mut self.b, slot, v);
        }
    }

    /// The body's values at inner index `iv` (the inputs loaded there).
    fn body_values(
        &mut self,
        rows: &[Value],
        steps: &[Value],
        iv: Value,
        mode: Elem,
    ) -> Vec<Value> {
        let mut loads = Vec::with_capacity(self.kernel.inputs.len());
        for (n, &access) in self.kernel.inputs.iter().enumerate() {
            loads.push(self.load(rows[n], steps[n], iv, access, mode));
        }
        let mut vx = Vx {
            b: &mut self.b,
            k: &mut self.consts,
        };
        emit_body(&mut vx, self.kernel, self.kinds, &loads)
    }

    /// The reduced value among `values` (as f32 lanes); the kernel has a reduction.
    fn reduced(&mut self, values: &[Value]) -> Value {
        let at = self.kernel.reduction.map_or(0, |r| r.value.index());
        let mut vx = Vx {
            b: &mut self.b,
            k: &mut self.consts,
        };
        as_float(&mut vx, self.kinds, values, at)
    }

    fn load(&mut self, row: Value, step: Value, iv: Value, access: Access, mode: Elem) -> Value {
        let (b, ty) = (&mut self.b, self.ty);
        match (access, mode) {
            (Access::Broadcast, _) => {
                let s = b.ins().load(ty.scalar, MEM, row, 0);
                b.ins().splat(ty.vector, s)
            }
            (Access::Contiguous, Elem::Vector) => {
                let off = b.ins().ishl_imm_s(iv, ty.shift);
                let addr = b.ins().iadd(row, off);
                b.ins().load(ty.vector, MEM, addr, 0)
            }
            (Access::Strided, Elem::Vector) => {
                let addr = strided_addr(b, ty, row, step, iv, Access::Strided);
                let s = b.ins().load(ty.scalar, MEM, addr, 0);
                let mut v = b.ins().scalar_to_vector(ty.vector, s);
                for lane in 1..ty.lanes as u8 {
                    let idx = b.ins().iadd_imm_s(iv, i64::from(lane));
                    let addr = strided_addr(b, ty, row, step, idx, Access::Strided);
                    let s = b.ins().load(ty.scalar, MEM, addr, 0);
                    v = b.ins().insertlane(v, s, lane);
                }
                v
            }
            (_, Elem::Tail) => {
                let addr = strided_addr(b, ty, row, step, iv, access);
                let s = b.ins().load(ty.scalar, MEM, addr, 0);
                b.ins().splat(ty.vector, s)
            }
        }
    }
}

fn strided_addr(
    b: &mut FunctionBuilder,
    ty: Ty,
    row: Value,
    step: Value,
    idx: Value,
    a: Access,
) -> Value {
    let off = match a {
        Access::Contiguous => b.ins().ishl_imm_s(idx, ty.shift),
        Access::Broadcast | Access::Strided => b.ins().imul(idx, step),
    };
    b.ins().iadd(row, off)
}

fn as_float(vx: &mut Vx, kinds: &[Kind], values: &[Value], at: usize) -> Value {
    match kinds[at] {
        Kind::F32 | Kind::F64 => values[at],
        Kind::Mask => vx.mask_to_f32(values[at]),
    }
}

#[allow(clippy::too_many_arguments)]
fn store(
    b: &mut FunctionBuilder,
    ty: Ty,
    row: Value,
    step: Value,
    iv: Value,
    a: Access,
    mode: Elem,
    v: Value,
) {
    match (a, mode) {
        (Access::Contiguous, Elem::Vector) => {
            let off = b.ins().ishl_imm_s(iv, ty.shift);
            let addr = b.ins().iadd(row, off);
            b.ins().store(MEM, v, addr, 0);
        }
        (_, Elem::Vector) => {
            for lane in 0..ty.lanes as u8 {
                let idx = b.ins().iadd_imm_s(iv, i64::from(lane));
                let addr = strided_addr(b, ty, row, step, idx, a);
                let s = b.ins().extractlane(v, lane);
                b.ins().store(MEM, s, addr, 0);
            }
        }
        (_, Elem::Tail) => {
            let addr = strided_addr(b, ty, row, step, iv, a);
            let s = b.ins().extractlane(v, 0);
            b.ins().store(MEM, s, addr, 0);
        }
    }
}
