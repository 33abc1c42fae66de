//! Embedding support behind `Engine`: Rust <-> Kiln value conversions and host
//! functions/modules.

pub mod convert;
pub mod native;

pub use convert::{FromValue, IntoArgs, IntoValue};
pub use native::{HostFunction, IntoReturn, NativeModule};
