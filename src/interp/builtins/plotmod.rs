//! The native `_plot` module behind `stdlib/matplotlib/pyplot.dl`: figures live in a
//! per-thread table keyed by id (the Kiln `Figure` holds its id); each function checks
//! its arguments as Matplotlib does and records an artist or a setting in
//! `crate::plot::model`; `savefig` renders with `crate::plot::render`.

use super::mathmod::module;
use super::methods::str_arg;
use super::numarray::{number, numbers};
use super::{arity, tensor::te};
use crate::interp::value::{ModuleObj, Value};
use crate::interp::{value_err, Interp, R};
use crate::plot::model::{self, Artist, Axes, Figure, LineStyle, Scale};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

type Kw<'a> = &'a [(Rc<str>, Value)];

thread_local! {
    static FIGURES: RefCell<(usize, HashMap<usize, Figure>)> = RefCell::new((0, HashMap::new()));
}

pub fn plot_module() -> Rc<ModuleObj> {
    module(
        "_plot",
        &[
            ("figure", figure),
            ("close", close),
            ("plot", plot),
            ("scatter", scatter),
            ("hist", hist),
            ("imshow", imshow),
            ("set_title", set_title),
            ("set_xlabel", set_xlabel),
            ("set_ylabel", set_ylabel),
            ("legend", legend),
            ("grid", grid),
            ("set_xlim", set_xlim),
            ("set_ylim", set_ylim),
            ("set_yscale", set_yscale),
            ("savefig", savefig),
            ("imread", imread),
            ("png_base64", png_base64),
            ("displays", displays),
        ],
        &[],
    )
}

fn idx(v: &Value, what: &str) -> R<usize> {
    match v {
        Value::Int(i) if *i >= 0 => Ok(*i as usize),
        _ => Err(value_err(format!("{what}: expected a non-negative int"))),
    }
}

/// Runs `f` on axes `args[1]` of figure `args[0]`.
fn with_axes<T>(args: &[Value], f: impl FnOnce(&mut Axes) -> R<T>) -> R<T> {
    let (fig, ax) = (idx(&args[0], "figure")?, idx(&args[1], "axes")?);
    FIGURES.with(|t| {
        let mut t = t.borrow_mut();
        let axes =
            t.1.get_mut(&fig)
                .and_then(|f| f.axes.get_mut(ax))
                .ok_or_else(|| value_err("this figure was closed"))?;
        f(axes)
    })
}

/// `figure(nrows, ncols, width_in, height_in, dpi)`: a new figure's id.
fn figure(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("figure", args, 5, 5)?;
    let (r, c) = (idx(&args[0], "nrows")?, idx(&args[1], "ncols")?);
    let size = (number(&args[2], "figsize")?, number(&args[3], "figsize")?);
    let fig = Figure::new(r, c, size, number(&args[4], "dpi")?).map_err(te)?;
    let id = FIGURES.with(|t| {
        let mut t = t.borrow_mut();
        t.0 += 1;
        let id = t.0;
        t.1.insert(id, fig);
        id
    });
    Ok(Value::Int(id as i64))
}

/// `close(id)`: forgets the figure (None: all figures).
fn close(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("close", args, 1, 1)?;
    match &args[0] {
        Value::None => FIGURES.with(|t| t.borrow_mut().1.clear()),
        v => {
            let id = idx(v, "close")?;
            FIGURES.with(|t| t.borrow_mut().1.remove(&id));
        }
    }
    Ok(Value::None)
}

fn opt_str(v: &Value, what: &str) -> R<Option<String>> {
    match v {
        Value::None => Ok(None),
        v => Ok(Some(str_arg(v, what)?.to_string())),
    }
}

/// A 1-d data argument (a list or a tensor of any shape with one non-unit axis).
fn series(v: &Value, what: &str) -> R<Vec<f64>> {
    let (shape, vals) = numbers(v, what)?;
    if shape.iter().filter(|&&d| d != 1).count() > 1 {
        return Err(value_err(format!(
            "{what}: expected 1-d data, got shape {shape:?}"
        )));
    }
    Ok(vals)
}

