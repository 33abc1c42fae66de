//! The last line of defence at the Engine boundary: a panic inside a run (always a bug
//! in Kiln) comes back as an internal error and the interpreter's run state is restored.

use std::rc::Rc;

use crate::error::{Error, ErrorKind};
use crate::interp::value::Value;
use crate::interp::Interp;

/// The interpreter state a run changes and puts back itself when it ends normally;
/// after a caught panic it is restored from here.
pub(super) struct RunState {
    stack: usize,
    fp: usize,
    globals: Rc<crate::interp::value::ModuleObj>,
    cur_func: Option<Rc<crate::interp::value::Function>>,
    class_ns: usize,
    handling: usize,
    repr_guard: usize,
    grad: bool,
    capturing: bool,
}

impl RunState {
    pub(super) fn save(i: &Interp) -> RunState {
        RunState {
            stack: i.stack.len(),
            fp: i.fp,
            globals: i.globals.clone(),
            cur_func: i.cur_func.clone(),
            class_ns: i.class_ns.len(),
            handling: i.handling.len(),
            repr_guard: i.repr_guard.len(),
            grad: crate::autograd::is_grad_enabled(),
            capturing: crate::compile::capture::trace::capturing(),
        }
    }

    pub(super) fn restore(self, i: &mut Interp) {
        i.stack.truncate(self.stack);
        i.fp = self.fp;
        i.globals = self.globals;
        i.cur_func = self.cur_func;
        i.class_ns.truncate(self.class_ns);
        i.handling.truncate(self.handling);
        i.repr_guard.truncate(self.repr_guard);
        i.ret = Value::None;
        crate::autograd::set_grad_enabled(self.grad);
        if !self.capturing {
            // A capture the panic interrupted: its tracer is dropped.
            drop(crate::compile::capture::trace::finish());
        }
    }
}

/// The error a caught panic becomes (its message kept: it names the bug).
pub(super) fn panic_error(payload: &(dyn std::any::Any + Send)) -> Error {
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_string());
    Error::new(
        ErrorKind::RuntimeError,
        format!("internal error: {msg} (this is a bug in Kiln)"),
        None,
    )
}
