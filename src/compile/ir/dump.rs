//! Text and Graphviz DOT renderings of an IR `Graph`: one line per node,
//! `%3 = mul(%1, %2) : f32[64, 256]  # file.dl:7`, then `return %3`.

use crate::compile::ir::control::{regions, LoopSpec, PrintPiece, PrintSpec, TripCount};
use crate::compile::ir::{Graph, InputKind, IrIndex, IrOp, Node, NodeId, PathStep};
use crate::compile::sym::shape_text;
use crate::source::SourceMap;
use crate::tensor::creation::Fill;
use crate::tensor::dtype::{DType, Scalar};
use crate::tensor::linalg_ops::LinalgOp;
use std::fmt::Write;

pub fn short(dt: DType) -> &'static str {
    match dt {
        DType::F32 => "f32",
        DType::F64 => "f64",
        DType::I32 => "i32",
        DType::I64 => "i64",
        DType::U8 => "u8",
        DType::Bool => "bool",
    }
}

/// `f32[64, 256]`; a control node's results as a tuple `(f32[3], i64[])`.
pub fn type_text(n: &Node) -> String {
    if let Some(outs) = control_outputs(&n.op) {
        let ts: Vec<String> = outs
            .outputs
            .iter()
            .filter_map(|o| outs.node(*o))
            .map(type_text)
            .collect();
        return format!("({})", ts.join(", "));
    }
    let dims: Vec<String> = n.shape.iter().map(|d| d.to_string()).collect();
    format!("{}[{}]", short(n.dtype), dims.join(", "))
}

fn scalar_text(s: Scalar) -> String {
    match s {
        Scalar::Bool(b) => if b { "True" } else { "False" }.into(),
        Scalar::Int(i) => i.to_string(),
        Scalar::Float(f) => format!("{f:?}"),
    }
}

fn fill_attrs(fill: Fill, dtype: DType) -> String {
    let what = match fill {
        Fill::Value(v) => format!("value={}", scalar_text(v)),
        Fill::Uniform { from, to } => format!("from={from:?}, to={to:?}"),
        Fill::Normal { mean, std } => format!("mean={mean:?}, std={std:?}"),
        Fill::Bernoulli { p } => format!("p={p:?}"),
    };
    format!("{what}, dtype={}", dtype.name())
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or("None".into(), |v| v.to_string())
}

fn path_text(path: &[PathStep]) -> String {
    let mut s = String::new();
    for (i, p) in path.iter().enumerate() {
        match (i, p) {
            (0, PathStep::Index(k)) => {
                let _ = write!(s, "arg{k}");
            }
            (_, PathStep::Index(k)) => {
                let _ = write!(s, "[{k}]");
            }
            (_, PathStep::Key(k)) => {
                let _ = write!(s, "[{k}]");
            }
        }
    }
    s
}

fn index_text(ix: &IrIndex, args: &[NodeId]) -> String {
    let arg = |k: usize| args.get(k).map_or("?".into(), |a| a.to_string());
    match ix {
        IrIndex::Int(i) => i.to_string(),
        IrIndex::Slice { start, stop, step } => {
            let base = format!(
                "{}:{}",
                start.map_or(String::new(), |v| v.to_string()),
                stop.map_or(String::new(), |v| v.to_string())
            );
            match step {
                Some(s) => format!("{base}:{s}"),
                None => base,
            }
        }
        IrIndex::SymSlice { start, len, sym } => {
            let refs = sym.symbols().map(|r| {
                let (slot, d) = crate::ir::sym::dim_of_ref(r);
                format!("s{r}=in{slot}.{d}")
            });
            let refs: Vec<String> = refs.collect();
            format!("{start}:{start}+({sym}: {len}; {})", refs.join(", "))
        }
        IrIndex::NewAxis => "None".into(),
        IrIndex::Ellipsis => "...".into(),
        IrIndex::Mask { arg: k } | IrIndex::Indices { arg: k } => arg(*k),
    }
}

/// The op's attributes as `, key=value` pairs after its args.
/// `x[i, j]`: the indexed value's name, then the indices.
fn indexed(args: &[String], indices: &[IrIndex], node_args: &[NodeId]) -> Vec<String> {
    let ix: Vec<String> = indices.iter().map(|i| index_text(i, node_args)).collect();
    vec![
        args.first().cloned().unwrap_or_default(),
        format!("[{}]", ix.join(", ")),
    ]
}

