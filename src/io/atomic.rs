//! Atomic file replacement: write a temporary file beside the target, fsync, rename.
//!
//! On any failure before the rename the temporary file is removed and the target is
//! untouched, so an interrupted save never destroys the previous file. The new file
//! keeps the permissions of the file it replaces. If the target is a symbolic link,
//! the link itself is replaced. The directory is fsynced after the rename on Unix
//! (best effort: a failure there is ignored, the rename has already happened). A save
//! also removes the temporaries of the same target that a killed process left behind.

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
    super::fs_gate::check(path, super::fs_gate::Access::Write)?;
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
    clean_stale(dir, name);
    Ok(())
}

/// Removes temporaries of earlier saves of the same target that a process left behind
/// when it died mid-save (`.NAME.PID.N.tmp`): only those whose process is gone (on
/// Linux, no `/proc/PID`; elsewhere, files a day old), never this process's own.
fn clean_stale(dir: &Path, name: &OsStr) {
    let Some(name) = name.to_str() else { return };
    let prefix = format!(".{name}.");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let me = std::process::id();
    for e in entries.flatten() {
        let file = e.file_name();
        let Some(rest) = file
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .and_then(|r| r.strip_suffix(".tmp"))
        else {
            continue;
        };
        let Some((pid, n)) = rest.split_once('.') else {
            continue;
        };
        let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        if numeric(n) && pid != me && process_gone(pid, &e) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Whether the process that made a temporary file has exited.
fn process_gone(pid: u32, entry: &std::fs::DirEntry) -> bool {
    if Path::new("/proc/self").exists() {
        return !Path::new(&format!("/proc/{pid}")).exists();
    }
    entry
        .metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age.as_secs() > 24 * 3600)
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
