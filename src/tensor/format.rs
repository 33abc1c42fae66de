//! Printing tensors exactly as PyTorch 2.15's `torch._tensor_str` (`print(t)`, `repr(t)`,
//! `str(t)`): one formatter per tensor (`int_mode`: every finite value integral prints as
//! `5.`; `sci_mode` when the nonzero finite max/min ratio exceeds 1000, the max exceeds 1e8
//! or the min is below 1e-4; `precision` decimals; a common width), nested brackets
//! indented under `tensor(`, rows wrapped at `linewidth`, summarisation with `...` past
//! `threshold` elements (`edgeitems` kept at each end of every dim), and the suffixes in
//! PyTorch's order (`size=`, `dtype=`, `grad_fn=<...>` or `requires_grad=True`), wrapped
//! as PyTorch wraps them. A parameter prints as `Parameter containing:\ntensor(...)`.
//! `torch.set_printoptions` sets the [`PrintOptions`] of the current thread.

use super::dtype::{default_float, with_elem, DType, Elem, Scalar};
use super::shape::fmt_shape;
use super::Tensor;
use std::cell::Cell;

/// `torch.set_printoptions`'s settings (PyTorch's `PRINT_OPTS`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PrintOptions {
    /// Digits after the point (fixed) or of the mantissa (scientific).
    pub precision: usize,
    /// More elements than this are summarised (`f64::INFINITY`: never).
    pub threshold: f64,
    /// Entries kept at each end of a summarised dim.
    pub edgeitems: usize,
    /// Characters per line before a row wraps.
    pub linewidth: usize,
    /// `Some`: force (or forbid) scientific notation; `None`: chosen per tensor.
    pub sci_mode: Option<bool>,
}

/// `set_printoptions(profile=...)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrintProfile {
    Default,
    Short,
    Full,
}

impl PrintOptions {
    pub const DEFAULT: PrintOptions = PrintOptions {
        precision: 4,
        threshold: 1000.0,
        edgeitems: 3,
        linewidth: 80,
        sci_mode: None,
    };

    /// These options with `profile`'s precision, threshold, edgeitems and linewidth.
    pub fn with_profile(self, profile: PrintProfile) -> PrintOptions {
        let (precision, threshold, edgeitems) = match profile {
            PrintProfile::Default => (4, 1000.0, 3),
            PrintProfile::Short => (2, 1000.0, 2),
            PrintProfile::Full => (4, f64::INFINITY, 3),
        };
        PrintOptions {
            precision,
            threshold,
            edgeitems,
            linewidth: 80,
            sci_mode: self.sci_mode,
        }
    }
}

thread_local! {
    static OPTIONS: Cell<PrintOptions> = const { Cell::new(PrintOptions::DEFAULT) };
}

/// The current thread's print options.
pub fn print_options() -> PrintOptions {
    OPTIONS.with(Cell::get)
}

/// Replaces the current thread's print options.
pub fn set_print_options(o: PrintOptions) {
    OPTIONS.with(|c| c.set(o));
}

/// Python's `f"{x:.{p}f}"`.
fn fixed(x: f64, p: usize) -> String {
    match nonfinite(x) {
        Some(s) => s.into(),
        None => format!("{x:.p$}"),
    }
}

/// Python's `f"{x:.{p}e}"` (`1.2346e-05`: a sign and at least two exponent digits).
fn sci(x: f64, p: usize) -> String {
    if let Some(s) = nonfinite(x) {
        return s.into();
    }
    let s = format!("{x:.p$e}");
    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = e.parse().unwrap_or(0);
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{m}e{sign}{:02}", exp.unsigned_abs())
}

fn nonfinite(x: f64) -> Option<&'static str> {
    if x.is_nan() {
        Some("nan")
    } else if x == f64::INFINITY {
        Some("inf")
    } else if x == f64::NEG_INFINITY {
        Some("-inf")
    } else {
        None
    }
}

fn plain(s: Scalar) -> String {
    match s {
        Scalar::Bool(b) => if b { "True" } else { "False" }.into(),
        Scalar::Int(i) => i.to_string(),
        Scalar::Float(f) => fixed(f, 4),
    }
}

/// PyTorch's `_Formatter`: how every element of one tensor prints.
struct Formatter {
    floating: bool,
    int_mode: bool,
    sci_mode: bool,
    max_width: usize,
    precision: usize,
}

