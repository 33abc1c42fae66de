//! TFRecord framing: `u64 len | u32 masked_crc32c(len) | data | u32 masked_crc32c(data)`
//! (all little-endian), and a reader that checks both checksums.

/// The CRC-32C (Castagnoli) lookup table, built at compile time.
const TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82f6_3b78
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

/// The CRC-32C of `data`.
pub fn crc32c(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c = TABLE[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

/// TensorFlow's masked CRC: rotated right by 15 bits plus a constant.
pub fn masked_crc(data: &[u8]) -> u32 {
    let c = crc32c(data);
    c.rotate_right(15).wrapping_add(0xa282_ead8)
}

/// `data` framed as one TFRecord.
pub fn frame(data: &[u8]) -> Vec<u8> {
    let len = (data.len() as u64).to_le_bytes();
    let mut out = Vec::with_capacity(data.len() + 16);
    out.extend_from_slice(&len);
    out.extend_from_slice(&masked_crc(&len).to_le_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(&masked_crc(data).to_le_bytes());
    out
}

/// Why a byte stream is not a sequence of whole TFRecords.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordError {
    /// The stream ends inside the record starting at this offset.
    Truncated(usize),
    /// A length or data checksum does not match at this offset.
    BadCrc(usize),
}

/// The payloads of the TFRecords in `bytes`, in order.
pub fn read_records(bytes: &[u8]) -> Result<Vec<&[u8]>, RecordError> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < bytes.len() {
        let head = bytes.get(at..at + 12).ok_or(RecordError::Truncated(at))?;
        let (len, rest) = head.split_at(8);
        if u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) != masked_crc(len) {
            return Err(RecordError::BadCrc(at));
        }
        let n = u64::from_le_bytes(len.try_into().map_err(|_| RecordError::Truncated(at))?);
        let n = usize::try_from(n).map_err(|_| RecordError::Truncated(at))?;
        let end = (at + 12)
            .checked_add(n)
            .and_then(|e| e.checked_add(4))
            .ok_or(RecordError::Truncated(at))?;
        let body = bytes.get(at + 12..end).ok_or(RecordError::Truncated(at))?;
        let (data, crc) = body.split_at(n);
        if u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]) != masked_crc(data) {
            return Err(RecordError::BadCrc(at));
        }
        out.push(data);
        at = end;
    }
    Ok(out)
}
