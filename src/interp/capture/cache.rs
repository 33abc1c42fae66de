//! The interpreter's side of the compile cache: a call's guard key computed from its
//! Python arguments (`CallKey`), the comparison load guards make (`same_value`), the
//! per-function cache of versions (`Cache`, `Entry`) and a graph version's return value
//! rebuilt from its output tensors (`build_output`).

use crate::compile::capture::cache::{key_change, EntryKind, KeyPart, OutTemplate, Stats};
use crate::compile::capture::symguard::{differing_dims, SymGuard};
use crate::compile::capture::trace::{GuardKey, LoadGuard};
use crate::compile::ir::PathStep;
use crate::interp::value::{Key, Value};
use crate::tensor::Tensor;
use std::rc::Rc;

/// Containers nested deeper or longer than this are not keyed (the call runs eagerly).
const MAX_DEPTH: usize = 8;
const MAX_LEN: usize = 64;

/// A call's key, the tensors found in its arguments (first occurrences, in order) with
/// their paths, and the objects keyed by identity.
#[derive(Default)]
pub struct CallKey {
    pub parts: Vec<KeyPart>,
    pub tensors: Vec<(Tensor, Vec<PathStep>)>,
    pub keep: Vec<Value>,
    /// Set when some argument could not be keyed (too deep or too long).
    pub too_complex: bool,
}

impl CallKey {
    /// Keys positional args, then keyword args, then the grad mode.
    pub fn new(args: &[Value], kw: &[(Rc<str>, Value)]) -> CallKey {
        let mut k = CallKey::default();
        let mut all_tensors: Vec<Tensor> = Vec::new();
        for (i, a) in args.iter().enumerate() {
            k.walk(a, vec![PathStep::Index(i)], 0, &mut all_tensors);
        }
        for (name, v) in kw {
            k.parts.push(KeyPart::Kw(name.clone()));
            k.walk(
                v,
                vec![PathStep::Key(name.to_string())],
                0,
                &mut all_tensors,
            );
        }
        k.parts
            .push(KeyPart::GradMode(crate::autograd::is_grad_enabled()));
        k
    }

    fn walk(&mut self, v: &Value, path: Vec<PathStep>, depth: usize, seen: &mut Vec<Tensor>) {
        if depth > MAX_DEPTH {
            self.too_complex = true;
            return;
        }
        let part = match v {
            Value::Tensor(t) => return self.tensor(t, path, seen),
            Value::None => KeyPart::None,
            Value::Bool(b) => KeyPart::Bool(*b),
            Value::Int(i) => KeyPart::Int(*i),
            Value::Float(f) => KeyPart::Float(f.to_bits()),
            Value::Str(s) => KeyPart::Str(s.clone()),
            Value::List(l) => return self.seq(0, &l.borrow(), path, depth, seen),
            Value::Tuple(t) => return self.seq(1, t, path, depth, seen),
            Value::Size(t) => return self.seq(3, t, path, depth, seen),
            Value::Dict(d) => {
                let d = d.borrow();
                let items: Vec<(Key, Value)> =
                    d.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                return self.dict(&items, path, depth, seen);
            }
            other => {
                self.keep.push(other.clone());
                KeyPart::Identity(identity(other))
            }
        };
        self.parts.push(part);
    }

    fn tensor(&mut self, t: &Tensor, path: Vec<PathStep>, seen: &mut Vec<Tensor>) {
        let idx = seen.len();
        let alias = seen.iter().position(|s| s.same(t)).unwrap_or(idx);
        seen.push(t.clone());
        self.parts.push(KeyPart::Tensor {
            dtype: t.dtype(),
            shape: t.shape().into(),
            requires_grad: t.requires_grad(),
            contiguous: t.is_contiguous(),
            alias,
        });
        if alias == idx {
            self.tensors.push((t.clone(), path));
        }
    }

    /// Keys a container of `len` items (`kind`: its type); false when it is too long to
    /// key (the call then runs eagerly).
    fn open_seq(&mut self, kind: u8, len: usize) -> bool {
        if len > MAX_LEN {
            self.too_complex = true;
            return false;
        }
        self.parts.push(KeyPart::Seq { kind, len });
        true
    }

