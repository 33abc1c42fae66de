//! Tests of the IR: verifier invariants, text/DOT dumps, and `infer::derive` checked
//! against the dtypes and shapes the tensor library actually produces.

use crate::compile::ir::infer::{derive, ValueType};
use crate::compile::ir::verify::verify;
use crate::compile::ir::{Graph, InputKind, IrIndex, IrOp, Node, NodeId, PathStep};
use crate::ops::{self, BinaryOp, UnaryOp};
use crate::tensor::creation;
use crate::tensor::dtype::{DType, Scalar};
use crate::tensor::shape::Dims;
use crate::tensor::{linalg, Tensor};

fn arg(k: usize) -> InputKind {
    InputKind::Arg(vec![PathStep::Index(k)])
}

fn node(op: IrOp, args: &[u32], dtype: DType, shape: &[usize]) -> Node {
    Node {
        op,
        args: args.iter().map(|&a| NodeId(a)).collect(),
        dtype,
        shape: shape.into(),
        span: None,
    }
}

/// x[2,3] @ w[3,4] -> relu -> sum(dim 1).
fn mlp() -> Graph {
    let mut g = Graph::new();
    let x = g.add_input(arg(0), DType::F32, Dims::from_slice(&[2, 3]), None);
    let w = g.add_input(
        InputKind::External {
            name: "self.w".into(),
        },
        DType::F32,
        Dims::from_slice(&[3, 4]),
        None,
    );
    let m = g.push(node(IrOp::Matmul, &[x.0, w.0], DType::F32, &[2, 4]));
    let r = g.push(node(
        IrOp::Unary(UnaryOp::Relu),
        &[m.0],
        DType::F32,
        &[2, 4],
    ));
    let s = g.push(node(
        IrOp::Sum {
            dims: vec![1],
            keepdim: false,
        },
        &[r.0],
        DType::F32,
        &[2],
    ));
    g.outputs.push(s);
    g
}

#[test]
fn valid_graph_verifies_and_dumps() {
    let g = mlp();
    assert!(verify(&g).is_ok());
    let want = "%0 = input(arg0) : f32[2, 3]\n\
                %1 = input(external self.w) : f32[3, 4]\n\
                %2 = matmul(%0, %1) : f32[2, 4]\n\
                %3 = relu(%2) : f32[2, 4]\n\
                %4 = sum(%3, dims=[1], keepdim=false) : f32[2]\n\
                return %4\n";
    assert_eq!(g.to_text(None), want);
    let dot = g.to_dot();
    assert!(
        dot.contains("n0 -> n2;") && dot.contains("n4 -> out0;"),
        "{dot}"
    );
}

#[test]
fn wrong_shape_is_caught() {
    let mut g = mlp();
    g.nodes[4].shape = Dims::from_slice(&[4]);
    let e = verify(&g).err().map(|e| e.message).unwrap_or_default();
    assert!(
        e.contains("%4 = sum") && e.contains("recorded shape (4,)"),
        "{e}"
    );
}

#[test]
fn wrong_dtype_is_caught() {
    let mut g = mlp();
    let lt = IrOp::BinaryScalar {
        op: BinaryOp::Lt,
        scalar: Scalar::Float(0.5),
        reverse: false,
    };
    let c = g.push(node(lt, &[3], DType::F32, &[2, 4]));
    g.outputs.push(c);
    let e = verify(&g).err().map(|e| e.message).unwrap_or_default();
    assert!(
        e.contains("recorded dtype float32 but the op gives bool"),
        "{e}"
    );
}

#[test]
fn ssa_order_and_arity_are_caught() {
    let mut g = mlp();
    g.nodes[2].args[1] = NodeId(3);
    let e = verify(&g).err().map(|e| e.message).unwrap_or_default();
    assert!(e.contains("arg %3 does not precede it"), "{e}");
    let mut g = mlp();
    g.nodes[3].args.push(NodeId(0));
    let e = verify(&g).err().map(|e| e.message).unwrap_or_default();
    assert!(e.contains("expected 1 args, got 2"), "{e}");
    let mut g = mlp();
    g.outputs.push(NodeId(99));
    assert!(verify(&g).is_err());
}

