//! Test helpers for the syntax tests: a compact S-expression printer for the AST.
#![allow(dead_code)]

use kiln::source::FileId;
use kiln::syntax::ast::*;
use kiln::syntax::parse_module;
use kiln::Error;

/// Parses `src` or panics with the errors (tests only).
pub fn module(src: &str) -> Module {
    match parse_module(src, FileId(0)) {
        Ok(m) => m,
        Err(e) => panic!("parse failed for {src:?}: {e:?}"),
    }
}

/// The S-expressions of all statements of `src`, joined by spaces.
pub fn sx(src: &str) -> String {
    let m = module(src);
    m.body.iter().map(stmt).collect::<Vec<_>>().join(" ")
}

/// The S-expression of the expression statement `src`.
pub fn ex(src: &str) -> String {
    sx(src)
}

/// The errors for `src` (panics if it parses).
pub fn errs(src: &str) -> Vec<Error> {
    match parse_module(src, FileId(0)) {
        Ok(m) => panic!("expected an error for {src:?}, got {:?}", m.body),
        Err(e) => e,
    }
}

/// The first error's message, and the source text its span covers.
pub fn err1(src: &str) -> (String, String) {
    let e = errs(src).remove(0);
    let sp = e.span.expect("error without span");
    let text = src
        .get(sp.start as usize..sp.end as usize)
        .unwrap_or("<bad span>");
    (e.message.clone(), text.to_string())
}

/// The source text covered by a span.
pub fn text(src: &str, sp: kiln::source::Span) -> &str {
    &src[sp.start as usize..sp.end as usize]
}

fn list<T>(items: &[T], f: impl Fn(&T) -> String) -> String {
    items.iter().map(f).collect::<Vec<_>>().join(" ")
}

fn block(b: &[Stmt]) -> String {
    format!("({})", list(b, stmt))
}

fn opt(e: &Option<Expr>) -> String {
    e.as_ref().map_or("_".into(), expr)
}

pub fn stmt(s: &Stmt) -> String {
    match &s.kind {
        StmtKind::Expr(e) => expr(e),
        StmtKind::Assign { targets, value } => {
            format!("(= {} {})", list(targets, expr), expr(value))
        }
        StmtKind::AnnAssign {
            target,
            annotation,
            value,
        } => format!("(: {} {} {})", expr(target), expr(annotation), opt(value)),
        StmtKind::AugAssign { target, op, value } => {
            format!("({}= {} {})", op.symbol(), expr(target), expr(value))
        }
        StmtKind::If { cond, body, orelse } => {
            format!("(if {} {} {})", expr(cond), block(body), block(orelse))
        }
        StmtKind::While { cond, body, orelse } => {
            format!("(while {} {} {})", expr(cond), block(body), block(orelse))
        }
        StmtKind::For {
            target,
            iter,
            body,
            orelse,
        } => format!(
            "(for {} {} {} {})",
            expr(target),
            expr(iter),
            block(body),
            block(orelse)
        ),
        StmtKind::Break => "break".into(),
        StmtKind::Continue => "continue".into(),
        StmtKind::Pass => "pass".into(),
        StmtKind::Return(e) => format!("(return {})", opt(e)),
        StmtKind::FuncDef(f) => format!(
            "(def {} {} ({}) {})",
            f.name,
            params(&f.params),
            list(&f.decorators, expr),
            block(&f.body)
        ),
        StmtKind::ClassDef(c) => format!(
            "(class {} {} ({}) {})",
            c.name,
            if c.bases.is_empty() {
                "_".to_string()
            } else {
                list(&c.bases, expr)
            },
            list(&c.decorators, expr),
            block(&c.body)
        ),
        StmtKind::Global(n) => format!("(global {})", n.join(" ")),
        StmtKind::Nonlocal(n) => format!("(nonlocal {})", n.join(" ")),
        StmtKind::Import(items) => format!(
            "(import {})",
            list(items, |i| match &i.alias {
                Some(a) => format!("({} {})", i.path.join("."), a),
                None => i.path.join("."),
            })
        ),
        StmtKind::ImportFrom { module, names } => format!(
            "(from {} {})",
            module.join("."),
            list(names, |(n, a)| match a {
                Some(a) => format!("({n} {a})"),
                None => n.to_string(),
            })
        ),
        StmtKind::ImportStar(module) => format!("(from {} *)", module.join(".")),
        StmtKind::Assert { test, msg } => format!("(assert {} {})", expr(test), opt(msg)),
        StmtKind::Raise { exc, cause } => format!("(raise {} {})", opt(exc), opt(cause)),
        StmtKind::Try {
            body,
            handlers,
            orelse,
            finalbody,
        } => format!(
            "(try {} ({}) {} {})",
            block(body),
            list(handlers, |h| format!(
                "(except {} {} {})",
                opt(&h.typ),
                h.name.as_deref().unwrap_or("_"),
                block(&h.body)
            )),
            block(orelse),
            block(finalbody)
        ),
        StmtKind::With { items, body } => format!(
            "(with ({}) {})",
            list(items, |(e, t)| format!("({} {})", expr(e), opt(t))),
            block(body)
        ),
        StmtKind::Del(t) => format!("(del {})", list(t, expr)),
        StmtKind::Yield { value, from, store } => {
            let v = value.as_ref().map_or("_".into(), expr);
            let y = if *from { "yield-from" } else { "yield" };
            match store {
                YieldStore::Discard => format!("({y} {v})"),
                YieldStore::Assign(ts) => format!("(= {} ({y} {v}))", list(ts, expr)),
                YieldStore::Aug(t, op) => format!("({}= {} ({y} {v}))", op.symbol(), expr(t)),
            }
        }
    }
}

