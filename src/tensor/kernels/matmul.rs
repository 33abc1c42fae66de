//! Matrix multiply: f32 and f64 through the `gemm` crate (any row/column strides, so
//! transposed operands are not copied), batched with broadcast batch dims; int64 by a
//! plain loop.

use super::strided::for_each_offset2;
use crate::error::{ErrorKind, Result};
use crate::tensor::dtype::DType;
use crate::tensor::shape::broadcast_strides;
use crate::tensor::storage::{alloc_filled, alloc_vec};
use crate::tensor::{err, Buffer, Elem, Tensor};
use gemm::Parallelism;

/// The float types multiplied through `gemm` (one code path, monomorphised per type).
pub trait GemmFloat: Elem + Copy + Send + Sync + 'static {
    const ZERO: Self;
    const ONE: Self;
}

impl GemmFloat for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
}

impl GemmFloat for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
}

/// A strided matrix operand: base slice + offset, row and column strides.
#[derive(Clone, Copy)]
pub struct Mat<'a, T = f32> {
    pub data: &'a [T],
    pub offset: usize,
    pub rs: usize,
    pub cs: usize,
}

/// Multiply-adds below which a product runs on the calling thread alone: splitting it
/// costs two packings of the shared operand and a handshake with the team's helper,
/// more than a second thread saves on such small products (W5's 64x256x10 layers:
/// 164k multiply-adds, a few microseconds of single-thread work).
const PARALLEL_MACS: usize = 1 << 19;

/// Multiply-adds per task of a split product: a product splits into about this much
/// work per task (at least one task per team thread), so a descheduled thread holds
/// up only one task of a large product.
const TASK_MACS: usize = 1 << 23;

/// Raw gemm operands shared by the tasks of one split product.
#[derive(Clone, Copy)]
struct Raw<T> {
    dst: *mut T,
    lhs: *const T,
    rhs: *const T,
}

// SAFETY: the tasks of one product read the operands and write disjoint blocks of dst
// (distinct column or row ranges); the pointers outlive the `team::for_each` call.
unsafe impl<T> Sync for Raw<T> {}
unsafe impl<T> Send for Raw<T> {}

/// The destination of a batch of products shared by the tasks that write its blocks.
#[derive(Clone, Copy)]
struct Blocks<T>(*mut T);

// SAFETY: each task writes the distinct blocks of its own products; the pointer outlives
// the `team::for_each` call.
unsafe impl<T> Sync for Blocks<T> {}
unsafe impl<T> Send for Blocks<T> {}

impl<T> Blocks<T> {
    /// The destination `at` elements in.
    ///
    /// # Safety
    /// `at` lies inside the destination's allocation.
    unsafe fn at(self, at: usize) -> *mut T {
        // SAFETY: the caller's guarantee.
        unsafe { self.0.add(at) }
    }
}

/// One single-threaded gemm call of rows `r0..r1` and columns `c0..c1` of the product.
///
/// # Safety
/// As [`gemm_into`], for the whole product; the ranges lie inside `m` x `n`.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_block<T: GemmFloat>(
    raw: Raw<T>,
    (r0, r1): (usize, usize),
    (c0, c1): (usize, usize),
    n: usize,
    k: usize,
    lhs: (usize, usize),
    rhs: (usize, usize),
    acc: bool,
) {
    // SAFETY: the caller's guarantee; the offsets address row r0 / column c0.
    unsafe {
        gemm::gemm(
            r1 - r0,
            c1 - c0,
            k,
            raw.dst.add(r0 * n + c0),
            1,
            n as isize,
            acc,
            raw.lhs.add(r0 * lhs.0),
            lhs.1 as isize,
            lhs.0 as isize,
            raw.rhs.add(c0 * rhs.1),
            rhs.1 as isize,
            rhs.0 as isize,
            if acc { T::ONE } else { T::ZERO },
            T::ONE,
            false,
            false,
            false,
            Parallelism::None,
        );
    }
}

/// How a product of `m` x `n` x `k` splits over the team: (tasks, split the columns).
/// The columns split when `m <= n` (each task then packs the whole lhs, the smaller
/// shared operand), else the rows; blocks are multiples of 16 (the microkernel). A
/// product inside a team task is one call (its parts would run one after another).
fn split_plan(m: usize, n: usize, k: usize) -> (usize, bool) {
    let macs = m.saturating_mul(n).saturating_mul(k);
    let threads = super::team::threads();
    if macs < PARALLEL_MACS || threads < 2 || super::team::in_task() {
        return (1, false);
    }
    let by_cols = m <= n;
    let blocks = if by_cols { n } else { m }.div_ceil(16);
    let tasks = (macs / TASK_MACS).max(threads).min(blocks);
    (tasks.max(1), by_cols)
}

