//! The resumable statement executor that runs generator bodies.
//!
//! Its position is an explicit stack of `GFrame`s, one per open block: the root body,
//! then the branch of an `if`, the body of a loop, a `try` clause or a `with` body, each
//! with the index of the statement it is at. Compound statements are run here; simple
//! statements and all expressions go through the ordinary recursive `exec`/`eval`. At a
//! `yield` statement the executor returns, leaving its frames to be resumed later.

use super::gen::{as_gen, Resume, Step};
use super::tree::{St, StKind, Target, YieldTarget};
use super::value::Value;
use super::{at, Exc, Flow, Interp, R};
use crate::error::ErrorKind;

/// One open block of a suspended generator and the statement it is at.
#[derive(Debug)]
pub struct GFrame {
    kind: FKind,
    idx: usize,
}

/// Which block of its parent's current statement a frame runs.
#[derive(Debug)]
enum FKind {
    Root,
    IfBody,
    IfElse,
    WhileBody,
    WhileElse,
    /// A `for` body and its iterator; `idx` past the end means "fetch the next item".
    ForBody(Value),
    ForElse,
    TryBody,
    TryHandler(usize),
    TryElse,
    /// A `finally` clause and what to do after it (`None`: go on after the `try`).
    TryFinally(Option<Completion>),
    /// A `with` body and the `__exit__` methods of its managers, in entry order.
    WithBody(Vec<Value>),
}

/// A non-local exit passing through the frames (Python's "completion record").
#[derive(Debug)]
enum Completion {
    Return(Value),
    Break,
    Continue,
    Exc(Exc),
}

impl GFrame {
    /// Whether closing a generator suspended here must run code (`finally`, `__exit__`).
    pub fn has_cleanup(&self) -> bool {
        matches!(
            self.kind,
            FKind::TryBody | FKind::TryHandler(_) | FKind::TryElse | FKind::WithBody(_)
        )
    }
}

/// The block `frames` is in (the last frame's block), found from the body's root.
fn block<'a>(body: &'a [St], frames: &[GFrame]) -> &'a [St] {
    let mut b = body;
    for w in frames.windows(2) {
        b = match b.get(w[0].idx) {
            Some(st) => sub_block(st, &w[1].kind),
            None => &[],
        };
    }
    b
}

/// The statement owning the last frame's block.
fn owner<'a>(body: &'a [St], frames: &[GFrame]) -> Option<&'a St> {
    let n = frames.len().checked_sub(1)?;
    let parent = frames.get(n.checked_sub(1)?)?;
    block(body, &frames[..n]).get(parent.idx)
}

fn sub_block<'a>(st: &'a St, k: &FKind) -> &'a [St] {
    match (&st.kind, k) {
        (StKind::If(_, b, _), FKind::IfBody)
        | (StKind::While(_, b, _), FKind::WhileBody)
        | (StKind::For(_, _, b, _), FKind::ForBody(_))
        | (StKind::With(_, b), FKind::WithBody(_)) => b,
        (StKind::If(_, _, o), FKind::IfElse)
        | (StKind::While(_, _, o), FKind::WhileElse)
        | (StKind::For(_, _, _, o), FKind::ForElse) => o,
        (StKind::Try(t), FKind::TryBody) => &t.body,
        (StKind::Try(t), FKind::TryHandler(i)) => t.handlers.get(*i).map_or(&[], |h| &h.body),
        (StKind::Try(t), FKind::TryElse) => &t.orelse,
        (StKind::Try(t), FKind::TryFinally(_)) => &t.finalbody,
        _ => &[],
    }
}

fn push(frames: &mut Vec<GFrame>, kind: FKind) {
    frames.push(GFrame { kind, idx: 0 });
}

/// Leaves the last frame and moves its parent past the statement that opened it.
fn pop_next(frames: &mut Vec<GFrame>) {
    frames.pop();
    if let Some(f) = frames.last_mut() {
        f.idx += 1;
    }
}

