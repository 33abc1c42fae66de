//! Generators: a generator owns a heap frame (its slots while suspended) and the position
//! of the resumable statement executor (gen_exec.rs), so a suspended generator costs no
//! native thread and no native stack. All of a generator's state is in `GenInner`.
//!
//! Resuming pushes the saved slots onto the value stack as a new frame, runs the body
//! from the saved position until the next `yield` (or the end), and moves the slots back.

use super::exc::new_exc_instance;
use super::gen_exec::GFrame;
use super::value::{Function, IterObj, Value};
use super::{err, type_err, value_err, Exc, ExcInner, Interp, R};
use crate::error::ErrorKind;
use std::cell::RefCell;
use std::rc::Rc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GenState {
    #[default]
    Created,
    Suspended,
    Running,
    Done,
}

/// A generator object (`g = f()` where `f` contains `yield`, or a generator expression).
#[derive(Debug)]
pub struct Generator {
    pub func: Rc<Function>,
    pub inner: RefCell<GenInner>,
}

/// Everything a suspended generator keeps.
#[derive(Debug, Default)]
pub struct GenInner {
    pub state: GenState,
    /// The frame's slots while not running (on the value stack while running).
    pub slots: Vec<Value>,
    /// The executor's position: one entry per open block (see `GFrame`).
    pub frames: Vec<GFrame>,
    /// The iterator a suspended `yield from` delegates to.
    pub delegate: Option<Value>,
    /// Exceptions being handled by the generator's `except` blocks while it is suspended.
    pub handling: Vec<ExcInner>,
}

/// How a generator is resumed.
pub enum Resume {
    Send(Value),
    Throw(Exc),
}

/// What a resumed generator did.
pub enum Step {
    Yield(Value),
    Return(Value),
}

impl Drop for Generator {
    /// A generator collected while suspended inside `try/finally` or `with` runs its
    /// cleanup: it is queued and closed by the interpreter at the next statement
    /// boundary of the module (see `Interp::close_dropped_generators`).
    fn drop(&mut self) {
        let inner = self.inner.get_mut();
        if inner.state == GenState::Suspended && inner.frames.iter().any(GFrame::has_cleanup) {
            let g = Generator {
                func: self.func.clone(),
                inner: RefCell::new(std::mem::take(inner)),
            };
            // (at thread exit the queue may be gone: the generator is then just freed)
            let g = Rc::new(g);
            let queued = DROPPED
                .try_with(|d| match d.try_borrow_mut() {
                    Ok(mut q) => {
                        q.push(g.clone());
                        true
                    }
                    Err(_) => false,
                })
                .unwrap_or(false);
            if !queued {
                g.inner.borrow_mut().state = GenState::Done;
            }
        }
    }
}

thread_local! {
    static DROPPED: RefCell<Vec<Rc<Generator>>> = const { RefCell::new(Vec::new()) };
}

