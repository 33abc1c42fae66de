//! The summaries `SummaryWriter` writes, built as PyTorch's
//! `torch.utils.tensorboard.summary` builds them: scalars as `simple_value`, text as a
//! one-string tensor for the text plugin, histograms over TensorFlow's default
//! exponential buckets (or `n` equal bins) trimmed to the occupied range, images as PNG.

use super::proto::{
    Dim, HistogramProto, Image, PluginData, SummaryMetadata, SummaryValue, TensorProto,
    TensorShapeProto, DT_STRING,
};
use crate::error::{Error, ErrorKind, Result};

fn value_error(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::ValueError, msg, None)
}

/// `add_scalar`'s summary value.
pub fn scalar(tag: &str, v: f64) -> SummaryValue {
    SummaryValue {
        tag: tag.into(),
        simple_value: Some(v as f32),
        ..Default::default()
    }
}

/// `add_text`'s summary value (tag `TAG/text_summary`, the text plugin's metadata).
pub fn text(tag: &str, text: &str) -> SummaryValue {
    SummaryValue {
        tag: format!("{tag}/text_summary"),
        metadata: Some(SummaryMetadata {
            plugin_data: Some(PluginData {
                plugin_name: "text".into(),
                // TextPluginData(version=0) serializes to no bytes
                content: Vec::new(),
            }),
        }),
        tensor: Some(TensorProto {
            dtype: DT_STRING,
            tensor_shape: Some(TensorShapeProto {
                dim: vec![Dim { size: 1 }],
            }),
            string_val: vec![text.as_bytes().to_vec()],
        }),
        ..Default::default()
    }
}

/// How `add_histogram` buckets values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bins {
    /// TensorFlow's default buckets: +-1e-12 * 1.1^k up to 1e20, and 0.
    Tensorflow,
    /// `n` equal-width bins over `[min, max]` (NumPy's `histogram(values, bins=n)`).
    Count(usize),
}

/// TensorFlow's default bucket edges (PyTorch's `default_bins`).
fn tensorflow_edges() -> Vec<f64> {
    let mut pos = Vec::new();
    let mut v = 1e-12;
    while v < 1e20 {
        pos.push(v);
        v *= 1.1;
    }
    let mut edges: Vec<f64> = pos.iter().rev().map(|v| -v).collect();
    edges.push(0.0);
    edges.extend(pos);
    edges
}

/// NumPy's `histogram(values, bins=edges)` counts: bins are half-open except the last;
/// values outside the edges are not counted (also pyplot's `hist`).
pub fn counts(values: &[f64], edges: &[f64]) -> Vec<f64> {
    let nb = edges.len().saturating_sub(1);
    let mut c = vec![0.0; nb];
    let (Some(&lo), Some(&hi)) = (edges.first(), edges.last()) else {
        return c;
    };
    for &v in values {
        if !(lo..=hi).contains(&v) {
            continue;
        }
        // the last edge <= v (the right-most bin takes v == hi)
        let i = edges
            .partition_point(|&e| e <= v)
            .saturating_sub(1)
            .min(nb - 1);
        c[i] += 1.0;
    }
    c
}

/// `add_histogram`'s summary value (PyTorch's `make_histogram`: the occupied buckets,
/// with one empty bucket in front).
pub fn histogram(tag: &str, values: &[f64], bins: Bins) -> Result<SummaryValue> {
    if values.is_empty() {
        return Err(value_error("The input has no element."));
    }
    if values.iter().any(|v| !v.is_finite()) {
        return Err(value_error(
            "add_histogram: the values contain NaN or infinity (NumPy's histogram cannot bucket them)",
        ));
    }
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let edges = match bins {
        Bins::Tensorflow => tensorflow_edges(),
        Bins::Count(0) => return Err(value_error("`bins` must be positive, when an integer")),
        Bins::Count(n) => {
            let (lo, hi) = if min == max {
                (min - 0.5, max + 0.5)
            } else {
                (min, max)
            };
            // numpy.linspace(lo, hi, n + 1): start + i * step, the last edge exactly hi
            let step = (hi - lo) / n as f64;
            let mut e: Vec<f64> = (0..=n).map(|i| lo + i as f64 * step).collect();
            e[n] = hi;
            e
        }
    };
    let c = counts(values, &edges);
    let first = c.iter().position(|&n| n > 0.0);
    let last = c.iter().rposition(|&n| n > 0.0);
    let (Some(start), Some(last)) = (first, last) else {
        return Err(value_error(
            "add_histogram: no value falls inside the buckets (|x| >= 1e20)",
        ));
    };
    let end = last + 1;
    let bucket = if start > 0 {
        c[start - 1..end].to_vec()
    } else {
        std::iter::once(0.0)
            .chain(c[..end].iter().copied())
            .collect()
    };
    let bucket_limit = edges[start..=end].to_vec();
    Ok(SummaryValue {
        tag: tag.into(),
        histo: Some(HistogramProto {
            min,
            max,
            num: values.len() as f64,
            sum: values.iter().sum(),
            sum_squares: values.iter().map(|v| v * v).sum(),
            bucket_limit,
            bucket,
        }),
        ..Default::default()
    })
}

/// `add_image`'s summary value: `pixels` is `height x width x channels` (1, 3 or 4
/// channels; one channel is repeated to RGB as PyTorch does) in row-major order.
pub fn image(
    tag: &str,
    pixels: &[u8],
    height: usize,
    width: usize,
    channels: usize,
) -> Result<SummaryValue> {
    let (data, c) = match channels {
        1 => (pixels.iter().flat_map(|&p| [p, p, p]).collect(), 3),
        3 | 4 => (pixels.to_vec(), channels),
        n => {
            return Err(value_error(format!(
                "add_image: an image needs 1, 3 or 4 channels, got {n}"
            )))
        }
    };
    let png = crate::io::png::encode(&data, width, height, c)?;
    let dim = |n: usize| i32::try_from(n).map_err(|_| value_error("add_image: image too large"));
    Ok(SummaryValue {
        tag: tag.into(),
        image: Some(Image {
            height: dim(height)?,
            width: dim(width)?,
            colorspace: c as i32,
            encoded_image_string: png,
        }),
        ..Default::default()
    })
}
