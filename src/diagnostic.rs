//! Renders an `Error` as a Python-style traceback plus an ariadne source snippet.

use crate::error::Error;
use crate::source::{SourceMap, Span};
use ariadne::{CharSet, Color, Config, IndexType, Label, Report, ReportKind};
use std::fmt::Write as _;

/// Renders `e` against the sources in `map`. `color` adds ANSI colors (terminals only).
pub fn render(e: &Error, map: &SourceMap, color: bool) -> String {
    let mut out = String::new();
    if !e.traceback.is_empty() {
        out.push_str("Traceback (most recent call last):\n");
        let mut i = 0;
        while i < e.traceback.len() {
            let f = &e.traceback[i];
            let mut same = 1;
            while e.traceback.get(i + same).is_some_and(|g| g == f) {
                same += 1;
            }
            for _ in 0..same.min(3) {
                frame_lines(&mut out, map, f);
            }
            if same > 3 {
                let n = same - 3;
                let _ = writeln!(
                    out,
                    "  [Previous line repeated {} more time{}]",
                    n,
                    if n == 1 { "" } else { "s" }
                );
            }
            i += same;
        }
    }
    let header = if e.message.is_empty() {
        e.type_name.to_string()
    } else {
        format!("{}: {}", e.type_name, e.message)
    };
    match e.span.and_then(|s| snippet(e, s, map, color)) {
        Some(s) => out.push_str(&s),
        None => {
            out.push_str(&header);
            out.push('\n');
        }
    }
    out
}

fn frame_lines(out: &mut String, map: &SourceMap, f: &crate::error::TraceFrame) {
    let (file, line, text) = locate(map, f.span);
    let _ = writeln!(out, "  File \"{}\", line {}, in {}", file, line, f.func);
    if !text.trim().is_empty() {
        let _ = writeln!(out, "    {}", text.trim());
    }
}

/// The file name, 1-based line number and text of the line containing `span`.
fn locate(map: &SourceMap, span: Span) -> (String, usize, String) {
    let Some(f) = map.get(span.file) else {
        return ("<unknown>".into(), 0, String::new());
    };
    let (line, _) = map.line_col(span.file, span.start);
    let text = f
        .text
        .lines()
        .nth(line.saturating_sub(1))
        .unwrap_or("")
        .to_string();
    (f.name.to_string(), line, text)
}

fn snippet(e: &Error, span: Span, map: &SourceMap, color: bool) -> Option<String> {
    let f = map.get(span.file)?;
    let len = f.text.len();
    let mut start = (span.start as usize).min(len);
    let mut end = (span.end as usize).clamp(start, len);
    while !f.text.is_char_boundary(start) {
        start -= 1;
    }
    while !f.text.is_char_boundary(end) {
        end += 1;
    }
    let name = f.name.to_string();
    let kind_color = if color { Color::Red } else { Color::Primary };
    let config = Config::default()
        .with_color(color)
        .with_index_type(IndexType::Byte)
        .with_char_set(CharSet::Unicode);
    let label = Label::new((name.clone(), start..end))
        .with_color(kind_color)
        .with_message("raised here");
    let report = Report::build(
        ReportKind::Custom(&e.type_name, kind_color),
        (name.clone(), start..end),
    )
    .with_config(config)
    .with_message(&e.message)
    .with_label(label)
    .finish();
    let mut buf = Vec::new();
    report
        .write(ariadne::sources(vec![(name, f.text.to_string())]), &mut buf)
        .ok()?;
    let text = String::from_utf8(buf).ok()?;
    let text = if color { text } else { strip_ansi(&text) };
    Some(if e.message.is_empty() {
        bare_header(&text, &e.type_name)
    } else {
        text
    })
}

/// An error without a message reads `KeyboardInterrupt`, as Python prints it, not
/// ariadne's `KeyboardInterrupt: ` header.
fn bare_header(text: &str, type_name: &str) -> String {
    let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
    let first = first
        .trim_end()
        .replacen(&format!("{type_name}:"), type_name, 1);
    format!("{first}\n{rest}")
}

/// Removes ANSI color sequences (ariadne colors custom report kinds unconditionally).
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
