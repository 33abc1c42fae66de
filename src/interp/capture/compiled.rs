//! A `@compile`d callable: `CompiledFn` and its call path. A hit replays the cached
//! graph with the executor; a miss runs the function eagerly under the tracer (so its
//! results, output and errors are eager's) and caches the captured version, or an eager
//! fallback with the graph breaks that forced it.

use crate::compile::autodiff::{self, grad_node};
use crate::compile::capture::cache::{
    EagerReason, EntryKind, GraphEntry, OutTemplate, CACHE_LIMIT,
};
use crate::compile::capture::log::{log, where_text, Phases};
use crate::compile::capture::symguard::SymGuard;
use crate::compile::capture::trace::{self, BreakReason, GraphBreak, LoadGuard, Tracer};
use crate::compile::capture::{check, effects};
use crate::compile::ir::verify;
use crate::compile::passes;
use crate::compile::runtime::exec;
use crate::compile::runtime::lower::compile_graph;
use crate::compile::sym::{self, InputSpec};
use crate::interp::capture::cache::{build_output, Cache, CallKey, Entry};
use crate::interp::value::Value;
use crate::interp::{Interp, R};
use crate::source::SourceMap;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::OnceLock;
use std::time::Instant;

/// A compiled function or bound `forward` of a module.
pub struct CompiledFn {
    /// What runs eagerly: a function, or a bound method.
    pub func: Value,
    pub name: Rc<str>,
    /// `dynamic=True`: every argument dim is symbolic from the first capture.
    pub dynamic: bool,
    /// `check=True`: every call is checked against eager (see check.rs).
    pub check: bool,
    /// `compile(module)`: the module, whose attributes and methods (`parameters()`,
    /// `state_dict()`, `train()`, ...) the compiled value passes through.
    pub module: Option<Value>,
    pub cache: RefCell<Cache>,
}

impl std::fmt::Debug for CompiledFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<compiled function {}>", self.name)
    }
}

/// `KILN_EAGER=1`: no compilation anywhere.
pub fn eager_only() -> bool {
    static EAGER: OnceLock<bool> = OnceLock::new();
    *EAGER.get_or_init(|| std::env::var("KILN_EAGER").is_ok_and(|v| v == "1"))
}

/// The tensors of a call's result, in structure order.
fn tensors_of(v: &Value, out: &mut Vec<crate::tensor::Tensor>) {
    match v {
        Value::Tensor(t) => out.push(t.clone()),
        Value::Tuple(xs) => xs.iter().for_each(|x| tensors_of(x, out)),
        Value::List(xs) => xs.borrow().iter().for_each(|x| tensors_of(x, out)),
        _ => {}
    }
}

/// The lines `explain` shows for an eager reason.
pub fn reason_lines(sources: &SourceMap, r: &EagerReason) -> Vec<String> {
    match r {
        EagerReason::Breaks(bs) => bs
            .iter()
            .map(|b| format!("{} at {}", b.reason.describe(), where_text(sources, b.span)))
            .collect(),
        EagerReason::ComplexArgs => {
            vec!["runs eagerly: an argument is too deep or long to guard".into()]
        }
    }
}

impl Interp {
    /// Calls a compiled function.
    pub fn call_compiled(
        &mut self,
        cf: &Rc<CompiledFn>,
        args: Vec<Value>,
        kw: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        if !self.compile_enabled || trace::capturing() {
            return self.call_value(&cf.func, args, kw);
        }
        let key = CallKey::new(&args, &kw);
        let found = cf.cache.borrow().lookup(&key);
        match found {
            Ok(i) => self.run_entry(cf, i, key, args, kw),
            Err(why) => self.miss(cf, key, &why, args, kw),
        }
    }

