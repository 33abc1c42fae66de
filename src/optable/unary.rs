//! The one table of primitive unary elementwise ops: every op is declared once in
//! [`unary_table!`] with its names, dtype rule, saved tensor, eager scalar kernel,
//! gradient, fused-kernel (Cranelift) code, reference value and ONNX lowering.
//!
//! The table is an "X-macro": `unary_table!(cb)` calls the macro `cb!` with every row,
//! and each layer defines its own `cb` that expands the field it needs into an
//! exhaustive `match` on [`UnaryOp`] (kernels/unary.rs: `f32`/`int`, autograd/rules.rs:
//! `grad`, compile/jit/body.rs: `jit`, compile/jit/reference.rs: `reference`, onnx/lower.rs:
//! `onnx`, interp/builtins/tensor_funcs.rs: the `global` functions). A code field is
//! written as `(params) expr` and expanded inside that layer's module, so it names the
//! layer's helpers directly and compiles to the same direct code as a hand-written
//! `match` arm (no dispatch per element). The data fields become the methods below.
//!
//! Row fields, in this order (all required):
//! - `name`: PyTorch's name (error messages, IR dumps);
//! - `methods`: the Tensor method names (`x.exp()`);
//! - `global`: whether each method name is also a global function (`exp(x)`);
//! - `saves`: which tensor the gradient reads, `X` (the input) or `Out` (the result);
//! - `f32`: `[(x) expr]`, the eager float scalar kernel (expanded for f32 and for f64,
//!   so it names only helpers both have), or `[none]` (a TypeError);
//! - `int`: `[keep (x) expr]`, the int64 scalar kernel of an op that keeps int64, or
//!   `[float]` (int64 and bool inputs are computed in float32);
//! - `grad`: `[(g, x, out) expr]`, the input gradient as tensor ops, or `[none]`
//!   (not differentiable);
//! - `jit`: `[(vx, x) expr]`, the Cranelift code of fused kernels for both float types
//!   (f32x4 or f64x2, through `Vx`'s typed helpers), or `[(vx, x) expr, f64: call]`, the
//!   f32x4 code, with f64 kernels calling the `f32` field's float64 expansion per lane
//!   (compile/jit/calls64.rs), or `[none]` (the op is not fused; graphs run it eagerly);
//! - `reference`: `[(x) expr]`, the scalar value the kernel reference evaluator uses
//!   (for `jit` ops; expanded for f32 and for f64 with compile/jit/reference.rs's
//!   helpers), or `[none]`;
//! - `onnx`: `["OpType"]` (one ONNX node) or `[(l, n, x) expr]` (a composite built by
//!   the lowerer `l` for IR node `n` from input name `x`).

