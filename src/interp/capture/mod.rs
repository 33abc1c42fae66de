//! The interpreter running in capture mode (`@compile`'s tracing run): how branches,
//! loops, `for` loops and `print` on tensor values are recorded as IR control and effect
//! nodes (`crate::compile::ir::control`) into the active capture (`crate::compile::capture::trace`);
//! the guards on the Python values it loads (`guards`), the per-function cache keyed on
//! Python arguments (`cache`), the compiled callable that runs the stages (`compiled`, this
//! folder's orchestrating file) and `trace()`'s graphs (`traced`).

pub mod cache;
pub(crate) mod capture_for;
mod capture_if;
mod capture_loop;
mod capture_merge;
pub(crate) mod capture_print;
pub mod compiled;
mod for_scan;
pub mod guards;
pub(crate) mod symfloat;
pub(crate) mod symint;
pub mod traced;
