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
