//! The tensor-level IR of `@compile` (`Graph`, `Node`, `IrOp`): its data types are in
//! `crate::ir`, below the tensor library that records into it; re-exported here.

pub mod control;
pub mod dump;
pub mod infer;
pub mod verify;

pub use crate::ir::*;

#[cfg(test)]
mod ir_tests;

#[cfg(test)]
mod control_tests;
