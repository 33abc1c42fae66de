//! The native `_dist` module under stdlib/dist.dl (the `dist` module scripts import):
//! the interpreter's glue to `crate::dist` (MPI collectives), and the hook that runs
//! DistributedDataParallel's gradient averaging after `backward()`.

use super::mathmod::module;
use super::tensor::{int_of, te, tensor_of, Args};
use crate::dist::{self, ReduceOp};
use crate::interp::value::{DictMap, Key, ModuleObj, Value};
use crate::interp::{type_err, value_err, Interp, R};
use crate::tensor::Tensor;
use std::cell::RefCell;
use std::rc::Rc;

type Kw<'a> = &'a [(Rc<str>, Value)];

thread_local! {
    /// DistributedDataParallel wrappers whose forward ran since the last `backward()`.
    static PENDING: RefCell<Vec<Value>> = const { RefCell::new(Vec::new()) };
}

pub fn dist_module() -> Rc<ModuleObj> {
    module(
        "_dist",
        &[
            ("is_available", is_available),
            ("init_process_group", init_process_group),
            ("is_initialized", is_initialized),
            ("get_rank", get_rank),
            ("get_world_size", get_world_size),
            ("barrier", barrier),
            ("all_reduce", all_reduce),
            ("all_reduce_coalesced", all_reduce_coalesced),
            ("broadcast", broadcast),
            ("broadcast_coalesced", broadcast_coalesced),
            ("all_reduce_async", all_reduce_async),
            ("work_test", work_test),
            ("work_wait", work_wait),
            ("all_gather", all_gather),
            ("reduce_scatter", reduce_scatter),
            ("comm_stats", comm_stats),
            ("reset_comm_stats", reset_comm_stats),
            ("expect_backward", expect_backward),
            ("permutation", permutation),
        ],
        &[],
    )
}

fn op_of(a: &Args, i: usize) -> R<ReduceOp> {
    match a.get(i, "op") {
        None => Ok(ReduceOp::Sum),
        Some(Value::Str(s)) => ReduceOp::parse(s)
            .ok_or_else(|| value_err(format!("{}(): unknown ReduceOp '{s}'", a.fname))),
        Some(v) => Err(type_err(format!(
            "{}(): op must be a dist.ReduceOp, not {}",
            a.fname,
            v.type_name()
        ))),
    }
}

fn tensors_of(v: &Value, fname: &str) -> R<Vec<Tensor>> {
    let items = match v {
        Value::List(l) => l.borrow().clone(),
        Value::Tuple(t) => t.to_vec(),
        _ => {
            return Err(type_err(format!(
                "{fname}(): expected a list of tensors, not {}",
                v.type_name()
            )))
        }
    };
    items.iter().map(|x| tensor_of(x, fname)).collect()
}

fn is_available(_: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    Args::new("is_available", a, kw).check(0, &[])?;
    Ok(Value::Bool(dist::available()))
}

/// `init_process_group(backend="mpi", timeout=None, world_size=None, rank=None)`: the
/// world is MPI's; a given world_size or rank must match it.
fn init_process_group(_: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("init_process_group", a, kw);
    a.check(
        1,
        &["backend", "timeout", "world_size", "rank", "init_method"],
    )?;
    match a.get(0, "backend") {
        None => {}
        Some(Value::Str(s)) if matches!(&**s, "mpi" | "gloo" | "nccl") => {}
        Some(Value::Str(s)) => {
            return Err(value_err(format!(
                "init_process_group(): backend must be 'mpi' (or 'gloo'/'nccl', which run on MPI), got '{s}'"
            )))
        }
        Some(v) => {
            return Err(type_err(format!(
                "init_process_group(): backend must be a str, not {}",
                v.type_name()
            )))
        }
    }
    dist::init(a.float(1, "timeout")?).map_err(te)?;
    for (name, want) in [
        ("world_size", dist::world_size().map_err(te)?),
        ("rank", dist::rank().map_err(te)?),
    ] {
        if let Some(v) = a.kw(name).map(|v| int_of(v, a.fname)).transpose()? {
            if v != want as i64 {
                return Err(value_err(format!(
                    "init_process_group(): {name}={v} does not match the MPI world ({name} {want}); \
                     start the ranks with mpirun -np N"
                )));
            }
        }
    }
    Ok(Value::None)
}

fn is_initialized(_: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    Args::new("is_initialized", a, kw).check(0, &[])?;
    Ok(Value::Bool(dist::is_initialized()))
}

fn get_rank(_: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    Args::new("get_rank", a, kw).check(0, &[])?;
    Ok(Value::Int(dist::rank().map_err(te)? as i64))
}

fn get_world_size(_: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    Args::new("get_world_size", a, kw).check(0, &[])?;
    Ok(Value::Int(dist::world_size().map_err(te)? as i64))
}

fn barrier(_: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    Args::new("barrier", a, kw).check(0, &[])?;
    dist::barrier().map_err(te)?;
    Ok(Value::None)
}

/// `all_reduce(tensor, op=ReduceOp.SUM)`, in place.
fn all_reduce(_: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("all_reduce", a, kw);
    a.check(2, &["tensor", "op"])?;
    let t = a.tensor(0, "tensor")?;
    dist::all_reduce(&t, op_of(&a, 1)?).map_err(te)?;
    Ok(Value::None)
}

/// `all_reduce_coalesced(tensors, op)`: one collective per dtype for the whole list.
fn all_reduce_coalesced(_: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("all_reduce_coalesced", a, kw);
    a.check(2, &["tensors", "op"])?;
    let ts = tensors_of(a.required(0, "tensors")?, a.fname)?;
    dist::all_reduce_coalesced(&ts, op_of(&a, 1)?).map_err(te)?;
    Ok(Value::None)
}

