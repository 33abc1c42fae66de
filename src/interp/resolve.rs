//! The resolver: lowers the AST to the interpreter tree, turning names into slots.

use super::scope::{analyze, node_key, ScopeKind, ScopeTable};
use super::tree::*;
use super::value::{ModuleObj, Value};
use crate::error::{Error, ErrorKind, Result};
use crate::source::Span;
use crate::syntax::ast::{self, Expr, ExprKind, Stmt, StmtKind};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

mod ann;

struct FrameCtx {
    slots: HashMap<(usize, Name), (u32, bool)>,
    n_slots: u32,
}

impl FrameCtx {
    fn alloc(&mut self, scope: usize, n: &Name, cell: bool) -> u32 {
        let s = self.n_slots;
        self.slots.insert((scope, n.clone()), (s, cell));
        self.n_slots += 1;
        s
    }
}

pub struct Resolver<'a> {
    t: ScopeTable,
    module: &'a ModuleObj,
    frames: Vec<FrameCtx>,
    sid: usize,
    /// Attribute names, one `Rc` per distinct name, so attribute maps built by this
    /// chunk's stores and probed by its loads usually compare keys by pointer.
    attr_names: HashSet<Name>,
}

/// Resolves a whole module chunk against a module's global table.
pub fn resolve_module(m: &ast::Module, module: &ModuleObj) -> Result<Code> {
    let t = analyze(&m.body);
    let mut r = Resolver {
        t,
        module,
        frames: vec![FrameCtx {
            slots: HashMap::new(),
            n_slots: 0,
        }],
        sid: 0,
        attr_names: HashSet::new(),
    };
    let body = r.class_body(&m.body, m.span)?;
    let n_slots = r.frames.last().map(|f| f.n_slots).unwrap_or(0);
    Ok(Code {
        body,
        n_slots,
        cell_locals: Vec::new(),
    })
}

fn unsupported(what: &str, span: Span) -> Error {
    Error::new(ErrorKind::SyntaxError, what.to_string(), Some(span))
}

