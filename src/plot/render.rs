//! Draws a [`Figure`] with plotters: SVG text, or an RGB bitmap encoded as PNG. The
//! axes split the canvas evenly; each gets a caption, axis descriptions, a mesh (grid
//! lines only with `grid()`), its artists in order and a legend of the labelled ones.

use super::model::{Artist, Axes, Figure, LineStyle, Marker, Rgb, Scale};
use crate::error::{Error, ErrorKind, Result};
use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::sync::Once;

/// The font every plot's text uses (DejaVu Sans cut to ASCII; assets/fonts/LICENSE).
static FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans-subset.ttf");

fn plot_error(e: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::RuntimeError,
        format!("cannot draw the figure: {e}"),
        None,
    )
}

fn font_ready() -> Result<()> {
    static ONCE: Once = Once::new();
    let mut res = Ok(());
    ONCE.call_once(|| {
        res = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT)
            .map_err(|_| plot_error("the embedded font is invalid"));
    });
    res
}

/// The figure as an SVG document.
pub fn svg(fig: &Figure) -> Result<String> {
    font_ready()?;
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, (fig.width, fig.height)).into_drawing_area();
        draw(fig, &root)?;
        root.present().map_err(plot_error)?;
    }
    Ok(s)
}

/// The figure as a PNG file's bytes.
pub fn png(fig: &Figure) -> Result<Vec<u8>> {
    font_ready()?;
    let (w, h) = (fig.width as usize, fig.height as usize);
    let mut buf = vec![255u8; w * h * 3];
    {
        let root =
            BitMapBackend::with_buffer(&mut buf, (fig.width, fig.height)).into_drawing_area();
        draw(fig, &root)?;
        root.present().map_err(plot_error)?;
    }
    crate::io::png::encode(&buf, w, h, 3)
}

fn draw<DB: DrawingBackend>(
    fig: &Figure,
    root: &DrawingArea<DB, plotters::coord::Shift>,
) -> Result<()> {
    root.fill(&WHITE).map_err(plot_error)?;
    let areas = root.split_evenly((fig.nrows, fig.ncols));
    for (ax, area) in fig.axes.iter().zip(&areas) {
        panel(ax, area)?;
    }
    Ok(())
}

fn panel<DB: DrawingBackend>(
    ax: &Axes,
    area: &DrawingArea<DB, plotters::coord::Shift>,
) -> Result<()> {
    let ((x0, x1), (y0, y1)) = ax.limits();
    let mut b = ChartBuilder::on(area);
    b.margin(12)
        .x_label_area_size(if ax.xlabel.is_empty() { 28 } else { 44 })
        .y_label_area_size(if ax.ylabel.is_empty() { 48 } else { 64 });
    if !ax.title.is_empty() {
        b.caption(&ax.title, ("sans-serif", 16));
    }
    match ax.yscale {
        Scale::Linear => {
            let mut c = b.build_cartesian_2d(x0..x1, y0..y1).map_err(plot_error)?;
            body(&mut c, ax, y0.min(y1).max(0.0).min(y0.max(y1)))
        }
        Scale::Log => {
            let mut c = b
                .build_cartesian_2d(x0..x1, (y0..y1).log_scale())
                .map_err(plot_error)?;
            body(&mut c, ax, y0.min(y1))
        }
    }
}

fn rgb(c: Rgb) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

/// The runs of points with finite coordinates (a NaN breaks a line, as in Matplotlib).
fn runs(x: &[f64], y: &[f64], log: bool) -> Vec<Vec<(f64, f64)>> {
    let mut out = vec![Vec::new()];
    for (&a, &b) in x.iter().zip(y) {
        if a.is_finite() && b.is_finite() && (!log || b > 0.0) {
            if let Some(last) = out.last_mut() {
                last.push((a, b));
            }
        } else if out.last().is_some_and(|l| !l.is_empty()) {
            out.push(Vec::new());
        }
    }
    out.retain(|r| !r.is_empty());
    out
}

