//! Tensor storage: a typed buffer shared by views, with a version counter for
//! autograd's in-place checks, and the allocation cap that turns huge shapes into
//! `MemoryError` instead of an abort.

use super::dtype::{DType, Elem};
use crate::error::{Error, ErrorKind, Result};
use std::cell::{Cell, Ref, RefCell, RefMut};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A closed set of typed buffers.
#[derive(Debug, Clone)]
pub enum Buffer {
    F32(Vec<f32>),
    I64(Vec<i64>),
    Bool(Vec<bool>),
}

impl Buffer {
    pub fn dtype(&self) -> DType {
        match self {
            Buffer::F32(_) => DType::F32,
            Buffer::I64(_) => DType::I64,
            Buffer::Bool(_) => DType::Bool,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Buffer::F32(v) => v.len(),
            Buffer::I64(v) => v.len(),
            Buffer::Bool(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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

    pub fn version(&self) -> u64 {
        self.version.get()
    }
}

/// Default allocation cap: 16 GiB.
pub const DEFAULT_MAX_BYTES: usize = 16 << 30;

static MAX_BYTES: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_BYTES);

/// Set the largest single tensor allocation, in bytes (for an embedding host).
pub fn set_max_alloc_bytes(bytes: usize) {
    MAX_BYTES.store(bytes, Ordering::Relaxed);
}

pub fn max_alloc_bytes() -> usize {
    MAX_BYTES.load(Ordering::Relaxed)
}

fn memory_error(n: usize, dtype: DType) -> Error {
    Error::new(
        ErrorKind::MemoryError,
        format!(
            "cannot allocate a tensor of {} {} elements ({} bytes; the limit is {} bytes)",
            n,
            dtype.name(),
            n.saturating_mul(dtype.size()),
            max_alloc_bytes()
        ),
        None,
    )
}

/// An empty Vec with room for `n` elements, or `MemoryError` (cap or allocator failure).
pub fn alloc_vec<T: Elem>(n: usize) -> Result<Vec<T>> {
    let bytes = n.checked_mul(T::DTYPE.size());
    match bytes {
        Some(b) if b <= max_alloc_bytes() => {}
        _ => return Err(memory_error(n, T::DTYPE)),
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
    if n.checked_mul(8).is_none_or(|b| b > max_alloc_bytes()) {
        return Err(memory_error(n, DType::I64));
    }
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| memory_error(n, DType::I64))?;
    Ok(v)
}
