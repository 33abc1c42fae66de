//! The one gate in front of the file system: every file a script reads or writes (the
//! `io` module's loads and saves, `save_onnx`/`export_onnx`, imports from disk) is
//! checked here first. In a sandboxed engine's run every access is refused with
//! `PermissionError`; outside runs (a host calling `kiln::io` directly) it is open.
//!
//! The sandbox flag is thread-local, installed by the engine for the length of each run
//! (like the allocation caps), so the gate needs no interpreter handle:
//! `fs_gate::check(path, Access::Write)?` before touching `path`.

use crate::error::{Error, ErrorKind, Result};
use std::cell::Cell;
use std::path::Path;

/// What a caller is about to do with a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

thread_local! {
    static SANDBOXED: Cell<bool> = const { Cell::new(false) };
}

/// Sets whether file access is refused on this thread; returns the previous setting
/// (the engine restores it when its run ends).
pub fn set_sandboxed(on: bool) -> bool {
    SANDBOXED.with(|s| s.replace(on))
}

/// `Ok` when the file-system call `what` (`open`, `os.listdir`, ...: calls that name no
/// single path up front) may run; `PermissionError` in a sandboxed run.
pub fn check_call(what: &str) -> Result<()> {
    if !SANDBOXED.with(Cell::get) {
        return Ok(());
    }
    Err(call_refused(what))
}

/// The `PermissionError` of a refused file-system call `what`.
pub fn call_refused(what: &str) -> Error {
    Error::new(
        ErrorKind::PermissionError,
        format!("{what}: file-system access is disabled in this sandboxed engine"),
        None,
    )
}

/// `Ok` when `path` may be accessed; `PermissionError` in a sandboxed run. A host
/// function that opens files calls it first (as `kiln::check_file_access`).
///
/// ```
/// use kiln::{check_file_access, Access};
/// // outside a sandboxed run the gate is open
/// assert!(check_file_access(std::path::Path::new("data.csv"), Access::Read).is_ok());
/// ```
pub fn check(path: &Path, access: Access) -> Result<()> {
    if !SANDBOXED.with(Cell::get) {
        return Ok(());
    }
    let verb = match access {
        Access::Read => "read",
        Access::Write => "write",
    };
    Err(Error::new(
        ErrorKind::PermissionError,
        format!(
            "cannot {verb} '{}': file access is disabled in a sandboxed engine",
            path.display()
        ),
        None,
    ))
}
