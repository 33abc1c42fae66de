//! Container growth under the element cap (`Limits::max_container_len`) and the memory
//! cap (`Limits::max_memory`): lists, tuples, dicts, sets and strings grow only through
//! these checks, which raise `MemoryError` past a cap or when the allocator refuses,
//! instead of aborting the host process.
//!
//! Memory accounting is approximate and cheap: each growth adds the bytes it reserved to
//! a thread-local counter (no per-element work, no atomics). Frees are not counted;
//! instead, when the counter plus the live tensor bytes passes the cap, the live
//! containers are measured (`gc::live_container_bytes`, a walk over the collector's
//! registry) and the counter restarts from that figure. Only when the measurement is
//! still over the cap is `MemoryError` raised. The registry cannot see values held only
//! by a running frame (a local `s = s + "x" * 1000000`): a measurement that passes marks
//! the count as unseen, and the interpreter's next limits check (every few operations
//! while a memory cap is set) measures again with its value stack as roots.

use super::value::{DictMap, Key, Value};
use super::{err, R};
use crate::error::ErrorKind;
use std::cell::Cell;

/// Default cap on the elements of one list/tuple/dict (bytes for a str): 2^28.
pub const DEFAULT_MAX_CONTAINER_LEN: usize = 1 << 28;

/// Approximate bytes of one dict or set entry (key, value, hash and index slot).
pub const MAP_ENTRY_BYTES: usize = 64;

thread_local! {
    static MAX_LEN: Cell<usize> = const { Cell::new(DEFAULT_MAX_CONTAINER_LEN) };
    /// The memory cap in bytes (`usize::MAX`: none).
    static MEM_CAP: Cell<usize> = const { Cell::new(usize::MAX) };
    /// Container bytes at the last measurement plus the growth since.
    static MEM_USED: Cell<usize> = const { Cell::new(0) };
    /// A measurement over the registry alone passed since the last one with roots.
    static UNSEEN: Cell<bool> = const { Cell::new(false) };
}

/// Whether a memory cap is set on this thread.
pub fn has_memory_cap() -> bool {
    MEM_CAP.with(Cell::get) != usize::MAX
}

/// After a measurement that could not see the running frames' locals: measures again
/// with `roots` (the interpreter's value stack) and raises `MemoryError` when the total
/// is over the cap. Cheap when no such measurement is pending.
#[inline]
pub fn remeasure_roots(roots: &[Value]) -> R<()> {
    if !UNSEEN.with(Cell::get) {
        return Ok(());
    }
    let r = remeasure(MEM_CAP.with(Cell::get), 0, roots);
    UNSEEN.with(|u| u.set(false));
    r
}

/// Replaces the current thread's memory cap (`usize::MAX`: none) and starts its count
/// afresh; returns the previous cap.
pub fn set_max_memory(cap: usize) -> usize {
    MEM_USED.with(|u| u.set(0));
    UNSEEN.with(|u| u.set(false));
    MEM_CAP.with(|m| m.replace(cap))
}

/// Counts `bytes` of new container or string memory; `building` is the size of the
/// container being grown and `items` what it holds (it may not be reachable from a
/// tracked container yet).
#[inline]
fn charge(bytes: usize, building: usize, items: &[Value]) -> R<()> {
    let cap = MEM_CAP.with(Cell::get);
    if cap == usize::MAX {
        return Ok(());
    }
    let used = MEM_USED.with(|u| {
        let n = u.get().saturating_add(bytes);
        u.set(n);
        n
    });
    if used.saturating_add(crate::tensor::storage::live_bytes()) <= cap {
        return Ok(());
    }
    remeasure(cap, building, items)
}

/// The counter passed the cap: measure what is really alive.
#[cold]
#[inline(never)]
fn remeasure(cap: usize, building: usize, items: &[Value]) -> R<()> {
    let live = super::gc::live_container_bytes(items).saturating_add(building);
    MEM_USED.with(|u| u.set(live));
    let tensors = crate::tensor::storage::live_bytes();
    let over = live.saturating_add(tensors) > cap;
    UNSEEN.with(|u| u.set(!over));
    if over {
        return Err(err(
            ErrorKind::MemoryError,
            format!(
                "memory limit of {cap} bytes exceeded (about {live} bytes of containers and \
                 strings, {tensors} bytes of tensors)"
            ),
        ));
    }
    Ok(())
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
pub fn reserve(v: &mut Vec<Value>, additional: usize, what: &str) -> R<()> {
    checked_total(v.len(), additional, what)?;
    let before = v.capacity();
    v.try_reserve(additional).map_err(|_| {
        err(
            ErrorKind::MemoryError,
            format!("out of memory growing a {what}"),
        )
    })?;
    let size = std::mem::size_of::<Value>();
    charge((v.capacity() - before) * size, v.capacity() * size, v)
}

/// Room for `additional` more entries in a dict or set, checked and charged as
/// [`reserve`].
pub fn reserve_map(m: &mut DictMap, additional: usize, what: &str) -> R<()> {
    checked_total(m.len(), additional, what)?;
    let before = m.capacity();
    if before - m.len() >= additional {
        return Ok(());
    }
    m.try_reserve(additional).map_err(|_| {
        err(
            ErrorKind::MemoryError,
            format!("out of memory growing a {what}"),
        )
    })?;
    charge(
        (m.capacity() - before) * MAP_ENTRY_BYTES,
        m.capacity() * MAP_ENTRY_BYTES,
        &[],
    )
}

/// `m.insert(k, v)` under the caps (`d[k] = v`, `set.add`, `setdefault`).
#[inline]
pub fn map_insert(m: &mut DictMap, k: Key, v: Value, what: &str) -> R<()> {
    if (m.len() == m.capacity() || m.len() >= max_len()) && !m.contains_key(&k) {
        reserve_map(m, 1, what)?;
    }
    m.insert(k, v);
    Ok(())
}

/// `m.extend(other)` under the caps (`dict.update`, `set.update`).
pub fn map_extend(m: &mut DictMap, other: DictMap, what: &str) -> R<()> {
    let new = other.keys().filter(|k| !m.contains_key(*k)).count();
    reserve_map(m, new, what)?;
    m.extend(other);
    Ok(())
}

/// An empty Vec with room for `n` elements (checked as [`reserve`]).
pub fn vec_with_capacity(n: usize, what: &str) -> R<Vec<Value>> {
    let mut v = Vec::new();
    reserve(&mut v, n, what)?;
    Ok(v)
}

/// `v.push(x)` under the cap (the growth path of comprehensions, `append`, `list(it)`).
#[inline]
pub fn push(v: &mut Vec<Value>, x: Value, what: &str) -> R<()> {
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
    charge(s.capacity(), s.capacity(), &[])?;
    Ok(s)
}

/// `s.push_str(t)` under the cap.
pub fn push_str(s: &mut String, t: &str) -> R<()> {
    checked_total(s.len(), t.len(), "str")?;
    let before = s.capacity();
    s.try_reserve(t.len())
        .map_err(|_| err(ErrorKind::MemoryError, "out of memory building a str"))?;
    charge(s.capacity() - before, s.capacity(), &[])?;
    s.push_str(t);
    Ok(())
}
