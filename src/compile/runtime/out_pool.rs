//! Output buffers a compiled step reuses across runs: each fused, gemm and
//! vector-matrix step keeps its last `RECENT` sets of outputs and writes into one of
//! them again when nothing else holds it (no allocation, no page faults in steady state,
//! also when the caller still holds the previous call's result as in `y = f(x)` in a
//! loop); otherwise it allocates a fresh one, counted for tests and logs.

use crate::error::Result;
use crate::tensor::dtype::Elem;
use crate::tensor::storage::alloc_filled;
use crate::tensor::Tensor;
use std::cell::{Cell, RefCell};

/// How many recent sets of outputs a step keeps for reuse.
const RECENT: usize = 2;

/// The recent outputs of one step and the count of fresh allocations.
#[derive(Default)]
pub struct OutputPool {
    recent: RefCell<Vec<Tensor>>,
    fresh: Cell<usize>,
}

impl OutputPool {
    /// Outputs this step has allocated so far (the rest reused a buffer).
    pub fn fresh_outputs(&self) -> usize {
        self.fresh.get()
    }

    /// Whether `t` is one of the recent outputs kept for reuse.
    pub fn holds(&self, t: &Tensor) -> bool {
        self.recent.borrow().iter().any(|r| r.same(t))
    }

    /// An f32 tensor of `shape` (`n` elements): a recent one nothing else holds, else a
    /// fresh zeroed one (counted).
    pub fn take(&self, shape: &[usize], n: usize) -> Result<Tensor> {
        self.take_as::<f32>(shape, n)
    }

    /// [`OutputPool::take`] for a tensor of `T`'s dtype.
    pub fn take_as<T: Elem>(&self, shape: &[usize], n: usize) -> Result<Tensor> {
        let reuse = {
            let mut recent = self.recent.borrow_mut();
            let free = recent
                .iter()
                .rposition(|t| t.is_unique() && t.shape() == shape && t.dtype() == T::DTYPE);
            free.map(|i| recent.remove(i))
        };
        match reuse {
            Some(t) => Ok(t),
            None => {
                self.fresh.set(self.fresh.get() + 1);
                Tensor::from_buffer(T::wrap(alloc_filled(n, T::zero())?), shape)
            }
        }
    }

    /// Keeps `ts` (one run's outputs) among the recent ones; the oldest are forgotten
    /// past `RECENT` sets.
    pub fn remember(&self, ts: &[Tensor]) {
        let mut recent = self.recent.borrow_mut();
        let keep = RECENT * ts.len().max(1);
        recent.extend(ts.iter().cloned());
        let extra = recent.len().saturating_sub(keep);
        recent.drain(..extra);
    }
}
