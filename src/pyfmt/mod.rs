//! Python 3.11-exact text for numbers and strings: `repr(float)`, `format(value, spec)`,
//! `repr(str)`, and Python's numeric rules for `round`, `//`, `%`, `**` and `int(float)`.
//!
//! Everything here mirrors CPython's `Python/formatter_unicode.c`, `Python/pystrtod.c`
//! and `Objects/floatobject.c`. Errors come back as [`crate::Error`] with Python's
//! exception kind and message and no span; the caller attaches the span.

use crate::error::{Error, ErrorKind, Result};

mod num;
mod printable;

pub use num::{
    float_floordiv, float_mod, float_to_int, int_floordiv, int_from_float, int_mod, int_pow,
    py_round,
};

/// A value that `format(value, spec)` accepts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FmtArg<'a> {
    Int(i64),
    /// Formats as `True`/`False` with an empty spec, otherwise as the int 1/0.
    Bool(bool),
    Float(f64),
    Str(&'a str),
}

/// Widths and precisions above this are refused (they would build gigabyte strings).
const MAX_FIELD: usize = 10_000_000;
/// Digits beyond this many after the point are always zero for an f64 (exact value
/// has at most 1074 fractional digits).
const MAX_EXACT_FRAC: usize = 1100;
/// An f64's exact decimal value has at most 767 significant digits.
const MAX_EXACT_SIG: usize = 800;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Align {
    Left,
    Right,
    Center,
    AfterSign,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Grouping {
    None,
    Comma,
    Underscore,
    /// `_` with `b o x X`: a separator every four digits.
    Underscore4,
}

/// A parsed `[[fill]align][sign][z][#][0][width][grouping][.precision][type]`.
#[derive(Debug, Clone, Copy)]
struct Spec {
    fill: char,
    align: Align,
    sign: Option<char>,
    no_neg_0: bool,
    alternate: bool,
    width: Option<usize>,
    grouping: Grouping,
    precision: Option<usize>,
    ty: Option<char>,
}

/// Python's `format(value, spec)`.
pub fn format_value(arg: FmtArg, spec: &str) -> Result<String> {
    match arg {
        FmtArg::Int(v) => format_int(v, spec, "int"),
        FmtArg::Bool(b) if spec.is_empty() => Ok(if b { "True" } else { "False" }.to_string()),
        FmtArg::Bool(b) => format_int(i64::from(b), spec, "bool"),
        FmtArg::Float(x) if spec.is_empty() => Ok(float_repr(x)),
        FmtArg::Float(x) => {
            let parsed = parse_spec(spec, Align::Right, None, "float")?;
            format_float(x, &parsed, "float")
        }
        FmtArg::Str(s) if spec.is_empty() => Ok(s.to_string()),
        FmtArg::Str(s) => format_str(s, spec),
    }
}

fn value_error(message: String) -> Error {
    Error::new(ErrorKind::ValueError, message, None)
}

/// `'q'`, or `'\x1'` for characters Python does not print with `%c`.
fn code_text(c: char) -> String {
    if (c as u32) > 32 && (c as u32) < 128 {
        c.to_string()
    } else {
        format!("\\x{:x}", c as u32)
    }
}

fn unknown_code(c: char, type_name: &str) -> Error {
    value_error(format!(
        "Unknown format code '{}' for object of type '{}'",
        code_text(c),
        type_name
    ))
}

/// Python's `get_integer`: ASCII digits from `pos`; `None` when there are none.
fn parse_integer(chars: &[char], pos: &mut usize) -> Result<Option<usize>> {
    let start = *pos;
    let mut acc: u64 = 0;
    while let Some(d) = chars.get(*pos).and_then(|c| c.to_digit(10)) {
        acc = acc
            .checked_mul(10)
            .and_then(|a| a.checked_add(u64::from(d)))
            .filter(|&a| a <= i64::MAX as u64)
            .ok_or_else(|| value_error("Too many decimal digits in format string".into()))?;
        *pos += 1;
    }
    if *pos == start {
        return Ok(None);
    }
    Ok(Some(usize::try_from(acc).unwrap_or(usize::MAX)))
}

fn align_of(c: char) -> Option<Align> {
    match c {
        '<' => Some(Align::Left),
        '>' => Some(Align::Right),
        '^' => Some(Align::Center),
        '=' => Some(Align::AfterSign),
        _ => None,
    }
}

/// Python's `parse_internal_render_format_spec`.
fn parse_spec(
    spec: &str,
    default_align: Align,
    default_type: Option<char>,
    type_name: &str,
) -> Result<Spec> {
    let chars: Vec<char> = spec.chars().collect();
    let mut out = Spec {
        fill: ' ',
        align: default_align,
        sign: None,
        no_neg_0: false,
        alternate: false,
        width: None,
        grouping: Grouping::None,
        precision: None,
        ty: default_type,
    };
    let mut pos = 0;
    let at = |i: usize| chars.get(i).copied();
    let mut fill_given = false;
    let mut align_given = false;
    if let Some(a) = at(1).and_then(align_of) {
        out.fill = chars[0];
        out.align = a;
        fill_given = true;
        align_given = true;
        pos = 2;
    } else if let Some(a) = at(0).and_then(align_of) {
        out.align = a;
        align_given = true;
        pos = 1;
    }
    if let Some(s @ ('+' | '-' | ' ')) = at(pos) {
        out.sign = Some(s);
        pos += 1;
    }
    if at(pos) == Some('z') {
        out.no_neg_0 = true;
        pos += 1;
    }
    if at(pos) == Some('#') {
        out.alternate = true;
        pos += 1;
    }
    if !fill_given && at(pos) == Some('0') {
        out.fill = '0';
        if !align_given && default_align == Align::Right {
            out.align = Align::AfterSign;
        }
        pos += 1;
    }
    out.width = parse_integer(&chars, &mut pos)?;
    parse_grouping(&chars, &mut pos, &mut out)?;
    if at(pos) == Some('.') {
        pos += 1;
        out.precision = parse_integer(&chars, &mut pos)?;
        if out.precision.is_none() {
            return Err(value_error("Format specifier missing precision".into()));
        }
    }
    match chars.len() - pos {
        0 => {}
        1 => out.ty = at(pos),
        _ => {
            return Err(value_error(format!(
                "Invalid format specifier '{spec}' for object of type '{type_name}'"
            )))
        }
    }
    check_grouping(&mut out)?;
    if out.width.is_some_and(|w| w > MAX_FIELD) {
        return Err(Error::new(
            ErrorKind::MemoryError,
            "format width too large",
            None,
        ));
    }
    Ok(out)
}

fn parse_grouping(chars: &[char], pos: &mut usize, out: &mut Spec) -> Result<()> {
    let both = || value_error("Cannot specify both ',' and '_'.".into());
    if chars.get(*pos) == Some(&',') {
        out.grouping = Grouping::Comma;
        *pos += 1;
    }
    if chars.get(*pos) == Some(&'_') {
        if out.grouping != Grouping::None {
            return Err(both());
        }
        out.grouping = Grouping::Underscore;
        *pos += 1;
    }
    if chars.get(*pos) == Some(&',') && out.grouping == Grouping::Underscore {
        return Err(both());
    }
    Ok(())
}

/// Which presentation types allow `,` and `_` (PEP 378 and PEP 515).
fn check_grouping(out: &mut Spec) -> Result<()> {
    let sep = match out.grouping {
        Grouping::None => return Ok(()),
        Grouping::Comma => ',',
        Grouping::Underscore | Grouping::Underscore4 => '_',
    };
    match out.ty {
        None | Some('d' | 'e' | 'f' | 'g' | 'E' | 'G' | '%' | 'F') => Ok(()),
        Some('b' | 'o' | 'x' | 'X') if sep == '_' => {
            out.grouping = Grouping::Underscore4;
            Ok(())
        }
        Some(t) => Err(value_error(format!(
            "Cannot specify '{sep}' with '{}'.",
            code_text(t)
        ))),
    }
}

// ---------------------------------------------------------------- strings

fn format_str(s: &str, spec: &str) -> Result<String> {
    let spec = parse_spec(spec, Align::Left, Some('s'), "str")?;
    match spec.ty {
        Some('s') | None => {}
        Some(c) => return Err(unknown_code(c, "str")),
    }
    let refuse = |m: &str| Err(value_error(m.to_string()));
    match spec.sign {
        Some(' ') => return refuse("Space not allowed in string format specifier"),
        Some(_) => return refuse("Sign not allowed in string format specifier"),
        None => {}
    }
    if spec.no_neg_0 {
        return refuse("Negative zero coercion (z) not allowed in string format specifier");
    }
    if spec.alternate {
        return refuse("Alternate form (#) not allowed in string format specifier");
    }
    if spec.align == Align::AfterSign {
        return refuse("'=' alignment not allowed in string format specifier");
    }
    let body: String = match spec.precision {
        Some(p) => s.chars().take(p).collect(),
        None => s.to_string(),
    };
    let len = body.chars().count();
    let pad = spec.width.unwrap_or(0).saturating_sub(len);
    let (left, right) = match spec.align {
        Align::Left => (0, pad),
        Align::Center => (pad / 2, pad - pad / 2),
        Align::Right | Align::AfterSign => (pad, 0),
    };
    let mut out = String::with_capacity(body.len() + pad * spec.fill.len_utf8());
    push_fill(&mut out, spec.fill, left);
    out.push_str(&body);
    push_fill(&mut out, spec.fill, right);
    Ok(out)
}

fn push_fill(out: &mut String, c: char, n: usize) {
    out.extend(std::iter::repeat_n(c, n));
}

// ---------------------------------------------------------------- number layout

/// The pieces of a formatted number: `<sign><prefix><digits>[.]<remainder>`.
struct NumParts<'a> {
    negative: bool,
    prefix: &'a str,
    /// The integer digits, which grouping and zero padding apply to.
    digits: &'a str,
    has_decimal: bool,
    /// Everything after the decimal point (fraction, exponent, `%`), or a whole
    /// non-digit body such as `inf` or a `c` character.
    remainder: &'a str,
}

