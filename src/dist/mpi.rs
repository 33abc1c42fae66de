//! The Open MPI transport (rsmpi). Every collective is started as a nonblocking MPI call
//! and polled against the deadline (`super::timeout`), so a rank that died, raised or
//! skipped a collective makes the others raise a RuntimeError instead of hanging. The
//! buffers MPI reads and writes are owned by no Rust value while the call runs: a call
//! that times out cannot be cancelled, so its buffers stay allocated for the rest of the
//! process and the world is marked broken (later collectives raise at once, and
//! `finish` aborts every rank).

use super::{err, Payload, WireOp};
use crate::error::Result;
use mpi::collective::{CommunicatorCollectives, Root, SystemOperation};
use mpi::datatype::Equivalence;
use mpi::request::{Request, StaticScope};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::Threading;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const UNINIT: u8 = 0;
const LIVE: u8 = 1;
const BROKEN: u8 = 2;
const DONE: u8 = 3;

static STATE: AtomicU8 = AtomicU8::new(UNINIT);
static WORLD: OnceLock<(usize, usize)> = OnceLock::new();

pub(super) fn init() -> Result<()> {
    if STATE.load(Ordering::SeqCst) != UNINIT {
        return Ok(());
    }
    if mpi::is_initialized() {
        return Err(err(
            "dist.init_process_group: MPI was initialised outside Kiln",
        ));
    }
    let (universe, _) = mpi::initialize_with_threading(Threading::Funneled)
        .ok_or_else(|| err("dist.init_process_group: MPI could not be initialised"))?;
    let world = universe.world();
    let _ = WORLD.set((world.rank() as usize, world.size() as usize));
    // MPI_Finalize runs in `finish`, at the process's end, not when this value drops.
    std::mem::forget(universe);
    STATE.store(LIVE, Ordering::SeqCst);
    Ok(())
}

pub(super) fn is_initialized() -> bool {
    matches!(STATE.load(Ordering::SeqCst), LIVE | BROKEN)
}

pub(super) fn world() -> Option<(usize, usize)> {
    if is_initialized() {
        WORLD.get().copied()
    } else {
        None
    }
}

fn live(what: &str) -> Result<SimpleCommunicator> {
    match STATE.load(Ordering::SeqCst) {
        LIVE => Ok(SimpleCommunicator::world()),
        BROKEN => Err(err(format!(
            "dist.{what}: the process group is broken (an earlier collective timed out)"
        ))),
        _ => Err(err(format!("dist.{what}: no process group"))),
    }
}

/// A buffer MPI may still touch after a timeout: leaked, reclaimed on completion.
struct Wire<T: 'static> {
    ptr: *mut [T],
}

impl<T: 'static> Wire<T> {
    fn new(v: Vec<T>) -> Self {
        Wire {
            ptr: Box::into_raw(v.into_boxed_slice()),
        }
    }

    fn get(&self) -> &'static [T] {
        // SAFETY: the allocation lives until `take`, which runs only after MPI finished
        // with it; after a timeout it is never freed.
        unsafe { &*self.ptr }
    }

    fn get_mut(&self) -> &'static mut [T] {
        // SAFETY: as `get`; each Wire is handed to MPI as one buffer of one call.
        unsafe { &mut *self.ptr }
    }

    fn take(self) -> Vec<T> {
        // SAFETY: made by Box::into_raw in `new`; the call that used it completed.
        unsafe { Box::from_raw(self.ptr) }.into_vec()
    }
}

/// Polls `req` until it completes or the deadline passes: yielding the core between
/// polls for the first 20 ms (each poll moves MPI's progress engine on, so a collective
/// of several rounds is not slowed down), then sleeping 100 µs between polls.
fn wait<D: ?Sized>(mut req: Request<'static, D, StaticScope>, what: &str) -> Result<()> {
    let limit = super::timeout();
    let start = Instant::now();
    let deadline = start + limit;
    loop {
        match req.test() {
            Ok(_) => return Ok(()),
            Err(r) => req = r,
        }
        if Instant::now() >= deadline {
            std::mem::forget(req);
            STATE.store(BROKEN, Ordering::SeqCst);
            let rank = WORLD.get().map_or(0, |w| w.0);
            return Err(err(format!(
                "dist.{what} timed out after {:.1} s on rank {rank}: another rank died, \
                 raised an error or did not call the same collective",
                limit.as_secs_f64()
            )));
        }
        if start.elapsed() < Duration::from_millis(20) {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(100));
        }
    }
}

