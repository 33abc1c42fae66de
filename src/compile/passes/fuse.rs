//! Fusion: maximal trees of float elementwise nodes of one shape (unary, binary,
//! binary-with-scalar, clamp) become one loop-nest [`Kernel`]. A node joins its user's
//! group when it has that single use and the same shape; anything else it reads
//! (inputs, constants, broadcast operands, non-fusable results) is a kernel input.
//! A group is one float dtype (float32 or float64: a fusable node's operands have its
//! dtype, so casts between them stay separate nodes), its kernel's [`FloatType`].
//!
//! A sum, mean, max or min over trailing dims (`(x * y).sum(-1)`, `(x - m).exp().sum(-1)`,
//! `(x * x).mean()`) roots a group too: its elementwise producer tree runs over the
//! reduction's input shape and folds into the kernel's trailing reduction, so the
//! producer's full-size result is never stored.
//!
//! A comparison read only by a `where` of its shape fuses as the select's mask
//! (ReLU's backward `where(x > 0, g, 0)`); masks are never stored.
//!
//! Then `fuse_merge` joins producer groups into the later groups of the same loop shape
//! that read them: a group may store several outputs (its members read outside it).

use super::fuse_merge::{merge, Readers};
use crate::compile::ir::{Graph, IrOp, Node, NodeId};
use crate::compile::jit::kernel::{self as k, Access, FloatType, Kernel, Op, Output, ValueId};
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
    /// The nodes whose values the kernel stores, in its output buffer order: members
    /// read outside the group in graph order, then the root (stored, or the reduction).
    pub outputs: Vec<NodeId>,
    pub kernel: Kernel,
}

fn unary(op: UnaryOp) -> Option<UnaryOp> {
    op.fusable().then_some(op)
}

/// `op` when a kernel computes it as arithmetic.
fn binary(op: BinaryOp) -> Option<BinaryOp> {
    (op.fusable() && !op.is_comparison()).then_some(op)
}

/// `op` when a kernel computes it as a comparison (a mask).
fn compare(op: BinaryOp) -> Option<BinaryOp> {
    (op.fusable() && op.is_comparison()).then_some(op)
}

/// The kernel float type of a dtype (none for integer and bool values).
fn float_type(dt: DType) -> Option<FloatType> {
    match dt {
        DType::F32 => Some(FloatType::F32),
        DType::F64 => Some(FloatType::F64),
        DType::I32 | DType::I64 | DType::U8 | DType::Bool => None,
    }
}

/// Whether every operand of `n` has the float dtype `dt`.
fn args_of(g: &Graph, n: &Node, dt: DType) -> bool {
    n.args
        .iter()
        .all(|a| g.node(*a).is_some_and(|a| a.dtype == dt))
}

/// The kernel constant of a scalar operand in a kernel of type `ft`: an f32 kernel's
/// rounded to f32 (None for bools), an f64 kernel's exact (`exact`: a comparison's
/// operand, which an f32 kernel holds only when float32 represents it exactly).
fn constant(s: Scalar, ft: FloatType, exact: bool) -> Option<Op> {
    match ft {
        FloatType::F32 if exact => exact_f32(s).map(Op::Const),
        FloatType::F32 => scalar_f32(s).map(Op::Const),
        FloatType::F64 => match s {
            Scalar::Float(f) => Some(Op::Const64(f)),
            Scalar::Int(i) => Some(Op::Const64(i as f64)),
            Scalar::Bool(_) => None,
        },
    }
}

/// A scalar operand of a comparison: only when float32 holds it exactly (eager
/// compares a float32 tensor with the exact scalar).
fn exact_f32(s: Scalar) -> Option<f32> {
    let f = scalar_f32(s)?;
    let exact = match s {
        Scalar::Float(x) => f64::from(f) == x,
        Scalar::Int(i) => f64::from(f) == i as f64,
        Scalar::Bool(_) => false,
    };
    exact.then_some(f)
}

/// Whether `n` is a comparison of `dt` values (a float dtype) a kernel can compute as a
/// mask.
fn is_compare(g: &Graph, n: &Node, dt: DType) -> bool {
    let Some(ft) = float_type(dt) else {
        return false;
    };
    let op_ok = match &n.op {
        IrOp::Binary(op) => compare(*op).is_some(),
        IrOp::BinaryScalar { op, scalar, .. } => {
            compare(*op).is_some() && constant(*scalar, ft, true).is_some()
        }
        _ => false,
    };
    n.dtype == DType::Bool && args_of(g, n, dt) && op_ok
}