/// The product split into tasks run by the team (one gemm call on a single thread
/// each).
///
/// # Safety
/// As [`gemm_into`] for rows `0..m` (offset into `raw`).
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_split<T: GemmFloat>(
    raw: Raw<T>,
    m: usize,
    n: usize,
    k: usize,
    lhs: (usize, usize),
    rhs: (usize, usize),
    acc: bool,
) {
    let (tasks, by_cols) = split_plan(m, n, k);
    let len = if by_cols { n } else { m };
    let bound = |t: usize| ((len.div_ceil(16) * t / tasks) * 16).min(len);
    let run = |t: usize| {
        let (a, b) = (bound(t), bound(t + 1));
        let (rows, cols) = if by_cols {
            ((0, m), (a, b))
        } else {
            ((a, b), (0, n))
        };
        if a < b {
            // SAFETY: the caller's guarantee; tasks write disjoint blocks of dst.
            unsafe { gemm_block(raw, rows, cols, n, k, lhs, rhs, acc) };
        }
    };
    super::team::for_each(tasks, &run);
}

/// Multiply-adds per row block of a large matmul: ~2^30 (5-15 ms of work on this
/// machine), coarse enough that gemm packs whole panels, fine enough that an interrupt
/// stops the product well within 100 ms.
const CHUNK_FLOPS: usize = 1 << 30;

/// `dst[m, n] (+)= lhs[m, k] @ rhs[k, n]`, dst row-major with row stride `n`.
/// Accumulates into dst when `acc`. Offsets and strides must stay inside the slices
/// (guaranteed by the callers' shape checks); checked here before the unsafe call.
pub fn gemm_f32(
    m: usize,
    n: usize,
    k: usize,
    dst: &mut [f32],
    lhs: Mat,
    rhs: Mat,
    acc: bool,
) -> Result<()> {
    gemm(m, n, k, dst, lhs, rhs, acc)
}

/// [`gemm_f32`] for either float type (the convolution and recurrent kernels' f32 and
/// f64 paths).
pub fn gemm<T: GemmFloat>(
    m: usize,
    n: usize,
    k: usize,
    dst: &mut [T],
    lhs: Mat<T>,
    rhs: Mat<T>,
    acc: bool,
) -> Result<()> {
    if dst.len() < m.saturating_mul(n) {
        return Err(out_of_bounds());
    }
    // SAFETY: dst is valid for writes (and reads, when `acc`) of m * n elements.
    unsafe { gemm_into(m, n, k, dst.as_mut_ptr(), lhs, rhs, acc) }
}

fn out_of_bounds() -> crate::error::Error {
    err(
        ErrorKind::RuntimeError,
        "internal: matmul operand out of bounds",
    )
}

/// [`gemm_f32`] into a raw destination, which may be uninitialised when `!acc`: every
/// one of its m * n elements is written, none is read.
///
/// # Safety
/// `dst` must be valid for writes of `m * n` elements (and initialised when `acc`).
unsafe fn gemm_into<T: GemmFloat>(
    m: usize,
    n: usize,
    k: usize,
    dst: *mut T,
    lhs: Mat<T>,
    rhs: Mat<T>,
    acc: bool,
) -> Result<()> {
    if m == 0 || n == 0 {
        return Ok(());
    }
    let last = |x: &Mat<T>, r: usize, c: usize| {
        x.offset + r.saturating_sub(1) * x.rs + c.saturating_sub(1) * x.cs
    };
    if k > 0 && (last(&lhs, m, k) >= lhs.data.len() || last(&rhs, k, n) >= rhs.data.len()) {
        return Err(out_of_bounds());
    }
    if k == 0 {
        if !acc {
            // SAFETY: the caller guarantees m * n writable elements.
            unsafe { std::ptr::write_bytes(dst, 0, m * n) };
        }
        return Ok(());
    }
    // Large products run in row blocks; between blocks the running engine's interrupt
    // flag and deadline are polled (`poll_kernel`), so a huge matmul can be stopped.
    let rows = (CHUNK_FLOPS / n.saturating_mul(k).max(1)).clamp(16, m.max(16));
    let mut r0 = 0;
    while r0 < m {
        let r1 = m.min(r0 + rows);
        if r0 > 0 {
            crate::tensor::cancel::poll_kernel()?;
        }
        // SAFETY: every address gemm touches is inside the buffers: rows r0..r1 (< m),
        // cols 0..n of dst with strides (n, 1) (the caller's guarantee); lhs/rhs are
        // checked by `last` above. With `acc` false gemm writes dst without reading it.
        unsafe {
            let raw = Raw {
                dst: dst.add(r0 * n),
                lhs: lhs.data.as_ptr().add(lhs.offset + r0 * lhs.rs),
                rhs: rhs.data.as_ptr().add(rhs.offset),
            };
            gemm_split(raw, r1 - r0, n, k, (lhs.rs, lhs.cs), (rhs.rs, rhs.cs), acc);
        }
        r0 = r1;
    }
    Ok(())
}