    fn run_entry(
        &mut self,
        cf: &Rc<CompiledFn>,
        i: usize,
        key: CallKey,
        args: Vec<Value>,
        kw: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        let mut printed = String::new();
        let outs = {
            let mut cache = cf.cache.borrow_mut();
            cache.last = Some(i);
            let Some(e) = cache.entries.get(i) else {
                return self.call_value(&cf.func, args, kw);
            };
            let EntryKind::Graph(g) = &e.kind else {
                cache.stats.fallbacks += 1;
                drop(cache);
                return self.call_value(&cf.func, args, kw);
            };
            let mut inputs: Vec<_> = key.tensors.into_iter().map(|(t, _)| t).collect();
            let Some(ext) = g.external_inputs(&inputs) else {
                drop(cache);
                return self.call_value(&cf.func, args, kw);
            };
            inputs.extend(ext);
            if cf.check || self.compile_check {
                drop(cache);
                return self.run_checked(cf, i, inputs, args, kw);
            }
            let _no_grad = crate::autograd::no_grad();
            let _busy = crate::tensor::kernels::team::Busy::new();
            g.compiled
                .run(&inputs, &exec::eval, &mut printed)
                .and_then(|mut o| {
                    effects::apply(&g.effects, &inputs, &o, |t| g.compiled.private_value(t))?;
                    if let Some(ad) = &g.autodiff {
                        grad_node::attach(ad, &inputs, &mut o)?;
                    }
                    Ok(build_output(&g.output, &o, &e.consts))
                })
        };
        match outs {
            Ok(v) => {
                if !printed.is_empty() {
                    self.write(&printed);
                }
                cf.cache.borrow_mut().stats.hits += 1;
                Ok(v)
            }
            // The graph is pure (its prints are buffered and dropped on error): rerunning
            // eagerly gives eager's exact output, error and traceback.
            Err(_) => {
                cf.cache.borrow_mut().stats.fallbacks += 1;
                self.call_value(&cf.func, args, kw)
            }
        }
    }

    /// A graph version run under the eager check: the compiled values are kept (its
    /// effects and prints dropped), the function runs eagerly on the same inputs (its
    /// prints and effects stand, its result is returned) and the two are compared.
    fn run_checked(
        &mut self,
        cf: &Rc<CompiledFn>,
        i: usize,
        inputs: Vec<crate::tensor::Tensor>,
        args: Vec<Value>,
        kw: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        let ran = {
            let cache = cf.cache.borrow();
            let Some((EntryKind::Graph(g), consts)) =
                cache.entries.get(i).map(|e| (&e.kind, &e.consts))
            else {
                drop(cache);
                return self.call_value(&cf.func, args, kw);
            };
            let _no_grad = crate::autograd::no_grad();
            let _busy = crate::tensor::kernels::team::Busy::new();
            // The inputs as they are now (eager may update them in place), for `localize`.
            let before: crate::Result<Vec<_>> =
                inputs.iter().map(|t| t.contiguous_copy()).collect();
            // eager then draws the same random numbers as the compiled run
            let rng = crate::tensor::random::save_rng();
            let ran = g
                .compiled
                .run(&inputs, &exec::eval, &mut String::new())
                .and_then(|o| o.iter().map(|t| t.contiguous_copy()).collect())
                .and_then(|o: Vec<_>| {
                    let mut ret = Vec::new();
                    tensors_of(&build_output(&g.output, &o, consts), &mut ret);
                    Ok((o, ret, before?))
                });
            crate::tensor::random::restore_rng(rng);
            ran
        };
        let eager = self.call_value(&cf.func, args, kw)?;
        let (outs, compiled, before) = ran.map_err(crate::interp::repr::fmt_err)?;
        let mut ret = check::Returned {
            compiled,
            eager: Vec::new(),
        };
        tensors_of(&eager, &mut ret.eager);
        let cache = cf.cache.borrow();
        if let Some(EntryKind::Graph(g)) = cache.entries.get(i).map(|e| &e.kind) {
            check::compare(g, &inputs, &outs, ret, &self.sources).map_err(|m| {
                let node = check::localize(g, &before, &self.sources);
                crate::interp::err(
                    crate::error::ErrorKind::RuntimeError,
                    format!("{m}; {node}"),
                )
            })?;
        }
        drop(cache);
        cf.cache.borrow_mut().stats.hits += 1;
        Ok(eager)
    }

