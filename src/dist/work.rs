//! Nonblocking all-reduces (`dist.all_reduce(..., async_op=True)` and
//! DistributedDataParallel's buckets launched from gradient hooks): a started
//! collective is a numbered work in a thread-local table until it is waited for. MPI
//! moves a nonblocking collective on only inside MPI calls, so [`test`] (one MPI_Test)
//! is what a caller runs between other work to let it progress; [`wait`] blocks until
//! it completes (bounded by the timeout) and writes the result into the tensors.

use super::{average, backend, count, pack, unpack, wire_op, world, ReduceOp, WIRE_DTYPES};
use crate::error::Result;
use crate::tensor::Tensor;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::time::Instant;

/// One started all-reduce: per dtype, the tensors its result goes to and the transfer.
struct Work {
    parts: Vec<(Vec<Tensor>, backend::Flight)>,
    op: ReduceOp,
    world: usize,
}

thread_local! {
    static WORKS: RefCell<HashMap<u64, Work>> = RefCell::new(HashMap::new());
    static NEXT: Cell<u64> = const { Cell::new(1) };
}

/// Starts reducing every tensor of `ts` across ranks (one flat buffer per dtype, as
/// [`super::all_reduce_coalesced`]); the tensors must not change until [`wait`].
/// Returns the work's number.
pub fn all_reduce_start(ts: &[Tensor], op: ReduceOp) -> Result<u64> {
    let (_, n) = world()?;
    super::check_capture("all_reduce");
    let mut parts = Vec::new();
    for dtype in WIRE_DTYPES {
        let group: Vec<Tensor> = ts.iter().filter(|t| t.dtype() == dtype).cloned().collect();
        if group.is_empty() {
            continue;
        }
        let wop = wire_op(op, dtype, "all_reduce")?;
        let t0 = Instant::now();
        let refs: Vec<&Tensor> = group.iter().collect();
        let p = pack(&refs, dtype)?;
        let bytes = p.bytes();
        let flight = backend::all_reduce_start(p, wop)?;
        count(bytes, t0);
        parts.push((group, flight));
    }
    let id = NEXT.with(|c| {
        let id = c.get();
        c.set(id + 1);
        id
    });
    let work = Work {
        parts,
        op,
        world: n,
    };
    WORKS.with(|w| w.borrow_mut().insert(id, work));
    Ok(id)
}

/// Work `id`, taken out of the table (None: already waited for, or never started).
fn take(id: u64) -> Option<Work> {
    WORKS.with(|w| w.borrow_mut().remove(&id))
}

/// Lets work `id` progress (one MPI_Test per transfer): whether it completed. A
/// completed work's result is written at once.
pub fn test(id: u64) -> Result<bool> {
    let Some(mut work) = take(id) else {
        return Ok(true);
    };
    let t0 = Instant::now();
    let done = work.parts.iter_mut().all(|(_, f)| f.test());
    super::count_time(t0);
    if done {
        return finish(work);
    }
    WORKS.with(|w| w.borrow_mut().insert(id, work));
    Ok(false)
}

/// Blocks until work `id` completed and its result is in its tensors (at once for a
/// work already completed).
pub fn wait(id: u64) -> Result<()> {
    match take(id) {
        Some(work) => finish(work).map(|_| ()),
        None => Ok(()),
    }
}

fn finish(mut work: Work) -> Result<bool> {
    let t0 = Instant::now();
    for (ts, flight) in &mut work.parts {
        let mut p = flight.finish()?;
        average(&mut p, work.op, work.world);
        let refs: Vec<&Tensor> = ts.iter().collect();
        unpack(&p, &refs)?;
    }
    super::count_time(t0);
    Ok(true)
}
