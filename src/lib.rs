//! Kiln: an embeddable deep-learning scripting language with eager autograd and a JIT.

pub mod autograd;
pub mod compile;
pub mod diagnostic;
pub mod embed;
pub mod engine;
pub mod error;
pub mod interp;
pub mod io;
pub mod ir;
pub mod onnx;
pub mod ops;
pub mod source;
pub mod syntax;
pub mod tensor;

pub use embed::{FromValue, IntoArgs, IntoValue};
pub use engine::Engine;
pub use error::{Error, ErrorKind, Result};
pub use interp::limits::Limits;
pub use interp::value::Value;
pub use tensor::Tensor;
