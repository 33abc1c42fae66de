//! safetensors files through the `safetensors` crate: a map of names to [`Array`]s.
//!
//! Writing stores F32, F64, I32, I64, U8 and BOOL tensors (plus optional string metadata). Reading
//! also accepts F64, F16, BF16 (converted to float32) and I32, I16, I8, U8, U16, U32
//! (converted to int64); other dtypes are a `ValueError`. Before the crate parses a
//! file, every `data_offsets` value is checked against the data size, which keeps the
//! crate's own offset arithmetic away from overflow on crafted headers.

use super::{in_file, read_file, value_error, write_atomic, Array, ArrayData};
use crate::error::Result;
use safetensors::tensor::TensorView;
use safetensors::{Dtype, SafeTensors, View};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// The contents of a safetensors file.
#[derive(Debug, Clone, PartialEq)]
pub struct SafetensorsFile {
    pub tensors: BTreeMap<String, Array>,
    /// The `__metadata__` string map, if the file has one.
    pub metadata: Metadata,
}

/// An [`Array`] seen through the crate's `View` trait.
struct ArrayView<'a>(&'a Array);

impl View for ArrayView<'_> {
    fn dtype(&self) -> Dtype {
        match self.0.data() {
            ArrayData::F32(_) => Dtype::F32,
            ArrayData::F64(_) => Dtype::F64,
            ArrayData::I32(_) => Dtype::I32,
            ArrayData::I64(_) => Dtype::I64,
            ArrayData::U8(_) => Dtype::U8,
            ArrayData::Bool(_) => Dtype::BOOL,
        }
    }

    fn shape(&self) -> &[usize] {
        self.0.shape()
    }

    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Owned(self.0.data().to_le_bytes())
    }

    fn data_len(&self) -> usize {
        self.0.numel() * self.0.dtype().size()
    }
}

fn st_error(err: safetensors::SafeTensorError) -> crate::error::Error {
    value_error(format!("invalid safetensors data: {err}"))
}

/// The bytes of a safetensors file holding `tensors` and `metadata`.
pub fn safetensors_to_bytes(
    tensors: &BTreeMap<String, Array>,
    metadata: Option<&BTreeMap<String, String>>,
) -> Result<Vec<u8>> {
    if tensors.contains_key("__metadata__") {
        return Err(value_error(
            "'__metadata__' is reserved and cannot name a tensor",
        ));
    }
    let views = tensors.iter().map(|(k, a)| (k.as_str(), ArrayView(a)));
    let info: Option<HashMap<String, String>> =
        metadata.map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect());
    safetensors::serialize(views, info).map_err(st_error)
}

/// String metadata, as the file stores it.
type Metadata = Option<BTreeMap<String, String>>;

/// Checks that every `data_offsets` entry of the header lies within the data section,
/// and returns the `__metadata__` map (its types are checked by the crate).
fn check_header(bytes: &[u8]) -> Result<Metadata> {
    let too_short = || value_error("invalid safetensors data: the file is too short");
    let (len, rest) = bytes.split_first_chunk::<8>().ok_or_else(too_short)?;
    let len = usize::try_from(u64::from_le_bytes(*len)).map_err(|_| too_short())?;
    let (header, data) = rest.split_at_checked(len).ok_or_else(|| {
        value_error(format!(
            "invalid safetensors data: the header claims {len} bytes, the file has {} left",
            rest.len()
        ))
    })?;
    let json: serde_json::Value = serde_json::from_slice(header)
        .map_err(|e| value_error(format!("invalid safetensors header JSON: {e}")))?;
    let entries = json
        .as_object()
        .ok_or_else(|| value_error("invalid safetensors header: not a JSON object"))?;
    for (name, entry) in entries.iter().filter(|(k, _)| *k != "__metadata__") {
        let offsets = entry.get("data_offsets").and_then(|o| o.as_array());
        for off in offsets.into_iter().flatten() {
            if off.as_u64().is_none_or(|o| o > data.len() as u64) {
                return Err(value_error(format!(
                    "invalid safetensors header: offsets of '{name}' lie outside the {} data bytes",
                    data.len()
                )));
            }
        }
    }
    let metadata = entries.get("__metadata__").and_then(|m| m.as_object());
    Ok(metadata.map(|m| {
        m.iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect()
    }))
}

