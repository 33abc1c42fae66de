//! Capture of `for` loops as `IrOp::Loop`. Headers recognised before they are evaluated
//! (so reading the size does not specialise it): `range(x.shape[d])`, `range(len(x))`,
//! `range(x.size(d))`, the same as the stop of `range(a, stop, s)` (Python ints `a`, `s`),
//! and `for row in x` over a tensor local: trip count `TripCount::Dim`. A `range` of
//! Python ints becomes `TripCount::Const` when it runs more than [`UNROLL_MAX`]
//! iterations; shorter ones, and zero-trip loops at capture, are unrolled by the
//! recording. The first iteration is recorded into the body region with the index as a
//! 0-d i64 tensor input (`x[t]` records an `Index` with a runtime index); the other
//! iterations run eagerly with Python ints, as `while` capture does. The loop variable
//! must be used only as a subscript index and not read after the loop (see for_scan.rs),
//! else the loop is unrolled. When the captured body still needs a Python value (a list
//! indexed by the loop index, a graph break, `break`), the call runs eagerly and the
//! next call recaptures with that loop unrolled (the retry is logged).

use super::capture_loop::{bind_aliases, ForTrip, LoopHead};
use crate::compile::capture::trace::{self, BreakReason};
use crate::interp::tree::{CArg, Ex, ExKind, Place, St, StKind, Target};
use crate::interp::value::{ClassKind, NativeCode, TypeTag, Value};
use crate::interp::{at, Flow, Interp, R};
use crate::source::Span;
use crate::tensor::dtype::Scalar;
use crate::tensor::indexing::TensorIndex;
use crate::tensor::Tensor;

/// Loops over at most this many Python-int iterations are unrolled.
pub const UNROLL_MAX: usize = 8;

/// A recognised header.
struct Header {
    start: i64,
    step: i64,
    trip: ForTrip,
    /// Iterations at capture.
    n: usize,
    /// `for row in x`: the tensor iterated over.
    rows: Option<Tensor>,
}

/// The number of values of `range(start, stop, step)` (`step != 0`).
fn range_len(start: i64, stop: i64, step: i64) -> usize {
    let (lo, hi, s) = if step > 0 {
        (start, stop, step)
    } else {
        (stop, start, step.saturating_neg())
    };
    if hi <= lo || s <= 0 {
        return 0;
    }
    let span = (hi as i128 - lo as i128 + s as i128 - 1) / s as i128;
    usize::try_from(span).unwrap_or(usize::MAX)
}

/// Side-effect-free expressions the header may evaluate before deciding.
fn pure(e: &Ex) -> bool {
    match &e.kind {
        ExKind::Const(_) | ExKind::Load(Place::Local(..)) => true,
        ExKind::Unary(_, x) => pure(x),
        ExKind::Binary(_, a, b) => pure(a) && pure(b),
        _ => false,
    }
}

fn positional(args: &[CArg]) -> Option<Vec<&Ex>> {
    args.iter()
        .map(|a| match a {
            CArg::Pos(e) => Some(e),
            _ => None,
        })
        .collect()
}

impl Interp {
    /// A `for` statement `s` during a capture (see the module doc).
    pub(crate) fn exec_for_traced(&mut self, s: &St) -> R<Flow> {
        let StKind::For(target, it, body, orelse) = &s.kind else {
            return Ok(Flow::Normal);
        };
        let head = match self.for_slot(s, target, body, it) {
            Some(slot) => self.for_header(it)?.map(|h| (slot, h)),
            None => None,
        };
        let Some((slot, h)) = head else {
            let itv = self.eval(it)?;
            return self.for_plain(target, &itv, it.span, body, orelse);
        };
        self.for_captured(slot, h, it, body, orelse, s.span)
    }

    /// The loop variable's local slot when the loop may be captured (not asked to be
    /// unrolled, a plain frame, the variable read nowhere outside the loop).
    fn for_slot(&self, s: &St, target: &Target, body: &[St], it: &Ex) -> Option<usize> {
        let Target::Place(Place::Local(slot, _)) = target else {
            return None;
        };
        let f = self.cur_func.as_ref()?;
        let unrolled = trace::with_tracer(|t| t.unroll.contains(&s.span)).unwrap_or(true);
        if unrolled || self.frame_slots().is_none() {
            return None;
        }
        let rows = matches!(it.kind, ExKind::Load(Place::Local(..)));
        let why = if !rows && !super::for_scan::index_only(body, *slot) {
            "is used other than as a tensor subscript inside it"
        } else if super::for_scan::read_outside(&f.proto.body, s, *slot) {
            "is read outside it"
        } else {
            return Some(*slot as usize);
        };
        crate::compile::capture::log::log(&format!(
            "the `for` loop at {} is unrolled: its variable {why}",
            crate::compile::capture::log::where_text(&self.sources, Some(s.span))
        ));
        None
    }