    fn miss(
        &mut self,
        cf: &Rc<CompiledFn>,
        key: CallKey,
        why: &str,
        args: Vec<Value>,
        kw: Vec<(Rc<str>, Value)>,
    ) -> R<Value> {
        if cf.cache.borrow().entries.len() >= CACHE_LIMIT {
            let mut c = cf.cache.borrow_mut();
            c.stats.fallbacks += 1;
            if !c.limit_logged {
                c.limit_logged = true;
                log(&format!(
                    "{}: cache limit of {CACHE_LIMIT} versions reached; running eagerly",
                    cf.name
                ));
            }
            drop(c);
            return self.call_value(&cf.func, args, kw);
        }
        if key.too_complex {
            let kind = EntryKind::Eager(EagerReason::ComplexArgs);
            self.store_entry(cf, &key, Vec::new(), (kind, Vec::new()));
            cf.cache.borrow_mut().stats.fallbacks += 1;
            return self.call_value(&cf.func, args, kw);
        }
        let t0 = Instant::now();
        let mut phases = Phases::start();
        let spec = self.dynamic_spec(cf, &key);
        let mut tracer = Tracer::default();
        if cf.cache.borrow_mut().note_dynamic_scalars() > 0 {
            log(&format!(
                "{}: a float it reads changed; recompiling with runtime scalars",
                cf.name
            ));
        }
        tracer.unroll.clone_from(&cf.cache.borrow().unroll);
        tracer
            .dynamic_scalars
            .clone_from(&cf.cache.borrow().dynamic_scalars);
        tracer.spec.clone_from(&spec);
        for (t, path) in &key.tensors {
            tracer.add_arg(t, path.clone());
        }
        trace::start(tracer);
        let res = self.call_value(&cf.func, args, kw);
        let tracer = trace::finish();
        let value = res?;
        phases.mark("trace");
        let Some(mut tracer) = tracer else {
            return Ok(value);
        };
        if self.retry_unrolled(cf, &mut tracer) {
            return Ok(value);
        }
        let args: Vec<_> = key.tensors.iter().map(|(t, _)| t.clone()).collect();
        let mut consts = Vec::new();
        let (kind, sym) = finish_capture(
            &mut tracer,
            (&value, &args),
            spec.as_ref(),
            &mut consts,
            &mut phases,
        );
        {
            let stats = &mut cf.cache.borrow_mut().stats;
            stats.captures += 1;
            let us = u64::try_from(t0.elapsed().as_micros()).unwrap_or(u64::MAX);
            stats.capture_us = stats.capture_us.saturating_add(us);
        }
        self.report(cf, &kind, why, t0);
        phases.log(&cf.name);
        let guards = std::mem::take(&mut tracer.guards);
        self.store_entry(cf, &key, guards, (kind, consts));
        if let Some(e) = cf.cache.borrow_mut().entries.last_mut() {
            e.sym = sym;
        }
        Ok(value)
    }
}

fn internal_break(e: crate::error::Error) -> EntryKind {
    let reason = BreakReason::Internal(e.message);
    EntryKind::Eager(EagerReason::Breaks(vec![GraphBreak {
        reason,
        span: e.span,
    }]))
}