    fn seq(
        &mut self,
        kind: u8,
        items: &[Value],
        path: Vec<PathStep>,
        depth: usize,
        seen: &mut Vec<Tensor>,
    ) {
        if !self.open_seq(kind, items.len()) {
            return;
        }
        for (i, x) in items.iter().enumerate() {
            let mut p = path.clone();
            p.push(PathStep::Index(i));
            self.walk(x, p, depth + 1, seen);
        }
    }

    fn dict(
        &mut self,
        items: &[(Key, Value)],
        path: Vec<PathStep>,
        depth: usize,
        seen: &mut Vec<Tensor>,
    ) {
        if !self.open_seq(2, items.len()) {
            return;
        }
        for (k, x) in items {
            let before = self.parts.len();
            self.walk(&k.0, path.clone(), depth + 1, &mut Vec::new());
            if self.parts[before..]
                .iter()
                .any(|p| matches!(p, KeyPart::Tensor { .. }))
            {
                self.too_complex = true;
            }
            let mut p = path.clone();
            p.push(PathStep::Key(key_text(&k.0)));
            self.walk(x, p, depth + 1, seen);
        }
    }
}

fn key_text(v: &Value) -> String {
    match v {
        Value::Str(s) => format!("{s:?}"),
        Value::Int(i) => i.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => "?".into(),
    }
}

/// The address of a heap value (0 for values without one).
pub fn identity(v: &Value) -> usize {
    match v {
        Value::Func(f) => Rc::as_ptr(f) as usize,
        Value::Native(f) => Rc::as_ptr(f) as usize,
        Value::Instance(i) => Rc::as_ptr(i) as usize,
        Value::Class(c) => Rc::as_ptr(c) as usize,
        Value::Module(m) => Rc::as_ptr(m) as usize,
        Value::BoundMethod(b) => Rc::as_ptr(b) as usize,
        Value::List(l) => Rc::as_ptr(l) as usize,
        Value::Dict(d) | Value::Set(d) | Value::FrozenSet(d) => Rc::as_ptr(d) as usize,
        Value::Tensor(t) => t.id(),
        Value::Compiled(c) => Rc::as_ptr(c) as usize,
        _ => 0,
    }
}

/// True when a value read again equals the one read during capture: scalars by value
/// (floats by bits), tuples element-wise, everything else by identity.
pub fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::None, Value::None) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::DType(x), Value::DType(y)) => x == y,
        (Value::Tuple(x), Value::Tuple(y)) | (Value::Size(x), Value::Size(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| same_value(p, q))
        }
        (Value::Tensor(x), Value::Tensor(y)) => x.same(y) && x.requires_grad() == y.requires_grad(),
        _ => {
            let (ia, ib) = (identity(a), identity(b));
            ia != 0 && ia == ib
        }
    }
}

/// True when an external input's `requires_grad` differs from its capture (a load
/// guard holds the very tensor, so it cannot see the flag flip).
fn grad_flipped(e: &Entry) -> bool {
    match &e.kind {
        EntryKind::Graph(g) => g
            .externals
            .iter()
            .zip(&g.ext_grad)
            .any(|(t, &r)| t.requires_grad() != r),
        EntryKind::Eager(_) => false,
    }
}

/// False when a graph version read the `.grad` of an argument whose tensor in this
/// call (`tensors`: the call's argument tensors) has another gradient state.
fn arg_grads_hold(e: &Entry, tensors: &[(Tensor, Vec<PathStep>)]) -> bool {
    match &e.kind {
        EntryKind::Graph(g) => g.arg_grads_hold(|i| tensors.get(i).map(|(t, _)| t)),
        _ => true,
    }
}

/// The first load guard that no longer holds, if any.
pub fn failed_guard(guards: &[Box<dyn LoadGuard>]) -> Option<&dyn LoadGuard> {
    guards.iter().map(|g| &**g).find(|g| !g.holds())
}

/// One cached version: its key, its load guards and what a hit does.
pub struct Entry {
    pub key: Vec<KeyPart>,
    /// Set for a version compiled with symbolic sizes: its key's shapes match by it.
    pub sym: Option<SymGuard>,
    pub keep: Vec<Value>,
    pub guards: Vec<Box<dyn LoadGuard>>,
    pub kind: EntryKind,
    /// The Python values of a graph version's output (`OutTemplate::Const`).
    pub consts: Vec<Value>,
}