fn sys_op(op: WireOp) -> SystemOperation {
    match op {
        WireOp::Sum => SystemOperation::sum(),
        WireOp::Max => SystemOperation::max(),
        WireOp::Min => SystemOperation::min(),
    }
}

pub(super) fn barrier() -> Result<()> {
    let w = live("barrier")?;
    wait(w.immediate_barrier(), "barrier")
}

fn all_reduce_t<T: Equivalence + Copy + 'static>(v: &mut Vec<T>, op: WireOp) -> Result<()> {
    let w = live("all_reduce")?;
    let send = Wire::new(v.clone());
    let recv = Wire::new(std::mem::take(v));
    let req = w.immediate_all_reduce_into(StaticScope, send.get(), recv.get_mut(), sys_op(op));
    wait(req, "all_reduce")?;
    send.take();
    *v = recv.take();
    Ok(())
}

/// One dtype's all-reduce in flight: its buffers (MPI's until the request completed)
/// and the request (None once completed).
pub(super) struct InFlight<T: 'static> {
    bufs: Option<(Wire<T>, Wire<T>)>,
    req: Option<Request<'static, [T], StaticScope>>,
}

fn start_t<T: Equivalence + Copy + 'static>(v: Vec<T>, op: WireOp) -> Result<InFlight<T>> {
    let w = live("all_reduce")?;
    let send = Wire::new(v.clone());
    let recv = Wire::new(v);
    let req = w.immediate_all_reduce_into(StaticScope, send.get(), recv.get_mut(), sys_op(op));
    Ok(InFlight {
        bufs: Some((send, recv)),
        req: Some(req),
    })
}

impl<T: 'static> InFlight<T> {
    /// One MPI_Test (which also moves MPI's progress on): whether it completed.
    fn test(&mut self) -> bool {
        match self.req.take().map(Request::test) {
            None | Some(Ok(_)) => true,
            Some(Err(r)) => {
                self.req = Some(r);
                false
            }
        }
    }

    /// Waits (bounded by the timeout) and returns the reduced buffer.
    fn finish(&mut self) -> Result<Vec<T>> {
        if let Some(r) = self.req.take() {
            wait(r, "all_reduce")?;
        }
        let (send, recv) = self
            .bufs
            .take()
            .ok_or_else(|| err("dist.all_reduce: this work was already waited for"))?;
        send.take();
        Ok(recv.take())
    }
}

impl<T: 'static> Drop for InFlight<T> {
    /// A request dropped unfinished is forgotten and its buffers stay MPI's (rsmpi
    /// panics on dropping a live request); a finished one frees its buffers.
    fn drop(&mut self) {
        match self.req.take() {
            Some(r) => std::mem::forget(r),
            None => {
                if let Some((send, recv)) = self.bufs.take() {
                    send.take();
                    recv.take();
                }
            }
        }
    }
}

/// A nonblocking all-reduce of one payload (`super::work`).
pub(super) enum Flight {
    F32(InFlight<f32>),
    F64(InFlight<f64>),
    I64(InFlight<i64>),
    I32(InFlight<i32>),
    U8(InFlight<u8>),
}

pub(super) fn all_reduce_start(p: Payload, op: WireOp) -> Result<Flight> {
    Ok(match p {
        Payload::F32(v) => Flight::F32(start_t(v, op)?),
        Payload::I64(v) => Flight::I64(start_t(v, op)?),
        Payload::F64(v) => Flight::F64(start_t(v, op)?),
        Payload::I32(v) => Flight::I32(start_t(v, op)?),
        Payload::U8(v) => Flight::U8(start_t(v, op)?),
    })
}

impl Flight {
    pub(super) fn test(&mut self) -> bool {
        match self {
            Flight::F32(f) => f.test(),
            Flight::I64(f) => f.test(),
            Flight::F64(f) => f.test(),
            Flight::I32(f) => f.test(),
            Flight::U8(f) => f.test(),
        }
    }

