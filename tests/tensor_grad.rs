//! Finite-difference gradient checks for every differentiable tensor op (including
//! broadcasting and non-contiguous inputs), plus autograd semantics.

use kiln::autograd::{backward, no_grad};
use kiln::ops::{self, BinaryOp, UnaryOp};
use kiln::tensor::creation::{from_f32, from_i64, rand, randn};
use kiln::tensor::dtype::{DType, Scalar};
use kiln::tensor::indexing::TensorIndex;
use kiln::tensor::inplace::Operand;
use kiln::tensor::kernels::conv::{ConvParams, PoolParams};
use kiln::tensor::linalg;
use kiln::tensor::random::manual_seed;
use kiln::tensor::views::{cat, stack};
use kiln::{ErrorKind, Result, Tensor};

type F = dyn Fn(&[Tensor]) -> Result<Tensor>;

/// Fixed weights so the scalar loss sum(out * w) exercises every output element.
fn weights(shape: &[usize]) -> Vec<f64> {
    let n: usize = shape.iter().product();
    (0..n)
        .map(|i| 0.3 + ((i * 7919) % 13) as f64 / 10.0)
        .collect()
}

fn loss64(out: &Tensor) -> f64 {
    let w = weights(out.shape());
    let v = out.to_f32_vec().unwrap();
    v.iter().zip(&w).map(|(&a, &b)| f64::from(a) * b).sum()
}

/// Compare autograd gradients of sum(f(xs) * w) with central differences.
fn gradcheck(name: &str, xs: &[Tensor], f: &F) {
    let leaves: Vec<Tensor> = xs
        .iter()
        .map(|x| {
            let l = x.contiguous_copy().unwrap();
            l.set_requires_grad(true).unwrap();
            l
        })
        .collect();
    let out = f(&leaves).unwrap();
    let w = from_f32(
        weights(out.shape()).iter().map(|&v| v as f32).collect(),
        out.shape(),
    )
    .unwrap();
    let loss = out.mul(&w).unwrap().sum(&[], false).unwrap();
    backward(&loss, None, false).unwrap();
    let eps = 1e-3f32;
    for (k, leaf) in leaves.iter().enumerate() {
        let g = leaf
            .grad()
            .unwrap_or_else(|| panic!("{name}: input {k} got no grad"));
        assert_eq!(g.shape(), leaf.shape(), "{name}: grad shape");
        let ga = g.to_f32_vec().unwrap();
        let base = leaf.to_f32_vec().unwrap();
        for i in 0..base.len() {
            let eval = |delta: f32| {
                let _ng = no_grad();
                let mut v = base.clone();
                v[i] += delta;
                let mut inputs: Vec<Tensor> = leaves.iter().map(|l| l.detach()).collect();
                inputs[k] = from_f32(v, leaf.shape()).unwrap();
                loss64(&f(&inputs).unwrap())
            };
            let num = (eval(eps) - eval(-eps)) / (2.0 * f64::from(eps));
            let ana = f64::from(ga[i]);
            assert!(
                (num - ana).abs() <= 1e-2 * (1.0 + num.abs()),
                "{name}: input {k} element {i}: analytic {ana} vs numeric {num}"
            );
        }
    }
}

fn rn(shape: &[usize]) -> Tensor {
    randn(shape, DType::F32).unwrap()
}

/// Positive inputs in [0.5, 1.5).
fn pos(shape: &[usize]) -> Tensor {
    rand(shape, DType::F32).unwrap().add_s(0.5).unwrap()
}

#[test]
fn grad_binary_ops_with_broadcasting() {
    manual_seed(1);
    for op in [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Maximum,
        BinaryOp::Minimum,
    ] {
        gradcheck(op.name(), &[rn(&[2, 3]), pos(&[3])], &move |x| {
            ops::binary(op, &x[0], &x[1])
        });
        gradcheck(op.name(), &[rn(&[4, 1]), pos(&[1, 3])], &move |x| {
            ops::binary(op, &x[0], &x[1])
        });
    }
    gradcheck("pow", &[pos(&[2, 3]), rn(&[2, 3])], &|x| {
        ops::binary(BinaryOp::Pow, &x[0], &x[1])
    });
    gradcheck("remainder", &[pos(&[5]).mul_s(3.0).unwrap()], &|x| {
        ops::binary_scalar(BinaryOp::Rem, &x[0], Scalar::Float(0.7), false)
    });
}