impl Formatter {
    /// Built from the values that will print (the summarised ones past the threshold).
    fn new(vals: &[Scalar], floating: bool, o: &PrintOptions) -> Formatter {
        let mut f = Formatter {
            floating,
            int_mode: true,
            sci_mode: false,
            max_width: 1,
            precision: o.precision,
        };
        if !floating {
            f.max_width = vals.iter().map(|v| plain(*v).len()).fold(1, usize::max);
            return f;
        }
        let nz: Vec<f64> = vals
            .iter()
            .map(|v| v.as_f64())
            .filter(|x| x.is_finite() && *x != 0.0)
            .collect();
        if nz.is_empty() {
            return f;
        }
        let min = nz.iter().fold(f64::INFINITY, |m, x| m.min(x.abs()));
        let max = nz.iter().fold(0.0, |m: f64, x| m.max(x.abs()));
        f.int_mode = nz.iter().all(|x| x.ceil() == *x);
        f.sci_mode = o
            .sci_mode
            .unwrap_or(max / min > 1000.0 || max > 1.0e8 || min < 1.0e-4);
        let p = o.precision;
        f.max_width = nz
            .iter()
            .map(|&x| match (f.sci_mode, f.int_mode) {
                (true, _) => sci(x, p).len(),
                (false, true) => fixed(x, 0).len() + 1,
                (false, false) => fixed(x, p).len(),
            })
            .fold(1, usize::max);
        f
    }

    fn format(&self, v: Scalar) -> String {
        let ret = if self.floating {
            let x = v.as_f64();
            if self.sci_mode {
                sci(x, self.precision)
            } else if self.int_mode {
                let mut s = fixed(x, 0);
                if x.is_finite() {
                    s.push('.');
                }
                s
            } else {
                fixed(x, self.precision)
            }
        } else {
            plain(v)
        };
        format!("{ret:>w$}", w = self.max_width)
    }
}

/// A tensor's elements (row-major) with its shape, for rendering.
struct View<'a> {
    vals: &'a [Scalar],
    shape: &'a [usize],
}

impl<'a> View<'a> {
    /// Row `i` of a tensor of at least one dim.
    fn row(&self, i: usize) -> View<'a> {
        let rest = self.shape.get(1..).unwrap_or(&[]);
        let inner: usize = rest.iter().product();
        View {
            vals: self.vals.get(i * inner..(i + 1) * inner).unwrap_or(&[]),
            shape: rest,
        }
    }

    fn len(&self) -> usize {
        self.shape.first().copied().unwrap_or(0)
    }
}

/// The row indices a (summarised) dim of length `n` shows; `None` marks the `...`.
fn kept_rows(n: usize, summarize: bool, e: usize) -> Vec<Option<usize>> {
    if summarize && n > 2 * e {
        (0..e)
            .map(Some)
            .chain(std::iter::once(None))
            .chain((n - e..n).map(Some))
            .collect()
    } else {
        (0..n).map(Some).collect()
    }
}

/// PyTorch's `get_summarized_data`: the values the formatter measures.
fn summarized(v: &View, e: usize, out: &mut Vec<Scalar>) {
    match v.shape.len() {
        0 => out.extend(v.vals.first().copied()),
        1 => {
            let n = v.len();
            if n > 2 * e && e > 0 {
                out.extend_from_slice(v.vals.get(..e).unwrap_or(&[]));
                out.extend_from_slice(v.vals.get(n - e..).unwrap_or(&[]));
            } else {
                // (with edgeitems=0, `t[:0]` and `t[-0:]` make the whole vector)
                out.extend_from_slice(v.vals);
            }
        }
        _ if e == 0 => {}
        _ => {
            for i in kept_rows(v.len(), true, e).into_iter().flatten() {
                summarized(&v.row(i), e, out);
            }
        }
    }
}

struct Printer<'f> {
    fmt: &'f Formatter,
    o: PrintOptions,
    summarize: bool,
}

impl Printer<'_> {
    /// PyTorch's `_tensor_str_with_formatter`.
    fn tensor(&self, v: &View, indent: usize) -> String {
        match v.shape.len() {
            0 => v
                .vals
                .first()
                .map(|s| self.fmt.format(*s))
                .unwrap_or_default(),
            1 => self.vector(v, indent),
            dim => {
                let slices: Vec<String> = kept_rows(v.len(), self.summarize, self.o.edgeitems)
                    .into_iter()
                    .map(|r| match r {
                        Some(i) => self.tensor(&v.row(i), indent + 1),
                        None => "...".into(),
                    })
                    .collect();
                let sep = format!(",{}{}", "\n".repeat(dim - 1), " ".repeat(indent + 1));
                format!("[{}]", slices.join(&sep))
            }
        }
    }

    /// PyTorch's `_vector_str`.
    fn vector(&self, v: &View, indent: usize) -> String {
        let element_length = self.fmt.max_width + 2;
        let per_line = (self.o.linewidth.saturating_sub(indent) / element_length).max(1);
        let e = self.o.edgeitems;
        let data: Vec<String> = if self.summarize && e == 0 {
            vec!["...".into()]
        } else {
            kept_rows(v.len(), self.summarize, e)
                .into_iter()
                .map(|r| match r.and_then(|i| v.vals.get(i)) {
                    Some(s) => self.fmt.format(*s),
                    None => " ...".into(),
                })
                .collect()
        };
        let lines: Vec<String> = data.chunks(per_line).map(|c| c.join(", ")).collect();
        format!(
            "[{}]",
            lines.join(&format!(",\n{}", " ".repeat(indent + 1)))
        )
    }
}

