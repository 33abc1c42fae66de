//! Tests of the control-flow IR built by hand: verify (regions, bindings, branch and
//! loop types), text dumps, and running the lowered graph against hand-derived values.

use crate::compile::ir::control::{Branch, LoopSpec, PrintPiece, PrintSpec, TripCount};
use crate::compile::ir::verify::verify;
use crate::compile::ir::{Graph, InputKind, IrOp, Node, NodeId, PathStep};
use crate::compile::passes::optimize;
use crate::compile::runtime::exec;
use crate::compile::runtime::lower::compile_graph;
use crate::ops::{BinaryOp, UnaryOp};
use crate::tensor::creation;
use crate::tensor::dtype::{DType, Scalar};
use crate::tensor::Tensor;

fn node(op: IrOp, args: &[NodeId], dtype: DType, shape: &[usize]) -> Node {
    Node {
        op,
        args: args.to_vec(),
        dtype,
        shape: shape.into(),
        span: None,
    }
}

fn f32s(shape: &[usize]) -> (DType, &[usize]) {
    (DType::F32, shape)
}

/// A region taking `types` as bound inputs; `body(g, inputs)` returns its outputs.
fn region(
    types: &[(DType, &[usize])],
    body: impl FnOnce(&mut Graph, &[NodeId]) -> Vec<NodeId>,
) -> Graph {
    let mut g = Graph::new();
    let ins: Vec<NodeId> = types
        .iter()
        .map(|(dt, s)| g.add_input(InputKind::Bound, *dt, (*s).into(), None))
        .collect();
    g.outputs = body(&mut g, &ins);
    g
}

fn scalar_op(g: &mut Graph, op: BinaryOp, x: NodeId, s: f64, shape: &[usize]) -> NodeId {
    g.push(node(
        IrOp::BinaryScalar {
            op,
            scalar: Scalar::Float(s),
            reverse: false,
        },
        &[x],
        DType::F32,
        shape,
    ))
}

/// `y = x * 2 if x.mean() > 0.5 else -x; return y`.
fn branch_graph() -> Graph {
    let mut g = Graph::new();
    let x = g.add_input(
        InputKind::Arg(vec![PathStep::Index(0)]),
        DType::F32,
        [3].as_slice().into(),
        None,
    );
    let m = g.push(node(
        IrOp::Mean {
            dims: vec![0],
            keepdim: false,
        },
        &[x],
        DType::F32,
        &[],
    ));
    let c = g.push(node(
        IrOp::BinaryScalar {
            op: BinaryOp::Gt,
            scalar: Scalar::Float(0.5),
            reverse: false,
        },
        &[m],
        DType::Bool,
        &[],
    ));
    let then_g = region(&[f32s(&[3])], |r, ins| {
        vec![scalar_op(r, BinaryOp::Mul, ins[0], 2.0, &[3])]
    });
    let else_g = region(&[f32s(&[3])], |r, ins| {
        vec![r.push(node(IrOp::Unary(UnaryOp::Neg), &[ins[0]], DType::F32, &[3]))]
    });
    let b = g.push(node(
        IrOp::If(Box::new(Branch { then_g, else_g })),
        &[c, x],
        DType::Bool,
        &[],
    ));
    let y = g.push(node(IrOp::Out { index: 0 }, &[b], DType::F32, &[3]));
    g.outputs.push(y);
    g
}

/// `for i in range(4): acc = acc + x; print(acc)`, with a loop of trip count 4.
fn loop_graph(trip: TripCount) -> Graph {
    let mut g = Graph::new();
    let acc = g.add_input(
        InputKind::Arg(vec![PathStep::Index(0)]),
        DType::F32,
        [2].as_slice().into(),
        None,
    );
    let x = g.add_input(
        InputKind::Arg(vec![PathStep::Index(1)]),
        DType::F32,
        [2].as_slice().into(),
        None,
    );
    let body = region(&[(DType::I64, &[]), f32s(&[2]), f32s(&[2])], |r, ins| {
        let s = r.push(node(
            IrOp::Binary(BinaryOp::Add),
            &[ins[1], ins[2]],
            DType::F32,
            &[2],
        ));
        let pieces = vec![
            PrintPiece::Text("i ".into()),
            PrintPiece::Tensor {
                arg: 0,
                conv: None,
                spec: None,
                grad: None,
            },
            PrintPiece::Text("\n".into()),
        ];
        r.push(node(
            IrOp::Print(Box::new(PrintSpec { pieces })),
            &[ins[0]],
            DType::Bool,
            &[],
        ));
        vec![s]
    });
    let spec = LoopSpec {
        trip,
        carried: 1,
        start: 10,
        step: 5,
        cond: None,
        body,
        scan: 0,
        reverse: false,
    };
    let l = g.push(node(
        IrOp::Loop(Box::new(spec)),
        &[acc, x],
        DType::Bool,
        &[],
    ));
    let y = g.push(node(IrOp::Out { index: 0 }, &[l], DType::F32, &[2]));
    g.outputs.push(y);
    g
}

