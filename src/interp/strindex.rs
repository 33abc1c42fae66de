//! Character positions of strings indexed by character: `s[i]`, `s[a:b]` and `len(s)`
//! cost O(1) (slices O(result)) after one pass over a string, instead of a pass per
//! access (a parser walking its text by index was quadratic).
//!
//! The last few strings of `MIN_LEN` bytes or more are remembered with their layout
//! (kept alive here, so an address seen again is the same string: `str` is immutable).

use super::value::Value;
use std::cell::RefCell;
use std::rc::Rc;

/// A string's character layout: `None` when ASCII (character i is byte i), else the
/// byte offset of every character followed by the length.
pub type Layout = Option<Rc<[usize]>>;

/// Shorter strings are measured on every access (cheap).
const MIN_LEN: usize = 64;
/// How many strings are remembered.
const KEEP: usize = 4;

thread_local! {
    static LAST: RefCell<Vec<(Rc<str>, Layout)>> = const { RefCell::new(Vec::new()) };
    /// The one-character strings of the ASCII characters, made once (as CPython's
    /// latin-1 singletons): `s[i]` and `for c in s` allocate nothing for them.
    static ASCII: Vec<Rc<str>> = (0..128u8).map(|b| Rc::from(char::from(b).to_string())).collect();
}

/// The one-character string `c` (shared for an ASCII character).
pub fn char_value(c: char) -> Value {
    if c.is_ascii() {
        if let Ok(Some(s)) = ASCII.try_with(|t| t.get(c as usize).cloned()) {
            return Value::Str(s);
        }
    }
    Value::str(c.encode_utf8(&mut [0u8; 4]))
}

/// `s[a:b]` (character positions, `a <= b <= char_len`) as a string: one copy of the
/// bytes, no list of positions.
pub fn substring(s: &str, layout: &Layout, a: usize, b: usize) -> Value {
    match layout {
        None => Value::str(&s[a..b]),
        Some(ends) => Value::str(&s[ends[a]..ends[b]]),
    }
}

fn measure(s: &str) -> Layout {
    if s.is_ascii() {
        return None;
    }
    let ends = s.char_indices().map(|(i, _)| i);
    Some(ends.chain(std::iter::once(s.len())).collect())
}

/// The layout of `s`, remembered for long strings.
pub fn layout(s: &Rc<str>) -> Layout {
    if s.len() < MIN_LEN {
        return measure(s);
    }
    LAST.with(|c| {
        let Ok(mut c) = c.try_borrow_mut() else {
            return measure(s);
        };
        if let Some((_, l)) = c.iter().find(|(k, _)| Rc::ptr_eq(k, s)) {
            return l.clone();
        }
        let l = measure(s);
        if c.len() == KEEP {
            c.remove(0);
        }
        c.push((s.clone(), l.clone()));
        l
    })
}

/// The number of characters of `s`.
pub fn char_len(s: &Rc<str>) -> usize {
    match layout(s) {
        None => s.len(),
        Some(ends) => ends.len() - 1,
    }
}

/// The characters at the positions `pos` (each < `char_len`), concatenated.
pub fn chars_at(s: &str, layout: &Layout, pos: impl IntoIterator<Item = usize>) -> String {
    let mut out = String::new();
    for i in pos {
        match layout {
            None => out.push_str(&s[i..i + 1]),
            Some(ends) => out.push_str(&s[ends[i]..ends[i + 1]]),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_of_short_long_ascii_and_not() {
        let long: Rc<str> = "é".repeat(40).into();
        let ascii: Rc<str> = "ab".repeat(40).into();
        assert_eq!(char_len(&long), 40);
        assert_eq!(char_len(&ascii), 80);
        assert_eq!(char_len(&Rc::from("aé")), 2);
        let l = layout(&long);
        assert_eq!(chars_at(&long, &l, [0, 39]), "éé");
        assert!(layout(&ascii).is_none());
        // remembered, and the same answer again
        assert_eq!(layout(&long), l);
        // many strings: the oldest are forgotten, answers stay right
        for k in 0..10 {
            let s: Rc<str> = format!("{}ü", "x".repeat(70 + k)).into();
            assert_eq!(char_len(&s), 71 + k);
            assert_eq!(chars_at(&s, &layout(&s), [70 + k]), "ü");
        }
        assert_eq!(char_len(&long), 40);
    }
}
