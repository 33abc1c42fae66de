//! Source files and byte spans: the `SourceMap` that every diagnostic points into.

use std::rc::Rc;

/// Identifies a file in a [`SourceMap`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FileId(pub u32);

/// A byte range `start..end` in one source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub file: FileId,
    pub start: u32,
    pub end: u32,
}

impl Span {
    /// A span in `file` covering bytes `start..end`.
    pub fn new(file: FileId, start: usize, end: usize) -> Span {
        Span {
            file,
            start: start as u32,
            end: end as u32,
        }
    }

    /// The smallest span covering both `self` and `other` (same file assumed).
    pub fn to(self, other: Span) -> Span {
        Span {
            file: self.file,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

/// One loaded source: its display name (a path, `<string>`, `<stdin>`) and its text.
#[derive(Debug, Clone)]
pub struct SourceFile {
    pub name: Rc<str>,
    pub text: Rc<str>,
}

/// All sources an engine has seen, so spans can be turned back into file:line:col.
#[derive(Debug, Clone, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

impl SourceMap {
    pub fn new() -> SourceMap {
        SourceMap::default()
    }

    /// Registers a source and returns its id.
    pub fn add(&mut self, name: &str, text: &str) -> FileId {
        self.files.push(SourceFile {
            name: name.into(),
            text: text.into(),
        });
        FileId((self.files.len() - 1) as u32)
    }

    pub fn get(&self, id: FileId) -> Option<&SourceFile> {
        self.files.get(id.0 as usize)
    }

    /// 1-based line and column (in characters) of a byte offset in a file.
    pub fn line_col(&self, id: FileId, offset: u32) -> (usize, usize) {
        let Some(f) = self.get(id) else { return (1, 1) };
        let off = (offset as usize).min(f.text.len());
        let mut off = off;
        while !f.text.is_char_boundary(off) {
            off -= 1;
        }
        let before = &f.text[..off];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
        let col = f.text[line_start..off].chars().count() + 1;
        (line, col)
    }
}
