//! Annotated assignments (`x: int = 0`) and the `__annotations__` of class bodies and
//! modules.

use super::Resolver;
use crate::error::Result;
use crate::interp::tree::*;
use crate::interp::value::Value;
use crate::source::Span;
use crate::syntax::ast::{Expr, ExprKind, Stmt, StmtKind};

impl Resolver<'_> {
    /// `target: annotation [= value]`: the assignment, then (outside functions, for a
    /// name) `__annotations__[name] = annotation`, as CPython.
    pub(super) fn ann_assign(
        &mut self,
        target: &Expr,
        annotation: &Expr,
        value: Option<&Expr>,
        span: Span,
    ) -> Result<Vec<St>> {
        let mut out = Vec::new();
        if let Some(v) = value {
            let kind = StKind::Assign(vec![self.target(target)?], self.ex(v)?);
            out.push(St { kind, span });
        }
        if let (ExprKind::Name(n), false) = (&target.kind, self.in_function()) {
            let ns = Expr {
                kind: ExprKind::Name("__annotations__".into()),
                span: annotation.span,
            };
            let key = Ex::new(ExKind::Const(Value::Str(n.clone())), target.span);
            let store = Target::Subscript(self.ex(&ns)?, key);
            out.push(St {
                kind: StKind::Assign(vec![store], self.ex(annotation)?),
                span,
            });
        }
        Ok(out)
    }

    /// `__annotations__ = {}` for a class body or module with annotated names.
    pub(super) fn annotations_init(&mut self, body: &[Stmt], span: Span) -> Result<Option<St>> {
        if !has_annotations(body) {
            return Ok(None);
        }
        let ns = Expr {
            kind: ExprKind::Name("__annotations__".into()),
            span,
        };
        let empty = Ex::new(ExKind::Dict(Vec::new()), span);
        let kind = StKind::Assign(vec![self.target(&ns)?], empty);
        Ok(Some(St { kind, span }))
    }
}

/// True when `body` (outside nested definitions) annotates a name.
fn has_annotations(body: &[Stmt]) -> bool {
    body.iter().any(|s| match &s.kind {
        StmtKind::AnnAssign { target, .. } => matches!(target.kind, ExprKind::Name(_)),
        StmtKind::If { body, orelse, .. }
        | StmtKind::While { body, orelse, .. }
        | StmtKind::For { body, orelse, .. } => has_annotations(body) || has_annotations(orelse),
        StmtKind::With { body, .. } => has_annotations(body),
        StmtKind::Try {
            body,
            handlers,
            orelse,
            finalbody,
        } => {
            has_annotations(body)
                || handlers.iter().any(|h| has_annotations(&h.body))
                || has_annotations(orelse)
                || has_annotations(finalbody)
        }
        _ => false,
    })
}