/// `a [m, k] @ b [k, n] + bias [n]` of f32 into `dst` (m * n, row-major): each row
/// starts as the bias and gemm accumulates the product onto it (no separate pass over
/// the product). False (dst untouched) when the operands are not of that form.
pub fn matmul_bias_into(dst: &mut [f32], a: &Tensor, b: &Tensor, bias: &Tensor) -> Result<bool> {
    let f32s = [a, b, bias].iter().all(|t| t.dtype() == DType::F32);
    if !f32s || a.ndim() != 2 || b.ndim() != 2 || bias.ndim() != 1 {
        return Ok(false);
    }
    let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
    if b.shape()[0] != k || bias.shape()[0] != n || dst.len() != m.saturating_mul(n) {
        return Ok(false);
    }
    {
        let bb = bias.storage().borrow();
        let data = <f32 as crate::tensor::Elem>::slice(&bb).unwrap_or(&[]);
        let step = bias.strides()[0];
        // A contiguous bias (every Linear's) is copied row by row.
        let run = (step == 1)
            .then(|| data.get(bias.offset()..bias.offset() + n))
            .flatten();
        for row in dst.chunks_exact_mut(n.max(1)) {
            match run {
                Some(src) => row.copy_from_slice(src),
                None => {
                    for (j, d) in row.iter_mut().enumerate() {
                        *d = data.get(bias.offset() + j * step).copied().unwrap_or(0.0);
                    }
                }
            }
        }
    }
    let ba = a.storage().borrow();
    let bb = b.storage().borrow();
    fn mat<'a>(t: &Tensor, data: &'a [f32]) -> Mat<'a> {
        Mat {
            data,
            offset: t.offset(),
            rs: t.strides()[0],
            cs: t.strides()[1],
        }
    }
    let da = <f32 as crate::tensor::Elem>::slice(&ba).unwrap_or(&[]);
    let db = <f32 as crate::tensor::Elem>::slice(&bb).unwrap_or(&[]);
    gemm_f32(m, n, k, dst, mat(a, da), mat(b, db), true)?;
    Ok(true)
}

/// `dst [k, n] += a [m, k]^T @ g [m, n]` into `dst`'s own buffer (a weight gradient
/// summed straight into the leaf's running sum): all f32 matrices, `dst` unique and
/// contiguous. False (nothing written) when the operands are not of that form.
pub fn matmul_tn_acc(dst: &Tensor, a: &Tensor, g: &Tensor) -> Result<bool> {
    let f32s = [dst, a, g]
        .iter()
        .all(|t| t.dtype() == DType::F32 && t.ndim() == 2);
    if !f32s || !dst.is_whole_unique() {
        return Ok(false);
    }
    let (m, k, n) = (a.shape()[0], a.shape()[1], g.shape()[1]);
    if g.shape()[0] != m || dst.shape() != [k, n] {
        return Ok(false);
    }
    let (Some(mut bd), Some(ba), Some(bg)) = (
        dst.storage().try_borrow_mut(),
        a.storage().try_borrow(),
        g.storage().try_borrow(),
    ) else {
        return Ok(false);
    };
    let (Buffer::F32(d), Buffer::F32(da), Buffer::F32(dg)) = (&mut *bd, &*ba, &*bg) else {
        return Ok(false);
    };
    let lhs = Mat {
        data: da,
        offset: a.offset(),
        rs: a.strides()[1],
        cs: a.strides()[0],
    };
    let rhs = Mat {
        data: dg,
        offset: g.offset(),
        rs: g.strides()[0],
        cs: g.strides()[1],
    };
    gemm_f32(k, n, m, d, lhs, rhs, true)?;
    Ok(true)
}