/// Turns a finished capture into a cache entry kind (and, for a version compiled with
/// symbolic sizes, its shape guard). `args`: the argument tensors by input slot; `spec`:
/// the argument dims to make symbolic.
fn finish_capture(
    t: &mut Tracer,
    (value, args): (&Value, &[crate::tensor::Tensor]),
    spec: Option<&InputSpec>,
    consts: &mut Vec<Value>,
    phases: &mut Phases,
) -> (EntryKind, Option<SymGuard>) {
    if crate::interp::capture::capture_print::unprinted_templates(t) {
        t.breaks.push(GraphBreak {
            reason: BreakReason::TensorToPython(
                "an f-string with a tensor used other than in print",
            ),
            span: None,
        });
    }
    if !t.breaks.is_empty() {
        return (
            EntryKind::Eager(EagerReason::Breaks(t.breaks.clone())),
            None,
        );
    }
    let output = match out_template(t, value, 0, consts) {
        Ok(o) => o,
        Err(b) => return (EntryKind::Eager(EagerReason::Breaks(vec![b])), None),
    };
    let grad = crate::autograd::is_grad_enabled() && !t.backward_seen;
    let needs_grad = args.iter().chain(&t.externals).any(|x| x.requires_grad());
    let build = |t: &mut Tracer| {
        let mut outs = Vec::new();
        output_tensors(value, &mut outs);
        autodiff::build(t, &outs, args)
    };
    let pending = match (grad && needs_grad).then(|| build(t)) {
        Some(Err(b)) => return (EntryKind::Eager(EagerReason::Breaks(vec![b])), None),
        Some(Ok(a)) => a,
        None => None,
    };
    phases.mark("autodiff");
    let mut graph = std::mem::take(&mut t.graph);
    let effects = effects::finish(std::mem::take(&mut t.effects), &mut graph);
    if let Err(e) = verify::verify(&graph) {
        return (internal_break(e), None);
    }
    phases.mark("verify");
    let raw = spec.map(|s| sym::analyze(&graph, s, Some(&t.hints)));
    let mut graph = match passes::optimize(graph) {
        Ok(g) => g,
        Err(e) => return (internal_break(e), None),
    };
    phases.mark("optimize");
    let args = spec.map_or(0, |s| s.dims.len());
    let info = raw.map(|r| r.and_then(|info| sym::analyze(&graph, &info.spec(), None)));
    let guard = match info {
        Some(Ok(info)) => {
            let guard = SymGuard::of(&info, args);
            if guard.is_some() {
                graph.sym = Some(Box::new(info));
            }
            guard
        }
        Some(Err(e)) => {
            log(&format!("symbolic shapes abandoned: {}", e.message));
            None
        }
        None => None,
    };
    let (autodiff, guard) = match pending.map(|p| autodiff::finish(p, &mut graph)) {
        None => (None, guard),
        Some(Err(b)) => return (EntryKind::Eager(EagerReason::Breaks(vec![b])), None),
        // The backward may have specialised some of the forward's symbols.
        Some(Ok((ad, true))) => (
            Some(Box::new(ad)),
            graph.sym.as_deref().and_then(|i| SymGuard::of(i, args)),
        ),
        Some(Ok((ad, false))) => {
            log("symbolic shapes abandoned: the backward does not follow them");
            graph.sym = None;
            (Some(Box::new(ad)), None)
        }
    };
    phases.mark("symbolic + backward");
    let compiled = match compile_graph(graph) {
        Ok(c) => c,
        Err(e) => return (internal_break(e), None),
    };
    phases.mark("codegen");
    let mut effects = effects;
    effects::mark_sole(&mut effects, &compiled.graph.outputs);
    let externals = std::mem::take(&mut t.externals);
    let scalars = std::mem::take(&mut t.scalars)
        .into_iter()
        .filter_map(|(_, s, place)| {
            let i = externals.iter().position(|x| x.id() == s.id())?;
            Some((i, place))
        })
        .collect();
    let kind = EntryKind::Graph(Box::new(GraphEntry {
        compiled,
        ext_grad: externals.iter().map(|x| x.requires_grad()).collect(),
        externals,
        grad_of: std::mem::take(&mut t.grad_externals),
        arg_grads: std::mem::take(&mut t.arg_grads),
        scalars,
        output,
        effects,
        autodiff,
    }));
    (kind, guard)
}

