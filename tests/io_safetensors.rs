//! safetensors: round trips, a file written by the reference Python package
//! (safetensors 0.8.0 + NumPy, tests/data/gen_fixtures.py), hand-built files, corruption.

use kiln::io::{
    load_safetensors, safetensors_from_bytes, safetensors_to_bytes, save_safetensors, Array,
    ArrayData,
};
use kiln::ErrorKind;
use std::collections::BTreeMap;
use std::path::PathBuf;

fn sample() -> BTreeMap<String, Array> {
    let mut m = BTreeMap::new();
    m.insert(
        "layer.weight".to_string(),
        Array::from_f32(vec![2, 2], vec![1.0, -2.0, 0.5, f32::MAX]).unwrap(),
    );
    m.insert(
        "step".to_string(),
        Array::from_i64(vec![], vec![i64::MIN]).unwrap(),
    );
    m.insert(
        "mask".to_string(),
        Array::from_bool(vec![3], vec![true, false, true]).unwrap(),
    );
    m.insert(
        "empty".to_string(),
        Array::from_f32(vec![0, 4], vec![]).unwrap(),
    );
    m
}

#[test]
fn reads_the_reference_implementations_file() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/reference.safetensors");
    let file = load_safetensors(&path).unwrap();
    let t = &file.tensors;
    assert_eq!(t.len(), 6);
    assert_eq!(
        t["weight"],
        Array::from_f32(vec![2, 3], vec![0.0, 0.25, 0.5, 0.75, 1.0, 1.25]).unwrap()
    );
    assert_eq!(t["step"], Array::from_i64(vec![2], vec![7, -3]).unwrap());
    assert_eq!(
        t["mask"],
        Array::from_bool(vec![2, 1], vec![true, false]).unwrap()
    );
    assert_eq!(t["scalar"], Array::from_f32(vec![], vec![2.5]).unwrap());
    // float16 6e-8 rounds to the smallest subnormal, 2^-24; 65504 is float16's max.
    let half = vec![1.0, -0.5, 65504.0, 2f32.powi(-24)];
    assert_eq!(t["half"], Array::from_f32(vec![4], half).unwrap());
    // int32 loads as int32 (issue 22; it used to widen to int64)
    assert_eq!(
        t["ids32"],
        Array::new(vec![3], ArrayData::I32(vec![1, -2, 3])).unwrap()
    );
    let meta = file.metadata.unwrap();
    assert_eq!(meta.get("format").map(String::as_str), Some("np"));
    assert_eq!(meta.get("epoch").map(String::as_str), Some("3"));
}

#[test]
fn round_trips_with_and_without_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.safetensors");
    save_safetensors(&path, &sample(), None).unwrap();
    let back = load_safetensors(&path).unwrap();
    assert_eq!(back.tensors, sample());
    assert_eq!(back.metadata, None);
    let meta = BTreeMap::from([("k".to_string(), "v".to_string())]);
    save_safetensors(&path, &sample(), Some(&meta)).unwrap();
    let back = load_safetensors(&path).unwrap();
    assert_eq!(back.tensors, sample());
    assert_eq!(back.metadata, Some(meta));
}

