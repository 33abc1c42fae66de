//! Atomic file replacement: write a temporary file beside the target, fsync, rename.
//!
//! On any failure before the rename the temporary file is removed and the target is
//! untouched, so an interrupted save never destroys the previous file. The new file
//! keeps the permissions of the file it replaces. If the target is a symbolic link,
//! the link itself is replaced. The directory is fsynced after the rename on Unix
//! (best effort: a failure there is ignored, the rename has already happened).

use super::os_error;
use crate::error::Result;
use std::ffi::{OsStr, OsString};
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Distinguishes temporary files made by this process.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Creates a fresh temporary file in `dir` named after `name`.
fn create_temp(dir: &Path, name: &OsStr) -> std::io::Result<(PathBuf, File)> {
    let mut attempt = 0;
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let mut tmp_name = OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".{}.{n}.tmp", std::process::id()));
        let tmp = dir.join(tmp_name);
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(file) => return Ok((tmp, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => {
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Writes through `fill`, flushes, copies the old permissions and fsyncs.
fn fill_temp<F>(file: File, target: &Path, fill: F) -> std::io::Result<()>
where
    F: FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
{
    let mut writer = BufWriter::new(file);
    fill(&mut writer)?;
    let file = writer.into_inner().map_err(|e| e.into_error())?;
    if let Ok(meta) = std::fs::metadata(target) {
        file.set_permissions(meta.permissions())?;
    }
    file.sync_all()
}

/// Replaces `path` with what `fill` writes; see the module documentation.
pub fn write_atomic_with<F>(path: &Path, fill: F) -> Result<()>
where
    F: FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
{
    let name = path
        .file_name()
        .ok_or_else(|| super::value_error(format!("invalid file name '{}'", path.display())))?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let (tmp, file) = create_temp(dir, name).map_err(|e| os_error("write", path, &e))?;
    let written = fill_temp(file, path, fill).and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = written {
        // The temporary file is ours and useless now; the target was never touched.
        let _ = std::fs::remove_file(&tmp);
        return Err(os_error("write", path, &e));
    }
    sync_dir(dir);
    Ok(())
}

/// Replaces `path` with `bytes` atomically.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, |w| w.write_all(bytes))
}

/// Makes the rename durable (Unix only; best effort).
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}