/// Python's `calc_number_widths` + `fill_number`: sign, padding, grouping.
fn assemble(spec: &Spec, parts: &NumParts) -> String {
    let sign = match (spec.sign, parts.negative) {
        (_, true) => Some('-'),
        (Some('+'), false) => Some('+'),
        (Some(' '), false) => Some(' '),
        _ => None,
    };
    let n_non_digit = usize::from(sign.is_some())
        + parts.prefix.chars().count()
        + usize::from(parts.has_decimal)
        + parts.remainder.chars().count();
    let width = spec.width.map_or(-1, |w| w as i64);
    let min_width = if spec.fill == '0' && spec.align == Align::AfterSign {
        width - n_non_digit as i64
    } else {
        0
    };
    let grouped = if parts.digits.is_empty() {
        String::new()
    } else {
        group_digits(parts.digits.as_bytes(), min_width, spec.grouping)
    };
    let padding = (width - (n_non_digit + grouped.len()) as i64).max(0) as usize;
    let (left, middle, right) = match spec.align {
        Align::Left => (0, 0, padding),
        Align::Center => (padding / 2, 0, padding - padding / 2),
        Align::AfterSign => (0, padding, 0),
        Align::Right => (padding, 0, 0),
    };
    let mut out = String::new();
    push_fill(&mut out, spec.fill, left);
    out.extend(sign);
    out.push_str(parts.prefix);
    push_fill(&mut out, spec.fill, middle);
    out.push_str(&grouped);
    if parts.has_decimal {
        out.push('.');
    }
    out.push_str(parts.remainder);
    push_fill(&mut out, spec.fill, right);
    out
}

