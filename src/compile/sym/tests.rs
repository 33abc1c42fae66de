//! Unit tests of symbolic shape analysis on hand-built graphs: ties, specialisation,
//! reshape targets, slices, and the dumps.

use super::{analyze, fresh_spec, SymHints, SymInfo};
use crate::compile::ir::{Graph, InputKind, IrIndex, IrOp, Node, NodeId, PathStep};
use crate::ops::{BinaryOp, UnaryOp};
use crate::tensor::dtype::DType;
use crate::tensor::shape::Dims;
use crate::tensor::Tensor;

fn input(g: &mut Graph, k: usize, shape: &[usize]) -> NodeId {
    let kind = InputKind::Arg(vec![PathStep::Index(k)]);
    g.add_input(kind, DType::F32, Dims::from_slice(shape), None)
}

fn push(g: &mut Graph, op: IrOp, args: &[NodeId], shape: &[usize]) -> NodeId {
    g.push(Node {
        op,
        args: args.to_vec(),
        dtype: DType::F32,
        shape: shape.into(),
        span: None,
    })
}

/// Analyses `g` with every argument dim symbolic.
fn all_dynamic(g: &Graph, hints: Option<&SymHints>) -> SymInfo {
    let shapes: Vec<&[usize]> = g
        .inputs
        .iter()
        .filter_map(|i| g.node(*i))
        .map(|n| &n.shape[..])
        .collect();
    let spec = fresh_spec(&shapes, |_, _| true);
    match analyze(g, &spec, hints) {
        Ok(i) => i,
        Err(e) => panic!("{}", e.message),
    }
}

fn text(info: &SymInfo, id: NodeId) -> String {
    super::shape_text(&info.shapes[id.index()])
}

#[test]
fn matmul_ties_inner_dims_and_keeps_outer_symbolic() {
    let mut g = Graph::new();
    let x = input(&mut g, 0, &[5, 32]);
    let w = input(&mut g, 1, &[32, 64]);
    let m = push(&mut g, IrOp::Matmul, &[x, w], &[5, 64]);
    let t = push(&mut g, IrOp::Unary(UnaryOp::Tanh), &[m], &[5, 64]);
    g.outputs.push(t);
    let info = all_dynamic(&g, None);
    assert_eq!(info.num_symbols(), 3);
    assert_eq!(info.inputs[0], vec![Some(0), Some(1)]);
    assert_eq!(
        info.inputs[1],
        vec![Some(1), Some(2)],
        "w's rows are x's cols"
    );
    assert_eq!(text(&info, t), "[s0, s2]");
    assert_eq!(info.example, vec![5, 32, 64]);
}

#[test]
fn broadcasting_against_a_constant_specialises_and_one_keeps_the_symbol() {
    let mut g = Graph::new();
    let x = input(&mut g, 0, &[5, 3]);
    let c = push(
        &mut g,
        IrOp::Const(Tensor::from_vec(vec![0f32; 3], &[3])),
        &[],
        &[3],
    );
    let b = push(
        &mut g,
        IrOp::Const(Tensor::from_vec(vec![0f32; 5], &[5, 1])),
        &[],
        &[5, 1],
    );
    let a = push(&mut g, IrOp::Binary(BinaryOp::Add), &[x, c], &[5, 3]);
    g.outputs.push(a);
    let info = all_dynamic(&g, None);
    assert_eq!(
        info.inputs[0],
        vec![Some(0), None],
        "dim 1 met the constant 3"
    );
    assert_eq!(text(&info, a), "[s0, 3]");
    let a2 = push(&mut g, IrOp::Binary(BinaryOp::Add), &[a, b], &[5, 3]);
    g.outputs.push(a2);
    let info = all_dynamic(&g, None);
    assert_eq!(info.num_symbols(), 0, "dim 0 met the constant 5");
}

/// Analyses `g` (one input) with only dim 0 of the input symbolic.
fn dim0_dynamic(g: &Graph, hints: Option<&SymHints>) -> SymInfo {
    let shape = g
        .inputs
        .first()
        .and_then(|i| g.node(*i))
        .map(|n| n.shape.to_vec());
    let shape = shape.unwrap_or_default();
    let spec = fresh_spec(&[&shape[..]], |_, d| d == 0);
    match analyze(g, &spec, hints) {
        Ok(i) => i,
        Err(e) => panic!("{}", e.message),
    }
}

