//! Source text to AST: the logos lexer, the layout pass, and the lalrpop parser.

pub mod ast;
