//! Fusion: maximal trees of f32 elementwise nodes of one shape (unary, binary,
//! binary-with-scalar, clamp) become one loop-nest [`Kernel`]. A node joins its user's
//! group when it has that single use and the same shape; anything else it reads
//! (inputs, constants, broadcast operands, non-fusable results) is a kernel input.
//!
//! A sum, mean, max or min over trailing dims (`(x * y).sum(-1)`, `(x - m).exp().sum(-1)`,
//! `(x * x).mean()`) roots a group too: its elementwise producer tree runs over the
//! reduction's input shape and folds into the kernel's trailing reduction, so the
//! producer's full-size result is never stored.

use crate::compile::ir::{Graph, IrOp, Node, NodeId};
use crate::compile::kernel::{self as k, Access, Kernel, Op, Output, ValueId};
use crate::ops::{BinaryOp, UnaryOp};
use crate::tensor::dtype::{DType, Scalar};
use std::collections::HashMap;

/// One fused group: the kernel computing node `root` from the `inputs` nodes.
#[derive(Debug, Clone)]
pub struct Group {
    pub root: NodeId,
    /// The loop nest's shape (the root's shape, or a reduction root's input shape).
    pub shape: Vec<usize>,
    /// A mean root: the sum the kernel computes is divided by the reduced count.
    pub is_mean: bool,
    /// Members in graph order (the root last).
    pub members: Vec<NodeId>,
    pub inputs: Vec<NodeId>,
    pub kernel: Kernel,
}

fn unary(op: UnaryOp) -> Option<k::UnaryOp> {
    Some(match op {
        UnaryOp::Neg => k::UnaryOp::Neg,
        UnaryOp::Abs => k::UnaryOp::Abs,
        UnaryOp::Exp => k::UnaryOp::Exp,
        UnaryOp::Log => k::UnaryOp::Log,
        UnaryOp::Sqrt => k::UnaryOp::Sqrt,
        UnaryOp::Rsqrt => k::UnaryOp::Rsqrt,
        UnaryOp::Tanh => k::UnaryOp::Tanh,
        UnaryOp::Sigmoid => k::UnaryOp::Sigmoid,
        UnaryOp::Relu => k::UnaryOp::Relu,
        UnaryOp::Erf => k::UnaryOp::Erf,
        UnaryOp::Sin => k::UnaryOp::Sin,
        UnaryOp::Cos => k::UnaryOp::Cos,
        UnaryOp::Floor => k::UnaryOp::Floor,
        UnaryOp::Round => k::UnaryOp::Round,
        UnaryOp::Sign => k::UnaryOp::Sign,
        UnaryOp::GeluTanh => k::UnaryOp::GeluTanh,
        UnaryOp::Gelu | UnaryOp::Silu | UnaryOp::Softplus => return None,
        UnaryOp::Not => return None,
    })
}

fn binary(op: BinaryOp) -> Option<k::BinaryOp> {
    Some(match op {
        BinaryOp::Add => k::BinaryOp::Add,
        BinaryOp::Sub => k::BinaryOp::Sub,
        BinaryOp::Mul => k::BinaryOp::Mul,
        BinaryOp::Div => k::BinaryOp::Div,
        BinaryOp::Maximum => k::BinaryOp::Max,
        BinaryOp::Minimum => k::BinaryOp::Min,
        BinaryOp::Pow => k::BinaryOp::Pow,
        BinaryOp::FloorDiv => k::BinaryOp::FloorDiv,
        BinaryOp::Rem => k::BinaryOp::Mod,
        _ => return None,
    })
}

fn scalar_f32(s: Scalar) -> Option<f32> {
    match s {
        Scalar::Float(f) => Some(f as f32),
        Scalar::Int(i) => Some(i as f32),
        Scalar::Bool(_) => None,
    }
}

