//! Capture: recording an eager run of a `@compile`d function into an IR graph (`trace`,
//! `trace_effects`, `effects`), what a cached version is and its shape guard (`cache`,
//! `symguard`), the eager-rerun check (`check`) and the compile log (`log`). The
//! interpreter's side (interp/capture/: the guards on Python values, the per-function
//! cache, the compiled callable `compiled.rs` that ties the stages together, `trace()`'s
//! graphs) sits above this layer and drives it.

pub mod cache;
pub mod check;
pub mod effects;
pub mod log;
pub mod symfloat;
pub mod symguard;
pub mod symint;
pub mod trace;
pub(super) mod trace_effects;