fn attrs(op: &IrOp) -> String {
    let dk = |dims: &[usize], keepdim: &bool| format!("dims={dims:?}, keepdim={keepdim}");
    match op {
        IrOp::BinaryScalar {
            scalar, reverse, ..
        } => match reverse {
            true => format!("scalar={}, reverse=True", scalar_text(*scalar)),
            false => format!("scalar={}", scalar_text(*scalar)),
        },
        IrOp::Clamp { min, max } => format!("min={}, max={}", opt(*min), opt(*max)),
        IrOp::Unary(crate::ops::UnaryOp::GeluTanh) => "approximate='tanh'".into(),
        IrOp::Cast(dt) => format!("dtype={}", dt.name()),
        IrOp::Sum { dims, keepdim }
        | IrOp::Mean { dims, keepdim }
        | IrOp::Prod { dims, keepdim }
        | IrOp::LogSumExp { dims, keepdim }
        | IrOp::AllAny { dims, keepdim, .. } => dk(dims, keepdim),
        IrOp::ExtremeDim { dim, keepdim, .. } => format!("dim={dim}, keepdim={keepdim}"),
        IrOp::ArgExtreme { dim, keepdim, .. } => format!("dim={}, keepdim={keepdim}", opt(*dim)),
        IrOp::Var {
            dims,
            correction,
            keepdim,
            ..
        } => format!("{}, correction={correction}", dk(dims, keepdim)),
        IrOp::Norm { p, dims, keepdim } => format!("p={p}, {}", dk(dims, keepdim)),
        IrOp::Softmax { dim }
        | IrOp::LogSoftmax { dim }
        | IrOp::Cumsum {
            dim,
            reverse: false,
        }
        | IrOp::Cat { dim }
        | IrOp::Stack { dim }
        | IrOp::IndexSelect { dim }
        | IrOp::Gather { dim }
        | IrOp::ScatterAdd { dim }
        | IrOp::Scatter { dim } => format!("dim={dim}"),
        IrOp::Linalg(op) => linalg_attrs(op),
        IrOp::Cumsum { dim, .. } => format!("dim={dim}, reverse=True"),
        IrOp::Reshape { shape } | IrOp::Expand { shape, .. } | IrOp::IndexGrad { shape, .. } => {
            format!("shape={:?}", shape.as_slice())
        }
        IrOp::Permute { perm } => format!("perm={perm:?}"),
        IrOp::Narrow { dim, start, len } => format!("dim={dim}, start={start}, len={len}"),
        IrOp::Repeat { reps } => format!("reps={reps:?}"),
        IrOp::Conv2d { params: p, .. } => format!(
            "stride={:?}, padding={:?}, dilation={:?}",
            p.stride, p.padding, p.dilation
        ),
        IrOp::MaxPool2d { params: p } | IrOp::AvgPool2d { params: p } => format!(
            "kernel={:?}, stride={:?}, padding={:?}",
            p.kernel, p.stride, p.padding
        ),
        IrOp::BatchNorm { training, eps, .. } => format!("training={training}, eps={eps}"),
        IrOp::BatchNormRunning { momentum, var } => format!("momentum={momentum}, var={var}"),
        IrOp::LayerNorm { dims, eps, .. } => format!("dims={dims}, eps={eps}"),
        IrOp::GroupNorm { groups, eps, .. } => format!("groups={groups}, eps={eps}"),
        IrOp::Attention {
            causal,
            scale,
            mask,
        } => format!("causal={causal}, scale={scale:?}, mask={mask}"),
        IrOp::GruLayer { bias } => format!("bias={bias}"),
        IrOp::OneHot { num_classes } => format!("num_classes={num_classes}"),
        IrOp::ModeIndices { dim } => format!("dim={dim}"),
        IrOp::SortIndices { dim, descending, k } => {
            format!("dim={dim}, descending={descending}, k={k:?}")
        }
        IrOp::MaskedFill { value } => format!("value={}", scalar_text(*value)),
        IrOp::FillLike { fill, dtype } => fill_attrs(*fill, *dtype),
        IrOp::Out { index } => format!("index={index}"),
        IrOp::Loop(l) => loop_attrs(l),
        // attributes shown by the op's name or args, or none
        IrOp::Input { .. }
        | IrOp::Const(_)
        | IrOp::Unary(_)
        | IrOp::Binary(_)
        | IrOp::Where
        | IrOp::Clone
        | IrOp::Contiguous
        | IrOp::ExtremeAll { .. }
        | IrOp::Index { .. }
        | IrOp::Matmul
        | IrOp::LstmLayer
        | IrOp::GradKernel(_)
        | IrOp::If(_)
        | IrOp::Print(_) => String::new(),
    }
}

