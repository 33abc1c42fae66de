//! Safety limits for untrusted scripts: the operation budget, wall-clock deadline and
//! interrupt polling behind `Interp::check_interrupt`; each run installs the cancel state
//! long native kernels poll (`tensor::cancel`).

use super::{err, Interp, R};
use crate::error::ErrorKind;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How many ticks pass between two full checks (deadline, interrupt, budget refill).
const TICK_BATCH: u32 = 256;
/// The batch while `Limits::max_memory` is set (see `containers::remeasure_roots`).
const MEMORY_TICK_BATCH: u32 = 16;

/// Safety limits applied to every host entry into the engine (`eval`, `run_file`,
/// `call`, ...). Each run gets a fresh budget; `None` means unlimited.
///
/// ```
/// use kiln::{Engine, Limits};
/// use std::time::Duration;
///
/// let mut engine = Engine::with_limits(Limits {
///     max_operations: Some(100_000),
///     max_call_depth: 50,
///     max_tensor_bytes: Some(1 << 20),
///     max_total_tensor_bytes: Some(8 << 20),
///     max_memory: Some(64 << 20),
///     wall_time: Some(Duration::from_secs(1)),
///     max_container_len: 1_000_000,
/// });
/// let err = engine.eval("while True:\n    pass").unwrap_err();
/// assert_eq!(err.kind, kiln::ErrorKind::LimitExceeded);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Operations per run: one operation is one loop iteration (of `while`, `for`,
    /// comprehensions and iterating builtins) or one call of a Kiln function.
    /// Exceeding it raises `LimitExceeded`.
    pub max_operations: Option<u64>,
    /// Nested Kiln calls; exceeding it raises `RecursionError` (as Python does).
    pub max_call_depth: usize,
    /// The largest single tensor allocation in bytes; beyond it `MemoryError`.
    pub max_tensor_bytes: Option<usize>,
    /// Bytes of tensor storage alive at once on the engine's thread; an allocation
    /// that would pass it raises `MemoryError`.
    pub max_total_tensor_bytes: Option<usize>,
    /// Bytes alive at once on the engine's thread, tensors and Python containers and
    /// strings together (approximate for containers: their buffers and the strings they
    /// hold); growing past it raises `MemoryError`.
    pub max_memory: Option<usize>,
    /// Wall-clock time per run; exceeding it raises `LimitExceeded`.
    pub wall_time: Option<Duration>,
    /// The most elements one list, tuple or dict may hold (bytes for a str); growing
    /// past it (`[0] * n`, `append`, comprehensions, `list(range(n))`, `join`, ...)
    /// raises `MemoryError`.
    pub max_container_len: usize,
}

impl Default for Limits {
    /// No operation, memory or time limit; call depth 1000 (the interpreter default);
    /// containers up to 2^28 elements.
    fn default() -> Limits {
        Limits {
            max_operations: None,
            max_call_depth: 1000,
            max_tensor_bytes: None,
            max_total_tensor_bytes: None,
            max_memory: None,
            wall_time: None,
            max_container_len: super::containers::DEFAULT_MAX_CONTAINER_LEN,
        }
    }
}

/// The per-run accounting behind [`Limits`], kept in the interpreter.
#[derive(Debug)]
pub struct LimitState {
    /// Ticks left before the next full check.
    ticks_left: u32,
    /// The size of the batch `ticks_left` was last refilled with.
    batch: u32,
    used: u64,
    max_ops: Option<u64>,
    deadline: Option<Instant>,
    /// Set once a limit or interrupt fired in this run: every later check raises again,
    /// so `try`/`except` in the script cannot swallow it.
    tripped: Option<(ErrorKind, &'static str)>,
}

impl Default for LimitState {
    fn default() -> LimitState {
        LimitState {
            ticks_left: TICK_BATCH,
            batch: TICK_BATCH,
            used: 0,
            max_ops: None,
            deadline: None,
            tripped: None,
        }
    }
}

impl LimitState {
    /// Counts one tick; true when the full check is due. (`ticks_left` is refilled to at
    /// least 1 by every full check, so it never wraps.)
    #[inline(always)]
    pub fn tick(&mut self) -> bool {
        self.ticks_left = self.ticks_left.wrapping_sub(1);
        self.ticks_left == 0
    }
}

use crate::tensor::cancel::{KernelCancel, TIME_MSG};

const OPS_MSG: &str = "operation limit exceeded";

/// What [`Interp::begin_run`] replaced, restored by [`Interp::end_run`].
pub struct RunGuard {
    alloc: crate::tensor::storage::AllocLimits,
    cancel: Option<KernelCancel>,
    max_depth: usize,
    max_container_len: usize,
    max_memory: usize,
    sandboxed: bool,
}

/// Native modules that touch the host (files); not importable in sandbox mode.
const HOST_MODULES: &[&str] = &["io"];

impl Interp {
    /// In sandbox mode, refuses the modules that touch the host.
    pub fn check_import_allowed(&self, name: &str) -> R<()> {
        if self.sandbox && HOST_MODULES.contains(&name) {
            return Err(err(
                ErrorKind::ImportError,
                format!("module '{name}' is not available in a sandboxed engine"),
            ));
        }
        Ok(())
    }