/// `plot(fig, ax, x or None, y, fmt, color, label, linestyle, marker)`.
fn plot(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("plot", args, 9, 9)?;
    let y = series(&args[3], "plot")?;
    let x = match &args[2] {
        Value::None => (0..y.len()).map(|i| i as f64).collect(),
        v => series(v, "plot")?,
    };
    if x.len() != y.len() {
        return Err(value_err(format!(
            "x and y must have same first dimension, but have shapes ({},) and ({},)",
            x.len(),
            y.len()
        )));
    }
    let (mut color, mut marker, mut style) = match opt_str(&args[4], "plot")? {
        Some(f) => model::parse_fmt(&f).map_err(te)?,
        None => (None, None, None),
    };
    if let Some(c) = opt_str(&args[5], "color")? {
        color = Some(model::parse_color(&c).map_err(te)?);
    }
    if let Some(ls) = opt_str(&args[7], "linestyle")? {
        style = Some(match model::parse_fmt(&ls).map_err(te)? {
            (None, None, Some(s)) => s,
            _ if ls == "None" || ls == "none" || ls.is_empty() => LineStyle::None,
            _ => return Err(value_err(format!("'{ls}' is not a valid value for ls"))),
        });
    }
    if let Some(m) = opt_str(&args[8], "marker")? {
        marker = match model::parse_fmt(&m).map_err(te)? {
            (None, Some(mk), _) => Some(mk),
            _ => return Err(value_err(format!("Unrecognized marker style '{m}'"))),
        };
    }
    let label = opt_str(&args[6], "label")?;
    with_axes(args, |ax| {
        let color = color.unwrap_or_else(|| ax.next_color());
        ax.artists.push(Artist::Line {
            x,
            y,
            color,
            style: style.unwrap_or(LineStyle::Solid),
            marker,
            label,
        });
        Ok(Value::None)
    })
}

/// `scatter(fig, ax, x, y, color, label)`.
fn scatter(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("scatter", args, 6, 6)?;
    let (x, y) = (series(&args[2], "scatter")?, series(&args[3], "scatter")?);
    if x.len() != y.len() {
        return Err(value_err("x and y must be the same size"));
    }
    let color = opt_str(&args[4], "color")?
        .map(|c| model::parse_color(&c))
        .transpose()
        .map_err(te)?;
    let label = opt_str(&args[5], "label")?;
    with_axes(args, |ax| {
        let color = color.unwrap_or_else(|| ax.next_color());
        ax.artists.push(Artist::Scatter { x, y, color, label });
        Ok(Value::None)
    })
}

/// `hist(fig, ax, values, bins, range or None, color, label)`: `(counts, edges)`.
fn hist(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("hist", args, 7, 7)?;
    let (_, vals) = numbers(&args[2], "hist")?;
    let bins = match &args[3] {
        Value::Int(n) if *n > 0 => *n as usize,
        _ => return Err(value_err("`bins` must be positive, when an integer")),
    };
    let range = match &args[4] {
        Value::None => None,
        v => match series(v, "hist")?.as_slice() {
            [a, b] if a <= b => Some((*a, *b)),
            _ => return Err(value_err("max must be larger than min in range parameter.")),
        },
    };
    let (edges, counts) = model::histogram(&vals, bins, range).map_err(te)?;
    let color = opt_str(&args[5], "color")?
        .map(|c| model::parse_color(&c))
        .transpose()
        .map_err(te)?;
    let label = opt_str(&args[6], "label")?;
    let floats = |v: &[f64]| Value::list(v.iter().map(|x| Value::Float(*x)).collect());
    let out = Value::Tuple(Rc::from(vec![floats(&counts), floats(&edges)]));
    with_axes(args, |ax| {
        let color = color.unwrap_or_else(|| ax.next_color());
        ax.artists.push(Artist::Bars {
            edges,
            counts,
            color,
            label,
        });
        Ok(out)
    })
}

