//! The resolved tree the interpreter executes: names are frame slots, cells or globals.

use super::value::Value;
use crate::source::Span;
use crate::syntax::ast::{BinOp, BoolOp, CmpOp, UnaryOp};
use std::rc::Rc;

pub type Name = Rc<str>;

#[derive(Debug)]
pub struct Ex {
    pub kind: ExKind,
    pub span: Span,
    /// Attribute accesses (`Attr`, `CallMethod`): the receiver layout last seen here and
    /// where it holds `name` (see `AttrHint`).
    pub hint: super::attrs::AttrHint,
    /// Attribute accesses and method calls: the inline cache of class lookups, made on
    /// first use.
    pub site: std::cell::OnceCell<Box<super::method_cache::SiteCache>>,
}

impl Ex {
    /// The inline cache of this site (see `SiteCache`).
    #[inline]
    pub fn site(&self) -> &super::method_cache::SiteCache {
        self.site.get_or_init(Box::default)
    }

    pub fn new(kind: ExKind, span: Span) -> Ex {
        Ex {
            kind,
            span,
            hint: Default::default(),
            site: std::cell::OnceCell::new(),
        }
    }
}

/// Where a name lives once resolved.
#[derive(Debug, Clone)]
#[repr(u8)]
pub enum Place {
    /// A frame slot holding the value.
    Local(u32, Name),
    /// A frame slot holding a cell (captured or free variable).
    Cell(u32, Name),
    /// A module global slot, with the builtin to fall back to when unbound.
    Global(u32, Name),
    /// A class body namespace entry; loads fall back to the inner place.
    ClassNs(Name, Box<Place>),
}

/// `repr(u8)`: an explicit tag byte makes the interpreter's dispatch a byte load and a
/// jump (a niche-encoded tag costs several instructions per `match`).
#[derive(Debug)]
#[repr(u8)]
pub enum ExKind {
    Const(Value),
    Load(Place),
    Attr(Box<Ex>, Name),
    Subscript(Box<Ex>, Box<Ex>),
    Slice(Option<Box<Ex>>, Option<Box<Ex>>, Option<Box<Ex>>),
    Call(Box<Ex>, Vec<CArg>),
    /// `recv.name(args)` without building a bound method.
    CallMethod(Box<Ex>, Name, Vec<CArg>),
    /// Zero-argument `super()`: the slot of the first parameter.
    Super(u32),
    Unary(UnaryOp, Box<Ex>),
    Binary(BinOp, Box<Ex>, Box<Ex>),
    BoolOp(BoolOp, Box<Ex>, Box<Ex>),
    Compare(Box<Ex>, Vec<(CmpOp, Ex)>),
    IfExp(Box<Ex>, Box<Ex>, Box<Ex>),
    List(Vec<Ex>),
    Tuple(Vec<Ex>),
    /// `*x` inside a list/tuple display.
    Starred(Box<Ex>),
    Dict(Vec<(Ex, Ex)>),
    /// A dict display with `**m` items (a `None` key): `{**a, 'k': 1}`.
    DictUnpack(Vec<(Option<Ex>, Ex)>),
    /// `{a, *b}` (a set comprehension is a `Set` of one starred `ListComp`).
    Set(Vec<Ex>),
    /// `(e for x in it)`: the generator function and the first iterable.
    GenExp(Rc<FuncProto>, Box<Ex>),
    FString(Vec<FPart>),
    MakeFunc(Rc<FuncProto>),
    /// `name := value`.
    Named(Place, Box<Ex>),
    ListComp(Box<Ex>, Vec<Gen>, Vec<u32>),
    DictComp(Box<Ex>, Box<Ex>, Vec<Gen>, Vec<u32>),
}

#[derive(Debug)]
pub enum FPart {
    Lit(Rc<str>),
    Expr {
        expr: Ex,
        conv: Option<char>,
        spec: Vec<FPart>,
    },
}

#[derive(Debug)]
pub struct Gen {
    pub target: Target,
    pub iter: Ex,
    pub ifs: Vec<Ex>,
}

#[derive(Debug)]
pub enum CArg {
    Pos(Ex),
    Star(Ex),
    Kw(Name, Ex),
    StarStar(Ex),
}

#[derive(Debug)]
pub enum Target {
    Place(Place),
    /// `obj.name`, with the store site's layout hint (see `AttrHint`).
    Attr(Ex, Name, super::attrs::AttrHint),
    Subscript(Ex, Ex),
    /// `a, *b, c`: the targets and the position of the starred one.
    Unpack(Vec<Target>, Option<usize>, Span),
}