#[test]
fn input_slots_are_checked() {
    let mut g = mlp();
    g.inputs.swap(0, 1);
    assert!(verify(&g).is_err());
}

#[test]
fn index_args_are_checked() {
    let mut g = Graph::new();
    let x = g.add_input(arg(0), DType::F32, Dims::from_slice(&[4]), None);
    let m = g.add_input(arg(1), DType::I64, Dims::from_slice(&[4]), None);
    let ix = IrOp::Index {
        indices: vec![IrIndex::Mask { arg: 1 }],
    };
    g.push(node(ix, &[x.0, m.0], DType::F32, &[2]));
    let e = verify(&g).err().map(|e| e.message).unwrap_or_default();
    assert!(e.contains("expected bool index, got int64"), "{e}");
}

fn vt(t: &Tensor) -> ValueType {
    ValueType::new(t.dtype(), t.shape())
}

/// `derive` on the args' types must give the dtype and shape eager produced.
fn agrees(op: IrOp, args: &[&Tensor], out: &Tensor) {
    let types: Vec<ValueType> = args.iter().map(|t| vt(t)).collect();
    let d = derive(&op, &types).map_err(|e| e.message);
    let d = match d {
        Ok(d) => d,
        Err(m) => panic!("{op:?}: {m}"),
    };
    assert_eq!(d.dtype, out.dtype(), "{op:?}");
    if let Some(s) = d.shape {
        assert_eq!(s.as_slice(), out.shape(), "{op:?}");
    }
}

fn samples() -> Vec<Tensor> {
    let f = creation::full(&[2, 1, 3], Scalar::Float(0.5), None);
    let i = creation::full(&[4, 3], Scalar::Int(2), None);
    let b = creation::full(&[3], Scalar::Bool(true), None);
    [f, i, b].into_iter().filter_map(|t| t.ok()).collect()
}

#[test]
fn derive_matches_eager_elementwise() {
    let ts = samples();
    assert_eq!(ts.len(), 3);
    for a in &ts {
        for op in [
            UnaryOp::Neg,
            UnaryOp::Exp,
            UnaryOp::Abs,
            UnaryOp::Not,
            UnaryOp::Relu,
        ] {
            if let Ok(out) = ops::unary(op, a) {
                agrees(IrOp::Unary(op), &[a], &out);
            }
        }
        for b in &ts {
            for op in [
                BinaryOp::Add,
                BinaryOp::Div,
                BinaryOp::Lt,
                BinaryOp::And,
                BinaryOp::Pow,
            ] {
                if let Ok(out) = ops::binary(op, a, b) {
                    agrees(IrOp::Binary(op), &[a, b], &out);
                }
            }
        }
        let scalar = Scalar::Float(2.0);
        if let Ok(out) = ops::binary_scalar(BinaryOp::Mul, a, scalar, true) {
            let op = IrOp::BinaryScalar {
                op: BinaryOp::Mul,
                scalar,
                reverse: true,
            };
            agrees(op, &[a], &out);
        }
        if let Ok(out) = ops::clamp(a, Some(0.0), None) {
            agrees(
                IrOp::Clamp {
                    min: Some(0.0),
                    max: None,
                },
                &[a],
                &out,
            );
        }
    }
}

