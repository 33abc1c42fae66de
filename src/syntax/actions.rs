//! Expression-building actions called by the grammar: AST nodes with spans and depth checks.

use super::ast::*;
use super::limits::{too_deep, MAX_EXPR_DEPTH};
use super::token::Tok;
use crate::error::Error;
use crate::source::{FileId, Span};
use lalrpop_util::ParseError;
use std::rc::Rc;

/// The error type of grammar actions.
pub type PErr = ParseError<usize, Tok, Error>;
pub type PResult<T> = Result<T, PErr>;

/// The parsing context handed to every grammar action.
pub struct Cx<'a> {
    /// The whole file (f-string bodies are re-lexed from it).
    pub src: &'a str,
    pub file: FileId,
    /// How deeply this parse is nested inside f-string replacement fields.
    pub fdepth: u32,
}

/// An expression with the depth of its tree (a leaf has depth 1).
#[derive(Debug, Clone)]
pub struct Node {
    pub e: Expr,
    pub d: usize,
}

/// One call argument with its span (for error messages) and depth.
#[derive(Debug, Clone)]
pub struct ArgItem {
    pub arg: Arg,
    pub span: Span,
    pub d: usize,
}

/// One `for ... in ... if ...` clause of a comprehension, before target validation.
#[derive(Debug, Clone)]
pub struct CompClause {
    pub target: Node,
    pub iter: Node,
    pub ifs: Vec<Node>,
}

/// The deepest of some nodes (0 for none).
pub fn depth<'n>(nodes: impl IntoIterator<Item = &'n Node>) -> usize {
    nodes.into_iter().map(|n| n.d).max().unwrap_or(0)
}

fn bx(n: Node) -> Box<Expr> {
    Box::new(n.e)
}