    /// Runs `f` one level deeper into nested data (comparison, `repr`/`str`): past the
    /// call-depth limit `RecursionError` (as CPython: "maximum recursion depth exceeded
    /// {what}"), and the native stack is grown on the heap when it runs low.
    pub fn nested<T>(&mut self, what: &str, f: impl FnOnce(&mut Interp) -> R<T>) -> R<T> {
        if self.depth >= self.max_depth {
            return Err(err(
                ErrorKind::RecursionError,
                format!("maximum recursion depth exceeded{what}"),
            ));
        }
        self.depth += 1;
        // as `run_frame`: every 8th level makes sure of a 1 MiB red zone (a level of
        // nested data uses far less than 128 KiB of native stack)
        let r = if self.depth.is_multiple_of(8) {
            stacker::maybe_grow(1024 * 1024, 4 * 1024 * 1024, || f(self))
        } else {
            f(self)
        };
        self.depth -= 1;
        r
    }

    /// The full check, every `TICK_BATCH` ticks (or at once after a limit fired).
    #[cold]
    #[inline(never)]
    pub fn limits_slow(&mut self) -> R<()> {
        let st = &mut self.limits;
        st.used = st.used.saturating_add(u64::from(st.batch));
        if st.tripped.is_none() {
            if self.interrupt.swap(false, Ordering::Relaxed) {
                st.tripped = Some((ErrorKind::KeyboardInterrupt, ""));
            } else if st.max_ops.is_some_and(|m| st.used > m) {
                st.tripped = Some((ErrorKind::LimitExceeded, OPS_MSG));
            } else if st.deadline.is_some_and(|d| Instant::now() >= d) {
                st.tripped = Some((ErrorKind::LimitExceeded, TIME_MSG));
            }
        }
        if let Some((kind, msg)) = st.tripped {
            st.batch = 0;
            st.ticks_left = 1;
            return Err(err(kind, msg));
        }
        let left = st
            .max_ops
            .map_or(u64::MAX, |m| m.saturating_sub(st.used).saturating_add(1));
        // under a memory cap, check often: values held only by frames are measured here
        let most = if super::containers::has_memory_cap() {
            MEMORY_TICK_BATCH
        } else {
            TICK_BATCH
        };
        st.batch = u32::try_from(left).unwrap_or(u32::MAX).clamp(1, most);
        st.ticks_left = st.batch;
        super::containers::remeasure_roots(&self.stack)
    }

    /// Whether the operation budget left in this run is below `n` (a loop of `n`
    /// iterations would stop at the limit).
    pub fn ops_budget_below(&self, n: i64) -> bool {
        let st = &self.limits;
        let spent = st.used + u64::from(st.batch.saturating_sub(st.ticks_left));
        st.max_ops
            .is_some_and(|m| u64::try_from(n).is_ok_and(|n| n > m.saturating_sub(spent)))
    }

    /// Checks interrupt, deadline and budget now, without waiting for the tick batch
    /// (for natives that block, such as `time.sleep`).
    pub fn poll_limits(&mut self) -> R<()> {
        let st = &mut self.limits;
        st.batch = st.batch.saturating_sub(st.ticks_left);
        self.limits_slow()
    }

    /// Starts a host entry: a fresh operation budget and deadline, the engine's call
    /// depth and allocation caps, and the cancel state kernels poll. Returns what it
    /// replaced, for [`Interp::end_run`].
    pub fn begin_run(&mut self, limits: &Limits) -> RunGuard {
        use crate::tensor::storage::{alloc_limits, set_alloc_limits, AllocLimits};
        let deadline = limits.wall_time.and_then(|w| Instant::now().checked_add(w));
        self.limits = LimitState {
            ticks_left: 1,
            batch: 1,
            max_ops: limits.max_operations,
            deadline,
            ..LimitState::default()
        };
        let alloc = alloc_limits();
        set_alloc_limits(AllocLimits {
            max_bytes: limits
                .max_tensor_bytes
                .unwrap_or(crate::tensor::storage::DEFAULT_MAX_BYTES),
            max_live_bytes: limits
                .max_total_tensor_bytes
                .unwrap_or(usize::MAX)
                .min(limits.max_memory.unwrap_or(usize::MAX)),
        });
        let flag = self.interrupt.clone();
        let cancel = crate::tensor::cancel::replace(Some(KernelCancel { flag, deadline }));
        let max_depth = std::mem::replace(&mut self.max_depth, limits.max_call_depth);
        RunGuard {
            alloc,
            cancel,
            max_depth,
            max_container_len: super::containers::set_max_len(limits.max_container_len),
            max_memory: super::containers::set_max_memory(limits.max_memory.unwrap_or(usize::MAX)),
            sandboxed: crate::io::fs_gate::set_sandboxed(self.sandbox),
        }
    }

    /// Ends a host entry: restores what [`Interp::begin_run`] replaced and clears the
    /// interrupt flag (a request made during this run is spent with it).
    pub fn end_run(&mut self, g: RunGuard) {
        self.interrupt.store(false, Ordering::Relaxed);
        self.limits = LimitState::default();
        self.max_depth = g.max_depth;
        super::containers::set_max_len(g.max_container_len);
        crate::io::fs_gate::set_sandboxed(g.sandboxed);
        super::containers::set_max_memory(g.max_memory);
        // cached tensor buffers do not outlive the host's call
        crate::tensor::pool::clear();
        crate::tensor::storage::set_alloc_limits(g.alloc);
        crate::tensor::cancel::replace(g.cancel);
    }
}