/// Whether `n` can be computed inside a kernel (f32 in, f32 out).
fn fusable(g: &Graph, n: &Node) -> bool {
    let f32_args = n
        .args
        .iter()
        .all(|a| g.node(*a).is_some_and(|a| a.dtype == DType::F32));
    let op_ok = match &n.op {
        IrOp::Unary(op) => unary(*op).is_some(),
        IrOp::Binary(op) => binary(*op).is_some(),
        IrOp::BinaryScalar { op, scalar, .. } => {
            binary(*op).is_some() && scalar_f32(*scalar).is_some()
        }
        IrOp::Clamp { .. } => true,
        _ => false,
    };
    n.dtype == DType::F32 && f32_args && op_ok
}

/// A fusable reduction node: its op, how many trailing dims it reduces, and whether
/// it is a mean. Its input must be f32 with those dims last and non-empty.
fn reduction(g: &Graph, n: &Node) -> Option<(k::ReduceOp, usize, bool)> {
    let x = g.node(*n.args.first()?)?;
    let rank = x.shape.len();
    let trailing = |dims: &[usize]| {
        let mut d = dims.to_vec();
        d.sort_unstable();
        let k = d.len();
        (k > 0 && k <= rank && d.iter().enumerate().all(|(i, &v)| v == rank - k + i)).then_some(k)
    };
    let (op, dims, mean) = match &n.op {
        IrOp::Sum { dims, .. } => (k::ReduceOp::Sum, trailing(dims)?, false),
        IrOp::Mean { dims, .. } => (k::ReduceOp::Sum, trailing(dims)?, true),
        IrOp::ExtremeDim { dim, is_min, .. } => (extreme(*is_min), trailing(&[*dim])?, false),
        IrOp::ExtremeAll { is_min } => (extreme(*is_min), rank, false),
        _ => return None,
    };
    let ok = rank >= 1
        && dims >= 1
        && x.dtype == DType::F32
        && n.dtype == DType::F32
        && !x.shape.contains(&0);
    ok.then_some((op, dims, mean))
}

fn extreme(is_min: bool) -> k::ReduceOp {
    if is_min {
        k::ReduceOp::Min
    } else {
        k::ReduceOp::Max
    }
}

/// The shape of the loop nest rooted at `n`.
fn loop_shape<'g>(g: &'g Graph, n: &'g Node) -> &'g [usize] {
    match reduction(g, n) {
        Some(_) => n
            .args
            .first()
            .and_then(|a| g.node(*a))
            .map_or(&n.shape[..], |x| &x.shape[..]),
        None => &n.shape,
    }
}

/// The groups of `g` (groups of two or more nodes: one op alone gains nothing, except
/// where [`alone_is_worth_a_kernel`]).
pub fn find_groups(g: &Graph) -> Vec<Group> {
    let uses = g.use_counts();
    let ok: Vec<bool> = g.nodes.iter().map(|n| fusable(g, n)).collect();
    let roots: Vec<bool> = g.nodes.iter().map(|n| reduction(g, n).is_some()).collect();
    // group_of[i]: the root whose group node i joined.
    let mut group_of: Vec<Option<usize>> = vec![None; g.len()];
    for i in (0..g.len()).rev() {
        if !ok[i] && !roots[i] {
            continue;
        }
        let root = group_of[i].unwrap_or(i);
        group_of[i] = Some(root);
        let shape = loop_shape(g, &g.nodes[root]);
        for a in &g.nodes[i].args {
            let j = a.index();
            let joins = ok.get(j) == Some(&true)
                && uses.get(j) == Some(&1)
                && g.nodes[j].shape[..] == *shape;
            if joins {
                group_of[j] = Some(root);
            }
        }
    }
    let mut members: HashMap<usize, Vec<NodeId>> = HashMap::new();
    for (i, r) in group_of.iter().enumerate() {
        if let Some(r) = r {
            members.entry(*r).or_default().push(NodeId(i as u32));
        }
    }
    let mut groups: Vec<Group> = members
        .into_iter()
        .filter(|(r, m)| m.len() >= 2 || alone_is_worth_a_kernel(g, NodeId(*r as u32)))
        .filter_map(|(r, m)| build(g, NodeId(r as u32), m))
        .collect();
    groups.sort_by_key(|gr| gr.root);
    groups
}