#[test]
fn grad_scalar_ops_and_reversed() {
    manual_seed(2);
    gradcheck("x*2+1", &[rn(&[5])], &|x| x[0].mul_s(2.0)?.add_s(1.0));
    gradcheck("1-x", &[rn(&[5])], &|x| x[0].rsub_s(1.0));
    gradcheck("2/x", &[pos(&[5])], &|x| {
        ops::binary_scalar(BinaryOp::Div, &x[0], Scalar::Float(2.0), true)
    });
    gradcheck("x**3", &[rn(&[5])], &|x| x[0].pow_s(3.0));
    gradcheck("2**x", &[rn(&[5])], &|x| {
        ops::binary_scalar(BinaryOp::Pow, &x[0], Scalar::Float(2.0), true)
    });
}

#[test]
fn grad_unary_ops() {
    manual_seed(3);
    use UnaryOp::*;
    for op in [
        Neg, Exp, Sin, Cos, Tanh, Sigmoid, Relu, Gelu, GeluTanh, Silu, Softplus, Abs, Erf,
    ] {
        gradcheck(op.name(), &[rn(&[3, 4])], &move |x| ops::unary(op, &x[0]));
    }
    for op in [Log, Sqrt, Rsqrt] {
        gradcheck(op.name(), &[pos(&[3, 4])], &move |x| ops::unary(op, &x[0]));
    }
    // non-contiguous input: the op sees a transposed view
    gradcheck("tanh(x.T)", &[rn(&[3, 4])], &|x| {
        ops::unary(Tanh, &x[0].t())
    });
    gradcheck("exp(x[:, ::2])", &[rn(&[3, 4])], &|x| {
        let v = x[0].index(&[
            TensorIndex::full(),
            TensorIndex::Slice {
                start: None,
                stop: None,
                step: Some(2),
            },
        ])?;
        ops::unary(Exp, &v)
    });
}

#[test]
fn grad_clamp_where() {
    manual_seed(4);
    gradcheck("clamp", &[rn(&[10])], &|x| {
        ops::clamp(&x[0], Some(-0.5), Some(0.5))
    });
    gradcheck("where", &[rn(&[2, 3]), rn(&[3])], &|x| {
        let c = x[0].cmp_s(BinaryOp::Gt, 0.0)?;
        ops::where_(&c, &x[0], &x[1])
    });
}

#[test]
fn grad_reductions() {
    manual_seed(5);
    let x = || rn(&[3, 4]);
    gradcheck("sum", &[x()], &|x| x[0].sum(&[], false));
    gradcheck("sum dim1", &[x()], &|x| x[0].sum(&[1], false));
    gradcheck("sum dim0 keep", &[x()], &|x| x[0].sum(&[0], true));
    gradcheck("mean dims", &[rn(&[2, 3, 4])], &|x| {
        x[0].mean(&[0, -1], false)
    });
    gradcheck("max dim", &[x()], &|x| {
        Ok(x[0].extreme_dim(1, false, false)?.0)
    });
    gradcheck("min dim keep", &[x()], &|x| {
        Ok(x[0].extreme_dim(0, true, true)?.0)
    });
    gradcheck("max all", &[x()], &|x| x[0].extreme_all(false));
    gradcheck("var", &[x()], &|x| x[0].var_std(&[1], 1.0, false, false));
    gradcheck("std", &[x()], &|x| x[0].var_std(&[], 1.0, false, true));
    gradcheck("var pop", &[x()], &|x| x[0].var_std(&[0], 0.0, true, false));
    gradcheck("prod", &[x()], &|x| x[0].prod(&[1], false));
    gradcheck("prod all", &[rn(&[5])], &|x| x[0].prod(&[], false));
    gradcheck("logsumexp", &[x()], &|x| x[0].logsumexp(&[1], false));
    gradcheck("softmax", &[x()], &|x| x[0].softmax(1));
    gradcheck("softmax dim0", &[x()], &|x| x[0].softmax(0));
    gradcheck("log_softmax", &[x()], &|x| x[0].log_softmax(-1));
    gradcheck("cumsum", &[x()], &|x| x[0].cumsum(1));
    gradcheck("cumsum0", &[x()], &|x| x[0].cumsum(0));
    gradcheck("norm", &[x()], &|x| x[0].norm(2.0, &[], false));
    gradcheck("norm dim p3", &[x()], &|x| x[0].norm(3.0, &[1], false));
    gradcheck("softmax(x.T)", &[x()], &|x| x[0].t().softmax(1));
}