impl Interp {
    /// Runs a generator body from its saved position to the next `yield` or its end.
    pub(crate) fn gen_run(
        &mut self,
        body: &[St],
        frames: &mut Vec<GFrame>,
        delegate: &mut Option<Value>,
        input: Resume,
    ) -> R<Step> {
        let mut pending = None;
        if frames.is_empty() {
            push(frames, FKind::Root);
        } else {
            let Some(st) = block(body, frames).get(frames[frames.len() - 1].idx) else {
                return Ok(Step::Return(Value::None));
            };
            let StKind::Yield(_, _, store) = &st.kind else {
                return Ok(Step::Return(Value::None));
            };
            let sent = match delegate.take() {
                Some(d) => match self.delegate_step(&d, input) {
                    Ok(Step::Yield(v)) => {
                        *delegate = Some(d);
                        return Ok(Step::Yield(v));
                    }
                    Ok(Step::Return(v)) => Ok(v),
                    Err(e) => Err(e),
                },
                None => match input {
                    Resume::Send(v) => Ok(v),
                    Resume::Throw(e) => Err(e),
                },
            };
            match sent.and_then(|v| self.yield_store(store, v)) {
                Ok(()) => {
                    let top = frames.len() - 1;
                    frames[top].idx += 1;
                }
                Err(e) => pending = Some(Completion::Exc(at(e, st.span))),
            }
        }
        loop {
            if let Some(c) = pending.take() {
                if let Some(step) = self.unwind(body, frames, c)? {
                    return Ok(step);
                }
                continue;
            }
            let top = frames.len() - 1;
            let Some(st) = block(body, frames).get(frames[top].idx) else {
                match self.block_end(body, frames) {
                    Ok(Some(step)) => return Ok(step),
                    Ok(None) => {}
                    Err(c) => pending = Some(c),
                }
                continue;
            };
            match self.gen_stmt(st, frames, delegate) {
                Ok(Some(step)) => return Ok(step),
                Ok(None) => {}
                Err(c) => pending = Some(c),
            }
        }
    }

    /// One statement at the current position; `Some` when the generator yields.
    fn gen_stmt(
        &mut self,
        st: &St,
        frames: &mut Vec<GFrame>,
        delegate: &mut Option<Value>,
    ) -> Result<Option<Step>, Completion> {
        let exc = |e: Exc| Completion::Exc(at(e, st.span));
        let top = frames.len() - 1;
        match &st.kind {
            StKind::If(c, _, _) => {
                let kind = if self.cond(c).map_err(exc)? {
                    FKind::IfBody
                } else {
                    FKind::IfElse
                };
                push(frames, kind);
            }
            StKind::While(c, _, orelse) => {
                self.check_interrupt().map_err(exc)?;
                if self.cond(c).map_err(exc)? {
                    push(frames, FKind::WhileBody);
                } else if orelse.is_empty() {
                    frames[top].idx += 1;
                } else {
                    push(frames, FKind::WhileElse);
                }
            }
            StKind::For(_, it, _, _) => {
                let v = self.eval(it).map_err(exc)?;
                let iter = self.get_iter(&v).map_err(|e| exc(at(e, it.span)))?;
                frames.push(GFrame {
                    kind: FKind::ForBody(iter),
                    idx: usize::MAX,
                });
            }
            StKind::Try(_) => push(frames, FKind::TryBody),
            StKind::With(items, _) => {
                let mut exits = Vec::with_capacity(items.len());
                for (ce, target) in items {
                    if let Err(e) = self.enter_one(ce, target.as_ref(), &mut exits) {
                        push(frames, FKind::WithBody(exits));
                        return Err(exc(e));
                    }
                }
                push(frames, FKind::WithBody(exits));
            }
            StKind::Break => return Err(Completion::Break),
            StKind::Continue => return Err(Completion::Continue),
            StKind::Return(e) => {
                let v = match e {
                    Some(e) => self.eval(e).map_err(exc)?,
                    None => Value::None,
                };
                return Err(Completion::Return(v));
            }
            StKind::Yield(v, false, _) => {
                let v = match v {
                    Some(v) => self.eval(v).map_err(exc)?,
                    None => Value::None,
                };
                return Ok(Some(Step::Yield(v)));
            }
            StKind::Yield(v, true, store) => {
                let src = match v {
                    Some(v) => self.eval(v).map_err(exc)?,
                    None => Value::None,
                };
                let d = self.get_iter(&src).map_err(exc)?;
                match self
                    .delegate_step(&d, Resume::Send(Value::None))
                    .map_err(exc)?
                {
                    Step::Yield(x) => {
                        *delegate = Some(d);
                        return Ok(Some(Step::Yield(x)));
                    }
                    Step::Return(r) => {
                        self.yield_store(store, r).map_err(exc)?;
                        frames[top].idx += 1;
                    }
                }
            }
            _ => match self.exec(st) {
                Ok(Flow::Normal) => frames[top].idx += 1,
                Ok(Flow::Return) => return Err(Completion::Return(std::mem::take(&mut self.ret))),
                Ok(Flow::Break) => return Err(Completion::Break),
                Ok(Flow::Continue) => return Err(Completion::Continue),
                Err(e) => return Err(Completion::Exc(e)),
            },
        }
        Ok(None)
    }

