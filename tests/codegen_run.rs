//! Running compiled kernels: validation errors, tails, layouts, reductions, NaN/inf.

mod codegen_common;

use codegen_common::*;
use kiln::compile::{
    compile, Access, BinaryOp, BufView, BufViewMut, Kernel, Op, Output, ReduceOp, Reduction,
    UnaryOp,
};
use kiln::ErrorKind;

/// y = x * 2 + 1 over a rank-1 contiguous space.
fn axpb() -> Kernel {
    let mut k = Kernel::new(1, vec![Access::Contiguous]);
    let x = k.push(Op::Load(0));
    let two = k.push(Op::Const(2.0));
    let one = k.push(Op::Const(1.0));
    let m = k.push(Op::Binary(BinaryOp::Mul, x, two));
    let y = k.push(Op::Binary(BinaryOp::Add, m, one));
    k.outputs.push(Output {
        value: y,
        access: Access::Contiguous,
    });
    k
}

#[test]
fn tails_of_every_size() {
    let ck = compile(&axpb()).unwrap();
    for n in [0usize, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 4096 + 3, 70_001] {
        let xs: Vec<f32> = (0..n).map(|i| i as f32 - 3.0).collect();
        let mut out = vec![f32::NAN; n + 2];
        let st = [1isize];
        ck.run(
            &[BufView::new(&xs, &st)],
            &mut [BufViewMut::new(&mut out[..n], &st)],
            &[n],
        )
        .unwrap();
        for i in 0..n {
            assert_eq!(out[i], xs[i] * 2.0 + 1.0, "n={n} i={i}");
        }
        assert!(
            out[n].is_nan() && out[n + 1].is_nan(),
            "n={n}: wrote past the end"
        );
    }
}

#[test]
fn bad_views_are_errors_not_accesses() {
    let ck = compile(&axpb()).unwrap();
    let xs = vec![1.0f32; 10];
    let mut out = vec![0.0f32; 10];
    let st = [1isize];
    let run = |xs: &[f32], xst: &[isize], off: usize, out: &mut [f32], n: usize| {
        let input = BufView {
            data: xs,
            offset: off,
            strides: xst,
        };
        ck.run(&[input], &mut [BufViewMut::new(out, &st)], &[n])
    };
    let e = run(&xs, &st, 0, &mut out, 11).unwrap_err();
    assert_eq!(e.kind, ErrorKind::ValueError);
    assert!(
        run(&xs, &[2], 0, &mut out, 6).is_err(),
        "stride 2 with contiguous access"
    );
    assert!(
        run(&xs, &st, 1, &mut out, 10).is_err(),
        "offset pushes past the end"
    );
    assert!(
        run(&xs, &st, 0, &mut out[..5], 10).is_err(),
        "output too short"
    );
    assert!(run(&xs, &[1, 1], 0, &mut out, 10).is_err(), "stride count");
    assert!(ck.run(&[], &mut [], &[1]).is_err(), "missing buffers");
    assert!(ck
        .run(
            &[BufView::new(&xs, &st)],
            &mut [BufViewMut::new(&mut out, &st)],
            &[1, 1]
        )
        .is_err());
    // Nothing was written by the failed runs.
    assert!(out.iter().all(|&v| v == 0.0));
    // Strided kernels: negative strides are fine, out-of-range ones are not.
    let mut k = axpb();
    k.inputs[0] = Access::Strided;
    let sk = compile(&k).unwrap();
    let neg = BufView {
        data: &xs,
        offset: 9,
        strides: &[-1],
    };
    sk.run(&[neg], &mut [BufViewMut::new(&mut out, &st)], &[10])
        .unwrap();
    let bad = BufView {
        data: &xs,
        offset: 8,
        strides: &[-1],
    };
    assert!(sk
        .run(&[bad], &mut [BufViewMut::new(&mut out, &st)], &[10])
        .is_err());
    // Overlapping output elements are rejected.
    let mut k2 = axpb();
    k2.outputs[0].access = Access::Strided;
    let ok2 = compile(&k2).unwrap();
    let r = ok2.run(
        &[BufView::new(&xs, &st)],
        &mut [BufViewMut::new(&mut out, &[0])],
        &[10],
    );
    assert!(r.is_err(), "stride-0 output");
}

#[test]
fn invalid_kernels_are_rejected() {
    let mut k = Kernel::new(1, vec![Access::Contiguous]);
    let x = k.push(Op::Load(0));
    let m = k.push(Op::Compare(BinaryOp::Lt, x, x));
    let bad = k.push(Op::Unary(UnaryOp::Exp, m));
    k.outputs.push(Output {
        value: bad,
        access: Access::Contiguous,
    });
    assert!(compile(&k).is_err(), "mask used as a number");
    let mut k = Kernel::new(1, vec![]);
    let l = k.push(Op::Load(0));
    k.outputs.push(Output {
        value: l,
        access: Access::Contiguous,
    });
    assert!(compile(&k).is_err(), "missing input");
    let mut k = axpb();
    k.reduction = Some(Reduction {
        op: ReduceOp::Sum,
        dims: 2,
        value: kiln::compile::ValueId(0),
        first: false,
    });
    assert!(compile(&k).is_err(), "reduction wider than rank");
    let mut k = axpb();
    k.outputs[0].value = kiln::compile::ValueId(99);
    assert!(compile(&k).is_err(), "undefined value");
    assert!(compile(&Kernel::new(0, vec![])).is_err(), "rank 0");
}