#[test]
fn grad_shape_ops() {
    manual_seed(6);
    gradcheck("reshape", &[rn(&[2, 6])], &|x| {
        x[0].reshape(&[3, -1])?.mul_s(2.0)
    });
    gradcheck("transpose", &[rn(&[2, 3])], &|x| {
        x[0].transpose(0, 1)?.mul(&x[0].t())
    });
    gradcheck("permute", &[rn(&[2, 3, 4])], &|x| {
        x[0].permute(&[2, 0, 1])?.contiguous()
    });
    gradcheck("expand", &[rn(&[3, 1])], &|x| x[0].expand(&[2, 3, 4]));
    gradcheck("squeeze/unsqueeze", &[rn(&[3, 1])], &|x| {
        x[0].squeeze(None)?.unsqueeze(0)
    });
    gradcheck("flatten", &[rn(&[2, 3, 2])], &|x| {
        x[0].transpose(0, 2)?.flatten(0, -1)
    });
    gradcheck("narrow", &[rn(&[4, 3])], &|x| x[0].narrow(0, 1, 2));
    gradcheck("cat", &[rn(&[2, 3]), rn(&[1, 3])], &|x| {
        cat(&[x[0].clone(), x[1].clone()], 0)
    });
    gradcheck("stack", &[rn(&[2, 3]), rn(&[2, 3])], &|x| {
        stack(&[x[0].clone(), x[1].clone()], 1)
    });
    gradcheck("split", &[rn(&[5, 2])], &|x| {
        let p = x[0].split(2, 0)?;
        p[0].mul(&p[1])?.sum(&[], true)?.add(&p[2].sum(&[], false)?)
    });
    gradcheck("chunk", &[rn(&[2, 6])], &|x| {
        let p = x[0].chunk(3, 1)?;
        p[0].mul(&p[2])
    });
    gradcheck("repeat", &[rn(&[2, 3])], &|x| x[0].repeat(&[2, 1, 2]));
}

#[test]
fn grad_indexing() {
    manual_seed(7);
    let idx = from_i64(vec![2, 0, 2], &[3]).unwrap();
    gradcheck("int+slice", &[rn(&[4, 5])], &|x| {
        x[0].index(&[
            TensorIndex::Int(1),
            TensorIndex::Slice {
                start: Some(1),
                stop: None,
                step: Some(2),
            },
        ])
    });
    let i2 = idx.clone();
    gradcheck("advanced (repeated)", &[rn(&[4, 5])], &move |x| {
        x[0].index(&[TensorIndex::Indices(i2.clone())])
    });
    let i3 = idx.clone();
    gradcheck("advanced dim1", &[rn(&[2, 4])], &move |x| {
        x[0].index(&[TensorIndex::full(), TensorIndex::Indices(i3.clone())])
    });
    gradcheck("mask", &[rn(&[3, 4])], &|x| {
        let m = x[0].cmp_s(BinaryOp::Gt, 0.0)?;
        x[0].index(&[TensorIndex::Mask(m)])
    });
    let i4 = idx.clone();
    gradcheck("index_select", &[rn(&[3, 4])], &move |x| {
        x[0].index_select(0, &i4)
    });
    let gi = from_i64(vec![0, 2, 1, 1, 0, 0], &[2, 3]).unwrap();
    let g2 = gi.clone();
    gradcheck("gather", &[rn(&[2, 3])], &move |x| x[0].gather(1, &g2));
    let g3 = gi.clone();
    gradcheck("scatter_add", &[rn(&[2, 3]), rn(&[2, 4])], &move |x| {
        x[0].scatter_add(1, &g3, &x[1])
    });
    gradcheck("masked_fill", &[rn(&[3, 4])], &|x| {
        let m = x[0].cmp_s(BinaryOp::Lt, 0.0)?;
        x[0].masked_fill(&m, Scalar::Float(0.5))
    });
    gradcheck("index_put", &[rn(&[3, 4]), rn(&[4])], &|x| {
        let y = x[0].mul_s(1.0)?;
        y.index_put_(&[TensorIndex::Int(1)], &x[1])?;
        y.mul(&y)
    });
    gradcheck("slice assign", &[rn(&[3, 4])], &|x| {
        let y = x[0].mul_s(2.0)?;
        y.index_put_scalar_(
            &[TensorIndex::full(), TensorIndex::Int(0)],
            Scalar::Float(0.0),
        )?;
        y.exp()
    });
}

