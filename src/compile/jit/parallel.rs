//! Running a compiled kernel: view validation, then the outermost dimension split into
//! tasks for the threads of the kernels' team (`tensor::kernels::team`: the caller and
//! spinning helpers, cheaper per region than waking rayon's workers) above a size
//! threshold (full reductions combine per-task partials in order). There are several
//! tasks per thread, of about `TASK_ELEMENTS` each: on a shared machine a thread that is
//! descheduled then holds up only its current task, the others claim the rest.

use crate::compile::jit::consts::Splat4;
use crate::compile::jit::kernel::{Access, ReduceOp};
use crate::compile::jit::views::{check_run, BufView, BufViewMut};
use crate::compile::jit::{CompiledKernel, KernelArgs, KernelFn};
use crate::error::{Error, ErrorKind, Result};
use crate::tensor::kernels::team;
use smallvec::SmallVec;
use std::sync::atomic::{AtomicI32, Ordering};

/// Index spaces smaller than this run on the calling thread.
pub const PARALLEL_THRESHOLD: usize = 1 << 16;

/// Index-space elements per task (256 KiB of f32 per buffer: within a core's L2; at 4M
/// elements 64 tasks, whose scheduling costs stay far below the kernel's time).
const TASK_ELEMENTS: usize = 1 << 16;

/// The number of tasks `dim0` rows of `total` elements are split into.
fn task_count(dim0: usize, total: usize, threads: usize) -> usize {
    (total / TASK_ELEMENTS).max(threads).min(dim0.max(1))
}

/// The raw argument arrays of one run; shared read-only by the worker threads.
/// Inline up to typical sizes: a small kernel's run allocates nothing.
struct Plan {
    ptrs: SmallVec<[*mut f32; 8]>,
    extents: SmallVec<[i64; 6]>,
    strides: SmallVec<[i64; 32]>,
    consts: *const Splat4,
}

// SAFETY: the pointers refer to buffers borrowed for the whole `run` call; threads write
// disjoint elements (distinct dim-0 ranges of non-overlapping outputs, or their own
// partial-result slot), so sharing the plan across threads is sound.
unsafe impl Sync for Plan {}
unsafe impl Send for Plan {}

impl Plan {
    /// Calls the kernel over `[start, end)` of dim 0, optionally redirecting the
    /// reduction output to `partial`.
    fn call(&self, func: KernelFn, start: usize, end: usize, partial: Option<*mut f32>) -> i32 {
        let mut ptrs;
        let ptrs_ref = match (partial, self.ptrs.len().checked_sub(1)) {
            (Some(p), Some(last)) => {
                ptrs = self.ptrs.clone();
                ptrs[last] = p;
                &ptrs
            }
            _ => &self.ptrs,
        };
        let args = KernelArgs {
            ptrs: ptrs_ref.as_ptr(),
            extents: self.extents.as_ptr(),
            strides: self.strides.as_ptr(),
            start: start as i64,
            end: end as i64,
            consts: self.consts,
        };
        // SAFETY: `check_run` proved every address the kernel derives from these views,
        // extents and `[start, end)` lies inside the borrowed buffers.
        unsafe { func(&args) }
    }
}

fn total_elements(extents: &[usize]) -> Result<usize> {
    extents
        .iter()
        .try_fold(1usize, |acc, &e| acc.checked_mul(e))
        .filter(|&t| t <= i64::MAX as usize / 4)
        .ok_or_else(|| Error::new(ErrorKind::ValueError, "kernel index space too large", None))
}

fn strides_i64(strides: &[isize]) -> impl Iterator<Item = i64> + '_ {
    strides.iter().map(|&s| s as i64)
}

