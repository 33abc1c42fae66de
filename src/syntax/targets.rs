//! Validation of assignment, `del`, `for` and augmented-assignment targets.

use super::actions::{Cx, Node, PResult};
use super::ast::{Expr, ExprKind};

/// Where a target appears (decides the error wording and what is allowed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ctx {
    /// `a = ...`, `for a in`, `with ... as a`, comprehension `for a in`.
    Assign,
    Del,
}

/// How an expression is named in "cannot assign to ..." messages.
fn describe(kind: &ExprKind) -> &'static str {
    match kind {
        ExprKind::Call(..) => "function call",
        ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Str(_) => "literal",
        ExprKind::Bool(true) => "True",
        ExprKind::Bool(false) => "False",
        ExprKind::None => "None",
        ExprKind::Ellipsis => "ellipsis",
        ExprKind::FString(_) => "f-string expression",
        ExprKind::Compare(..) => "comparison",
        ExprKind::IfExp { .. } => "conditional expression",
        ExprKind::Lambda(_) => "lambda",
        ExprKind::Named(..) => "named expression",
        ExprKind::ListComp(..) => "list comprehension",
        ExprKind::DictComp(..) => "dict comprehension",
        ExprKind::Dict(_) => "dict literal",
        ExprKind::Set(_) => "set display",
        ExprKind::SetComp(..) => "set comprehension",
        ExprKind::GenExp(..) => "generator expression",
        ExprKind::Slice(..) => "slice",
        ExprKind::Tuple(_) => "tuple",
        ExprKind::List(_) => "list",
        ExprKind::Starred(_) => "starred",
        ExprKind::Name(_) => "name",
        ExprKind::Attr(..) => "attribute",
        ExprKind::Subscript(..) => "subscript",
        ExprKind::Unary(..) | ExprKind::Binary(..) | ExprKind::BoolOp(..) => "expression",
    }
}

impl Cx<'_> {
    /// Checks that `n` can be assigned to (or deleted, for `Ctx::Del`).
    pub fn target(&self, n: Node, ctx: Ctx) -> PResult<Expr> {
        self.check_target(&n.e, ctx)?;
        Ok(n.e)
    }

    fn check_target(&self, e: &Expr, ctx: Ctx) -> PResult<()> {
        match &e.kind {
            ExprKind::Name(_) | ExprKind::Attr(..) | ExprKind::Subscript(..) => Ok(()),
            ExprKind::Tuple(items) | ExprKind::List(items) => self.check_items(items, ctx),
            ExprKind::Starred(_) if ctx == Ctx::Del => self.err_at("cannot delete starred", e.span),
            ExprKind::Starred(_) => self.err_at(
                "starred assignment target must be in a list or tuple",
                e.span,
            ),
            other => {
                let verb = if ctx == Ctx::Del {
                    "delete"
                } else {
                    "assign to"
                };
                self.err_at(format!("cannot {verb} {}", describe(other)), e.span)
            }
        }
    }

    fn check_items(&self, items: &[Expr], ctx: Ctx) -> PResult<()> {
        let mut starred = 0;
        for item in items {
            match &item.kind {
                ExprKind::Starred(inner) if ctx != Ctx::Del => {
                    starred += 1;
                    if starred > 1 {
                        return self
                            .err_at("multiple starred expressions in assignment", item.span);
                    }
                    self.check_target(inner, ctx)?;
                }
                _ => self.check_target(item, ctx)?,
            }
        }
        Ok(())
    }

    /// The target of `x op= value`: a name, attribute or subscript.
    pub fn aug_target(&self, n: Node) -> PResult<Expr> {
        match &n.e.kind {
            ExprKind::Name(_) | ExprKind::Attr(..) | ExprKind::Subscript(..) => Ok(n.e),
            other => {
                let what = describe(other);
                let msg = format!("'{what}' is an illegal expression for augmented assignment");
                self.err_at(msg, n.e.span)
            }
        }
    }
}