trait ExpExt {
    fn exp(&self) -> Result<Tensor>;
}
impl ExpExt for Tensor {
    fn exp(&self) -> Result<Tensor> {
        ops::unary(UnaryOp::Exp, self)
    }
}

#[test]
fn grad_matmul_family() {
    manual_seed(8);
    gradcheck("mm", &[rn(&[3, 4]), rn(&[4, 2])], &|x| {
        linalg::matmul(&x[0], &x[1])
    });
    gradcheck("mm transposed", &[rn(&[4, 3]), rn(&[2, 4])], &|x| {
        linalg::matmul(&x[0].t(), &x[1].t())
    });
    gradcheck("bmm broadcast", &[rn(&[2, 3, 4]), rn(&[4, 2])], &|x| {
        linalg::matmul(&x[0], &x[1])
    });
    gradcheck(
        "bmm batch bcast",
        &[rn(&[2, 1, 2, 3]), rn(&[3, 3, 2])],
        &|x| linalg::matmul(&x[0], &x[1]),
    );
    gradcheck("mv", &[rn(&[3, 4]), rn(&[4])], &|x| {
        linalg::matmul(&x[0], &x[1])
    });
    gradcheck("vm", &[rn(&[4]), rn(&[4, 2])], &|x| {
        linalg::matmul(&x[0], &x[1])
    });
    gradcheck("dot", &[rn(&[4]), rn(&[4])], &|x| linalg::dot(&x[0], &x[1]));
    gradcheck("outer", &[rn(&[3]), rn(&[2])], &|x| {
        linalg::outer(&x[0], &x[1])
    });
}

#[test]
fn grad_conv_pool() {
    manual_seed(9);
    let p = ConvParams {
        stride: (1, 2),
        padding: (1, 0),
        dilation: (1, 1),
    };
    gradcheck(
        "conv2d",
        &[rn(&[2, 2, 4, 5]), rn(&[3, 2, 3, 2]), rn(&[3])],
        &move |x| linalg::conv2d(&x[0], &x[1], Some(&x[2]), p),
    );
    let pd = ConvParams {
        stride: (1, 1),
        padding: (2, 1),
        dilation: (2, 2),
    };
    gradcheck(
        "conv2d dilated",
        &[rn(&[1, 1, 5, 5]), rn(&[2, 1, 2, 2])],
        &move |x| linalg::conv2d(&x[0], &x[1], None, pd),
    );
    gradcheck("conv1d", &[rn(&[2, 2, 6]), rn(&[3, 2, 3])], &|x| {
        linalg::conv1d(&x[0], &x[1], None, 2, 1, 1)
    });
    let pp = PoolParams {
        kernel: (2, 2),
        stride: (2, 1),
        padding: (1, 0),
    };
    gradcheck("max_pool2d", &[rn(&[1, 2, 4, 4])], &move |x| {
        linalg::max_pool2d(&x[0], pp)
    });
    gradcheck("avg_pool2d", &[rn(&[2, 1, 4, 5])], &move |x| {
        linalg::avg_pool2d(&x[0], pp)
    });
}

#[test]
fn grad_accumulates_and_leaf_rules() {
    let x = from_f32(vec![1.0, 2.0, 3.0], &[3]).unwrap();
    x.set_requires_grad(true).unwrap();
    // y = sum(x * x): dy/dx = 2x
    for _ in 0..2 {
        let y = x.mul(&x).unwrap().sum(&[], false).unwrap();
        backward(&y, None, false).unwrap();
    }
    // accumulated twice: 4x
    assert_eq!(
        x.grad().unwrap().to_vec::<f32>().unwrap(),
        vec![4.0, 8.0, 12.0]
    );
    let y = x.mul_s(3.0).unwrap();
    assert!(y.grad().is_none(), "non-leaf .grad is None");
    assert!(!y.is_leaf());
    x.set_grad(None);
    let d = x.detach();
    assert!(!d.requires_grad());
    // leaf in-place while grad mode on is an error
    let e = x.add_(Operand::Scalar(Scalar::Float(1.0))).unwrap_err();
    assert_eq!(e.kind, ErrorKind::RuntimeError);
    // under no_grad it is allowed (optimizer step)
    {
        let _g = no_grad();
        x.sub_(Operand::Scalar(Scalar::Float(1.0))).unwrap();
        let z = x.mul_s(2.0).unwrap();
        assert!(!z.requires_grad(), "no_grad records nothing");
    }
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![0.0, 1.0, 2.0]);
}

