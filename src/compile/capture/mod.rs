//! Capture: recording an eager run of a `@compile`d function into an IR graph (`trace`,
//! `trace_effects`, `effects`), the guards and per-function cache of captured versions
//! (`cache`, `symguard`), and the compiled callable that ties the stages together
//! (`compiled`: guard, capture, optimize, lower, run; `traced` for `trace()`; `check`
//! for `KILN_CHECK`). `compiled` is this folder's orchestrating file.

pub mod cache;
pub mod check;
pub mod compiled;
pub mod effects;
pub mod symfloat;
pub mod symguard;
pub mod symint;
pub mod trace;
pub(super) mod trace_effects;
pub mod traced;