#[derive(Debug)]
pub struct St {
    pub kind: StKind,
    pub span: Span,
}

/// `repr(u8)`: an explicit tag byte makes the interpreter's dispatch a byte load and a
/// jump (a niche-encoded tag costs several instructions per `match`).
#[derive(Debug)]
#[repr(u8)]
pub enum StKind {
    Expr(Ex),
    Assign(Vec<Target>, Ex),
    /// Fast path: `local = value`.
    AssignLocal(u32, Ex),
    AugAssign(Target, BinOp, Ex),
    /// Fast path: `local op= value`.
    AugLocal(u32, Name, BinOp, Ex),
    If(Ex, Vec<St>, Vec<St>),
    While(Ex, Vec<St>, Vec<St>),
    For(Target, Ex, Vec<St>, Vec<St>),
    Break,
    Continue,
    Pass,
    Return(Option<Ex>),
    /// `def`: decorators (top to bottom), the function, where to store it.
    FuncDef(Vec<Ex>, Ex, Target),
    ClassDef(Rc<ClassProto>),
    Import(Vec<(Vec<Name>, Target, bool)>),
    ImportFrom(Vec<Name>, Vec<(Name, Target)>),
    /// `from a.b import *` (module level only).
    ImportStar(Vec<Name>),
    Assert(Ex, Option<Ex>),
    Raise(Option<Ex>, Option<Ex>),
    Try(Box<TryBlock>),
    With(Vec<(Ex, Option<Target>)>, Vec<St>),
    Del(Vec<Target>),
    /// `yield x` / `yield from it` (the bool) in a generator, and where the sent value goes.
    Yield(Option<Ex>, bool, YieldTarget),
}

/// Where the value sent into a `yield` statement goes.
#[derive(Debug)]
pub enum YieldTarget {
    Discard,
    Assign(Vec<Target>),
    Aug(Box<Target>, BinOp),
}

#[derive(Debug)]
pub struct TryBlock {
    pub body: Vec<St>,
    pub handlers: Vec<Handler>,
    pub orelse: Vec<St>,
    pub finalbody: Vec<St>,
}

#[derive(Debug)]
pub struct Handler {
    pub typ: Option<Ex>,
    pub name: Option<Target>,
    pub body: Vec<St>,
    pub span: Span,
}

#[derive(Debug)]
pub struct ClassProto {
    pub name: Name,
    pub bases: Vec<Ex>,
    pub body: Vec<St>,
    pub decorators: Vec<Ex>,
    pub store: Target,
}

/// A resolved function body and its calling convention.
#[derive(Debug)]
pub struct FuncProto {
    pub name: Name,
    /// Positional-or-keyword parameter names (slots `0..n`).
    pub params: Vec<Name>,
    pub vararg: Option<u32>,
    pub kwonly: Vec<(Name, u32)>,
    pub kwarg: Option<u32>,
    pub n_slots: u32,
    /// Parameter slots that must be wrapped into cells at frame start.
    pub cell_params: Vec<u32>,
    /// Local slots that start as fresh empty cells.
    pub cell_locals: Vec<u32>,
    /// Where the captured cells (or values captured as is) go, one per closure entry.
    pub free_slots: Vec<u32>,
    /// The captured names, one per closure entry.
    pub frees: Vec<Name>,
    /// Enclosing-frame slots captured at definition time: cells, or values the
    /// enclosing function never rebinds (see `ScopeTable::frozen_free`).
    pub capture_from: Vec<u32>,
    pub defaults: Vec<Ex>,
    pub kwdefaults: Vec<Option<Ex>>,
    pub body: Vec<St>,
    pub is_lambda: bool,
    /// True when the body contains `yield`: a call makes a generator (never `simple`).
    pub is_gen: bool,
    /// True when a positional call with exactly `params.len()` args needs no extra work.
    pub simple: bool,
    /// True when the frame needs cells set up at entry (`cell_params`, `cell_locals` or
    /// `free_slots` non-empty).
    pub has_cells: bool,
    pub span: Span,
}

/// A resolved module chunk (a file, or one `eval` input).
#[derive(Debug)]
pub struct Code {
    pub body: Vec<St>,
    pub n_slots: u32,
    pub cell_locals: Vec<u32>,
}