impl Resolver<'_> {
    /// The shared `Rc` of an attribute name.
    fn attr_name(&mut self, n: &Name) -> Name {
        if let Some(x) = self.attr_names.get(n) {
            return x.clone();
        }
        self.attr_names.insert(n.clone());
        n.clone()
    }

    fn frame(&mut self) -> &mut FrameCtx {
        let n = self.frames.len() - 1;
        &mut self.frames[n]
    }

    fn global(&self, n: &Name) -> Place {
        Place::Global(self.module.intern(n), n.clone())
    }

    fn slot_place(&self, scope: usize, n: &Name) -> Place {
        match self
            .frames
            .last()
            .and_then(|f| f.slots.get(&(scope, n.clone())))
        {
            Some((s, true)) => Place::Cell(*s, n.clone()),
            Some((s, false)) => Place::Local(*s, n.clone()),
            None => self.global(n),
        }
    }

    fn place(&self, n: &Name) -> Place {
        self.place_from(self.sid, n, true)
    }

    fn place_from(&self, start: usize, n: &Name, first: bool) -> Place {
        let sc = &self.t.scopes[start];
        let parent = sc.parent.unwrap_or(0);
        match sc.kind {
            ScopeKind::Module => self.global(n),
            ScopeKind::Comp => {
                if sc.is_local(n) {
                    self.slot_place(start, n)
                } else {
                    self.place_from(parent, n, false)
                }
            }
            ScopeKind::Class => {
                if first && sc.globals.contains(n) {
                    self.global(n)
                } else if first && sc.is_local(n) {
                    Place::ClassNs(n.clone(), Box::new(self.place_from(parent, n, false)))
                } else {
                    self.place_from(parent, n, false)
                }
            }
            ScopeKind::Function => {
                if sc.globals.contains(n) {
                    self.global(n)
                } else if sc.is_local(n) || sc.frees.contains(n) {
                    self.slot_place(start, n)
                } else {
                    self.global(n)
                }
            }
        }
    }

    /// A class or module body: its statements, after `__annotations__ = {}` when it
    /// annotates names.
    fn class_body(&mut self, body: &[Stmt], span: Span) -> Result<Vec<St>> {
        let init = self.annotations_init(body, span)?;
        let mut out: Vec<St> = init.into_iter().collect();
        out.extend(self.stmts(body)?);
        Ok(out)
    }

    fn stmts(&mut self, body: &[Stmt]) -> Result<Vec<St>> {
        body.iter().map(|s| self.stmt(s)).collect()
    }

    fn ex(&mut self, e: &Expr) -> Result<Ex> {
        Ok(Ex::new(self.ex_kind(e)?, e.span))
    }

    fn opt(&mut self, e: &Option<Box<Expr>>) -> Result<Option<Box<Ex>>> {
        match e {
            Some(x) => Ok(Some(Box::new(self.ex(x)?))),
            None => Ok(None),
        }
    }

    fn exs(&mut self, xs: &[Expr]) -> Result<Vec<Ex>> {
        xs.iter().map(|x| self.ex(x)).collect()
    }

    fn ex_kind(&mut self, e: &Expr) -> Result<ExKind> {
        Ok(match &e.kind {
            ExprKind::Int(i) => ExKind::Const(Value::Int(*i)),
            ExprKind::Float(f) => ExKind::Const(Value::Float(*f)),
            ExprKind::Str(s) => ExKind::Const(Value::Str(s.clone())),
            ExprKind::Bool(b) => ExKind::Const(Value::Bool(*b)),
            ExprKind::None => ExKind::Const(Value::None),
            ExprKind::Ellipsis => ExKind::Const(Value::Ellipsis),
            ExprKind::FString(parts) => ExKind::FString(self.fparts(parts)?),
            ExprKind::Name(n) => ExKind::Load(self.place(n)),
            ExprKind::List(xs) => ExKind::List(self.exs(xs)?),
            ExprKind::Tuple(xs) => ExKind::Tuple(self.exs(xs)?),
            ExprKind::Dict(kv) => {
                let mut out = Vec::with_capacity(kv.len());
                for (k, v) in kv {
                    let k = match k {
                        Some(k) => Some(self.ex(k)?),
                        None => None,
                    };
                    out.push((k, self.ex(v)?));
                }
                if out.iter().all(|(k, _)| k.is_some()) {
                    ExKind::Dict(out.into_iter().filter_map(|(k, v)| Some((k?, v))).collect())
                } else {
                    ExKind::DictUnpack(out)
                }
            }
            ExprKind::Set(xs) => ExKind::Set(self.exs(xs)?),
            ExprKind::SetComp(x, gens) => {
                let (gens, cells, saved) = self.comp_enter(e, gens)?;
                let elt = self.ex(x);
                self.sid = saved;
                let comp = Ex::new(ExKind::ListComp(Box::new(elt?), gens, cells), e.span);
                ExKind::Set(vec![Ex::new(ExKind::Starred(Box::new(comp)), e.span)])
            }
            ExprKind::GenExp(f, first) => {
                let it = self.ex(first)?;
                ExKind::GenExp(self.func(f)?, Box::new(it))
            }
            ExprKind::Starred(x) => ExKind::Starred(Box::new(self.ex(x)?)),
            ExprKind::Attr(x, n) => ExKind::Attr(Box::new(self.ex(x)?), self.attr_name(n)),
            ExprKind::Subscript(a, b) => {
                ExKind::Subscript(Box::new(self.ex(a)?), Box::new(self.ex(b)?))
            }
            ExprKind::Slice(a, b, c) => ExKind::Slice(self.opt(a)?, self.opt(b)?, self.opt(c)?),
            ExprKind::Call(f, args) => return self.call(f, args),
            ExprKind::Unary(op, x) => ExKind::Unary(*op, Box::new(self.ex(x)?)),
            ExprKind::Binary(op, a, b) => {
                ExKind::Binary(*op, Box::new(self.ex(a)?), Box::new(self.ex(b)?))
            }
            ExprKind::BoolOp(op, a, b) => {
                ExKind::BoolOp(*op, Box::new(self.ex(a)?), Box::new(self.ex(b)?))
            }
            ExprKind::Compare(a, rest) => {
                let first = Box::new(self.ex(a)?);
                let mut out = Vec::with_capacity(rest.len());
                for (op, x) in rest {
                    out.push((*op, self.ex(x)?));
                }
                ExKind::Compare(first, out)
            }
            ExprKind::IfExp { cond, then, orelse } => ExKind::IfExp(
                Box::new(self.ex(cond)?),
                Box::new(self.ex(then)?),
                Box::new(self.ex(orelse)?),
            ),
            ExprKind::Lambda(f) => ExKind::MakeFunc(self.func(f)?),
            ExprKind::Named(n, v) => ExKind::Named(self.place(n), Box::new(self.ex(v)?)),
            ExprKind::ListComp(x, gens) => {
                let (gens, cells, saved) = self.comp_enter(e, gens)?;
                let elt = self.ex(x);
                self.sid = saved;
                ExKind::ListComp(Box::new(elt?), gens, cells)
            }
            ExprKind::DictComp(k, v, gens) => {
                let (gens, cells, saved) = self.comp_enter(e, gens)?;
                let k = self.ex(k);
                let v = self.ex(v);
                self.sid = saved;
                ExKind::DictComp(Box::new(k?), Box::new(v?), gens, cells)
            }
        })
    }

    /// Enters a comprehension scope: fresh slots for its targets; returns the generators.
    fn comp_enter(
        &mut self,
        e: &Expr,
        gens: &[ast::Comprehension],
    ) -> Result<(Vec<Gen>, Vec<u32>, usize)> {
        let Some(&cid) = self.t.by_node.get(&node_key(e as *const Expr)) else {
            return Err(unsupported(
                "internal error: comprehension scope not found",
                e.span,
            ));
        };
        let first_iter = match gens.first() {
            Some(g) => Some(self.ex(&g.iter)?),
            None => None,
        };
        let saved = self.sid;
        self.sid = cid;
        let names: Vec<(Name, bool)> = {
            let sc = &self.t.scopes[cid];
            sc.bound
                .iter()
                .filter(|n| sc.is_local(n))
                .map(|n| (n.clone(), sc.cells.contains(n)))
                .collect()
        };
        let mut cells = Vec::new();
        for (n, cell) in names {
            let s = self.frame().alloc(cid, &n, cell);
            if cell {
                cells.push(s);
            }
        }
        let mut out = Vec::with_capacity(gens.len());
        let mut first_iter = first_iter;
        for g in gens {
            let iter = match first_iter.take() {
                Some(it) => it,
                None => self.ex(&g.iter)?,
            };
            let target = self.target(&g.target)?;
            let ifs = self.exs(&g.ifs)?;
            out.push(Gen { target, iter, ifs });
        }
        Ok((out, cells, saved))
    }

    fn call(&mut self, f: &Expr, args: &[ast::Arg]) -> Result<ExKind> {
        if args.is_empty() {
            if let ExprKind::Name(n) = &f.kind {
                if &**n == "super" {
                    if let Some(kind) = self.super_slot() {
                        return Ok(kind);
                    }
                }
            }
        }
        let mut out = Vec::with_capacity(args.len());
        for a in args {
            out.push(match a {
                ast::Arg::Pos(x) => CArg::Pos(self.ex(x)?),
                ast::Arg::Star(x) => CArg::Star(self.ex(x)?),
                ast::Arg::Kw(n, x) => CArg::Kw(n.clone(), self.ex(x)?),
                ast::Arg::StarStar(x) => CArg::StarStar(self.ex(x)?),
            });
        }
        if let ExprKind::Attr(recv, name) = &f.kind {
            return Ok(ExKind::CallMethod(
                Box::new(self.ex(recv)?),
                self.attr_name(name),
                out,
            ));
        }
        Ok(ExKind::Call(Box::new(self.ex(f)?), out))
    }

    /// `super()` inside a function with at least one parameter: its first slot.
    fn super_slot(&self) -> Option<ExKind> {
        let mut s = self.sid;
        loop {
            let sc = &self.t.scopes[s];
            match sc.kind {
                ScopeKind::Function => {
                    return if sc.params.is_empty() {
                        None
                    } else {
                        Some(ExKind::Super(0))
                    }
                }
                ScopeKind::Module => return None,
                _ => s = sc.parent?,
            }
        }
    }

    fn fparts(&mut self, parts: &[ast::FPart]) -> Result<Vec<FPart>> {
        let mut out = Vec::with_capacity(parts.len());
        for p in parts {
            out.push(match p {
                ast::FPart::Lit(s) => FPart::Lit(s.clone()),
                ast::FPart::Expr { expr, conv, spec } => FPart::Expr {
                    expr: self.ex(expr)?,
                    conv: *conv,
                    spec: self.fparts(spec)?,
                },
            });
        }
        Ok(out)
    }

    fn target(&mut self, t: &Expr) -> Result<Target> {
        Ok(match &t.kind {
            ExprKind::Name(n) => Target::Place(self.place(n)),
            ExprKind::Attr(x, n) => {
                Target::Attr(self.ex(x)?, self.attr_name(n), Default::default())
            }
            ExprKind::Subscript(a, b) => Target::Subscript(self.ex(a)?, self.ex(b)?),
            ExprKind::Tuple(xs) | ExprKind::List(xs) => {
                let mut star = None;
                let mut out = Vec::with_capacity(xs.len());
                for (i, x) in xs.iter().enumerate() {
                    if let ExprKind::Starred(inner) = &x.kind {
                        if star.is_some() {
                            return Err(unsupported(
                                "multiple starred expressions in assignment",
                                x.span,
                            ));
                        }
                        star = Some(i);
                        out.push(self.target(inner)?);
                    } else {
                        out.push(self.target(x)?);
                    }
                }
                Target::Unpack(out, star, t.span)
            }
            ExprKind::Starred(_) => {
                return Err(unsupported(
                    "starred assignment target must be in a list or tuple",
                    t.span,
                ))
            }
            _ => return Err(unsupported("cannot assign to expression", t.span)),
        })
    }

    fn stmt(&mut self, s: &Stmt) -> Result<St> {
        let kind = match &s.kind {
            StmtKind::Expr(e) => StKind::Expr(self.ex(e)?),
            StmtKind::Assign { targets, value } => {
                let value = self.ex(value)?;
                let mut ts = Vec::with_capacity(targets.len());
                for t in targets {
                    ts.push(self.target(t)?);
                }
                if ts.len() == 1 {
                    if let Target::Place(Place::Local(slot, _)) = &ts[0] {
                        return Ok(St {
                            kind: StKind::AssignLocal(*slot, value),
                            span: s.span,
                        });
                    }
                }
                StKind::Assign(ts, value)
            }
            StmtKind::AnnAssign {
                target,
                annotation,
                value,
            } => {
                // a block of one or two statements: run as `if True:`
                let body = self.ann_assign(target, annotation, value.as_ref(), s.span)?;
                StKind::If(
                    Ex::new(ExKind::Const(Value::Bool(true)), s.span),
                    body,
                    Vec::new(),
                )
            }
            StmtKind::AugAssign { target, op, value } => {
                let value = self.ex(value)?;
                match self.target(target)? {
                    Target::Place(Place::Local(slot, n)) => StKind::AugLocal(slot, n, *op, value),
                    Target::Unpack(_, _, sp) => {
                        return Err(unsupported(
                            "illegal expression for augmented assignment",
                            sp,
                        ))
                    }
                    t => StKind::AugAssign(t, *op, value),
                }
            }
            StmtKind::If { cond, body, orelse } => {
                StKind::If(self.ex(cond)?, self.stmts(body)?, self.stmts(orelse)?)
            }
            StmtKind::While { cond, body, orelse } => {
                StKind::While(self.ex(cond)?, self.stmts(body)?, self.stmts(orelse)?)
            }
            StmtKind::For {
                target,
                iter,
                body,
                orelse,
            } => {
                let iter = self.ex(iter)?;
                StKind::For(
                    self.target(target)?,
                    iter,
                    self.stmts(body)?,
                    self.stmts(orelse)?,
                )
            }
            StmtKind::Break => StKind::Break,
            StmtKind::Continue => StKind::Continue,
            StmtKind::Pass => StKind::Pass,
            StmtKind::Return(e) => {
                if !self.in_function() {
                    return Err(unsupported("'return' outside function", s.span));
                }
                StKind::Return(match e {
                    Some(e) => Some(self.ex(e)?),
                    None => None,
                })
            }
            StmtKind::FuncDef(f) => {
                let decos = self.exs(&f.decorators)?;
                let proto = self.func(f)?;
                let store = Target::Place(self.place(&f.name));
                let mk = Ex::new(ExKind::MakeFunc(proto), f.span);
                StKind::FuncDef(decos, mk, store)
            }
            StmtKind::ClassDef(c) => StKind::ClassDef(self.class(c)?),
            StmtKind::Global(_) => StKind::Pass,
            StmtKind::Nonlocal(ns) => {
                if !self.in_function() {
                    return Err(unsupported(
                        "nonlocal declaration not allowed at module level",
                        s.span,
                    ));
                }
                for n in ns {
                    if matches!(self.place(n), Place::Global(..)) {
                        return Err(unsupported(
                            &format!("no binding for nonlocal '{n}' found"),
                            s.span,
                        ));
                    }
                }
                StKind::Pass
            }
            StmtKind::Import(items) => {
                let mut out = Vec::with_capacity(items.len());
                for it in items {
                    let bind = it.alias.clone().or_else(|| it.path.first().cloned());
                    let Some(bind) = bind else {
                        return Err(unsupported("empty import", it.span));
                    };
                    out.push((
                        it.path.clone(),
                        Target::Place(self.place(&bind)),
                        it.alias.is_some(),
                    ));
                }
                StKind::Import(out)
            }
            StmtKind::ImportFrom { module, names } => {
                let mut out = Vec::with_capacity(names.len());
                for (n, a) in names {
                    let bind = a.as_ref().unwrap_or(n);
                    out.push((n.clone(), Target::Place(self.place(bind))));
                }
                StKind::ImportFrom(module.clone(), out)
            }
            StmtKind::ImportStar(module) => {
                if !matches!(self.t.scopes[self.sid].kind, ScopeKind::Module) {
                    return Err(unsupported("import * only allowed at module level", s.span));
                }
                StKind::ImportStar(module.clone())
            }
            StmtKind::Assert { test, msg } => StKind::Assert(
                self.ex(test)?,
                match msg {
                    Some(m) => Some(self.ex(m)?),
                    None => None,
                },
            ),
            StmtKind::Raise { exc, cause } => {
                let e = match exc {
                    Some(x) => Some(self.ex(x)?),
                    None => None,
                };
                let c = match cause {
                    Some(x) => Some(self.ex(x)?),
                    None => None,
                };
                StKind::Raise(e, c)
            }
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finalbody,
            } => {
                let body = self.stmts(body)?;
                let mut hs = Vec::with_capacity(handlers.len());
                for h in handlers {
                    hs.push(Handler {
                        typ: match &h.typ {
                            Some(t) => Some(self.ex(t)?),
                            None => None,
                        },
                        name: h.name.as_ref().map(|n| Target::Place(self.place(n))),
                        body: self.stmts(&h.body)?,
                        span: h.span,
                    });
                }
                StKind::Try(Box::new(TryBlock {
                    body,
                    handlers: hs,
                    orelse: self.stmts(orelse)?,
                    finalbody: self.stmts(finalbody)?,
                }))
            }
            StmtKind::With { items, body } => {
                let mut out = Vec::with_capacity(items.len());
                for (e, t) in items {
                    let e = self.ex(e)?;
                    let t = match t {
                        Some(t) => Some(self.target(t)?),
                        None => None,
                    };
                    out.push((e, t));
                }
                StKind::With(out, self.stmts(body)?)
            }
            StmtKind::Del(ts) => {
                let mut out = Vec::with_capacity(ts.len());
                for t in ts {
                    out.push(self.target(t)?);
                }
                StKind::Del(out)
            }
            StmtKind::Yield { value, from, store } => {
                let value = match value {
                    Some(v) => Some(self.ex(v)?),
                    None => None,
                };
                let store = match store {
                    ast::YieldStore::Discard => YieldTarget::Discard,
                    ast::YieldStore::Assign(ts) => {
                        let mut out = Vec::with_capacity(ts.len());
                        for t in ts {
                            out.push(self.target(t)?);
                        }
                        YieldTarget::Assign(out)
                    }
                    ast::YieldStore::Aug(t, op) => YieldTarget::Aug(Box::new(self.target(t)?), *op),
                };
                StKind::Yield(value, *from, store)
            }
        };
        Ok(St { kind, span: s.span })
    }

    fn in_function(&self) -> bool {
        let mut s = self.sid;
        loop {
            let sc = &self.t.scopes[s];
            match sc.kind {
                ScopeKind::Function => return true,
                ScopeKind::Module | ScopeKind::Class => return false,
                ScopeKind::Comp => match sc.parent {
                    Some(p) => s = p,
                    None => return false,
                },
            }
        }
    }

    fn class(&mut self, c: &Rc<ast::ClassDef>) -> Result<Rc<ClassProto>> {
        let decorators = self.exs(&c.decorators)?;
        let bases = self.exs(&c.bases)?;
        let store = Target::Place(self.place(&c.name));
        let Some(&cid) = self.t.by_node.get(&node_key(Rc::as_ptr(c))) else {
            return Err(unsupported("internal error: class scope not found", c.span));
        };
        let saved = self.sid;
        self.sid = cid;
        let body = self.class_body(&c.body, c.span);
        self.sid = saved;
        Ok(Rc::new(ClassProto {
            name: c.name.clone(),
            bases,
            body: body?,
            decorators,
            store,
        }))
    }

    fn func(&mut self, f: &Rc<ast::FuncDef>) -> Result<Rc<FuncProto>> {
        let p = &f.params;
        let mut defaults = Vec::new();
        for q in &p.params {
            if let Some(d) = &q.default {
                defaults.push(self.ex(d)?);
            }
        }
        let mut kwdefaults = Vec::new();
        for q in &p.kwonly {
            kwdefaults.push(match &q.default {
                Some(d) => Some(self.ex(d)?),
                None => None,
            });
        }
        let Some(&fid) = self.t.by_node.get(&node_key(Rc::as_ptr(f))) else {
            return Err(unsupported(
                "internal error: function scope not found",
                f.span,
            ));
        };
        // Captures are resolved in the defining scope.
        let frees: Vec<Name> = self.t.scopes[fid].frees.iter().cloned().collect();
        let mut capture_from = Vec::with_capacity(frees.len());
        for n in &frees {
            // a cell, or the slot of a value captured as is (`ScopeTable::frozen_free`)
            match self.place(n) {
                Place::Cell(s, _) | Place::Local(s, _) => capture_from.push(s),
                _ => {
                    return Err(unsupported(
                        &format!("internal error: cannot capture '{n}'"),
                        f.span,
                    ))
                }
            }
        }
        let mut fr = FrameCtx {
            slots: HashMap::new(),
            n_slots: 0,
        };
        let sc = &self.t.scopes[fid];
        let mut cell_params = Vec::new();
        let mut cell_locals = Vec::new();
        for n in &sc.params {
            let cell = sc.cells.contains(n) && !sc.frozen.contains(n);
            let s = fr.alloc(fid, n, cell);
            if cell {
                cell_params.push(s);
            }
        }
        for n in sc.bound.iter() {
            if sc.is_local(n) && !fr.slots.contains_key(&(fid, n.clone())) {
                let cell = sc.cells.contains(n) && !sc.frozen.contains(n);
                let s = fr.alloc(fid, n, cell);
                if cell {
                    cell_locals.push(s);
                }
            }
        }
        let mut free_slots = Vec::with_capacity(frees.len());
        for n in &frees {
            let frozen = self.t.frozen_free(fid, n);
            free_slots.push(fr.alloc(fid, n, !frozen));
        }
        let np = p.params.len() as u32;
        let vararg = p.vararg.as_ref().map(|_| np);
        let kb = np + vararg.is_some() as u32;
        let kwonly: Vec<(Name, u32)> = p
            .kwonly
            .iter()
            .enumerate()
            .map(|(i, q)| (q.name.clone(), kb + i as u32))
            .collect();
        let kwarg = p.kwarg.as_ref().map(|_| kb + kwonly.len() as u32);
        self.frames.push(fr);
        let saved = self.sid;
        self.sid = fid;
        let body = self.stmts(&f.body);
        self.sid = saved;
        let fr = self.frames.pop();
        let body = body?;
        let n_slots = fr.map(|f| f.n_slots).unwrap_or(0);
        let is_gen = has_yield(&f.body);
        let simple = vararg.is_none() && kwarg.is_none() && kwonly.is_empty() && !is_gen;
        let has_cells =
            !(cell_params.is_empty() && cell_locals.is_empty() && free_slots.is_empty());
        Ok(Rc::new(FuncProto {
            name: f.name.clone(),
            params: p.params.iter().map(|q| q.name.clone()).collect(),
            vararg,
            kwonly,
            kwarg,
            n_slots,
            cell_params,
            cell_locals,
            free_slots,
            frees,
            capture_from,
            defaults,
            kwdefaults,
            body,
            is_lambda: f.is_lambda,
            is_gen,
            simple,
            has_cells,
            span: f.span,
        }))
    }
}

/// Whether a function body contains `yield` (outside nested functions and classes).
fn has_yield(body: &[Stmt]) -> bool {
    body.iter().any(|s| match &s.kind {
        StmtKind::Yield { .. } => true,
        StmtKind::If { body, orelse, .. }
        | StmtKind::While { body, orelse, .. }
        | StmtKind::For { body, orelse, .. } => has_yield(body) || has_yield(orelse),
        StmtKind::Try {
            body,
            handlers,
            orelse,
            finalbody,
        } => {
            has_yield(body)
                || handlers.iter().any(|h| has_yield(&h.body))
                || has_yield(orelse)
                || has_yield(finalbody)
        }
        StmtKind::With { body, .. } => has_yield(body),
        _ => false,
    })
}
