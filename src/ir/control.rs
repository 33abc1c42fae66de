//! The data of the IR's control-flow and effect nodes (`IrOp::If`, `IrOp::Loop`,
//! `IrOp::Print`); their semantics, and the functions over them, are in
//! `compile::control`.

use super::Graph;

/// `if cond: then else: orelse`. Args: `[cond, bound...]`; `cond` is a one-element
/// tensor read as eager's `bool(t)`; both sides take `bound` as inputs (slot k = arg k+1)
/// and return the same number of outputs with equal dtypes and shapes. Only the taken
/// side runs; the node's results are its outputs.
#[derive(Debug, Clone)]
pub struct Branch {
    pub then_g: Graph,
    pub else_g: Graph,
}

/// How many iterations a loop runs at most (a `while` loop also stops when its
/// condition is false).
#[derive(Debug, Clone, PartialEq)]
pub enum TripCount {
    /// Known at capture time.
    Const(usize),
    /// The size of dimension `dim` of the node's arg `arg` (`for row in x`,
    /// `for t in range(x.shape[0])`): symbolic shapes make it vary per call.
    Dim { arg: usize, dim: usize },
    /// No bound: only the condition stops it (`while`).
    Unbounded,
}

/// A loop. Args: `[carried_init..., invariant...]` (the first `carried` args are the
/// initial loop-carried values). Iteration `k` (from 0) has the index value
/// `start + k * step` (an `i64[]` tensor). Each iteration: stop when the trip count is
/// reached; else, when `cond` is present, evaluate it on `[index, carried..., invariant...]`
/// (one one-element output, read as `bool(t)`) and stop when false; else run `body` on
/// `[index, carried..., invariant...]`, whose `carried` outputs (same dtypes and shapes as
/// the initial values) are the next iteration's carried values. The node's results are
/// the final carried values, then one stacked tensor per *scan* output: the body
/// returns `carried + scan` values, and scan output `j` of every iteration is stacked
/// into a `[n, ...]` result, `n` the number of iterations run, row `pos` holding the
/// iteration whose index value is `start + pos * step`. With `reverse`, iteration `k`
/// has the index value `start + (n - 1 - k) * step` (the trip count must be bounded): a
/// backward loop walking its forward loop's iterations from the last, whose stacks are
/// in the forward loop's row order.
#[derive(Debug, Clone)]
pub struct LoopSpec {
    pub trip: TripCount,
    pub carried: usize,
    pub start: i64,
    pub step: i64,
    pub cond: Option<Graph>,
    pub body: Graph,
    pub scan: usize,
    pub reverse: bool,
}

/// One piece of a `Print` node's text.
#[derive(Debug, Clone, PartialEq)]
pub enum PrintPiece {
    /// Literal text (Python values were formatted at capture; guards keep them valid).
    Text(String),
    /// The tensor arg `arg` formatted at run time as eager formats it: `str(t)` (`spec`
    /// None: a `print` argument), or an f-string hole with conversion `conv` (`'r'`,
    /// `'s'`, `'a'`) and format `spec` (maybe empty: `f"{t}"` of a 0-d tensor is its value).
    /// `grad`: the autograd suffix eager's value had at capture (`grad_fn=<MeanBackward0>`,
    /// `requires_grad=True`): a compiled value carries no history, and the version's
    /// guards (grad mode, inputs' `requires_grad`) keep eager's the same at every call.
    Tensor {
        arg: usize,
        conv: Option<char>,
        spec: Option<String>,
        grad: Option<String>,
    },
}

/// `print(...)`: writes the concatenated pieces (including `sep`s and `end`) at run time.
#[derive(Debug, Clone, PartialEq)]
pub struct PrintSpec {
    pub pieces: Vec<PrintPiece>,
}
