//! The abstract syntax tree produced by the parser: every node carries a byte span.

use crate::source::Span;
use std::rc::Rc;

/// An identifier. Shared so that the resolver and interpreter can keep names cheaply.
pub type Name = Rc<str>;

/// A parsed module (a file, a `-c` string, or one REPL input).
#[derive(Debug, Clone)]
pub struct Module {
    pub body: Vec<Stmt>,
    pub span: Span,
}

#[derive(Debug, Clone)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Debug, Clone)]
pub enum StmtKind {
    /// An expression evaluated for its effect (or echoed by the REPL).
    Expr(Expr),
    /// `a = b = value`: `targets` holds `[a, b]`, assigned left to right.
    /// Targets are `Name`, `Attr`, `Subscript`, `Tuple`/`List` of targets, or `Starred`
    /// inside a tuple/list target (`a, *rest = xs`).
    Assign {
        targets: Vec<Expr>,
        value: Expr,
    },
    /// `target: annotation = value` (the value optional). In a class body or at module
    /// level a name target's annotation is evaluated into `__annotations__`; in a function
    /// it is not evaluated (as CPython).
    AnnAssign {
        target: Expr,
        annotation: Expr,
        value: Option<Expr>,
    },
    /// `target op= value`; the target is a `Name`, `Attr` or `Subscript`.
    AugAssign {
        target: Expr,
        op: BinOp,
        value: Expr,
    },
    /// `if`/`elif`/`else`: an `elif` is a nested `If` as the only statement of `orelse`.
    If {
        cond: Expr,
        body: Vec<Stmt>,
        orelse: Vec<Stmt>,
    },
    While {
        cond: Expr,
        body: Vec<Stmt>,
        orelse: Vec<Stmt>,
    },
    For {
        target: Expr,
        iter: Expr,
        body: Vec<Stmt>,
        orelse: Vec<Stmt>,
    },
    Break,
    Continue,
    Pass,
    Return(Option<Expr>),
    FuncDef(Rc<FuncDef>),
    ClassDef(Rc<ClassDef>),
    Global(Vec<Name>),
    Nonlocal(Vec<Name>),
    /// `import a.b as c, d`: each item is a dotted path and an optional alias.
    Import(Vec<ImportItem>),
    /// `from a.b import x, y as z`.
    ImportFrom {
        module: Vec<Name>,
        names: Vec<(Name, Option<Name>)>,
    },
    /// `from a.b import *`: every public name (or `__all__`) of the module.
    ImportStar(Vec<Name>),
    Assert {
        test: Expr,
        msg: Option<Expr>,
    },
    /// `raise` (re-raise) or `raise E(...)`; `raise E from C` keeps the cause.
    Raise {
        exc: Option<Expr>,
        cause: Option<Expr>,
    },
    Try {
        body: Vec<Stmt>,
        handlers: Vec<ExceptHandler>,
        orelse: Vec<Stmt>,
        finalbody: Vec<Stmt>,
    },
    /// `with a as x, b:`; each item is a context expression and an optional target.
    With {
        items: Vec<(Expr, Option<Expr>)>,
        body: Vec<Stmt>,
    },
    /// `del a, b[k], c.attr`.
    Del(Vec<Expr>),
    /// `yield x`, `yield from it`, `t = yield x`, `t op= yield x`: `yield` is supported in
    /// statement positions only (the generator's resumable executor suspends between
    /// statements).
    Yield {
        value: Option<Expr>,
        from: bool,
        store: YieldStore,
    },
}

/// Where the value sent into a suspended `yield` goes.
#[derive(Debug, Clone)]
pub enum YieldStore {
    Discard,
    /// `a = b = yield x`: assignment targets, left to right.
    Assign(Vec<Expr>),
    /// `t op= yield x`.
    Aug(Expr, BinOp),
}

#[derive(Debug, Clone)]
pub struct ImportItem {
    pub path: Vec<Name>,
    pub alias: Option<Name>,
    pub span: Span,
}

#[derive(Debug, Clone)]
pub struct ExceptHandler {
    /// `None` for a bare `except:`; may be a tuple expression `except (A, B) as e:`.
    pub typ: Option<Expr>,
    pub name: Option<Name>,
    pub body: Vec<Stmt>,
    pub span: Span,
}

/// A `def` or a `lambda` (whose body is a single `Return` statement).
#[derive(Debug, Clone)]
pub struct FuncDef {
    pub name: Name,
    pub params: Params,
    pub body: Vec<Stmt>,
    /// Applied bottom-up, as in Python: `@a @b def f` is `a(b(f))`; listed top to bottom.
    pub decorators: Vec<Expr>,
    pub is_lambda: bool,
    /// The span of the whole definition (for lambdas: the whole lambda expression).
    pub span: Span,
}