fn body<'a, DB, Y>(
    c: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y>>,
    ax: &Axes,
    base: f64,
) -> Result<()>
where
    DB: DrawingBackend + 'a,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let mut mesh = c.configure_mesh();
    if !ax.grid {
        mesh.disable_mesh();
    }
    mesh.x_desc(ax.xlabel.as_str())
        .y_desc(ax.ylabel.as_str())
        .label_style(("sans-serif", 12))
        .draw()
        .map_err(plot_error)?;
    let log = ax.yscale == Scale::Log;
    for a in &ax.artists {
        match a {
            Artist::Line {
                x,
                y,
                color,
                style,
                marker,
                ..
            } => {
                let col = rgb(*color);
                for run in runs(x, y, log) {
                    let st = col.stroke_width(2);
                    match style {
                        LineStyle::Solid => {
                            c.draw_series(LineSeries::new(run.clone(), st)).map(|_| ())
                        }
                        LineStyle::Dashed => c
                            .draw_series(DashedLineSeries::new(run.clone(), 8, 4, st))
                            .map(|_| ()),
                        LineStyle::DashDot => c
                            .draw_series(DashedLineSeries::new(run.clone(), 6, 6, st))
                            .map(|_| ()),
                        LineStyle::Dotted => c
                            .draw_series(DashedLineSeries::new(run.clone(), 2, 4, st))
                            .map(|_| ()),
                        LineStyle::None => Ok(()),
                    }
                    .map_err(plot_error)?;
                    if let Some(m) = marker {
                        markers(c, &run, *m, col)?;
                    }
                }
            }
            Artist::Scatter { x, y, color, .. } => {
                let col = rgb(*color);
                let pts: Vec<(f64, f64)> = runs(x, y, log).into_iter().flatten().collect();
                markers(c, &pts, Marker::Circle, col)?;
            }
            Artist::Bars {
                edges,
                counts,
                color,
                ..
            } => {
                let col = rgb(*color);
                let bars = edges
                    .windows(2)
                    .zip(counts)
                    .filter(|(_, &n)| !log || n > 0.0)
                    .map(|(e, &n)| Rectangle::new([(e[0], base), (e[1], n)], col.filled()));
                c.draw_series(bars).map_err(plot_error)?;
            }
            Artist::Image {
                height,
                width,
                channels,
                pixels,
            } => {
                let (w, ch) = (*width, *channels);
                let px = |i: usize| (pixels[i].clamp(0.0, 1.0) * 255.0).round() as u8;
                let cells = (0..*height).flat_map(|r| {
                    (0..w).map(move |col| {
                        let i = (r * w + col) * ch;
                        let color = if ch == 1 {
                            RGBColor(px(i), px(i), px(i))
                        } else {
                            RGBColor(px(i), px(i + 1), px(i + 2))
                        };
                        let (x, y) = (col as f64, r as f64);
                        Rectangle::new([(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)], color.filled())
                    })
                });
                c.draw_series(cells).map_err(plot_error)?;
            }
        }
    }
    if ax.legend {
        for a in &ax.artists {
            if let Some((label, color)) = a.label() {
                let col = rgb(color);
                c.draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
                    .map_err(plot_error)?
                    .label(label)
                    .legend(move |(x, y)| {
                        Rectangle::new([(x, y - 4), (x + 16, y + 4)], col.filled())
                    });
            }
        }
        c.configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .label_font(("sans-serif", 12))
            .draw()
            .map_err(plot_error)?;
    }
    Ok(())
}

fn markers<DB, Y>(
    c: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, Y>>,
    pts: &[(f64, f64)],
    m: Marker,
    col: RGBColor,
) -> Result<()>
where
    DB: DrawingBackend,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let p = pts.iter().copied();
    match m {
        Marker::Circle => c
            .draw_series(p.map(|q| Circle::new(q, 3, col.filled())))
            .map(|_| ()),
        Marker::Point => c
            .draw_series(p.map(|q| Circle::new(q, 1, col.filled())))
            .map(|_| ()),
        Marker::Square => c
            .draw_series(
                p.map(|q| EmptyElement::at(q) + Rectangle::new([(-3, -3), (3, 3)], col.filled())),
            )
            .map(|_| ()),
        Marker::Triangle => c
            .draw_series(p.map(|q| TriangleMarker::new(q, 4, col.filled())))
            .map(|_| ()),
        Marker::Cross => c
            .draw_series(p.map(|q| Cross::new(q, 3, col.stroke_width(1))))
            .map(|_| ()),
        Marker::Plus => c
            .draw_series(p.map(|q| {
                EmptyElement::at(q)
                    + PathElement::new(vec![(-3, 0), (3, 0)], col)
                    + PathElement::new(vec![(0, -3), (0, 3)], col)
            }))
            .map(|_| ()),
    }
    .map_err(plot_error)
}
