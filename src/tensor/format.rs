//! Printing tensors as SPEC section 3 says, following PyTorch's layout:
//! `tensor([1.0, 2.5])`, `tensor([[1, 2],\n        [3, 4]])`, `tensor(True)`.
//!
//! Choices (documented): floats print with at most 4 decimals, trailing zeros trimmed
//! to one (`0.3333`, `2.0`); in 2-D and higher tensors every element is right-aligned
//! to a common width (PyTorch's column alignment); 1-D tensors are not padded. Scientific notation
//! (`1.0e+10`, `1.2346e-05`, mantissa trimmed the same way) is used for the whole
//! tensor when a finite nonzero |value| is >= 1e8 or < 1e-4 (PyTorch's thresholds,
//! without its max/min-ratio rule). Past 1000 elements each dim longer than 6 shows
//! its first and last 3 entries around `...`. Rows wrap at 80 columns. The `dtype=`
//! suffix appears as PyTorch's for a dtype the values do not imply (`dtype=torch.float64`
//! under the float32 default, `torch.int32`, `torch.uint8`), and for empty int64 / bool
//! tensors (`tensor([], dtype=int64)`); empty multi-dim tensors add `size=(0, 3)`.

use super::dtype::{default_float, DType, Scalar};
use super::shape::fmt_shape;
use super::Tensor;

const EDGE: usize = 3;
const THRESHOLD: usize = 1000;
const LINE_WIDTH: usize = 80;

fn trim_decimals(s: &str) -> String {
    if !s.contains('.') {
        return s.to_string();
    }
    let t = s.trim_end_matches('0');
    if t.ends_with('.') {
        format!("{t}0")
    } else {
        t.to_string()
    }
}

fn fmt_float(x: f64, sci: bool) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if sci {
        let s = format!("{:.4e}", x);
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let exp: i32 = e.parse().unwrap_or(0);
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{}e{}{:02}", trim_decimals(m), sign, exp.abs());
    }
    let s = format!("{:.4}", x);
    let s = trim_decimals(&s);
    if s == "-0.0" && x == 0.0 {
        return "-0.0".into();
    }
    s
}

fn use_sci(vals: &[f64]) -> bool {
    vals.iter()
        .filter(|v| v.is_finite() && **v != 0.0)
        .any(|v| v.abs() >= 1e8 || v.abs() < 1e-4)
}

fn fmt_scalar(s: Scalar, sci: bool) -> String {
    match s {
        Scalar::Bool(b) => if b { "True" } else { "False" }.into(),
        Scalar::Int(i) => i.to_string(),
        Scalar::Float(f) => fmt_float(f, sci),
    }
}

/// Element strings of the (possibly summarised) tensor, row-major over the kept indices.
struct Grid {
    shape: Vec<usize>,
    cells: Vec<String>,
    /// Per dim: was it cut to its first and last `EDGE` entries?
    cut: Vec<bool>,
}

impl Grid {
    fn new(t: &Tensor) -> Option<Grid> {
        let summarize = t.numel() > THRESHOLD;
        // indices kept per dim
        let kept: Vec<Vec<usize>> = t
            .shape()
            .iter()
            .map(|&n| {
                if summarize && n > 2 * EDGE {
                    (0..EDGE).chain(n - EDGE..n).collect()
                } else {
                    (0..n).collect()
                }
            })
            .collect();
        let flat = t.tolist().ok()?;
        let mut scalars = Vec::new();
        collect_kept(&flat, &kept, &mut scalars);
        let floats: Vec<f64> = scalars
            .iter()
            .filter_map(|s| match s {
                Scalar::Float(f) => Some(*f),
                _ => None,
            })
            .collect();
        let sci = use_sci(&floats);
        let cells = scalars.into_iter().map(|s| fmt_scalar(s, sci)).collect();
        Some(Grid {
            shape: kept.iter().map(|k| k.len()).collect(),
            cells,
            cut: t
                .shape()
                .iter()
                .map(|&n| summarize && n > 2 * EDGE)
                .collect(),
        })
    }
}

