//! Nesting limits enforced while parsing, so that no input can overflow the stack later.
//!
//! - Expression nesting depth (`MAX_EXPR_DEPTH` = 200): every AST node is one level deeper
//!   than its deepest child, so brackets, unary chains (`- - x`), binary-operator chains
//!   (`1+1+1+...` builds a left-leaning tree), `**` chains, lambda/if-else chains and
//!   attribute/call chains (`a.b.c(...)`) all count. Bracket depth is also limited to 200
//!   by the layout pass (parentheses add no AST node), as are runs of prefix operators.
//! - Block nesting depth (`MAX_BLOCK_DEPTH` = 100): indentation levels.
//! - f-strings nested inside f-string expressions: `MAX_FSTRING_DEPTH` = 8.
//!
//! Past a limit the parser reports a `SyntaxError` "too deeply nested (limit N)" at the span
//! where it happened. An interpreter walking the AST recursively therefore needs at most
//! about `MAX_BLOCK_DEPTH + MAX_EXPR_DEPTH` nested calls per parsed unit.

/// The deepest expression tree the parser builds.
pub const MAX_EXPR_DEPTH: usize = 200;
/// The deepest block nesting (indentation levels) the parser accepts.
pub const MAX_BLOCK_DEPTH: usize = 100;
/// How deeply f-strings may nest inside f-string replacement fields.
pub const MAX_FSTRING_DEPTH: u32 = 8;

/// The message of a nesting-limit error.
pub fn too_deep(limit: usize) -> String {
    format!("too deeply nested (limit {limit})")
}