fn param(p: &Param) -> String {
    match &p.default {
        Some(d) => format!("(= {} {})", p.name, expr(d)),
        None => p.name.to_string(),
    }
}

pub fn params(p: &Params) -> String {
    let mut v: Vec<String> = p.params.iter().map(param).collect();
    match &p.vararg {
        Some(a) => v.push(format!("*{}", a.name)),
        None if !p.kwonly.is_empty() => v.push("*".into()),
        None => {}
    }
    v.extend(p.kwonly.iter().map(param));
    if let Some(k) = &p.kwarg {
        v.push(format!("**{}", k.name));
    }
    format!("({})", v.join(" "))
}

fn fparts(parts: &[FPart]) -> String {
    list(parts, |p| match p {
        FPart::Lit(s) => format!("{s:?}"),
        FPart::Expr {
            expr: e,
            conv,
            spec,
        } => {
            let c = conv.map_or(String::new(), |c| format!(" !{c}"));
            let s = if spec.is_empty() {
                String::new()
            } else {
                format!(" (spec {})", fparts(spec))
            };
            format!("{{{}{c}{s}}}", expr(e))
        }
    })
}

fn comps(cs: &[Comprehension]) -> String {
    list(cs, |c| {
        let ifs = c
            .ifs
            .iter()
            .map(|i| format!(" (if {})", expr(i)))
            .collect::<String>();
        format!("(for {} {}{ifs})", expr(&c.target), expr(&c.iter))
    })
}

fn unop(op: UnaryOp) -> &'static str {
    match op {
        UnaryOp::Neg => "-",
        UnaryOp::Pos => "+",
        UnaryOp::Invert => "~",
        UnaryOp::Not => "not",
    }
}

pub fn expr(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Int(i) => i.to_string(),
        ExprKind::Float(f) => format!("{f:?}"),
        ExprKind::Str(s) => format!("{s:?}"),
        ExprKind::Bool(b) => if *b { "True" } else { "False" }.into(),
        ExprKind::None => "None".into(),
        ExprKind::Ellipsis => "...".into(),
        ExprKind::FString(p) => format!("(f {})", fparts(p)),
        ExprKind::Name(n) => n.to_string(),
        ExprKind::List(v) => format!("(list {})", list(v, expr)).replace("(list )", "(list)"),
        ExprKind::Tuple(v) => format!("(tuple {})", list(v, expr)).replace("(tuple )", "(tuple)"),
        ExprKind::Dict(v) => format!(
            "(dict {})",
            list(v, |(k, x)| match k {
                Some(k) => format!("({} {})", expr(k), expr(x)),
                None => format!("(** {})", expr(x)),
            })
        )
        .replace("(dict )", "(dict)"),
        ExprKind::Named(n, v) => format!("(:= {n} {})", expr(v)),
        ExprKind::Set(v) => format!("(set {})", list(v, expr)),
        ExprKind::SetComp(x, c) => format!("(setcomp {} {})", expr(x), comps(c)),
        ExprKind::GenExp(f, first) => format!("(genexp {} {})", expr(first), block(&f.body)),
        ExprKind::Starred(x) => format!("(* {})", expr(x)),
        ExprKind::Attr(x, n) => format!("(. {} {n})", expr(x)),
        ExprKind::Subscript(x, i) => format!("([] {} {})", expr(x), expr(i)),
        ExprKind::Slice(a, b, c) => {
            let o = |x: &Option<Box<Expr>>| x.as_deref().map_or("_".into(), expr);
            format!("(slice {} {} {})", o(a), o(b), o(c))
        }
        ExprKind::Call(f, args) => {
            let a = list(args, |a| match a {
                Arg::Pos(x) => expr(x),
                Arg::Star(x) => format!("(* {})", expr(x)),
                Arg::Kw(n, x) => format!("(kw {n} {})", expr(x)),
                Arg::StarStar(x) => format!("(** {})", expr(x)),
            });
            format!(
                "(call {}{}{a})",
                expr(f),
                if args.is_empty() { "" } else { " " }
            )
        }
        ExprKind::Unary(op, x) => format!("({} {})", unop(*op), expr(x)),
        ExprKind::Binary(op, a, b) => format!("({} {} {})", op.symbol(), expr(a), expr(b)),
        ExprKind::BoolOp(op, a, b) => {
            let o = if *op == BoolOp::And { "and" } else { "or" };
            format!("({o} {} {})", expr(a), expr(b))
        }
        ExprKind::Compare(a, rest) => {
            let r = list(rest, |(op, x)| format!("{} {}", op.symbol(), expr(x)));
            format!("(cmp {} {r})", expr(a))
        }
        ExprKind::IfExp { cond, then, orelse } => {
            format!("(ifx {} {} {})", expr(cond), expr(then), expr(orelse))
        }
        ExprKind::Lambda(f) => {
            let body = match f.body.first().map(|s| &s.kind) {
                Some(StmtKind::Return(Some(b))) => expr(b),
                _ => "?".into(),
            };
            format!("(lambda {} {body})", params(&f.params))
        }
        ExprKind::ListComp(x, c) => format!("(listcomp {} {})", expr(x), comps(c)),
        ExprKind::DictComp(k, v, c) => format!("(dictcomp {} {} {})", expr(k), expr(v), comps(c)),
    }
}
