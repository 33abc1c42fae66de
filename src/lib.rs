//! Kiln: an embeddable deep-learning scripting language with eager autograd and a JIT.

pub mod compile;
pub mod error;
pub mod source;
pub mod syntax;

pub use error::{Error, ErrorKind, Result};