/// Python's `_PyUnicode_InsertThousandsGrouping`: separators every 3 (or 4) digits,
/// zero-padded on the left up to `min_width` characters.
fn group_digits(digits: &[u8], min_width: i64, grouping: Grouping) -> String {
    let (size, sep) = match grouping {
        Grouping::None => (0, b','),
        Grouping::Comma => (3, b','),
        Grouping::Underscore => (3, b'_'),
        Grouping::Underscore4 => (4, b'_'),
    };
    let mut remaining = digits.len() as i64;
    let mut min_width = min_width.max(0);
    let mut rev: Vec<u8> = Vec::new();
    let emit = |rev: &mut Vec<u8>, len: i64, remaining: i64| {
        let n_zeros = (len - remaining).max(0);
        let n_chars = remaining.min(len).max(0);
        let end = remaining as usize;
        let start = end - n_chars as usize;
        rev.extend(digits[start..end].iter().rev());
        rev.extend(std::iter::repeat_n(b'0', n_zeros as usize));
        n_chars
    };
    if size == 0 {
        let len = remaining.max(min_width).max(1);
        emit(&mut rev, len, remaining);
    } else {
        let mut first = true;
        loop {
            let len = size.min(remaining.max(min_width).max(1));
            if !first {
                rev.push(sep);
            }
            first = false;
            remaining -= emit(&mut rev, len, remaining);
            min_width -= len;
            if remaining <= 0 && min_width <= 0 {
                break;
            }
            min_width -= 1;
        }
    }
    rev.iter().rev().map(|&b| b as char).collect()
}