#[test]
fn reshape_follows_the_requested_minus_one_or_specialises() {
    let mut g = Graph::new();
    let x = input(&mut g, 0, &[4, 4]);
    let shape = |s: &[usize]| IrOp::Reshape { shape: s.into() };
    let r1 = push(&mut g, shape(&[4, 4]), &[x], &[4, 4]);
    g.outputs.push(r1);
    let mut hints = SymHints::default();
    hints.requests.insert(r1, vec![-1, 4]);
    let info = dim0_dynamic(&g, Some(&hints));
    assert_eq!(text(&info, r1), "[s0, 4]", "view(-1, 4) keeps the symbol");
    hints.requests.insert(r1, vec![4, -1]);
    let info = dim0_dynamic(&g, Some(&hints));
    assert_eq!(
        info.num_symbols(),
        0,
        "view(4, -1) on [s0, 4] is [4, s0]: ambiguous"
    );
    hints.requests.insert(r1, vec![16]);
    let info = dim0_dynamic(&g, Some(&hints));
    assert_eq!(info.num_symbols(), 0, "view(16) fixes the element count");
    hints.requests.insert(r1, vec![-1, 4]);
    let info = all_dynamic(&g, Some(&hints));
    assert_eq!(info.num_symbols(), 0, "s0*s1 is not affine");
}

#[test]
fn flatten_and_unsqueeze_are_structural() {
    let mut g = Graph::new();
    let x = input(&mut g, 0, &[6, 4, 8]);
    let shape = |s: &[usize]| IrOp::Reshape { shape: s.into() };
    let f = push(&mut g, shape(&[6, 32]), &[x], &[6, 32]);
    let u = push(&mut g, shape(&[1, 6, 32, 1]), &[f], &[1, 6, 32, 1]);
    let all = push(&mut g, shape(&[192]), &[x], &[192]);
    g.outputs.extend([u, all]);
    let info = dim0_dynamic(&g, None);
    assert_eq!(text(&info, f), "[s0, 32]");
    assert_eq!(text(&info, u), "[1, s0, 32, 1]");
    assert_eq!(text(&info, all), "[32*s0]");
    assert_eq!(info.targets.len(), 3);
    let node = &g.nodes[all.index()];
    let inst = SymInfo::instantiate(node, &info.shapes[all.index()], &[10]);
    assert!(matches!(inst.map(|n| n.op), Some(IrOp::Reshape { shape }) if shape[..] == [320]));
}

#[test]
fn a_symbolic_group_splits_into_the_one_dim_its_constants_divide() {
    let shape = |s: &[usize]| IrOp::Reshape { shape: s.into() };
    let mut g = Graph::new();
    let x = input(&mut g, 0, &[5, 3]);
    let flat = push(&mut g, shape(&[15]), &[x], &[15]);
    let a = push(&mut g, shape(&[3, 5]), &[flat], &[3, 5]);
    let b = push(&mut g, shape(&[5, 3]), &[flat], &[5, 3]);
    g.outputs.extend([a, b]);
    let info = dim0_dynamic(&g, None);
    assert_eq!(text(&info, flat), "[3*s0]");
    assert_eq!(text(&info, a), "[3, s0]", "3*T into (3, T)");
    assert_eq!(text(&info, b), "[s0, 3]");
    // traced at T = 3, (3, 3) could hold T in either dim: specialised
    let mut g = Graph::new();
    let x = input(&mut g, 0, &[3, 3]);
    let flat = push(&mut g, shape(&[9]), &[x], &[9]);
    let a = push(&mut g, shape(&[3, 3]), &[flat], &[3, 3]);
    g.outputs.push(a);
    assert_eq!(dim0_dynamic(&g, None).num_symbols(), 0);
}

#[test]
fn size_reads_specialise_only_the_read_dim() {
    let mut g = Graph::new();
    let x = input(&mut g, 0, &[5, 7]);
    let e = push(&mut g, IrOp::Unary(UnaryOp::Exp), &[x], &[5, 7]);
    g.outputs.push(e);
    let hints = SymHints {
        size_reads: vec![(x, Some(0))],
        ..SymHints::default()
    };
    let info = all_dynamic(&g, Some(&hints));
    assert_eq!(info.inputs[0], vec![None, Some(0)]);
    assert_eq!(text(&info, e), "[5, s0]");
}