    /// The header as a loop, or None (unrolled) when it is not one of the recognised
    /// forms, runs no iteration at capture, or runs a few known iterations.
    fn for_header(&mut self, it: &Ex) -> R<Option<Header>> {
        if let ExKind::Load(Place::Local(..)) = it.kind {
            let Some(x) = self.eval(it)?.as_tensor() else {
                return Ok(None);
            };
            let (Some(&n), Some(node)) = (x.shape().first(), self.outer_node(&x)) else {
                return Ok(None);
            };
            let trip = ForTrip::Dim { node, dim: 0 };
            return Ok((n > 0).then_some(Header {
                start: 0,
                step: 1,
                trip,
                n,
                rows: Some(x),
            }));
        }
        let ExKind::Call(f, args) = &it.kind else {
            return Ok(None);
        };
        let Some(args) = positional(args).filter(|a| (1..=3).contains(&a.len())) else {
            return Ok(None);
        };
        if !self.is_builtin(
            f,
            |v| matches!(v, Value::Class(c) if c.kind == ClassKind::Builtin(TypeTag::Range)),
        )? {
            return Ok(None);
        }
        let (start, stop, step) = match args[..] {
            [stop] => (Some(0), stop, Some(1)),
            [a, stop] => (self.py_int(a)?, stop, Some(1)),
            [a, stop, s] => (self.py_int(a)?, stop, self.py_int(s)?),
            _ => return Ok(None),
        };
        let (Some(start), Some(step)) = (start, step.filter(|s| *s != 0)) else {
            return Ok(None);
        };
        if let Some(n) = self.py_int(stop)? {
            let len = range_len(start, n, step);
            return Ok((len > UNROLL_MAX).then_some(Header {
                start,
                step,
                trip: ForTrip::Const(len),
                n: len,
                rows: None,
            }));
        }
        if let (Some((node, dim, n)), 0, 1) = (self.sym_trip(stop)?, start, step) {
            return Ok((n > 0).then_some(Header {
                start,
                step,
                trip: ForTrip::Dim { node, dim },
                n,
                rows: None,
            }));
        }
        let Some((x, dim)) = self.size_expr(stop)? else {
            return Ok(None);
        };
        if start < 0 || step < 0 {
            return Ok(None);
        }
        // `TripCount::Dim` counts a dim's size: `range(a, n, s)` counts the size of the
        // recorded view `x[..., a::s]` (Python's slice clamping gives the range's length).
        let x = match (start, step) {
            (0, 1) => x,
            _ => {
                let mut ix = vec![TensorIndex::full(); dim];
                ix.push(TensorIndex::Slice {
                    start: Some(start),
                    stop: None,
                    step: Some(step),
                });
                x.index(&ix).map_err(crate::interp::builtins::tensor::te)?
            }
        };
        let (Some(&n), Some(node)) = (x.shape().get(dim), self.outer_node(&x)) else {
            return Ok(None);
        };
        Ok((n > 0).then_some(Header {
            start,
            step,
            trip: ForTrip::Dim { node, dim },
            n,
            rows: None,
        }))
    }

    /// The node of `x` in the scope enclosing the loop.
    fn outer_node(&self, x: &Tensor) -> Option<crate::compile::ir::NodeId> {
        trace::with_tracer(|t| t.node_of(x)).flatten()
    }

    /// True when `f` (a side-effect-free expression) evaluates to a value `is` accepts.
    fn is_builtin(&mut self, f: &Ex, is: impl Fn(&Value) -> bool) -> R<bool> {
        if !matches!(f.kind, ExKind::Load(_)) {
            return Ok(false);
        }
        Ok(is(&self.eval(f)?))
    }

    /// A side-effect-free expression whose value is a symbolic int exactly the size of an
    /// argument dim (`T` of `B, T = x.shape`): that input's node, dim and size.
    fn sym_trip(&mut self, e: &Ex) -> R<Option<(crate::compile::ir::NodeId, usize, usize)>> {
        if !pure(e) {
            return Ok(None);
        }
        Ok(match &self.eval(e)? {
            Value::SymInt(s) => crate::compile::capture::symint::input_dim(s)
                .and_then(|(node, d)| Some((node, d, usize::try_from(s.value).ok()?))),
            _ => None,
        })
    }

