//! Scope analysis (the first resolver pass): which names are local, global, cells, free.

use crate::syntax::ast::*;
use indexmap::IndexSet;
use std::collections::HashMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopeKind {
    Module,
    Function,
    Class,
    Comp,
}

#[derive(Debug)]
pub struct Scope {
    pub kind: ScopeKind,
    pub parent: Option<usize>,
    /// Names bound here (assigned, params, imports, defs), in first-binding order.
    pub bound: IndexSet<Name>,
    pub params: Vec<Name>,
    pub globals: IndexSet<Name>,
    pub nonlocals: IndexSet<Name>,
    pub uses: IndexSet<Name>,
    /// Bound names captured by an inner function (stored in cells).
    pub cells: IndexSet<Name>,
    /// Names this function captures from enclosing functions.
    pub frees: IndexSet<Name>,
    /// Cells whose value never changes once an inner function can see it (see
    /// `frozen`): captured by value, no cell allocated.
    pub frozen: IndexSet<Name>,
    /// How many times each name is bound here (params not counted).
    stores: HashMap<Name, u32>,
    /// Names bound by a plain `name = value` statement at the top level of this function
    /// body, with the statement's position (the first such statement).
    assigned_at: HashMap<Name, usize>,
    /// The position of the top-level statement being analyzed (function scopes).
    pos: usize,
    /// The position of the first top-level statement that creates a nested scope.
    first_inner: Option<usize>,
    /// Names an inner function declares `nonlocal` (it may rebind them).
    rebound_inside: IndexSet<Name>,
}

impl Scope {
    fn new(kind: ScopeKind, parent: Option<usize>) -> Scope {
        Scope {
            kind,
            parent,
            bound: IndexSet::new(),
            params: Vec::new(),
            globals: IndexSet::new(),
            nonlocals: IndexSet::new(),
            uses: IndexSet::new(),
            cells: IndexSet::new(),
            frees: IndexSet::new(),
            frozen: IndexSet::new(),
            stores: HashMap::new(),
            assigned_at: HashMap::new(),
            pos: 0,
            first_inner: None,
            rebound_inside: IndexSet::new(),
        }
    }

    /// Bound here and not declared `global`/`nonlocal`.
    pub fn is_local(&self, n: &str) -> bool {
        self.bound.contains(n) && !self.globals.contains(n) && !self.nonlocals.contains(n)
    }

    /// True when cell variable `n` of this function holds one value for as long as an
    /// inner function can read it, so closures may capture that value instead of a
    /// cell: a parameter never rebound, or a name bound once, by a top-level `n = ...`
    /// statement that comes before every statement creating a nested scope; and no
    /// inner function declares it `nonlocal`.
    fn never_rebound(&self, n: &Name) -> bool {
        if self.kind != ScopeKind::Function || self.rebound_inside.contains(n) {
            return false;
        }
        let stores = self.stores.get(n).copied().unwrap_or(0);
        if self.params.contains(n) {
            return stores == 0;
        }
        match (self.assigned_at.get(n), self.first_inner) {
            (Some(&at), Some(inner)) => stores == 1 && at < inner,
            _ => false,
        }
    }
}

/// All scopes of one module chunk; nested scopes are found by their AST node address.
#[derive(Debug)]
pub struct ScopeTable {
    pub scopes: Vec<Scope>,
    pub by_node: HashMap<usize, usize>,
}

impl ScopeTable {
    /// True when the free variable `n` of scope `s` is captured by value: its defining
    /// function never rebinds it (see `Scope::never_rebound`).
    pub fn frozen_free(&self, s: usize, n: &str) -> bool {
        let mut p = self.scopes.get(s).and_then(|x| x.parent);
        while let Some(pi) = p {
            let sc = &self.scopes[pi];
            match sc.kind {
                ScopeKind::Module => return false,
                ScopeKind::Class => {}
                ScopeKind::Comp | ScopeKind::Function => {
                    if sc.is_local(n) {
                        return sc.frozen.contains(n);
                    }
                }
            }
            p = sc.parent;
        }
        false
    }
}