// ---------------------------------------------------------------- integers

fn format_int(v: i64, spec: &str, type_name: &str) -> Result<String> {
    if spec.is_empty() {
        return Ok(v.to_string());
    }
    let spec = parse_spec(spec, Align::Right, Some('d'), type_name)?;
    match spec.ty {
        Some('b' | 'c' | 'd' | 'o' | 'x' | 'X' | 'n') | None => format_int_spec(v, &spec),
        Some('e' | 'E' | 'f' | 'F' | 'g' | 'G' | '%') => format_float(v as f64, &spec, type_name),
        Some(c) => Err(unknown_code(c, type_name)),
    }
}

fn format_int_spec(v: i64, spec: &Spec) -> Result<String> {
    if spec.precision.is_some() {
        return Err(value_error(
            "Precision not allowed in integer format specifier".into(),
        ));
    }
    if spec.no_neg_0 {
        return Err(value_error(
            "Negative zero coercion (z) not allowed in integer format specifier".into(),
        ));
    }
    if spec.ty == Some('c') {
        return format_int_char(v, spec);
    }
    let mag = v.unsigned_abs();
    let (digits, prefix) = match spec.ty {
        Some('b') => (format!("{mag:b}"), "0b"),
        Some('o') => (format!("{mag:o}"), "0o"),
        Some('x') => (format!("{mag:x}"), "0x"),
        Some('X') => (format!("{mag:X}"), "0X"),
        _ => (mag.to_string(), ""),
    };
    let parts = NumParts {
        negative: v < 0,
        prefix: if spec.alternate { prefix } else { "" },
        digits: &digits,
        has_decimal: false,
        remainder: "",
    };
    Ok(assemble(spec, &parts))
}

fn format_int_char(v: i64, spec: &Spec) -> Result<String> {
    if spec.sign.is_some() {
        return Err(value_error(
            "Sign not allowed with integer format specifier 'c'".into(),
        ));
    }
    if spec.alternate {
        return Err(value_error(
            "Alternate form (#) not allowed with integer format specifier 'c'".into(),
        ));
    }
    if !(0..=0x10ffff).contains(&v) {
        return Err(Error::new(
            ErrorKind::OverflowError,
            "%c arg not in range(0x110000)",
            None,
        ));
    }
    // In range, so only a surrogate (which a Rust string cannot hold) fails here.
    let c = char::from_u32(v as u32).ok_or_else(|| {
        value_error("%c arg is a surrogate code point, which strings cannot hold".into())
    })?;
    let text = c.to_string();
    let parts = NumParts {
        negative: false,
        prefix: "",
        digits: "",
        has_decimal: false,
        remainder: &text,
    };
    Ok(assemble(spec, &parts))
}

// ---------------------------------------------------------------- floats

/// The digit-generation mode of `_Py_dg_dtoa` that a presentation type uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Code {
    /// `e`: `precision + 1` significant digits, always an exponent.
    Exp,
    /// `f`: `precision` digits after the point.
    Fixed,
    /// `g`: `precision` significant digits, exponent when out of range.
    General,
    /// `repr`: the shortest digits that round-trip.
    Repr,
}

