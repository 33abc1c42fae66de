//! One child process of the suite: its output, its exit status and its peak RSS, from
//! `wait4`'s rusage (the child's own `ru_maxrss`, not the max over all children).

use nix::libc;
use std::io::Read;
use std::process::{Command, Stdio};
use std::thread;

/// What a finished child printed, how it ended and its peak resident set size.
pub struct Finished {
    pub success: bool,
    /// "exit status 1", "killed by signal 9", ...
    pub status: String,
    pub stdout: String,
    pub stderr: String,
    pub peak_rss_mb: f64,
}

/// Runs `cmd` to the end, reading stdout and stderr on threads (so a chatty child never
/// blocks on a full pipe), and reaps it with `wait4` for its rusage.
pub fn run(cmd: &mut Command) -> Result<Finished, String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not start {:?}: {e}", cmd.get_program()))?;
    let reader = |pipe: Option<Box<dyn Read + Send>>| {
        thread::spawn(move || {
            let mut s = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut s);
            }
            String::from_utf8_lossy(&s).into_owned()
        })
    };
    let out = reader(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = reader(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let pid = libc::pid_t::try_from(child.id()).map_err(|e| e.to_string())?;
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain old data; wait4 fills it for the child we spawned (and
    // reaps it: std's Child is not waited on again, its Drop does not wait).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid pointers to a c_int and a rusage that outlive the call.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(format!("wait4: {e}"));
        }
    }
    let (success, status) = if libc::WIFEXITED(status) {
        let code = libc::WEXITSTATUS(status);
        (code == 0, format!("exit status {code}"))
    } else {
        (
            false,
            format!("killed by signal {}", libc::WTERMSIG(status)),
        )
    };
    Ok(Finished {
        success,
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        // Linux reports ru_maxrss in KiB.
        peak_rss_mb: usage.ru_maxrss as f64 / 1024.0,
    })
}
