//! Where the REPL keeps its history file.

use std::path::PathBuf;

/// The history file: `$KILN_HISTORY` when set (empty disables history), else
/// `$XDG_DATA_HOME/kiln/history`, else `~/.local/share/kiln/history`.
pub fn path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("KILN_HISTORY") {
        return (!p.is_empty()).then(|| PathBuf::from(p));
    }
    let data = match std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => {
            PathBuf::from(std::env::var_os("HOME").filter(|h| !h.is_empty())?).join(".local/share")
        }
    };
    Some(data.join("kiln").join("history"))
}

/// Creates the directory that will hold the history file; failures are ignored (the
/// save that follows then fails silently too).
pub fn prepare_dir(path: &std::path::Path) {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
}
