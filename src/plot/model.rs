//! What a figure holds, in data coordinates: a grid of axes, each with its artists and
//! decorations. Artist colours default to Matplotlib's `tab10` cycle, per axes.

use crate::error::{Error, ErrorKind, Result};

/// An RGB colour.
pub type Rgb = (u8, u8, u8);

/// Matplotlib's default property cycle (`tab10`).
pub const CYCLE: [Rgb; 10] = [
    (0x1f, 0x77, 0xb4),
    (0xff, 0x7f, 0x0e),
    (0x2c, 0xa0, 0x2c),
    (0xd6, 0x27, 0x28),
    (0x94, 0x67, 0xbd),
    (0x8c, 0x56, 0x4b),
    (0xe3, 0x77, 0xc2),
    (0x7f, 0x7f, 0x7f),
    (0xbc, 0xbd, 0x22),
    (0x17, 0xbe, 0xcf),
];

fn value_error(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::ValueError, msg, None)
}

/// A line's dash pattern.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LineStyle {
    Solid,
    Dashed,
    Dotted,
    DashDot,
    None,
}

/// A point marker.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Marker {
    Circle,
    Point,
    Square,
    Triangle,
    Cross,
    Plus,
}

/// One thing drawn in an axes.
#[derive(Debug, Clone, PartialEq)]
pub enum Artist {
    Line {
        x: Vec<f64>,
        y: Vec<f64>,
        color: Rgb,
        style: LineStyle,
        marker: Option<Marker>,
        label: Option<String>,
    },
    Scatter {
        x: Vec<f64>,
        y: Vec<f64>,
        color: Rgb,
        label: Option<String>,
    },
    /// Histogram bars: `edges` has one more entry than `counts`.
    Bars {
        edges: Vec<f64>,
        counts: Vec<f64>,
        color: Rgb,
        label: Option<String>,
    },
    /// An image, `height x width x channels` values in [0, 1] (1 channel: gray).
    Image {
        height: usize,
        width: usize,
        channels: usize,
        pixels: Vec<f64>,
    },
}

impl Artist {
    pub fn label(&self) -> Option<(&str, Rgb)> {
        match self {
            Artist::Line { label, color, .. }
            | Artist::Scatter { label, color, .. }
            | Artist::Bars { label, color, .. } => label.as_deref().map(|l| (l, *color)),
            Artist::Image { .. } => None,
        }
    }
}

/// The y-axis scale.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Scale {
    #[default]
    Linear,
    Log,
}

/// One axes: artists, labels, limits.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Axes {
    pub artists: Vec<Artist>,
    pub title: String,
    pub xlabel: String,
    pub ylabel: String,
    pub legend: bool,
    pub grid: bool,
    pub xlim: Option<(f64, f64)>,
    pub ylim: Option<(f64, f64)>,
    pub yscale: Scale,
    /// Artists that took a colour from the cycle so far.
    pub cycled: usize,
}

impl Axes {
    /// The next colour of the cycle.
    pub fn next_color(&mut self) -> Rgb {
        let c = CYCLE[self.cycled % CYCLE.len()];
        self.cycled += 1;
        c
    }