#[derive(Default)]
pub struct Cache {
    pub entries: Vec<Entry>,
    pub stats: Stats,
    pub warned: bool,
    pub limit_logged: bool,
    /// The entry the last call used (for the REPL's `:graph`).
    pub last: Option<usize>,
    /// Argument dims (input slot, dim) seen with two sizes: later captures make them
    /// symbolic (automatic dynamic shapes).
    pub dynamic_dims: Vec<(usize, usize)>,
    /// `for` loops (by span) that later captures unroll (see capture_for.rs).
    pub unroll: Vec<crate::source::Span>,
    /// Places (by key) of floats a version was guarded on and that hold another float
    /// now: later captures load them as runtime scalars (automatic dynamic scalars).
    pub dynamic_scalars: Vec<GuardKey>,
}

impl Cache {
    /// Records the argument dims in which `key` differs from a compiled version that
    /// matches it otherwise; returns the newly dynamic dims (empty: nothing new).
    pub fn note_dynamic(&mut self, key: &[KeyPart]) -> Vec<(usize, usize)> {
        let mut new = Vec::new();
        for e in &self.entries {
            if !matches!(e.kind, EntryKind::Graph(_)) {
                continue;
            }
            for d in differing_dims(&e.key, key).unwrap_or_default() {
                if !self.dynamic_dims.contains(&d) && !new.contains(&d) {
                    new.push(d);
                }
            }
        }
        self.dynamic_dims.extend(new.iter().copied());
        new
    }

    /// Records the float places a compiled version was guarded on whose value changed
    /// (to another float); returns how many are new.
    pub fn note_dynamic_scalars(&mut self) -> usize {
        let mut new = Vec::new();
        for e in &self.entries {
            if !matches!(e.kind, EntryKind::Graph(_)) {
                continue;
            }
            for g in e.guards.iter().filter(|g| !g.by_type()) {
                // A guard on a float that fails while its place holds a float: another
                // float (same_value compares floats by bits).
                let Some(key) = g.float_key() else { continue };
                if g.holds() || g.read_float().is_none() {
                    continue;
                }
                if !self.dynamic_scalars.contains(&key) && !new.contains(&key) {
                    new.push(key);
                }
            }
        }
        self.dynamic_scalars.extend(new.iter().copied());
        new.len()
    }

    /// The entry whose key and load guards match, and (for a miss) why the newest entry
    /// did not.
    pub fn lookup(&self, call: &CallKey) -> Result<usize, String> {
        let key = &call.parts[..];
        let mut why = "first call".to_string();
        for (i, e) in self.entries.iter().enumerate() {
            let same = match &e.sym {
                Some(g) => g.matches(&e.key, key),
                None => e.key == key,
            };
            if !same {
                why = format!("guard failed: {}", key_change(&e.key, key));
                continue;
            }
            if grad_flipped(e) {
                why = "guard failed: requires_grad of a parameter changed".into();
                continue;
            }
            if let Some(g) = failed_guard(&e.guards) {
                why = format!("guard failed: {} changed", g.describe());
                continue;
            }
            if !arg_grads_hold(e, &call.tensors) {
                why = "guard failed: .grad of an argument changed".into();
                continue;
            }
            return Ok(i);
        }
        Err(why)
    }
}

/// A graph version's return value: `t` filled with its output tensors `outs` and the
/// entry's Python values `consts`.
pub fn build_output(t: &OutTemplate, outs: &[Tensor], consts: &[Value]) -> Value {
    let all = |xs: &[OutTemplate]| xs.iter().map(|x| build_output(x, outs, consts)).collect();
    match t {
        OutTemplate::Tensor(i) => outs.get(*i).cloned().map_or(Value::None, Value::Tensor),
        OutTemplate::Const(i) => consts.get(*i).cloned().unwrap_or(Value::None),
        OutTemplate::List(xs) => Value::list(all(xs)),
        OutTemplate::Tuple(xs) => Value::tuple(all(xs)),
    }
}
