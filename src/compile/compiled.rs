//! A `@compile`d callable: `CompiledFn` and its call path. A hit replays the cached
//! graph with the executor; a miss runs the function eagerly under the tracer (so its
//! results, output and errors are eager's) and caches the captured version, or an eager
//! fallback with the graph breaks that forced it.

use super::cache::{
    Cache, CallKey, EagerReason, Entry, EntryKind, GraphEntry, OutTemplate, CACHE_LIMIT,
};
use super::lower::compile_graph;
use super::trace::{self, BreakReason, GraphBreak, Tracer};
use super::{exec, passes, verify};
use crate::interp::value::Value;
use crate::interp::{Interp, R};
use crate::source::{SourceMap, Span};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::OnceLock;
use std::time::Instant;

/// A compiled function or bound `forward` of a module.
pub struct CompiledFn {
    /// What runs eagerly: a function, or a bound method.
    pub func: Value,
    pub name: Rc<str>,
    /// `dynamic=True` was asked for (symbolic shapes are issue 6; static for now).
    pub dynamic: bool,
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

/// `KILN_LOG=compile` (or a comma list containing it).
fn log_on() -> bool {
    static LOG: OnceLock<bool> = OnceLock::new();
    *LOG.get_or_init(|| {
        std::env::var("KILN_LOG").is_ok_and(|v| v.split(',').any(|p| p.trim() == "compile"))
    })
}

fn log(msg: &str) {
    if log_on() {
        eprintln!("compile: {msg}");
    }
}

/// `file.dl:3:5` for a span.
pub fn where_text(sources: &SourceMap, span: Option<Span>) -> String {
    let Some(s) = span else {
        return "<unknown>".into();
    };
    let name = sources
        .get(s.file)
        .map_or("<unknown>".into(), |f| f.name.to_string());
    let (line, col) = sources.line_col(s.file, s.start);
    format!("{name}:{line}:{col}")
}

/// The lines `explain` shows for an eager reason.
pub fn reason_lines(sources: &SourceMap, r: &EagerReason) -> Vec<String> {
    match r {
        EagerReason::Breaks(bs) => bs
            .iter()
            .map(|b| format!("{} at {}", b.reason.describe(), where_text(sources, b.span)))
            .collect(),
        EagerReason::GradRequired => {
            vec!["runs eagerly: grad mode is on and an input requires grad".into()]
        }
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
        let found = cf.cache.borrow().lookup(&key.parts);
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
            inputs.extend(g.externals.iter().cloned());
            g.compiled
                .run(&inputs, &exec::eval, &mut printed)
                .map(|o| g.output.build(&o))
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
            self.store_entry(
                cf,
                &key,
                Vec::new(),
                EntryKind::Eager(EagerReason::ComplexArgs),
            );
            cf.cache.borrow_mut().stats.fallbacks += 1;
            return self.call_value(&cf.func, args, kw);
        }
        let t0 = Instant::now();
        let mut tracer = Tracer::default();
        for (t, path) in &key.tensors {
            tracer.add_arg(t, path.clone());
        }
        trace::start(tracer);
        let res = self.call_value(&cf.func, args, kw);
        let tracer = trace::finish();
        let value = res?;
        let Some(mut tracer) = tracer else {
            return Ok(value);
        };
        let arg_grad = key.tensors.iter().any(|(t, _)| t.requires_grad());
        let kind = finish_capture(&mut tracer, &value, arg_grad);
        cf.cache.borrow_mut().stats.captures += 1;
        self.report(cf, &kind, why, t0);
        self.store_entry(cf, &key, std::mem::take(&mut tracer.guards), kind);
        Ok(value)
    }
}

/// Turns a finished capture into a cache entry kind.
fn finish_capture(t: &mut Tracer, value: &Value, arg_grad: bool) -> EntryKind {
    if super::capture_print::unprinted_templates(t) {
        t.breaks.push(GraphBreak {
            reason: BreakReason::TensorToPython(
                "an f-string with a tensor used other than in print",
            ),
            span: None,
        });
    }
    if !t.breaks.is_empty() {
        return EntryKind::Eager(EagerReason::Breaks(t.breaks.clone()));
    }
    let output = match out_template(t, value, 0) {
        Ok(o) => o,
        Err(b) => return EntryKind::Eager(EagerReason::Breaks(vec![b])),
    };
    let grad = crate::autograd::is_grad_enabled();
    if grad && (arg_grad || t.externals.iter().any(|x| x.requires_grad())) {
        return EntryKind::Eager(EagerReason::GradRequired);
    }
    let graph = std::mem::take(&mut t.graph);
    if let Err(e) = verify::verify(&graph) {
        let reason = BreakReason::Internal(e.message);
        return EntryKind::Eager(EagerReason::Breaks(vec![GraphBreak {
            reason,
            span: e.span,
        }]));
    }
    let compiled = match passes::optimize(graph).and_then(compile_graph) {
        Ok(c) => c,
        Err(e) => {
            let reason = BreakReason::Internal(e.message);
            return EntryKind::Eager(EagerReason::Breaks(vec![GraphBreak {
                reason,
                span: e.span,
            }]));
        }
    };
    EntryKind::Graph(Box::new(GraphEntry {
        compiled,
        externals: std::mem::take(&mut t.externals),
        output,
    }))
}

impl Interp {
    fn report(&mut self, cf: &CompiledFn, kind: &EntryKind, why: &str, t0: Instant) {
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        match kind {
            EntryKind::Graph(g) => log(&format!(
                "{}: captured (reason: {why}) {} nodes, {} fused kernels in {ms:.2} ms \
                 (optimize + codegen {:.2} ms)",
                cf.name,
                g.compiled.graph.len(),
                g.compiled.fused_total(),
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
        guards: Vec<trace::LoadGuard>,
        kind: EntryKind,
    ) {
        let mut c = cf.cache.borrow_mut();
        c.entries.push(Entry {
            key: key.parts.clone(),
            keep: key.keep.clone(),
            guards,
            kind,
        });
        c.last = Some(c.entries.len() - 1);
    }
}

/// The output structure of a captured return value, or the break that prevents it.
fn out_template(t: &mut Tracer, v: &Value, depth: usize) -> Result<OutTemplate, GraphBreak> {
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
                .map(|x| out_template(t, x, depth + 1))
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
                .map(|x| out_template(t, x, depth + 1))
                .collect::<Result<_, _>>()?;
            Ok(OutTemplate::List(items))
        }
        Value::Dict(_) | Value::Set(_) | Value::Iter(_) => Err(brk("a dict, set or iterator")),
        Value::Instance(i) if t.is_created(Rc::as_ptr(i) as usize) => {
            Err(brk("an object created in the function"))
        }
        other => Ok(OutTemplate::Value(other.clone())),
    }
}