    /// The Python int a side-effect-free expression evaluates to (None: not one).
    fn py_int(&mut self, e: &Ex) -> R<Option<i64>> {
        if !pure(e) {
            return Ok(None);
        }
        Ok(match self.eval(e)? {
            Value::Int(i) => Some(i),
            _ => None,
        })
    }

    /// `x.shape[d]`, `len(x)`, `x.size(d)` of a tensor local `x`: the tensor and dim.
    fn size_expr(&mut self, e: &Ex) -> R<Option<(Tensor, usize)>> {
        let (xe, d) = match &e.kind {
            ExKind::Subscript(a, d) => match &a.kind {
                ExKind::Attr(x, name) if &**name == "shape" => (&**x, Some(&**d)),
                _ => return Ok(None),
            },
            ExKind::CallMethod(x, name, args) if &**name == "size" => {
                match positional(args).as_deref() {
                    Some([d]) => (&**x, Some(*d)),
                    _ => return Ok(None),
                }
            }
            ExKind::Call(f, args) => {
                let is_len = |v: &Value| {
                    matches!(v, Value::Native(n) if &*n.name == "len"
                        && matches!(n.code, NativeCode::Builtin(_)))
                };
                match positional(args).as_deref() {
                    Some([x]) if self.is_builtin(f, is_len)? => (*x, None),
                    _ => return Ok(None),
                }
            }
            _ => return Ok(None),
        };
        if !matches!(xe.kind, ExKind::Load(Place::Local(..))) {
            return Ok(None);
        }
        let d = match d {
            Some(d) => match self.py_int(d)? {
                Some(d) => d,
                None => return Ok(None),
            },
            None => 0,
        };
        let Some(x) = self.eval(xe)?.as_tensor() else {
            return Ok(None);
        };
        let nd = x.ndim() as i64;
        let d = if d < 0 { d + nd } else { d };
        Ok((0..nd).contains(&d).then_some((x, d as usize)))
    }

    /// Records the first iteration into the body region, runs the others eagerly and
    /// appends the `Loop` node.
    fn for_captured(
        &mut self,
        slot: usize,
        h: Header,
        it: &Ex,
        body: &[St],
        orelse: &[St],
        span: Span,
    ) -> R<Flow> {
        let Some(frame) = self.frame_slots() else {
            return Ok(Flow::Normal);
        };
        let i = frame.start + slot;
        self.stack[i] = Value::Unbound;
        let aliases = self.alias_locals(frame.clone());
        let snap: Vec<Value> = self.stack[frame.clone()].to_vec();
        trace::enter_region();
        bind_aliases(&aliases);
        let idx = Tensor::scalar(Scalar::Int(h.start));
        let index_slot = trace::with_tracer(|t| {
            t.loop_index.push((idx.clone(), span));
            t.regions.last_mut().map(|r| r.bind_index(&idx))
        })
        .flatten()
        .unwrap_or(0);
        let first = match &h.rows {
            Some(_) => self.first_row(it, &idx),
            None => Ok(Value::Tensor(idx.clone())),
        };
        let res = first.and_then(|v| {
            self.stack[i] = v;
            self.exec_block(body)
        });
        let body_r = trace::exit_region();
        trace::with_tracer(|t| t.loop_index.retain(|(x, _)| x.id() != idx.id()));
        let flow = res?;
        let body_r = match (body_r, flow) {
            (Some(r), Flow::Normal | Flow::Continue) if trace::active() => r,
            (_, flow) => return self.for_give_up(&h, i, body, orelse, flow, span),
        };
        let carried = self.carried_slots(&aliases, &snap, frame.clone(), body, span, "for")?;
        let Some(carried) = carried else {
            return self.for_give_up(&h, i, body, orelse, Flow::Normal, span);
        };
        if let Some(f) = trace::paused(|| self.for_rest(&h, i, body))? {
            return self.for_give_up(&h, i, body, orelse, f, span);
        }
        let head = LoopHead::For {
            index_slot,
            trip: h.trip,
            start: h.start,
            step: h.step,
        };
        self.build_loop(&aliases, &carried, head, body_r, frame, span);
        self.exec_block(orelse)
    }

