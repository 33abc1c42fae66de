//! Data-parallel collectives (issue 28): the MPI world of `mpirun -np N kiln train.dl`,
//! in-place all-reduce / broadcast / all-gather / reduce-scatter on tensors of every
//! dtype, with a deadline on every collective. The transport is Open MPI through rsmpi
//! (`mpi.rs`, behind the `mpi` cargo feature); without the feature `none.rs` makes
//! [`init`] fail with a clear error and nothing else changes. Collectives write their
//! results with no autograd record (like PyTorch's c10d ops); the version counter still
//! moves, so autograd's in-place checks see the write.

#[cfg(feature = "mpi")]
mod mpi;
#[cfg(feature = "mpi")]
use self::mpi as backend;
#[cfg(not(feature = "mpi"))]
mod none;
#[cfg(not(feature = "mpi"))]
use self::none as backend;
mod work;
pub use work::{all_reduce_start, test as work_test, wait as work_wait};

use crate::error::{Error, ErrorKind, Result};
use crate::tensor::dtype::DType;
use crate::tensor::storage::Buffer;
use crate::tensor::Tensor;
use std::cell::Cell;
use std::time::{Duration, Instant};

/// A reduction of an all-reduce or reduce-scatter (`ReduceOp.SUM` ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    Sum,
    Max,
    Min,
    Avg,
}

impl ReduceOp {
    /// The op a script names (`"SUM"`, `"MAX"`, `"MIN"`, `"AVG"`).
    pub fn parse(name: &str) -> Option<ReduceOp> {
        match name {
            "SUM" => Some(ReduceOp::Sum),
            "MAX" => Some(ReduceOp::Max),
            "MIN" => Some(ReduceOp::Min),
            "AVG" => Some(ReduceOp::Avg),
            _ => None,
        }
    }
}

/// The dtypes a collective carries, in the order their flat buffers travel.
const WIRE_DTYPES: [DType; 6] = [
    DType::F32,
    DType::F64,
    DType::I64,
    DType::I32,
    DType::U8,
    DType::Bool,
];

/// What the transport reduces with (AVG is a SUM followed by a division).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WireOp {
    Sum,
    Max,
    Min,
}

/// One typed buffer handed to the transport (bool travels as u8).
pub(crate) enum Payload {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I64(Vec<i64>),
    I32(Vec<i32>),
    U8(Vec<u8>),
}

impl Payload {
    fn bytes(&self) -> usize {
        match self {
            Payload::F32(v) => v.len() * 4,
            Payload::F64(v) => v.len() * 8,
            Payload::I64(v) => v.len() * 8,
            Payload::I32(v) => v.len() * 4,
            Payload::U8(v) => v.len(),
        }
    }
}

/// Collective calls, payload bytes and seconds spent in them since the last reset.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CommStats {
    pub calls: u64,
    pub bytes: u64,
    pub seconds: f64,
}

thread_local! {
    static STATS: Cell<CommStats> = const { Cell::new(CommStats { calls: 0, bytes: 0, seconds: 0.0 }) };
    static TIMEOUT: Cell<Duration> = const { Cell::new(Duration::from_secs(300)) };
}

/// The counters since the last [`reset_stats`].
pub fn stats() -> CommStats {
    STATS.with(|s| s.get())
}

/// Adds the seconds since `since` (a wait or a progress poll) without counting a call.
fn count_time(since: Instant) {
    STATS.with(|s| {
        let mut c = s.get();
        c.seconds += since.elapsed().as_secs_f64();
        s.set(c);
    });
}

/// Zeroes the counters.
pub fn reset_stats() {
    STATS.with(|s| s.set(CommStats::default()));
}

fn count(bytes: usize, since: Instant) {
    STATS.with(|s| {
        let mut c = s.get();
        c.calls += 1;
        c.bytes += bytes as u64;
        c.seconds += since.elapsed().as_secs_f64();
        s.set(c);
    });
}

/// How long a collective may wait for the other ranks (KILN_DIST_TIMEOUT seconds, or
/// `init_process_group(timeout=...)`; 300 s by default). Read by the MPI transport only.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn timeout() -> Duration {
    TIMEOUT.with(|t| t.get())
}

pub(crate) fn err(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::RuntimeError, msg, None)
}

/// Whether this build has a transport (the `mpi` feature).
pub fn available() -> bool {
    cfg!(feature = "mpi")
}

/// Joins the MPI world (idempotent). `timeout` (seconds) bounds every later collective.
pub fn init(timeout: Option<f64>) -> Result<()> {
    let env = std::env::var("KILN_DIST_TIMEOUT")
        .ok()
        .and_then(|s| s.parse::<f64>().ok());
    if let Some(secs) = timeout.or(env) {
        if !(secs.is_finite() && secs > 0.0 && secs < 1e9) {
            return Err(Error::new(
                ErrorKind::ValueError,
                format!(
                    "init_process_group: timeout must be a positive number of seconds, got {secs}"
                ),
                None,
            ));
        }
        TIMEOUT.with(|t| t.set(Duration::from_secs_f64(secs)));
    }
    backend::init()
}

