//! PNG images, 8 bits per channel: [`encode`] (zlib-compressed by miniz_oxide, filter 0)
//! for TensorBoard images and plots, [`decode`] (gray, gray+alpha, RGB, RGBA; every
//! filter; not interlaced) for `imread`. A malformed file is a `ValueError`.

use super::value_error;
use crate::error::Result;

const SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];

/// The CRC-32 (ISO-HDLC) of `parts` concatenated, as PNG chunks carry it.
fn crc32(parts: &[&[u8]]) -> u32 {
    let mut c = !0u32;
    for p in parts {
        for &b in *p {
            c ^= b as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    (c >> 1) ^ 0xedb8_8320
                } else {
                    c >> 1
                };
            }
        }
    }
    !c
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    out.extend_from_slice(&crc32(&[kind, data]).to_be_bytes());
}

fn color_type(channels: usize) -> Option<u8> {
    match channels {
        1 => Some(0),
        2 => Some(4),
        3 => Some(2),
        4 => Some(6),
        _ => None,
    }
}

/// A PNG of `pixels` (`height` rows of `width * channels` bytes; 1 to 4 channels).
pub fn encode(pixels: &[u8], width: usize, height: usize, channels: usize) -> Result<Vec<u8>> {
    let ct = color_type(channels)
        .ok_or_else(|| value_error(format!("a PNG has 1 to 4 channels, not {channels}")))?;
    let row = width * channels;
    if pixels.len() != row * height || width == 0 || height == 0 {
        return Err(value_error(format!(
            "a {width}x{height} image with {channels} channels needs {} bytes, got {}",
            row * height,
            pixels.len()
        )));
    }
    let (w, h) = match (u32::try_from(width), u32::try_from(height)) {
        (Ok(w), Ok(h)) if w < 1 << 31 && h < 1 << 31 => (w, h),
        _ => return Err(value_error("image too large for PNG")),
    };
    let mut raw = Vec::with_capacity((row + 1) * height);
    for r in pixels.chunks(row) {
        raw.push(0);
        raw.extend_from_slice(r);
    }
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, ct, 0, 0, 0]);
    let mut out = SIGNATURE.to_vec();
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(
        &mut out,
        b"IDAT",
        &miniz_oxide::deflate::compress_to_vec_zlib(&raw, 6),
    );
    chunk(&mut out, b"IEND", &[]);
    Ok(out)
}

/// A decoded PNG: `height` rows of `width * channels` bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Png {
    pub width: usize,
    pub height: usize,
    pub channels: usize,
    pub pixels: Vec<u8>,
}

fn be32(b: &[u8], at: usize) -> Result<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| value_error("truncated PNG"))
}

/// Undoes PNG filter `kind` on `cur` given the previous row; `bpp` bytes per pixel.
fn unfilter(kind: u8, cur: &mut [u8], prev: &[u8], bpp: usize) -> Result<()> {
    for i in 0..cur.len() {
        let a = if i >= bpp { cur[i - bpp] } else { 0 };
        let b = prev[i];
        let c = if i >= bpp { prev[i - bpp] } else { 0 };
        let pred = match kind {
            0 => 0,
            1 => a,
            2 => b,
            3 => ((a as u16 + b as u16) / 2) as u8,
            4 => {
                let p = a as i16 + b as i16 - c as i16;
                let (pa, pb, pc) = (
                    (p - a as i16).abs(),
                    (p - b as i16).abs(),
                    (p - c as i16).abs(),
                );
                if pa <= pb && pa <= pc {
                    a
                } else if pb <= pc {
                    b
                } else {
                    c
                }
            }
            k => return Err(value_error(format!("bad PNG filter type {k}"))),
        };
        cur[i] = cur[i].wrapping_add(pred);
    }
    Ok(())
}

/// Decodes an 8-bit, non-interlaced PNG.
pub fn decode(bytes: &[u8]) -> Result<Png> {
    if bytes.get(..8) != Some(&SIGNATURE[..]) {
        return Err(value_error("not a PNG file"));
    }
    let (mut at, mut idat, mut head) = (8usize, Vec::new(), None);
    while at < bytes.len() {
        let len = be32(bytes, at)? as usize;
        let kind = bytes
            .get(at + 4..at + 8)
            .ok_or_else(|| value_error("truncated PNG"))?;
        let data = at
            .checked_add(8 + len)
            .and_then(|end| bytes.get(at + 8..end))
            .ok_or_else(|| value_error("truncated PNG"))?;
        match kind {
            b"IHDR" if data.len() == 13 => {
                head = Some((be32(data, 0)?, be32(data, 4)?, data[8], data[9], data[12]))
            }
            b"IDAT" => idat.extend_from_slice(data),
            b"IEND" => break,
            _ => {}
        }
        at += 12 + len;
    }
    let (w, h, depth, ct, interlace) = head.ok_or_else(|| value_error("PNG without a header"))?;
    let channels = match ct {
        0 => 1,
        4 => 2,
        2 => 3,
        6 => 4,
        _ => return Err(value_error(format!("unsupported PNG color type {ct}"))),
    };
    if depth != 8 || interlace != 0 {
        return Err(value_error("only 8-bit, non-interlaced PNGs can be read"));
    }
    let (width, height) = (w as usize, h as usize);
    let row = width
        .checked_mul(channels)
        .filter(|r| r.checked_mul(height).is_some_and(|n| n <= 1 << 30))
        .ok_or_else(|| value_error("PNG too large"))?;
    let raw = miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(&idat, (row + 1) * height)
        .map_err(|_| value_error("corrupt PNG image data"))?;
    if raw.len() != (row + 1) * height {
        return Err(value_error("PNG image data has the wrong size"));
    }
    let mut pixels = vec![0u8; row * height];
    let mut prev = vec![0u8; row];
    for (r, src) in raw.chunks(row + 1).enumerate() {
        let cur = &mut pixels[r * row..(r + 1) * row];
        cur.copy_from_slice(&src[1..]);
        unfilter(src[0], cur, &prev, channels)?;
        prev.copy_from_slice(cur);
    }
    Ok(Png {
        width,
        height,
        channels,
        pixels,
    })
}

#[cfg(test)]
mod tests {
    use super::{decode, encode};

    #[test]
    fn png_round_trips_and_rejects_damage() {
        let px: Vec<u8> = (0..2 * 3 * 4).map(|i| (i * 10) as u8).collect();
        let bytes = encode(&px, 3, 2, 4).unwrap();
        let p = decode(&bytes).unwrap();
        assert_eq!((p.width, p.height, p.channels), (3, 2, 4));
        assert_eq!(p.pixels, px);
        assert!(decode(&bytes[..bytes.len() / 2]).is_err());
        assert!(decode(b"not a png").is_err());
        assert!(encode(&px, 3, 3, 4).is_err());
    }
}