/// A lone node whose JIT routine beats its eager kernel (the fused GELU-tanh; other
/// single ops run eagerly).
fn alone_is_worth_a_kernel(g: &Graph, id: NodeId) -> bool {
    g.node(id)
        .is_some_and(|n| matches!(n.op, IrOp::Unary(UnaryOp::GeluTanh)))
}

/// The kernel input access of `arg` read over the group shape `shape`.
fn access(arg: &Node, shape: &[usize]) -> Access {
    let inner = |s: &[usize]| s.last().copied().unwrap_or(1);
    let aligned = arg.shape.len() <= shape.len();
    if aligned && inner(&arg.shape) == inner(shape) && arg.shape.len() == shape.len() {
        Access::Contiguous
    } else if aligned && inner(&arg.shape) == inner(shape) && inner(shape) > 1 {
        // Broadcast along outer dims only: still contiguous rows (stride-0 outer dims).
        Access::Contiguous
    } else {
        Access::Broadcast
    }
}

/// Lowers the members (in graph order) into a kernel rooted at `root`.
fn build(g: &Graph, root: NodeId, members: Vec<NodeId>) -> Option<Group> {
    let root_node = g.node(root)?;
    let shape = loop_shape(g, root_node).to_vec();
    let red = reduction(g, root_node);
    let mut kern = Kernel::new(shape.len().max(1), Vec::new());
    let mut inputs: Vec<NodeId> = Vec::new();
    let mut vals: HashMap<NodeId, ValueId> = HashMap::new();
    for &m in &members {
        if m == root && red.is_some() {
            break;
        }
        let n = g.node(m)?;
        let mut args = Vec::with_capacity(n.args.len());
        for &a in &n.args {
            let v = match vals.get(&a) {
                Some(&v) => v,
                None => {
                    let slot = inputs.iter().position(|&x| x == a).unwrap_or_else(|| {
                        inputs.push(a);
                        kern.inputs.push(access(&g.nodes[a.index()], &shape));
                        inputs.len() - 1
                    });
                    let v = kern.push(Op::Load(slot));
                    vals.insert(a, v);
                    v
                }
            };
            args.push(v);
        }
        let v = emit(&mut kern, &n.op, &args)?;
        vals.insert(m, v);
    }
    let mut is_mean = false;
    if let Some((op, dims, mean)) = red {
        let value = *vals.get(root_node.args.first()?)?;
        kern.reduction = Some(k::Reduction { op, dims, value });
        is_mean = mean;
    } else {
        kern.outputs.push(Output {
            value: *vals.get(&root)?,
            access: Access::Contiguous,
        });
    }
    Some(Group {
        root,
        shape,
        is_mean,
        members,
        inputs,
        kernel: kern,
    })
}

/// Appends the kernel ops of one IR op applied to `args`.
fn emit(kern: &mut Kernel, op: &IrOp, args: &[ValueId]) -> Option<ValueId> {
    let x = *args.first()?;
    Some(match op {
        IrOp::Unary(u) => kern.push(Op::Unary(unary(*u)?, x)),
        IrOp::Binary(b) => kern.push(Op::Binary(binary(*b)?, x, *args.get(1)?)),
        IrOp::BinaryScalar {
            op,
            scalar,
            reverse,
        } => {
            let c = kern.push(Op::Const(scalar_f32(*scalar)?));
            let (a, b) = if *reverse { (c, x) } else { (x, c) };
            kern.push(Op::Binary(binary(*op)?, a, b))
        }
        IrOp::Clamp { min, max } => {
            let mut v = x;
            if let Some(lo) = min {
                let c = kern.push(Op::Const(*lo as f32));
                v = kern.push(Op::Binary(k::BinaryOp::Max, v, c));
            }
            if let Some(hi) = max {
                let c = kern.push(Op::Const(*hi as f32));
                v = kern.push(Op::Binary(k::BinaryOp::Min, v, c));
            }
            v
        }
        _ => return None,
    })
}