/// Whether [`init`] succeeded in this process.
pub fn is_initialized() -> bool {
    backend::is_initialized()
}

fn world() -> Result<(usize, usize)> {
    backend::world().ok_or_else(|| {
        err("the default process group is not initialized: call dist.init_process_group() first")
    })
}

/// This process's rank in the world.
pub fn rank() -> Result<usize> {
    Ok(world()?.0)
}

/// The number of processes in the world.
pub fn world_size() -> Result<usize> {
    Ok(world()?.1)
}

/// Blocks until every rank reaches it.
pub fn barrier() -> Result<()> {
    world()?;
    let t0 = Instant::now();
    backend::barrier()?;
    count(0, t0);
    Ok(())
}

/// The elements of `ts` (all of `dtype`) in one flat payload.
fn pack(ts: &[&Tensor], dtype: DType) -> Result<Payload> {
    /// The tensors' elements of type `T`, concatenated.
    fn flat<T: crate::tensor::dtype::Elem + Copy>(ts: &[&Tensor]) -> Result<Vec<T>> {
        let mut v = Vec::new();
        for t in ts {
            t.read(|s: &[T]| v.extend_from_slice(s))?;
        }
        Ok(v)
    }
    Ok(match dtype {
        DType::F32 => Payload::F32(flat(ts)?),
        DType::F64 => Payload::F64(flat(ts)?),
        DType::I64 => Payload::I64(flat(ts)?),
        DType::I32 => Payload::I32(flat(ts)?),
        DType::U8 => Payload::U8(flat(ts)?),
        DType::Bool => {
            let mut v = Vec::new();
            for t in ts {
                t.read(|s: &[bool]| v.extend(s.iter().map(|&b| b as u8)))?;
            }
            Payload::U8(v)
        }
    })
}

/// Writes consecutive pieces of `p` into `ts` (their shapes), in place.
fn unpack(p: &Payload, ts: &[&Tensor]) -> Result<()> {
    let mut at = 0;
    for t in ts {
        let n = t.numel();
        let buf = match p {
            Payload::F32(v) => Buffer::F32(v[at..at + n].to_vec()),
            Payload::F64(v) => Buffer::F64(v[at..at + n].to_vec()),
            Payload::I64(v) => Buffer::I64(v[at..at + n].to_vec()),
            Payload::I32(v) => Buffer::I32(v[at..at + n].to_vec()),
            Payload::U8(v) if t.dtype() == DType::U8 => Buffer::U8(v[at..at + n].to_vec()),
            Payload::U8(v) => Buffer::Bool(v[at..at + n].iter().map(|&b| b != 0).collect()),
        };
        t.overwrite(&Tensor::from_buffer(buf, t.shape())?)?;
        at += n;
    }
    Ok(())
}

/// The transport's op for `op` on `dtype` (bool: SUM and MAX are OR, MIN is AND).
fn wire_op(op: ReduceOp, dtype: DType, what: &str) -> Result<WireOp> {
    match (op, dtype) {
        (ReduceOp::Avg, DType::F32 | DType::F64) | (ReduceOp::Sum, _) => {
            Ok(if dtype == DType::Bool {
                WireOp::Max
            } else {
                WireOp::Sum
            })
        }
        (ReduceOp::Avg, d) => Err(Error::new(
            ErrorKind::TypeError,
            format!("{what}: ReduceOp.AVG needs a float32 or float64 tensor, got {d}"),
            None,
        )),
        (ReduceOp::Max, _) => Ok(WireOp::Max),
        (ReduceOp::Min, _) => Ok(WireOp::Min),
    }
}

/// Divides an AVG's sum by the world size.
fn average(p: &mut Payload, op: ReduceOp, n: usize) {
    match (op, p) {
        (ReduceOp::Avg, Payload::F32(v)) => v.iter_mut().for_each(|x| *x /= n as f32),
        (ReduceOp::Avg, Payload::F64(v)) => v.iter_mut().for_each(|x| *x /= n as f64),
        _ => {}
    }
}

fn check_capture(what: &str) {
    crate::ir::record::graph_break(crate::ir::record::BreakReason::HostFunction(
        format!("dist.{what} (a collective)").into(),
    ));
}

/// Reduces `t` across ranks in place.
pub fn all_reduce(t: &Tensor, op: ReduceOp) -> Result<()> {
    all_reduce_coalesced(std::slice::from_ref(t), op)
}