impl CompiledKernel {
    /// Runs the kernel over `extents`. `outputs` are the stored outputs, then the
    /// reduction output (of the outer `rank - dims` extents) if the kernel reduces.
    /// Every view is validated before native code runs.
    pub fn run(
        &self,
        inputs: &[BufView],
        outputs: &mut [BufViewMut],
        extents: &[usize],
    ) -> Result<()> {
        check_run(&self.kernel, inputs, outputs, extents)?;
        let total = total_elements(extents)?;
        let mut plan = Plan {
            ptrs: SmallVec::new(),
            extents: extents.iter().map(|&e| e as i64).collect(),
            strides: SmallVec::new(),
            consts: self.consts.as_ptr(),
        };
        for v in inputs {
            plan.ptrs
                .push(v.data.as_ptr().wrapping_add(v.offset).cast_mut());
            plan.strides.extend(strides_i64(v.strides));
        }
        for v in outputs.iter_mut() {
            plan.ptrs.push(v.data.as_mut_ptr().wrapping_add(v.offset));
            plan.strides.extend(strides_i64(v.strides));
        }
        let dim0 = extents.first().copied().unwrap_or(1);
        // Inside a smaller rayon pool (`install`), no more threads than it has.
        let threads = team::threads().min(rayon::current_num_threads()).min(dim0);
        let full_reduction = self.kernel.reduced_dims() == self.kernel.rank;
        let func = self.func;
        let tasks = task_count(dim0, total, threads);
        let code = if total < PARALLEL_THRESHOLD || threads < 2 {
            plan.call(func, 0, dim0, None)
        } else if full_reduction {
            self.run_partials(&plan, dim0, tasks, outputs)
        } else {
            in_tasks(tasks, &|t| {
                plan.call(func, split(dim0, t, tasks), split(dim0, t + 1, tasks), None)
            })
        };
        if code != 0 {
            return Err(Error::new(
                ErrorKind::RuntimeError,
                format!("compiled kernel failed with code {code}"),
                None,
            ));
        }
        Ok(())
    }

    /// Runs an elementwise kernel (no reduction) on the calling thread over contiguous
    /// buffers of `extents`' element count (fewer than `PARALLEL_THRESHOLD`): a loop
    /// body's small kernel, with no plan of views and no team. Every buffer is checked
    /// to hold the whole index space; `Ok(false)` (nothing ran) when the kernel is not
    /// of that form (the caller takes the general path).
    pub fn run_inline(
        &self,
        inputs: &[&[f32]],
        outputs: &mut [&mut [f32]],
        extents: &[usize],
    ) -> Result<bool> {
        let k = &self.kernel;
        let total = total_elements(extents)?;
        let fits = |len: usize| len >= total;
        let layouts = k.inputs.iter().chain(k.outputs.iter().map(|o| &o.access));
        let inner = extents.last().copied().unwrap_or(1);
        let applies = k.reduced_dims() == 0
            && k.rank == extents.len()
            && total < PARALLEL_THRESHOLD
            && inputs.len() == k.inputs.len()
            && outputs.len() == k.outputs.len()
            && outputs.len() == k.output_buffers()
            && (inner <= 1 || layouts.into_iter().all(|a| *a != Access::Broadcast))
            && inputs.iter().all(|b| fits(b.len()))
            && outputs.iter().all(|b| fits(b.len()));
        if !applies {
            return Ok(false);
        }
        let mut ptrs: SmallVec<[*mut f32; 8]> =
            inputs.iter().map(|b| b.as_ptr().cast_mut()).collect();
        ptrs.extend(outputs.iter_mut().map(|b| b.as_mut_ptr()));
        let ext: SmallVec<[i64; 6]> = extents.iter().map(|&e| e as i64).collect();
        let mut one: SmallVec<[i64; 6]> = SmallVec::from_elem(1, ext.len());
        for d in (0..ext.len().saturating_sub(1)).rev() {
            one[d] = one[d + 1] * ext[d + 1];
        }
        let mut strides: SmallVec<[i64; 32]> = SmallVec::new();
        for _ in 0..ptrs.len() {
            strides.extend_from_slice(&one);
        }
        let plan = Plan {
            ptrs,
            extents: ext,
            strides,
            consts: self.consts.as_ptr(),
        };
        // The buffers are distinct borrows (outputs are `&mut`, so no input aliases
        // one), each holding the contiguous index space the kernel walks.
        let code = plan.call(self.func, 0, extents.first().copied().unwrap_or(1), None);
        if code != 0 {
            return Err(Error::new(
                ErrorKind::RuntimeError,
                format!("compiled kernel failed with code {code}"),
                None,
            ));
        }
        Ok(true)
    }