/// Row max over the last dim of a [rows, cols] matrix, with a row-broadcast input too:
/// out[r] = max_c(x[r, c] - b[r]).
#[test]
fn row_reductions_with_broadcast_and_tails() {
    for &(rows, cols) in &[
        (3usize, 0usize),
        (1, 1),
        (5, 3),
        (4, 9),
        (7, 4099),
        (300, 300),
    ] {
        for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min] {
            let mut k = Kernel::new(2, vec![Access::Contiguous, Access::Broadcast]);
            let x = k.push(Op::Load(0));
            let b = k.push(Op::Load(1));
            let d = k.push(Op::Binary(BinaryOp::Sub, x, b));
            k.reduction = Some(Reduction {
                op,
                dims: 1,
                value: d,
                first: false,
            });
            let ck = compile(&k).unwrap();
            let xs: Vec<f32> = (0..rows * cols)
                .map(|i| ((i * 37) % 101) as f32 * 0.25)
                .collect();
            let bs: Vec<f32> = (0..rows).map(|r| r as f32).collect();
            let mut out = vec![0.0f32; rows];
            let xst = [cols as isize, 1];
            let bst = [1isize, 0];
            ck.run(
                &[BufView::new(&xs, &xst), BufView::new(&bs, &bst)],
                &mut [BufViewMut::new(&mut out, &[1])],
                &[rows, cols],
            )
            .unwrap();
            for r in 0..rows {
                let row = xs[r * cols..(r + 1) * cols]
                    .iter()
                    .map(|&v| (v - bs[r]) as f64);
                let want = match op {
                    ReduceOp::Sum => row.sum::<f64>(),
                    ReduceOp::Max => row.fold(f64::NEG_INFINITY, f64::max),
                    ReduceOp::Min => row.fold(f64::INFINITY, f64::min),
                };
                let tol = 1e-5 * (want.abs() + cols as f64 * 25.0);
                assert!(
                    out[r] as f64 == want || (out[r] as f64 - want).abs() <= tol,
                    "{op:?} {rows}x{cols} r={r}: {} vs {want}",
                    out[r]
                );
            }
        }
    }
}

#[test]
fn full_sum_parallel_matches_f64() {
    let mut k = Kernel::new(1, vec![Access::Contiguous]);
    let x = k.push(Op::Load(0));
    k.reduction = Some(Reduction {
        op: ReduceOp::Sum,
        dims: 1,
        value: x,
        first: false,
    });
    let ck = compile(&k).unwrap();
    let mut rng = Rng(7);
    let xs: Vec<f32> = (0..1_000_003).map(|_| rng.range(-1.0, 1.0)).collect();
    let mut out = [0.0f32];
    ck.run(
        &[BufView::new(&xs, &[1])],
        &mut [BufViewMut::new(&mut out, &[])],
        &[xs.len()],
    )
    .unwrap();
    let want: f64 = xs.iter().map(|&v| v as f64).sum();
    let mag: f64 = xs.iter().map(|&v| v.abs() as f64).sum();
    assert!(
        (out[0] as f64 - want).abs() <= 1e-6 * mag,
        "{} vs {want}",
        out[0]
    );
}

#[test]
fn nan_and_inf_flow_through_reductions() {
    for (op, want_nan) in [
        (ReduceOp::Sum, true),
        (ReduceOp::Max, true),
        (ReduceOp::Min, true),
    ] {
        let mut k = Kernel::new(1, vec![Access::Contiguous]);
        let x = k.push(Op::Load(0));
        k.reduction = Some(Reduction {
            op,
            dims: 1,
            value: x,
            first: false,
        });
        let ck = compile(&k).unwrap();
        for pos in [0usize, 5, 10, 12] {
            let mut xs = vec![1.0f32; 13];
            xs[pos] = f32::NAN;
            let mut out = [0.0f32];
            ck.run(
                &[BufView::new(&xs, &[1])],
                &mut [BufViewMut::new(&mut out, &[])],
                &[13],
            )
            .unwrap();
            assert_eq!(out[0].is_nan(), want_nan, "{op:?} NaN at {pos}");
        }
        let xs = [1.0f32, f32::INFINITY, -3.0, 2.0, 0.5];
        let mut out = [0.0f32];
        ck.run(
            &[BufView::new(&xs, &[1])],
            &mut [BufViewMut::new(&mut out, &[])],
            &[5],
        )
        .unwrap();
        let want = match op {
            ReduceOp::Sum | ReduceOp::Max => f32::INFINITY,
            ReduceOp::Min => -3.0,
        };
        assert_eq!(out[0], want, "{op:?}");
    }
}

