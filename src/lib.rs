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
//! checked by tests/layers.rs): private to the crate, except with the unstable
//! `internals` feature, which makes them public (hidden from the docs) for the CLI and
//! the integration tests only.

pub mod embed;
pub mod engine;
pub mod error;

// The implementation modules: `pub` (hidden from the docs) with the unstable
// `internals` feature, crate-private without it.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod autograd;
#[cfg(not(feature = "internals"))]
pub(crate) mod autograd;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod compile;
#[cfg(not(feature = "internals"))]
pub(crate) mod compile;
pub(crate) mod diagnostic;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod dist;
#[cfg(not(feature = "internals"))]
pub(crate) mod dist;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod interp;
#[cfg(not(feature = "internals"))]
pub(crate) mod interp;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod io;
#[cfg(not(feature = "internals"))]
pub(crate) mod io;
pub(crate) mod ir;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod onnx;
#[cfg(not(feature = "internals"))]
pub(crate) mod onnx;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod ops;
#[cfg(not(feature = "internals"))]
pub(crate) mod ops;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod optable;
#[cfg(not(feature = "internals"))]
pub(crate) mod optable;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod plot;
#[cfg(not(feature = "internals"))]
pub(crate) mod plot;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod pyfmt;
#[cfg(not(feature = "internals"))]
pub(crate) mod pyfmt;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod source;
#[cfg(not(feature = "internals"))]
pub(crate) mod source;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod syntax;
#[cfg(not(feature = "internals"))]
pub(crate) mod syntax;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod tensor;
#[cfg(not(feature = "internals"))]
pub(crate) mod tensor;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod tensorboard;
#[cfg(not(feature = "internals"))]
pub(crate) mod tensorboard;

pub use dist::finish as finish_distributed;
pub use embed::{FromValue, HostFunction, IntoArgs, IntoReturn, IntoValue, NativeModule};
pub use engine::Engine;
pub use error::{Error, ErrorKind, Result};
pub use interp::builtins::display::{DisplayHook, MimeBundle};
pub use interp::limits::Limits;
pub use interp::value::Value;
pub use io::fs_gate::{check as check_file_access, Access};
pub use source::{FileId, Span};
pub use syntax::is_incomplete;
pub use tensor::dtype::{DType, Scalar};
pub use tensor::storage::Buffer;
pub use tensor::Tensor;
