//! Property tests: readers never panic on random bytes, truncations or corruptions of
//! valid files, and writers round-trip random arrays.

use kiln::io::{
    npy_from_bytes, npy_to_bytes, parse_csv, safetensors_from_bytes, safetensors_to_bytes, Array,
    CsvHeader, DType,
};
use proptest::prelude::*;
use std::collections::BTreeMap;

/// A random array: up to 3 dims of size 0..4, any of the three dtypes.
fn array() -> impl Strategy<Value = Array> {
    (prop::collection::vec(0usize..4, 0..4), 0u8..3, any::<u64>()).prop_map(
        |(shape, kind, seed)| {
            let n: usize = shape.iter().product();
            let vals = (0..n as u64).map(|i| seed.wrapping_mul(i + 1).rotate_left(i as u32));
            match kind {
                0 => Array::from_f32(shape, vals.map(|v| v as i32 as f32 / 7.0).collect()),
                1 => Array::from_i64(shape, vals.map(|v| v as i64).collect()),
                _ => Array::from_bool(shape, vals.map(|v| v % 2 == 0).collect()),
            }
            .unwrap()
        },
    )
}

fn sample_file() -> Vec<u8> {
    let mut m = BTreeMap::new();
    m.insert(
        "w".to_string(),
        Array::from_f32(vec![2, 2], vec![1.0; 4]).unwrap(),
    );
    m.insert("n".to_string(), Array::from_i64(vec![1], vec![3]).unwrap());
    let meta = BTreeMap::from([("k".to_string(), "v".to_string())]);
    safetensors_to_bytes(&m, Some(&meta)).unwrap()
}

fn corrupt(mut bytes: Vec<u8>, at: usize, byte: u8, cut: usize) -> Vec<u8> {
    if !bytes.is_empty() {
        let i = at % bytes.len();
        bytes[i] = byte;
    }
    bytes.truncate(bytes.len() - cut % (bytes.len() + 1));
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn npy_round_trips(a in array()) {
        let bytes = npy_to_bytes(&a).unwrap();
        prop_assert_eq!(bytes.len() % 64, (a.numel() * a.dtype().size()) % 64);
        prop_assert_eq!(npy_from_bytes(&bytes).unwrap(), a);
    }

    #[test]
    fn safetensors_round_trips(arrays in prop::collection::vec(array(), 0..4)) {
        let map: BTreeMap<String, Array> =
            arrays.into_iter().enumerate().map(|(i, a)| (format!("t{i}"), a)).collect();
        let back = safetensors_from_bytes(&safetensors_to_bytes(&map, None).unwrap()).unwrap();
        prop_assert_eq!(back.tensors, map);
    }

    #[test]
    fn readers_survive_random_bytes(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = npy_from_bytes(&bytes);
        let _ = safetensors_from_bytes(&bytes);
        let mut npy = b"\x93NUMPY\x01\x00".to_vec();
        npy.extend_from_slice(&bytes);
        let _ = npy_from_bytes(&npy);
        let text = String::from_utf8_lossy(&bytes);
        for dtype in [DType::F32, DType::I64, DType::Bool] {
            let _ = parse_csv(&text, CsvHeader::Auto, ',', dtype);
        }
    }

    #[test]
    fn npy_survives_corruption(a in array(), at in any::<usize>(), byte in any::<u8>(), cut in any::<usize>()) {
        let bytes = corrupt(npy_to_bytes(&a).unwrap(), at, byte, cut);
        if let Err(e) = npy_from_bytes(&bytes) {
            prop_assert_eq!(e.kind, kiln::ErrorKind::ValueError);
        }
    }

    #[test]
    fn safetensors_survives_corruption(at in any::<usize>(), byte in any::<u8>(), cut in any::<usize>()) {
        let bytes = corrupt(sample_file(), at, byte, cut);
        if let Err(e) = safetensors_from_bytes(&bytes) {
            prop_assert_eq!(e.kind, kiln::ErrorKind::ValueError);
        }
    }

    #[test]
    fn safetensors_header_fuzz(
        entries in prop::collection::vec((0usize..6, prop::collection::vec(0usize..6, 0..3), 0usize..6, 0usize..6), 0..4),
        data_len in 0usize..40,
    ) {
        const DTYPES: [&str; 6] = ["F32", "I64", "BOOL", "F16", "U64", "F4"];
        const NUMS: [u64; 6] = [0, 1, 4, 8, 1 << 62, u64::MAX];
        let fields: Vec<String> = entries
            .iter()
            .enumerate()
            .map(|(i, (d, shape, s, e))| {
                let dims: Vec<String> = shape.iter().map(|&k| NUMS[k].to_string()).collect();
                format!(
                    r#""t{i}":{{"dtype":"{}","shape":[{}],"data_offsets":[{},{}]}}"#,
                    DTYPES[*d], dims.join(","), NUMS[*s], NUMS[*e]
                )
            })
            .collect();
        let header = format!("{{{}}}", fields.join(","));
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(header.as_bytes());
        bytes.resize(bytes.len() + data_len, 0);
        let _ = safetensors_from_bytes(&bytes);
    }

    #[test]
    fn npy_header_text_fuzz(dict in "[{}()',: a-z0-9<>|TrueFals]{0,80}") {
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        bytes.extend_from_slice(dict.as_bytes());
        let _ = npy_from_bytes(&bytes);
    }

    #[test]
    fn csv_survives_structured_noise(text in "[0-9a-z,;\" \n\r.e+-]{0,120}") {
        for header in [CsvHeader::Yes, CsvHeader::No, CsvHeader::Auto] {
            if let Ok(t) = parse_csv(&text, header, ',', DType::F32) {
                prop_assert_eq!(t.array.shape().len(), 2);
            }
        }
    }
}

#[test]
fn every_truncation_of_valid_files_is_an_error() {
    let npy = npy_to_bytes(&Array::from_i64(vec![2, 3], (0..6).collect()).unwrap()).unwrap();
    for len in 0..npy.len() {
        assert!(
            npy_from_bytes(&npy[..len]).is_err(),
            "npy truncated to {len}"
        );
    }
    let st = sample_file();
    for len in 0..st.len() {
        assert!(
            safetensors_from_bytes(&st[..len]).is_err(),
            "safetensors truncated to {len}"
        );
    }
}
