//! A static look at how a function uses a `for` loop's variable, before the loop is
//! captured as an IR loop whose index is a tensor: inside the body the variable may only
//! be a subscript index (`x[t]`, `x[:, t]`), never stored; outside the loop it may not be
//! read at all (its value after a captured loop is not known to the graph).

use crate::interp::tree::{CArg, Ex, ExKind, FPart, Place, St, StKind, Target};

/// Walks expressions and statements looking for a use of local `slot` that is not allowed.
struct Scan {
    slot: u32,
    /// Reads as a subscript index are allowed (inside the loop body).
    allow_index: bool,
    /// Stores to the slot are uses that are not allowed (inside the loop body).
    stores_bad: bool,
    /// A statement to skip (the loop itself, when scanning the rest of the function).
    skip: *const St,
}

impl Scan {
    fn any_ex<'a>(&self, es: impl IntoIterator<Item = &'a Ex>) -> bool {
        es.into_iter().any(|e| self.ex(e, false))
    }

    fn opt(&self, e: &Option<Box<Ex>>) -> bool {
        e.as_deref().is_some_and(|e| self.ex(e, false))
    }

    fn args(&self, args: &[CArg]) -> bool {
        args.iter().any(|a| match a {
            CArg::Pos(e) | CArg::Star(e) | CArg::Kw(_, e) | CArg::StarStar(e) => self.ex(e, false),
        })
    }

    fn fparts(&self, parts: &[FPart]) -> bool {
        parts.iter().any(|p| match p {
            FPart::Lit(_) => false,
            FPart::Expr { expr, spec, .. } => self.ex(expr, false) || self.fparts(spec),
        })
    }

    /// True when `e` uses the slot in a way that is not allowed; `index` says `e` is a
    /// subscript's index (or an element of an index tuple).
    fn ex(&self, e: &Ex, index: bool) -> bool {
        match &e.kind {
            ExKind::Load(Place::Local(k, _)) => *k == self.slot && !(index && self.allow_index),
            ExKind::Const(_) | ExKind::Load(_) | ExKind::Super(_) => false,
            ExKind::Subscript(o, i) => self.ex(o, false) || self.index(i),
            ExKind::Attr(o, _) | ExKind::Unary(_, o) | ExKind::Starred(o) => self.ex(o, false),
            ExKind::Slice(a, b, c) => self.opt(a) || self.opt(b) || self.opt(c),
            ExKind::Call(f, args) => self.ex(f, false) || self.args(args),
            ExKind::CallMethod(o, _, args) => self.ex(o, false) || self.args(args),
            ExKind::Binary(_, a, b) | ExKind::BoolOp(_, a, b) => {
                self.ex(a, false) || self.ex(b, false)
            }
            ExKind::Compare(a, rest) => self.ex(a, false) || self.any_ex(rest.iter().map(|r| &r.1)),
            ExKind::IfExp(a, b, c) => self.any_ex([&**a, &**b, &**c]),
            ExKind::List(xs) | ExKind::Tuple(xs) | ExKind::Set(xs) => self.any_ex(xs),
            ExKind::Dict(kv) => kv
                .iter()
                .any(|(k, v)| self.ex(k, false) || self.ex(v, false)),
            ExKind::DictUnpack(kv) => kv
                .iter()
                .any(|(k, v)| k.as_ref().is_some_and(|k| self.ex(k, false)) || self.ex(v, false)),
            // the generator function is not looked into (as `MakeFunc`)
            ExKind::GenExp(..) | ExKind::Named(..) => true,
            ExKind::FString(parts) => self.fparts(parts),
            // Defaults and closures are evaluated elsewhere: not looked into.
            ExKind::MakeFunc(_) => true,
            ExKind::ListComp(x, gens, _) => self.ex(x, false) || self.gens(gens),
            ExKind::DictComp(k, v, gens, _) => {
                self.ex(k, false) || self.ex(v, false) || self.gens(gens)
            }
        }
    }

    fn gens(&self, gens: &[crate::interp::tree::Gen]) -> bool {
        gens.iter()
            .any(|g| self.target(&g.target) || self.ex(&g.iter, false) || self.any_ex(&g.ifs))
    }

    fn index(&self, i: &Ex) -> bool {
        match &i.kind {
            ExKind::Tuple(xs) => xs.iter().any(|x| self.ex(x, true)),
            _ => self.ex(i, true),
        }
    }

    /// A store target: a store to the slot, or a read inside the target's expressions.
    fn target(&self, t: &Target) -> bool {
        match t {
            Target::Place(Place::Local(k, _)) => self.stores_bad && *k == self.slot,
            Target::Place(_) => false,
            Target::Attr(o, _, _) => self.ex(o, false),
            // `xs[t] = v` needs a Python int when `xs` is a list: not allowed.
            Target::Subscript(o, i) => self.ex(o, false) || self.ex(i, false),
            Target::Unpack(ts, _, _) => ts.iter().any(|t| self.target(t)),
        }
    }

    fn is_slot(&self, t: &Target) -> bool {
        matches!(t, Target::Place(Place::Local(k, _)) if *k == self.slot)
    }

    fn block(&self, b: &[St]) -> bool {
        b.iter().any(|s| self.st(s))
    }

    fn st(&self, s: &St) -> bool {
        if std::ptr::eq(s, self.skip) {
            return false;
        }
        match &s.kind {
            StKind::Expr(e) | StKind::Return(Some(e)) => self.ex(e, false),
            StKind::Assign(ts, e) => ts.iter().any(|t| self.target(t)) || self.ex(e, false),
            StKind::AssignLocal(k, e) | StKind::AugLocal(k, _, _, e) => {
                (self.stores_bad && *k == self.slot) || self.ex(e, false)
            }
            StKind::AugAssign(t, _, e) => self.target(t) || self.ex(e, false),
            StKind::If(c, a, b) | StKind::While(c, a, b) => {
                self.ex(c, false) || self.block(a) || self.block(b)
            }
            StKind::For(t, it, a, b) => {
                // Outside the loop, another loop over the same variable rebinds it
                // before each run of its body.
                let rebinds = !self.allow_index && self.is_slot(t);
                self.target(t) || self.ex(it, false) || (!rebinds && self.block(a)) || self.block(b)
            }
            StKind::Break | StKind::Continue | StKind::Pass | StKind::Return(None) => false,
            StKind::Assert(a, b) => {
                self.ex(a, false) || b.as_ref().is_some_and(|b| self.ex(b, false))
            }
            StKind::Raise(a, b) => [a, b]
                .iter()
                .any(|x| x.as_ref().is_some_and(|x| self.ex(x, false))),
            StKind::Del(ts) => ts.iter().any(|t| self.target(t)),
            // generators are not captured: conservatively a use
            StKind::Yield(..) => true,
            StKind::With(items, body) => {
                items
                    .iter()
                    .any(|(e, t)| self.ex(e, false) || t.as_ref().is_some_and(|t| self.target(t)))
                    || self.block(body)
            }
            StKind::Try(t) => {
                self.block(&t.body)
                    || t.handlers.iter().any(|h| {
                        h.typ.as_ref().is_some_and(|e| self.ex(e, false))
                            || h.name.as_ref().is_some_and(|n| self.target(n))
                            || self.block(&h.body)
                    })
                    || self.block(&t.orelse)
                    || self.block(&t.finalbody)
            }
            StKind::Import(_) | StKind::ImportFrom(..) | StKind::ImportStar(_) => false,
            StKind::FuncDef(..) | StKind::ClassDef(_) => true,
        }
    }
}

/// True when the loop body `body` uses local `slot` only as a subscript index.
pub fn index_only(body: &[St], slot: u32) -> bool {
    let s = Scan {
        slot,
        allow_index: true,
        stores_bad: true,
        skip: std::ptr::null(),
    };
    !s.block(body)
}

/// True when the function body `func` reads local `slot` outside the statement `the_for`.
pub fn read_outside(func: &[St], the_for: &St, slot: u32) -> bool {
    let s = Scan {
        slot,
        allow_index: false,
        stores_bad: false,
        skip: the_for,
    };
    s.block(func)
}