    /// `x[idx]` for `for row in x`, recorded (the local `x` holds its alias now).
    fn first_row(&mut self, it: &Ex, idx: &Tensor) -> R<Value> {
        let Some(x) = self.eval(it)?.as_tensor() else {
            return Ok(Value::None);
        };
        let row = x.index(&[TensorIndex::Indices(idx.clone())]);
        row.map(Value::Tensor)
            .map_err(|e| at(crate::interp::builtins::tensor::te(e), it.span))
    }

    /// The loop cannot be captured as an IR loop: a graph break (this call runs
    /// eagerly), the next capture unrolls it; the loop goes on eagerly after its first
    /// iteration left with `flow`.
    fn for_give_up(
        &mut self,
        h: &Header,
        i: usize,
        body: &[St],
        orelse: &[St],
        flow: Flow,
        span: Span,
    ) -> R<Flow> {
        trace::with_tracer(|t| t.retry.push(span));
        trace::graph_break(BreakReason::ControlFlow(
            "a captured `for` loop needs a Python value (recaptured unrolled)",
        ));
        let rest = match flow {
            Flow::Break => return Ok(Flow::Normal),
            Flow::Return => return Ok(Flow::Return),
            _ => self.for_rest(h, i, body)?,
        };
        match rest {
            Some(f) => Ok(f),
            None => self.exec_block(orelse),
        }
    }

    /// Iterations 1.. run as eager runs them; Some(flow) when one left by `break`
    /// (`Normal`) or `return`.
    fn for_rest(&mut self, h: &Header, i: usize, body: &[St]) -> R<Option<Flow>> {
        for k in 1..h.n {
            self.check_interrupt()?;
            let v = (k as i64)
                .checked_mul(h.step)
                .and_then(|v| v.checked_add(h.start))
                .unwrap_or(i64::MAX);
            let v = match &h.rows {
                Some(x) => Value::Tensor(
                    x.index(&[TensorIndex::Int(v)])
                        .map_err(crate::interp::builtins::tensor::te)?,
                ),
                None => Value::Int(v),
            };
            self.stack[i] = v;
            match self.exec_block(body)? {
                Flow::Break => return Ok(Some(Flow::Normal)),
                Flow::Return => return Ok(Some(Flow::Return)),
                Flow::Normal | Flow::Continue => {}
            }
        }
        Ok(None)
    }
}

/// During a capture, a loop index tensor used to subscript a non-tensor (a list, a
/// dict, an object): the Python int it stands for, and the loop is retried unrolled.
pub(crate) fn python_index(i: Value) -> Value {
    let found = |t: &Tensor| {
        trace::with_tracer(|tr| {
            let (_, span) = tr.loop_index.iter().find(|(x, _)| x.id() == t.id())?;
            let span = *span;
            tr.retry.push(span);
            Some(())
        })
        .flatten()
        .and_then(|_| t.item().ok())
        .map(|s| s.as_i64())
    };
    match &i {
        Value::Tensor(t) => match found(t) {
            Some(k) => {
                trace::graph_break(BreakReason::TensorToPython("a `for` loop index"));
                Value::Int(k)
            }
            None => i,
        },
        Value::Tuple(xs) if xs.iter().any(|x| matches!(x, Value::Tensor(_))) => {
            Value::tuple(xs.iter().map(|x| python_index(x.clone())).collect())
        }
        _ => i,
    }
}

impl Interp {
    /// After a capture: when a `for` loop captured as an IR loop needed Python values,
    /// the next capture unrolls it (logged); true when that happened (the call ran
    /// eagerly and no version is cached).
    pub(crate) fn retry_unrolled(
        &mut self,
        cf: &crate::interp::capture::compiled::CompiledFn,
        t: &mut trace::Tracer,
    ) -> bool {
        if t.retry.is_empty() {
            return false;
        }
        let mut c = cf.cache.borrow_mut();
        c.stats.fallbacks += 1;
        for span in t.retry.drain(..) {
            if c.unroll.contains(&span) {
                continue;
            }
            c.unroll.push(span);
            crate::compile::capture::log::log(&format!(
                "{}: the `for` loop at {} could not be captured as a loop (its index is \
                 needed as a Python int, or its body broke the graph); recapturing it unrolled",
                cf.name,
                crate::compile::capture::log::where_text(&self.sources, Some(span))
            ));
        }
        true
    }
}

trait AsTensor {
    fn as_tensor(&self) -> Option<Tensor>;
}

impl AsTensor for Value {
    /// The tensor this value is (None: another value).
    fn as_tensor(&self) -> Option<Tensor> {
        match self {
            Value::Tensor(t) => Some(t.clone()),
            _ => None,
        }
    }
}