    /// Enters one `with` item: evaluates the manager, calls `__enter__`, binds the target.
    fn enter_one(
        &mut self,
        ce: &super::tree::Ex,
        t: Option<&Target>,
        exits: &mut Vec<Value>,
    ) -> R<()> {
        let (exit, v) = self.enter_manager(ce)?;
        exits.push(exit);
        if let Some(t) = t {
            self.store(t, v)?;
        }
        Ok(())
    }

    /// Sends into (or throws into) the iterator a `yield from` delegates to.
    fn delegate_step(&mut self, d: &Value, input: Resume) -> R<Step> {
        if let Some(g) = as_gen(d) {
            if let Resume::Throw(e) = &input {
                if e.error.kind == ErrorKind::GeneratorExit {
                    self.gen_close(&g)?;
                    return Err(input_exc(input));
                }
            }
            return self.gen_resume(&g, input);
        }
        match input {
            Resume::Send(Value::None) => Ok(match self.next_of(d)? {
                Some(v) => Step::Yield(v),
                None => Step::Return(Value::None),
            }),
            Resume::Send(v) => {
                let send = self.get_attr(d, "send")?;
                match self.call_value(&send, vec![v], vec![]) {
                    Ok(x) => Ok(Step::Yield(x)),
                    Err(e) if e.error.kind == ErrorKind::StopIteration => {
                        Ok(Step::Return(Value::None))
                    }
                    Err(e) => Err(e),
                }
            }
            Resume::Throw(e) => Err(e),
        }
    }

    /// Stores the value sent into a `yield` statement.
    fn yield_store(&mut self, store: &YieldTarget, v: Value) -> R<()> {
        match store {
            YieldTarget::Discard => Ok(()),
            YieldTarget::Assign(ts) => {
                for t in ts {
                    self.store(t, v.clone())?;
                }
                Ok(())
            }
            YieldTarget::Aug(t, op) => self.aug_assign_with(t, *op, |_| Ok(v)),
        }
    }

