//! The tensor-level IR of `@compile` (`Graph`, `Node`, `IrOp`): its data types are in
//! `crate::ir`, below the tensor library that records into it; re-exported here.

pub use crate::ir::*;