/// The fusable `where(mask, a, b)` nodes and their masks: `a`, `b` and result of one
/// float dtype, the mask a comparison of values of that dtype and of the result's
/// shape used only there. Returns (selects, masks).
fn selects(g: &Graph, uses: &[usize]) -> (Vec<bool>, Vec<bool>) {
    let mut sel = vec![false; g.len()];
    let mut mask = vec![false; g.len()];
    for (i, n) in g.nodes.iter().enumerate() {
        let (IrOp::Where, &[c, a, b]) = (&n.op, n.args.as_slice()) else {
            continue;
        };
        let same = |id: NodeId| g.node(id).is_some_and(|x| x.dtype == n.dtype);
        let cond = g
            .node(c)
            .filter(|cn| is_compare(g, cn, n.dtype) && cn.shape == n.shape)
            .is_some_and(|_| uses.get(c.index()) == Some(&1));
        if cond && same(a) && same(b) && float_type(n.dtype).is_some() {
            sel[i] = true;
            mask[c.index()] = true;
        }
    }
    (sel, mask)
}

/// A kernel's f32 value of an op's scalar operand.
pub(crate) fn scalar_f32(s: Scalar) -> Option<f32> {
    match s {
        Scalar::Float(f) => Some(f as f32),
        Scalar::Int(i) => Some(i as f32),
        Scalar::Bool(_) => None,
    }
}

/// Whether `n` can be computed inside a kernel (operands and result of one float dtype).
fn fusable(g: &Graph, n: &Node) -> bool {
    let Some(ft) = float_type(n.dtype) else {
        return false;
    };
    let op_ok = match &n.op {
        IrOp::Unary(op) => unary(*op).is_some(),
        IrOp::Binary(op) => binary(*op).is_some(),
        IrOp::BinaryScalar { op, scalar, .. } => {
            binary(*op).is_some() && constant(*scalar, ft, false).is_some()
        }
        IrOp::Clamp { .. } => true,
        _ => false,
    };
    args_of(g, n, n.dtype) && op_ok
}

/// A fusable reduction node: its op, how many trailing dims it reduces, whether it is
/// a mean and whether a zero result takes the first zero's sign (max/min along a dim).
/// Its input must be of its float dtype with those dims last and non-empty.
fn reduction(g: &Graph, n: &Node) -> Option<(k::ReduceOp, usize, bool, bool)> {
    let x = g.node(*n.args.first()?)?;
    let rank = x.shape.len();
    let trailing = |dims: &[usize]| {
        let mut d = dims.to_vec();
        d.sort_unstable();
        let k = d.len();
        (k > 0 && k <= rank && d.iter().enumerate().all(|(i, &v)| v == rank - k + i)).then_some(k)
    };
    let (op, dims, mean, first) = match &n.op {
        IrOp::Sum { dims, .. } => (k::ReduceOp::Sum, trailing(dims)?, false, false),
        IrOp::Mean { dims, .. } => (k::ReduceOp::Sum, trailing(dims)?, true, false),
        IrOp::ExtremeDim { dim, is_min, .. } => (extreme(*is_min), trailing(&[*dim])?, false, true),
        IrOp::ExtremeAll { is_min } => (extreme(*is_min), rank, false, false),
        _ => return None,
    };
    let ok = rank >= 1
        && dims >= 1
        && x.dtype == n.dtype
        && float_type(n.dtype).is_some()
        && !x.shape.contains(&0);
    ok.then_some((op, dims, mean, first))
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
/// where [`alone_is_worth_a_kernel`]). `epilogue[i]`: node `i` can be a matmul's bias
/// epilogue, which a merge never moves into another group (a tree still takes it: its
/// single use is that tree's).
pub fn find_groups(g: &Graph, epilogue: &[bool]) -> Vec<Group> {
    let uses = g.use_counts();
    let (sel, mask) = selects(g, &uses);
    let ok: Vec<bool> = g
        .nodes
        .iter()
        .zip(&sel)
        .map(|(n, &s)| s || fusable(g, n))
        .collect();
    let roots: Vec<bool> = g.nodes.iter().map(|n| reduction(g, n).is_some()).collect();
    let mut group_of = trees(g, &uses, &ok, &mask, &roots);
    let readers = Readers::new(g);
    let producer: Vec<bool> = (0..g.len())
        .map(|i| ok[i] && !roots[i] && epilogue.get(i) != Some(&true))
        .collect();
    merge(&readers, &mut group_of, &producer, |r| {
        g.nodes.get(r).map_or(&[][..], |n| loop_shape(g, n))
    });
    let mut members: HashMap<usize, Vec<NodeId>> = HashMap::new();
    for (i, r) in group_of.iter().enumerate() {
        if let Some(r) = r {
            members.entry(*r).or_default().push(NodeId(i as u32));
        }
    }
    let mut groups: Vec<Group> = members
        .into_iter()
        .filter(|(r, m)| m.len() >= 2 || alone_is_worth_a_kernel(g, NodeId(*r as u32)))
        .filter_map(|(r, m)| {
            let stored = m
                .iter()
                .copied()
                .filter(|x| x.index() != r && readers.exposed(&group_of, r, x.index()))
                .collect();
            build(g, NodeId(r as u32), m, stored)
        })
        .collect();
    groups.sort_by_key(|gr| gr.root);
    groups
}

/// Single-use trees: `group_of[i]` is the root of the tree node `i` joined (a fusable
/// node no tree took is its own root; a mask joins its select; other nodes have none).
fn trees(
    g: &Graph,
    uses: &[usize],
    ok: &[bool],
    mask: &[bool],
    roots: &[bool],
) -> Vec<Option<usize>> {
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
            let member = ok.get(j) == Some(&true) || mask.get(j) == Some(&true);
            let joins = member && uses.get(j) == Some(&1) && g.nodes[j].shape[..] == *shape;
            if joins {
                group_of[j] = Some(root);
            }
        }
    }
    group_of
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