/// A matrix function's attributes: its mode flags and which result a node is.
fn linalg_attrs(op: &LinalgOp) -> String {
    match op {
        LinalgOp::Slogdet { part } => format!("part={part}"),
        LinalgOp::Cholesky { upper } => format!("upper={upper}"),
        LinalgOp::Qr { mode, part } => format!("mode={mode:?}, part={part}"),
        LinalgOp::Svd { full, part } => format!("full_matrices={full}, part={part}"),
        LinalgOp::Eigh { upper, part } => format!("upper={upper}, part={part}"),
        LinalgOp::Pinv { atol, rtol } => format!("atol={atol:?}, rtol={rtol:?}"),
        LinalgOp::GapInverse { squares } => format!("squares={squares}"),
        LinalgOp::Inv | LinalgOp::Det | LinalgOp::Cofactor | LinalgOp::Solve => String::new(),
    }
}

/// `mul(%1, %2)`, `input(arg0)`, `index(%0, [0, 1:3])`.
pub fn op_text(n: &Node) -> String {
    let args: Vec<String> = n.args.iter().map(|a| a.to_string()).collect();
    let mut parts = match &n.op {
        IrOp::Input { kind, .. } => vec![match kind {
            InputKind::Arg(path) => path_text(path),
            InputKind::External { name } => format!("external {name}"),
            InputKind::Bound => format!(
                "bound{}",
                match &n.op {
                    IrOp::Input { slot, .. } => *slot,
                    _ => 0,
                }
            ),
        }],
        IrOp::Print(p) => vec![print_text(p, &n.args)],
        IrOp::Index { indices } => indexed(&args, indices, &n.args),
        IrOp::IndexGrad { indices, .. } => indexed(&args, indices, &n.args),
        _ => args,
    };
    let a = attrs(&n.op);
    if !a.is_empty() {
        parts.push(a);
    }
    format!("{}({})", n.op.name(), parts.join(", "))
}

/// The region whose outputs are a control node's results.
fn control_outputs(op: &IrOp) -> Option<&Graph> {
    match op {
        IrOp::If(b) => Some(&b.then_g),
        IrOp::Loop(l) => Some(&l.body),
        _ => None,
    }
}

fn loop_attrs(l: &LoopSpec) -> String {
    let trip = match l.trip {
        TripCount::Const(n) => n.to_string(),
        TripCount::Dim { arg, dim } => format!("dim(arg {arg}, {dim})"),
        TripCount::Unbounded => "None".into(),
    };
    let mut text = format!(
        "trip={trip}, carried={}, index={}+{}k",
        l.carried, l.start, l.step
    );
    if l.scan > 0 {
        text.push_str(&format!(", scan={}", l.scan));
    }
    if l.reverse {
        text.push_str(", reverse");
    }
    text
}

/// `"step ", {%0:.4f}, "\n"`: literal pieces quoted, tensor holes in braces.
fn print_text(p: &PrintSpec, args: &[NodeId]) -> String {
    let parts: Vec<String> = p
        .pieces
        .iter()
        .map(|piece| match piece {
            PrintPiece::Text(t) => format!("{t:?}"),
            PrintPiece::Tensor {
                arg, conv, spec, ..
            } => {
                let a = args.get(*arg).map_or("?".into(), |a| a.to_string());
                let c = conv.map_or(String::new(), |c| format!("!{c}"));
                let s = spec
                    .as_deref()
                    .filter(|s| !s.is_empty())
                    .map_or(String::new(), |s| format!(":{s}"));
                format!("{{{a}{c}{s}}}")
            }
        })
        .collect();
    parts.join(", ")
}

fn location(n: &Node, sources: Option<&SourceMap>) -> Option<String> {
    let (span, map) = (n.span?, sources?);
    let file = map.get(span.file)?;
    let (line, _) = map.line_col(span.file, span.start);
    let name = file.name.rsplit('/').next().unwrap_or(&file.name);
    Some(format!("{name}:{line}"))
}

