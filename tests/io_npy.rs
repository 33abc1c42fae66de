//! `.npy` reading and writing against hand-built bytes and files written by NumPy 2.4.6
//! (tests/data/gen_fixtures.py).

use kiln::io::{load_npy, npy_from_bytes, npy_to_bytes, save_npy, Array, ArrayData};
use kiln::ErrorKind;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn fixture_bytes(name: &str) -> Vec<u8> {
    std::fs::read(fixture(name)).unwrap()
}

/// A v1.0 header built by hand: magic, version, LE u16 length, dict, `pad` spaces, '\n'.
fn v1_header(dict: &str, pad: usize) -> Vec<u8> {
    let hlen = dict.len() + pad + 1;
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(hlen as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.extend(std::iter::repeat_n(b' ', pad));
    out.push(b'\n');
    out
}

#[test]
fn header_bytes_match_the_format_spec() {
    // Dict (59 bytes) + 20 growth spaces (21 - len("2")) + padding to 128 bytes in all:
    // 10 + 59 + 20 + pad + 1 = 128, so pad = 38; the length field is 118.
    let a = Array::from_f32(vec![2, 3], vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
    let bytes = npy_to_bytes(&a).unwrap();
    let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    assert_eq!(dict.len(), 59);
    let expected = v1_header(dict, 20 + 38);
    assert_eq!(expected.len(), 128);
    assert_eq!(&bytes[8..10], &[118, 0]);
    assert_eq!(&bytes[..128], &expected[..]);
    assert_eq!(&bytes[128..132], &0.0f32.to_le_bytes());
    assert_eq!(&bytes[148..152], &5.0f32.to_le_bytes());
    assert_eq!(bytes.len(), 128 + 24);
}

#[test]
fn scalar_and_one_dim_shapes_are_written_like_python_tuples() {
    // Scalar: no growth padding; dict is 55 bytes, 10 + 55 + pad + 1 = 128 -> pad 62.
    let s = npy_to_bytes(&Array::from_f32(vec![], vec![1.5]).unwrap()).unwrap();
    let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (), }";
    assert_eq!(&s[..128], &v1_header(dict, 62)[..]);
    // (5,): dict 57 bytes, 20 growth spaces, 10 + 57 + 20 + pad + 1 = 128 -> pad 40.
    let v = npy_to_bytes(&Array::from_i64(vec![5], vec![0, 1, 2, 3, 4]).unwrap()).unwrap();
    let dict = "{'descr': '<i8', 'fortran_order': False, 'shape': (5,), }";
    assert_eq!(&v[..128], &v1_header(dict, 20 + 40)[..]);
    assert_eq!(&v[128 + 8..128 + 16], &1i64.to_le_bytes());
}

#[test]
fn bytes_equal_what_numpy_wrote() {
    let cases = [
        (
            "f32_2x3.npy",
            Array::from_f32(vec![2, 3], vec![-1.0, -0.5, 0.0, 0.5, 1.0, 1.5]).unwrap(),
        ),
        (
            "f32_scalar.npy",
            Array::from_f32(vec![], vec![1.5]).unwrap(),
        ),
        (
            "i64_5.npy",
            Array::from_i64(vec![5], vec![-2, -1, 0, 1, 1 << 40]).unwrap(),
        ),
        (
            "bool_2x2.npy",
            Array::from_bool(vec![2, 2], vec![true, false, false, true]).unwrap(),
        ),
        (
            "f32_empty_0x3.npy",
            Array::from_f32(vec![0, 3], vec![]).unwrap(),
        ),
    ];
    for (name, array) in cases {
        let numpy = fixture_bytes(name);
        assert_eq!(npy_to_bytes(&array).unwrap(), numpy, "{name}");
        assert_eq!(npy_from_bytes(&numpy).unwrap(), array, "{name}");
    }
}

#[test]
fn reads_conversions_big_endian_fortran_and_v2() {
    // float64 and int32 load as they are (issue 22; they used to widen/narrow)
    let f64s = load_npy(&fixture("f64_3.npy")).unwrap();
    assert_eq!(f64s.data(), &ArrayData::F64(vec![0.1, -2.5, 1e300]));
    let i32s = load_npy(&fixture("i32_3.npy")).unwrap();
    assert_eq!(i32s.data(), &ArrayData::I32(vec![-7, 0, 2147483647]));
    let be = load_npy(&fixture("f4_big_endian_2x2.npy")).unwrap();
    assert_eq!(
        be,
        Array::from_f32(vec![2, 2], vec![1.0, -2.0, 3.25, 4.0]).unwrap()
    );
    let be = load_npy(&fixture("i8_big_endian_3.npy")).unwrap();
    assert_eq!(be.data(), &ArrayData::I64(vec![1, -1, 1 << 33]));
    // NumPy prints this column-major array as [[0, 1, 2], [3, 4, 5]].
    let f = load_npy(&fixture("f32_fortran_2x3.npy")).unwrap();
    assert_eq!(
        f,
        Array::from_f32(vec![2, 3], vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]).unwrap()
    );
    let v2 = load_npy(&fixture("i64_v2.npy")).unwrap();
    assert_eq!(v2, Array::from_i64(vec![2, 2], vec![1, 2, 3, 4]).unwrap());
}