    /// The data limits of the artists, padded by 5% as Matplotlib's margins (images
    /// span their pixels exactly); `xlim`/`ylim` override.
    pub fn limits(&self) -> ((f64, f64), (f64, f64)) {
        let (mut xs, mut ys) = (Vec::new(), Vec::new());
        let mut image = None;
        for a in &self.artists {
            match a {
                Artist::Line { x, y, .. } | Artist::Scatter { x, y, .. } => {
                    for (&a, &b) in x.iter().zip(y) {
                        let ok_y = b.is_finite() && (self.yscale == Scale::Linear || b > 0.0);
                        if a.is_finite() && ok_y {
                            xs.push(a);
                            ys.push(b);
                        }
                    }
                }
                Artist::Bars { edges, counts, .. } => {
                    xs.extend(edges.iter().copied());
                    ys.extend(
                        counts
                            .iter()
                            .copied()
                            .filter(|c| self.yscale == Scale::Linear || *c > 0.0),
                    );
                    if self.yscale == Scale::Linear {
                        ys.push(0.0);
                    }
                }
                Artist::Image { height, width, .. } => image = Some((*height, *width)),
            }
        }
        let pad = |v: &[f64], log: bool| -> (f64, f64) {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if !lo.is_finite() {
                return if log { (1.0, 10.0) } else { (0.0, 1.0) };
            }
            if log {
                let (l, h) = (lo.log10(), hi.log10());
                let m = if h > l { (h - l) * 0.05 } else { 0.5 };
                return (10f64.powf(l - m), 10f64.powf(h + m));
            }
            let m = if hi > lo {
                (hi - lo) * 0.05
            } else {
                lo.abs().max(1.0) * 0.05
            };
            (lo - m, hi + m)
        };
        let (mut xl, mut yl) = (pad(&xs, false), pad(&ys, self.yscale == Scale::Log));
        if let (Some((h, w)), true) = (image, xs.is_empty()) {
            xl = (-0.5, w as f64 - 0.5);
            yl = (h as f64 - 0.5, -0.5);
        }
        (self.xlim.unwrap_or(xl), self.ylim.unwrap_or(yl))
    }
}

/// A figure: `nrows x ncols` axes on a `width x height` pixel canvas.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub width: u32,
    pub height: u32,
    pub nrows: usize,
    pub ncols: usize,
    pub axes: Vec<Axes>,
}

impl Figure {
    /// A figure of `figsize` inches at `dpi` (Matplotlib: 6.4 x 4.8 at 100).
    pub fn new(nrows: usize, ncols: usize, figsize: (f64, f64), dpi: f64) -> Result<Figure> {
        let px = |inches: f64| {
            let p = (inches * dpi).round();
            if p.is_finite() && (1.0..=8192.0).contains(&p) {
                Ok(p as u32)
            } else {
                Err(value_error(format!(
                    "figure size {inches} inches at {dpi} dpi must be 1 to 8192 pixels"
                )))
            }
        };
        if nrows == 0 || ncols == 0 || nrows * ncols > 64 {
            return Err(value_error(format!(
                "Number of rows and columns must be positive integers (at most 64 axes), not {nrows} and {ncols}"
            )));
        }
        Ok(Figure {
            width: px(figsize.0)?,
            height: px(figsize.1)?,
            nrows,
            ncols,
            axes: vec![Axes::default(); nrows * ncols],
        })
    }
}

/// Matplotlib's single-letter colours.
fn letter_color(c: char) -> Option<Rgb> {
    Some(match c {
        'b' => (0, 0, 255),
        'g' => (0, 128, 0),
        'r' => (255, 0, 0),
        'c' => (0, 191, 191),
        'm' => (191, 0, 191),
        'y' => (191, 191, 0),
        'k' => (0, 0, 0),
        'w' => (255, 255, 255),
        _ => return None,
    })
}

/// A colour argument: a letter, a `tab:` or basic name, `#rrggbb`, or `CN`.
pub fn parse_color(s: &str) -> Result<Rgb> {
    let named = match s {
        "blue" => Some((0, 0, 255)),
        "green" => Some((0, 128, 0)),
        "red" => Some((255, 0, 0)),
        "black" => Some((0, 0, 0)),
        "white" => Some((255, 255, 255)),
        "gray" | "grey" => Some((128, 128, 128)),
        "orange" => Some((255, 165, 0)),
        "purple" => Some((128, 0, 128)),
        _ => None,
    };
    if let Some(c) = named {
        return Ok(c);
    }
    let mut ch = s.chars();
    if let (Some(c), None) = (ch.next(), ch.next()) {
        if let Some(rgb) = letter_color(c) {
            return Ok(rgb);
        }
    }
    if let Some(n) = s.strip_prefix('C').and_then(|n| n.parse::<usize>().ok()) {
        return Ok(CYCLE[n % CYCLE.len()]);
    }
    if let Some(h) = s.strip_prefix('#').filter(|h| h.len() == 6 && h.is_ascii()) {
        let p = |i: usize| u8::from_str_radix(&h[i..i + 2], 16);
        if let (Ok(r), Ok(g), Ok(b)) = (p(0), p(2), p(4)) {
            return Ok((r, g, b));
        }
    }
    Err(value_error(format!("'{s}' is not a valid color value.")))
}