/// `imshow(fig, ax, img)`: `H x W` (gray, scaled from its min..max as Matplotlib's
/// default normalisation) or `H x W x 3|4` (floats in [0, 1], ints in 0..255).
fn imshow(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("imshow", args, 3, 3)?;
    let (shape, vals) = numbers(&args[2], "imshow")?;
    let ints = matches!(&args[2], Value::Tensor(t) if t.dtype() != crate::tensor::DType::F32);
    let (h, w, c, pixels) = match shape.as_slice() {
        [h, w] => {
            let lo = vals
                .iter()
                .copied()
                .filter(|v| v.is_finite())
                .fold(f64::INFINITY, f64::min);
            let hi = vals
                .iter()
                .copied()
                .filter(|v| v.is_finite())
                .fold(f64::NEG_INFINITY, f64::max);
            let span = if hi > lo { hi - lo } else { 1.0 };
            let px = vals
                .iter()
                .map(|v| if v.is_finite() { (v - lo) / span } else { 1.0 })
                .collect();
            (*h, *w, 1, px)
        }
        [h, w, c @ (3 | 4)] => {
            let s = if ints { 255.0 } else { 1.0 };
            (*h, *w, *c, vals.iter().map(|v| v / s).collect())
        }
        _ => {
            return Err(crate::interp::type_err(format!(
                "Invalid shape {shape:?} for image data"
            )))
        }
    };
    if h == 0 || w == 0 || h * w > 1 << 20 {
        return Err(value_err(format!("imshow: cannot show a {h}x{w} image")));
    }
    with_axes(args, |ax| {
        ax.artists.push(Artist::Image {
            height: h,
            width: w,
            channels: c,
            pixels,
        });
        Ok(Value::None)
    })
}

fn text_setter(args: &[Value], what: &str, f: impl FnOnce(&mut Axes, String)) -> R<Value> {
    arity(what, args, 3, 3)?;
    let s = match &args[2] {
        Value::Str(s) => s.to_string(),
        other => {
            return Err(crate::interp::type_err(format!(
                "{what}() expects a str, not {}",
                other.type_name()
            )))
        }
    };
    with_axes(args, |ax| {
        f(ax, s);
        Ok(Value::None)
    })
}

fn set_title(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    text_setter(args, "title", |ax, s| ax.title = s)
}

fn set_xlabel(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    text_setter(args, "xlabel", |ax, s| ax.xlabel = s)
}

fn set_ylabel(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    text_setter(args, "ylabel", |ax, s| ax.ylabel = s)
}

fn flag(args: &[Value], what: &str, f: impl FnOnce(&mut Axes, bool)) -> R<Value> {
    arity(what, args, 3, 3)?;
    let on = !matches!(args[2], Value::Bool(false));
    with_axes(args, |ax| {
        f(ax, on);
        Ok(Value::None)
    })
}

fn legend(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    flag(args, "legend", |ax, on| ax.legend = on)
}

fn grid(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    flag(args, "grid", |ax, on| ax.grid = on)
}

/// `(lo, hi)` from `args[2]`, `args[3]` (None keeps the current end).
fn limits(args: &[Value], what: &str, cur: Option<(f64, f64)>) -> R<Option<(f64, f64)>> {
    let get = |v: &Value| -> R<Option<f64>> {
        match v {
            Value::None => Ok(None),
            v => {
                let x = number(v, what)?;
                if x.is_finite() {
                    Ok(Some(x))
                } else {
                    Err(value_err("Axis limits cannot be NaN or Inf"))
                }
            }
        }
    };
    match (get(&args[2])?, get(&args[3])?, cur) {
        (Some(a), Some(b), _) => Ok(Some((a, b))),
        (Some(a), None, Some((_, b))) | (None, Some(b), Some((a, _))) => Ok(Some((a, b))),
        (None, None, c) => Ok(c),
        _ => Err(value_err(format!(
            "{what}() needs both limits the first time"
        ))),
    }
}