#[derive(Debug, Clone, Default)]
pub struct Params {
    /// Positional-or-keyword parameters, in order; defaults only on a suffix of them.
    pub params: Vec<Param>,
    /// `*args`.
    pub vararg: Option<Param>,
    /// Keyword-only parameters (after `*` or `*args`); a default is optional on each.
    pub kwonly: Vec<Param>,
    /// `**kwargs`.
    pub kwarg: Option<Param>,
}

#[derive(Debug, Clone)]
pub struct Param {
    pub name: Name,
    pub default: Option<Expr>,
    pub span: Span,
}

#[derive(Debug, Clone)]
pub struct ClassDef {
    pub name: Name,
    /// The base class expressions (none means `object`).
    pub bases: Vec<Expr>,
    pub body: Vec<Stmt>,
    pub decorators: Vec<Expr>,
    pub span: Span,
}

#[derive(Debug, Clone)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Debug, Clone)]
pub enum ExprKind {
    Int(i64),
    Float(f64),
    Str(Rc<str>),
    Bool(bool),
    None,
    /// `...`
    Ellipsis,
    /// `f"a{x!r:>5}b"`: literal text and interpolated expressions, in order.
    FString(Vec<FPart>),
    Name(Name),
    List(Vec<Expr>),
    Tuple(Vec<Expr>),
    /// `{k: v, **m}`: a `None` key is a `**m` unpacking (as in CPython's `ast.Dict`).
    Dict(Vec<(Option<Expr>, Expr)>),
    /// `{a, *b}`.
    Set(Vec<Expr>),
    /// `*x` in a call's arguments is `Arg::Star`; this is `*x` in a list/tuple display or
    /// an assignment target.
    Starred(Box<Expr>),
    Attr(Box<Expr>, Name),
    /// `a[i]`; `a[i, j]` has a `Tuple` index; slices appear as `Slice` inside it.
    Subscript(Box<Expr>, Box<Expr>),
    /// `lo:hi:step` inside a subscript.
    Slice(Option<Box<Expr>>, Option<Box<Expr>>, Option<Box<Expr>>),
    Call(Box<Expr>, Vec<Arg>),
    Unary(UnaryOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `a and b`, `a or b` (returning an operand, short-circuiting).
    BoolOp(BoolOp, Box<Expr>, Box<Expr>),
    /// `a < b <= c`: the first operand, then each operator with its right operand.
    Compare(Box<Expr>, Vec<(CmpOp, Expr)>),
    /// `then if cond else orelse`.
    IfExp {
        cond: Box<Expr>,
        then: Box<Expr>,
        orelse: Box<Expr>,
    },
    Lambda(Rc<FuncDef>),
    /// `name := value` (binds in the enclosing function, not in a comprehension).
    Named(Name, Box<Expr>),
    ListComp(Box<Expr>, Vec<Comprehension>),
    DictComp(Box<Expr>, Box<Expr>, Vec<Comprehension>),
    SetComp(Box<Expr>, Vec<Comprehension>),
    /// `(e for x in xs if c)`: the generator function the parser builds (one parameter,
    /// `.0`, the iterator; body `for x in .0: if c: yield e`) and the first iterable,
    /// evaluated eagerly in the enclosing scope as in CPython.
    GenExp(Rc<FuncDef>, Box<Expr>),
}

#[derive(Debug, Clone)]
pub enum FPart {
    Lit(Rc<str>),
    Expr {
        expr: Box<Expr>,
        /// `!r`, `!s` or `!a`.
        conv: Option<char>,
        /// The format spec after `:`, itself possibly containing `{expr}` parts.
        spec: Vec<FPart>,
    },
}

#[derive(Debug, Clone)]
pub struct Comprehension {
    pub target: Expr,
    pub iter: Expr,
    pub ifs: Vec<Expr>,
}

#[derive(Debug, Clone)]
pub enum Arg {
    Pos(Expr),
    /// `*xs`
    Star(Expr),
    /// `name=value`
    Kw(Name, Expr),
    /// `**kw`
    StarStar(Expr),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    Neg,
    Pos,
    Invert,
    Not,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
    MatMul,
    BitAnd,
    BitOr,
    BitXor,
    LShift,
    RShift,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoolOp {
    And,
    Or,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    NotEq,
    Lt,
    LtE,
    Gt,
    GtE,
    In,
    NotIn,
    Is,
    IsNot,
}

impl BinOp {
    /// The operator as written in source (`+`, `//`, `@`, ...).
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::FloorDiv => "//",
            BinOp::Mod => "%",
            BinOp::Pow => "**",
            BinOp::MatMul => "@",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::LShift => "<<",
            BinOp::RShift => ">>",
        }
    }
}

impl CmpOp {
    /// The operator as written in source (`==`, `not in`, ...).
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::NotEq => "!=",
            CmpOp::Lt => "<",
            CmpOp::LtE => "<=",
            CmpOp::Gt => ">",
            CmpOp::GtE => ">=",
            CmpOp::In => "in",
            CmpOp::NotIn => "not in",
            CmpOp::Is => "is",
            CmpOp::IsNot => "is not",
        }
    }
}
