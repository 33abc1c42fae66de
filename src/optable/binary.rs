//! The one table of primitive binary elementwise ops: every op is declared once in
//! [`binary_table!`] with its name, dtype rule, saved tensors, eager scalar kernels,
//! gradient, fused-kernel op and ONNX lowering (an X-macro, as `unary_table!`: each layer
//! expands the field it needs into an exhaustive `match` on [`BinaryOp`];
//! tensor/kernels/binary.rs: `f32`/`int`, autograd/rules.rs: `grad`,
//! compile/jit/body.rs and reference.rs: `fused`, onnx/lower.rs: `onnx`).
//!
//! Row fields, in this order (all required):
//! - `name`: PyTorch's name (error messages, IR dumps);
//! - `methods`: the Tensor method names (method dispatch and completion derive from
//!   them), `global`: whether they are also global functions (`torch.add(a, b)`);
//! - `inplace`: the in-place Tensor method names (`add_`: dispatch and completion
//!   derive from them too);
//! - `dtype`: the [`DtypeRule`] (which dtype the op computes in, and what it returns);
//! - `saves`: which of `a`, `b`, `out` the gradient reads (only those are saved);
//! - `f32`: `[(x, y) expr]`, the float32 scalar kernel, or `[none]` (a TypeError);
//! - `int`: `[(x, y) expr]`, the int64 kernel (also the bool kernel of comparisons and
//!   logical ops), or `[none]` (the op computes in float32);
//! - `grad`: `[(g, a, b, out) expr]`, the two input gradients as tensor ops, or `[none]`
//!   (not differentiable);
//! - `fused`: its fused-kernel (Cranelift) form, or `[none]` (graphs run it eagerly):
//!   `[(vx, a, b) expr, (x, y) expr]` for arithmetic, the f32x4 code (expanded in
//!   compile/jit/body.rs for both float types) then the scalar value the kernel
//!   reference evaluator uses (compile/jit/reference.rs); `..., f64: call` after them
//!   when the code is f32x4 only: f64 kernels call the `f32` field's float64 expansion
//!   per lane (compile/jit/calls64.rs); `[compare CC, (x, y) expr]` for a comparison, its
//!   Cranelift `FloatCC` (the kernel computes a mask) then the reference relation;
//! - `onnx`: `["OpType"]` (one ONNX node) or `[(l, cd, x, y) expr]` (a composite built by
//!   the lowerer `l` from operand names `x`, `y` cast to the compute dtype `cd`).

