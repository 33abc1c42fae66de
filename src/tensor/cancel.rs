//! The cancel state long native kernels poll between chunks: the running engine's
//! interrupt flag and wall-clock deadline, installed per thread by the interpreter for
//! each host entry (`Interp::begin_run`), so kernels need not know the interpreter.

use crate::error::{Error, ErrorKind};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The message of the error a run past its wall-clock deadline raises.
pub const TIME_MSG: &str = "wall-time limit exceeded";

/// What a running kernel polls: the engine's interrupt flag and deadline.
pub struct KernelCancel {
    pub flag: Arc<AtomicBool>,
    pub deadline: Option<Instant>,
}

thread_local! {
    static KERNEL_CANCEL: RefCell<Option<KernelCancel>> = const { RefCell::new(None) };
}

/// Installs the cancel state of this thread's run; returns the one it replaced.
pub fn replace(cancel: Option<KernelCancel>) -> Option<KernelCancel> {
    KERNEL_CANCEL.with(|c| c.replace(cancel))
}

/// Called by long native kernels between chunks of their outer loop: `Err` when the
/// running engine was interrupted (`KeyboardInterrupt`) or ran out of wall time
/// (`LimitExceeded`). Outside an engine run it always succeeds.
pub fn poll_kernel() -> crate::error::Result<()> {
    KERNEL_CANCEL.with(|c| match &*c.borrow() {
        Some(k) if k.flag.load(Ordering::Relaxed) => {
            Err(Error::new(ErrorKind::KeyboardInterrupt, "", None))
        }
        Some(KernelCancel {
            deadline: Some(d), ..
        }) if Instant::now() >= *d => Err(Error::new(ErrorKind::LimitExceeded, TIME_MSG, None)),
        _ => Ok(()),
    })
}
