//! File formats for arrays: NumPy `.npy`, safetensors, CSV, all written atomically.
//!
//! Everything works on the neutral [`Array`] type; the Kiln-level `io` module converts
//! between it and tensors. Format errors are `ValueError`s, file-system failures
//! `OSError`s; no reader panics or allocates more than the input's size on bad input.

mod array;
mod atomic;
mod csv;
pub mod fs_gate;
mod npy;
mod npy_header;
pub mod png;
mod safetensors;

pub use array::{numel, Array, ArrayData, DType};
pub use atomic::write_atomic;
pub use csv::{load_csv, CsvHeader};
pub use npy::{load_npy, save_npy};
pub use safetensors::{load_safetensors, save_safetensors};
// The in-memory codecs, for the format tests (`internals`).
#[cfg(feature = "internals")]
pub use {
    atomic::write_atomic_with,
    csv::parse_csv,
    npy::{npy_from_bytes, npy_to_bytes},
    safetensors::{safetensors_from_bytes, safetensors_to_bytes},
};

use crate::error::{Error, ErrorKind};
use std::path::Path;

/// A `ValueError` (a malformed file or an invalid argument).
fn value_error(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::ValueError, message, None)
}

/// An `OSError` for a failed file-system operation on `path`.
pub(crate) fn os_error(action: &str, path: &Path, err: &std::io::Error) -> Error {
    Error::new(
        ErrorKind::OSError,
        format!("cannot {action} '{}': {err}", path.display()),
        None,
    )
}

/// Prefixes an error's message with the file it concerns.
fn in_file(path: &Path, mut err: Error) -> Error {
    err.message = format!("'{}': {}", path.display(), err.message);
    err
}

/// Reads a whole file (its size bounds every later allocation).
pub(crate) fn read_file(path: &Path) -> crate::error::Result<Vec<u8>> {
    fs_gate::check(path, fs_gate::Access::Read)?;
    std::fs::read(path).map_err(|e| os_error("read", path, &e))
}