/// Reduces every tensor of `ts` in place with one collective per dtype: the tensors of
/// each dtype travel as one flat buffer (DistributedDataParallel's gradient buckets).
pub fn all_reduce_coalesced(ts: &[Tensor], op: ReduceOp) -> Result<()> {
    let (_, n) = world()?;
    check_capture("all_reduce");
    for dtype in WIRE_DTYPES {
        let group: Vec<&Tensor> = ts.iter().filter(|t| t.dtype() == dtype).collect();
        if group.is_empty() {
            continue;
        }
        let wop = wire_op(op, dtype, "all_reduce")?;
        let t0 = Instant::now();
        let mut p = pack(&group, dtype)?;
        let bytes = p.bytes();
        backend::all_reduce(&mut p, wop)?;
        average(&mut p, op, n);
        unpack(&p, &group)?;
        count(bytes, t0);
    }
    Ok(())
}

/// Copies rank `src`'s `t` into `t` on every rank.
pub fn broadcast(t: &Tensor, src: usize) -> Result<()> {
    broadcast_coalesced(std::slice::from_ref(t), src)
}

/// Copies rank `src`'s tensors `ts` into `ts` on every rank, one collective per dtype
/// (the tensors of each dtype travel as one flat buffer).
pub fn broadcast_coalesced(ts: &[Tensor], src: usize) -> Result<()> {
    let (_, n) = world()?;
    if src >= n {
        return Err(Error::new(
            ErrorKind::ValueError,
            format!("broadcast: src {src} is not a rank of a world of size {n}"),
            None,
        ));
    }
    check_capture("broadcast");
    for dtype in WIRE_DTYPES {
        let group: Vec<&Tensor> = ts.iter().filter(|t| t.dtype() == dtype).collect();
        if group.is_empty() {
            continue;
        }
        let t0 = Instant::now();
        let mut p = pack(&group, dtype)?;
        let bytes = p.bytes();
        backend::broadcast(&mut p, src)?;
        unpack(&p, &group)?;
        count(bytes, t0);
    }
    Ok(())
}

/// Every rank's `t` (all the same shape and dtype), in rank order, written into `outs`.
pub fn all_gather(outs: &[Tensor], t: &Tensor) -> Result<()> {
    let (_, n) = world()?;
    if outs.len() != n {
        return Err(Error::new(
            ErrorKind::ValueError,
            format!(
                "all_gather: the output list has {} tensors for a world of size {n}",
                outs.len()
            ),
            None,
        ));
    }
    same_layout(outs, t, "all_gather")?;
    check_capture("all_gather");
    let t0 = Instant::now();
    let send = pack(&[t], t.dtype())?;
    let bytes = send.bytes();
    let recv = backend::all_gather(&send, n)?;
    let refs: Vec<&Tensor> = outs.iter().collect();
    unpack(&recv, &refs)?;
    count(bytes * n, t0);
    Ok(())
}

/// Reduces `inputs[r]` over all ranks into `out` on rank r.
pub fn reduce_scatter(out: &Tensor, inputs: &[Tensor], op: ReduceOp) -> Result<()> {
    let (_, n) = world()?;
    if inputs.len() != n {
        return Err(Error::new(
            ErrorKind::ValueError,
            format!(
                "reduce_scatter: the input list has {} tensors for a world of size {n}",
                inputs.len()
            ),
            None,
        ));
    }
    same_layout(inputs, out, "reduce_scatter")?;
    check_capture("reduce_scatter");
    let wop = wire_op(op, out.dtype(), "reduce_scatter")?;
    let t0 = Instant::now();
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let send = pack(&refs, out.dtype())?;
    let bytes = send.bytes();
    let mut recv = backend::reduce_scatter(&send, n, wop)?;
    average(&mut recv, op, n);
    unpack(&recv, &[out])?;
    count(bytes, t0);
    Ok(())
}

/// Every tensor of `ts` has `like`'s shape and dtype.
fn same_layout(ts: &[Tensor], like: &Tensor, what: &str) -> Result<()> {
    for t in ts {
        if t.shape() != like.shape() || t.dtype() != like.dtype() {
            return Err(Error::new(
                ErrorKind::ValueError,
                format!(
                    "{what}: every tensor must have shape {:?} and dtype {}, got {:?} {}",
                    like.shape(),
                    like.dtype(),
                    t.shape(),
                    t.dtype()
                ),
                None,
            ));
        }
    }
    Ok(())
}

/// Ends this process's part in the world: a clean finish (`ok`) leaves it in order, a
/// failed one aborts every rank (so no rank waits on this one in a collective). A no-op
/// when the world was never joined. The CLI calls it on exit; an embedding host that
/// runs distributed scripts calls it too (as `kiln::finish_distributed`).
///
/// ```
/// let mut engine = kiln::Engine::new();
/// let ok = engine.eval("1 + 1").is_ok();
/// kiln::finish_distributed(ok); // no world was joined: nothing to do
/// ```
pub fn finish(ok: bool) {
    backend::finish(ok)
}