/// A format string such as `'r--'`, `'o'`, `'k.-'`: colour, marker and line style.
pub fn parse_fmt(fmt: &str) -> Result<(Option<Rgb>, Option<Marker>, Option<LineStyle>)> {
    let (mut color, mut marker, mut style) = (None, None, None);
    let bad = |c: char| {
        value_error(format!(
            "'{fmt}' is not a valid format string (unrecognized character '{c}')"
        ))
    };
    let mut rest = fmt;
    while let Some(c) = rest.chars().next() {
        let (st, n) = match rest {
            r if r.starts_with("--") => (Some(LineStyle::Dashed), 2),
            r if r.starts_with("-.") => (Some(LineStyle::DashDot), 2),
            r if r.starts_with('-') => (Some(LineStyle::Solid), 1),
            r if r.starts_with(':') => (Some(LineStyle::Dotted), 1),
            _ => (None, 0),
        };
        if st.is_some() {
            if style.replace(st).is_some() {
                return Err(value_error(format!(
                    "'{fmt}' is not a valid format string (two linestyle symbols)"
                )));
            }
            rest = &rest[n..];
            continue;
        }
        let m = match c {
            'o' => Some(Marker::Circle),
            '.' => Some(Marker::Point),
            's' => Some(Marker::Square),
            '^' => Some(Marker::Triangle),
            'x' => Some(Marker::Cross),
            '+' => Some(Marker::Plus),
            _ => None,
        };
        if let Some(m) = m {
            if marker.replace(m).is_some() {
                return Err(value_error(format!(
                    "'{fmt}' is not a valid format string (two marker symbols)"
                )));
            }
        } else if let Some(rgb) = letter_color(c) {
            if color.replace(rgb).is_some() {
                return Err(value_error(format!(
                    "'{fmt}' is not a valid format string (two color symbols)"
                )));
            }
        } else {
            return Err(bad(c));
        }
        rest = &rest[c.len_utf8()..];
    }
    // a marker without a line style draws markers only (Matplotlib's 'o')
    let style = style.flatten().or(marker.map(|_| LineStyle::None));
    Ok((color, marker, style))
}

/// `hist`'s counts over `bins` equal bins spanning the finite values (NumPy's rule: the
/// last bin is closed); the edges and counts.
pub fn histogram(
    values: &[f64],
    bins: usize,
    range: Option<(f64, f64)>,
) -> Result<(Vec<f64>, Vec<f64>)> {
    if bins == 0 {
        return Err(value_error("`bins` must be positive, when an integer"));
    }
    let (lo, hi) = match range {
        Some(r) => r,
        None => {
            let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if values.is_empty() {
                (0.0, 1.0)
            } else if !lo.is_finite() || !hi.is_finite() {
                return Err(value_error(format!(
                    "supplied range of [{}, {}] is not finite",
                    py_float(lo),
                    py_float(hi)
                )));
            } else {
                (lo, hi)
            }
        }
    };
    let (lo, hi) = if lo == hi {
        (lo - 0.5, hi + 0.5)
    } else {
        (lo, hi)
    };
    let step = (hi - lo) / bins as f64;
    let mut edges: Vec<f64> = (0..=bins).map(|i| lo + i as f64 * step).collect();
    edges[bins] = hi;
    let counts = crate::tensorboard::summary::counts(values, &edges);
    Ok((edges, counts))
}

/// A float as Python prints it in that message (`1.0`, `inf`).
fn py_float(x: f64) -> String {
    if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{x:?}")
    }
}