fn format_float(x: f64, spec: &Spec, type_name: &str) -> Result<String> {
    let (code, upper, percent) = match spec.ty {
        None if spec.precision.is_some() => (Code::General, false, false),
        None => (Code::Repr, false, false),
        Some('e') => (Code::Exp, false, false),
        Some('E') => (Code::Exp, true, false),
        Some('f') => (Code::Fixed, false, false),
        Some('F') => (Code::Fixed, true, false),
        Some('g' | 'n') => (Code::General, false, false),
        Some('G') => (Code::General, true, false),
        Some('%') => (Code::Fixed, false, true),
        Some(c) => return Err(unknown_code(c, type_name)),
    };
    let precision = spec.precision.unwrap_or(6);
    if precision > i32::MAX as usize {
        return Err(value_error("precision too big".into()));
    }
    if precision > MAX_FIELD {
        return Err(Error::new(
            ErrorKind::MemoryError,
            "format precision too large",
            None,
        ));
    }
    let val = if percent { x * 100.0 } else { x };
    let opts = FloatOpts {
        code,
        precision,
        add_dot_0: spec.ty.is_none(),
        alt: spec.alternate,
        no_neg_0: spec.no_neg_0,
    };
    let (negative, mut body) = float_body(val, &opts);
    if upper {
        body.make_ascii_uppercase();
    }
    if percent {
        body.push('%');
    }
    let int_end = body
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(body.len());
    let (digits, rest) = body.split_at(int_end);
    let (has_decimal, remainder) = match rest.strip_prefix('.') {
        Some(r) => (true, r),
        None => (false, rest),
    };
    let parts = NumParts {
        negative,
        prefix: "",
        digits,
        has_decimal,
        remainder,
    };
    Ok(assemble(spec, &parts))
}

/// How `float_body` lays out one float (Python's `format_float_short` arguments).
struct FloatOpts {
    code: Code,
    precision: usize,
    add_dot_0: bool,
    alt: bool,
    no_neg_0: bool,
}

/// Python's `repr(float)`: the shortest round-trip digits, scientific notation when
/// the decimal exponent is below -4 or at least 16.
pub fn float_repr(x: f64) -> String {
    let opts = FloatOpts {
        code: Code::Repr,
        precision: 0,
        add_dot_0: true,
        alt: false,
        no_neg_0: false,
    };
    let (negative, body) = float_body(x, &opts);
    if negative {
        format!("-{body}")
    } else {
        body
    }
}

/// The unsigned text of `x` and whether a minus sign belongs in front of it.
fn float_body(x: f64, opts: &FloatOpts) -> (bool, String) {
    if x.is_nan() {
        return (false, "nan".into());
    }
    if x.is_infinite() {
        return (x < 0.0, "inf".into());
    }
    let (digits, decpt) = decimal_digits(x.abs(), opts);
    let zero = digits == "0";
    let negative = x.is_sign_negative() && !(opts.no_neg_0 && zero);
    (negative, layout(digits.as_bytes(), decpt, opts))
}

/// `_Py_dg_dtoa`'s output for finite `x >= 0`: significant digits without trailing
/// zeros (`"0"` for zero) and the decimal point position (`x = 0.DIGITS * 10^decpt`).
/// Rust's float formatting is exact and rounds half to even, like dtoa.
fn decimal_digits(x: f64, opts: &FloatOpts) -> (String, i64) {
    let text = match opts.code {
        Code::Fixed => return fixed_digits(x, opts.precision.min(MAX_EXACT_FRAC)),
        Code::Repr => shortest_digits(x),
        Code::Exp => format!("{:.*e}", opts.precision.min(MAX_EXACT_SIG), x),
        Code::General => format!("{:.*e}", opts.precision.clamp(1, MAX_EXACT_SIG) - 1, x),
    };
    let (mantissa, exp) = split_exp(&text);
    let mut digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    strip_trailing_zeros(&mut digits);
    (digits, exp + 1)
}

/// The shortest round-trip digits of `x` in `{:e}` layout. Of several shortest
/// candidates dtoa takes the one nearest `x`, ties to even (`590398187742831.25` ->
/// `...831.2`); Rust's shortest mode may round such a tie up, so when the correctly
/// rounded string of the same length round-trips too, that one is used.
fn shortest_digits(x: f64) -> String {
    let shortest = format!("{x:e}");
    let (mantissa, _) = split_exp(&shortest);
    let n = mantissa.chars().filter(char::is_ascii_digit).count();
    let nearest = format!("{:.*e}", n.saturating_sub(1), x);
    if nearest != shortest && nearest.parse::<f64>() == Ok(x) {
        nearest
    } else {
        shortest
    }
}

/// Splits Rust's `1.25e-7` into `("1.25", -7)`.
fn split_exp(s: &str) -> (&str, i64) {
    match s.split_once('e') {
        Some((m, e)) => (m, e.parse().unwrap_or(0)),
        None => (s, 0),
    }
}

