//! The compile log (`KILN_LOG=compile`) and how it names a source position.

use crate::source::{SourceMap, Span};
use std::sync::OnceLock;

/// `KILN_LOG=compile` (or a comma list containing it).
fn log_on() -> bool {
    static LOG: OnceLock<bool> = OnceLock::new();
    *LOG.get_or_init(|| {
        std::env::var("KILN_LOG").is_ok_and(|v| v.split(',').any(|p| p.trim() == "compile"))
    })
}

pub(crate) fn log(msg: &str) {
    if log_on() {
        eprintln!("compile: {msg}");
    }
}

/// `file.dl:3:5` for a span.
pub fn where_text(sources: &SourceMap, span: Option<Span>) -> String {
    let Some(s) = span else {
        return "<unknown>".into();
    };
    let name = sources
        .get(s.file)
        .map_or("<unknown>".into(), |f| f.name.to_string());
    let (line, col) = sources.line_col(s.file, s.start);
    format!("{name}:{line}:{col}")
}

/// The time a capture spends in each of its phases, logged as one line (only timed when
/// the log is on).
pub(crate) struct Phases {
    last: Option<std::time::Instant>,
    done: Vec<(&'static str, f64)>,
}

impl Phases {
    pub(crate) fn start() -> Phases {
        Phases {
            last: log_on().then(std::time::Instant::now),
            done: Vec::new(),
        }
    }

    /// Ends phase `name` (begun at the previous mark).
    pub(crate) fn mark(&mut self, name: &'static str) {
        if let Some(t) = self.last {
            let now = std::time::Instant::now();
            self.done.push((name, (now - t).as_secs_f64() * 1e3));
            self.last = Some(now);
        }
    }

    /// Logs `func: capture phases (ms): trace 1.00, ...`.
    pub(crate) fn log(&self, func: &str) {
        if self.last.is_some() {
            let parts: Vec<String> = self
                .done
                .iter()
                .map(|(n, ms)| format!("{n} {ms:.2}"))
                .collect();
            log(&format!(
                "{func}: capture phases (ms): {}",
                parts.join(", ")
            ));
        }
    }
}