/// Lowers the members (in graph order) into a kernel rooted at `root` that also stores
/// the members `stored` (read outside the group).
fn build(g: &Graph, root: NodeId, members: Vec<NodeId>, stored: Vec<NodeId>) -> Option<Group> {
    let root_node = g.node(root)?;
    let shape = loop_shape(g, root_node).to_vec();
    let red = reduction(g, root_node);
    let dt = root_node.dtype;
    let ft = float_type(dt)?;
    // One dtype per kernel: every member is a value of `dt` or a mask comparing them.
    let one_dtype = members.iter().all(|&m| {
        g.node(m)
            .is_some_and(|n| n.dtype == dt || (n.dtype == DType::Bool && args_of(g, n, dt)))
    });
    if !one_dtype {
        return None;
    }
    let mut kern = Kernel::typed(shape.len().max(1), Vec::new(), ft);
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
        let v = emit(&mut kern, ft, &n.op, &args)?;
        vals.insert(m, v);
    }
    for m in &stored {
        kern.outputs.push(Output {
            value: *vals.get(m)?,
            access: Access::Contiguous,
        });
    }
    let mut outputs = stored;
    outputs.push(root);
    kern.tiny = red.is_none() && shape.iter().product::<usize>() <= 1;
    let mut is_mean = false;
    if let Some((op, dims, mean, first)) = red {
        let value = *vals.get(root_node.args.first()?)?;
        kern.reduction = Some(k::Reduction {
            op,
            dims,
            value,
            first,
        });
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
        outputs,
        kernel: kern,
    })
}

/// Appends the kernel ops of one IR op applied to `args` (`ft`: the kernel's type).
fn emit(kern: &mut Kernel, ft: FloatType, op: &IrOp, args: &[ValueId]) -> Option<ValueId> {
    let x = *args.first()?;
    Some(match op {
        IrOp::Binary(b) if compare(*b).is_some() => {
            kern.push(Op::Compare(compare(*b)?, x, *args.get(1)?))
        }
        IrOp::BinaryScalar {
            op,
            scalar,
            reverse,
        } if compare(*op).is_some() => {
            let c = kern.push(constant(*scalar, ft, true)?);
            let (a, b) = if *reverse { (c, x) } else { (x, c) };
            kern.push(Op::Compare(compare(*op)?, a, b))
        }
        IrOp::Where => kern.push(Op::Select(x, *args.get(1)?, *args.get(2)?)),
        IrOp::Unary(u) => kern.push(Op::Unary(unary(*u)?, x)),
        IrOp::Binary(b) => kern.push(Op::Binary(binary(*b)?, x, *args.get(1)?)),
        IrOp::BinaryScalar {
            op,
            scalar,
            reverse,
        } => {
            let c = kern.push(constant(*scalar, ft, false)?);
            let (a, b) = if *reverse { (c, x) } else { (x, c) };
            kern.push(Op::Binary(binary(*op)?, a, b))
        }
        IrOp::Clamp { min, max } => {
            let mut v = x;
            if let Some(lo) = min {
                let c = kern.push(constant(Scalar::Float(*lo), ft, false)?);
                v = kern.push(Op::Binary(BinaryOp::Maximum, v, c));
            }
            if let Some(hi) = max {
                let c = kern.push(constant(Scalar::Float(*hi), ft, false)?);
                v = kern.push(Op::Binary(BinaryOp::Minimum, v, c));
            }
            v
        }
        _ => return None,
    })
}