/// Calls `$cb!` with every unary op row (see the module docs for the fields).
macro_rules! unary_table {
    ($cb:ident) => {
        $cb! {
            Neg {
                name: "neg", methods: ["neg"], global: true, saves: X,
                f32: [(x) -x],
                int: [keep (x) x.wrapping_neg()],
                grad: [(g, x, out) g.neg()],
                jit: [(vx, x) vx.b.ins().fneg(x)],
                reference: [(x) -x],
                onnx: ["Neg"],
            }
            Exp {
                name: "exp", methods: ["exp"], global: true, saves: Out,
                f32: [(x) x.exp()],
                int: [float],
                grad: [(g, x, out) g.mul(out)],
                jit: [(vx, x) mathfn::exp(vx, x), f64: call],
                reference: [(x) x.exp()],
                onnx: ["Exp"],
            }
            Log {
                name: "log", methods: ["log"], global: true, saves: X,
                f32: [(x) x.ln()],
                int: [float],
                grad: [(g, x, out) g.div(x)],
                jit: [(vx, x) mathfn::log(vx, x), f64: call],
                reference: [(x) x.ln()],
                onnx: ["Log"],
            }
            Log1p {
                name: "log1p", methods: ["log1p"], global: true, saves: X,
                f32: [(x) x.ln_1p()],
                int: [float],
                grad: [(g, x, out) g.div(&x.add_s(1.0)?)],
                jit: [(vx, x) mathfn::log1p(vx, x), f64: call],
                reference: [(x) via64(x, f64::ln_1p)],
                // No ONNX op: Log(1 + x) (loses precision for |x| < 1e-7).
                onnx: [(l, n, x) {
                    let one = l.b.const_scalar(Scalar::Float(1.0), DType::F32);
                    let u = l.b.op("Add", &[x, &one], vec![]);
                    l.b.op("Log", &[&u], vec![])
                }],
            }
            Sqrt {
                name: "sqrt", methods: ["sqrt"], global: true, saves: Out,
                f32: [(x) x.sqrt()],
                int: [float],
                grad: [(g, x, out) g.div(out)?.mul_s(0.5)],
                jit: [(vx, x) vx.b.ins().sqrt(x)],
                reference: [(x) x.sqrt()],
                onnx: ["Sqrt"],
            }
            Rsqrt {
                name: "rsqrt", methods: ["rsqrt"], global: true, saves: Out,
                f32: [(x) 1.0 / x.sqrt()],
                int: [float],
                grad: [(g, x, out) g.mul(&out.pow_s(3.0)?)?.mul_s(-0.5)],
                jit: [(vx, x) {
                    let s = vx.b.ins().sqrt(x);
                    let one = vx.c(1.0);
                    vx.div(one, s)
                }],
                reference: [(x) 1.0 / x.sqrt()],
                onnx: [(l, n, x) {
                    let s = l.b.op("Sqrt", &[x], vec![]);
                    l.b.op("Reciprocal", &[&s], vec![])
                }],
            }
            Recip {
                name: "reciprocal", methods: ["reciprocal"], global: true, saves: Out,
                f32: [(x) 1.0 / x],
                int: [float],
                grad: [(g, x, out) g.mul(&out.mul(out)?)?.neg()],
                jit: [(vx, x) {
                    let one = vx.c(1.0);
                    vx.div(one, x)
                }],
                reference: [(x) 1.0 / x],
                onnx: ["Reciprocal"],
            }
            Abs {
                name: "abs", methods: ["abs"], global: false, saves: X,
                f32: [(x) x.abs()],
                int: [keep (x) x.wrapping_abs()],
                grad: [(g, x, out) g.mul(&x.un(Sign)?)],
                jit: [(vx, x) vx.b.ins().fabs(x)],
                reference: [(x) x.abs()],
                onnx: ["Abs"],
            }
            Sin {
                name: "sin", methods: ["sin"], global: true, saves: X,
                f32: [(x) x.sin()],
                int: [float],
                grad: [(g, x, out) g.mul(&x.un(Cos)?)],
                jit: [(vx, x) per_lane(vx.b, &[x], lanefn::sin), f64: call],
                reference: [(x) x.sin()],
                onnx: ["Sin"],
            }
            Cos {
                name: "cos", methods: ["cos"], global: true, saves: X,
                f32: [(x) x.cos()],
                int: [float],
                grad: [(g, x, out) g.mul(&x.un(Sin)?).and_then(|t| t.neg())],
                jit: [(vx, x) per_lane(vx.b, &[x], lanefn::cos), f64: call],
                reference: [(x) x.cos()],
                onnx: ["Cos"],
            }
            Tanh {
                name: "tanh", methods: ["tanh"], global: true, saves: Out,
                f32: [(x) fast_tanh(x)],
                int: [float],
                grad: [(g, x, out) g.mul(&out.mul(out)?.rsub_s(1.0)?)],
                jit: [(vx, x) mathfn::tanh(vx, x), f64: call],
                reference: [(x) x.tanh()],
                onnx: ["Tanh"],
            }
            Sigmoid {
                name: "sigmoid", methods: ["sigmoid"], global: true, saves: Out,
                f32: [(x) sigmoid(x)],
                int: [float],
                grad: [(g, x, out) g.mul(&out.mul(&out.rsub_s(1.0)?)?)],
                jit: [(vx, x) mathfn::sigmoid(vx, x), f64: call],
                reference: [(x) via64(x, |x| 1.0 / (1.0 + (-x).exp()))],
                onnx: ["Sigmoid"],
            }
            Relu {
                name: "relu", methods: ["relu"], global: true, saves: X,
                f32: [(x) if x > 0.0 || x.is_nan() { x } else { 0.0 }],
                int: [keep (x) x.max(0)],
                grad: [(g, x, out) relu_grad(x, g)],
                jit: [(vx, x) mathfn::relu(vx, x)],
                reference: [(x) if x < 0.0 { 0.0 } else { x }],
                onnx: ["Relu"],
            }
            // Exact (erf) GELU; `x.gelu(approximate=...)` picks it or `GeluTanh`.
            Gelu {
                name: "gelu", methods: [], global: false, saves: X,
                f32: [(x) 0.5 * x * (1.0 + gelu_erf(x * FRAC_1_SQRT_2))],
                int: [float],
                grad: [(g, x, out) gelu_grad(x, g)],
                jit: [none],
                reference: [none],
                onnx: [(l, n, x) l.gelu_erf(x)],
            }
            // `gelu(x, approximate="tanh")`: `0.5 x (1 + tanh(0.7978846 (x + 0.044715 x^3)))`.
            GeluTanh {
                name: "gelu", methods: [], global: false, saves: X,
                f32: [(x) {
                    0.5 * x * (1.0 + fast_tanh(SQRT_2_OVER_PI * (x + GELU_C * x * x * x)))
                }],
                int: [float],
                grad: [(g, x, out) gelu_tanh_grad(x, g)],
                jit: [(vx, x) mathgelu::gelu_tanh(vx, x), f64: call],
                reference: [(x) via64(x, gelu_tanh64)],
                onnx: [(l, n, x) l.gelu_tanh(x)],
            }
            Silu {
                name: "silu", methods: ["silu"], global: true, saves: X,
                f32: [(x) x * sigmoid(x)],
                int: [float],
                grad: [(g, x, out) {
                    let s = x.un(Sigmoid)?;
                    g.mul(&s.mul(&x.mul(&s.rsub_s(1.0)?)?.add_s(1.0)?)?)
                }],
                jit: [none],
                reference: [none],
                onnx: [(l, n, x) {
                    let s = l.b.op("Sigmoid", &[x], vec![]);
                    l.b.op("Mul", &[x, &s], vec![])
                }],
            }
            Softplus {
                name: "softplus", methods: ["softplus"], global: true, saves: X,
                f32: [(x) softplus(x)],
                int: [float],
                grad: [(g, x, out) g.mul(&x.un(Sigmoid)?)],
                jit: [none],
                reference: [none],
                onnx: ["Softplus"],
            }
            // -1, 0 or 1; 0.0, -0.0 and NaN are kept.
            Sign {
                name: "sign", methods: ["sign"], global: true, saves: X,
                f32: [(x) sign_f(x)],
                int: [keep (x) x.signum()],
                grad: [(g, x, out) g.mul_s(0.0)],
                jit: [(vx, x) mathfn::sign(vx, x)],
                reference: [(x) if x.is_nan() { x } else { mask(x > 0.0) - mask(x < 0.0) }],
                onnx: ["Sign"],
            }
            Floor {
                name: "floor", methods: ["floor"], global: true, saves: X,
                f32: [(x) x.floor()],
                int: [keep (x) x],
                grad: [(g, x, out) g.mul_s(0.0)],
                jit: [(vx, x) vx.b.ins().floor(x)],
                reference: [(x) x.floor()],
                onnx: ["Floor"],
            }
            // Round half to even (as `torch.round`).
            Round {
                name: "round", methods: ["round"], global: false, saves: X,
                f32: [(x) x.round_ties_even()],
                int: [keep (x) x],
                grad: [(g, x, out) g.mul_s(0.0)],
                jit: [(vx, x) vx.b.ins().nearest(x)],
                reference: [(x) x.round_ties_even()],
                onnx: ["Round"],
            }
            // The error function (a primitive so GELU's gradient can be written with ops).
            Erf {
                name: "erf", methods: ["erf"], global: true, saves: X,
                f32: [(x) erf(x)],
                int: [float],
                grad: [(g, x, out) g.mul(
                    &x.mul(x)?
                        .neg()?
                        .un(Exp)?
                        .mul_s(std::f64::consts::FRAC_2_SQRT_PI)?,
                )],
                jit: [(vx, x) mathfn::erf(vx, x), f64: call],
                reference: [(x) via64(x, erf64)],
                onnx: ["Erf"],
            }
            // `~x`: logical not on bool, bitwise not on int64.
            Not {
                name: "bitwise_not", methods: ["logical_not"], global: true, saves: X,
                f32: [none],
                int: [keep (x) !x],
                grad: [none],
                jit: [none],
                reference: [none],
                onnx: [(l, n, x) {
                    let ty = if n.dtype == DType::Bool { "Not" } else { "BitwiseNot" };
                    l.b.op(ty, &[x], vec![])
                }],
            }

            // Rows added for PyTorch's API breadth (issue 22).
            Tan {
                name: "tan", methods: ["tan"], global: true, saves: Out,
                f32: [(x) x.tan()],
                int: [float],
                grad: [(g, x, out) g.mul(&out.mul(out)?.add_s(1.0)?)],
                jit: [none],
                reference: [none],
                onnx: ["Tan"],
            }
            Asin {
                name: "asin", methods: ["asin", "arcsin"], global: true, saves: X,
                f32: [(x) x.asin()],
                int: [float],
                grad: [(g, x, out) g.div(&x.mul(x)?.rsub_s(1.0)?.un(Sqrt)?)],
                jit: [none],
                reference: [none],
                onnx: ["Asin"],
            }
            Acos {
                name: "acos", methods: ["acos", "arccos"], global: true, saves: X,
                f32: [(x) x.acos()],
                int: [float],
                grad: [(g, x, out) g.div(&x.mul(x)?.rsub_s(1.0)?.un(Sqrt)?)?.neg()],
                jit: [none],
                reference: [none],
                onnx: ["Acos"],
            }
            Atan {
                name: "atan", methods: ["atan", "arctan"], global: true, saves: X,
                f32: [(x) x.atan()],
                int: [float],
                grad: [(g, x, out) g.div(&x.mul(x)?.add_s(1.0)?)],
                jit: [none],
                reference: [none],
                onnx: ["Atan"],
            }
            Sinh {
                name: "sinh", methods: ["sinh"], global: true, saves: X,
                f32: [(x) x.sinh()],
                int: [float],
                grad: [(g, x, out) g.mul(&x.un(Cosh)?)],
                jit: [none],
                reference: [none],
                onnx: ["Sinh"],
            }
            Cosh {
                name: "cosh", methods: ["cosh"], global: true, saves: X,
                f32: [(x) x.cosh()],
                int: [float],
                grad: [(g, x, out) g.mul(&x.un(Sinh)?)],
                jit: [none],
                reference: [none],
                onnx: ["Cosh"],
            }
            Asinh {
                name: "asinh", methods: ["asinh", "arcsinh"], global: true, saves: X,
                f32: [(x) x.asinh()],
                int: [float],
                grad: [(g, x, out) g.div(&x.mul(x)?.add_s(1.0)?.un(Sqrt)?)],
                jit: [none],
                reference: [none],
                onnx: ["Asinh"],
            }
            Exp2 {
                name: "exp2", methods: ["exp2"], global: true, saves: Out,
                f32: [(x) x.exp2()],
                int: [float],
                grad: [(g, x, out) g.mul(out)?.mul_s(std::f64::consts::LN_2)],
                jit: [none],
                reference: [none],
                onnx: [(l, n, x) {
                    let two = l.b.const_scalar(Scalar::Float(2.0), DType::F32);
                    l.b.op("Pow", &[&two, x], vec![])
                }],
            }
            Expm1 {
                name: "expm1", methods: ["expm1"], global: true, saves: Out,
                f32: [(x) x.exp_m1()],
                int: [float],
                grad: [(g, x, out) g.mul(&out.add_s(1.0)?)],
                jit: [none],
                reference: [none],
                // No ONNX op: Exp(x) - 1 (loses precision for |x| < 1e-7).
                onnx: [(l, n, x) {
                    let one = l.b.const_scalar(Scalar::Float(1.0), DType::F32);
                    let e = l.b.op("Exp", &[x], vec![]);
                    l.b.op("Sub", &[&e, &one], vec![])
                }],
            }
            Log2 {
                name: "log2", methods: ["log2"], global: true, saves: X,
                f32: [(x) x.log2()],
                int: [float],
                grad: [(g, x, out) g.div(&x.mul_s(std::f64::consts::LN_2)?)],
                jit: [none],
                reference: [none],
                onnx: [(l, n, x) {
                    let c = l.b.const_scalar(Scalar::Float(std::f64::consts::LN_2), DType::F32);
                    let u = l.b.op("Log", &[x], vec![]);
                    l.b.op("Div", &[&u, &c], vec![])
                }],
            }
            Log10 {
                name: "log10", methods: ["log10"], global: true, saves: X,
                f32: [(x) x.log10()],
                int: [float],
                grad: [(g, x, out) g.div(&x.mul_s(std::f64::consts::LN_10)?)],
                jit: [none],
                reference: [none],
                onnx: [(l, n, x) {
                    let c = l.b.const_scalar(Scalar::Float(std::f64::consts::LN_10), DType::F32);
                    let u = l.b.op("Log", &[x], vec![]);
                    l.b.op("Div", &[&u, &c], vec![])
                }],
            }
            Square {
                name: "square", methods: ["square"], global: true, saves: X,
                f32: [(x) x * x],
                int: [keep (x) x.wrapping_mul(x)],
                grad: [(g, x, out) g.mul(x)?.mul_s(2.0)],
                jit: [(vx, x) vx.mul(x, x)],
                reference: [(x) x * x],
                onnx: [(l, n, x) l.b.op("Mul", &[x, x], vec![])],
            }
            Erfc {
                name: "erfc", methods: ["erfc"], global: true, saves: X,
                f32: [(x) erfc(x)],
                int: [float],
                grad: [(g, x, out) g.mul(
                    &x.mul(x)?
                        .neg()?
                        .un(Exp)?
                        .mul_s(-std::f64::consts::FRAC_2_SQRT_PI)?,
                )],
                jit: [none],
                reference: [none],
                onnx: [(l, n, x) {
                    let one = l.b.const_scalar(Scalar::Float(1.0), DType::F32);
                    let e = l.b.op("Erf", &[x], vec![]);
                    l.b.op("Sub", &[&one, &e], vec![])
                }],
            }
            Ceil {
                name: "ceil", methods: ["ceil"], global: true, saves: X,
                f32: [(x) x.ceil()],
                int: [keep (x) x],
                grad: [(g, x, out) g.mul_s(0.0)],
                jit: [(vx, x) vx.b.ins().ceil(x)],
                reference: [(x) x.ceil()],
                onnx: ["Ceil"],
            }
            // Rounds toward zero; `fix` is PyTorch's alias.
            Trunc {
                name: "trunc", methods: ["trunc", "fix"], global: true, saves: X,
                f32: [(x) x.trunc()],
                int: [keep (x) x],
                grad: [(g, x, out) g.mul_s(0.0)],
                jit: [(vx, x) vx.b.ins().trunc(x)],
                reference: [(x) x.trunc()],
                // No ONNX op: Sign(x) * Floor(Abs(x)).
                onnx: [(l, n, x) {
                    let s = l.b.op("Sign", &[x], vec![]);
                    let a = l.b.op("Abs", &[x], vec![]);
                    let f = l.b.op("Floor", &[&a], vec![]);
                    l.b.op("Mul", &[&s, &f], vec![])
                }],
            }
            // `x - trunc(x)` (the sign of x).
            Frac {
                name: "frac", methods: ["frac"], global: true, saves: X,
                f32: [(x) x.fract()],
                int: [keep (x) x - x],
                grad: [(g, x, out) Ok(g.clone())],
                jit: [none],
                reference: [none],
                onnx: [(l, n, x) {
                    let s = l.b.op("Sign", &[x], vec![]);
                    let a = l.b.op("Abs", &[x], vec![]);
                    let f = l.b.op("Floor", &[&a], vec![]);
                    let t = l.b.op("Mul", &[&s, &f], vec![]);
                    l.b.op("Sub", &[x, &t], vec![])
                }],
            }
            // The inverse of erf on [-1, 1] (±inf at ±1); d/dx = sqrt(pi)/2 exp(out^2).
            Erfinv {
                name: "erfinv", methods: ["erfinv"], global: true, saves: Out,
                f32: [(x) erfinv(x)],
                int: [float],
                grad: [(g, x, out) g.mul(
                    &out.mul(out)?.un(Exp)?.mul_s(0.886_226_925_452_758)?,
                )],
                jit: [none],
                reference: [none],
                // No ONNX op: Giles' polynomial as a composite (onnx/special.rs).
                onnx: [(l, n, x) super::special::erfinv(l, x)],
            }
        }
    };
}
pub(crate) use unary_table;

