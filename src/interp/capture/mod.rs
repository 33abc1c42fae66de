//! The interpreter running in capture mode (`@compile`'s tracing run): how branches,
//! loops, `for` loops and `print` on tensor values are recorded as IR control and effect
//! nodes (`crate::compile::ir::control`) into the active capture (`crate::compile::capture::trace`).

pub(crate) mod capture_for;
mod capture_if;
mod capture_loop;
mod capture_merge;
pub(crate) mod capture_print;
mod for_scan;
pub(crate) mod symfloat;
pub(crate) mod symint;
