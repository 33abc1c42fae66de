//! Checks after parsing: `break`/`continue` outside a loop, `return` outside a function,
//! `nonlocal` at module level.

use super::ast::{Stmt, StmtKind};
use crate::error::Error;

#[derive(Clone, Copy)]
struct Scope {
    in_loop: bool,
    in_func: bool,
    at_module: bool,
}

/// Appends an error for every misplaced `break`, `continue`, `return` and `nonlocal`.
pub fn validate(body: &[Stmt], errors: &mut Vec<Error>) {
    let scope = Scope {
        in_loop: false,
        in_func: false,
        at_module: true,
    };
    block(body, scope, errors);
}

fn block(body: &[Stmt], scope: Scope, errors: &mut Vec<Error>) {
    for s in body {
        stmt(s, scope, errors);
    }
}

fn stmt(s: &Stmt, scope: Scope, errors: &mut Vec<Error>) {
    let looped = Scope {
        in_loop: true,
        ..scope
    };
    match &s.kind {
        StmtKind::Break if !scope.in_loop => {
            errors.push(Error::syntax("'break' outside loop", s.span));
        }
        StmtKind::Continue if !scope.in_loop => {
            errors.push(Error::syntax("'continue' not properly in loop", s.span));
        }
        StmtKind::Return(_) if !scope.in_func => {
            errors.push(Error::syntax("'return' outside function", s.span));
        }
        StmtKind::Yield { .. } if !scope.in_func => {
            errors.push(Error::syntax("'yield' outside function", s.span));
        }
        StmtKind::Nonlocal(_) if scope.at_module => {
            let msg = "nonlocal declaration not allowed at module level";
            errors.push(Error::syntax(msg, s.span));
        }
        StmtKind::If { body, orelse, .. } => {
            block(body, scope, errors);
            block(orelse, scope, errors);
        }
        StmtKind::While { body, orelse, .. } | StmtKind::For { body, orelse, .. } => {
            block(body, looped, errors);
            block(orelse, scope, errors);
        }
        StmtKind::Try {
            body,
            handlers,
            orelse,
            finalbody,
        } => {
            block(body, scope, errors);
            for h in handlers {
                block(&h.body, scope, errors);
            }
            block(orelse, scope, errors);
            block(finalbody, scope, errors);
        }
        StmtKind::With { body, .. } => block(body, scope, errors),
        StmtKind::FuncDef(f) => {
            let inner = Scope {
                in_loop: false,
                in_func: true,
                at_module: false,
            };
            block(&f.body, inner, errors);
        }
        StmtKind::ClassDef(c) => {
            let inner = Scope {
                in_loop: false,
                in_func: false,
                at_module: false,
            };
            block(&c.body, inner, errors);
        }
        _ => {}
    }
}
