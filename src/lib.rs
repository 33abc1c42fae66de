//! Kiln: an embeddable deep-learning scripting language with eager autograd and a JIT.
//!
//! The embedding API is the crate root: [`Engine`] runs Kiln source under [`Limits`] and
//! exchanges [`Value`]s (and [`Tensor`]s) with the host; failures are [`Error`]s; host
//! functions and modules ([`NativeModule`]) take and return Rust types through
//! [`FromValue`] / [`IntoValue`]. docs/EMBEDDING.md is the guide.
//!
//! ```
//! use kiln::{Engine, Value};
//! let mut engine = Engine::new();
//! engine.register_fn("double", |x: f64| 2.0 * x);
//! let v = engine.eval("double(21.0)").unwrap();
//! assert!(matches!(v, Value::Float(f) if f == 42.0));
//! ```
//!
//! The other modules are the implementation, in layers (docs/ARCHITECTURE.md "Layers",
//! checked by tests/layers.rs); they stay reachable for the integration tests and the
//! CLI but are not part of the documented API.

pub mod embed;
pub mod engine;
pub mod error;

#[doc(hidden)]
pub mod autograd;
#[doc(hidden)]
pub mod compile;
pub(crate) mod diagnostic;
#[doc(hidden)]
pub mod dist;
#[doc(hidden)]
pub mod interp;
#[doc(hidden)]
pub mod io;
pub(crate) mod ir;
#[doc(hidden)]
pub mod onnx;
#[doc(hidden)]
pub mod ops;

#[doc(hidden)]
pub mod optable;
#[doc(hidden)]
pub mod plot;
#[doc(hidden)]
pub mod pyfmt;
#[doc(hidden)]
pub mod source;
#[doc(hidden)]
pub mod syntax;
#[doc(hidden)]
pub mod tensor;
#[doc(hidden)]
pub mod tensorboard;

pub use embed::{FromValue, HostFunction, IntoArgs, IntoReturn, IntoValue, NativeModule};
pub use engine::Engine;
pub use error::{Error, ErrorKind, Result};
pub use interp::builtins::display::{DisplayHook, MimeBundle};
pub use interp::limits::Limits;
pub use interp::value::Value;
pub use source::{FileId, Span};
pub use tensor::Tensor;