/// `broadcast(tensor, src=0)`, in place.
fn broadcast(_: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("broadcast", a, kw);
    a.check(2, &["tensor", "src"])?;
    let t = a.tensor(0, "tensor")?;
    let src = a.int(1, "src")?.unwrap_or(0);
    let src = usize::try_from(src)
        .map_err(|_| value_err(format!("broadcast(): src must be a rank, got {src}")))?;
    dist::broadcast(&t, src).map_err(te)?;
    Ok(Value::None)
}

/// `broadcast_coalesced(tensors, src=0)`: one collective per dtype for the whole list.
fn broadcast_coalesced(_: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("broadcast_coalesced", a, kw);
    a.check(2, &["tensors", "src"])?;
    let ts = tensors_of(a.required(0, "tensors")?, a.fname)?;
    let src = a.int(1, "src")?.unwrap_or(0);
    let src = usize::try_from(src).map_err(|_| {
        value_err(format!(
            "broadcast_coalesced(): src must be a rank, got {src}"
        ))
    })?;
    dist::broadcast_coalesced(&ts, src).map_err(te)?;
    Ok(Value::None)
}

/// `all_reduce_async(tensors, op)`: starts one nonblocking all-reduce per dtype for the
/// whole list; returns the work's number for `work_test` / `work_wait`.
fn all_reduce_async(_: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("all_reduce_async", a, kw);
    a.check(2, &["tensors", "op"])?;
    let ts = tensors_of(a.required(0, "tensors")?, a.fname)?;
    let id = dist::all_reduce_start(&ts, op_of(&a, 1)?).map_err(te)?;
    Ok(Value::Int(id as i64))
}

fn work_id(a: &Args) -> R<u64> {
    let id = a.int(0, "work")?.unwrap_or(0);
    u64::try_from(id).map_err(|_| value_err(format!("{}(): no work {id}", a.fname)))
}

/// `work_test(id)`: lets the work progress; whether it completed (its result written).
fn work_test(_: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("work_test", a, kw);
    a.check(1, &["work"])?;
    Ok(Value::Bool(dist::work_test(work_id(&a)?).map_err(te)?))
}

/// `work_wait(id)`: blocks until the work completed and its result is written.
fn work_wait(_: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("work_wait", a, kw);
    a.check(1, &["work"])?;
    dist::work_wait(work_id(&a)?).map_err(te)?;
    Ok(Value::None)
}

/// `all_gather(tensor_list, tensor)`: rank r's tensor is written into tensor_list[r].
fn all_gather(_: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("all_gather", a, kw);
    a.check(2, &["tensor_list", "tensor"])?;
    let outs = tensors_of(a.required(0, "tensor_list")?, a.fname)?;
    dist::all_gather(&outs, &a.tensor(1, "tensor")?).map_err(te)?;
    Ok(Value::None)
}

/// `reduce_scatter(output, input_list, op=ReduceOp.SUM)`.
fn reduce_scatter(_: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("reduce_scatter", a, kw);
    a.check(3, &["output", "input_list", "op"])?;
    let out = a.tensor(0, "output")?;
    let ins = tensors_of(a.required(1, "input_list")?, a.fname)?;
    dist::reduce_scatter(&out, &ins, op_of(&a, 2)?).map_err(te)?;
    Ok(Value::None)
}

/// `comm_stats()`: {"calls", "bytes", "seconds"} of the collectives since the last reset.
fn comm_stats(_: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    Args::new("comm_stats", a, kw).check(0, &[])?;
    let s = dist::stats();
    let mut m = DictMap::default();
    m.insert(Key(Value::str("calls")), Value::Int(s.calls as i64));
    m.insert(Key(Value::str("bytes")), Value::Int(s.bytes as i64));
    m.insert(Key(Value::str("seconds")), Value::Float(s.seconds));
    Ok(Value::Dict(Rc::new(RefCell::new(m))))
}

fn reset_comm_stats(_: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    Args::new("reset_comm_stats", a, kw).check(0, &[])?;
    dist::reset_stats();
    Ok(Value::None)
}

/// `permutation(n, seed)`: `list(range(n))` shuffled as CPython's
/// `random.Random(seed).shuffle` does, without touching the `random` module's stream
/// (DistributedSampler's per-epoch order, the same on every rank).
fn permutation(_: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("permutation", a, kw);
    a.check(2, &[])?;
    let n = a.int(0, "n")?.unwrap_or(0);
    let n = usize::try_from(n).map_err(|_| value_err(format!("permutation(): negative n {n}")))?;
    let seed = a.int(1, "seed")?.unwrap_or(0);
    let perm = super::pyrandom::PyRandom::new(seed).shuffle_permutation(n);
    let items = perm.into_iter().map(|i| Value::Int(i as i64)).collect();
    Ok(Value::List(Rc::new(RefCell::new(items))))
}

/// `expect_backward(ddp)`: the next `backward()` calls `ddp._after_backward()`.
fn expect_backward(_: &mut Interp, a: &[Value], kw: Kw) -> R<Value> {
    let a = Args::new("expect_backward", a, kw);
    a.check(1, &[])?;
    let obj = a.required(0, "module")?.clone();
    PENDING.with(|p| {
        let mut p = p.borrow_mut();
        if !p.iter().any(|x| x.is(&obj)) {
            p.push(obj);
        }
    });
    Ok(Value::None)
}

impl Interp {
    /// After a `backward()`: the gradient averaging of every DistributedDataParallel
    /// whose forward ran since the last one (one cheap thread-local read otherwise).
    pub fn dist_after_backward(&mut self) -> R<()> {
        let pending = PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()));
        for obj in pending {
            let f = self.get_attr(&obj, "_after_backward")?;
            self.call_value(&f, Vec::new(), Vec::new())?;
        }
        Ok(())
    }
}
