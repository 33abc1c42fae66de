//! The batch rows of a recurrence (a fused LSTM/GRU layer) split into groups run on the
//! team's threads: a batch row never reads another row, so each group runs every step
//! of its rows on its own thread, with one parallel region per layer call and none per
//! step (a step's gemm of a few rows is too small to split with a gain; a hand-off per
//! step left one thread waiting on the other's gate pass).

use super::team;
use crate::error::{Error, ErrorKind, Result};
use crate::tensor::cancel::poll_kernel;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Multiply-adds of a whole recurrence below which it runs as one row group.
const GROUP_MACS: usize = 1 << 19;

/// The batch rows `(r0, r1)` of each group of a recurrence of `macs` multiply-adds:
/// one group per team thread (at most one per row). A batch row never reads another
/// row, so each group runs every step of its rows on its own thread: one parallel
/// region per layer call, none per step.
pub(super) fn row_groups(b: usize, macs: usize) -> Vec<(usize, usize)> {
    let n = if macs < GROUP_MACS {
        1
    } else {
        team::threads().min(b).max(1)
    };
    (0..n).map(|g| (b * g / n, b * (g + 1) / n)).collect()
}

/// `data` (`[T, B, width]`) as each group's rows of every step, `[group][step]`.
pub(super) fn group_rows<'a, T>(
    data: &'a mut [T],
    groups: &[(usize, usize)],
    b: usize,
    width: usize,
) -> Vec<Vec<&'a mut [T]>> {
    let mut per: Vec<Vec<&mut [T]>> = groups.iter().map(|_| Vec::new()).collect();
    for step in data.chunks_exact_mut((b * width).max(1)) {
        let mut rest = step;
        for (g, &(r0, r1)) in groups.iter().enumerate() {
            let (mine, tail) = rest.split_at_mut((r1 - r0) * width);
            per[g].push(mine);
            rest = tail;
        }
    }
    per
}

/// `data` (`[B, width]`) as each group's rows.
pub(super) fn group_block<'a, T>(
    data: &'a mut [T],
    groups: &[(usize, usize)],
    width: usize,
) -> Vec<&'a mut [T]> {
    let mut rest = data;
    let mut per = Vec::with_capacity(groups.len());
    for &(r0, r1) in groups {
        let (mine, tail) = rest.split_at_mut((r1 - r0) * width);
        per.push(mine);
        rest = tail;
    }
    per
}

/// How the groups of one recurrence stop early: the first group's error (an engine
/// interrupt or deadline seen by the calling thread's poll; the helpers have no engine
/// installed) is kept by kind and message (errors stay on their thread) and the others
/// stop at their next step.
pub(super) struct Stop {
    flag: AtomicBool,
    why: Mutex<Option<(ErrorKind, String)>>,
}

impl Stop {
    /// Err when the running engine is interrupted or out of time, or a group failed.
    pub(super) fn poll(&self) -> Result<()> {
        poll_kernel()?;
        if self.flag.load(Ordering::Acquire) {
            return Err(Error::new(ErrorKind::RuntimeError, "stopped", None));
        }
        Ok(())
    }

    /// Keeps the first failure and stops the other groups.
    fn fail(&self, e: &Error) {
        if let Ok(mut why) = self.why.lock() {
            why.get_or_insert_with(|| (e.kind, e.message.clone()));
        }
        self.flag.store(true, Ordering::Release);
    }
}

/// Runs `f(g)` for every group `g < n` on the team; the first failure as the error.
pub(super) fn run_groups(n: usize, f: &(dyn Fn(usize, &Stop) -> Result<()> + Sync)) -> Result<()> {
    let stop = Stop {
        flag: AtomicBool::new(false),
        why: Mutex::new(None),
    };
    team::for_each(n, &|g| {
        if let Err(e) = f(g, &stop) {
            stop.fail(&e);
        }
    });
    let why = stop.why.into_inner().ok().flatten();
    match why {
        Some((kind, message)) => Err(Error::new(kind, message, None)),
        None if stop.flag.into_inner() => Err(internal()),
        None => Ok(()),
    }
}

fn internal() -> Error {
    Error::new(
        ErrorKind::RuntimeError,
        "internal: a recurrent row group failed",
        None,
    )
}

/// One group's buffers of a recurrence, locked by the one task that runs the group.
pub(super) type Group<B> = Mutex<Option<B>>;

pub(super) fn take<B>(g: &Group<B>) -> Result<B> {
    g.lock()
        .ok()
        .and_then(|mut b| b.take())
        .ok_or_else(internal)
}