    /// The end of the last frame's block.
    fn block_end(
        &mut self,
        body: &[St],
        frames: &mut Vec<GFrame>,
    ) -> Result<Option<Step>, Completion> {
        let top = frames.len() - 1;
        match &frames[top].kind {
            FKind::Root => return Ok(Some(Step::Return(Value::None))),
            FKind::IfBody | FKind::IfElse | FKind::WhileElse | FKind::ForElse => {
                pop_next(frames);
            }
            // back to the `while` statement, which tests its condition again
            FKind::WhileBody => {
                frames.pop();
            }
            FKind::ForBody(iter) => {
                let iter = iter.clone();
                let Some(st) = owner(body, frames) else {
                    pop_next(frames);
                    return Ok(None);
                };
                let StKind::For(target, it, _, orelse) = &st.kind else {
                    pop_next(frames);
                    return Ok(None);
                };
                self.check_interrupt()
                    .map_err(|e| Completion::Exc(at(e, st.span)))?;
                match self.next_of(&iter) {
                    Ok(Some(v)) => {
                        frames[top].idx = 0;
                        self.store(target, v)
                            .map_err(|e| Completion::Exc(at(e, st.span)))?;
                    }
                    Ok(None) => {
                        frames.pop();
                        if orelse.is_empty() {
                            frames[top - 1].idx += 1;
                        } else {
                            push(frames, FKind::ForElse);
                        }
                    }
                    Err(e) => return Err(Completion::Exc(at(at(e, it.span), st.span))),
                }
            }
            FKind::TryBody => {
                let has_else = matches!(owner(body, frames), Some(St { kind: StKind::Try(t), .. }) if !t.orelse.is_empty());
                if has_else {
                    frames[top] = GFrame {
                        kind: FKind::TryElse,
                        idx: 0,
                    };
                } else {
                    self.try_finish(body, frames, None);
                }
            }
            FKind::TryElse => {
                self.try_finish(body, frames, None);
            }
            FKind::TryHandler(i) => {
                let i = *i;
                self.leave_handler(body, frames, i);
                self.try_finish(body, frames, None);
            }
            FKind::TryFinally(_) => {
                let Some(GFrame {
                    kind: FKind::TryFinally(p),
                    ..
                }) = frames.pop()
                else {
                    return Ok(None);
                };
                match p {
                    Some(c) => return Err(c),
                    None => {
                        if let Some(f) = frames.last_mut() {
                            f.idx += 1;
                        }
                    }
                }
            }
            FKind::WithBody(_) => {
                let Some(GFrame {
                    kind: FKind::WithBody(exits),
                    ..
                }) = frames.pop()
                else {
                    return Ok(None);
                };
                for exit in exits.iter().rev() {
                    let none = || Value::None;
                    if let Err(e) = self.call_value(exit, vec![none(), none(), none()], vec![]) {
                        return Err(Completion::Exc(e));
                    }
                }
                if let Some(f) = frames.last_mut() {
                    f.idx += 1;
                }
            }
        }
        Ok(None)
    }

    /// Ends an `except` clause: the exception is no longer being handled, its name unbound.
    fn leave_handler(&mut self, body: &[St], frames: &[GFrame], i: usize) {
        self.handling.pop();
        if let Some(St {
            kind: StKind::Try(t),
            ..
        }) = owner(body, frames)
        {
            if let Some(Some(Target::Place(p))) = t.handlers.get(i).map(|h| &h.name) {
                let _ = self.store_place(p, Value::Unbound);
            }
        }
    }

    /// A `try` clause ended with `c` (`None`: normally): run `finally`, or leave the `try`.
    fn try_finish(
        &mut self,
        body: &[St],
        frames: &mut Vec<GFrame>,
        c: Option<Completion>,
    ) -> Option<Completion> {
        let has_finally = matches!(owner(body, frames), Some(St { kind: StKind::Try(t), .. }) if !t.finalbody.is_empty());
        let top = frames.len() - 1;
        if has_finally {
            frames[top] = GFrame {
                kind: FKind::TryFinally(c),
                idx: 0,
            };
            return None;
        }
        match c {
            Some(c) => {
                frames.pop();
                Some(c)
            }
            None => {
                pop_next(frames);
                None
            }
        }
    }