impl Interp {
    /// The argument dims a capture makes symbolic: all of them with `dynamic=True`,
    /// else those seen with two sizes (logged when a call adds some).
    fn dynamic_spec(&mut self, cf: &CompiledFn, key: &CallKey) -> Option<InputSpec> {
        let new = cf.cache.borrow_mut().note_dynamic(&key.parts);
        if !new.is_empty() {
            let dims: Vec<String> = new
                .iter()
                .map(|(a, d)| format!("input {a} dim {d}"))
                .collect();
            log(&format!(
                "{}: {} changed size; recompiling with symbolic sizes",
                cf.name,
                dims.join(", ")
            ));
        }
        let cache = cf.cache.borrow();
        if !cf.dynamic && cache.dynamic_dims.is_empty() {
            return None;
        }
        let shapes: Vec<&[usize]> = key.tensors.iter().map(|(t, _)| t.shape()).collect();
        Some(sym::fresh_spec(&shapes, |slot, d| {
            cf.dynamic || cache.dynamic_dims.contains(&(slot, d))
        }))
    }
}

impl Interp {
    fn report(&mut self, cf: &CompiledFn, kind: &EntryKind, why: &str, t0: Instant) {
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        match kind {
            EntryKind::Graph(g) => log(&format!(
                "{}: captured (reason: {why}) {} nodes, {} fused kernels{} in {ms:.2} ms \
                 (optimize + codegen {:.2} ms)",
                cf.name,
                g.compiled.graph.len(),
                g.compiled.fused_total(),
                sym_text(&g.compiled.graph),
                g.compiled.compile_time.as_secs_f64() * 1e3
            )),
            EntryKind::Eager(r) => {
                let lines = reason_lines(&self.sources, r);
                log(&format!(
                    "{}: runs eagerly (reason: {why}): {}",
                    cf.name,
                    lines.join("; ")
                ));
                let mut c = cf.cache.borrow_mut();
                if let (EagerReason::Breaks(_), false) = (r, c.warned) {
                    c.warned = true;
                    c.stats.warnings += 1;
                    if let Some(first) = lines.first() {
                        eprintln!(
                            "warning: @compile: {} falls back to eager: {first}",
                            cf.name
                        );
                    }
                }
            }
        }
    }

    fn store_entry(
        &mut self,
        cf: &CompiledFn,
        key: &CallKey,
        guards: Vec<Box<dyn LoadGuard>>,
        (kind, consts): (EntryKind, Vec<Value>),
    ) {
        let mut c = cf.cache.borrow_mut();
        c.entries.push(Entry {
            key: key.parts.clone(),
            keep: key.keep.clone(),
            guards,
            kind,
            sym: None,
            consts,
        });
        c.last = Some(c.entries.len() - 1);
    }
}

/// `, symbolic sizes (s0 = input 0 dim 0)` for a graph with symbols.
fn sym_text(g: &crate::compile::ir::Graph) -> String {
    match &g.sym {
        Some(info) => format!(", symbolic sizes ({})", sym_names(info).join(", ")),
        None => String::new(),
    }
}

/// `s0 = input 0 dim 0` for each symbolic input dim.
fn sym_names(info: &crate::compile::sym::SymInfo) -> Vec<String> {
    let mut named = Vec::new();
    for (slot, dims) in info.inputs.iter().enumerate() {
        for (d, s) in dims.iter().enumerate() {
            if let Some(s) = s {
                named.push(format!("s{s} = input {slot} dim {d}"));
            }
        }
    }
    named
}

/// What a version's shape guard accepts: `static` (exactly its shapes) or its symbols
/// with their bounds (`s0 = input 0 dim 1, 2 <= s0 <= 64`).
pub fn guard_text(g: &crate::compile::ir::Graph) -> String {
    let Some(info) = &g.sym else {
        return "static".into();
    };
    let mut parts = sym_names(info);
    for (s, (&lo, &hi)) in info.min.iter().zip(&info.max).enumerate() {
        match hi {
            i64::MAX => parts.push(format!("s{s} >= {lo}")),
            hi => parts.push(format!("{lo} <= s{s} <= {hi}")),
        }
    }
    parts.join(", ")
}

