//! `t.grad_fn` as an object, as PyTorch's autograd nodes: it prints as
//! `<MulBackward0 object at 0x...>`, `type(g).__name__` and `g.name()` give the name,
//! `g.next_functions` the `(node, 0)` pairs of the node's inputs (an `AccumulateGrad`
//! node for a leaf, whose `.variable` is the leaf; `None` for an input without gradient).

use crate::autograd::node::{Edge, Node};
use crate::interp::builtins::new_class;
use crate::interp::value::{Class, ClassKind, TypeTag, Value};
use crate::interp::{type_err, R};
use crate::tensor::Tensor;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// An autograd node as a script sees it.
pub enum GradFn {
    /// A recorded op's node.
    Node(Rc<Node>),
    /// The node accumulating into a leaf's `.grad`.
    Accumulate(Tensor),
}

impl std::fmt::Debug for GradFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<{}>", self.class_name())
    }
}

/// The methods of a grad_fn value.
pub const GRAD_FN_METHODS: &[&str] = &["name"];

impl GradFn {
    /// The class name (`MulBackward0`, `AccumulateGrad`).
    pub fn class_name(&self) -> String {
        match self {
            GradFn::Node(n) => n.name().to_string(),
            GradFn::Accumulate(_) => "AccumulateGrad".into(),
        }
    }

    /// The identity `is` and `id()` see: one node is one object, as PyTorch's (the
    /// accumulator of a leaf is one per leaf, distinct from the leaf itself).
    pub fn ptr_id(&self) -> usize {
        match self {
            GradFn::Node(n) => Rc::as_ptr(n) as usize,
            GradFn::Accumulate(t) => t.id() + 1,
        }
    }

    /// `<MulBackward0 object at 0x...>`.
    pub fn repr(&self) -> String {
        format!("<{} object at {:#x}>", self.class_name(), self.ptr_id())
    }

    /// `g.name()`: PyTorch's `Node.name()` (the accumulator's C++ name).
    fn name(&self) -> String {
        match self {
            GradFn::Node(n) => n.name().to_string(),
            GradFn::Accumulate(_) => "torch::autograd::AccumulateGrad".into(),
        }
    }

    /// `g.next_functions`: one `(node, 0)` pair per input.
    fn next_functions(&self) -> Value {
        let GradFn::Node(n) = self else {
            return Value::tuple(Vec::new());
        };
        let pair = |e: &Edge| {
            let node = match e {
                Edge::None => Value::None,
                Edge::Leaf(t) => Value::GradFn(Rc::new(GradFn::Accumulate(t.clone()))),
                Edge::Node(n) => Value::GradFn(Rc::new(GradFn::Node(n.clone()))),
            };
            Value::tuple(vec![node, Value::Int(0)])
        };
        Value::tuple(n.edges.iter().map(pair).collect())
    }
}

/// `t.grad_fn`.
pub fn of_tensor(t: &Tensor) -> Value {
    match t.grad_fn() {
        Some(n) => Value::GradFn(Rc::new(GradFn::Node(n))),
        None => Value::None,
    }
}

/// Data attributes (`next_functions`, `variable`, `metadata`).
pub fn attr(g: &GradFn, name: &str) -> Option<Value> {
    match (g, name) {
        (_, "next_functions") => Some(g.next_functions()),
        (GradFn::Accumulate(t), "variable") => Some(Value::Tensor(t.clone())),
        _ => None,
    }
}

/// `g.name()`.
pub fn method(g: &GradFn, name: &str, args: &[Value]) -> R<Value> {
    match name {
        "name" if args.is_empty() => Ok(Value::str(&g.name())),
        "name" => Err(type_err(format!(
            "name() takes no arguments ({} given)",
            args.len()
        ))),
        _ => Err(type_err(format!(
            "'{}' object has no attribute '{name}'",
            g.class_name()
        ))),
    }
}

thread_local! {
    /// One class object per node name, made when first asked for.
    static CLASSES: RefCell<HashMap<String, Rc<Class>>> = RefCell::new(HashMap::new());
}

/// `type(g)`: a class named as the node (`MulBackward0`).
pub fn class_of(g: &GradFn) -> Rc<Class> {
    let name = g.class_name();
    CLASSES.with(|c| {
        c.borrow_mut()
            .entry(name)
            .or_insert_with_key(|n| new_class(n, None, ClassKind::Builtin(TypeTag::GradFn)))
            .clone()
    })
}