fn collect_kept(l: &super::convert::TensorList, kept: &[Vec<usize>], out: &mut Vec<Scalar>) {
    use super::convert::TensorList;
    match l {
        TensorList::Scalar(s) => out.push(*s),
        TensorList::List(items) => {
            if let Some((first, rest)) = kept.split_first() {
                for &i in first {
                    if let Some(it) = items.get(i) {
                        collect_kept(it, rest, out);
                    }
                }
            }
        }
    }
}

/// Render `cells[start..]` for a sub-grid of `shape` at nesting `depth`.
fn render(g: &Grid, dim: usize, start: usize, indent: usize, width: usize, out: &mut String) {
    let shape = &g.shape[dim..];
    let Some((&n, rest)) = shape.split_first() else {
        if let Some(c) = g.cells.get(start) {
            out.push_str(&format!("{c:>width$}"));
        }
        return;
    };
    let inner: usize = rest.iter().product();
    let orig_big = g.cut.get(dim).copied().unwrap_or(false);
    out.push('[');
    if rest.is_empty() {
        let cell = g
            .cells
            .iter()
            .map(|c| c.len())
            .max()
            .unwrap_or(1)
            .max(width);
        let per_line = ((LINE_WIDTH.saturating_sub(indent + 1)) / (cell + 2)).max(1);
        for i in 0..n {
            if i > 0 {
                out.push(',');
                if i % per_line == 0 {
                    out.push('\n');
                    out.push_str(&" ".repeat(indent + 1));
                } else {
                    out.push(' ');
                }
            }
            if orig_big && i == EDGE {
                out.push_str(" ..., ");
            }
            if let Some(c) = g.cells.get(start + i) {
                out.push_str(&format!("{c:>width$}"));
            }
        }
    } else {
        let blank = "\n".repeat(rest.len());
        for i in 0..n {
            if i > 0 {
                out.push(',');
                out.push_str(&blank);
                out.push_str(&" ".repeat(indent + 1));
            }
            if orig_big && i == EDGE {
                out.push_str("...,");
                out.push_str(&blank);
                out.push_str(&" ".repeat(indent + 1));
            }
            render(g, dim + 1, start + i * inner, indent + 1, width, out);
        }
    }
    out.push(']');
}

/// `print(t)` / `repr(t)`.
pub fn format_tensor(t: &Tensor) -> String {
    crate::ir::record::graph_break(crate::ir::record::BreakReason::TensorToPython("str"));
    let mut body = String::from("tensor(");
    let mut suffix = Vec::new();
    if t.numel() == 0 {
        body.push_str("[]");
        if t.ndim() != 1 {
            suffix.push(format!("size={}", fmt_shape(t.shape())));
        }
        match t.dtype() {
            DType::I64 | DType::Bool => suffix.push(format!("dtype={}", t.dtype().name())),
            DType::F32 | DType::F64 | DType::I32 | DType::U8 => {}
        }
    } else if let Some(g) = Grid::new(t) {
        if t.ndim() == 0 {
            body.push_str(g.cells.first().map_or("", |s| s.as_str()));
        } else {
            let width = if t.ndim() >= 2 {
                g.cells.iter().map(|c| c.len()).max().unwrap_or(1)
            } else {
                0
            };
            render(&g, 0, 0, 7, width, &mut body);
        }
    }
    // PyTorch's suffix for a dtype its printing does not imply (float64 under the
    // float32 default, int32, uint8).
    let implied = match t.dtype() {
        DType::F32 | DType::F64 => t.dtype() == default_float(),
        DType::I64 | DType::Bool => true,
        DType::I32 | DType::U8 => false,
    };
    if !implied {
        suffix.push(format!("dtype=torch.{}", t.dtype().name()));
    }
    if t.requires_grad() {
        match t.grad_fn() {
            Some(n) => suffix.push(format!("grad_fn=<{}>", n.name())),
            None => suffix.push("requires_grad=True".into()),
        }
    }
    for s in suffix {
        body.push_str(", ");
        body.push_str(&s);
    }
    body.push(')');
    body
}
