//! The `.npy` header: the Python dict literal `{'descr': .., 'fortran_order': .., 'shape': ..}`.

use super::value_error;
use crate::error::Result;

/// NumPy pads headers so that the data starts at a multiple of this.
const ARRAY_ALIGN: usize = 64;
/// NumPy leaves room for the first axis to grow to this many digits.
const GROWTH_AXIS_MAX_DIGITS: usize = 21;
pub const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// The fields of a `.npy` header.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub descr: String,
    pub fortran_order: bool,
    pub shape: Vec<usize>,
}

/// The Python repr of a shape tuple: `()`, `(5,)`, `(2, 3)`.
fn shape_repr(shape: &[usize]) -> String {
    match shape {
        [d] => format!("({d},)"),
        _ => {
            let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
            format!("({})", dims.join(", "))
        }
    }
}

/// The full header (magic, version, length, padded dict) exactly as NumPy's
/// `_write_array_header` writes it for a C-order array: version 1.0, or 2.0 when the
/// header does not fit a u16 length.
pub fn encode_header(descr: &str, shape: &[usize]) -> Result<Vec<u8>> {
    let mut dict = format!(
        "{{'descr': '{descr}', 'fortran_order': False, 'shape': {}, }}",
        shape_repr(shape)
    );
    if let Some(first) = shape.first() {
        let digits = first.to_string().len();
        dict.push_str(&" ".repeat(GROWTH_AXIS_MAX_DIGITS.saturating_sub(digits)));
    }
    wrap(dict.as_bytes(), 1)
        .or_else(|| wrap(dict.as_bytes(), 2))
        .ok_or_else(|| value_error("the .npy header is too long"))
}

/// Magic, version, length and the space-and-newline padded dict for `major` 1 or 2.
fn wrap(dict: &[u8], major: u8) -> Option<Vec<u8>> {
    let len_size = if major == 1 { 2 } else { 4 };
    let prefix = MAGIC.len() + 2 + len_size;
    let hlen = dict.len().checked_add(1)?;
    let padlen = ARRAY_ALIGN - (prefix.checked_add(hlen)? % ARRAY_ALIGN);
    let total = hlen.checked_add(padlen)?;
    let mut out = Vec::with_capacity(prefix + total);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[major, 0]);
    if major == 1 {
        out.extend_from_slice(&u16::try_from(total).ok()?.to_le_bytes());
    } else {
        out.extend_from_slice(&u32::try_from(total).ok()?.to_le_bytes());
    }
    out.extend_from_slice(dict);
    out.resize(out.len() + padlen, b' ');
    out.push(b'\n');
    Some(out)
}

/// A value in the header dict.
enum Lit {
    Str(String),
    Bool(bool),
    Tuple(Vec<usize>),
}

/// A cursor over the header text.
struct Cursor<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
}

impl Cursor<'_> {
    fn skip_ws(&mut self) {
        while self.chars.next_if(|c| c.is_whitespace()).is_some() {}
    }

    /// Skips whitespace, then consumes `c` if it is next.
    fn eat(&mut self, c: char) -> bool {
        self.skip_ws();
        self.chars.next_if_eq(&c).is_some()
    }

    fn expect(&mut self, c: char) -> Result<()> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(bad(&format!("expected '{c}'")))
        }
    }

    fn string(&mut self) -> Result<String> {
        self.skip_ws();
        let quote = self
            .chars
            .next_if(|&c| c == '\'' || c == '"')
            .ok_or_else(|| bad("expected a string"))?;
        let mut s = String::new();
        loop {
            match self.chars.next() {
                Some(c) if c == quote => return Ok(s),
                Some('\\') | None => return Err(bad("unsupported or unterminated string")),
                Some(c) => s.push(c),
            }
        }
    }

    fn word(&mut self) -> String {
        let mut s = String::new();
        while let Some(c) = self.chars.next_if(|c| c.is_ascii_alphanumeric()) {
            s.push(c);
        }
        s
    }

    fn tuple(&mut self) -> Result<Vec<usize>> {
        self.expect('(')?;
        let mut dims = Vec::new();
        loop {
            if self.eat(')') {
                return Ok(dims);
            }
            self.skip_ws();
            let digits = self.word();
            let dim = digits
                .parse::<usize>()
                .map_err(|_| bad(&format!("invalid dimension '{digits}' in shape")))?;
            dims.push(dim);
            if !self.eat(',') {
                self.expect(')')?;
                if dims.len() == 1 {
                    return Err(bad("shape is not a tuple"));
                }
                return Ok(dims);
            }
        }
    }

    fn value(&mut self) -> Result<Lit> {
        self.skip_ws();
        match self.chars.peek() {
            Some('\'' | '"') => self.string().map(Lit::Str),
            Some('(') => self.tuple().map(Lit::Tuple),
            _ => match self.word().as_str() {
                "True" => Ok(Lit::Bool(true)),
                "False" => Ok(Lit::Bool(false)),
                _ => Err(bad(
                    "unsupported value (structured dtypes are not supported)",
                )),
            },
        }
    }
}

fn bad(what: &str) -> crate::error::Error {
    value_error(format!("invalid .npy header: {what}"))
}

/// Parses the header dict; the keys must be exactly `descr`, `fortran_order`, `shape`.
pub fn parse_header(text: &str) -> Result<Header> {
    let mut cur = Cursor {
        chars: text.chars().peekable(),
    };
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    cur.expect('{')?;
    while !cur.eat('}') {
        let key = cur.string()?;
        cur.expect(':')?;
        match (key.as_str(), cur.value()?) {
            ("descr", Lit::Str(s)) => descr = Some(s),
            ("fortran_order", Lit::Bool(b)) => fortran = Some(b),
            ("shape", Lit::Tuple(t)) => shape = Some(t),
            (k @ ("descr" | "fortran_order" | "shape"), _) => {
                return Err(bad(&format!("wrong type for '{k}'")))
            }
            (k, _) => return Err(bad(&format!("unexpected key '{k}'"))),
        }
        if !cur.eat(',') {
            cur.expect('}')?;
            break;
        }
    }
    cur.skip_ws();
    if cur.chars.peek().is_some() {
        return Err(bad("text after the dict"));
    }
    match (descr, fortran, shape) {
        (Some(descr), Some(fortran_order), Some(shape)) => Ok(Header {
            descr,
            fortran_order,
            shape,
        }),
        _ => Err(bad("missing 'descr', 'fortran_order' or 'shape'")),
    }
}
