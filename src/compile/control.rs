//! Control-flow and effect nodes of the IR: a branch (`IrOp::If`), a loop (`IrOp::Loop`),
//! reading one result of either (`IrOp::Out`) and `IrOp::Print`.
//!
//! Regions: each side of a branch and a loop's condition and body is a nested [`Graph`]
//! (a *region*). A region's inputs are `Input { kind: InputKind::Bound, slot }` nodes
//! bound, in slot order, to values the enclosing node passes (listed below per op); its
//! `outputs` are returned to the node. Regions capture nothing implicitly: every outer
//! value a region reads is an arg of the control node, so passes can treat a control
//! node as one opaque op of its args (and recurse into its regions separately).
//!
//! A control node computes several tensors (a tuple); its own `Node::dtype`/`shape` are
//! the placeholder `bool[]` and its results are read with `Out { index }` nodes, whose
//! type is the region output's type. A node with an effect (`Print`, or a control node
//! whose regions print) is never removed, merged or reordered across other effects.

use super::ir::Graph;

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
    /// The tensor arg `arg` formatted at run time as eager formats it: `str(t)`, or with
    /// conversion `conv` (`'r'`, `'s'`, `'a'`) and format `spec` as in an f-string hole.
    Tensor {
        arg: usize,
        conv: Option<char>,
        spec: Option<String>,
    },
}

/// `print(...)`: writes the concatenated pieces (including `sep`s and `end`) at run time.
#[derive(Debug, Clone, PartialEq)]
pub struct PrintSpec {
    pub pieces: Vec<PrintPiece>,
}

impl LoopSpec {
    /// The number of loop-invariant args given the node's arg count.
    pub fn invariants(&self, n_args: usize) -> usize {
        n_args.saturating_sub(self.carried)
    }
}

/// The nested regions of a control op, in execution order (for verify, dumps, passes).
pub fn regions(op: &super::ir::IrOp) -> Vec<(&'static str, &Graph)> {
    use super::ir::IrOp;
    match op {
        IrOp::If(b) => vec![("then", &b.then_g), ("else", &b.else_g)],
        IrOp::Loop(l) => {
            let mut v = Vec::with_capacity(2);
            if let Some(c) = &l.cond {
                v.push(("cond", c));
            }
            v.push(("body", &l.body));
            v
        }
        _ => Vec::new(),
    }
}

/// True when running `g` has an effect besides its outputs (it prints).
pub fn has_effect(g: &Graph) -> bool {
    g.nodes.iter().any(|n| n.op.has_effect())
}
