//! `@compile`, by stage: `capture/` records an eager run into the tensor-level IR and
//! caches the captured versions (the call path through all the stages is the interpreter's
//! `interp::capture::compiled`), `ir/` holds the IR's semantics (`infer`, `verify`, `dump`, control nodes),
//! `autodiff/` records and runs compiled backwards, `passes/` optimizes a graph (fusion
//! included), `runtime/` lowers it and runs it without the interpreter, `jit/` compiles
//! fused tensor kernels (kernel IR, Cranelift code generation, runs), and `sym/` derives
//! symbolic sizes.
//!
//! Public surface: build a [`Kernel`], [`compile`] it, then [`CompiledKernel::run`] it on
//! [`BufView`]s (of f32, or of f64 for a [`FloatType::F64`] kernel); [`run_reference`] is
//! the scalar interpreter used as test truth.

pub mod autodiff;
pub mod capture;
pub mod ir;
pub mod jit;
pub mod passes;
pub mod runtime;
pub mod sym;

// The kernel compiler's own surface, for its tests and benches (`internals`).
#[cfg(feature = "internals")]
pub use jit::{
    compile, disassemble,
    kernel::{
        Access, BinaryOp, FloatType, Kernel, Kind, Op, Output, ReduceOp, Reduction, UnaryOp,
        ValueId,
    },
    reference::{run_reference, run_reference_typed, RefElem},
    views::{BufView, BufViewMut, KernelElem},
    CompiledKernel, KernelArgs,
};

/// A failed internal invariant of the compiler or its executor (a bug, never the
/// user's fault; the caller falls back or reports it with its span).
pub(crate) fn internal(msg: &str) -> crate::error::Error {
    crate::error::Error::new(
        crate::error::ErrorKind::RuntimeError,
        format!("internal compile error: {msg}"),
        None,
    )
}
