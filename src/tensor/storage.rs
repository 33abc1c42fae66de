//! Tensor storage: a typed buffer shared by views, with a version counter for
//! autograd's in-place checks, and the allocation cap that turns huge shapes into
//! `MemoryError` instead of an abort.

use super::dtype::{DType, Elem};
use crate::error::{Error, ErrorKind, Result};
use std::cell::{Cell, Ref, RefCell, RefMut};

/// A closed set of typed buffers.
#[derive(Debug, Clone)]
pub enum Buffer {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    U8(Vec<u8>),
    Bool(Vec<bool>),
}

/// `match` on a buffer with the same code for every element type: `each!(b, v => e)`
/// binds `v` to the Vec inside `b` (by reference when `b` is a reference).
macro_rules! each_buffer {
    ($b:expr, $v:ident => $e:expr) => {
        match $b {
            Buffer::F32($v) => $e,
            Buffer::F64($v) => $e,
            Buffer::I32($v) => $e,
            Buffer::I64($v) => $e,
            Buffer::U8($v) => $e,
            Buffer::Bool($v) => $e,
        }
    };
}
pub(crate) use each_buffer;

impl Buffer {
    pub fn dtype(&self) -> DType {
        match self {
            Buffer::F32(_) => DType::F32,
            Buffer::F64(_) => DType::F64,
            Buffer::I32(_) => DType::I32,
            Buffer::I64(_) => DType::I64,
            Buffer::U8(_) => DType::U8,
            Buffer::Bool(_) => DType::Bool,
        }
    }

    pub fn len(&self) -> usize {
        each_buffer!(self, v => v.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Elements the buffer can hold without reallocating.
    pub fn capacity(&self) -> usize {
        each_buffer!(self, v => v.capacity())
    }
}

/// The memory behind one or more tensors (views share it).
#[derive(Debug)]
pub struct Storage {
    buf: RefCell<Buffer>,
    version: Cell<u64>,
}

impl Storage {
    pub fn new(buf: Buffer) -> Storage {
        live_add(buf_bytes(&buf));
        Storage {
            buf: RefCell::new(buf),
            version: Cell::new(0),
        }
    }

    pub fn dtype(&self) -> DType {
        self.buf.borrow().dtype()
    }

    /// Shared read access. Callers never hold it across another tensor call.
    pub fn borrow(&self) -> Ref<'_, Buffer> {
        self.buf.borrow()
    }

    /// Write access; bumps the version counter (every in-place write is a new version).
    pub fn borrow_mut(&self) -> RefMut<'_, Buffer> {
        self.version.set(self.version.get().wrapping_add(1));
        self.buf.borrow_mut()
    }

    /// [`borrow`](Self::borrow), or `None` while the buffer is being written.
    pub fn try_borrow(&self) -> Option<Ref<'_, Buffer>> {
        self.buf.try_borrow().ok()
    }

    /// [`borrow_mut`](Self::borrow_mut) (bumping the version), or `None` while the
    /// buffer is borrowed.
    pub fn try_borrow_mut(&self) -> Option<RefMut<'_, Buffer>> {
        let b = self.buf.try_borrow_mut().ok()?;
        self.version.set(self.version.get().wrapping_add(1));
        Some(b)
    }

    pub fn version(&self) -> u64 {
        self.version.get()
    }

    /// Exchanges the buffers of two storages of the same dtype and length (an O(1)
    /// write of one into the other when the other's old contents are not needed);
    /// bumps both versions. False (nothing changed) when they differ or are borrowed.
    pub fn swap_buffers(&self, other: &Storage) -> bool {
        let (Ok(mut a), Ok(mut b)) = (self.buf.try_borrow_mut(), other.buf.try_borrow_mut()) else {
            return false;
        };
        if a.dtype() != b.dtype() || a.len() != b.len() {
            return false;
        }
        std::mem::swap(&mut *a, &mut *b);
        self.version.set(self.version.get().wrapping_add(1));
        other.version.set(other.version.get().wrapping_add(1));
        true
    }
}

/// Default allocation cap: 16 GiB.
pub const DEFAULT_MAX_BYTES: usize = 16 << 30;

/// The allocation caps of the current thread (an embedding engine sets its own for the
/// duration of each run and restores the previous ones after).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocLimits {
    /// The largest single tensor allocation, in bytes.
    pub max_bytes: usize,
    /// The most bytes of tensor storage alive at once on this thread.
    pub max_live_bytes: usize,
}