/// The output structure of a captured return value, or the break that prevents it.
/// The tensors of a captured return value, in the order `out_template` numbers them.
fn output_tensors(v: &Value, acc: &mut Vec<crate::tensor::Tensor>) {
    match v {
        Value::Tensor(x) => acc.push(x.clone()),
        Value::Tuple(xs) => xs.iter().for_each(|x| output_tensors(x, acc)),
        Value::List(l) => l.borrow().iter().for_each(|x| output_tensors(x, acc)),
        _ => {}
    }
}

/// The value of a symbolic size that a capture returns, guarded by the version.
fn guarded_size(t: &mut Tracer, s: &crate::compile::capture::symint::SymInt) -> Value {
    if s.gen == t.gen {
        let fact = crate::compile::capture::symint::SymFact::Value(s.expr.clone());
        t.hints.facts.push(fact);
    }
    Value::Int(s.value)
}

fn out_template(
    t: &mut Tracer,
    v: &Value,
    depth: usize,
    consts: &mut Vec<Value>,
) -> Result<OutTemplate, GraphBreak> {
    let brk = |w: &'static str| GraphBreak {
        reason: BreakReason::Output(w),
        span: None,
    };
    if depth > 8 {
        return Err(brk("nested too deeply"));
    }
    match v {
        Value::Tensor(x) => {
            let id = t.output_node(x).ok_or(GraphBreak {
                reason: BreakReason::UntracedTensor,
                span: None,
            })?;
            t.graph.outputs.push(id);
            Ok(OutTemplate::Tensor(t.graph.outputs.len() - 1))
        }
        Value::Tuple(xs) => {
            let items = xs
                .iter()
                .map(|x| out_template(t, x, depth + 1, consts))
                .collect::<Result<_, _>>()?;
            Ok(OutTemplate::Tuple(items))
        }
        Value::List(l) => {
            if !t.is_created(Rc::as_ptr(l) as usize) {
                return Err(brk("a list the function did not create"));
            }
            let items = l
                .borrow()
                .iter()
                .map(|x| out_template(t, x, depth + 1, consts))
                .collect::<Result<_, _>>()?;
            Ok(OutTemplate::List(items))
        }
        Value::Dict(_) | Value::Set(_) | Value::FrozenSet(_) | Value::Iter(_) => {
            Err(brk("a dict, set or iterator"))
        }
        // A returned size is a constant of the version: guarded on its value.
        Value::SymInt(s) => {
            consts.push(guarded_size(t, s));
            Ok(OutTemplate::Const(consts.len() - 1))
        }
        // A returned torch.Size likewise, guarded on each symbolic size's value.
        Value::Size(xs) => {
            let items = xs.iter().map(|x| match x {
                Value::SymInt(s) => guarded_size(t, s),
                other => other.clone(),
            });
            consts.push(Value::Size(items.collect()));
            Ok(OutTemplate::Const(consts.len() - 1))
        }
        // A returned runtime scalar is a constant of the version: guarded on its value.
        Value::SymFloat(s) => {
            consts.push(Value::Float(s.concrete_in(t)));
            Ok(OutTemplate::Const(consts.len() - 1))
        }
        // A torch.return_types named tuple (stdlib/return_types.dl) made in the function:
        // its items, returned as a plain tuple (fields by index and unpacking only).
        Value::Instance(i)
            if t.is_created(Rc::as_ptr(i) as usize)
                && i.class.mro.iter().any(|c| &*c.name == "_StructSeq") =>
        {
            let items = i.attr("_t");
            match items {
                Some(tuple @ Value::Tuple(_)) => out_template(t, &tuple, depth + 1, consts),
                _ => Err(brk("an object created in the function")),
            }
        }
        Value::Instance(i) if t.is_created(Rc::as_ptr(i) as usize) => {
            Err(brk("an object created in the function"))
        }
        other => {
            consts.push(other.clone());
            Ok(OutTemplate::Const(consts.len() - 1))
        }
    }
}