#[test]
fn empty_reduction_gives_identity() {
    for (op, want) in [
        (ReduceOp::Sum, 0.0),
        (ReduceOp::Max, f32::NEG_INFINITY),
        (ReduceOp::Min, f32::INFINITY),
    ] {
        let mut k = Kernel::new(2, vec![Access::Contiguous]);
        let x = k.push(Op::Load(0));
        k.reduction = Some(Reduction {
            op,
            dims: 1,
            value: x,
            first: false,
        });
        let ck = compile(&k).unwrap();
        let mut out = [7.0f32; 3];
        ck.run(
            &[BufView::new(&[], &[0, 1])],
            &mut [BufViewMut::new(&mut out, &[1])],
            &[3, 0],
        )
        .unwrap();
        assert_eq!(out, [want; 3], "{op:?}");
    }
}

#[test]
fn strided_outputs_and_masks() {
    // out[j, i] = (x[i, j] > 0) stored as 1/0 into a transposed (strided) output.
    let mut k = Kernel::new(2, vec![Access::Contiguous]);
    let x = k.push(Op::Load(0));
    let z = k.push(Op::Const(0.0));
    let m = k.push(Op::Compare(BinaryOp::Gt, x, z));
    k.outputs.push(Output {
        value: m,
        access: Access::Strided,
    });
    let ck = compile(&k).unwrap();
    let (r, c) = (5usize, 7usize);
    let xs: Vec<f32> = (0..r * c)
        .map(|i| if i % 3 == 0 { 1.0 } else { -1.0 })
        .collect();
    let mut out = vec![9.0f32; r * c];
    ck.run(
        &[BufView::new(&xs, &[c as isize, 1])],
        &mut [BufViewMut::new(&mut out, &[1, r as isize])],
        &[r, c],
    )
    .unwrap();
    for i in 0..r {
        for j in 0..c {
            let want = if (i * c + j) % 3 == 0 { 1.0 } else { 0.0 };
            assert_eq!(out[j * r + i], want);
        }
    }
}

#[test]
fn many_compiles_free_their_memory() {
    for _ in 0..300 {
        let ck = compile(&axpb()).unwrap();
        assert!(ck.compile_time().as_secs_f64() < 1.0);
    }
}

/// Every row of the op table's binary ops: a `fusable` arithmetic row compiles as
/// `Op::Binary` only, a comparison as `Op::Compare` only, other rows as neither; every
/// kernel that compiles gives the reference evaluator's values (masks stored as 1.0/0.0)
/// on finite, signed-zero, infinite and NaN operands.
#[test]
fn binary_table_rows_take_their_kernel_form() {
    let xs = [
        1.5f32,
        -2.0,
        0.0,
        -0.0,
        7.25,
        f32::INFINITY,
        f32::NAN,
        3.0,
        -0.5,
    ];
    let ys = [
        0.5f32,
        3.0,
        -0.0,
        2.0,
        -7.25,
        1.0,
        1.0,
        f32::NEG_INFINITY,
        -0.5,
    ];
    let n = xs.len();
    for &op in BinaryOp::ALL {
        for compare in [false, true] {
            let mut k = Kernel::new(1, vec![Access::Contiguous, Access::Contiguous]);
            let (x, y) = (k.push(Op::Load(0)), k.push(Op::Load(1)));
            let v = if compare {
                k.push(Op::Compare(op, x, y))
            } else {
                k.push(Op::Binary(op, x, y))
            };
            k.outputs.push(Output {
                value: v,
                access: Access::Contiguous,
            });
            let valid = op.fusable() && op.is_comparison() == compare;
            let Ok(ck) = compile(&k) else {
                assert!(!valid, "{} ({compare}) must compile", op.name());
                continue;
            };
            assert!(valid, "{} ({compare}) must be refused", op.name());
            let st = [1isize];
            let mut got = vec![0.0f32; n];
            let mut want = vec![0.0f32; n];
            let ins = [BufView::new(&xs, &st), BufView::new(&ys, &st)];
            let run = ck.run(&ins, &mut [BufViewMut::new(&mut got, &st)], &[n]);
            assert!(run.is_ok(), "{}: {run:?}", op.name());
            let reference = kiln::compile::run_reference(
                &k,
                &ins,
                &mut [BufViewMut::new(&mut want, &st)],
                &[n],
                None,
            );
            assert!(reference.is_ok());
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                let same = g.to_bits() == w.to_bits()
                    || (g.is_nan() && w.is_nan())
                    || (g - w).abs() <= 1e-6 * w.abs();
                let (x, y, name) = (xs[i], ys[i], op.name());
                assert!(same, "{name}({x}, {y}): jit {g} reference {w}");
            }
        }
    }
}
