//! A per-thread cache of large freed tensor buffers. Eager code allocates a fresh
//! output for every op; handing back a just-freed buffer of the same size (still mapped
//! and likely still in cache) avoids the page faults (5-7 us per 4 KiB page here) and
//! cold misses a fresh allocation of many megabytes would take.
//!
//! It holds a whole training step's worth of buffers, not just the last few: what it
//! lets go reaches glibc's malloc, whose dynamic thresholds make that churn costly. Once
//! a buffer of S bytes (S up to 32 MiB) that malloc had mmap'd is freed, blocks up to S
//! come from the brk heap and the heap is trimmed whenever more than 2S lies free at its
//! top; a step that frees its intermediates and allocates them again then returns the
//! top of the heap to the kernel and faults it back in every step (a compiled W8 step
//! after a capture that freed its 2 MiB intermediates: ~2,000 fresh pages a step).

use super::dtype::Elem;
use super::storage::Buffer;
use std::cell::RefCell;

/// Buffers smaller than this go straight back to the allocator (it reuses them well).
const MIN_BYTES: usize = 256 << 10;
/// At most this many buffers are kept (a compiled W8 step then faults in no fresh pages)...
const MAX_BUFFERS: usize = 128;
/// ...holding at most this many bytes together.
const MAX_BYTES: usize = 96 << 20;

#[derive(Default)]
struct Pool {
    bufs: Vec<Buffer>,
    bytes: usize,
}

thread_local! {
    static POOL: RefCell<Pool> = RefCell::new(Pool::default());
}

fn bytes_of(b: &Buffer) -> usize {
    b.capacity().saturating_mul(b.dtype().size())
}

/// True when a request of `bytes` may be served from the pool.
#[inline]
pub fn worth_pooling(bytes: usize) -> bool {
    bytes >= MIN_BYTES
}

/// Keeps a freed buffer for reuse (the oldest ones are released past the caps).
pub fn give(buf: Buffer) {
    let n = bytes_of(&buf);
    if !worth_pooling(n) || n > MAX_BYTES {
        return;
    }
    // `try_with`: during thread teardown the pool may already be gone; then just free.
    let _ = POOL.try_with(|p| {
        let Ok(mut p) = p.try_borrow_mut() else {
            return;
        };
        while !p.bufs.is_empty() && (p.bufs.len() >= MAX_BUFFERS || p.bytes + n > MAX_BYTES) {
            let old = p.bufs.remove(0);
            p.bytes -= bytes_of(&old);
        }
        p.bytes += n;
        p.bufs.push(buf);
    });
}

/// A cached buffer of `T` whose capacity is exactly `cap`, emptied; the most recently
/// freed one first (the likeliest to be in cache).
pub fn take<T: Elem>(cap: usize) -> Option<Vec<T>> {
    POOL.try_with(|p| {
        let mut p = p.try_borrow_mut().ok()?;
        let i = p
            .bufs
            .iter()
            .rposition(|b| b.dtype() == T::DTYPE && b.capacity() == cap)?;
        let b = p.bufs.remove(i);
        p.bytes -= bytes_of(&b);
        let mut v = T::unwrap(b).ok()?;
        v.clear();
        Some(v)
    })
    .ok()
    .flatten()
}

/// Releases every cached buffer of this thread.
pub fn clear() {
    let _ = POOL.try_with(|p| {
        if let Ok(mut p) = p.try_borrow_mut() {
            p.bufs.clear();
            p.bytes = 0;
        }
    });
}