/// Calls `$cb!` with every binary op row (see the module docs for the fields).
macro_rules! binary_table {
    ($cb:ident) => {
        $cb! {
            Add {
                name: "add", methods: ["add"], global: true,
                inplace: ["add_"], dtype: Arith, saves: [],
                f32: [(x, y) x + y],
                int: [(x, y) x.wrapping_add(y)],
                grad: [(g, a, b, out) (g.clone(), g.clone())],
                fused: [(vx, a, b) vx.add(a, b), (x, y) x + y],
                onnx: ["Add"],
            }
            Sub {
                name: "sub", methods: ["sub"], global: true,
                inplace: ["sub_"], dtype: ArithNoBool, saves: [],
                f32: [(x, y) x - y],
                int: [(x, y) x.wrapping_sub(y)],
                grad: [(g, a, b, out) (g.clone(), g.neg()?)],
                fused: [(vx, a, b) vx.sub(a, b), (x, y) x - y],
                onnx: ["Sub"],
            }
            Mul {
                name: "mul", methods: ["mul"], global: true,
                inplace: ["mul_"], dtype: Arith, saves: [a, b],
                f32: [(x, y) x * y],
                int: [(x, y) x.wrapping_mul(y)],
                grad: [(g, a, b, out) (g.mul(b)?, g.mul(a)?)],
                fused: [(vx, a, b) vx.mul(a, b), (x, y) x * y],
                onnx: ["Mul"],
            }
            // True division: always float32.
            Div {
                name: "div", methods: ["div"], global: true,
                inplace: ["div_"], dtype: Float, saves: [b, out],
                f32: [(x, y) x / y],
                int: [none],
                grad: [(g, a, b, out) (g.div(b)?, g.mul(out)?.div(b)?.neg()?)],
                fused: [(vx, a, b) vx.div(a, b), (x, y) x / y],
                onnx: ["Div"],
            }
            // Python `//`; int64 division by zero is a ZeroDivisionError.
            FloorDiv {
                name: "floor_divide", methods: ["floor_divide"], global: true,
                inplace: [], dtype: Arith, saves: [],
                f32: [(x, y) (x / y).floor()],
                int: [(x, y) idiv_py(x, y)],
                grad: [(g, a, b, out) (g.mul_s(0.0)?, g.mul_s(0.0)?)],
                fused: [
                    (vx, a, b) per_lane(vx.b, &[a, b], lanefn::floor_div),
                    (x, y) floor_div_ref(x, y), f64: call
                ],
                onnx: [(l, cd, x, y) if cd == DType::I64 {
                    // Python's floor division: `(a - a mod b) / b` is exact, and ONNX Mod
                    // with fmod=0 takes the divisor's sign as Python's `%` does.
                    let m = l.b.op("Mod", &[x, y], vec![attr_i("fmod", 0)]);
                    let d = l.b.op("Sub", &[x, &m], vec![]);
                    l.b.op("Div", &[&d, y], vec![])
                } else {
                    let q = l.b.op("Div", &[x, y], vec![]);
                    l.b.op("Floor", &[&q], vec![])
                }],
            }
            // Python `%`: the result has the divisor's sign.
            Rem {
                name: "remainder", methods: ["remainder"], global: true,
                inplace: [], dtype: Arith, saves: [a, b],
                f32: [(x, y) fmod_py(x, y)],
                int: [(x, y) imod_py(x, y)],
                grad: [(g, a, b, out) {
                    (g.clone(), g.mul(&binary(BinaryOp::FloorDiv, a, b)?)?.neg()?)
                }],
                fused: [
                    (vx, a, b) per_lane(vx.b, &[a, b], lanefn::modulo),
                    (x, y) mod_ref(x, y), f64: call
                ],
                onnx: [(l, cd, x, y) if cd == DType::I64 {
                    l.b.op("Mod", &[x, y], vec![attr_i("fmod", 0)])
                } else {
                    let q = l.b.op("Div", &[x, y], vec![]);
                    let f = l.b.op("Floor", &[&q], vec![]);
                    let m = l.b.op("Mul", &[&f, y], vec![]);
                    l.b.op("Sub", &[x, &m], vec![])
                }],
            }
            // int64 to a negative int64 power is a ValueError.
            Pow {
                name: "pow", methods: ["pow"], global: true,
                inplace: ["pow_"], dtype: Arith, saves: [a, b, out],
                f32: [(x, y) x.powf(y)],
                int: [(x, y) ipow(x, y)],
                grad: [(g, a, b, out) {
                    let ga = g.mul(b)?.mul(&binary(BinaryOp::Pow, a, &b.add_s(-1.0)?)?)?;
                    let log_a = a.un(UnaryOp::Log)?;
                    let zero_a = a.cmp_s(BinaryOp::Eq, 0.0)?;
                    let gb = g
                        .mul(out)?
                        .mul(&log_a)?
                        .masked_fill(&zero_a, Scalar::Float(0.0))?;
                    (ga, gb)
                }],
                fused: [
                    (vx, a, b) per_lane(vx.b, &[a, b], lanefn::pow),
                    (x, y) x.powf(y), f64: call
                ],
                onnx: ["Pow"],
            }
            // NaN propagates and -0.0 < +0.0 (IEEE 754-2019 `maximum`).
            Maximum {
                name: "maximum", methods: ["maximum"], global: true,
                inplace: [], dtype: Arith, saves: [a, b],
                f32: [(x, y) fmax_nan(x, y)],
                int: [(x, y) x.max(y)],
                grad: [(g, a, b, out) min_max_grads(BinaryOp::Gt, a, b, g)?],
                fused: [(vx, a, b) vx.b.ins().fmax(a, b), (x, y) fmax_nan(x, y)],
                onnx: ["Max"],
            }
            Minimum {
                name: "minimum", methods: ["minimum"], global: true,
                inplace: [], dtype: Arith, saves: [a, b],
                f32: [(x, y) fmin_nan(x, y)],
                int: [(x, y) x.min(y)],
                grad: [(g, a, b, out) min_max_grads(BinaryOp::Lt, a, b, g)?],
                fused: [(vx, a, b) vx.b.ins().fmin(a, b), (x, y) fmin_nan(x, y)],
                onnx: ["Min"],
            }
            Eq {
                name: "eq", methods: ["eq"], global: true,
                inplace: [], dtype: Compare, saves: [],
                f32: [(x, y) x == y],
                int: [(x, y) x == y],
                grad: [none],
                fused: [compare Equal, (x, y) x == y],
                onnx: ["Equal"],
            }
            // True for NaN.
            Ne {
                name: "ne", methods: ["ne"], global: true,
                inplace: [], dtype: Compare, saves: [],
                f32: [(x, y) x != y],
                int: [(x, y) x != y],
                grad: [none],
                fused: [compare NotEqual, (x, y) x != y],
                onnx: [(l, cd, x, y) {
                    let e = l.b.op("Equal", &[x, y], vec![]);
                    l.b.op("Not", &[&e], vec![])
                }],
            }
            Lt {
                name: "lt", methods: ["lt"], global: true,
                inplace: [], dtype: Compare, saves: [],
                f32: [(x, y) x < y],
                int: [(x, y) x < y],
                grad: [none],
                fused: [compare LessThan, (x, y) x < y],
                onnx: ["Less"],
            }
            Le {
                name: "le", methods: ["le"], global: true,
                inplace: [], dtype: Compare, saves: [],
                f32: [(x, y) x <= y],
                int: [(x, y) x <= y],
                grad: [none],
                fused: [compare LessThanOrEqual, (x, y) x <= y],
                onnx: ["LessOrEqual"],
            }
            Gt {
                name: "gt", methods: ["gt"], global: true,
                inplace: [], dtype: Compare, saves: [],
                f32: [(x, y) x > y],
                int: [(x, y) x > y],
                grad: [none],
                fused: [compare GreaterThan, (x, y) x > y],
                onnx: ["Greater"],
            }
            Ge {
                name: "ge", methods: ["ge"], global: true,
                inplace: [], dtype: Compare, saves: [],
                f32: [(x, y) x >= y],
                int: [(x, y) x >= y],
                grad: [none],
                fused: [compare GreaterThanOrEqual, (x, y) x >= y],
                onnx: ["GreaterOrEqual"],
            }
            // `&`: logical on bool, bitwise on int64.
            And {
                name: "bitwise_and", methods: ["logical_and"], global: true,
                inplace: [], dtype: Logic, saves: [],
                f32: [none],
                int: [(x, y) x & y],
                grad: [none],
                fused: [none],
                onnx: [(l, cd, x, y) {
                    let ty = if cd == DType::Bool { "And" } else { "BitwiseAnd" };
                    l.b.op(ty, &[x, y], vec![])
                }],
            }
            Or {
                name: "bitwise_or", methods: ["logical_or"], global: true,
                inplace: [], dtype: Logic, saves: [],
                f32: [none],
                int: [(x, y) x | y],
                grad: [none],
                fused: [none],
                onnx: [(l, cd, x, y) {
                    let ty = if cd == DType::Bool { "Or" } else { "BitwiseOr" };
                    l.b.op(ty, &[x, y], vec![])
                }],
            }
            Xor {
                name: "bitwise_xor", methods: ["logical_xor"], global: true,
                inplace: [], dtype: Logic, saves: [],
                f32: [none],
                int: [(x, y) x ^ y],
                grad: [none],
                fused: [none],
                onnx: [(l, cd, x, y) {
                    let ty = if cd == DType::Bool { "Xor" } else { "BitwiseXor" };
                    l.b.op(ty, &[x, y], vec![])
                }],
            }
        }
    };
}
pub(crate) use binary_table;