/// The address used to find a nested scope again in the second pass.
pub fn node_key<T>(p: *const T) -> usize {
    p as usize
}

pub fn analyze(body: &[Stmt]) -> ScopeTable {
    let mut a = Analyzer {
        t: ScopeTable {
            scopes: vec![Scope::new(ScopeKind::Module, None)],
            by_node: HashMap::new(),
        },
        cur: 0,
        top: false,
    };
    a.stmts(body);
    a.finish();
    a.t
}

struct Analyzer {
    t: ScopeTable,
    cur: usize,
    /// True while at a top-level statement of a function body (taken by `stmt`).
    top: bool,
}

impl Analyzer {
    fn scope(&mut self) -> &mut Scope {
        &mut self.t.scopes[self.cur]
    }

    fn push(&mut self, kind: ScopeKind, key: usize) -> usize {
        self.note_inner();
        let id = self.t.scopes.len();
        self.t.scopes.push(Scope::new(kind, Some(self.cur)));
        self.t.by_node.insert(key, id);
        let prev = self.cur;
        self.cur = id;
        prev
    }

    /// Records in the enclosing function that its current top-level statement creates
    /// a nested scope.
    fn note_inner(&mut self) {
        let mut s = self.cur;
        loop {
            let sc = &mut self.t.scopes[s];
            match (sc.kind, sc.parent) {
                (ScopeKind::Function, _) => {
                    sc.first_inner.get_or_insert(sc.pos);
                    return;
                }
                (ScopeKind::Module, _) | (_, None) => return,
                (_, Some(p)) => s = p,
            }
        }
    }

    fn bind(&mut self, n: &Name) {
        let sc = self.scope();
        sc.bound.insert(n.clone());
        *sc.stores.entry(n.clone()).or_insert(0) += 1;
    }