/// The generator inside a value, if it is one.
pub fn as_gen(v: &Value) -> Option<Rc<Generator>> {
    match v {
        Value::Iter(cell) => match &*cell.try_borrow().ok()? {
            IterObj::Gen(g) => Some(g.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// `StopIteration(value)` with its `value` attribute.
fn stop_iteration(me: &mut Interp, v: Value) -> Exc {
    let cls = me.b.exc_class(ErrorKind::StopIteration);
    let args = if matches!(v, Value::None) {
        vec![]
    } else {
        vec![v.clone()]
    };
    let inst = new_exc_instance(&cls, args);
    if let Value::Instance(i) = &inst {
        i.put_attr("value", v);
    }
    match me.exc_from_value(inst) {
        Ok(e) | Err(e) => e,
    }
}

impl Interp {
    /// Calling a generator function: the bound arguments at `base` become its frame.
    pub fn new_generator(&mut self, func: Rc<Function>, base: usize) -> R<Value> {
        let top = base + func.proto.n_slots as usize;
        while self.stack.len() < top {
            self.stack.push(Value::Unbound);
        }
        if func.proto.has_cells {
            self.init_cells(&func, base);
        }
        let slots: Vec<Value> = self.stack.drain(base..).collect();
        let g = Generator {
            func,
            inner: RefCell::new(GenInner {
                slots,
                ..GenInner::default()
            }),
        };
        let it = self.make_iter(IterObj::Gen(Rc::new(g)));
        if let Value::Iter(rc) = &it {
            super::gc::track_gen(rc);
        }
        Ok(it)
    }

    /// Resumes a generator: runs it to its next `yield`, its end, or an exception.
    pub fn gen_resume(&mut self, g: &Rc<Generator>, input: Resume) -> R<Step> {
        let (mut frames, slots, mut delegate, handling) = {
            let mut inner = g.inner.borrow_mut();
            match inner.state {
                GenState::Running => return Err(value_err("generator already executing")),
                GenState::Done => {
                    return match input {
                        Resume::Send(_) => Ok(Step::Return(Value::None)),
                        Resume::Throw(e) => Err(e),
                    }
                }
                GenState::Created => match &input {
                    Resume::Send(Value::None) => {}
                    Resume::Send(_) => {
                        return Err(type_err(
                            "can't send non-None value to a just-started generator",
                        ))
                    }
                    Resume::Throw(_) => {
                        inner.state = GenState::Done;
                        let slots = std::mem::take(&mut inner.slots);
                        drop(inner);
                        drop(slots);
                        let Resume::Throw(e) = input else {
                            return Ok(Step::Return(Value::None));
                        };
                        return Err(e);
                    }
                },
                GenState::Suspended => {}
            }
            if self.depth >= self.max_depth {
                return Err(err(
                    ErrorKind::RecursionError,
                    "maximum recursion depth exceeded",
                ));
            }
            inner.state = GenState::Running;
            (
                std::mem::take(&mut inner.frames),
                std::mem::take(&mut inner.slots),
                inner.delegate.take(),
                std::mem::take(&mut inner.handling),
            )
        };
        let base = self.stack.len();
        self.stack.extend(slots);
        let h0 = self.handling.len();
        self.handling.extend(handling);
        let saved_fp = std::mem::replace(&mut self.fp, base);
        let saved_globals = std::mem::replace(&mut self.globals, g.func.globals.clone());
        let saved_func = self.cur_func.replace(g.func.clone());
        self.depth += 1;
        let proto = g.func.proto.clone();
        let r = stacker::maybe_grow(1024 * 1024, 4 * 1024 * 1024, || {
            self.gen_run(&proto.body, &mut frames, &mut delegate, input)
        });
        self.depth -= 1;
        self.cur_func = saved_func;
        self.globals = saved_globals;
        self.fp = saved_fp;
        let slots: Vec<Value> = self.stack.drain(base..).collect();
        let handled: Vec<ExcInner> = self.handling.drain(h0.min(self.handling.len())..).collect();
        let mut inner = g.inner.borrow_mut();
        match r {
            Ok(Step::Yield(v)) => {
                inner.state = GenState::Suspended;
                inner.slots = slots;
                inner.frames = frames;
                inner.delegate = delegate;
                inner.handling = handled;
                Ok(Step::Yield(v))
            }
            Ok(ret) => {
                inner.state = GenState::Done;
                drop(inner);
                drop((slots, frames, handled));
                Ok(ret)
            }
            Err(mut e) => {
                inner.state = GenState::Done;
                drop(inner);
                drop((slots, frames, handled));
                if e.error.kind == ErrorKind::StopIteration {
                    let mut r = err(ErrorKind::RuntimeError, "generator raised StopIteration");
                    r.pending = e.pending.take();
                    r.frames = std::mem::take(&mut e.frames);
                    e = r;
                }
                Err(super::call::add_frame(e, &proto))
            }
        }
    }

    /// `next(g)`: the next value, `None` when the generator finished.
    pub fn gen_next(&mut self, g: &Rc<Generator>) -> R<Option<Value>> {
        match self.gen_resume(g, Resume::Send(Value::None))? {
            Step::Yield(v) => Ok(Some(v)),
            Step::Return(_) => Ok(None),
        }
    }

    /// `next(g)` raising `StopIteration(value)` when the generator returns `value`.
    pub fn gen_next_or_stop(&mut self, g: &Rc<Generator>, input: Resume) -> R<Value> {
        match self.gen_resume(g, input)? {
            Step::Yield(v) => Ok(v),
            Step::Return(v) => Err(stop_iteration(self, v)),
        }
    }

    /// `g.close()`: raises GeneratorExit at the suspended `yield`.
    pub fn gen_close(&mut self, g: &Rc<Generator>) -> R<()> {
        {
            let mut inner = g.inner.borrow_mut();
            match inner.state {
                GenState::Created | GenState::Done => {
                    inner.state = GenState::Done;
                    let slots = std::mem::take(&mut inner.slots);
                    drop(inner);
                    drop(slots);
                    return Ok(());
                }
                GenState::Running => return Err(value_err("generator already executing")),
                GenState::Suspended => {}
            }
        }
        let exit = err(ErrorKind::GeneratorExit, "");
        match self.gen_resume(g, Resume::Throw(exit)) {
            Ok(Step::Yield(_)) => Err(err(
                ErrorKind::RuntimeError,
                "generator ignored GeneratorExit",
            )),
            Ok(Step::Return(_)) => Ok(()),
            Err(e) if matches!(e.error.kind, ErrorKind::GeneratorExit) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// `g.send(v)`, `g.throw(e)`, `g.close()`, `g.__next__()`.
    pub fn gen_method(&mut self, g: &Rc<Generator>, name: &str, args: &[Value]) -> R<Value> {
        let want = |n: usize| -> R<()> {
            if args.len() == n {
                return Ok(());
            }
            Err(type_err(format!(
                "generator.{name}() takes exactly {n} argument{} ({} given)",
                if n == 1 { "" } else { "s" },
                args.len()
            )))
        };
        match name {
            "send" => {
                want(1)?;
                self.gen_next_or_stop(g, Resume::Send(args[0].clone()))
            }
            "__next__" => {
                want(0)?;
                self.gen_next_or_stop(g, Resume::Send(Value::None))
            }
            "close" => {
                want(0)?;
                self.gen_close(g).map(|_| Value::None)
            }
            "throw" => {
                want(1)?;
                let mut v = args[0].clone();
                if let Value::Class(c) = &v {
                    if c.exc_kind().is_some() {
                        v = self.instantiate(&c.clone(), vec![], vec![])?;
                    }
                }
                let e = self.exc_from_value(v)?;
                self.gen_next_or_stop(g, Resume::Throw(e))
            }
            _ => Err(err(
                ErrorKind::AttributeError,
                format!("'generator' object has no attribute '{name}'"),
            )),
        }
    }

    /// Closes the generators collected while suspended in `try/finally` or `with`.
    pub fn close_dropped_generators(&mut self) {
        loop {
            let next = DROPPED.try_with(|d| d.try_borrow_mut().ok().and_then(|mut q| q.pop()));
            let Some(g) = next.ok().flatten() else {
                return;
            };
            // as CPython, an exception raised by such a cleanup is not propagated
            let _ = self.gen_close(&g);
        }
    }
}

/// The methods a generator has (for `g.send` as a value).
pub const GEN_METHODS: &[&str] = &["send", "throw", "close", "__next__"];