impl Graph {
    /// A node's type with its symbolic shape when the graph has symbolic sizes
    /// (`f32[s0, 32]`).
    pub fn type_text_sym(&self, i: usize, n: &Node) -> String {
        match self.sym.as_ref().and_then(|s| s.shapes.get(i)) {
            Some(shape) => format!("{}{}", short(n.dtype), shape_text(shape)),
            None => type_text(n),
        }
    }

    /// A node's op text; a reshape/expand with a symbolic target shows it.
    pub fn op_text_sym(&self, i: usize, n: &Node) -> String {
        let target = self.sym.as_ref().and_then(|s| {
            s.targets
                .iter()
                .find(|(id, _)| id.index() == i)
                .map(|(_, t)| t)
        });
        match target {
            Some(t) => {
                let args: Vec<String> = n.args.iter().map(|a| a.to_string()).collect();
                format!(
                    "{}({}, shape={})",
                    n.op.name(),
                    args.join(", "),
                    shape_text(t)
                )
            }
            None => op_text(n),
        }
    }

    /// One line per node plus a `return` line; spans become `# file.dl:LINE` when a
    /// source map is given.
    pub fn to_text(&self, sources: Option<&SourceMap>) -> String {
        let mut out = String::new();
        self.write_text(sources, 0, &mut out);
        out
    }

    /// Writes the graph indented by `depth` levels; regions of control nodes follow
    /// their node, one level deeper, each under a `then:`/`else:`/`cond:`/`body:` line.
    fn write_text(&self, sources: Option<&SourceMap>, depth: usize, out: &mut String) {
        let pad = "  ".repeat(depth);
        for (i, n) in self.nodes.iter().enumerate() {
            let _ = write!(
                out,
                "{pad}{} = {} : {}",
                NodeId(i as u32),
                self.op_text_sym(i, n),
                self.type_text_sym(i, n)
            );
            if let Some(loc) = location(n, sources) {
                let _ = write!(out, "  # {loc}");
            }
            out.push('\n');
            for (name, g) in regions(&n.op) {
                let _ = writeln!(out, "{pad}  {name}:");
                g.write_text(sources, depth + 2, out);
            }
        }
        let outs: Vec<String> = self.outputs.iter().map(|o| o.to_string()).collect();
        let _ = writeln!(out, "{pad}return {}", outs.join(", "));
    }

    /// Graphviz DOT: one box per node labelled with its op and type, edges arg -> user.
    pub fn to_dot(&self) -> String {
        let mut out = String::from("digraph kiln {\n  node [shape=box, fontname=monospace];\n");
        let mut next = 0usize;
        self.write_dot("n", &mut next, &mut out);
        for (k, o) in self.outputs.iter().enumerate() {
            let _ = writeln!(out, "  out{k} [label=\"output {k}\", shape=oval];");
            let _ = writeln!(out, "  n{} -> out{k};", o.0);
        }
        out.push_str("}\n");
        out
    }

    /// Writes nodes named `{prefix}{i}`; each region of a control node becomes a
    /// `subgraph cluster_K` (K from `next`) whose nodes are prefixed `{prefix}{i}_{name}_`.
    fn write_dot(&self, prefix: &str, next: &mut usize, out: &mut String) {
        for (i, n) in self.nodes.iter().enumerate() {
            let label = format!(
                "%{i} = {}\\n{}",
                self.op_text_sym(i, n),
                self.type_text_sym(i, n)
            )
            .replace('"', "\\\"");
            let _ = writeln!(out, "  {prefix}{i} [label=\"{label}\"];");
            for a in &n.args {
                let _ = writeln!(out, "  {prefix}{} -> {prefix}{i};", a.0);
            }
            for (name, g) in regions(&n.op) {
                let sub = format!("{prefix}{i}_{name}_");
                let _ = writeln!(
                    out,
                    "  subgraph cluster_{next} {{\n  label=\"%{i} {name}\";",
                    next = *next
                );
                *next += 1;
                g.write_dot(&sub, next, out);
                for (k, o) in g.outputs.iter().enumerate() {
                    let _ = writeln!(
                        out,
                        "  {sub}{} -> {prefix}{i} [label=\"{k}\", style=dashed];",
                        o.0
                    );
                }
                out.push_str("  }\n");
            }
        }
    }
}