thread_local! {
    static LIMITS: Cell<AllocLimits> = const {
        Cell::new(AllocLimits {
            max_bytes: DEFAULT_MAX_BYTES,
            max_live_bytes: usize::MAX,
        })
    };
    /// Bytes held by live `Storage`s created on this thread.
    static LIVE: Cell<usize> = const { Cell::new(0) };
}

fn buf_bytes(b: &Buffer) -> usize {
    b.len().saturating_mul(b.dtype().size())
}

fn live_add(n: usize) {
    LIVE.with(|l| l.set(l.get().saturating_add(n)));
}

impl Drop for Storage {
    fn drop(&mut self) {
        let buf = self.buf.get_mut();
        let n = buf_bytes(buf);
        let _ = LIVE.try_with(|l| l.set(l.get().saturating_sub(n)));
        if super::pool::worth_pooling(n) {
            super::pool::give(std::mem::replace(buf, Buffer::F32(Vec::new())));
        }
    }
}

/// The current thread's allocation caps.
pub fn alloc_limits() -> AllocLimits {
    LIMITS.with(|l| l.get())
}

/// Replaces the current thread's allocation caps.
pub fn set_alloc_limits(limits: AllocLimits) {
    LIMITS.with(|l| l.set(limits));
}

/// Bytes of tensor storage currently alive on this thread.
pub fn live_bytes() -> usize {
    LIVE.with(|l| l.get())
}

/// Set the largest single tensor allocation, in bytes, for the current thread (for
/// tests: `internals`; embedders set `Limits`).
#[cfg(feature = "internals")]
pub fn set_max_alloc_bytes(bytes: usize) {
    LIMITS.with(|l| {
        let mut c = l.get();
        c.max_bytes = bytes;
        l.set(c)
    });
}

/// The largest single tensor allocation, in bytes, on this thread (`internals`).
#[cfg(feature = "internals")]
pub fn max_alloc_bytes() -> usize {
    alloc_limits().max_bytes
}

/// True when `bytes` more may be allocated under both caps.
fn fits(bytes: usize) -> bool {
    let l = alloc_limits();
    bytes <= l.max_bytes && live_bytes().saturating_add(bytes) <= l.max_live_bytes
}

fn memory_error(n: usize, dtype: DType) -> Error {
    let bytes = n.saturating_mul(dtype.size());
    let l = alloc_limits();
    let over_live = live_bytes().saturating_add(bytes) > l.max_live_bytes;
    let msg = if bytes <= l.max_bytes && n.checked_mul(dtype.size()).is_some() && over_live {
        format!(
            "cannot allocate a tensor of {} {} elements ({} bytes): {} bytes of tensors are alive and the limit is {} bytes",
            n,
            dtype.name(),
            bytes,
            live_bytes(),
            l.max_live_bytes
        )
    } else {
        format!(
            "cannot allocate a tensor of {} {} elements ({} bytes; the limit is {} bytes)",
            n,
            dtype.name(),
            bytes,
            l.max_bytes
        )
    };
    Error::new(ErrorKind::MemoryError, msg, None)
}

/// An empty Vec with room for `n` elements, or `MemoryError` (cap or allocator failure).
pub fn alloc_vec<T: Elem>(n: usize) -> Result<Vec<T>> {
    let bytes = n.checked_mul(T::DTYPE.size());
    match bytes {
        Some(b) if fits(b) => {}
        _ => return Err(memory_error(n, T::DTYPE)),
    }
    if let Some(v) = bytes
        .filter(|&b| super::pool::worth_pooling(b))
        .and_then(|_| super::pool::take(n))
    {
        return Ok(v);
    }
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| memory_error(n, T::DTYPE))?;
    Ok(v)
}

/// A Vec of `n` copies of `x`.
pub fn alloc_filled<T: Elem>(n: usize, x: T) -> Result<Vec<T>> {
    let mut v = alloc_vec(n)?;
    v.resize(n, x);
    Ok(v)
}

/// Collect an exact-size iterator into a capped allocation.
pub fn collect_vec<T: Elem>(n: usize, it: impl Iterator<Item = T>) -> Result<Vec<T>> {
    let mut v = alloc_vec(n)?;
    v.extend(it.take(n));
    Ok(v)
}

/// An empty Vec of storage offsets with room for `n`, under the same cap.
pub fn alloc_offsets(n: usize) -> Result<Vec<usize>> {
    if n.checked_mul(8).is_none_or(|b| !fits(b)) {
        return Err(memory_error(n, DType::I64));
    }
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| memory_error(n, DType::I64))?;
    Ok(v)
}