/// The dtype a binary op computes in, from the promoted operand dtype `p`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DtypeRule {
    /// `p`, with bool computed as int64.
    Arith,
    /// As `Arith`, but bool operands are a TypeError (`-` on bools).
    ArithNoBool,
    /// Always float32 (true division).
    Float,
    /// Computes in `p`, returns bool.
    Compare,
    /// bool or int64 only (float32 is a TypeError).
    Logic,
}

/// The enum and its data methods, from the table's data fields.
macro_rules! binary_enum {
    ($($V:ident {
        name: $name:literal, methods: [$($m:literal),*], global: $global:literal,
        inplace: [$($ip:literal),*], dtype: $dt:ident, saves: [$($s:ident),*],
        f32: [$($f:tt)*], int: [$($i:tt)*], grad: [$($g:tt)*], fused: [$($k:tt)*],
        onnx: [$($o:tt)*],
    })*) => {
        /// Binary elementwise ops (`+ - * / // % **`, comparisons, `& | ^`,
        /// maximum/minimum): one enum for eager, autograd, the IR and ONNX.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum BinaryOp {
            $($V,)*
        }

        impl BinaryOp {
            /// Every op, in table order.
            pub const ALL: &'static [BinaryOp] = &[$(BinaryOp::$V,)*];

            /// The op's name in error messages (PyTorch's function names).
            pub fn name(self) -> &'static str {
                match self {
                    $(BinaryOp::$V => $name,)*
                }
            }

            /// The Tensor method names of the op (`t.add(u)`; `logical_and` for `And`).
            pub fn methods(self) -> &'static [&'static str] {
                match self {
                    $(BinaryOp::$V => &[$($m),*],)*
                }
            }

            /// The op a Tensor method name names (`"mul"` -> `Mul`).
            pub fn of_method(name: &str) -> Option<BinaryOp> {
                match name {
                    $($($m => Some(BinaryOp::$V),)*)*
                    _ => None,
                }
            }

            /// The in-place Tensor method names of the op (`t.add_(u)`).
            pub fn inplace_methods(self) -> &'static [&'static str] {
                match self {
                    $(BinaryOp::$V => &[$($ip),*],)*
                }
            }

            /// The op an in-place Tensor method name names (`"mul_"` -> `Mul`).
            pub fn of_inplace_method(name: &str) -> Option<BinaryOp> {
                match name {
                    $($($ip => Some(BinaryOp::$V),)*)*
                    _ => None,
                }
            }

            /// Whether the method names are also global functions (`torch.add(a, b)`).
            pub fn is_global(self) -> bool {
                match self {
                    $(BinaryOp::$V => $global,)*
                }
            }

            /// The op's dtype rule.
            pub fn dtype_rule(self) -> DtypeRule {
                match self {
                    $(BinaryOp::$V => DtypeRule::$dt,)*
                }
            }

            /// Which of (a, b, out) the gradient reads: only those are saved (so
            /// unrelated in-place writes stay legal).
            pub fn saves(self) -> (bool, bool, bool) {
                match self {
                    $(BinaryOp::$V => binary_enum!(@saves [$($s)*]),)*
                }
            }

            /// Ops with a gradient (floor_divide gets zero gradients).
            pub fn differentiable(self) -> bool {
                match self {
                    $(BinaryOp::$V => binary_enum!(@some $($g)*),)*
                }
            }

            /// Whether fused kernels can compute the op (comparisons as masks).
            pub fn fusable(self) -> bool {
                match self {
                    $(BinaryOp::$V => binary_enum!(@some $($k)*),)*
                }
            }
        }
    };
    (@some none) => { false };
    (@some $($t:tt)+) => { true };
    (@saves []) => { (false, false, false) };
    (@saves [a b]) => { (true, true, false) };
    (@saves [b out]) => { (false, true, true) };
    (@saves [a b out]) => { (true, true, true) };
}

binary_table!(binary_enum);

impl BinaryOp {
    pub fn is_comparison(self) -> bool {
        self.dtype_rule() == DtypeRule::Compare
    }

    pub fn is_logical(self) -> bool {
        self.dtype_rule() == DtypeRule::Logic
    }
}
