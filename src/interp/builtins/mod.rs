//! Builtin functions and standard-library modules.

pub mod format;
pub mod pyrandom;
