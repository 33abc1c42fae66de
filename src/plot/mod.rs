//! Plots: the figures behind Kiln's `matplotlib.pyplot` subset. [`model`] holds what a
//! script drew (lines, scatters, histogram bars, images, per-axes labels and limits) and
//! parses Matplotlib's format strings; [`render`] draws a figure with the plotters crate
//! into SVG text or an RGB bitmap (encoded by `io::png`), with an embedded subset of
//! DejaVu Sans so no system font is needed.

pub mod model;
pub mod render;

#[cfg(test)]
mod tests;
