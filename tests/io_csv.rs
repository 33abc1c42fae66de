//! CSV loading: headers, delimiters, dtypes, quoting, and errors naming line and column.

use kiln::io::{load_csv, parse_csv, Array, CsvHeader, DType};
use kiln::ErrorKind;

fn f32_table(text: &str, header: CsvHeader) -> (Array, Option<Vec<String>>) {
    let t = parse_csv(text, header, ',', DType::F32).unwrap();
    (t.array, t.header)
}

#[test]
fn auto_detects_a_header_row() {
    let (a, h) = f32_table("x,y\n1,2.5\n-3,4e2\n", CsvHeader::Auto);
    assert_eq!(h, Some(vec!["x".to_string(), "y".to_string()]));
    assert_eq!(
        a,
        Array::from_f32(vec![2, 2], vec![1.0, 2.5, -3.0, 400.0]).unwrap()
    );
    let (a, h) = f32_table("1,2\n3,4", CsvHeader::Auto);
    assert_eq!(h, None);
    assert_eq!(a.shape(), &[2, 2]);
}

#[test]
fn explicit_header_choices() {
    // A numeric first row taken as names when asked.
    let (a, h) = f32_table("1,2\n3,4\n", CsvHeader::Yes);
    assert_eq!(h, Some(vec!["1".to_string(), "2".to_string()]));
    assert_eq!(a, Array::from_f32(vec![1, 2], vec![3.0, 4.0]).unwrap());
    let e = parse_csv("a,b\n1,2\n", CsvHeader::No, ',', DType::F32).unwrap_err();
    assert_eq!(e.kind, ErrorKind::ValueError);
    assert_eq!(e.message, "line 1, column 1: 'a' is not a valid float32");
}

#[test]
fn delimiters_quotes_blank_lines_crlf_and_bom() {
    let text = "\u{feff}\"a;b\" ; \"say \"\"hi\"\"\"\r\n\r\n 1 ; 2 \r\n\n3;4\r\n";
    let t = parse_csv(text, CsvHeader::Auto, ';', DType::I64).unwrap();
    assert_eq!(
        t.header,
        Some(vec!["a;b".to_string(), "say \"hi\"".to_string()])
    );
    assert_eq!(
        t.array,
        Array::from_i64(vec![2, 2], vec![1, 2, 3, 4]).unwrap()
    );
    let t = parse_csv("1\t0\ntrue\tFalse\n", CsvHeader::No, '\t', DType::Bool).unwrap();
    assert_eq!(
        t.array,
        Array::from_bool(vec![2, 2], vec![true, false, true, false]).unwrap()
    );
}

#[test]
fn special_floats_and_empty_inputs() {
    let (a, _) = f32_table("nan,inf,-inf,1e-3", CsvHeader::No);
    let v = match a.data() {
        kiln::io::ArrayData::F32(v) => v.clone(),
        other => panic!("{other:?}"),
    };
    assert!(v[0].is_nan() && v[1] == f32::INFINITY && v[2] == f32::NEG_INFINITY);
    assert_eq!(v[3], 0.001);
    let (a, h) = f32_table("", CsvHeader::Auto);
    assert_eq!((a.shape(), h), (&[0usize, 0][..], None));
    let (a, h) = f32_table("p,q,r\n", CsvHeader::Auto);
    assert_eq!(a.shape(), &[0, 3]);
    assert_eq!(h.map(|h| h.len()), Some(3));
}

fn error_message(text: &str, dtype: DType) -> String {
    let e = parse_csv(text, CsvHeader::Auto, ',', dtype).unwrap_err();
    assert_eq!(e.kind, ErrorKind::ValueError);
    e.message
}

#[test]
fn errors_name_line_and_column() {
    assert_eq!(
        error_message("a,b\n1,2\n\n3,x\n", DType::F32),
        "line 4, column 2: 'x' is not a valid float32"
    );
    assert_eq!(
        error_message("1,2\n3,4,5\n", DType::F32),
        "line 2 has 3 fields, expected 2"
    );
    assert_eq!(
        error_message("1,2\n3,\n", DType::F32),
        "line 2, column 2: empty value"
    );
    assert_eq!(
        error_message("1,2\n3,2.5\n", DType::I64),
        "line 2, column 2: '2.5' is not a valid int64"
    );
    assert_eq!(
        error_message("1,99999999999999999999\n", DType::I64),
        "line 1, column 2: '99999999999999999999' is not a valid int64"
    );
    assert_eq!(
        error_message("1,\"2\n", DType::F32),
        "line 1, column 2: unterminated quoted field"
    );
    assert_eq!(
        error_message("\"1\"x,2\n", DType::F32),
        "line 1, column 1: text after a closing quote"
    );
    let e = parse_csv("1", CsvHeader::No, '"', DType::F32).unwrap_err();
    assert_eq!(e.kind, ErrorKind::ValueError);
}

#[test]
fn load_csv_reads_files_and_reports_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.csv");
    std::fs::write(&path, "a,b\n1,2\n").unwrap();
    let t = load_csv(&path, CsvHeader::Auto, ',', DType::I64).unwrap();
    assert_eq!(t.array, Array::from_i64(vec![1, 2], vec![1, 2]).unwrap());
    std::fs::write(&path, "a,b\n1,z\n").unwrap();
    let e = load_csv(&path, CsvHeader::Auto, ',', DType::I64).unwrap_err();
    assert!(
        e.message.contains("d.csv") && e.message.contains("line 2, column 2"),
        "{e}"
    );
    std::fs::write(&path, b"1,\xff\n").unwrap();
    let e = load_csv(&path, CsvHeader::Auto, ',', DType::I64).unwrap_err();
    assert_eq!(e.kind, ErrorKind::ValueError);
    assert!(e.message.contains("UTF-8"), "{e}");
    let e = load_csv(
        &dir.path().join("nope.csv"),
        CsvHeader::Auto,
        ',',
        DType::F32,
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::OSError);
}
