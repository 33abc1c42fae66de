//! Runtime: an optimized graph lowered to its runnable form (`lower`, the orchestrating
//! file of the passes -> runtime boundary) and run without the interpreter (`exec`, with
//! `run_control` for branches and loops): fused-group, gemm and vector-matrix steps,
//! fast paths, optimizer updates and GELU gradients run by eager's routines, reused
//! output buffers, `print` text and values shared
//! between nodes (`side`: max_pool2d's argmax, batch_norm's statistics).

pub mod exec;
pub(super) mod fastpath;
pub mod fused_step;
pub(super) mod gelu_grad;
pub mod gemm_step;
pub mod lower;
pub(super) mod opt_update;
pub(super) mod out_pool;
pub mod printing;
pub mod run_control;
pub(super) mod scan_rows;
mod side;
pub mod vecmat_kernel;
pub mod vecmat_step;
