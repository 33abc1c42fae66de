//! Statement-building actions called by the grammar: definitions, parameters, compound
//! statements and their validation.

use super::actions::{ArgItem, Cx, Node, PResult};
use super::ast::*;
use super::targets::Ctx;
use crate::source::Span;
use std::rc::Rc;

/// One parameter as written, before the ordering rules are checked.
#[derive(Debug, Clone)]
pub enum ParamItem {
    /// `x` or `x=default`, with the default's depth.
    Plain(Param, usize),
    /// `*` (bare) or `*args`, with the span of the `*`.
    Star(Option<Param>, Span),
    /// `**kwargs`.
    StarStar(Param),
}

/// A `def` or `class` before its decorators are attached.
#[derive(Debug, Clone)]
pub enum Def {
    Func(FuncDef),
    Class(ClassDef),
}

/// One `except` clause as parsed.
pub type Handler = ExceptHandler;

/// The end offset of a block (its last statement's end).
fn block_end(body: &[Stmt], default: u32) -> u32 {
    body.last().map_or(default, |s| s.span.end)
}

impl Cx<'_> {
    pub fn stmt(&self, kind: StmtKind, l: usize, r: usize) -> Stmt {
        Stmt {
            kind,
            span: self.span(l, r),
        }
    }

    /// A `while` or `for` statement from `l` to the end of its last block.
    pub fn loop_stmt(&self, kind: StmtKind, l: usize, r: usize) -> Stmt {
        let end = match &kind {
            StmtKind::While { body, orelse, .. } | StmtKind::For { body, orelse, .. } => {
                block_end(orelse, block_end(body, r as u32))
            }
            _ => r as u32,
        };
        self.stmt(kind, l, end as usize)
    }

    pub fn expr_stmt(&self, n: Node) -> Stmt {
        let span = n.e.span;
        Stmt {
            kind: StmtKind::Expr(n.e),
            span,
        }
    }

    pub fn assign(&self, targets: Vec<Node>, value: Node, l: usize, r: usize) -> PResult<Stmt> {
        let targets = targets
            .into_iter()
            .map(|t| self.target(t, Ctx::Assign))
            .collect::<PResult<Vec<_>>>()?;
        let value = value.e;
        Ok(self.stmt(StmtKind::Assign { targets, value }, l, r))
    }

    /// `target: annotation [= value]`; the target is a single `Name`, `Attr` or `Subscript`
    /// (as CPython: "only single target (not tuple) can be annotated").
    pub fn ann_assign(
        &self,
        t: Node,
        annotation: Node,
        value: Option<Node>,
        l: usize,
        r: usize,
    ) -> PResult<Stmt> {
        let target = match &t.e.kind {
            ExprKind::Name(_) | ExprKind::Attr(..) | ExprKind::Subscript(..) => t.e,
            ExprKind::Tuple(_) => {
                return self.err_at("only single target (not tuple) can be annotated", t.e.span)
            }
            ExprKind::List(_) => {
                return self.err_at("only single target (not list) can be annotated", t.e.span)
            }
            _ => return self.err_at("illegal target for annotation", t.e.span),
        };
        let kind = StmtKind::AnnAssign {
            target,
            annotation: annotation.e,
            value: value.map(|v| v.e),
        };
        Ok(self.stmt(kind, l, r))
    }

    pub fn aug_assign(&self, t: Node, op: BinOp, v: Node, l: usize, r: usize) -> PResult<Stmt> {
        let target = self.aug_target(t)?;
        let kind = StmtKind::AugAssign {
            target,
            op,
            value: v.e,
        };
        Ok(self.stmt(kind, l, r))
    }

    /// A `yield` statement: `yield x`, `ts = yield x` (targets `ts`), `t op= yield x`.
    pub fn yield_stmt(
        &self,
        targets: Vec<Node>,
        aug: Option<BinOp>,
        (from, value): (bool, Option<Node>),
        l: usize,
        r: usize,
    ) -> PResult<Stmt> {
        let store = match aug {
            Some(op) => match targets.into_iter().next() {
                Some(t) => YieldStore::Aug(self.aug_target(t)?, op),
                None => YieldStore::Discard,
            },
            None if targets.is_empty() => YieldStore::Discard,
            None => YieldStore::Assign(
                targets
                    .into_iter()
                    .map(|t| self.target(t, Ctx::Assign))
                    .collect::<PResult<Vec<_>>>()?,
            ),
        };
        let value = value.map(|n| n.e);
        Ok(self.stmt(StmtKind::Yield { value, from, store }, l, r))
    }

    /// `if c: ... elif c2: ... else: ...`; each `elif` becomes a nested `If`.
    pub fn if_chain(
        &self,
        l: usize,
        cond: Node,
        body: Vec<Stmt>,
        elifs: Vec<(usize, Node, Vec<Stmt>)>,
        orelse: Option<Vec<Stmt>>,
    ) -> Stmt {
        let mut tail = orelse.unwrap_or_default();
        for (el, c, b) in elifs.into_iter().rev() {
            let end = block_end(&tail, block_end(&b, el as u32));
            let kind = StmtKind::If {
                cond: c.e,
                body: b,
                orelse: tail,
            };
            tail = vec![self.stmt(kind, el, end as usize)];
        }
        let end = block_end(&tail, block_end(&body, l as u32));
        let kind = StmtKind::If {
            cond: cond.e,
            body,
            orelse: tail,
        };
        self.stmt(kind, l, end as usize)
    }

    /// A parameter `name` (span `l..r`) with an optional default.
    pub fn param(&self, name: Rc<str>, default: Option<Node>, l: usize, r: usize) -> ParamItem {
        let d = default.as_ref().map_or(0, |n| n.d);
        let param = Param {
            name,
            default: default.map(|n| n.e),
            span: self.span(l, r),
        };
        ParamItem::Plain(param, d)
    }

    /// A parameter without default (`*args`, `**kwargs`).
    pub fn plain_param(&self, name: Rc<str>, l: usize, r: usize) -> Param {
        Param {
            name,
            default: None,
            span: self.span(l, r),
        }
    }

    /// Checks Python's parameter rules and splits the list into a `Params`.
    pub fn params(&self, items: Vec<ParamItem>) -> PResult<(Params, usize)> {
        let mut p = Params::default();
        let mut star_seen = false;
        let mut bare_star: Option<Span> = None;
        let mut default_seen = false;
        let mut d = 0;
        let mut names: Vec<Rc<str>> = Vec::new();
        for item in items {
            if let Some(kw) = &p.kwarg {
                return self.err_at("arguments cannot follow var-keyword argument", kw.span);
            }
            let param_name = match &item {
                ParamItem::Plain(q, _) | ParamItem::StarStar(q) => Some(q),
                ParamItem::Star(q, _) => q.as_ref(),
            };
            if let Some(q) = param_name {
                if names.contains(&q.name) {
                    let msg = format!("duplicate argument '{}' in function definition", q.name);
                    return self.err_at(msg, q.span);
                }
                names.push(q.name.clone());
            }
            match item {
                ParamItem::Plain(q, qd) if star_seen => {
                    d = d.max(qd);
                    bare_star = None;
                    p.kwonly.push(q);
                }
                ParamItem::Plain(q, qd) => {
                    d = d.max(qd);
                    if q.default.is_some() {
                        default_seen = true;
                    } else if default_seen {
                        return self
                            .err_at("non-default argument follows default argument", q.span);
                    }
                    p.params.push(q);
                }
                ParamItem::Star(_, span) if star_seen => {
                    return self.err_at("* argument may appear only once", span);
                }
                ParamItem::Star(q, span) => {
                    star_seen = true;
                    if q.is_none() {
                        bare_star = Some(span);
                    }
                    p.vararg = q;
                }
                ParamItem::StarStar(q) => p.kwarg = Some(q),
            }
        }
        if let Some(span) = bare_star {
            return self.err_at("named arguments must follow bare *", span);
        }
        Ok((p, d))
    }

    pub fn funcdef(
        &self,
        name: Rc<str>,
        params: Vec<ParamItem>,
        body: Vec<Stmt>,
        l: usize,
        r: usize,
    ) -> PResult<Def> {
        let (params, _) = self.params(params)?;
        let end = block_end(&body, r as u32) as usize;
        Ok(Def::Func(FuncDef {
            name,
            params,
            body,
            decorators: Vec::new(),
            is_lambda: false,
            span: self.span(l, end),
        }))
    }

    pub fn lambda(&self, params: Vec<ParamItem>, body: Node, l: usize, r: usize) -> PResult<Node> {
        let (params, pd) = self.params(params)?;
        let d = pd.max(body.d);
        let span = self.span(l, r);
        let ret = Stmt {
            span: body.e.span,
            kind: StmtKind::Return(Some(body.e)),
        };
        let def = FuncDef {
            name: "<lambda>".into(),
            params,
            body: vec![ret],
            decorators: Vec::new(),
            is_lambda: true,
            span,
        };
        self.node(ExprKind::Lambda(Rc::new(def)), span, d)
    }

    /// `class Name(A, B):`, rejecting metaclasses and other keywords.
    pub fn classdef(
        &self,
        name: Rc<str>,
        args: Vec<ArgItem>,
        body: Vec<Stmt>,
        l: usize,
        r: usize,
    ) -> PResult<Def> {
        let mut bases = Vec::new();
        for a in args {
            match a.arg {
                Arg::Pos(e) => bases.push(e),
                Arg::Kw(k, _) if &*k == "metaclass" => {
                    return self.err_at("metaclasses are not supported", a.span)
                }
                Arg::Kw(..) => {
                    let msg = "keyword arguments in class definitions are not supported";
                    return self.err_at(msg, a.span);
                }
                Arg::Star(_) | Arg::StarStar(_) => {
                    return self
                        .err_at("argument unpacking in class bases is not supported", a.span)
                }
            }
        }
        let end = block_end(&body, r as u32) as usize;
        Ok(Def::Class(ClassDef {
            name,
            bases,
            body,
            decorators: Vec::new(),
            span: self.span(l, end),
        }))
    }

    /// Attaches decorators (top to bottom) to a definition; the span starts at the first `@`.
    pub fn definition(&self, decorators: Vec<Node>, def: Def, l: usize) -> Stmt {
        let decorators: Vec<Expr> = decorators.into_iter().map(|n| n.e).collect();
        match def {
            Def::Func(mut f) => {
                f.decorators = decorators;
                f.span = self.span(l, f.span.end as usize);
                Stmt {
                    span: f.span,
                    kind: StmtKind::FuncDef(Rc::new(f)),
                }
            }
            Def::Class(mut c) => {
                c.decorators = decorators;
                c.span = self.span(l, c.span.end as usize);
                Stmt {
                    span: c.span,
                    kind: StmtKind::ClassDef(Rc::new(c)),
                }
            }
        }
    }

    pub fn handler(
        &self,
        typ: Option<(Node, Option<Rc<str>>)>,
        body: Vec<Stmt>,
        l: usize,
        r: usize,
    ) -> Handler {
        let (typ, name) = match typ {
            Some((t, n)) => (Some(t.e), n),
            None => (None, None),
        };
        let end = block_end(&body, r as u32) as usize;
        ExceptHandler {
            typ,
            name,
            body,
            span: self.span(l, end),
        }
    }

    pub fn try_stmt(
        &self,
        l: usize,
        body: Vec<Stmt>,
        handlers: Vec<Handler>,
        orelse: Option<Vec<Stmt>>,
        finalbody: Option<Vec<Stmt>>,
    ) -> PResult<Stmt> {
        let n = handlers.len();
        for (i, h) in handlers.iter().enumerate() {
            if h.typ.is_none() && i + 1 < n {
                return self.err_at("default 'except:' must be last", h.span);
            }
        }
        let (orelse, finalbody) = (orelse.unwrap_or_default(), finalbody.unwrap_or_default());
        let mut end = block_end(&body, l as u32);
        end = handlers.last().map_or(end, |h| h.span.end);
        end = block_end(&orelse, end);
        end = block_end(&finalbody, end);
        let kind = StmtKind::Try {
            body,
            handlers,
            orelse,
            finalbody,
        };
        Ok(self.stmt(kind, l, end as usize))
    }

    pub fn with_stmt(
        &self,
        items: Vec<(Node, Option<Node>)>,
        body: Vec<Stmt>,
        l: usize,
    ) -> PResult<Stmt> {
        let mut out = Vec::with_capacity(items.len());
        for (e, t) in items {
            let t = t.map(|t| self.target(t, Ctx::Assign)).transpose()?;
            out.push((e.e, t));
        }
        let end = block_end(&body, l as u32) as usize;
        Ok(self.stmt(StmtKind::With { items: out, body }, l, end))
    }

    pub fn del_stmt(&self, targets: Vec<Node>, l: usize, r: usize) -> PResult<Stmt> {
        let items = targets
            .into_iter()
            .map(|t| self.target(t, Ctx::Del))
            .collect::<PResult<Vec<_>>>()?;
        Ok(self.stmt(StmtKind::Del(items), l, r))
    }
}
