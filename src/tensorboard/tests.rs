//! Event-file round trips: CRC-32C against the RFC 3720 check value, records read back
//! by the reader, PyTorch's histogram trimming computed by hand, and a failing append
//! rolled back.

use super::proto::Event;
use super::record::{crc32c, frame, read_records, RecordError};
use super::summary::{histogram, Bins};
use super::writer::{append_whole, Sink};
use prost::Message;
use std::io::Write;

#[test]
fn crc32c_matches_the_published_check_values() {
    // RFC 3720 B.4: 32 bytes of zeros -> 0x8a9136aa; "123456789" -> 0xe3069283
    assert_eq!(crc32c(&[0u8; 32]), 0x8a91_36aa);
    assert_eq!(crc32c(b"123456789"), 0xe306_9283);
}

#[test]
fn records_round_trip_and_corruption_is_caught() {
    let mut bytes = frame(b"abc");
    bytes.extend(frame(b""));
    assert_eq!(read_records(&bytes).unwrap(), vec![&b"abc"[..], &b""[..]]);
    let mut bad = bytes.clone();
    bad[13] ^= 1;
    assert_eq!(read_records(&bad), Err(RecordError::BadCrc(0)));
    assert_eq!(
        read_records(&bytes[..bytes.len() - 1]),
        Err(RecordError::Truncated(19))
    );
}

#[test]
fn histogram_keeps_the_occupied_buckets_and_one_in_front() {
    // values 1, 2, 2, 3 in bins [1, 1.5), [1.5, 2), [2, 2.5), [2.5, 3]: counts 1 0 2 1;
    // the first bucket is occupied, so a zero bucket goes in front and limits start at
    // the first right edge (PyTorch's make_histogram)
    let v = histogram("h", &[1.0, 2.0, 2.0, 3.0], Bins::Count(4)).unwrap();
    let h = v.histo.unwrap();
    assert_eq!(h.bucket, vec![0.0, 1.0, 0.0, 2.0, 1.0]);
    assert_eq!(h.bucket_limit, vec![1.0, 1.5, 2.0, 2.5, 3.0]);
    assert_eq!(
        (h.min, h.max, h.num, h.sum, h.sum_squares),
        (1.0, 3.0, 4.0, 8.0, 18.0)
    );
    // TensorFlow buckets around 1.0: edges 1e-12 * 1.1^k; the count sits in the bucket
    // whose left edge is the largest edge <= 1.0
    let v = histogram("h", &[1.0], Bins::Tensorflow).unwrap();
    let h = v.histo.unwrap();
    assert_eq!(h.bucket, vec![0.0, 1.0]);
    let k = (1e12f64.ln() / 1.1f64.ln()).floor();
    let right = h.bucket_limit[1];
    assert!(right > 1.0 && right / 1.1 <= 1.0, "{right} (k = {k})");
    assert!(histogram("h", &[], Bins::Tensorflow).is_err());
    assert!(histogram("h", &[f64::NAN], Bins::Tensorflow).is_err());
}

/// A sink that accepts `room` more bytes, then fails with "no space left".
struct Full {
    data: Vec<u8>,
    room: usize,
}

impl Write for Full {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.room == 0 {
            return Err(std::io::Error::from_raw_os_error(28));
        }
        let n = buf.len().min(self.room);
        self.data.extend_from_slice(&buf[..n]);
        self.room -= n;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Sink for Full {
    fn size(&self) -> std::io::Result<u64> {
        Ok(self.data.len() as u64)
    }
    fn truncate(&mut self, len: u64) -> std::io::Result<()> {
        self.data.truncate(len as usize);
        Ok(())
    }
}

#[test]
fn a_full_disk_fails_the_append_and_keeps_the_earlier_events() {
    let ev = |step| {
        frame(
            &Event {
                step,
                ..Default::default()
            }
            .encode_to_vec(),
        )
    };
    let mut sink = Full {
        data: Vec::new(),
        room: ev(1).len() + 5,
    };
    append_whole(&mut sink, &ev(1)).unwrap();
    let e = append_whole(&mut sink, &ev(2)).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(28));
    let recs = read_records(&sink.data).unwrap();
    assert_eq!(recs.len(), 1);
    assert_eq!(Event::decode(recs[0]).unwrap().step, 1);
}
