//! Atomic writes: an interrupted write leaves the previous file intact and no debris.

use kiln::io::{load_npy, save_npy, write_atomic, write_atomic_with, Array};
use kiln::ErrorKind;
use std::io::Write;
use std::path::Path;

/// A writer that accepts `budget` bytes, then fails as a full disk would.
struct FailAfter<W> {
    inner: W,
    budget: usize,
}

impl<W: Write> Write for FailAfter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.budget == 0 {
            return Err(std::io::Error::other("injected failure: disk full"));
        }
        let n = buf.len().min(self.budget);
        self.budget -= n;
        self.inner.write(&buf[..n])
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn an_interrupted_write_keeps_the_old_file_and_removes_the_temp() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weights.npy");
    let old = Array::from_f32(vec![2], vec![1.0, 2.0]).unwrap();
    save_npy(&path, &old).unwrap();
    let before = std::fs::read(&path).unwrap();
    // 100 KB of new content; the writer dies after 5000 bytes (after BufWriter spills).
    let big = vec![7u8; 100_000];
    let e = write_atomic_with(&path, |w| {
        FailAfter {
            inner: w,
            budget: 5000,
        }
        .write_all(&big)
    })
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::OSError);
    assert!(e.message.contains("injected failure"), "{e}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert_eq!(load_npy(&path).unwrap(), old);
    assert_eq!(entries(dir.path()), vec!["weights.npy".to_string()]);
}

#[test]
fn a_successful_write_replaces_the_file_and_keeps_permissions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.bin");
    write_atomic(&path, b"first").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    }
    write_atomic(&path, b"second").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"second");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
    }
    assert_eq!(entries(dir.path()), vec!["out.bin".to_string()]);
}

#[test]
fn unwritable_targets_are_os_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing_dir = dir.path().join("no/such/dir/f.npy");
    let e = write_atomic(&missing_dir, b"x").unwrap_err();
    assert_eq!(e.kind, ErrorKind::OSError);
    assert!(e.message.contains("f.npy"), "{e}");
    // Renaming a file over a directory fails; the directory stays and no temp is left.
    let target = dir.path().join("is_a_dir");
    std::fs::create_dir(&target).unwrap();
    let e = write_atomic(&target, b"x").unwrap_err();
    assert_eq!(e.kind, ErrorKind::OSError);
    assert!(target.is_dir());
    assert_eq!(entries(dir.path()), vec!["is_a_dir".to_string()]);
}

#[cfg(target_os = "linux")]
#[test]
fn a_save_removes_only_stale_temporaries_of_the_same_target() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.npy");
    let at = |name: &str| dir.path().join(name);
    // a process that died mid-save (PIDs above 2^22 never exist on Linux)
    let dead = [at(".w.npy.4194999.0.tmp"), at(".w.npy.4194998.12.tmp")];
    let kept = [
        // a live process's save in progress (PID 1 always exists), and our own
        at(".w.npy.1.3.tmp"),
        at(&format!(".w.npy.{}.7.tmp", std::process::id())),
        // another target, and names that are not ours
        at(".x.npy.4194999.0.tmp"),
        at(".w.npy.4194999.tmp"),
        at(".w.npy.4194999.x.tmp"),
        at("w.npy.4194999.0.tmp"),
    ];
    for p in dead.iter().chain(&kept) {
        std::fs::write(p, b"junk").unwrap();
    }
    let a = Array::from_f32(vec![2], vec![1.0, 2.0]).unwrap();
    save_npy(&path, &a).unwrap();
    for p in &dead {
        assert!(!p.exists(), "{} should be removed", p.display());
    }
    for p in &kept {
        assert!(p.exists(), "{} must stay", p.display());
    }
    assert_eq!(load_npy(&path).unwrap(), a);
}