#[test]
fn written_bytes_follow_the_format() {
    let mut m = BTreeMap::new();
    m.insert("a".to_string(), Array::from_i64(vec![1], vec![5]).unwrap());
    m.insert(
        "b".to_string(),
        Array::from_bool(vec![2], vec![false, true]).unwrap(),
    );
    let bytes = safetensors_to_bytes(&m, None).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    assert_eq!(n % 8, 0, "the header is padded to 8 bytes");
    let header = std::str::from_utf8(&bytes[8..8 + n]).unwrap().trim_end();
    // Larger dtypes first (alignment), then names.
    assert_eq!(
        header,
        r#"{"a":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},"b":{"dtype":"BOOL","shape":[2],"data_offsets":[8,10]}}"#
    );
    assert_eq!(&bytes[8 + n..], &[5, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
}

/// A file built by hand: LE u64 header length, JSON header, data.
fn hand_built(header: &str, data: &[u8]) -> Vec<u8> {
    let mut b = (header.len() as u64).to_le_bytes().to_vec();
    b.extend_from_slice(header.as_bytes());
    b.extend_from_slice(data);
    b
}

#[test]
fn reads_hand_built_files_with_converted_dtypes() {
    let header = r#"{"x":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]},"y":{"dtype":"U8","shape":[2],"data_offsets":[4,6]},"z":{"dtype":"F64","shape":[1],"data_offsets":[6,14]}}"#;
    let mut data = vec![0x80, 0x3f, 0x20, 0xc0, 200, 1]; // bf16 1.0, -2.5; u8 200, 1
    data.extend_from_slice(&0.25f64.to_le_bytes());
    let f = safetensors_from_bytes(&hand_built(header, &data)).unwrap();
    assert_eq!(f.tensors["x"].data(), &ArrayData::F32(vec![1.0, -2.5]));
    // uint8 and float64 load as they are (issue 22)
    assert_eq!(f.tensors["y"].data(), &ArrayData::U8(vec![200, 1]));
    assert_eq!(f.tensors["z"].data(), &ArrayData::F64(vec![0.25]));
    // float16 bit patterns: 0x7c00 inf, 0xfc00 -inf, 0x3555 = 1 + 0x155/1024 over 4,
    // 0x0400 the smallest normal 2^-14, 0x7e00 NaN.
    let header = r#"{"h":{"dtype":"F16","shape":[5],"data_offsets":[0,10]}}"#;
    let data = [0x00, 0x7c, 0x00, 0xfc, 0x55, 0x35, 0x00, 0x04, 0x00, 0x7e];
    let f = safetensors_from_bytes(&hand_built(header, &data)).unwrap();
    let ArrayData::F32(h) = f.tensors["h"].data() else {
        panic!("not f32")
    };
    assert_eq!(
        h[..4],
        [
            f32::INFINITY,
            f32::NEG_INFINITY,
            (1.0 + 341.0 / 1024.0) / 4.0,
            2f32.powi(-14)
        ]
    );
    assert!(h[4].is_nan());
}

fn value_error(bytes: &[u8], needle: &str) {
    let e = safetensors_from_bytes(bytes).unwrap_err();
    assert_eq!(e.kind, ErrorKind::ValueError, "{e}");
    assert!(e.message.contains(needle), "expected '{needle}' in: {e}");
}

#[test]
fn corrupt_files_give_clear_value_errors() {
    let good = safetensors_to_bytes(&sample(), None).unwrap();
    value_error(&good[..5], "too short");
    value_error(&u64::MAX.to_le_bytes(), "claims 18446744073709551615 bytes");
    let mut huge = (1u64 << 40).to_le_bytes().to_vec();
    huge.extend_from_slice(b"{}");
    value_error(&huge, "the header claims 1099511627776 bytes");
    value_error(&hand_built("{not json", &[]), "JSON");
    value_error(&hand_built("[1, 2]", &[]), "not a JSON object");
    value_error(&good[..good.len() - 1], "outside");
    let mut longer = good.clone();
    longer.push(0);
    value_error(&longer, "invalid safetensors data");
    let out_of_range = r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,99999999999]}}"#;
    value_error(
        &hand_built(out_of_range, &[0]),
        "offsets of 'a' lie outside",
    );
    // Sizes that would overflow the crate's offset arithmetic if not checked first.
    let overflow = r#"{"a":{"dtype":"U8","shape":[18446744073709551000],"data_offsets":[0,18446744073709551000]}}"#;
    value_error(&hand_built(overflow, &[0; 8]), "outside");
    let shape_overflow =
        r#"{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}}"#;
    value_error(
        &hand_built(shape_overflow, &[0; 4]),
        "invalid safetensors data",
    );
    let mismatch = r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}"#;
    value_error(&hand_built(mismatch, &[0; 4]), "invalid safetensors data");
    let unsupported = r#"{"a":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}}"#;
    value_error(
        &hand_built(unsupported, &[0; 8]),
        "unsupported safetensors dtype C64",
    );
}

#[test]
fn reserved_name_and_missing_file_are_errors() {
    let mut m = sample();
    m.insert(
        "__metadata__".to_string(),
        Array::from_f32(vec![], vec![0.0]).unwrap(),
    );
    let e = safetensors_to_bytes(&m, None).unwrap_err();
    assert_eq!(e.kind, ErrorKind::ValueError);
    let dir = tempfile::tempdir().unwrap();
    let e = load_safetensors(&dir.path().join("none.safetensors")).unwrap_err();
    assert_eq!(e.kind, ErrorKind::OSError);
}

#[test]
fn torch_written_f64_i32_u8_load_as_is_and_round_trip() {
    // tests/refs/dtypes_fixtures.py (safetensors.torch.save_file, torch 2.15.0)
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/dtypes_torch.safetensors");
    let file = load_safetensors(&path).unwrap();
    let t = &file.tensors;
    let w = ArrayData::F64(vec![0.1, -2.5, 1e300, f64::from_bits(1)]);
    assert_eq!(t["w64"], Array::new(vec![2, 2], w).unwrap());
    let ids = ArrayData::I32(vec![-7, 0, i32::MAX]);
    assert_eq!(t["ids"], Array::new(vec![3], ids).unwrap());
    assert_eq!(
        t["img"],
        Array::new(vec![1, 3], ArrayData::U8(vec![0, 128, 255])).unwrap()
    );
    // written back with the same dtype tags and read bit-exactly
    let bytes = safetensors_to_bytes(t, None).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    for tag in ["\"F64\"", "\"I32\"", "\"U8\""] {
        assert!(text.contains(tag), "{tag} missing");
    }
    assert_eq!(&safetensors_from_bytes(&bytes).unwrap().tensors, t);
}
