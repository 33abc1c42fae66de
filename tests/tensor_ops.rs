//! Forward semantics of the tensor library: creation, promotion, broadcasting,
//! reductions, views, indexing, printing, error messages, memory cap, randomness.

use kiln::ops::{self, BinaryOp, UnaryOp};
use kiln::tensor::creation::{
    arange, eye, from_bool, from_f32, from_i64, full, linspace, ones, randint, randn, zeros,
};
use kiln::tensor::dtype::{DType, Scalar};
use kiln::tensor::indexing::{one_hot, TensorIndex};
use kiln::tensor::inplace::Operand;
use kiln::tensor::kernels::conv::{ConvParams, PoolParams};
use kiln::tensor::linalg::{conv2d, matmul, max_pool2d, max_pool2d_with_indices};
use kiln::tensor::random::manual_seed;
use kiln::tensor::storage::set_max_alloc_bytes;
use kiln::tensor::views::cat;
use kiln::{ErrorKind, Tensor};

fn f(v: &[f32], s: &[usize]) -> Tensor {
    from_f32(v.to_vec(), s).unwrap()
}

fn i(v: &[i64], s: &[usize]) -> Tensor {
    from_i64(v.to_vec(), s).unwrap()
}

fn fv(t: &Tensor) -> Vec<f32> {
    t.to_f32_vec().unwrap()
}

fn close(a: &[f32], b: &[f32]) {
    assert_eq!(a.len(), b.len(), "{a:?} vs {b:?}");
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= 1e-4 * (1.0 + y.abs()), "{a:?} vs {b:?}");
    }
}

#[test]
fn promotion_rules() {
    let a = i(&[1, 2, 3], &[3]);
    let b = f(&[0.5, 0.5, 0.5], &[3]);
    assert_eq!(a.add(&b).unwrap().dtype(), DType::F32);
    let d = ops::binary(BinaryOp::Div, &a, &i(&[2, 2, 2], &[3])).unwrap();
    assert_eq!(d.dtype(), DType::F32); // int / int -> float
    close(&fv(&d), &[0.5, 1.0, 1.5]);
    let c = ops::binary(BinaryOp::Lt, &a, &b).unwrap();
    assert_eq!(c.dtype(), DType::Bool);
    let t = from_bool(vec![true, false], &[2]).unwrap();
    // bool + bool stays bool (an or), as PyTorch's
    let s = t.add(&t).unwrap();
    assert_eq!(s.dtype(), DType::Bool);
    assert_eq!(s.to_vec::<bool>().unwrap(), vec![true, false]);
    assert_eq!(
        ops::binary_scalar(BinaryOp::Mul, &a, Scalar::Int(2), false)
            .unwrap()
            .dtype(),
        DType::I64
    );
    assert_eq!(
        ops::binary_scalar(BinaryOp::Mul, &a, Scalar::Float(2.0), false)
            .unwrap()
            .dtype(),
        DType::F32
    );
}

#[test]
fn python_floor_semantics() {
    let a = i(&[7, -7, 7, -7], &[4]);
    let b = i(&[2, 2, -2, -2], &[4]);
    // Python: 7//2=3, -7//2=-4, 7//-2=-4, -7//-2=3; 7%2=1, -7%2=1, 7%-2=-1, -7%-2=-1
    assert_eq!(
        ops::binary(BinaryOp::FloorDiv, &a, &b)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![3, -4, -4, 3]
    );
    assert_eq!(
        ops::binary(BinaryOp::Rem, &a, &b)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![1, 1, -1, -1]
    );
    // an integer tensor divided by zero: PyTorch's RuntimeError "ZeroDivisionError"
    let e = ops::binary(BinaryOp::FloorDiv, &a, &i(&[0], &[1])).unwrap_err();
    assert_eq!(e.kind, ErrorKind::RuntimeError);
    assert!(e.message.contains("ZeroDivisionError"), "{}", e.message);
    // float: -7.5 % 2 = 0.5 (Python)
    close(
        &fv(&ops::binary_scalar(BinaryOp::Rem, &f(&[-7.5], &[1]), Scalar::Int(2), false).unwrap()),
        &[0.5],
    );
}