    fn stmts(&mut self, body: &[Stmt]) {
        for s in body {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        let top = std::mem::replace(&mut self.top, false);
        match &s.kind {
            StmtKind::Expr(e) => self.expr(e),
            StmtKind::Assign { targets, value } => {
                if let ([t], true) = (targets.as_slice(), top) {
                    if let ExprKind::Name(n) = &t.kind {
                        let sc = self.scope();
                        let pos = sc.pos;
                        sc.assigned_at.entry(n.clone()).or_insert(pos);
                    }
                }
                self.expr(value);
                for t in targets {
                    self.target(t);
                }
            }
            StmtKind::AnnAssign {
                target,
                annotation,
                value,
            } => {
                if self.scope().kind != ScopeKind::Function {
                    self.expr(annotation);
                    if matches!(target.kind, ExprKind::Name(_)) {
                        self.bind(&"__annotations__".into());
                    }
                }
                if let Some(v) = value {
                    self.expr(v);
                }
                self.target(target);
            }
            StmtKind::AugAssign { target, value, .. } => {
                self.expr(value);
                if let ExprKind::Name(n) = &target.kind {
                    self.scope().uses.insert(n.clone());
                }
                self.target(target);
            }
            StmtKind::Yield { value, store, .. } => {
                if let Some(v) = value {
                    self.expr(v);
                }
                match store {
                    YieldStore::Discard => {}
                    YieldStore::Assign(ts) => ts.iter().for_each(|t| self.target(t)),
                    YieldStore::Aug(t, _) => {
                        if let ExprKind::Name(n) = &t.kind {
                            self.scope().uses.insert(n.clone());
                        }
                        self.target(t);
                    }
                }
            }
            StmtKind::If { cond, body, orelse } | StmtKind::While { cond, body, orelse } => {
                self.expr(cond);
                self.stmts(body);
                self.stmts(orelse);
            }
            StmtKind::For {
                target,
                iter,
                body,
                orelse,
            } => {
                self.expr(iter);
                self.target(target);
                self.stmts(body);
                self.stmts(orelse);
            }
            StmtKind::Break | StmtKind::Continue | StmtKind::Pass => {}
            StmtKind::Return(e) => {
                if let Some(e) = e {
                    self.expr(e)
                }
            }
            StmtKind::FuncDef(f) => {
                for d in &f.decorators {
                    self.expr(d);
                }
                self.bind(&f.name);
                self.func(f);
            }
            StmtKind::ClassDef(c) => {
                for d in &c.decorators {
                    self.expr(d);
                }
                for b in &c.bases {
                    self.expr(b);
                }
                self.bind(&c.name);
                let prev = self.push(ScopeKind::Class, node_key(std::rc::Rc::as_ptr(c)));
                self.stmts(&c.body);
                self.cur = prev;
            }
            StmtKind::Global(ns) => {
                for n in ns {
                    self.scope().globals.insert(n.clone());
                }
            }
            StmtKind::Nonlocal(ns) => {
                for n in ns {
                    self.scope().nonlocals.insert(n.clone());
                }
            }
            StmtKind::Import(items) => {
                for it in items {
                    let n = it.alias.clone().or_else(|| it.path.first().cloned());
                    if let Some(n) = n {
                        self.bind(&n);
                    }
                }
            }
            StmtKind::ImportFrom { names, .. } => {
                for (n, a) in names {
                    self.bind(a.as_ref().unwrap_or(n));
                }
            }
            // module level only: its names become globals at run time
            StmtKind::ImportStar(_) => {}
            StmtKind::Assert { test, msg } => {
                self.expr(test);
                if let Some(m) = msg {
                    self.expr(m);
                }
            }
            StmtKind::Raise { exc, cause } => {
                for e in [exc, cause].into_iter().flatten() {
                    self.expr(e);
                }
            }
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finalbody,
            } => {
                self.stmts(body);
                for h in handlers {
                    if let Some(t) = &h.typ {
                        self.expr(t);
                    }
                    if let Some(n) = &h.name {
                        self.bind(n);
                    }
                    self.stmts(&h.body);
                }
                self.stmts(orelse);
                self.stmts(finalbody);
            }
            StmtKind::With { items, body } => {
                for (e, t) in items {
                    self.expr(e);
                    if let Some(t) = t {
                        self.target(t);
                    }
                }
                self.stmts(body);
            }
            StmtKind::Del(ts) => {
                for t in ts {
                    self.target(t);
                }
            }
        }
    }

    fn func(&mut self, f: &std::rc::Rc<FuncDef>) {
        let p = &f.params;
        for d in p
            .params
            .iter()
            .chain(p.kwonly.iter())
            .filter_map(|q| q.default.as_ref())
        {
            self.expr(d);
        }
        let prev = self.push(ScopeKind::Function, node_key(std::rc::Rc::as_ptr(f)));
        let all = p
            .params
            .iter()
            .chain(p.vararg.iter())
            .chain(p.kwonly.iter())
            .chain(p.kwarg.iter());
        for q in all {
            let sc = self.scope();
            sc.params.push(q.name.clone());
            sc.bound.insert(q.name.clone());
        }
        let outer_top = self.top;
        for (i, s) in f.body.iter().enumerate() {
            self.scope().pos = i;
            self.top = true;
            self.stmt(s);
        }
        self.top = outer_top;
        self.cur = prev;
    }

    fn target(&mut self, t: &Expr) {
        match &t.kind {
            ExprKind::Name(n) => self.bind(n),
            ExprKind::Tuple(xs) | ExprKind::List(xs) => {
                for x in xs {
                    self.target(x);
                }
            }
            ExprKind::Starred(x) => self.target(x),
            _ => self.expr(t),
        }
    }

