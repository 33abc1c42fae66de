//! Graph breaks: why a function cannot be replayed from its captured graph (it then
//! runs eagerly), with the source span of the operation that caused it.

use crate::source::Span;
use std::rc::Rc;

/// Why a function cannot be replayed from its graph (it then runs eagerly).
#[derive(Debug, Clone, PartialEq)]
pub enum BreakReason {
    /// A tensor value turned into a Python value (`.item()`, `bool(t)`, `.tolist()`).
    TensorToPython(&'static str),
    /// `print` inside the function (issue 6 captures it).
    Print,
    /// Random tensor creation (`rand`, `randn`, `dropout` in training, ...).
    Random(&'static str),
    /// An in-place tensor op (optimizer steps, `x += 1` on a tensor, `x[i] = v`).
    InPlace(&'static str),
    /// `backward()` / `grad` inside the function (issue 6).
    Autograd(&'static str),
    /// A tensor produced by an op with no IR op, or of unknown origin.
    UntracedTensor,
    /// A Python-level mutation visible outside the function.
    Mutation(&'static str),
    /// A call of a native function registered by the host.
    HostFunction(Rc<str>),
    /// A return value the executor cannot rebuild (an object created inside).
    Output(&'static str),
    /// The same tensor reached the function both as an argument and by a load.
    Aliasing,
    /// The captured graph failed verification (a compiler bug; the message says where).
    Internal(String),
    /// Control flow on a tensor value that cannot be captured (`break` under a tensor
    /// condition, a `return` in only one side of a branch, ...).
    ControlFlow(&'static str),
    /// The side of a branch not taken at capture failed when run speculatively.
    UntakenBranch(String),
}

impl BreakReason {
    pub fn describe(&self) -> String {
        match self {
            BreakReason::TensorToPython(w) => format!("tensor converted to a Python value ({w})"),
            BreakReason::Print => "print inside a compiled function".into(),
            BreakReason::Random(w) => format!("random tensor creation ({w})"),
            BreakReason::InPlace(w) => format!("in-place tensor op ({w})"),
            BreakReason::Autograd(w) => format!("autograd inside a compiled function ({w})"),
            BreakReason::UntracedTensor => "a tensor op with no IR op".into(),
            BreakReason::Mutation(w) => format!("Python-level mutation ({w})"),
            BreakReason::HostFunction(n) => format!("call of host function {n}"),
            BreakReason::Output(w) => format!("unsupported return value ({w})"),
            BreakReason::Aliasing => "a tensor is both an argument and a loaded value".into(),
            BreakReason::Internal(m) => m.clone(),
            BreakReason::ControlFlow(w) => format!("control flow on a tensor: {w}"),
            BreakReason::UntakenBranch(m) => format!("the branch not taken at capture fails: {m}"),
        }
    }
}

/// A graph break with the source span of the operation that caused it.
#[derive(Debug, Clone)]
pub struct GraphBreak {
    pub reason: BreakReason,
    pub span: Option<Span>,
}