#[test]
fn backward_errors() {
    let x = from_f32(vec![1.0, 2.0], &[2]).unwrap();
    x.set_requires_grad(true).unwrap();
    let y = x.mul(&x).unwrap();
    let e = backward(&y, None, false).unwrap_err();
    assert_eq!(
        e.message,
        "grad can be implicitly created only for scalar outputs"
    );
    let s = y.sum(&[], false).unwrap();
    backward(&s, None, true).unwrap();
    backward(&s, None, false).unwrap(); // retained once
    let e = backward(&s, None, false).unwrap_err();
    assert_eq!(e.kind, ErrorKind::RuntimeError);
    assert!(e
        .message
        .starts_with("Trying to backward through the graph a second time"));
    // version check: exp saves its output; modifying it in place breaks backward
    let h = x.mul_s(1.0).unwrap();
    let ex = ops::unary(UnaryOp::Exp, &h).unwrap();
    let loss = ex.sum(&[], false).unwrap();
    {
        let _g = no_grad();
        ex.mul_(Operand::Scalar(Scalar::Float(2.0))).unwrap();
    }
    let e = backward(&loss, None, false).unwrap_err();
    assert_eq!(e.kind, ErrorKind::RuntimeError);
    assert!(
        e.message.contains("modified by an inplace operation"),
        "{}",
        e.message
    );
    // backward with an explicit gradient
    x.set_grad(None);
    let y = x.mul_s(3.0).unwrap();
    backward(&y, Some(from_f32(vec![1.0, 10.0], &[2]).unwrap()), false).unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![3.0, 30.0]);
}

#[test]
fn hand_derived_grads() {
    // f(a, b) = sum(a @ b) with a = [[1, 2], [3, 4]], b = I: df/da[i][k] = sum_j b[k][j] = 1;
    // df/db[k][j] = sum_i a[i][k] = column sums of a = [4, 6] per row k.
    let a = from_f32(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    let b = kiln::tensor::creation::eye(2, None, DType::F32).unwrap();
    a.set_requires_grad(true).unwrap();
    b.set_requires_grad(true).unwrap();
    let f = linalg::matmul(&a, &b).unwrap().sum(&[], false).unwrap();
    backward(&f, None, false).unwrap();
    assert_eq!(a.grad().unwrap().to_vec::<f32>().unwrap(), vec![1.0; 4]);
    assert_eq!(
        b.grad().unwrap().to_vec::<f32>().unwrap(),
        vec![4.0, 4.0, 6.0, 6.0]
    );
    // softmax of equal logits is uniform; d sum(softmax * [1,0]) / dx = p0(1 - p0), -p0 p1
    // = [0.25, -0.25] at x = [0, 0].
    let x = from_f32(vec![0.0, 0.0], &[2]).unwrap();
    x.set_requires_grad(true).unwrap();
    let y = x
        .softmax(0)
        .unwrap()
        .mul(&from_f32(vec![1.0, 0.0], &[2]).unwrap())
        .unwrap()
        .sum(&[], false)
        .unwrap();
    backward(&y, None, false).unwrap();
    assert_eq!(
        x.grad().unwrap().to_vec::<f32>().unwrap(),
        vec![0.25, -0.25]
    );
    // broadcasting: x [3] + y [2, 3]; d sum / dx = 2 (summed over the broadcast dim)
    let x = from_f32(vec![1.0, 2.0, 3.0], &[3]).unwrap();
    x.set_requires_grad(true).unwrap();
    let y = rn(&[2, 3]);
    let s = x.add(&y).unwrap().sum(&[], false).unwrap();
    backward(&s, None, false).unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), vec![2.0; 3]);
}

/// The table ops with no older test: `Recip` (kernel-only, no surface name) and `log1p`.
#[test]
fn grad_recip_and_log1p() {
    manual_seed(31);
    for op in [UnaryOp::Recip, UnaryOp::Log1p] {
        gradcheck(op.name(), &[pos(&[3, 4])], &move |x| ops::unary(op, &x[0]));
    }
    let x = from_f32(vec![2.0, -0.5, 0.0], &[3]).unwrap();
    let r = ops::unary(UnaryOp::Recip, &x)
        .unwrap()
        .to_f32_vec()
        .unwrap();
    assert_eq!(r, [0.5, -2.0, f32::INFINITY]);
}