#[test]
fn slices_cat_and_narrow_get_expressions_and_bounds() {
    let mut g = Graph::new();
    let x = input(&mut g, 0, &[9, 2]);
    let sl = |start, stop| IrOp::Index {
        indices: vec![IrIndex::Slice {
            start,
            stop,
            step: None,
        }],
    };
    let tail = push(&mut g, sl(Some(3), None), &[x], &[6, 2]);
    let head = push(&mut g, sl(None, Some(4)), &[x], &[4, 2]);
    let cat = push(&mut g, IrOp::Cat { dim: 0 }, &[x, tail], &[15, 2]);
    let nar = push(
        &mut g,
        IrOp::Narrow {
            dim: 0,
            start: 2,
            len: 5,
        },
        &[x],
        &[5, 2],
    );
    g.outputs.extend([head, cat, nar]);
    let info = dim0_dynamic(&g, None);
    assert_eq!(text(&info, tail), "[s0-3, 2]");
    assert_eq!(text(&info, head), "[4, 2]");
    assert_eq!(text(&info, cat), "[2*s0-3, 2]");
    assert_eq!(text(&info, nar), "[5, 2]");
    assert_eq!(info.min, vec![7], "narrow needs 7, the slice 3 + 2");
}

#[test]
fn dumps_show_symbolic_dims() {
    let mut g = Graph::new();
    let x = input(&mut g, 0, &[5, 32]);
    let e = push(&mut g, IrOp::Unary(UnaryOp::Exp), &[x], &[5, 32]);
    g.outputs.push(e);
    g.sym = Some(Box::new(dim0_dynamic(&g, None)));
    let t = g.to_text(None);
    assert!(t.contains("%1 = exp(%0) : f32[s0, 32]"), "{t}");
}

#[test]
fn sym_slices_follow_input_dims_with_bounds() {
    use super::SymExpr;
    let mut g = Graph::new();
    let x = input(&mut g, 0, &[5, 3]);
    let w = input(&mut g, 1, &[48, 3]);
    let r = crate::ir::sym::dim_ref(0, 0).unwrap();
    let sl = |start, len, sym| IrOp::Index {
        indices: vec![IrIndex::SymSlice { start, len, sym }],
    };
    // `w[:T]` of a fixed table and `x[1:T]` of x itself, T = x.shape[0].
    let head = push(&mut g, sl(0, 5, SymExpr::sym(r)), &[w], &[5, 3]);
    let add = push(&mut g, IrOp::Binary(BinaryOp::Add), &[x, head], &[5, 3]);
    let minus1 = SymExpr::sym(r).add(&SymExpr::konst(-1)).unwrap();
    let tail = push(&mut g, sl(1, 4, minus1), &[x], &[4, 3]);
    g.outputs.extend([add, tail]);
    let info = dim0_dynamic(&g, None);
    assert_eq!(text(&info, head), "[s0, 3]");
    assert_eq!(text(&info, tail), "[s0-1, 3]");
    assert_eq!(info.max, vec![48], "w[:T] needs T <= 48");
    assert_eq!(info.targets.len(), 2);
    let inst = SymInfo::instantiate(&g.nodes[head.index()], &info.shapes[head.index()], &[9]);
    let want = [IrIndex::SymSlice {
        start: 0,
        len: 9,
        sym: SymExpr::sym(r),
    }];
    assert!(matches!(inst.map(|n| n.op), Some(IrOp::Index { indices }) if indices == want));
}

#[test]
fn facts_bound_or_specialise_a_symbol() {
    use super::SymExpr;
    use crate::compile::capture::symint::SymFact;
    let mut g = Graph::new();
    let x = input(&mut g, 0, &[6, 2]);
    let e = push(&mut g, IrOp::Unary(UnaryOp::Exp), &[x], &[6, 2]);
    g.outputs.push(e);
    // `T <= 10` held at capture: 10 - s0 >= 0.
    let le10 = SymExpr::konst(10).add(&SymExpr::sym(0).scale(-1).unwrap());
    let hints = SymHints {
        facts: vec![SymFact::NonNeg(le10.unwrap())],
        ..SymHints::default()
    };
    let info = dim0_dynamic(&g, Some(&hints));
    assert_eq!((info.min.clone(), info.max.clone()), (vec![2], vec![10]));
    // `T >= 5`: s0 - 5 >= 0.
    let hints = SymHints {
        facts: vec![SymFact::NonNeg(
            SymExpr::sym(0).add(&SymExpr::konst(-5)).unwrap(),
        )],
        ..SymHints::default()
    };
    let info = dim0_dynamic(&g, Some(&hints));
    assert_eq!(
        (info.min.clone(), info.max.clone()),
        (vec![5], vec![i64::MAX])
    );
    // A value decision (printing T) specialises it.
    let hints = SymHints {
        facts: vec![SymFact::Value(SymExpr::sym(0))],
        ..SymHints::default()
    };
    assert_eq!(dim0_dynamic(&g, Some(&hints)).num_symbols(), 0);
}
