//! Source text to AST: the logos lexer, the layout pass, and the lalrpop parser.
//!
//! Nesting limits (see [`limits`]): expressions nest at most 200 deep, blocks at most 100;
//! deeper input is a `SyntaxError` "too deeply nested (limit N)", so no input can overflow
//! the stack while parsing or when the AST is walked or dropped.

mod actions;
pub mod ast;
mod fstring;
pub mod layout;
pub mod limits;
mod parse;
mod stmts;
mod strings;
mod targets;
pub mod token;
mod validate;

use crate::error::Error;
use crate::source::FileId;

/// Parses a whole file. On failure returns every syntax error found: lexing and layout
/// errors stop at the first one; parse errors recover at the next top-level statement
/// (at most 50 are reported), and misplaced `break`/`continue`/`return` are all listed.
pub fn parse_module(src: &str, file: FileId) -> Result<ast::Module, Vec<Error>> {
    parse::parse_module(src, file)
}

/// For the REPL: true when `src` is an incomplete input that more lines could finish: an
/// open bracket, an unterminated triple-quoted string, a trailing `\`, a block opener
/// without its body (`if x:`), or a last line inside an indented block. As in Python's
/// REPL, an empty last line (`src` ending in `"\n\n"`) closes open blocks.
///
/// ```
/// assert!(kiln::is_incomplete("def f(x):\n"));
/// assert!(kiln::is_incomplete("xs = [1,\n"));
/// assert!(!kiln::is_incomplete("x = 1\n"));
/// ```
pub fn is_incomplete(src: &str) -> bool {
    parse::is_incomplete(src)
}
