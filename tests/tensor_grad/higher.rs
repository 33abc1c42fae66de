//! Gradients of gradients (`create_graph`) and float64 graphs against central
//! differences.

use super::*;

/// Second derivatives (`create_graph`) against central differences of the first:
/// with g(x) = d sum(f(x) * w) / dx from a create-graph sweep, the backward of
/// sum(g * v) is H v, and (H v)_i = d (g . v) / dx_i (H symmetric) is differenced from
/// first-order gradients at x +- eps e_i.
#[test]
fn second_derivatives_match_finite_differences() {
    use kiln::autograd::{grad_wrt, no_hooks, Sweep};
    let first = |x: &Tensor, f: &F, create_graph: bool| -> Tensor {
        let out = f(std::slice::from_ref(x)).unwrap();
        let w: Vec<f32> = weights(out.shape()).iter().map(|&v| v as f32).collect();
        let loss = out.mul(&from_f32(w, out.shape()).unwrap()).unwrap();
        let loss = loss.sum(&[], false).unwrap();
        let sweep = Sweep {
            retain_graph: create_graph,
            create_graph,
        };
        let g = grad_wrt(&loss, None, std::slice::from_ref(x), sweep, &mut no_hooks);
        g.unwrap().remove(0).expect("x is used")
    };
    manual_seed(5);
    let w = rn(&[3, 4]);
    let cases: Vec<(&str, Tensor, Box<F>)> = vec![
        ("tanh", rn(&[5]), Box::new(|x| x[0].un(UnaryOp::Tanh))),
        ("sigmoid", rn(&[5]), Box::new(|x| x[0].un(UnaryOp::Sigmoid))),
        ("log", pos(&[5]), Box::new(|x| x[0].un(UnaryOp::Log))),
        ("pow", pos(&[5]), Box::new(|x| x[0].pow_s(3.5))),
        (
            "div",
            pos(&[5]),
            Box::new(|x| x[0].mul(&x[0])?.div(&x[0].add_s(1.0)?)),
        ),
        ("softmax", rn(&[2, 4]), Box::new(|x| x[0].softmax(1))),
        (
            "matmul",
            rn(&[2, 3]),
            Box::new(move |x| linalg::matmul(&x[0], &w)?.un(UnaryOp::Tanh)),
        ),
        (
            "norm",
            rn(&[2, 3]),
            Box::new(|x| x[0].norm(2.0, &[1], true)?.mul(&x[0])),
        ),
    ];
    let eps = 1e-2f32;
    for (name, x0, f) in &cases {
        let x = x0.contiguous_copy().unwrap();
        x.set_requires_grad(true).unwrap();
        let g = first(&x, f.as_ref(), true);
        assert!(
            g.requires_grad(),
            "{name}: a create-graph gradient has history"
        );
        let v: Vec<f32> = (0..g.numel())
            .map(|i| 0.5 + (i % 3) as f32 * 0.25)
            .collect();
        let v = from_f32(v, g.shape()).unwrap();
        backward(&g.mul(&v).unwrap().sum(&[], false).unwrap(), None, false).unwrap();
        let hv = x.grad().expect("H v").to_f32_vec().unwrap();
        let base = x.to_f32_vec().unwrap();
        let vv = v.to_f32_vec().unwrap();
        for i in 0..base.len() {
            let at = |d: f32| {
                let mut p = base.clone();
                p[i] += d;
                let xp = from_f32(p, x.shape()).unwrap();
                xp.set_requires_grad(true).unwrap();
                let gp = first(&xp, f.as_ref(), false).to_f32_vec().unwrap();
                gp.iter()
                    .zip(&vv)
                    .map(|(&a, &b)| f64::from(a * b))
                    .sum::<f64>()
            };
            let num = (at(eps) - at(-eps)) / (2.0 * f64::from(eps));
            let ana = f64::from(hv[i]);
            assert!(
                (num - ana).abs() <= 2e-2 * (1.0 + num.abs()),
                "{name}: element {i}: H v {ana} vs numeric {num}"
            );
        }
    }
}

/// Issue 22: a float64 MLP (matmul, bias, tanh, log_softmax, mean) has float64
/// gradients that match float64 central differences to ~1e-9 relative, where float32
/// cannot get past ~1e-3: the whole graph, forward and backward, stays in float64.
#[test]
fn grad_float64_mlp_matches_f64_finite_differences() {
    use kiln::tensor::Buffer;
    let shapes: [&[usize]; 4] = [&[4, 3], &[3, 5], &[5], &[5, 2]];
    let init: Vec<Vec<f64>> = shapes
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let n: usize = s.iter().product();
            (0..n)
                .map(|i| ((i * 37 + k * 11) % 17) as f64 / 8.0 - 1.0)
                .collect()
        })
        .collect();
    let w = from_f32(vec![0.3, -1.1, 0.7, 1.9, -0.4, 0.2, 1.3, -0.8], &[4, 2])
        .unwrap()
        .cast(DType::F64)
        .unwrap();
    let loss = |vals: &[Vec<f64>], grad: bool| -> (Tensor, Vec<Tensor>) {
        let ts: Vec<Tensor> = vals
            .iter()
            .zip(shapes)
            .map(|(v, s)| {
                let t = Tensor::from_buffer(Buffer::F64(v.clone()), s).unwrap();
                t.set_requires_grad(grad).unwrap();
                t
            })
            .collect();
        let h = linalg::matmul(&ts[0], &ts[1]).unwrap().add(&ts[2]).unwrap();
        let h = ops::unary(UnaryOp::Tanh, &h).unwrap();
        let o = linalg::matmul(&h, &ts[3]).unwrap().log_softmax(1).unwrap();
        let l = o.mul(&w).unwrap().sum(&[], false).unwrap();
        let l = l.add(&h.mean(&[], false).unwrap()).unwrap();
        (l, ts)
    };
    let (l, leaves) = loss(&init, true);
    assert_eq!(l.dtype(), DType::F64);
    backward(&l, None, false).unwrap();
    let eps = 1e-6;
    let mut worst = 0.0f64;
    for (k, leaf) in leaves.iter().enumerate() {
        let g = leaf.grad().unwrap();
        assert_eq!(g.dtype(), DType::F64, "leaf {k}: grad dtype");
        let ga = g.to_vec::<f64>().unwrap();
        for (i, &ana) in ga.iter().enumerate() {
            let at = |d: f64| {
                let mut v = init.clone();
                v[k][i] += d;
                let (l, _) = loss(&v, false);
                l.item().unwrap().as_f64()
            };
            let num = (at(eps) - at(-eps)) / (2.0 * eps);
            worst = worst.max((num - ana).abs() / (1.0 + num.abs()));
        }
    }
    assert!(
        worst < 1e-8,
        "float64 gradcheck: worst relative error {worst}"
    );
}