    /// A reduction over every dim: each task reduces its dim-0 range into its own
    /// slot, then the slots are combined here in order.
    fn run_partials(
        &self,
        plan: &Plan,
        dim0: usize,
        tasks: usize,
        outputs: &mut [BufViewMut],
    ) -> i32 {
        let func = self.func;
        let mut partials = vec![0.0f32; tasks];
        let base = partials.as_mut_ptr() as usize;
        let code = in_tasks(tasks, &|t| {
            let slot = (base as *mut f32).wrapping_add(t);
            plan.call(
                func,
                split(dim0, t, tasks),
                split(dim0, t + 1, tasks),
                Some(slot),
            )
        });
        let op = self.kernel.reduction.map_or(ReduceOp::Sum, |r| r.op);
        // a `first` reduction keeps the earlier slot's zero (its range's first)
        let first = self.kernel.reduction.is_some_and(|r| r.first);
        let combined = match op {
            // Partial sums add in f64, as the kernel's own accumulators do.
            ReduceOp::Sum => Some(partials.iter().map(|&p| f64::from(p)).sum::<f64>() as f32),
            _ => partials.iter().copied().reduce(|a, b| {
                if first && a == b {
                    a
                } else {
                    combine(op, a, b)
                }
            }),
        };
        if let (Some(out), Some(v)) = (outputs.last_mut(), combined) {
            if let Some(slot) = out.data.get_mut(out.offset) {
                *slot = v;
            }
        }
        code
    }
}

/// Runs `f(start, end)` over the ranges of `0..len` a kernel run over `len` rows splits
/// into (the same threads and task count), with every inner boundary a multiple of
/// `align` elements; on the calling thread alone below [`PARALLEL_THRESHOLD`].
pub(crate) fn for_ranges(len: usize, align: usize, f: &(dyn Fn(usize, usize) + Sync)) {
    let threads = team::threads().min(rayon::current_num_threads());
    if len < PARALLEL_THRESHOLD || threads < 2 {
        f(0, len);
        return;
    }
    let tasks = task_count(len, len, threads);
    let align = align.max(1);
    let bound = |t: usize| match t {
        t if t >= tasks => len,
        t => split(len, t, tasks) / align * align,
    };
    team::for_each(tasks, &|t| f(bound(t), bound(t + 1)));
}

/// Runs `call(0..tasks)` on the team; the first nonzero code any task returned (0: all
/// succeeded).
fn in_tasks(tasks: usize, call: &(dyn Fn(usize) -> i32 + Sync)) -> i32 {
    let code = AtomicI32::new(0);
    team::for_each(tasks, &|t| {
        let c = call(t);
        if c != 0 {
            let _ = code.compare_exchange(0, c, Ordering::Relaxed, Ordering::Relaxed);
        }
    });
    code.into_inner()
}

/// The start of chunk `t` of `n` equal chunks of `0..len`.
fn split(len: usize, t: usize, n: usize) -> usize {
    (len as u128 * t as u128 / n as u128) as usize
}

fn combine(op: ReduceOp, a: f32, b: f32) -> f32 {
    match op {
        ReduceOp::Sum => a + b,
        // as the kernels' fmax/fmin: NaN propagates, -0.0 < 0.0
        ReduceOp::Max => crate::tensor::kernels::binary::fmax_nan(a, b),
        ReduceOp::Min => crate::tensor::kernels::binary::fmin_nan(a, b),
    }
}
