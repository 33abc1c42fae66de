//! The constant table of a compiled kernel: every f32x4/i32x4 (or f64x2/i64x2) constant
//! the generated code uses, as 16-byte aligned splats, addressed from a base pointer the kernel reads
//! from its [`crate::compile::jit::KernelArgs`].
//!
//! Each use of a constant is a pure load from its own slot, addressed from a table
//! pointer re-read at every inner-loop iteration: the load is then neither hoisted out
//! of the loop nor merged with another use, so the optimizer places it right before its
//! only user and the x86 backend folds it into that instruction as a memory operand,
//! instead of holding ~15 constants in 16 vector registers and spilling.

use cranelift_codegen::ir::types::Type;
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Value};
use cranelift_frontend::FunctionBuilder;

/// Four copies of one 32-bit constant (or two of a 64-bit one), aligned for vector
/// memory operands.
#[repr(C, align(16))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Splat4(pub [u32; 4]);

/// The table being filled while a kernel is generated.
pub(crate) struct Consts {
    /// The table's address, as last read inside the generated function.
    pub base: Value,
    table: Vec<Splat4>,
    /// Whether `fma` lowers to a native instruction on this host.
    pub fma: bool,
    /// Whether the kernel computes in f64 (f64x2 vectors; see `Vx`).
    pub wide: bool,
}

/// Loads from the table: in bounds, 16-byte aligned and never written while code runs.
const TABLE: MemFlagsData = MemFlagsData::new()
    .with_notrap()
    .with_aligned()
    .with_readonly()
    .with_can_move();

impl Consts {
    pub fn new(base: Value, fma: bool, wide: bool) -> Consts {
        Consts {
            base,
            table: Vec::new(),
            fma,
            wide,
        }
    }

    /// A vector of type `ty` (f32x4 or i32x4) with every lane's bits equal to `bits`,
    /// from a slot of its own.
    pub fn load(&mut self, b: &mut FunctionBuilder, ty: Type, bits: u32) -> Value {
        let slot = self.table.len();
        self.table.push(Splat4([bits; 4]));
        b.ins().load(ty, TABLE, self.base, (16 * slot) as i32)
    }

    /// A vector of type `ty` (f64x2 or i64x2) with both lanes' bits equal to `bits`.
    pub fn load_wide(&mut self, b: &mut FunctionBuilder, ty: Type, bits: u64) -> Value {
        let (lo, hi) = (bits as u32, (bits >> 32) as u32);
        let slot = self.table.len();
        self.table.push(Splat4([lo, hi, lo, hi]));
        b.ins().load(ty, TABLE, self.base, (16 * slot) as i32)
    }

    /// The finished table (it must outlive the compiled code's runs).
    pub fn into_table(self) -> Vec<Splat4> {
        self.table
    }
}