#[test]
fn derive_matches_eager_reductions_and_views() -> crate::error::Result<()> {
    let x = creation::full(&[2, 3, 4], Scalar::Float(1.0), None)?;
    let sum = IrOp::Sum {
        dims: vec![0, 2],
        keepdim: true,
    };
    agrees(sum, &[&x], &x.sum(&[0, 2], true)?);
    let am = IrOp::ArgExtreme {
        dim: Some(1),
        keepdim: false,
        is_min: false,
    };
    agrees(am, &[&x], &x.arg_extreme(Some(1), false, false)?);
    agrees(IrOp::Softmax { dim: 2 }, &[&x], &x.softmax(2)?);
    agrees(
        IrOp::Permute {
            perm: vec![2, 0, 1],
        },
        &[&x],
        &x.permute(&[2, 0, 1])?,
    );
    let n = IrOp::Narrow {
        dim: 2,
        start: 1,
        len: 2,
    };
    agrees(n, &[&x], &x.narrow(2, 1, 2)?);
    agrees(
        IrOp::Repeat {
            reps: vec![2, 1, 1, 1],
        },
        &[&x],
        &x.repeat(&[2, 1, 1, 1])?,
    );
    let w = creation::full(&[4, 5], Scalar::Float(1.0), None)?;
    agrees(IrOp::Matmul, &[&x, &w], &linalg::matmul(&x, &w)?);
    let v = creation::full(&[4], Scalar::Float(1.0), None)?;
    agrees(IrOp::Matmul, &[&x, &v], &linalg::matmul(&x, &v)?);
    agrees(IrOp::Matmul, &[&v, &w], &linalg::matmul(&v, &w)?);
    let cat = crate::tensor::views::cat(&[x.clone(), x.clone()], 1)?;
    agrees(IrOp::Cat { dim: 1 }, &[&x, &x], &cat);
    let st = crate::tensor::views::stack(&[x.clone(), x.clone()], 3)?;
    agrees(IrOp::Stack { dim: 3 }, &[&x, &x], &st);
    Ok(())
}

#[test]
fn cat_of_scalars_is_rejected_not_a_panic() {
    let t = ValueType::new(DType::F32, &[]);
    let e = derive(&IrOp::Cat { dim: 0 }, &[t.clone(), t]);
    assert!(e.is_err());
}

/// Every matrix function's derived type against its kernel's result (`linalg_ops::run`,
/// the executor of `IrOp::Linalg`): a batch of square matrices, a tall one, float64.
#[test]
fn derive_matches_eager_linalg() -> crate::error::Result<()> {
    use crate::tensor::linalg_decomp::QrMode;
    use crate::tensor::linalg_ops::{run, LinalgOp as L};
    let sq = creation::from_f32(
        vec![4.0, 1.0, 2.0, 1.0, 3.0, 0.5, 2.0, 0.5, 5.0],
        &[1, 3, 3],
    )?;
    let sq64 = sq.cast(DType::F64)?;
    let rhs = creation::from_f32(vec![1.0, 2.0, 0.0, -1.0, 3.0, 1.0], &[1, 3, 2])?;
    let vals: Vec<f32> = (0..12).map(|i| (i * i % 7) as f32 + 0.5).collect();
    let tall = creation::from_f32(vals, &[4, 3])?;
    let ev = creation::from_f32(vec![1.0, 2.0, 4.0], &[3])?;
    let mut cases: Vec<(L, Vec<&Tensor>)> = vec![
        (L::Inv, vec![&sq]),
        (L::Det, vec![&sq64]),
        (L::Cofactor, vec![&sq]),
        (L::Solve, vec![&sq, &rhs]),
        (L::Cholesky { upper: true }, vec![&sq64]),
        (
            L::Svd {
                full: true,
                part: 0,
            },
            vec![&tall],
        ),
        (
            L::Pinv {
                atol: None,
                rtol: None,
            },
            vec![&tall],
        ),
        (L::GapInverse { squares: true }, vec![&ev]),
    ];
    for part in 0..2 {
        cases.push((L::Slogdet { part }, vec![&sq]));
        cases.push((L::Eigh { upper: false, part }, vec![&sq64]));
        for mode in [QrMode::Reduced, QrMode::Complete, QrMode::R] {
            cases.push((L::Qr { mode, part }, vec![&tall]));
        }
    }
    for part in 0..3 {
        cases.push((L::Svd { full: false, part }, vec![&sq]));
    }
    for (op, args) in cases {
        let out = run(op, &args)?;
        agrees(IrOp::Linalg(op), &args, &out);
    }
    Ok(())
}