    fn comp(&mut self, e: &Expr, gens: &[Comprehension], elts: &[&Expr]) {
        if let Some(g) = gens.first() {
            self.expr(&g.iter);
        }
        let prev = self.push(ScopeKind::Comp, node_key(e as *const Expr));
        for (i, g) in gens.iter().enumerate() {
            if i > 0 {
                self.expr(&g.iter);
            }
            self.target(&g.target);
            for c in &g.ifs {
                self.expr(c);
            }
        }
        for x in elts {
            self.expr(x);
        }
        self.cur = prev;
    }

    fn expr(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Str(_)
            | ExprKind::Bool(_)
            | ExprKind::None
            | ExprKind::Ellipsis => {}
            ExprKind::FString(parts) => self.fparts(parts),
            ExprKind::Name(n) => {
                self.scope().uses.insert(n.clone());
            }
            ExprKind::List(xs) | ExprKind::Tuple(xs) | ExprKind::Set(xs) => {
                for x in xs {
                    self.expr(x);
                }
            }
            ExprKind::Dict(kv) => {
                for (k, v) in kv {
                    if let Some(k) = k {
                        self.expr(k);
                    }
                    self.expr(v);
                }
            }
            ExprKind::Starred(x) | ExprKind::Attr(x, _) | ExprKind::Unary(_, x) => self.expr(x),
            ExprKind::Subscript(a, b) | ExprKind::Binary(_, a, b) | ExprKind::BoolOp(_, a, b) => {
                self.expr(a);
                self.expr(b);
            }
            ExprKind::Slice(a, b, c) => {
                for x in [a, b, c].into_iter().flatten() {
                    self.expr(x);
                }
            }
            ExprKind::Call(f, args) => {
                self.expr(f);
                for a in args {
                    match a {
                        Arg::Pos(x) | Arg::Star(x) | Arg::Kw(_, x) | Arg::StarStar(x) => {
                            self.expr(x)
                        }
                    }
                }
            }
            ExprKind::Compare(a, rest) => {
                self.expr(a);
                for (_, x) in rest {
                    self.expr(x);
                }
            }
            ExprKind::IfExp { cond, then, orelse } => {
                self.expr(cond);
                self.expr(then);
                self.expr(orelse);
            }
            ExprKind::Lambda(f) => self.func(f),
            ExprKind::Named(n, v) => {
                self.expr(v);
                // binds in the nearest enclosing scope that is not a comprehension
                let here = self.cur;
                while self.t.scopes[self.cur].kind == ScopeKind::Comp {
                    match self.t.scopes[self.cur].parent {
                        Some(p) => self.cur = p,
                        None => break,
                    }
                }
                self.bind(n);
                self.cur = here;
                self.scope().uses.insert(n.clone());
            }
            ExprKind::ListComp(x, gens) => self.comp(e, gens, &[x]),
            ExprKind::DictComp(k, v, gens) => self.comp(e, gens, &[k, v]),
            ExprKind::SetComp(x, gens) => self.comp(e, gens, &[x]),
            ExprKind::GenExp(f, first) => {
                self.expr(first);
                self.func(f);
            }
        }
    }

    fn fparts(&mut self, parts: &[FPart]) {
        for p in parts {
            if let FPart::Expr { expr, spec, .. } = p {
                self.expr(expr);
                self.fparts(spec);
            }
        }
    }

    /// Propagates inline-scope uses to their frame owner, then marks cells and frees.
    fn finish(&mut self) {
        for i in (1..self.t.scopes.len()).rev() {
            let s = &self.t.scopes[i];
            if matches!(s.kind, ScopeKind::Comp | ScopeKind::Class) {
                let ups: Vec<Name> = s
                    .uses
                    .iter()
                    .chain(s.nonlocals.iter())
                    .filter(|n| s.kind == ScopeKind::Class || !s.is_local(n))
                    .cloned()
                    .collect();
                if let Some(p) = s.parent {
                    self.t.scopes[p].uses.extend(ups);
                }
            }
        }
        for i in 0..self.t.scopes.len() {
            if self.t.scopes[i].kind != ScopeKind::Function {
                continue;
            }
            let s = &self.t.scopes[i];
            let wanted: Vec<Name> = s
                .uses
                .iter()
                .chain(s.nonlocals.iter())
                .filter(|n| !s.is_local(n) && !s.globals.contains(*n))
                .cloned()
                .collect();
            for n in wanted {
                self.capture(i, n);
            }
        }
        for s in self.t.scopes.iter_mut() {
            let frozen: Vec<Name> = s
                .cells
                .iter()
                .filter(|n| s.never_rebound(n))
                .cloned()
                .collect();
            s.frozen.extend(frozen);
        }
    }

    fn capture(&mut self, from: usize, n: Name) {
        let mut between = Vec::new();
        let mut p = self.t.scopes[from].parent;
        while let Some(pi) = p {
            let s = &self.t.scopes[pi];
            match s.kind {
                ScopeKind::Module => return,
                ScopeKind::Class => {}
                ScopeKind::Comp | ScopeKind::Function => {
                    if s.is_local(&n) {
                        if self.t.scopes[from].nonlocals.contains(&n) {
                            self.t.scopes[pi].rebound_inside.insert(n.clone());
                        }
                        self.t.scopes[pi].cells.insert(n.clone());
                        self.t.scopes[from].frees.insert(n.clone());
                        for b in between {
                            let sc: &mut Scope = &mut self.t.scopes[b];
                            sc.frees.insert(n.clone());
                        }
                        return;
                    }
                    if s.globals.contains(&n) {
                        return;
                    }
                    if s.kind == ScopeKind::Function {
                        between.push(pi);
                    }
                }
            }
            p = s.parent;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The frozen (captured as is) names of the function scope named `f` in `src`.
    fn frozen_of(src: &str, f: &str) -> Vec<String> {
        let m = match crate::syntax::parse_module(src, crate::source::FileId(0)) {
            Ok(m) => m,
            Err(e) => panic!("parse: {e:?}"),
        };
        let t = analyze(&m.body);
        let mut found = None;
        collect_defs(&m.body, &mut |d| {
            if &*d.name == f {
                found = t.by_node.get(&node_key(std::rc::Rc::as_ptr(d))).copied();
            }
        });
        let Some(id) = found else {
            panic!("no function {f}");
        };
        let mut names: Vec<String> = t.scopes[id].frozen.iter().map(|n| n.to_string()).collect();
        names.sort();
        names
    }

    fn collect_defs(body: &[Stmt], f: &mut impl FnMut(&std::rc::Rc<FuncDef>)) {
        for s in body {
            match &s.kind {
                StmtKind::FuncDef(d) => {
                    f(d);
                    collect_defs(&d.body, f);
                }
                StmtKind::ClassDef(c) => collect_defs(&c.body, f),
                _ => {}
            }
        }
    }

    #[test]
    fn micrograd_captures_need_no_cells() {
        let src = "
class V:
    def __add__(self, other):
        out = V(self.data + other.data, (self, other))
        def _backward():
            self.grad += out.grad
            other.grad += out.grad
        out._backward = _backward
        return out
";
        assert_eq!(frozen_of(src, "__add__"), ["other", "out", "self"]);
    }

    #[test]
    fn rebound_or_late_bound_names_keep_their_cells() {
        let src = "
def f(a, b, c, d):
    g = lambda: a + b + c + d + e + h + k + m + p
    b = 1
    e = 2
    for c in range(3):
        pass
    def h():
        return d
    k = 1
    k = 2
    if a:
        m = 1
    del d
    p = 5
def n(x):
    y = x
    def inner():
        nonlocal x
        x = y
    return inner
";
        // every name but `a` is rebound, bound after the first closure, or deleted
        assert_eq!(frozen_of(src, "f"), ["a"]);
        assert_eq!(frozen_of(src, "n"), ["y"]);
    }
}