    pub(super) fn finish(&mut self) -> Result<Payload> {
        Ok(match self {
            Flight::F32(f) => Payload::F32(f.finish()?),
            Flight::I64(f) => Payload::I64(f.finish()?),
            Flight::F64(f) => Payload::F64(f.finish()?),
            Flight::I32(f) => Payload::I32(f.finish()?),
            Flight::U8(f) => Payload::U8(f.finish()?),
        })
    }
}

pub(super) fn all_reduce(p: &mut Payload, op: WireOp) -> Result<()> {
    match p {
        Payload::F32(v) => all_reduce_t(v, op),
        Payload::I64(v) => all_reduce_t(v, op),
        Payload::F64(v) => all_reduce_t(v, op),
        Payload::I32(v) => all_reduce_t(v, op),
        Payload::U8(v) => all_reduce_t(v, op),
    }
}

fn broadcast_t<T: Equivalence + 'static>(v: &mut Vec<T>, src: usize) -> Result<()> {
    let w = live("broadcast")?;
    let buf = Wire::new(std::mem::take(v));
    let req = w
        .process_at_rank(src as i32)
        .immediate_broadcast_into(StaticScope, buf.get_mut());
    wait(req, "broadcast")?;
    *v = buf.take();
    Ok(())
}

pub(super) fn broadcast(p: &mut Payload, src: usize) -> Result<()> {
    match p {
        Payload::F32(v) => broadcast_t(v, src),
        Payload::I64(v) => broadcast_t(v, src),
        Payload::F64(v) => broadcast_t(v, src),
        Payload::I32(v) => broadcast_t(v, src),
        Payload::U8(v) => broadcast_t(v, src),
    }
}

fn all_gather_t<T: Equivalence + Copy + Default + 'static>(v: &[T], n: usize) -> Result<Vec<T>> {
    let w = live("all_gather")?;
    let send = Wire::new(v.to_vec());
    let recv = Wire::new(vec![T::default(); v.len() * n]);
    let req = w.immediate_all_gather_into(StaticScope, send.get(), recv.get_mut());
    wait(req, "all_gather")?;
    send.take();
    Ok(recv.take())
}

pub(super) fn all_gather(p: &Payload, n: usize) -> Result<Payload> {
    Ok(match p {
        Payload::F32(v) => Payload::F32(all_gather_t(v, n)?),
        Payload::I64(v) => Payload::I64(all_gather_t(v, n)?),
        Payload::F64(v) => Payload::F64(all_gather_t(v, n)?),
        Payload::I32(v) => Payload::I32(all_gather_t(v, n)?),
        Payload::U8(v) => Payload::U8(all_gather_t(v, n)?),
    })
}

fn reduce_scatter_t<T: Equivalence + Copy + Default + 'static>(
    v: &[T],
    n: usize,
    op: WireOp,
) -> Result<Vec<T>> {
    let w = live("reduce_scatter")?;
    let send = Wire::new(v.to_vec());
    let recv = Wire::new(vec![T::default(); v.len() / n]);
    let req =
        w.immediate_reduce_scatter_block_into(StaticScope, send.get(), recv.get_mut(), sys_op(op));
    wait(req, "reduce_scatter")?;
    send.take();
    Ok(recv.take())
}

pub(super) fn reduce_scatter(p: &Payload, n: usize, op: WireOp) -> Result<Payload> {
    Ok(match p {
        Payload::F32(v) => Payload::F32(reduce_scatter_t(v, n, op)?),
        Payload::I64(v) => Payload::I64(reduce_scatter_t(v, n, op)?),
        Payload::F64(v) => Payload::F64(reduce_scatter_t(v, n, op)?),
        Payload::I32(v) => Payload::I32(reduce_scatter_t(v, n, op)?),
        Payload::U8(v) => Payload::U8(reduce_scatter_t(v, n, op)?),
    })
}

pub(super) fn finish(ok: bool) {
    match STATE.swap(DONE, Ordering::SeqCst) {
        LIVE if ok => {
            // SAFETY: MPI was initialised by `init` and is finalised once (STATE).
            unsafe {
                mpi::ffi::MPI_Finalize();
            }
        }
        LIVE | BROKEN => SimpleCommunicator::world().abort(1),
        _ => {}
    }
}