fn run(g: &Graph, inputs: &[Tensor]) -> (Vec<f32>, String) {
    let cg = compile_graph(optimize(g.clone()).expect("optimize")).expect("lower");
    let mut printed = String::new();
    let out = cg.run(inputs, &exec::eval, &mut printed).expect("run");
    (out[0].to_f32_vec().expect("values"), printed)
}

#[test]
fn branch_verifies_dumps_and_runs_only_the_taken_side() {
    let g = branch_graph();
    verify(&g).expect("valid");
    let text = g.to_text(None);
    assert!(text.contains("%3 = if(%2, %0) : (f32[3])"), "{text}");
    assert!(
        text.contains("  then:\n    %0 = input(bound0) : f32[3]"),
        "{text}"
    );
    assert!(text.contains("  else:\n"), "{text}");
    assert!(g.to_dot().contains("subgraph cluster_1"), "{}", g.to_dot());
    let hi = creation::from_f32(vec![1.0, 2.0, 3.0], &[3]).expect("t");
    assert_eq!(run(&g, &[hi]).0, vec![2.0, 4.0, 6.0]);
    let lo = creation::from_f32(vec![0.0, 0.5, -1.0], &[3]).expect("t");
    assert_eq!(run(&g, &[lo]).0, vec![0.0, -0.5, 1.0]);
}

#[test]
fn loop_runs_trip_count_times_with_a_runtime_index() {
    let g = loop_graph(TripCount::Const(3));
    verify(&g).expect("valid");
    let acc = creation::from_f32(vec![1.0, 2.0], &[2]).expect("t");
    let x = creation::from_f32(vec![0.5, -1.0], &[2]).expect("t");
    let (vals, printed) = run(&g, &[acc.clone(), x.clone()]);
    assert_eq!(vals, vec![2.5, -1.0]);
    assert_eq!(printed, "i tensor(10)\ni tensor(15)\ni tensor(20)\n");
    // The trip count read from a dim of arg 1 (x has 2 rows -> 2 iterations).
    let g = loop_graph(TripCount::Dim { arg: 1, dim: 0 });
    verify(&g).expect("valid");
    assert!(g
        .to_text(None)
        .contains("trip=dim(arg 1, 0), carried=1, index=10+5k"));
    assert_eq!(run(&g, &[acc, x]).0, vec![2.0, 0.0]);
}

#[test]
fn verify_rejects_mismatched_regions() {
    let mut g = branch_graph();
    if let IrOp::If(b) = &mut g.nodes[3].op {
        b.else_g = region(&[f32s(&[3])], |r, ins| {
            vec![r.push(node(
                IrOp::Sum {
                    dims: vec![0],
                    keepdim: false,
                },
                &[ins[0]],
                DType::F32,
                &[],
            ))]
        });
    }
    let e = verify(&g).expect_err("sides differ");
    assert!(
        e.message.contains("return different types"),
        "{}",
        e.message
    );
    let mut g = loop_graph(TripCount::Const(2));
    if let IrOp::Loop(l) = &mut g.nodes[2].op {
        l.body.outputs.clear();
    }
    let e = verify(&g).expect_err("body lost its output");
    assert!(e.message.contains("carried"), "{}", e.message);
    // A control node's tuple read by a plain op.
    let mut g = branch_graph();
    let bad = g.push(node(
        IrOp::Unary(UnaryOp::Neg),
        &[NodeId(3)],
        DType::F32,
        &[],
    ));
    g.outputs = vec![bad];
    assert!(verify(&g).is_err());
}

#[test]
fn dce_keeps_prints_and_drops_unused_pure_branches() {
    let mut g = loop_graph(TripCount::Const(1));
    g.outputs.clear();
    let opt = optimize(g).expect("optimize");
    assert!(
        opt.nodes.iter().any(|n| matches!(n.op, IrOp::Loop(_))),
        "printing loop kept"
    );
    let mut g = branch_graph();
    g.outputs.clear();
    let opt = optimize(g).expect("optimize");
    assert!(
        !opt.nodes.iter().any(|n| matches!(n.op, IrOp::If(_))),
        "pure branch dropped"
    );
}
