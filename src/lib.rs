//! Kiln: an embeddable deep-learning scripting language with eager autograd and a JIT.

pub mod autograd;
pub mod error;
pub mod ops;
pub mod source;
pub mod syntax;
pub mod tensor;

pub use error::{Error, ErrorKind, Result};
pub use tensor::Tensor;