impl Cx<'_> {
    pub fn span(&self, l: usize, r: usize) -> Span {
        Span::new(self.file, l, r)
    }

    /// A `SyntaxError` at `l..r` as a grammar-action error.
    pub fn err<T>(&self, msg: impl Into<String>, l: usize, r: usize) -> PResult<T> {
        Err(ParseError::User {
            error: Error::syntax(msg, self.span(l, r)),
        })
    }

    pub fn err_at<T>(&self, msg: impl Into<String>, span: Span) -> PResult<T> {
        Err(ParseError::User {
            error: Error::syntax(msg, span),
        })
    }

    pub fn leaf(&self, kind: ExprKind, l: usize, r: usize) -> Node {
        Node {
            e: Expr {
                kind,
                span: self.span(l, r),
            },
            d: 1,
        }
    }

    /// A node over children of depth at most `d`; fails past the nesting limit.
    pub fn node(&self, kind: ExprKind, span: Span, d: usize) -> PResult<Node> {
        if d >= MAX_EXPR_DEPTH {
            return self.err_at(too_deep(MAX_EXPR_DEPTH), span);
        }
        Ok(Node {
            e: Expr { kind, span },
            d: d + 1,
        })
    }

    pub fn name(&self, n: Rc<str>, l: usize, r: usize) -> Node {
        self.leaf(ExprKind::Name(n), l, r)
    }

    pub fn binary(&self, op: BinOp, a: Node, b: Node, l: usize, r: usize) -> PResult<Node> {
        let (span, d) = (self.span(l, r), a.d.max(b.d));
        self.node(ExprKind::Binary(op, bx(a), bx(b)), span, d)
    }

    pub fn unary(&self, op: UnaryOp, a: Node, l: usize, r: usize) -> PResult<Node> {
        let span = self.span(l, r);
        let d = a.d;
        self.node(ExprKind::Unary(op, bx(a)), span, d)
    }

    pub fn boolop(&self, op: BoolOp, a: Node, b: Node, l: usize, r: usize) -> PResult<Node> {
        let (span, d) = (self.span(l, r), a.d.max(b.d));
        self.node(ExprKind::BoolOp(op, bx(a), bx(b)), span, d)
    }

    pub fn compare(
        &self,
        first: Node,
        rest: Vec<(CmpOp, Node)>,
        l: usize,
        r: usize,
    ) -> PResult<Node> {
        let d = first.d.max(depth(rest.iter().map(|r| &r.1)));
        let span = self.span(l, r);
        let rest = rest.into_iter().map(|(op, n)| (op, n.e)).collect();
        self.node(ExprKind::Compare(bx(first), rest), span, d)
    }

    pub fn ifexp(&self, then: Node, cond: Node, orelse: Node, l: usize, r: usize) -> PResult<Node> {
        let span = self.span(l, r);
        let d = then.d.max(cond.d).max(orelse.d);
        let kind = ExprKind::IfExp {
            cond: bx(cond),
            then: bx(then),
            orelse: bx(orelse),
        };
        self.node(kind, span, d)
    }

    pub fn attr(&self, v: Node, name: Rc<str>, l: usize, r: usize) -> PResult<Node> {
        let span = self.span(l, r);
        let d = v.d;
        self.node(ExprKind::Attr(bx(v), name), span, d)
    }

    pub fn subscript(&self, v: Node, idx: Node, l: usize, r: usize) -> PResult<Node> {
        let span = self.span(l, r);
        let d = v.d.max(idx.d);
        self.node(ExprKind::Subscript(bx(v), bx(idx)), span, d)
    }

    pub fn slice(&self, parts: [Option<Node>; 3], l: usize, r: usize) -> PResult<Node> {
        let d = depth(parts.iter().flatten());
        let [a, b, c] = parts;
        let kind = ExprKind::Slice(a.map(bx), b.map(bx), c.map(bx));
        self.node(kind, self.span(l, r), d)
    }

    pub fn starred(&self, v: Node, l: usize, r: usize) -> PResult<Node> {
        let span = self.span(l, r);
        let d = v.d;
        self.node(ExprKind::Starred(bx(v)), span, d)
    }

    /// A display of several items (`List`/`Tuple`) over `l..r`.
    pub fn seq(&self, tuple: bool, items: Vec<Node>, l: usize, r: usize) -> PResult<Node> {
        let d = depth(&items);
        let items: Vec<Expr> = items.into_iter().map(|n| n.e).collect();
        let kind = if tuple {
            ExprKind::Tuple(items)
        } else {
            ExprKind::List(items)
        };
        self.node(kind, self.span(l, r), d)
    }

    /// A comma-separated list: a tuple when it has a comma, else its single item (which
    /// may not be a bare starred expression).
    pub fn maybe_tuple(&self, items: Vec<Node>, comma: bool, l: usize, r: usize) -> PResult<Node> {
        if comma || items.len() != 1 {
            return self.seq(true, items, l, r);
        }
        let one = items.into_iter().next();
        match one {
            Some(n) if matches!(n.e.kind, ExprKind::Starred(_)) => {
                self.err_at("can't use starred expression here", n.e.span)
            }
            Some(n) => Ok(n),
            None => self.seq(true, Vec::new(), l, r),
        }
    }

    /// `( items )` without a trailing comma: the single item itself, or a tuple.
    pub fn paren(&self, items: Vec<Node>, l: usize, r: usize) -> PResult<Node> {
        match <[Node; 1]>::try_from(items) {
            Ok([n]) if matches!(n.e.kind, ExprKind::Starred(_)) => {
                self.err_at("cannot use starred expression here", n.e.span)
            }
            Ok([n]) => Ok(n),
            Err(items) => self.seq(true, items, l, r),
        }
    }

    /// `{k: v, **m, ...}`; a `**m` item is `(None, m)`.
    pub fn dict(&self, items: Vec<(Option<Node>, Node)>, l: usize, r: usize) -> PResult<Node> {
        let d = items
            .iter()
            .map(|(k, v)| k.as_ref().map_or(0, |k| k.d).max(v.d))
            .max()
            .unwrap_or(0);
        let items = items
            .into_iter()
            .map(|(k, v)| (k.map(|k| k.e), v.e))
            .collect();
        self.node(ExprKind::Dict(items), self.span(l, r), d)
    }

    /// `name := value`.
    pub fn named(&self, n: Rc<str>, v: Node, l: usize, r: usize) -> PResult<Node> {
        let d = v.d;
        self.node(ExprKind::Named(n, bx(v)), self.span(l, r), d)
    }

    /// `{a, *b}`.
    pub fn set(&self, items: Vec<Node>, l: usize, r: usize) -> PResult<Node> {
        let d = depth(&items);
        let items = items.into_iter().map(|n| n.e).collect();
        self.node(ExprKind::Set(items), self.span(l, r), d)
    }

    pub fn setcomp(
        &self,
        elt: Node,
        clauses: Vec<CompClause>,
        l: usize,
        r: usize,
    ) -> PResult<Node> {
        let (comps, d) = self.comps(clauses)?;
        let d = d.max(elt.d);
        self.node(ExprKind::SetComp(bx(elt), comps), self.span(l, r), d)
    }

    /// `(e for t in it if c ...)`: a generator function over the first iterable, as
    /// CPython compiles it (the first iterable is evaluated in the enclosing scope).
    pub fn genexp(&self, elt: Node, clauses: Vec<CompClause>, l: usize, r: usize) -> PResult<Node> {
        let span = self.span(l, r);
        let (mut comps, d) = self.comps(clauses)?;
        let d = d.max(elt.d) + 1;
        let first = std::mem::replace(
            &mut comps[0].iter,
            Expr {
                kind: ExprKind::Name(".0".into()),
                span,
            },
        );
        let elt = elt.e;
        let mut body = vec![Stmt {
            span: elt.span,
            kind: StmtKind::Yield {
                value: Some(elt),
                from: false,
                store: YieldStore::Discard,
            },
        }];
        for c in comps.into_iter().rev() {
            for cond in c.ifs.into_iter().rev() {
                let kind = StmtKind::If {
                    cond,
                    body,
                    orelse: Vec::new(),
                };
                body = vec![Stmt { kind, span }];
            }
            let kind = StmtKind::For {
                target: c.target,
                iter: c.iter,
                body,
                orelse: Vec::new(),
            };
            body = vec![Stmt { kind, span }];
        }
        let param = Param {
            name: ".0".into(),
            default: None,
            span,
        };
        let def = FuncDef {
            name: "<genexpr>".into(),
            params: Params {
                params: vec![param],
                ..Params::default()
            },
            body,
            decorators: Vec::new(),
            is_lambda: false,
            span,
        };
        self.node(ExprKind::GenExp(Rc::new(def), Box::new(first)), span, d)
    }

    fn comps(&self, clauses: Vec<CompClause>) -> PResult<(Vec<Comprehension>, usize)> {
        let mut d = 0;
        let mut out = Vec::with_capacity(clauses.len());
        for c in clauses {
            d = d.max(c.target.d).max(c.iter.d).max(depth(&c.ifs));
            out.push(Comprehension {
                target: self.target(c.target, super::targets::Ctx::Assign)?,
                iter: c.iter.e,
                ifs: c.ifs.into_iter().map(|n| n.e).collect(),
            });
        }
        Ok((out, d))
    }

    pub fn listcomp(
        &self,
        elt: Node,
        clauses: Vec<CompClause>,
        l: usize,
        r: usize,
    ) -> PResult<Node> {
        let (comps, d) = self.comps(clauses)?;
        let d = d.max(elt.d);
        self.node(ExprKind::ListComp(bx(elt), comps), self.span(l, r), d)
    }

    pub fn dictcomp(
        &self,
        k: Node,
        v: Node,
        clauses: Vec<CompClause>,
        l: usize,
        r: usize,
    ) -> PResult<Node> {
        let (comps, d) = self.comps(clauses)?;
        let d = d.max(k.d).max(v.d);
        self.node(ExprKind::DictComp(bx(k), bx(v), comps), self.span(l, r), d)
    }

    pub fn call(&self, f: Node, args: Vec<ArgItem>, l: usize, r: usize) -> PResult<Node> {
        check_args(self, &args)?;
        let span = self.span(l, r);
        let d = f.d.max(args.iter().map(|a| a.d).max().unwrap_or(0));
        let args = args.into_iter().map(|a| a.arg).collect();
        self.node(ExprKind::Call(bx(f), args), span, d)
    }
}

/// Python's rules for call arguments: keywords after positionals, no repeated keyword.
fn check_args(cx: &Cx, args: &[ArgItem]) -> PResult<()> {
    let mut seen_kw = false;
    let mut seen_kwunpack = false;
    let mut names: Vec<&str> = Vec::new();
    for a in args {
        match &a.arg {
            Arg::Pos(_) if seen_kwunpack => {
                return cx.err_at(
                    "positional argument follows keyword argument unpacking",
                    a.span,
                )
            }
            Arg::Pos(_) if seen_kw => {
                return cx.err_at("positional argument follows keyword argument", a.span)
            }
            Arg::Star(_) if seen_kwunpack => {
                let msg = "iterable argument unpacking follows keyword argument unpacking";
                return cx.err_at(msg, a.span);
            }
            Arg::Kw(n, _) => {
                if names.contains(&&**n) {
                    return cx.err_at(format!("keyword argument repeated: {n}"), a.span);
                }
                names.push(n);
                seen_kw = true;
            }
            Arg::StarStar(_) => seen_kwunpack = true,
            _ => {}
        }
    }
    Ok(())
}