/// Converts one stored tensor.
fn to_array(name: &str, view: &TensorView<'_>) -> Result<Array> {
    let bytes = view.data();
    let data = match view.dtype() {
        Dtype::F32 => ArrayData::F32(words::<4>(bytes).map(f32::from_le_bytes).collect()),
        Dtype::F64 => ArrayData::F64(words::<8>(bytes).map(f64::from_le_bytes).collect()),
        Dtype::F16 => ArrayData::F32(
            words::<2>(bytes)
                .map(|w| f16_to_f32(u16::from_le_bytes(w)))
                .collect(),
        ),
        Dtype::BF16 => ArrayData::F32(
            words::<2>(bytes)
                .map(|w| f32::from_bits(u32::from(u16::from_le_bytes(w)) << 16))
                .collect(),
        ),
        Dtype::I64 => ArrayData::I64(words::<8>(bytes).map(i64::from_le_bytes).collect()),
        Dtype::I32 => ArrayData::I32(words::<4>(bytes).map(i32::from_le_bytes).collect()),
        Dtype::I16 => ArrayData::I64(
            words::<2>(bytes)
                .map(|w| i16::from_le_bytes(w).into())
                .collect(),
        ),
        Dtype::I8 => ArrayData::I64(bytes.iter().map(|&b| i64::from(b as i8)).collect()),
        Dtype::U8 => ArrayData::U8(bytes.to_vec()),
        Dtype::U16 => ArrayData::I64(
            words::<2>(bytes)
                .map(|w| u16::from_le_bytes(w).into())
                .collect(),
        ),
        Dtype::U32 => ArrayData::I64(
            words::<4>(bytes)
                .map(|w| u32::from_le_bytes(w).into())
                .collect(),
        ),
        Dtype::BOOL => ArrayData::Bool(bytes.iter().map(|&b| b != 0).collect()),
        other => {
            return Err(value_error(format!(
                "tensor '{name}': unsupported safetensors dtype {other}"
            )))
        }
    };
    Array::new(view.shape().to_vec(), data)
}

/// The `N`-byte little-endian words of `bytes` (a trailing partial word is dropped; the
/// crate has checked the length against the shape already).
fn words<const N: usize>(bytes: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
    bytes.chunks_exact(N).map(|c| {
        let mut w = [0u8; N];
        w.iter_mut().zip(c).for_each(|(d, s)| *d = *s);
        w
    })
}

/// IEEE half precision to single precision (exact).
fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1f);
    let mant = u32::from(h & 0x3ff);
    let bits = match (exp, mant) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: value = m * 2^-24.
            let v = m as f32 * f32::from_bits(0x3380_0000);
            return if sign != 0 { -v } else { v };
        }
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

/// Parses the contents of a safetensors file.
pub fn safetensors_from_bytes(bytes: &[u8]) -> Result<SafetensorsFile> {
    let metadata = check_header(bytes)?;
    let st = SafeTensors::deserialize(bytes).map_err(st_error)?;
    let mut tensors = BTreeMap::new();
    for (name, view) in st.iter() {
        tensors.insert(name.to_string(), to_array(name, &view)?);
    }
    Ok(SafetensorsFile { tensors, metadata })
}

/// Reads a safetensors file.
pub fn load_safetensors(path: &Path) -> Result<SafetensorsFile> {
    let bytes = read_file(path)?;
    safetensors_from_bytes(&bytes).map_err(|e| in_file(path, e))
}

/// Writes `tensors` (and optional metadata) to a safetensors file atomically.
pub fn save_safetensors(
    path: &Path,
    tensors: &BTreeMap<String, Array>,
    metadata: Option<&BTreeMap<String, String>>,
) -> Result<()> {
    write_atomic(path, &safetensors_to_bytes(tensors, metadata)?)
}
