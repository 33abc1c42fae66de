//! TensorBoard event files: what PyTorch's `SummaryWriter` writes, without TensorFlow.
//!
//! An event file is a sequence of TFRecords (a little-endian u64 length, its masked
//! CRC32C, the payload, the payload's masked CRC32C; [`record`]) whose payloads are
//! `tensorflow.Event` protobufs ([`proto`], encoded by prost as the ONNX export is).
//! [`summary`] builds the summaries `add_scalar`/`add_histogram`/`add_text`/`add_image`
//! write (with PyTorch's histogram buckets); [`writer`] names log directories and event
//! files as PyTorch does and appends whole records, rolling a failed append back so a
//! full disk leaves the earlier events readable. Every file access goes through
//! `io::fs_gate`.

pub mod proto;
pub mod record;
pub mod summary;
pub mod writer;

#[cfg(test)]
mod tests;
