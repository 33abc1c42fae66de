//! Event files on disk, named as PyTorch names them: the log directory
//! `runs/MMMDD_HH-MM-SS_HOST{comment}` (local time) and the file
//! `events.out.tfevents.{secs:010}.{host}.{pid}.{n}{suffix}`, starting with the
//! `brain.Event:2` file-version event. Each event is appended as one whole record and
//! the file is cut back to its old length when the write fails, so a full disk leaves
//! the earlier events readable.

use super::proto::{Event, Summary, SummaryValue};
use super::record::frame;
use crate::error::Result;
use crate::io::fs_gate::{self, Access};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Event files created by this process (the `{n}` in their names).
static FILE_COUNT: AtomicUsize = AtomicUsize::new(0);

/// The host name (`socket.gethostname()`); `localhost` when it cannot be read.
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname writes at most that much.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    match (rc, std::str::from_utf8(&buf[..end])) {
        (0, Ok(s)) if !s.is_empty() => s.to_string(),
        _ => "localhost".into(),
    }
}

/// Seconds since the epoch (`time.time()`).
pub fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// `datetime.now().strftime("%b%d_%H-%M-%S")` in local time.
fn local_stamp() -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let t = now() as libc::time_t;
    // SAFETY: localtime_r writes only into the zeroed struct we pass.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let ok = !unsafe { libc::localtime_r(&t, &mut tm) }.is_null();
    let month = usize::try_from(tm.tm_mon).ok().and_then(|m| MONTHS.get(m));
    match (ok, month) {
        (true, Some(m)) => format!(
            "{m}{:02}_{:02}-{:02}-{:02}",
            tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec
        ),
        _ => "Jan01_00-00-00".into(),
    }
}

/// PyTorch's default log directory: `runs/` + date + `_` + host + `comment`.
pub fn default_log_dir(comment: &str) -> String {
    format!("runs/{}_{}{comment}", local_stamp(), hostname())
}

/// Where appended records go: a file, or a stand-in in tests.
pub trait Sink: Write {
    /// The current length in bytes.
    fn size(&self) -> std::io::Result<u64>;
    /// Cuts the sink back to `len` bytes.
    fn truncate(&mut self, len: u64) -> std::io::Result<()>;
}

impl Sink for std::fs::File {
    fn size(&self) -> std::io::Result<u64> {
        Ok(self.metadata()?.len())
    }
    fn truncate(&mut self, len: u64) -> std::io::Result<()> {
        self.set_len(len)
    }
}

/// Appends `record` whole, or cuts `sink` back to where it was and returns the error.
pub fn append_whole(sink: &mut impl Sink, record: &[u8]) -> std::io::Result<()> {
    let before = sink.size()?;
    let res = sink.write_all(record).and_then(|_| sink.flush());
    if res.is_err() {
        // best effort: the earlier records stay readable either way once truncated
        let _ = sink.truncate(before);
    }
    res
}

/// One event file.
#[derive(Debug)]
pub struct EventFile {
    pub path: PathBuf,
}

impl EventFile {
    /// Creates the log directory and a new event file in it holding the file-version
    /// event.
    pub fn create(log_dir: &Path, suffix: &str) -> Result<EventFile> {
        fs_gate::check(log_dir, Access::Write)?;
        std::fs::create_dir_all(log_dir)
            .map_err(|e| crate::io::os_error("create directory", log_dir, &e))?;
        let wall = now();
        let name = format!(
            "events.out.tfevents.{:010}.{}.{}.{}{suffix}",
            wall as u64,
            hostname(),
            std::process::id(),
            FILE_COUNT.fetch_add(1, Ordering::Relaxed)
        );
        let f = EventFile {
            path: log_dir.join(name),
        };
        f.write(&Event {
            wall_time: wall,
            file_version: Some("brain.Event:2".into()),
            ..Default::default()
        })?;
        Ok(f)
    }

    /// Appends one event holding `values`.
    pub fn summary(&self, step: i64, wall_time: f64, values: Vec<SummaryValue>) -> Result<()> {
        self.write(&Event {
            wall_time,
            step,
            summary: Some(Summary { value: values }),
            ..Default::default()
        })
    }

    fn write(&self, ev: &Event) -> Result<()> {
        fs_gate::check(&self.path, Access::Write)?;
        let oe = |e: std::io::Error| crate::io::os_error("write", &self.path, &e);
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(oe)?;
        append_whole(&mut f, &frame(&ev.bytes())).map_err(oe)
    }
}