/// Batched matmul of `a [..., m, k]` and `b [..., k, n]` (both >= 2-D, same dtype,
/// batch dims already broadcast to `batch`).
pub fn bmm(a: &Tensor, b: &Tensor, batch: &[usize]) -> Result<Tensor> {
    let (na, nb) = (a.ndim(), b.ndim());
    let (m, k, n) = (a.shape()[na - 2], a.shape()[na - 1], b.shape()[nb - 1]);
    let sa = broadcast_strides(&a.shape()[..na - 2], &a.strides()[..na - 2], batch);
    let sb = broadcast_strides(&b.shape()[..nb - 2], &b.strides()[..nb - 2], batch);
    let mut shape: Vec<usize> = batch.to_vec();
    shape.extend([m, n]);
    match a.dtype() {
        DType::I64 => bmm_i64(a, b, batch, &sa, &sb, &shape, (m, k, n)),
        DType::F32 => bmm_float::<f32>(a, b, batch, &sa, &sb, &shape, (m, k, n)),
        DType::F64 => bmm_float::<f64>(a, b, batch, &sa, &sb, &shape, (m, k, n)),
        d @ (DType::I32 | DType::U8 | DType::Bool) => Err(err(
            ErrorKind::RuntimeError,
            format!("internal: bmm on {}", d.name()),
        )),
    }
}

/// Batched float matmul through `gemm` (each batch's block split over the team).
fn bmm_float<T: GemmFloat>(
    a: &Tensor,
    b: &Tensor,
    batch: &[usize],
    sa: &[usize],
    sb: &[usize],
    shape: &[usize],
    (m, k, n): (usize, usize, usize),
) -> Result<Tensor> {
    let (na, nb) = (a.ndim(), b.ndim());
    let nbatch: usize = batch.iter().product();
    let total = crate::tensor::shape::numel(shape)?;
    // Not zero-filled: gemm writes every element of each batch's block (k == 0 writes
    // zeros), and the length is set only once all blocks were written.
    let mut out = alloc_vec::<T>(total)?;
    {
        let dst = out.spare_capacity_mut();
        let dst_len = dst.len();
        let dst = dst.as_mut_ptr().cast::<T>();
        let ba = a.storage().borrow();
        let bb = b.storage().borrow();
        let da = T::slice(&ba).unwrap_or(&[]);
        let db = T::slice(&bb).unwrap_or(&[]);
        let (ars, acs) = (a.strides()[na - 2], a.strides()[na - 1]);
        let (brs, bcs) = (b.strides()[nb - 2], b.strides()[nb - 1]);
        if rows_collapse(batch, sa, sb, m, ars) && nbatch * m * n <= dst_len {
            // b is shared by every batch entry and a's batch rows follow each other
            // with its row stride (`x[B, T, D] @ W.T`): one product of nbatch * m rows,
            // b packed once.
            let lhs = Mat {
                data: da,
                offset: a.offset(),
                rs: ars,
                cs: acs,
            };
            let rhs = Mat {
                data: db,
                offset: b.offset(),
                rs: brs,
                cs: bcs,
            };
            // SAFETY: dst has capacity for all nbatch * m * n elements (checked above).
            unsafe { gemm_into(nbatch * m, n, k, dst, lhs, rhs, false)? };
            // SAFETY: all `total` = nbatch * m * n elements were written above.
            unsafe { out.set_len(total) };
            return Ok(Tensor::from_vec(out, shape));
        }
        let mut offs = Vec::with_capacity(nbatch);
        for_each_offset2(batch, sa, a.offset(), sb, b.offset(), |oa, ob| {
            offs.push((oa, ob))
        });
        if offs.len() != nbatch || nbatch * m * n > dst_len {
            return Err(out_of_bounds());
        }
        let blocks = Blocks(dst);
        // Product i: block i of dst from the operands at `offs[i]`.
        let one = |i: usize| -> Result<()> {
            let (oa, ob) = offs[i];
            let lhs = Mat {
                data: da,
                offset: oa,
                rs: ars,
                cs: acs,
            };
            let rhs = Mat {
                data: db,
                offset: ob,
                rs: brs,
                cs: bcs,
            };
            // SAFETY: block i lies inside dst's capacity (nbatch * m * n, checked above),
            // and distinct products write distinct blocks.
            unsafe { gemm_into(m, n, k, blocks.at(i * m * n), lhs, rhs, false) }
        };
        let tasks = batch_tasks(nbatch, m, n, k);
        if tasks > 1 {
            // A product this small fails only its bounds check (it polls no interrupt).
            let failed = std::sync::atomic::AtomicBool::new(false);
            let run = |t: usize| {
                let range = nbatch * t / tasks..nbatch * (t + 1) / tasks;
                if range.into_iter().try_for_each(one).is_err() {
                    failed.store(true, std::sync::atomic::Ordering::Relaxed);
                }
            };
            super::team::for_each(tasks, &run);
            if failed.into_inner() {
                return Err(out_of_bounds());
            }
        } else {
            (0..nbatch).try_for_each(one)?;
        }
    }
    // SAFETY: all `total` = nbatch * m * n elements were written above.
    unsafe { out.set_len(total) };
    Ok(Tensor::from_vec(out, shape))
}

