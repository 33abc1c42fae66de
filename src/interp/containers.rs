//! Container growth under the element cap (`Limits::max_container_len`): lists, tuples,
//! dicts and strings grow only through these checks, which raise `MemoryError` past the
//! cap or when the allocator refuses, instead of aborting the host process.

use super::{err, R};
use crate::error::ErrorKind;
use std::cell::Cell;

/// Default cap on the elements of one list/tuple/dict (bytes for a str): 2^28.
pub const DEFAULT_MAX_CONTAINER_LEN: usize = 1 << 28;

thread_local! {
    static MAX_LEN: Cell<usize> = const { Cell::new(DEFAULT_MAX_CONTAINER_LEN) };
}

/// The current thread's container cap.
pub fn max_len() -> usize {
    MAX_LEN.with(|m| m.get())
}

/// Replaces the current thread's container cap; returns the previous one.
pub fn set_max_len(n: usize) -> usize {
    MAX_LEN.with(|m| m.replace(n))
}

fn too_large(n: usize, what: &str) -> super::Exc {
    err(
        ErrorKind::MemoryError,
        format!(
            "{what} of {n} elements is larger than the container limit of {} elements",
            max_len()
        ),
    )
}

/// `MemoryError` when a container of `what` would hold `n` elements (or bytes).
#[inline]
pub fn check_len(n: usize, what: &str) -> R<()> {
    if n > max_len() {
        return Err(too_large(n, what));
    }
    Ok(())
}

/// The total of `a` and `b` elements, checked against the cap (concatenation).
pub fn checked_total(a: usize, b: usize, what: &str) -> R<usize> {
    let n = a
        .checked_add(b)
        .ok_or_else(|| too_large(usize::MAX, what))?;
    check_len(n, what)?;
    Ok(n)
}

/// Room for `additional` more elements in `v`, checked against the cap and reserved
/// without aborting when the allocator fails.
pub fn reserve<T>(v: &mut Vec<T>, additional: usize, what: &str) -> R<()> {
    checked_total(v.len(), additional, what)?;
    v.try_reserve(additional).map_err(|_| {
        err(
            ErrorKind::MemoryError,
            format!("out of memory growing a {what}"),
        )
    })
}

/// An empty Vec with room for `n` elements (checked as [`reserve`]).
pub fn vec_with_capacity<T>(n: usize, what: &str) -> R<Vec<T>> {
    let mut v = Vec::new();
    reserve(&mut v, n, what)?;
    Ok(v)
}

/// `v.push(x)` under the cap (the growth path of comprehensions, `append`, `list(it)`).
#[inline]
pub fn push<T>(v: &mut Vec<T>, x: T, what: &str) -> R<()> {
    if v.len() >= max_len() {
        return Err(too_large(v.len().saturating_add(1), what));
    }
    if v.len() == v.capacity() {
        reserve(v, 1, what)?;
    }
    v.push(x);
    Ok(())
}

/// An empty String with room for `n` bytes (checked against the cap).
pub fn string_with_capacity(n: usize) -> R<String> {
    check_len(n, "str")?;
    let mut s = String::new();
    s.try_reserve(n)
        .map_err(|_| err(ErrorKind::MemoryError, "out of memory building a str"))?;
    Ok(s)
}

/// `s.push_str(t)` under the cap.
pub fn push_str(s: &mut String, t: &str) -> R<()> {
    checked_total(s.len(), t.len(), "str")?;
    s.try_reserve(t.len())
        .map_err(|_| err(ErrorKind::MemoryError, "out of memory building a str"))?;
    s.push_str(t);
    Ok(())
}