#[test]
fn reads_fortran_order_in_three_dims() {
    // Shape (2, 3, 2) stored column-major: element (i, j, k) sits at i + 2j + 6k.
    let dict = "{'descr': '<i8', 'fortran_order': True, 'shape': (2, 3, 2), }";
    let mut bytes = v1_header(dict, 0);
    let mut stored = [0i64; 12];
    for i in 0..2 {
        for j in 0..3 {
            for k in 0..2 {
                stored[i + 2 * j + 6 * k] = (100 * i + 10 * j + k) as i64;
            }
        }
    }
    stored
        .iter()
        .for_each(|x| bytes.extend_from_slice(&x.to_le_bytes()));
    let a = npy_from_bytes(&bytes).unwrap();
    let expected: Vec<i64> = (0..2)
        .flat_map(|i| (0..3).flat_map(move |j| (0..2).map(move |k| 100 * i + 10 * j + k)))
        .collect();
    assert_eq!(a, Array::from_i64(vec![2, 3, 2], expected).unwrap());
}

#[test]
fn reads_a_version_3_utf8_header_and_loose_dict_syntax() {
    let dict = "{\"shape\":(3,),'fortran_order':False,'descr':'|u1'}";
    let mut bytes = b"\x93NUMPY\x03\x00".to_vec();
    bytes.extend_from_slice(&(dict.len() as u32).to_le_bytes());
    bytes.extend_from_slice(dict.as_bytes());
    bytes.extend_from_slice(&[0, 7, 255]);
    let a = npy_from_bytes(&bytes).unwrap();
    // uint8 loads as uint8 (issue 22; it used to widen to int64)
    assert_eq!(
        a,
        Array::new(vec![3], ArrayData::U8(vec![0, 7, 255])).unwrap()
    );
}

fn err_of(bytes: &[u8]) -> kiln::Error {
    let e = npy_from_bytes(bytes).unwrap_err();
    assert_eq!(e.kind, ErrorKind::ValueError, "{e}");
    e
}

fn with_data(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut b = v1_header(dict, 0);
    b.extend_from_slice(data);
    b
}

#[test]
fn corrupt_files_give_clear_value_errors() {
    let good = fixture_bytes("f32_2x3.npy");
    assert!(err_of(b"PK\x03\x04 not npy").message.contains("bad magic"));
    let mut v9 = good.clone();
    v9[6] = 9;
    assert!(err_of(&v9).message.contains("unsupported .npy version"));
    // A v2 header claiming 4 GiB: refused by size, nothing that large is allocated.
    let mut huge = b"\x93NUMPY\x02\x00".to_vec();
    huge.extend_from_slice(&u32::MAX.to_le_bytes());
    huge.extend_from_slice(b"{}");
    assert!(err_of(&huge).message.contains("truncated .npy header"));
    let overflow = with_data(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 2), }",
        &[],
    );
    assert!(err_of(&overflow).message.contains("too many elements"));
    let short = &good[..good.len() - 1];
    assert!(err_of(short).message.contains("23 bytes"));
    let mut long = good.clone();
    long.push(0);
    assert!(err_of(&long).message.contains("25 bytes"));
    let cases = [
        (
            "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }",
            "unsupported .npy dtype '<c8'",
        ),
        (
            "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }",
            "structured",
        ),
        ("{'descr': '<f4', 'shape': (1,), }", "missing"),
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1), }",
            "not a tuple",
        ),
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }",
            "invalid dimension",
        ),
        (
            "{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }",
            "unsupported value",
        ),
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 'y'}",
            "unexpected key",
        ),
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} junk",
            "after the dict",
        ),
        ("{'descr: '<f4'", "expected ':'"),
    ];
    for (dict, message) in cases {
        let e = err_of(&with_data(dict, &[0; 4]));
        assert!(e.message.contains(message), "{dict}: {e}");
    }
}

#[test]
fn save_and_load_round_trip_through_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.npy");
    let a = Array::from_bool(vec![3, 1], vec![true, true, false]).unwrap();
    save_npy(&path, &a).unwrap();
    assert_eq!(load_npy(&path).unwrap(), a);
    let b = Array::from_f32(vec![1], vec![f32::NAN]).unwrap();
    save_npy(&path, &b).unwrap();
    match load_npy(&path).unwrap().data() {
        ArrayData::F32(v) => assert!(v.len() == 1 && v[0].is_nan()),
        other => panic!("wrong dtype {other:?}"),
    }
    let e = load_npy(&dir.path().join("missing.npy")).unwrap_err();
    assert_eq!(e.kind, ErrorKind::OSError);
    assert!(e.message.contains("missing.npy"), "{e}");
    std::fs::write(&path, b"junk").unwrap();
    let e = load_npy(&path).unwrap_err();
    assert!(
        e.message.contains("x.npy") && e.message.contains("bad magic"),
        "{e}"
    );
}

#[test]
fn dtypes_fixtures_load_as_is() {
    // tests/refs/dtypes_fixtures.py: np.arange(12, dtype=uint8).reshape(2, 2, 3) * 21
    let img = load_npy(&fixture("u8_image_2x2x3.npy")).unwrap();
    assert_eq!(img.shape(), &[2, 2, 3]);
    let want: Vec<u8> = (0..12).map(|i| i * 21).collect();
    assert_eq!(img.data(), &ArrayData::U8(want));
    // f64 / i32 / u8 write with numpy's descr and read back bit-exactly
    let cases = [
        (
            ArrayData::F64(vec![0.1, -2.5, 1e300, f64::MIN_POSITIVE]),
            "'<f8'",
        ),
        (ArrayData::I32(vec![i32::MIN, -1, 0, i32::MAX]), "'<i4'"),
        (ArrayData::U8(vec![0, 1, 128, 255]), "'|u1'"),
    ];
    for (data, descr) in cases {
        let a = Array::new(vec![2, 2], data).unwrap();
        let bytes = npy_to_bytes(&a).unwrap();
        let header = String::from_utf8_lossy(&bytes[10..80]).to_string();
        assert!(header.contains(descr), "{header}");
        assert_eq!(npy_from_bytes(&bytes).unwrap(), a);
    }
}