fn strip_trailing_zeros(digits: &mut String) {
    let keep = digits.trim_end_matches('0').len().max(1);
    digits.truncate(keep);
}

fn fixed_digits(x: f64, precision: usize) -> (String, i64) {
    let text = format!("{x:.precision$}");
    let (int_part, frac) = text.split_once('.').unwrap_or((&text, ""));
    let all = format!("{int_part}{frac}");
    let trimmed = all.trim_start_matches('0');
    if trimmed.trim_end_matches('0').is_empty() {
        return ("0".into(), 1);
    }
    let decpt = int_part.len() as i64 - (all.len() - trimmed.len()) as i64;
    let mut digits = trimmed.to_string();
    strip_trailing_zeros(&mut digits);
    (digits, decpt)
}

/// The layout half of Python's `format_float_short`: places the decimal point, pads
/// with zeros and adds the exponent.
fn layout(digits: &[u8], decpt: i64, opts: &FloatOpts) -> String {
    let digits_len = digits.len() as i64;
    let precision = opts.precision as i64;
    let mut decpt = decpt;
    let mut vdigits_end = digits_len;
    let mut use_exp = false;
    match opts.code {
        Code::Exp => {
            use_exp = true;
            vdigits_end = precision + 1;
        }
        Code::Fixed => vdigits_end = decpt + precision,
        Code::General => {
            let precision = precision.max(1);
            let limit = if opts.add_dot_0 {
                precision - 1
            } else {
                precision
            };
            use_exp = decpt <= -4 || decpt > limit;
            if opts.alt {
                vdigits_end = precision;
            }
        }
        Code::Repr => use_exp = decpt <= -4 || decpt > 16,
    }
    let exp = decpt - 1;
    if use_exp {
        decpt = 1;
    }
    let vdigits_start = if decpt <= 0 { decpt - 1 } else { 0 };
    let floor = if !use_exp && opts.add_dot_0 {
        decpt + 1
    } else {
        decpt
    };
    vdigits_end = vdigits_end.max(floor);
    let zeros = |n: i64| "0".repeat(n.max(0) as usize);
    let mut out = String::new();
    if decpt <= 0 {
        out += &zeros(decpt - vdigits_start);
        out.push('.');
        out += &zeros(-decpt);
    }
    let text = |b: &[u8]| b.iter().map(|&c| c as char).collect::<String>();
    if 0 < decpt && decpt <= digits_len {
        let (head, tail) = digits.split_at(decpt as usize);
        out += &text(head);
        out.push('.');
        out += &text(tail);
    } else {
        out += &text(digits);
    }
    if digits_len < decpt {
        out += &zeros(decpt - digits_len);
        out.push('.');
        out += &zeros(vdigits_end - decpt);
    } else {
        out += &zeros(vdigits_end - digits_len);
    }
    if out.ends_with('.') && !opts.alt {
        out.pop();
    }
    if use_exp {
        out += &format!("e{exp:+03}");
    }
    out
}

// ---------------------------------------------------------------- strings' repr

/// Python's `repr(str)`: single quotes unless the text has `'` and no `"`; escapes
/// `\\`, the quote, `\t \n \r`, and non-printable characters as `\xNN`, `\uNNNN`,
/// `\UNNNNNNNN`.
pub fn str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if c == ' ' || c.is_ascii_graphic() => out.push(c),
            c if c.is_ascii() || !printable::is_printable(c) => push_escape(&mut out, c),
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Whether Python's `str.isprintable` holds for `c`.
pub fn is_printable(c: char) -> bool {
    c == ' ' || (c.is_ascii_graphic() || (!c.is_ascii() && printable::is_printable(c)))
}

/// `ascii(x)` from `repr(x)`: non-ASCII characters as `\xNN`, `\uNNNN`, `\UNNNNNNNN`.
pub fn ascii_escape(repr: &str) -> String {
    let mut out = String::with_capacity(repr.len());
    for c in repr.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            push_escape(&mut out, c);
        }
    }
    out
}

fn push_escape(out: &mut String, c: char) {
    let n = c as u32;
    if n <= 0xff {
        out.push_str(&format!("\\x{n:02x}"));
    } else if n <= 0xffff {
        out.push_str(&format!("\\u{n:04x}"));
    } else {
        out.push_str(&format!("\\U{n:08x}"));
    }
}

#[cfg(test)]
mod tests;