/// PyTorch's `_add_suffixes`: `, suffix` each, on a new line when it would pass the
/// line width.
fn add_suffixes(mut s: String, suffixes: &[String], indent: usize, linewidth: usize) -> String {
    let mut last_line_len = match s.rfind('\n') {
        Some(p) => s.len() - p + 1,
        None => s.len() + 2,
    };
    for suffix in suffixes {
        if last_line_len + suffix.len() + 2 > linewidth {
            s.push_str(",\n");
            s.push_str(&" ".repeat(indent));
            last_line_len = indent + suffix.len();
        } else {
            s.push_str(", ");
            last_line_len += suffix.len() + 2;
        }
        s.push_str(suffix);
    }
    s.push(')');
    s
}

fn elements(t: &Tensor) -> crate::error::Result<Vec<Scalar>> {
    with_elem!(t.dtype(), T => t.read(|s: &[T]| s.iter().map(|x| x.to_scalar()).collect()))
}

/// The text between `tensor(` and the suffixes of a nonempty tensor.
fn body(t: &Tensor, o: PrintOptions, indent: usize) -> String {
    let vals = match elements(t) {
        Ok(v) => v,
        Err(e) => return format!("<unreadable: {}>", e.message),
    };
    let view = View {
        vals: &vals,
        shape: t.shape(),
    };
    let summarize = t.numel() as f64 > o.threshold;
    let fmt = if summarize {
        let mut kept = Vec::new();
        summarized(&view, o.edgeitems, &mut kept);
        Formatter::new(&kept, t.dtype().is_float(), &o)
    } else {
        Formatter::new(&vals, t.dtype().is_float(), &o)
    };
    Printer {
        fmt: &fmt,
        o,
        summarize,
    }
    .tensor(&view, indent)
}

/// `print(t)` / `repr(t)` / `str(t)`.
pub fn format_tensor(t: &Tensor) -> String {
    format_tensor_as(t, grad_suffix(t).as_deref())
}

/// The autograd suffix of `t`'s repr: `grad_fn=<...>`, `requires_grad=True` or none.
pub fn grad_suffix(t: &Tensor) -> Option<String> {
    match t.grad_fn() {
        Some(n) => Some(format!("grad_fn=<{}>", n.name())),
        None if t.requires_grad() => Some("requires_grad=True".into()),
        None => None,
    }
}

/// `format_tensor` with autograd suffix `grad` in place of `t`'s own (a compiled print
/// shows the one eager's value had at capture).
pub fn format_tensor_as(t: &Tensor, grad: Option<&str>) -> String {
    crate::ir::record::graph_break(crate::ir::record::BreakReason::TensorToPython("str"));
    let o = print_options();
    let prefix = "tensor(";
    let indent = prefix.len();
    let mut suffixes = Vec::new();
    let dtype_suffix = || format!("dtype=torch.{}", t.dtype().name());
    let text = if t.numel() == 0 {
        if t.ndim() != 1 {
            suffixes.push(format!("size={}", fmt_shape(t.shape())));
        }
        // nothing shows the dtype of an empty tensor: named unless the default float
        if t.dtype() != default_float() {
            suffixes.push(dtype_suffix());
        }
        "[]".to_string()
    } else {
        if o.edgeitems == 0 {
            suffixes.push(format!("size={}", fmt_shape(t.shape())));
        }
        let implied = t.dtype() == default_float() || matches!(t.dtype(), DType::I64 | DType::Bool);
        if !implied {
            suffixes.push(dtype_suffix());
        }
        body(t, o, indent)
    };
    suffixes.extend(grad.map(str::to_string));
    let s = add_suffixes(format!("{prefix}{text}"), &suffixes, indent, o.linewidth);
    if t.is_parameter() {
        format!("Parameter containing:\n{s}")
    } else {
        s
    }
}
