//! NumPy `.npy` files (format versions 1.0, 2.0, 3.0): read and write [`Array`]s.
//!
//! Reading accepts little- and big-endian `f4 f8` (to float32), `i1 i2 i4 i8 u1 u2 u4`
//! (to int64) and `b1` (nonzero bytes are true). A `fortran_order: True` array is
//! transposed into row-major order on read, so the shape is kept and the elements are
//! the ones NumPy shows. The data must be exactly as long as the header says (NumPy
//! ignores trailing bytes; here they are an error). Writing produces version 1.0 (2.0
//! if the header needs it), C order, byte-for-byte what `numpy.save` writes.

use super::npy_header::{encode_header, parse_header, Header, MAGIC};
use super::{in_file, numel, read_file, value_error, write_atomic, Array, ArrayData};
use crate::error::Result;
use std::path::Path;

/// The kind of a stored element.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Float,
    Int,
    UInt,
    Bool,
}

/// A stored element type: kind, byte size and byte order.
#[derive(Debug, Clone, Copy)]
struct Descr {
    kind: Kind,
    size: usize,
    big_endian: bool,
}

/// Parses a dtype string such as `<f4`, `>i8` or `|b1`.
fn parse_descr(descr: &str) -> Result<Descr> {
    let unsupported = || value_error(format!("unsupported .npy dtype '{descr}'"));
    let mut chars = descr.chars();
    let big_endian = match chars.next() {
        Some('<' | '|' | '=') => false,
        Some('>') => true,
        _ => return Err(unsupported()),
    };
    let kind = match chars.next() {
        Some('f') => Kind::Float,
        Some('i') => Kind::Int,
        Some('u') => Kind::UInt,
        Some('b') => Kind::Bool,
        _ => return Err(unsupported()),
    };
    let size: usize = chars.as_str().parse().map_err(|_| unsupported())?;
    let ok = match kind {
        Kind::Float => matches!(size, 4 | 8),
        Kind::Int => matches!(size, 1 | 2 | 4 | 8),
        Kind::UInt => matches!(size, 1 | 2 | 4),
        Kind::Bool => size == 1,
    };
    if !ok {
        return Err(unsupported());
    }
    Ok(Descr {
        kind,
        size,
        big_endian,
    })
}

/// One element's bytes in little-endian order, zero-extended to 8 bytes.
fn le_word(chunk: &[u8], big_endian: bool) -> [u8; 8] {
    let mut word = [0u8; 8];
    if big_endian {
        word.iter_mut()
            .zip(chunk.iter().rev())
            .for_each(|(d, s)| *d = *s);
    } else {
        word.iter_mut().zip(chunk).for_each(|(d, s)| *d = *s);
    }
    word
}

/// Sign-extends the low `size` bytes of `word`.
fn signed(word: [u8; 8], size: usize) -> i64 {
    let shift = 64 - 8 * size as u32;
    (i64::from_le_bytes(word) << shift) >> shift
}

fn float32(word: [u8; 8]) -> f32 {
    f32::from_bits(u32::from_le_bytes([word[0], word[1], word[2], word[3]]))
}

/// Decodes `bytes` (a whole number of elements) into row-major data.
fn decode(d: Descr, bytes: &[u8]) -> ArrayData {
    let words = bytes.chunks_exact(d.size).map(|c| le_word(c, d.big_endian));
    match d.kind {
        Kind::Float if d.size == 8 => ArrayData::F64(words.map(f64::from_le_bytes).collect()),
        Kind::Float => ArrayData::F32(words.map(float32).collect()),
        Kind::Int if d.size == 4 => ArrayData::I32(words.map(|w| signed(w, 4) as i32).collect()),
        Kind::Int => ArrayData::I64(words.map(|w| signed(w, d.size)).collect()),
        Kind::UInt if d.size == 1 => ArrayData::U8(words.map(|w| w[0]).collect()),
        Kind::UInt => ArrayData::I64(words.map(i64::from_le_bytes).collect()),
        Kind::Bool => ArrayData::Bool(words.map(|w| w[0] != 0).collect()),
    }
}

