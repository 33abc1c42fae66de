//! `@compile`: the tensor-level IR (`ir`, `infer`, `verify`, `dump`) and the JIT of fused
//! tensor kernels (kernel IR, Cranelift code generation, runs).
//!
//! Public surface: build a [`Kernel`], [`compile`] it, then [`CompiledKernel::run`] it on
//! [`BufView`]s; [`run_reference`] is the scalar interpreter used as test truth.

mod accum;
pub mod autodiff;
mod body;
pub mod breaks;
pub mod cache;
pub mod check;
pub mod codegen;
pub mod compiled;
pub mod consts;
pub mod control;
pub mod dump;
pub mod effects;
pub mod exec;
mod fastpath;
pub mod fused_step;
pub mod gelu_avx2;
pub mod gemm_step;
pub mod grad_node;
pub mod infer;
pub mod ir;
pub mod jit;
pub mod kernel;
mod lanefn;
pub mod loop_grad;
mod loop_post;
mod loop_vjp;
pub mod lower;
mod mathfn;
mod mathgelu;
mod opt_update;
mod out_pool;
pub mod parallel;
pub mod passes;
pub mod printing;
pub mod reference;
pub mod run_control;
mod scan_rows;
mod sched;
pub mod sym;
mod sym_grad;
pub mod symguard;
pub mod symint;
pub mod trace;
mod trace_effects;
pub mod traced;
mod trig_table;
pub mod vecmat_kernel;
pub mod vecmat_step;
pub mod verify;
pub mod views;

pub use jit::{compile, disassemble, CompiledKernel, KernelArgs};
pub use kernel::{
    Access, BinaryOp, CmpOp, Kernel, Kind, Op, Output, ReduceOp, Reduction, UnaryOp, ValueId,
};
pub use parallel::PARALLEL_THRESHOLD;
pub use reference::run_reference;
pub use views::{BufView, BufViewMut};

/// A failed internal invariant of the compiler or its executor (a bug, never the
/// user's fault; the caller falls back or reports it with its span).
pub(crate) fn internal(msg: &str) -> crate::error::Error {
    crate::error::Error::new(
        crate::error::ErrorKind::RuntimeError,
        format!("internal compile error: {msg}"),
        None,
    )
}

#[cfg(test)]
mod control_tests;
#[cfg(test)]
mod ir_tests;