/// How many team tasks a batch of `nbatch` products of `m` x `n` x `k` splits into: the
/// products themselves when each is too small to split on its own (attention's per-head
/// products) but together are worth a second thread; else 1 (each product splits
/// over the team as it runs, or the whole batch is too small).
fn batch_tasks(nbatch: usize, m: usize, n: usize, k: usize) -> usize {
    let macs = m.saturating_mul(n).saturating_mul(k);
    let threads = super::team::threads();
    if nbatch < 2 || threads < 2 || macs >= PARALLEL_MACS {
        return 1;
    }
    if macs.saturating_mul(nbatch) < PARALLEL_MACS {
        return 1;
    }
    let per_task = (TASK_MACS / macs.max(1)).max(1);
    nbatch.div_ceil(per_task).max(threads).min(nbatch)
}

/// Whether a batched product is one product of `batch.product() * m` rows: b is
/// broadcast over every batch dim (`sb` all zero) and a's batch dims step over whole
/// `m`-row blocks of its row stride `ars` (a contiguous `[..., m, k]`, or any layout
/// whose batch rows are evenly spaced).
fn rows_collapse(batch: &[usize], sa: &[usize], sb: &[usize], m: usize, ars: usize) -> bool {
    if m < 2 || ars == 0 || sb.iter().any(|&s| s != 0) {
        return false;
    }
    let mut expected = ars * m;
    for (&size, &stride) in batch.iter().zip(sa).rev() {
        if size != 1 && stride != expected {
            return false;
        }
        expected = expected.saturating_mul(size);
    }
    true
}

/// Batched int64 matmul: a plain loop with wrapping arithmetic (as torch's).
fn bmm_i64(
    a: &Tensor,
    b: &Tensor,
    batch: &[usize],
    sa: &[usize],
    sb: &[usize],
    shape: &[usize],
    (m, k, n): (usize, usize, usize),
) -> Result<Tensor> {
    let total = crate::tensor::shape::numel(shape)?;
    let mut out = alloc_filled(total, 0i64)?;
    let ba = a.storage().borrow();
    let bb = b.storage().borrow();
    let da = <i64 as crate::tensor::Elem>::slice(&ba).unwrap_or(&[]);
    let db = <i64 as crate::tensor::Elem>::slice(&bb).unwrap_or(&[]);
    let (na, nb) = (a.ndim(), b.ndim());
    let (ars, acs) = (a.strides()[na - 2], a.strides()[na - 1]);
    let (brs, bcs) = (b.strides()[nb - 2], b.strides()[nb - 1]);
    let mut bi = 0;
    let mut res = Ok(());
    for_each_offset2(batch, sa, a.offset(), sb, b.offset(), |oa, ob| {
        for i in 0..m {
            // The plain loop polls the engine's interrupt and deadline once per row.
            if res.is_ok() {
                res = crate::tensor::cancel::poll_kernel();
            }
            if res.is_err() {
                return;
            }
            for j in 0..n {
                let mut s = 0i64;
                for p in 0..k {
                    s = s.wrapping_add(
                        da[oa + i * ars + p * acs].wrapping_mul(db[ob + p * brs + j * bcs]),
                    );
                }
                out[bi * m * n + i * n + j] = s;
            }
        }
        bi += 1;
    });
    res?;
    Ok(Tensor::from_vec(out, shape))
}
