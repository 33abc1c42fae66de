//! CSV files of numbers: a 2-D [`Array`] of shape (rows, columns) and the header names.
//!
//! Fields are separated by one delimiter character; a field may be double-quoted (with
//! `""` for a quote inside, no line breaks inside). Unquoted fields are trimmed. Blank
//! lines are skipped; `\r\n` line ends and a UTF-8 byte-order mark are accepted. Values
//! parse as Rust parses `f32` (so `nan`, `inf`, `1e-3`), `i64`, or for bool
//! `true/True/TRUE/1` and `false/False/FALSE/0`. With [`CsvHeader::Auto`], the first
//! row is a header when one of its fields is not a number (nor a bool literal for
//! bool). Errors name the line (1-based) and column (1-based field index).

use super::{in_file, value_error, Array, ArrayData, DType};
use crate::error::Result;
use std::path::Path;

/// Whether the first row holds column names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CsvHeader {
    Yes,
    No,
    /// A header when the first row has a field that is not a value.
    Auto,
}

/// A parsed CSV file.
#[derive(Debug, Clone, PartialEq)]
pub struct CsvTable {
    /// Shape (rows, columns), rows without the header.
    pub array: Array,
    /// The column names, when the file has a header row.
    pub header: Option<Vec<String>>,
}

/// Splits one line into fields.
fn split_fields(line: &str, delim: char, lineno: usize) -> Result<Vec<String>> {
    let mut fields = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars
            .next_if(|&c| c != delim && c.is_whitespace())
            .is_some()
        {}
        let mut field = String::new();
        if chars.next_if_eq(&'"').is_some() {
            loop {
                match chars.next() {
                    Some('"') if chars.next_if_eq(&'"').is_some() => field.push('"'),
                    Some('"') => break,
                    Some(c) => field.push(c),
                    None => {
                        return Err(value_error(format!(
                            "line {lineno}, column {}: unterminated quoted field",
                            fields.len() + 1
                        )))
                    }
                }
            }
            while chars
                .next_if(|&c| c != delim && c.is_whitespace())
                .is_some()
            {}
            if chars.peek().is_some_and(|&c| c != delim) {
                return Err(value_error(format!(
                    "line {lineno}, column {}: text after a closing quote",
                    fields.len() + 1
                )));
            }
        } else {
            while let Some(c) = chars.next_if(|&c| c != delim) {
                field.push(c);
            }
            field.truncate(field.trim_end().len());
        }
        fields.push(field);
        if chars.next().is_none() {
            return Ok(fields);
        }
    }
}

fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "true" | "True" | "TRUE" | "1" => Some(true),
        "false" | "False" | "FALSE" | "0" => Some(false),
        _ => None,
    }
}

/// Whether `field` reads as a value (for [`CsvHeader::Auto`]).
fn is_value(field: &str, dtype: DType) -> bool {
    match dtype {
        DType::Bool => parse_bool(field).is_some(),
        DType::F32 | DType::F64 | DType::I32 | DType::I64 | DType::U8 => {
            field.parse::<f64>().is_ok()
        }
    }
}

/// Parses the fields of one data row onto `data`.
fn push_row(data: &mut ArrayData, fields: &[String], lineno: usize) -> Result<()> {
    let dtype = data.dtype();
    for (col, field) in fields.iter().enumerate() {
        let bad = || {
            let what = if field.is_empty() {
                "empty value".to_string()
            } else {
                format!("'{field}' is not a valid {}", dtype.name())
            };
            value_error(format!("line {lineno}, column {}: {what}", col + 1))
        };
        match data {
            ArrayData::F32(v) => v.push(field.parse().map_err(|_| bad())?),
            ArrayData::F64(v) => v.push(field.parse().map_err(|_| bad())?),
            ArrayData::I32(v) => v.push(field.parse().map_err(|_| bad())?),
            ArrayData::I64(v) => v.push(field.parse().map_err(|_| bad())?),
            ArrayData::U8(v) => v.push(field.parse().map_err(|_| bad())?),
            ArrayData::Bool(v) => v.push(parse_bool(field).ok_or_else(bad)?),
        }
    }
    Ok(())
}

/// Parses CSV text (see the module documentation).
pub fn parse_csv(text: &str, header: CsvHeader, delimiter: char, dtype: DType) -> Result<CsvTable> {
    if matches!(delimiter, '"' | '\n' | '\r') {
        return Err(value_error(format!("invalid CSV delimiter {delimiter:?}")));
    }
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut data = match dtype {
        DType::F32 => ArrayData::F32(Vec::new()),
        DType::F64 => ArrayData::F64(Vec::new()),
        DType::I32 => ArrayData::I32(Vec::new()),
        DType::I64 => ArrayData::I64(Vec::new()),
        DType::U8 => ArrayData::U8(Vec::new()),
        DType::Bool => ArrayData::Bool(Vec::new()),
    };
    let mut names = None;
    let (mut rows, mut cols) = (0usize, None);
    let lines = text.split('\n').enumerate().map(|(i, l)| (i + 1, l));
    for (lineno, line) in lines.filter(|(_, l)| !l.trim().is_empty()) {
        let fields = split_fields(line.strip_suffix('\r').unwrap_or(line), delimiter, lineno)?;
        let first = cols.is_none();
        let expected = *cols.get_or_insert(fields.len());
        if first {
            let is_header = match header {
                CsvHeader::Yes => true,
                CsvHeader::No => false,
                CsvHeader::Auto => !fields.iter().all(|f| is_value(f, dtype)),
            };
            if is_header {
                names = Some(fields);
                continue;
            }
        }
        if fields.len() != expected {
            return Err(value_error(format!(
                "line {lineno} has {} fields, expected {expected}",
                fields.len()
            )));
        }
        push_row(&mut data, &fields, lineno)?;
        rows += 1;
    }
    let array = Array::new(vec![rows, cols.unwrap_or(0)], data)?;
    Ok(CsvTable {
        array,
        header: names,
    })
}

/// Reads a CSV file of numbers.
pub fn load_csv(path: &Path, header: CsvHeader, delimiter: char, dtype: DType) -> Result<CsvTable> {
    let bytes = super::read_file(path)?;
    let text = String::from_utf8(bytes).map_err(|e| {
        in_file(
            path,
            value_error(format!("not UTF-8 text: {}", e.utf8_error())),
        )
    })?;
    parse_csv(&text, header, delimiter, dtype).map_err(|e| in_file(path, e))
}