    /// Propagates a completion outward through the frames: `Ok(None)` once a frame takes
    /// it over (a handler, a `finally`, a loop), `Ok(Some)` when the generator ends.
    fn unwind(
        &mut self,
        body: &[St],
        frames: &mut Vec<GFrame>,
        mut c: Completion,
    ) -> R<Option<Step>> {
        loop {
            let top = frames.len() - 1;
            match &frames[top].kind {
                FKind::Root => {
                    return match c {
                        Completion::Return(v) => Ok(Some(Step::Return(v))),
                        Completion::Exc(e) => Err(e),
                        Completion::Break | Completion::Continue => {
                            Ok(Some(Step::Return(Value::None)))
                        }
                    }
                }
                FKind::WhileBody => match c {
                    Completion::Break => {
                        pop_next(frames);
                        return Ok(None);
                    }
                    Completion::Continue => {
                        frames.pop();
                        return Ok(None);
                    }
                    _ => {
                        frames.pop();
                    }
                },
                FKind::ForBody(_) => match c {
                    Completion::Break => {
                        pop_next(frames);
                        return Ok(None);
                    }
                    Completion::Continue => {
                        frames[top].idx = usize::MAX;
                        return Ok(None);
                    }
                    _ => {
                        frames.pop();
                    }
                },
                FKind::TryBody => {
                    if let Completion::Exc(e) = c {
                        match self.gen_handle(body, frames, e) {
                            Ok(()) => return Ok(None),
                            Err(e) => c = Completion::Exc(e),
                        }
                    }
                    match self.try_finish(body, frames, Some(c)) {
                        None => return Ok(None),
                        Some(next) => c = next,
                    }
                }
                FKind::TryHandler(i) => {
                    let i = *i;
                    self.leave_handler(body, frames, i);
                    match self.try_finish(body, frames, Some(c)) {
                        None => return Ok(None),
                        Some(next) => c = next,
                    }
                }
                FKind::TryElse => match self.try_finish(body, frames, Some(c)) {
                    None => return Ok(None),
                    Some(next) => c = next,
                },
                FKind::TryFinally(_) => {
                    frames.pop();
                }
                FKind::WithBody(_) => {
                    let Some(GFrame {
                        kind: FKind::WithBody(exits),
                        ..
                    }) = frames.pop()
                    else {
                        continue;
                    };
                    match self.with_exit(exits, c) {
                        Ok(Some(next)) => c = next,
                        Ok(None) => {
                            if let Some(f) = frames.last_mut() {
                                f.idx += 1;
                            }
                            return Ok(None);
                        }
                        Err(e) => c = Completion::Exc(e),
                    }
                }
                FKind::IfBody | FKind::IfElse | FKind::WhileElse | FKind::ForElse => {
                    frames.pop();
                }
            }
        }
    }

    /// Calls a `with` statement's `__exit__`s for a completion: `Ok(None)` when an
    /// exception was suppressed.
    fn with_exit(&mut self, exits: Vec<Value>, mut c: Completion) -> R<Option<Completion>> {
        for exit in exits.iter().rev() {
            match &mut c {
                Completion::Exc(e) if e.error.kind != ErrorKind::LimitExceeded => {
                    let cls = Value::Class(self.exc_class(e));
                    let val = self.exc_value(e);
                    let sup = self.call_value(exit, vec![cls, val, Value::None], vec![])?;
                    if self.truthy(&sup)? {
                        return Ok(None);
                    }
                }
                _ => {
                    let none = || Value::None;
                    self.call_value(exit, vec![none(), none(), none()], vec![])?;
                }
            }
        }
        Ok(Some(c))
    }

    /// An exception in a `try` body: enters the first matching `except` clause.
    fn gen_handle(&mut self, body: &[St], frames: &mut [GFrame], mut e: Exc) -> Result<(), Exc> {
        if e.error.kind == ErrorKind::LimitExceeded {
            return Err(e);
        }
        let Some(St {
            kind: StKind::Try(t),
            ..
        }) = owner(body, frames)
        else {
            return Err(e);
        };
        let Some(i) = self.find_handler(t, &mut e)? else {
            return Err(e);
        };
        self.handling.push(*e);
        let top = frames.len() - 1;
        frames[top] = GFrame {
            kind: FKind::TryHandler(i),
            idx: 0,
        };
        Ok(())
    }
}

/// The exception a `Resume::Throw` carries.
fn input_exc(input: Resume) -> Exc {
    match input {
        Resume::Throw(e) => e,
        Resume::Send(_) => super::err(ErrorKind::RuntimeError, "generator resumed"),
    }
}