/// Which tensor a unary op's gradient reads (only that one is saved, so unrelated
/// in-place writes to the other stay legal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saves {
    X,
    Out,
}

/// The enum and its data methods, from the table's data fields.
macro_rules! unary_enum {
    ($($V:ident {
        name: $name:literal, methods: [$($m:literal),*], global: $global:literal,
        saves: $saves:ident, f32: [$($f:tt)*], int: [$($i:tt)*], grad: [$($g:tt)*],
        jit: [$($j:tt)*], reference: [$($r:tt)*], onnx: [$($o:tt)*],
    })*) => {
        /// Unary elementwise ops (one enum for eager, autograd, the IR, fused kernels and
        /// ONNX).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum UnaryOp {
            $($V,)*
        }

        impl UnaryOp {
            /// Every op, in table order.
            pub const ALL: &'static [UnaryOp] = &[$(UnaryOp::$V,)*];

            /// The op's name in error messages (PyTorch's function names).
            pub fn name(self) -> &'static str {
                match self {
                    $(UnaryOp::$V => $name,)*
                }
            }

            /// The Tensor method names of the op.
            pub fn methods(self) -> &'static [&'static str] {
                match self {
                    $(UnaryOp::$V => &[$($m),*],)*
                }
            }

            /// The op a Tensor method name names (`"exp"` -> `Exp`).
            pub fn of_method(name: &str) -> Option<UnaryOp> {
                match name {
                    $($($m => Some(UnaryOp::$V),)*)*
                    _ => None,
                }
            }

            /// Whether the method names are also global functions.
            pub fn is_global(self) -> bool {
                match self {
                    $(UnaryOp::$V => $global,)*
                }
            }

            /// The tensor the gradient reads.
            pub fn saves(self) -> Saves {
                match self {
                    $(UnaryOp::$V => Saves::$saves,)*
                }
            }

            /// Whether float32 inputs are accepted.
            pub fn takes_float(self) -> bool {
                match self {
                    $(UnaryOp::$V => unary_enum!(@some $($f)*),)*
                }
            }

            /// Whether int64 inputs give int64 (otherwise float32).
            pub fn keeps_int(self) -> bool {
                match self {
                    $(UnaryOp::$V => unary_enum!(@keep $($i)*),)*
                }
            }

            /// Ops whose output can carry a gradient.
            pub fn differentiable(self) -> bool {
                match self {
                    $(UnaryOp::$V => unary_enum!(@some $($g)*),)*
                }
            }

            /// Whether fused kernels can compute the op.
            pub fn fusable(self) -> bool {
                match self {
                    $(UnaryOp::$V => unary_enum!(@some $($j)*),)*
                }
            }
        }
    };
    (@some none) => { false };
    (@some $($t:tt)+) => { true };
    (@keep float) => { false };
    (@keep keep $($t:tt)+) => { true };
}

unary_table!(unary_enum);