fn set_xlim(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("xlim", args, 4, 4)?;
    with_axes(args, |ax| {
        let cur = Some(ax.xlim.unwrap_or(ax.limits().0));
        ax.xlim = limits(args, "xlim", cur)?;
        Ok(Value::None)
    })
}

fn set_ylim(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("ylim", args, 4, 4)?;
    with_axes(args, |ax| {
        let cur = Some(ax.ylim.unwrap_or(ax.limits().1));
        ax.ylim = limits(args, "ylim", cur)?;
        Ok(Value::None)
    })
}

fn set_yscale(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("yscale", args, 3, 3)?;
    let s = match str_arg(&args[2], "yscale")? {
        "linear" => Scale::Linear,
        "log" => Scale::Log,
        other => {
            return Err(value_err(format!(
                "'{other}' is not a valid value for scale; supported values are 'linear', 'log'"
            )))
        }
    };
    with_axes(args, |ax| {
        ax.yscale = s;
        Ok(Value::None)
    })
}

/// `savefig(fig, path, format or None)`: PNG or SVG, by `format` or the extension.
fn savefig(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("savefig", args, 3, 3)?;
    let id = idx(&args[0], "figure")?;
    let path = str_arg(&args[1], "savefig")?.to_string();
    let fmt = match opt_str(&args[2], "format")? {
        Some(f) => f.to_ascii_lowercase(),
        None => std::path::Path::new(&path)
            .extension()
            .map_or("png".into(), |e| e.to_string_lossy().to_ascii_lowercase()),
    };
    let fig = FIGURES.with(|t| t.borrow().1.get(&id).cloned());
    let fig = fig.ok_or_else(|| value_err("this figure was closed"))?;
    let bytes = match fmt.as_str() {
        "png" => crate::plot::render::png(&fig).map_err(te)?,
        "svg" => crate::plot::render::svg(&fig).map_err(te)?.into_bytes(),
        other => {
            return Err(value_err(format!(
                "Format '{other}' is not supported (supported formats: png, svg)"
            )))
        }
    };
    super::fileobj::fs_gate(me, "savefig")?;
    let p = std::path::Path::new(&path);
    crate::io::fs_gate::check(p, crate::io::fs_gate::Access::Write).map_err(te)?;
    std::fs::write(p, bytes).map_err(|e| super::fileobj::os_error(&e, &path))?;
    Ok(Value::None)
}

/// `imread(path)`: a PNG as an `H x W x C` float tensor in [0, 1] (Matplotlib's).
fn imread(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("imread", args, 1, 1)?;
    super::fileobj::fs_gate(me, "imread")?;
    let path = std::path::PathBuf::from(str_arg(&args[0], "imread")?);
    let bytes = crate::io::read_file(&path).map_err(te)?;
    let png = crate::io::png::decode(&bytes).map_err(te)?;
    let px: Vec<f32> = png.pixels.iter().map(|&p| p as f32 / 255.0).collect();
    let t = crate::tensor::creation::from_f32(px, &[png.height, png.width, png.channels])
        .map_err(te)?;
    Ok(Value::Tensor(t))
}

/// `_plot.png_base64(fig)`: the figure rendered as PNG, base64-encoded (a notebook's
/// `image/png` data, for `Figure._repr_png_`).
fn png_base64(_: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    use base64::Engine as _;
    arity("png_base64", args, 1, 1)?;
    let id = idx(&args[0], "figure")?;
    let fig = FIGURES.with(|t| t.borrow().1.get(&id).cloned());
    let fig = fig.ok_or_else(|| value_err("this figure was closed"))?;
    let bytes = crate::plot::render::png(&fig).map_err(te)?;
    Ok(Value::str(
        &base64::engine::general_purpose::STANDARD.encode(bytes),
    ))
}

/// `_plot.displays()`: whether the host shows rich output (`plt.show()` displays then).
fn displays(me: &mut Interp, args: &[Value], _: Kw) -> R<Value> {
    arity("displays", args, 0, 0)?;
    Ok(Value::Bool(me.has_display()))
}
