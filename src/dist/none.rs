//! The transport of a build without the `mpi` feature: joining a world fails with the
//! way to get one; every collective then finds no world.

use super::{err, Payload, WireOp};
use crate::error::Result;

pub(super) fn init() -> Result<()> {
    Err(err(
        "dist.init_process_group: this Kiln was built without MPI support; install Open MPI \
         (apt-get install openmpi-bin libopenmpi-dev libclang-dev) and build with \
         `--features mpi` (README, \"Distributed training\")",
    ))
}

pub(super) fn is_initialized() -> bool {
    false
}

pub(super) fn world() -> Option<(usize, usize)> {
    None
}

pub(super) fn barrier() -> Result<()> {
    Err(err("dist: no process group"))
}

pub(super) fn all_reduce(_p: &mut Payload, _op: WireOp) -> Result<()> {
    Err(err("dist: no process group"))
}

/// A nonblocking all-reduce: none can start without a world.
pub(super) enum Flight {}

pub(super) fn all_reduce_start(_p: Payload, _op: WireOp) -> Result<Flight> {
    Err(err("dist: no process group"))
}

impl Flight {
    pub(super) fn test(&mut self) -> bool {
        match *self {}
    }

    pub(super) fn finish(&mut self) -> Result<Payload> {
        match *self {}
    }
}

pub(super) fn broadcast(_p: &mut Payload, _src: usize) -> Result<()> {
    Err(err("dist: no process group"))
}

pub(super) fn all_gather(_p: &Payload, _n: usize) -> Result<Payload> {
    Err(err("dist: no process group"))
}

pub(super) fn reduce_scatter(_p: &Payload, _n: usize, _op: WireOp) -> Result<Payload> {
    Err(err("dist: no process group"))
}

pub(super) fn finish(_ok: bool) {}
