//! Graph breaks (`BreakReason`, `GraphBreak`): defined in `crate::ir::breaks`, below
//! the tensor library that raises them; re-exported here.

pub use crate::ir::breaks::*;