/// Reorders column-major (Fortran) `src` of `shape` into row-major order.
fn fortran_to_c<T: Copy>(src: &[T], shape: &[usize]) -> Vec<T> {
    let mut strides = Vec::with_capacity(shape.len());
    let mut acc = 1usize;
    for &d in shape {
        strides.push(acc);
        acc = acc.saturating_mul(d);
    }
    let mut index = vec![0usize; shape.len()];
    let mut offset = 0usize;
    let mut out = Vec::with_capacity(src.len());
    for _ in 0..src.len() {
        if let Some(&x) = src.get(offset) {
            out.push(x);
        }
        for ((i, &d), &s) in index.iter_mut().zip(shape).zip(&strides).rev() {
            *i += 1;
            offset += s;
            if *i < d {
                break;
            }
            offset -= s * d;
            *i = 0;
        }
    }
    out
}

fn reorder(data: ArrayData, shape: &[usize]) -> ArrayData {
    match data {
        ArrayData::F32(v) => ArrayData::F32(fortran_to_c(&v, shape)),
        ArrayData::F64(v) => ArrayData::F64(fortran_to_c(&v, shape)),
        ArrayData::I32(v) => ArrayData::I32(fortran_to_c(&v, shape)),
        ArrayData::I64(v) => ArrayData::I64(fortran_to_c(&v, shape)),
        ArrayData::U8(v) => ArrayData::U8(fortran_to_c(&v, shape)),
        ArrayData::Bool(v) => ArrayData::Bool(fortran_to_c(&v, shape)),
    }
}

/// Splits a file into its parsed header and the bytes after it.
fn split_header(bytes: &[u8]) -> Result<(Header, &[u8])> {
    let rest = bytes
        .strip_prefix(MAGIC.as_slice())
        .ok_or_else(|| value_error("not a .npy file (bad magic string)"))?;
    let truncated = || value_error("truncated .npy header");
    let (version, rest) = rest.split_at_checked(2).ok_or_else(truncated)?;
    let (len, rest) = match version {
        [1, 0] => rest
            .split_first_chunk::<2>()
            .map(|(l, r)| (usize::from(u16::from_le_bytes(*l)), r)),
        [2 | 3, 0] => rest
            .split_first_chunk::<4>()
            .map(|(l, r)| (u32::from_le_bytes(*l) as usize, r)),
        _ => return Err(value_error(format!("unsupported .npy version {version:?}"))),
    }
    .ok_or_else(truncated)?;
    let (text, data) = rest.split_at_checked(len).ok_or_else(|| {
        value_error(format!(
            "truncated .npy header: it claims {len} bytes, the file has {} left",
            rest.len()
        ))
    })?;
    let text = if version == [3, 0] {
        std::str::from_utf8(text)
            .map_err(|_| value_error("invalid .npy header: not UTF-8"))?
            .to_string()
    } else {
        text.iter().map(|&b| char::from(b)).collect()
    };
    Ok((parse_header(&text)?, data))
}

/// Parses the contents of a `.npy` file.
pub fn npy_from_bytes(bytes: &[u8]) -> Result<Array> {
    let (header, data) = split_header(bytes)?;
    let descr = parse_descr(&header.descr)?;
    let n = numel(&header.shape)?;
    let expected = n
        .checked_mul(descr.size)
        .ok_or_else(|| value_error(format!("shape {:?} is too large", header.shape)))?;
    if data.len() != expected {
        return Err(value_error(format!(
            "the .npy data has {} bytes but shape {:?} of '{}' needs {expected}",
            data.len(),
            header.shape,
            header.descr
        )));
    }
    let mut values = decode(descr, data);
    if header.fortran_order && header.shape.len() > 1 {
        values = reorder(values, &header.shape);
    }
    Array::new(header.shape, values)
}

/// The bytes of a `.npy` file holding `array`, as `numpy.save` writes them.
pub fn npy_to_bytes(array: &Array) -> Result<Vec<u8>> {
    let descr = match array.data() {
        ArrayData::F32(_) => "<f4",
        ArrayData::F64(_) => "<f8",
        ArrayData::I32(_) => "<i4",
        ArrayData::I64(_) => "<i8",
        ArrayData::U8(_) => "|u1",
        ArrayData::Bool(_) => "|b1",
    };
    let mut out = encode_header(descr, array.shape())?;
    out.extend_from_slice(&array.data().to_le_bytes());
    Ok(out)
}

/// Reads a `.npy` file.
pub fn load_npy(path: &Path) -> Result<Array> {
    let bytes = read_file(path)?;
    npy_from_bytes(&bytes).map_err(|e| in_file(path, e))
}

/// Writes `array` to a `.npy` file atomically (the old file survives any failure).
pub fn save_npy(path: &Path, array: &Array) -> Result<()> {
    write_atomic(path, &npy_to_bytes(array)?)
}