#[test]
fn broadcasting_and_errors() {
    let a = f(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let b = f(&[10.0, 20.0, 30.0], &[3]);
    close(
        &fv(&a.add(&b).unwrap()),
        &[11.0, 22.0, 33.0, 14.0, 25.0, 36.0],
    );
    let col = f(&[1.0, 2.0], &[2, 1]);
    assert_eq!(col.mul(&b).unwrap().shape(), &[2, 3]);
    let e = a.add(&f(&[1.0; 4], &[4])).unwrap_err();
    assert_eq!(e.kind, ErrorKind::ShapeError);
    assert_eq!(e.message, "add: shapes (2, 3) and (4,) cannot be broadcast");
    let e = matmul(
        &zeros(&[3, 4], DType::F32).unwrap(),
        &zeros(&[5, 2], DType::F32).unwrap(),
    )
    .unwrap_err();
    assert_eq!(
        e.message,
        "matmul: (3, 4) @ (5, 2): inner dimensions 4 and 5 differ"
    );
    assert!(e.span.is_none());
    // 1 - x without materialising the scalar
    close(&fv(&b.rsub_s(1.0).unwrap()), &[-9.0, -19.0, -29.0]);
}

#[test]
fn unary_values() {
    let x = f(&[-1.0, 0.0, 2.0], &[3]);
    close(
        &fv(&ops::unary(UnaryOp::Relu, &x).unwrap()),
        &[0.0, 0.0, 2.0],
    );
    // gelu exact: x * Phi(x); Phi(-1) = 0.158655, Phi(2) = 0.977250
    close(
        &fv(&ops::unary(UnaryOp::Gelu, &x).unwrap()),
        &[-0.158_655, 0.0, 1.954_5],
    );
    // gelu tanh at 2: 0.5*2*(1+tanh(0.79788456*(2+0.044715*8))) = 1.954598
    close(
        &fv(&ops::unary(UnaryOp::GeluTanh, &f(&[2.0], &[1])).unwrap()),
        &[1.954_598],
    );
    close(
        &fv(&ops::unary(UnaryOp::Sigmoid, &x).unwrap()),
        &[0.268_941_4, 0.5, 0.880_797],
    );
    close(
        &fv(&ops::unary(UnaryOp::Softplus, &x).unwrap()),
        &[0.313_261_7, std::f32::consts::LN_2, 2.126_928],
    );
    // round half to even, as PyTorch
    close(
        &fv(&ops::unary(UnaryOp::Round, &f(&[0.5, 1.5, 2.5, -0.5], &[4])).unwrap()),
        &[0.0, 2.0, 2.0, -0.0],
    );
    assert_eq!(
        ops::unary(UnaryOp::Abs, &i(&[-3], &[1])).unwrap().dtype(),
        DType::I64
    );
    let m = from_bool(vec![true, false], &[2]).unwrap();
    assert_eq!(
        ops::unary(UnaryOp::Not, &m)
            .unwrap()
            .to_vec::<bool>()
            .unwrap(),
        vec![false, true]
    );
    close(
        &fv(&ops::clamp(&x, Some(-0.5), Some(1.0)).unwrap()),
        &[-0.5, 0.0, 1.0],
    );
}

#[test]
fn reductions() {
    let x = f(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    // torch.tensor([[1.,2.],[3.,4.]]).var() = 1.6667 (mean 2.5, ss 5, /3)
    close(
        &fv(&x.var_std(&[], 1.0, false, false).unwrap()),
        &[5.0 / 3.0],
    );
    close(&fv(&x.var_std(&[], 0.0, false, false).unwrap()), &[1.25]);
    close(
        &fv(&x.var_std(&[1], 1.0, false, true).unwrap()),
        &[std::f32::consts::FRAC_1_SQRT_2; 2],
    );
    close(&fv(&x.sum(&[0], false).unwrap()), &[4.0, 6.0]);
    assert_eq!(x.sum(&[-1], true).unwrap().shape(), &[2, 1]);
    close(&fv(&x.mean(&[], false).unwrap()), &[2.5]);
    close(&fv(&x.prod(&[1], false).unwrap()), &[2.0, 12.0]);
    let (v, ix) = f(&[1.0, 5.0, 3.0, 7.0, 0.0, 7.0], &[2, 3])
        .extreme_dim(1, false, false)
        .unwrap();
    close(&fv(&v), &[5.0, 7.0]);
    assert_eq!(ix.to_vec::<i64>().unwrap(), vec![1, 0]); // first index on ties
    assert_eq!(
        x.arg_extreme(None, false, true)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![0]
    );
    // logsumexp([1, 2]) = 2.3132617
    close(
        &fv(&f(&[1.0, 2.0], &[2]).logsumexp(&[0], false).unwrap()),
        &[2.313_261_7],
    );
    close(
        &fv(&f(&[1.0, 2.0], &[2]).softmax(0).unwrap()),
        &[0.268_941_4, 0.731_058_6],
    );
    close(
        &fv(&f(&[1.0, 2.0], &[2]).log_softmax(0).unwrap()),
        &[-1.313_261_7, -0.313_261_7],
    );
    close(&fv(&x.cumsum(0).unwrap()), &[1.0, 2.0, 4.0, 6.0]);
    assert_eq!(
        i(&[1, 2, 3], &[3])
            .cumsum(0)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![1, 3, 6]
    );
    close(
        &fv(&f(&[3.0, 4.0], &[2]).norm(2.0, &[], false).unwrap()),
        &[5.0],
    );
    let b = from_bool(vec![true, false, true, true], &[2, 2]).unwrap();
    assert_eq!(
        b.all_any(&[1], false, false)
            .unwrap()
            .to_vec::<bool>()
            .unwrap(),
        vec![false, true]
    );
    assert_eq!(
        b.all_any(&[], false, true)
            .unwrap()
            .to_vec::<bool>()
            .unwrap(),
        vec![true]
    );
    assert_eq!(
        i(&[1, 2, 3], &[3]).sum(&[], false).unwrap().dtype(),
        DType::I64
    );
    let e = x.sum(&[2], false).unwrap_err();
    assert_eq!(e.kind, ErrorKind::IndexError);
}

#[test]
fn big_parallel_paths_match_serial() {
    let n = 100_000;
    let v: Vec<f32> = (0..n).map(|k| (k % 7) as f32).collect();
    let x = from_f32(v.clone(), &[n]).unwrap();
    let y = x.mul_s(2.0).unwrap().add_s(1.0).unwrap();
    let yv = y.to_vec::<f32>().unwrap();
    assert!(yv.iter().zip(&v).all(|(a, b)| *a == b * 2.0 + 1.0));
    let s: f64 = v.iter().map(|&a| f64::from(a)).sum();
    assert_eq!(
        f64::from(x.sum(&[], false).unwrap().to_vec::<f32>().unwrap()[0]),
        s
    );
    let m = x.reshape(&[1000, 100]).unwrap().sum(&[1], false).unwrap();
    assert_eq!(m.shape(), &[1000]);
}

#[test]
fn views_share_storage() {
    let x = arange(
        Scalar::Int(0),
        Scalar::Int(6),
        Scalar::Int(1),
        Some(DType::F32),
    )
    .unwrap()
    .reshape(&[2, 3])
    .unwrap();
    let row = x.index(&[TensorIndex::Int(1)]).unwrap();
    row.fill_(Scalar::Float(9.0)).unwrap();
    close(&fv(&x), &[0.0, 1.0, 2.0, 9.0, 9.0, 9.0]);
    let t = x.t();
    assert!(!t.is_contiguous());
    t.index_put_scalar_(
        &[TensorIndex::Int(0), TensorIndex::Int(1)],
        Scalar::Float(-1.0),
    )
    .unwrap();
    assert_eq!(fv(&x)[3], -1.0);
    // x[:, 0] = 0 through the interpreter's setitem path
    x.index_put_scalar_(&[TensorIndex::full(), TensorIndex::Int(0)], Scalar::Int(0))
        .unwrap();
    close(&fv(&x), &[0.0, 1.0, 2.0, 0.0, 9.0, 9.0]);
    let v0 = x.version();
    x.add_(Operand::Scalar(Scalar::Float(1.0))).unwrap();
    assert!(x.version() > v0);
    assert!(row.shares_storage(&x));
    // reshape of non-contiguous copies; view refuses
    assert!(t.view(&[6]).is_err());
    assert_eq!(t.reshape(&[-1]).unwrap().shape(), &[6]);
    assert_eq!(x.unsqueeze(-1).unwrap().shape(), &[2, 3, 1]);
    assert_eq!(x.expand(&[4, 2, 3]).unwrap().shape(), &[4, 2, 3]);
    assert_eq!(x.flatten(0, -1).unwrap().shape(), &[6]);
    assert_eq!(x.repeat(&[2, 2]).unwrap().shape(), &[4, 6]);
    close(
        &fv(&f(&[1.0, 2.0], &[2]).repeat(&[2]).unwrap()),
        &[1.0, 2.0, 1.0, 2.0],
    );
    assert_eq!(x.size(-1).unwrap(), 3);
    assert_eq!(x.split(2, 1).unwrap().len(), 2);
    assert_eq!(cat(&[x.clone(), x.clone()], 1).unwrap().shape(), &[2, 6]);
}

#[test]
fn indexing_semantics() {
    let x = arange(Scalar::Int(0), Scalar::Int(24), Scalar::Int(1), None)
        .unwrap()
        .reshape(&[2, 3, 4])
        .unwrap();
    let s = |a: Option<i64>, b: Option<i64>, c: Option<i64>| TensorIndex::Slice {
        start: a,
        stop: b,
        step: c,
    };
    let y = x
        .index(&[TensorIndex::Ellipsis, TensorIndex::Int(-1)])
        .unwrap();
    assert_eq!(y.to_vec::<i64>().unwrap(), vec![3, 7, 11, 15, 19, 23]);
    let y = x
        .index(&[
            TensorIndex::Int(1),
            s(None, None, Some(2)),
            TensorIndex::NewAxis,
            s(Some(-2), None, None),
        ])
        .unwrap();
    assert_eq!(y.shape(), &[2, 1, 2]);
    assert_eq!(y.to_vec::<i64>().unwrap(), vec![14, 15, 22, 23]);
    // advanced: x[[0, 1], :, [1, 2]] -> adjacent? no (dims 0 and 2): batch dims first
    let ii = i(&[0, 1], &[2]);
    let jj = i(&[1, 2], &[2]);
    let y = x
        .index(&[
            TensorIndex::Indices(ii.clone()),
            TensorIndex::full(),
            TensorIndex::Indices(jj),
        ])
        .unwrap();
    assert_eq!(y.shape(), &[2, 3]);
    assert_eq!(y.to_vec::<i64>().unwrap(), vec![1, 5, 9, 14, 18, 22]);
    // embedding lookup
    let table = arange(Scalar::Int(0), Scalar::Int(6), Scalar::Int(1), None)
        .unwrap()
        .reshape(&[3, 2])
        .unwrap();
    let e = table
        .index(&[TensorIndex::Indices(i(&[2, 0, 2], &[3]))])
        .unwrap();
    assert_eq!(e.to_vec::<i64>().unwrap(), vec![4, 5, 0, 1, 4, 5]);
    // mask
    let m = ops::binary_scalar(BinaryOp::Gt, &table, Scalar::Int(2), false).unwrap();
    assert_eq!(
        table
            .index(&[TensorIndex::Mask(m)])
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![3, 4, 5]
    );
    // errors name the dim and size
    let e = x
        .index(&[TensorIndex::Int(0), TensorIndex::Int(5)])
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::IndexError);
    assert_eq!(
        e.message,
        "index 5 is out of bounds for dimension 1 with size 3"
    );
    let e = table
        .index(&[TensorIndex::Indices(i(&[3], &[1]))])
        .unwrap_err();
    assert_eq!(
        e.message,
        "index 3 is out of bounds for dimension 0 with size 3"
    );
    assert!(x.index(&vec![TensorIndex::Int(0); 4]).is_err());
    // gather / scatter_add / one_hot / masked_fill
    let g = f(&[1.0, 2.0, 3.0, 4.0], &[2, 2])
        .gather(1, &i(&[1, 0, 0, 0], &[2, 2]))
        .unwrap();
    close(&fv(&g), &[2.0, 1.0, 3.0, 3.0]);
    let sa = zeros(&[3], DType::F32)
        .unwrap()
        .scatter_add(0, &i(&[0, 2, 0], &[3]), &f(&[1.0, 2.0, 3.0], &[3]))
        .unwrap();
    close(&fv(&sa), &[4.0, 0.0, 2.0]);
    assert_eq!(
        one_hot(&i(&[0, 2], &[2]), 3)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![1, 0, 0, 0, 0, 1]
    );
    let mf = f(&[1.0, 2.0], &[2])
        .masked_fill(
            &from_bool(vec![false, true], &[2]).unwrap(),
            Scalar::Float(0.0),
        )
        .unwrap();
    close(&fv(&mf), &[1.0, 0.0]);
    // an int64 transposed view, masks broadcast along rows and along columns, a float
    // value cast to int (truncated); expected: torch's masked_fill of the same
    let xt = i(&(0..12).collect::<Vec<_>>(), &[3, 4]).t();
    let by_col = xt
        .masked_fill(
            &from_bool(vec![true, false, true], &[3]).unwrap(),
            Scalar::Int(-7),
        )
        .unwrap();
    assert_eq!(
        by_col.to_vec::<i64>().unwrap(),
        [-7, 4, -7, -7, 5, -7, -7, 6, -7, -7, 7, -7]
    );
    let by_row = xt
        .masked_fill(
            &from_bool(vec![true, false, false, true], &[4, 1]).unwrap(),
            Scalar::Float(2.9),
        )
        .unwrap();
    assert_eq!(
        by_row.to_vec::<i64>().unwrap(),
        [2, 2, 2, 1, 5, 9, 2, 6, 10, 2, 2, 2]
    );
    // advanced-index assignment
    let z = zeros(&[4], DType::I64).unwrap();
    z.index_put_(&[TensorIndex::Indices(i(&[1, 3], &[2]))], &i(&[7, 8], &[2]))
        .unwrap();
    assert_eq!(z.to_vec::<i64>().unwrap(), vec![0, 7, 0, 8]);
}

#[test]
fn matmul_conv_pool_values() {
    let a = f(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let b = f(&[1.0, 0.0, 0.0, 1.0, 1.0, 1.0], &[3, 2]);
    // [[1+3, 2+3], [4+6, 5+6]]
    close(&fv(&matmul(&a, &b).unwrap()), &[4.0, 5.0, 10.0, 11.0]);
    close(
        &fv(&matmul(&a.t(), &a).unwrap()),
        &[17.0, 22.0, 27.0, 22.0, 29.0, 36.0, 27.0, 36.0, 45.0],
    );
    assert_eq!(
        matmul(&a, &f(&[1.0, 1.0, 1.0], &[3])).unwrap().shape(),
        &[2]
    );
    let ia = i(&[1, 2, 3, 4], &[2, 2]);
    assert_eq!(
        matmul(&ia, &ia).unwrap().to_vec::<i64>().unwrap(),
        vec![7, 10, 15, 22]
    );
    // conv2d of a 3x3 image of ones with a 2x2 kernel of ones, padding 0 -> all 4
    let x = ones(&[1, 1, 3, 3], DType::F32).unwrap();
    let w = ones(&[1, 1, 2, 2], DType::F32).unwrap();
    let p = ConvParams {
        stride: (1, 1),
        padding: (0, 0),
        dilation: (1, 1),
    };
    close(&fv(&conv2d(&x, &w, None, p).unwrap()), &[4.0; 4]);
    let p1 = ConvParams {
        padding: (1, 1),
        ..p
    };
    let y = conv2d(&x, &w, None, p1).unwrap();
    assert_eq!(y.shape(), &[1, 1, 4, 4]);
    close(&fv(&y)[..4], &[1.0, 2.0, 2.0, 1.0]);
    let img = arange(
        Scalar::Int(0),
        Scalar::Int(16),
        Scalar::Int(1),
        Some(DType::F32),
    )
    .unwrap()
    .reshape(&[1, 1, 4, 4])
    .unwrap();
    let mp = max_pool2d(
        &img,
        PoolParams {
            kernel: (2, 2),
            stride: (2, 2),
            padding: (0, 0),
        },
    )
    .unwrap();
    close(&fv(&mp), &[5.0, 7.0, 13.0, 15.0]);
}

/// 2x2, stride-2 max pooling (its own fast loop) picks as PyTorch does: a NaN wins its
/// window (the last NaN's index), ties and all -inf windows keep the first element.
/// Expected: torch.nn.functional.max_pool2d(x, 2, 2, return_indices=True).
#[test]
fn max_pool_2x2_nan_ties_and_neg_inf() {
    let (n, inf) = (f32::NAN, f32::INFINITY);
    #[rustfmt::skip]
    let x = f(&[
        n, 1.0, 2.0, 2.0, -inf, -inf,
        n, 3.0, 2.0, 2.0, -inf, -inf,
        0.0, n, 5.0, -1.0, 7.0, 7.0,
        -0.0, n, 5.0, -inf, n, 7.0,
    ], &[1, 1, 4, 6]);
    let p = PoolParams {
        kernel: (2, 2),
        stride: (2, 2),
        padding: (0, 0),
    };
    let (y, idx) = max_pool2d_with_indices(&x, p).unwrap();
    assert_eq!(y.shape(), &[1, 1, 2, 3]);
    let got: Vec<String> = fv(&y).iter().map(|v| format!("{v}")).collect();
    assert_eq!(got, ["NaN", "2", "-inf", "NaN", "5", "NaN"]);
    assert_eq!(idx.to_vec::<i64>().unwrap(), [6, 2, 4, 19, 14, 22]);
}

/// The expected texts are PyTorch 2.15's `str()` of the same tensors.
#[test]
fn printing() {
    assert_eq!(f(&[1.0, 2.5], &[2]).to_string(), "tensor([1.0000, 2.5000])");
    assert_eq!(
        i(&[1, 2, 3, 4], &[2, 2]).to_string(),
        "tensor([[1, 2],\n        [3, 4]])"
    );
    assert_eq!(
        from_bool(vec![true], &[]).unwrap().to_string(),
        "tensor(True)"
    );
    assert_eq!(
        f(&[1.0 / 3.0, 2.0], &[2]).to_string(),
        "tensor([0.3333, 2.0000])"
    );
    assert_eq!(
        i(&[1, 10, 3, 4], &[2, 2]).to_string(),
        "tensor([[ 1, 10],\n        [ 3,  4]])"
    );
    assert_eq!(
        f(&[1e10, 1.0], &[2]).to_string(),
        "tensor([1.0000e+10, 1.0000e+00])"
    );
    let r = f(&[1.0], &[1]);
    r.set_requires_grad(true).unwrap();
    assert_eq!(r.to_string(), "tensor([1.], requires_grad=True)");
    assert_eq!(zeros(&[0], DType::F32).unwrap().to_string(), "tensor([])");
    assert_eq!(
        zeros(&[0], DType::I64).unwrap().to_string(),
        "tensor([], dtype=torch.int64)"
    );
    let big = arange(Scalar::Int(0), Scalar::Int(2000), Scalar::Int(1), None).unwrap();
    assert_eq!(
        big.to_string(),
        "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"
    );
    let m = arange(Scalar::Int(0), Scalar::Int(2000), Scalar::Int(1), None)
        .unwrap()
        .reshape(&[40, 50])
        .unwrap();
    let s = m.to_string();
    assert!(
        s.starts_with("tensor([[   0,    1,    2,  ...,   47,   48,   49],\n        [  50,"),
        "{s}"
    );
    assert!(s.contains("        ...,\n"), "{s}");
    assert_eq!(
        f(&[-0.5, f32::NAN, f32::INFINITY], &[3]).to_string(),
        "tensor([-0.5000,     nan,     inf])"
    );
}

#[test]
fn creation_and_conversion() {
    assert_eq!(
        eye(2, Some(3), DType::F32)
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    );
    close(
        &fv(&linspace(0.0, 1.0, 5).unwrap()),
        &[0.0, 0.25, 0.5, 0.75, 1.0],
    );
    let a = arange(
        Scalar::Float(0.0),
        Scalar::Float(1.0),
        Scalar::Float(0.3),
        None,
    )
    .unwrap();
    assert_eq!(a.dtype(), DType::F32);
    assert_eq!(a.numel(), 4);
    assert_eq!(
        full(&[2], Scalar::Float(1.5), None).unwrap().dtype(),
        DType::F32
    );
    assert_eq!(
        f(&[2.7], &[1]).item().unwrap(),
        Scalar::Float(2.700_000_047_683_716)
    );
    assert_eq!(
        f(&[2.7, -2.7], &[2])
            .cast(DType::I64)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![2, -2]
    );
    let e = f(&[1.0, 2.0], &[2]).item().unwrap_err();
    assert_eq!(e.kind, ErrorKind::RuntimeError);
    use kiln::tensor::convert::TensorList as L;
    assert_eq!(
        i(&[1, 2], &[1, 2]).tolist().unwrap(),
        L::List(vec![L::List(vec![
            L::Scalar(Scalar::Int(1)),
            L::Scalar(Scalar::Int(2))
        ])])
    );
    assert!(i(&[1], &[1]).set_requires_grad(true).is_err());
}

#[test]
fn random_is_reproducible() {
    manual_seed(42);
    let a = randn(&[5], DType::F32).unwrap().to_vec::<f32>().unwrap();
    let r = randint(0, 10, &[100], DType::I64)
        .unwrap()
        .to_vec::<i64>()
        .unwrap();
    manual_seed(42);
    assert_eq!(randn(&[5], DType::F32).unwrap().to_vec::<f32>().unwrap(), a);
    assert_eq!(
        randint(0, 10, &[100], DType::I64)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        r
    );
    assert!(r.iter().all(|&v| (0..10).contains(&v)));
    assert!(r.contains(&0) && r.contains(&9));
    manual_seed(43);
    assert_ne!(randn(&[5], DType::F32).unwrap().to_vec::<f32>().unwrap(), a);
    // randn over many draws: mean ~0, var ~1
    manual_seed(0);
    let big = randn(&[20000], DType::F32).unwrap();
    assert!(big.mean(&[], false).unwrap().to_vec::<f32>().unwrap()[0].abs() < 0.03);
    assert!(
        (big.var_std(&[], 1.0, false, false)
            .unwrap()
            .to_vec::<f32>()
            .unwrap()[0]
            - 1.0)
            .abs()
            < 0.05
    );
}

#[test]
fn memory_errors() {
    let e = zeros(&[usize::MAX / 2, 4], DType::F32).unwrap_err();
    assert_eq!(e.kind, ErrorKind::MemoryError);
    let e = zeros(&[1 << 20, 1 << 20], DType::F32).unwrap_err(); // 4 TiB > 16 GiB cap
    assert_eq!(e.kind, ErrorKind::MemoryError);
    let big = ones(&[1 << 16], DType::F32).unwrap();
    let e = big
        .expand(&[1 << 17, 1 << 16])
        .unwrap()
        .contiguous()
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::MemoryError);
    set_max_alloc_bytes(kiln::tensor::storage::DEFAULT_MAX_BYTES);
}