/// Uniform in [-0.9, 0.9).
fn unit(shape: &[usize]) -> Tensor {
    rand(shape, DType::F32)
        .unwrap()
        .mul_s(1.8)
        .unwrap()
        .add_s(-0.9)
        .unwrap()
}

fn idx(v: Vec<i64>, shape: &[usize]) -> Tensor {
    from_i64(v, shape).unwrap()
}

/// Issue 22's ops: the new op-table rows and the composites of ops/more.rs and
/// ops/shape_more.rs, each against central differences.
#[test]
fn grad_api_breadth_ops() {
    use kiln::ops::{more, shape_more as sm};
    use UnaryOp::*;
    manual_seed(22);
    for op in [
        Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Exp2, Expm1, Square, Erfc, Frac, Recip,
    ] {
        let x = if op == Recip {
            pos(&[3, 4])
        } else {
            unit(&[3, 4])
        };
        gradcheck(op.name(), &[x], &move |x| ops::unary(op, &x[0]));
    }
    for op in [Log2, Log10] {
        gradcheck(op.name(), &[pos(&[3, 4])], &move |x| ops::unary(op, &x[0]));
    }
    let table: Vec<(&str, Vec<Tensor>, Box<F>)> = vec![
        (
            "fmod",
            vec![rn(&[2, 3]).mul_s(3.0).unwrap(), pos(&[3])],
            Box::new(|x| more::fmod(&x[0], &x[1])),
        ),
        (
            "atan2",
            vec![rn(&[2, 3]), rn(&[2, 3])],
            Box::new(|x| more::atan2(&x[0], &x[1])),
        ),
        (
            "hypot",
            vec![rn(&[4]), rn(&[4])],
            Box::new(|x| more::hypot(&x[0], &x[1])),
        ),
        (
            "lerp",
            vec![rn(&[2, 3]), rn(&[2, 3]), rn(&[3])],
            Box::new(|x| more::lerp(&x[0], &x[1], &x[2])),
        ),
        (
            "logit",
            vec![rand(&[5], DType::F32)
                .unwrap()
                .mul_s(0.8)
                .unwrap()
                .add_s(0.1)
                .unwrap()],
            Box::new(|x| more::logit(&x[0], None)),
        ),
        (
            "amax",
            vec![rn(&[3, 4])],
            Box::new(|x| more::amax(&x[0], &[1], false, false)),
        ),
        (
            "amin all",
            vec![rn(&[3, 4])],
            Box::new(|x| more::amax(&x[0], &[], true, true)),
        ),
        (
            "cumprod",
            vec![unit(&[3, 4])],
            Box::new(|x| more::cumprod(&x[0], 1)),
        ),
        (
            "logcumsumexp",
            vec![rn(&[3, 4])],
            Box::new(|x| more::logcumsumexp(&x[0], -1)),
        ),
        (
            "cummax",
            vec![rn(&[3, 4])],
            Box::new(|x| Ok(more::cumextreme(&x[0], 1, false)?.0)),
        ),
        (
            "sort",
            vec![rn(&[3, 4])],
            Box::new(|x| Ok(more::sort(&x[0], 1, true)?.0)),
        ),
        (
            "topk",
            vec![rn(&[3, 5])],
            Box::new(|x| Ok(more::topk(&x[0], 2, -1, true)?.0)),
        ),
        (
            "kthvalue",
            vec![rn(&[3, 5])],
            Box::new(|x| Ok(more::kthvalue(&x[0], 2, 1, false)?.0)),
        ),
        (
            "median",
            vec![rn(&[4, 5])],
            Box::new(|x| Ok(more::median_dim(&x[0], 0, true)?.0)),
        ),
        (
            "quantile",
            vec![rn(&[7])],
            Box::new(|x| more::quantile(&x[0], &[0.3, 0.5], false, None, false)),
        ),
        (
            "flip",
            vec![rn(&[3, 4])],
            Box::new(|x| sm::flip(&x[0], &[0, 1])),
        ),
        (
            "roll",
            vec![rn(&[3, 4])],
            Box::new(|x| sm::roll(&x[0], &[1, -2], &[0, 1])),
        ),
        (
            "repeat_interleave",
            vec![rn(&[3, 2])],
            Box::new(|x| sm::repeat_interleave(&x[0], &[1, 0, 3], Some(0))),
        ),
        (
            "tile",
            vec![rn(&[2, 3])],
            Box::new(|x| sm::tile(&x[0], &[2, 1, 2])),
        ),
        (
            "tril",
            vec![rn(&[3, 4])],
            Box::new(|x| sm::triangle(&x[0], -1, false)),
        ),
        (
            "triu",
            vec![rn(&[2, 3, 3])],
            Box::new(|x| sm::triangle(&x[0], 1, true)),
        ),
        ("diag 1d", vec![rn(&[3])], Box::new(|x| sm::diag(&x[0], 1))),
        (
            "diagonal",
            vec![rn(&[2, 3, 4])],
            Box::new(|x| sm::diagonal(&x[0], -1, 1, 2)),
        ),
        (
            "diag_embed",
            vec![rn(&[2, 3])],
            Box::new(|x| sm::diag_embed(&x[0], 0)),
        ),
        ("trace", vec![rn(&[3, 3])], Box::new(|x| sm::trace(&x[0]))),
        (
            "take",
            vec![rn(&[3, 4])],
            Box::new(|x| sm::take(&x[0], &idx(vec![0, 5, 11, 5], &[2, 2]))),
        ),
        (
            "take_along_dim",
            vec![rn(&[3, 4])],
            Box::new(|x| sm::take_along_dim(&x[0], &idx(vec![3, 0, 1], &[3, 1]), Some(1))),
        ),
        (
            "masked_select",
            vec![rn(&[2, 3])],
            Box::new(|x| {
                let m = kiln::tensor::creation::from_bool(
                    vec![true, false, true, true, false, true],
                    &[2, 3],
                )?;
                sm::masked_select(&x[0], &m)
            }),
        ),
        (
            "scatter",
            vec![rn(&[3, 4]), rn(&[2, 4])],
            Box::new(|x| sm::scatter(&x[0], 0, &idx(vec![2, 0, 1, 2, 0, 1, 2, 0], &[2, 4]), &x[1])),
        ),
        (
            "index_add",
            vec![rn(&[4, 3]), rn(&[2, 3])],
            Box::new(|x| sm::index_add(&x[0], 0, &idx(vec![3, 1], &[2]), &x[1], 2.0)),
        ),
        (
            "bmm",
            vec![rn(&[2, 3, 4]), rn(&[2, 4, 2])],
            Box::new(|x| sm::bmm(&x[0], &x[1])),
        ),
        (
            "tensordot",
            vec![rn(&[2, 3, 4]), rn(&[4, 3, 2])],
            Box::new(|x| sm::tensordot(&x[0], &x[1], &[1, 2], &[1, 0])),
        ),
        (
            "kron",
            vec![rn(&[2, 2]), rn(&[2, 3])],
            Box::new(|x| sm::kron(&x[0], &x[1])),
        ),
        (
            "cross",
            vec![rn(&[2, 3]), rn(&[2, 3])],
            Box::new(|x| sm::cross(&x[0], &x[1], Some(1))),
        ),
        (
            "cdist",
            vec![rn(&[3, 2]), rn(&[4, 2])],
            Box::new(|x| sm::cdist(&x[0], &x[1], 2.0)),
        ),
        (
            "einsum ij,jk",
            vec![rn(&[2, 3]), rn(&[3, 4])],
            Box::new(|x| kiln::ops::einsum::einsum("ij,jk->ik", x)),
        ),
        (
            "einsum attn",
            vec![rn(&[2, 2, 3, 4]), rn(&[2, 2, 5, 4])],
            Box::new(|x| kiln::ops::einsum::einsum("bhqd,bhkd->bhqk", x)),
        ),
        (
            "einsum ii->i",
            vec![rn(&[3, 3])],
            Box::new(|x| kiln::ops::einsum::einsum("ii->i", x)),
        ),
        (
            "einsum outer sum",
            vec![rn(&[3]), rn(&[4]), rn(&[4, 2])],
            Box::new(|x| kiln::ops::einsum::einsum("i,j,jk->ik", x)),
        ),
    ];
    for (name, xs, f) in &table {
        gradcheck(name, xs, f.as_ref());
    }
}

/// Higher-order and float64 gradient checks (issue 22).
#[path = "tensor_grad/higher.rs"]
mod higher;
