//! The Jupyter wire format (messaging protocol v5.3): connection files, HMAC-SHA256
//! signatures, and messages as ZeroMQ frames
//! `[identities..., "<IDS|MSG>", signature, header, parent_header, metadata, content]`.

use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

/// The frame that separates routing identities from the signed message parts.
const DELIMITER: &[u8] = b"<IDS|MSG>";

/// The protocol version this kernel speaks.
pub const PROTOCOL_VERSION: &str = "5.3";

/// What a connection file (written by the front end) says: where to bind, and the key.
#[derive(Clone, Debug)]
pub struct ConnectionInfo {
    pub transport: String,
    pub ip: String,
    pub shell_port: u16,
    pub iopub_port: u16,
    pub stdin_port: u16,
    pub control_port: u16,
    pub hb_port: u16,
    pub key: String,
    pub signature_scheme: String,
}

impl ConnectionInfo {
    /// Parses a connection file's JSON text.
    pub fn parse(text: &str) -> Result<ConnectionInfo, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("bad JSON: {e}"))?;
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        let port = |k: &str| {
            v.get(k)
                .and_then(Value::as_u64)
                .and_then(|p| u16::try_from(p).ok())
                .ok_or_else(|| format!("missing or bad `{k}`"))
        };
        Ok(ConnectionInfo {
            transport: s("transport").unwrap_or_else(|| "tcp".into()),
            ip: s("ip").unwrap_or_else(|| "127.0.0.1".into()),
            shell_port: port("shell_port")?,
            iopub_port: port("iopub_port")?,
            stdin_port: port("stdin_port")?,
            control_port: port("control_port")?,
            hb_port: port("hb_port")?,
            key: s("key").unwrap_or_default(),
            signature_scheme: s("signature_scheme").unwrap_or_else(|| "hmac-sha256".into()),
        })
    }

    /// The ZeroMQ endpoint of a port (`tcp://127.0.0.1:PORT`).
    pub fn endpoint(&self, port: u16) -> String {
        format!("{}://{}:{}", self.transport, self.ip, port)
    }
}

/// Signs and checks messages with the connection's key (no signature when it is empty,
/// as the protocol allows).
#[derive(Clone)]
pub struct Signer {
    key: Vec<u8>,
    /// This kernel's session id (the `session` of every header it writes).
    pub session: String,
}

impl Signer {
    pub fn new(info: &ConnectionInfo) -> Result<Signer, String> {
        if !info.key.is_empty() && info.signature_scheme != "hmac-sha256" {
            return Err(format!(
                "unsupported signature scheme `{}` (only hmac-sha256)",
                info.signature_scheme
            ));
        }
        Ok(Signer {
            key: info.key.as_bytes().to_vec(),
            session: uuid(),
        })
    }

    fn mac(&self, parts: &[&[u8]]) -> Option<Hmac<Sha256>> {
        if self.key.is_empty() {
            return None;
        }
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).ok()?;
        for p in parts {
            mac.update(p);
        }
        Some(mac)
    }

    /// The hex signature of the four message parts ("" without a key).
    fn sign(&self, parts: &[&[u8]]) -> String {
        match self.mac(parts) {
            Some(mac) => hex(&mac.finalize().into_bytes()),
            None => String::new(),
        }
    }

    /// Whether `signature` (hex) is right for the parts, compared in constant time.
    fn verify(&self, parts: &[&[u8]], signature: &[u8]) -> bool {
        match self.mac(parts) {
            None => true,
            Some(mac) => unhex(signature).is_some_and(|sig| mac.verify_slice(&sig).is_ok()),
        }
    }

    /// A new message header of type `msg_type`.
    pub fn header(&self, msg_type: &str) -> Value {
        json!({
            "msg_id": uuid(),
            "session": self.session,
            "username": "kiln",
            "date": now_iso8601(),
            "msg_type": msg_type,
            "version": PROTOCOL_VERSION,
        })
    }

    /// Encodes a message as frames: identities, the delimiter, the signature, the parts.
    pub fn encode(&self, msg: &Message) -> Vec<Vec<u8>> {
        let parts: Vec<Vec<u8>> = [&msg.header, &msg.parent, &msg.metadata, &msg.content]
            .iter()
            .map(|v| v.to_string().into_bytes())
            .collect();
        let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        let mut frames = msg.identities.clone();
        frames.push(DELIMITER.to_vec());
        frames.push(self.sign(&refs).into_bytes());
        frames.extend(parts);
        frames
    }

    /// Decodes and checks a received message; `Err` says why it was rejected.
    pub fn decode(&self, frames: Vec<Vec<u8>>) -> Result<Message, String> {
        let at = frames
            .iter()
            .position(|f| f == DELIMITER)
            .ok_or("no <IDS|MSG> delimiter")?;
        if frames.len() < at + 6 {
            return Err(format!(
                "{} frames after the delimiter, 5 needed",
                frames.len() - at - 1
            ));
        }
        let parts: Vec<&[u8]> = frames[at + 2..at + 6].iter().map(Vec::as_slice).collect();
        if !self.verify(&parts, &frames[at + 1]) {
            return Err("bad signature".into());
        }
        let parse = |b: &[u8]| -> Result<Value, String> {
            serde_json::from_slice(b).map_err(|e| format!("bad JSON part: {e}"))
        };
        let msg = Message {
            identities: frames[..at].to_vec(),
            header: parse(parts[0])?,
            parent: parse(parts[1])?,
            metadata: parse(parts[2])?,
            content: parse(parts[3])?,
        };
        if msg.msg_type().is_empty() {
            return Err("header without msg_type".into());
        }
        Ok(msg)
    }
}

/// One Jupyter message.
#[derive(Clone, Debug)]
pub struct Message {
    /// ZeroMQ routing identities (the ROUTER socket's peer), or the IOPub topic.
    pub identities: Vec<Vec<u8>>,
    pub header: Value,
    pub parent: Value,
    pub metadata: Value,
    pub content: Value,
}

impl Message {
    pub fn msg_type(&self) -> &str {
        self.header
            .get("msg_type")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// A reply or side effect of `self`: same identities, `self`'s header as parent.
    pub fn child(&self, signer: &Signer, msg_type: &str, content: Value) -> Message {
        Message {
            identities: self.identities.clone(),
            header: signer.header(msg_type),
            parent: self.header.clone(),
            metadata: json!({}),
            content,
        }
    }

    /// An IOPub message of `msg_type` whose parent is `parent` (a request's header).
    pub fn iopub(signer: &Signer, parent: &Value, msg_type: &str, content: Value) -> Message {
        Message {
            identities: vec![format!("kernel.{}.{msg_type}", signer.session).into_bytes()],
            header: signer.header(msg_type),
            parent: parent.clone(),
            metadata: json!({}),
            content,
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &[u8]) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    text.chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).ok()?, 16).ok())
        .collect()
}

/// A random (version 4) UUID.
pub fn uuid() -> String {
    let mut b = [0u8; 16];
    if getrandom::fill(&mut b).is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        b = (t ^ u128::from(std::process::id())).to_le_bytes();
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex(&b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// The current UTC time as ISO 8601 with microseconds (`2026-11-26T04:05:06.123456Z`).
pub fn now_iso8601() -> String {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = d.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, day) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        d.subsec_micros()
    )
}

/// The (year, month, day) of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signer(key: &str) -> Signer {
        Signer {
            key: key.as_bytes().to_vec(),
            session: "s".into(),
        }
    }

    #[test]
    fn signature_matches_python_hmac() {
        // python3 -c "import hmac,hashlib; print(hmac.new(b'key', b'abcd', hashlib.sha256).hexdigest())"
        assert_eq!(
            signer("key").sign(&[b"a", b"b", b"c", b"d"]),
            "2a31ec0ee8d878c9eece9fb0df79b3b90b2256240163aa5ee50d176d3d1121f8"
        );
        assert_eq!(signer("").sign(&[b"abcd"]), "");
    }

    #[test]
    fn round_trip_and_rejections() {
        let s = signer("secret");
        let m = Message {
            identities: vec![b"peer".to_vec()],
            header: s.header("execute_request"),
            parent: json!({}),
            metadata: json!({}),
            content: json!({"code": "1+1"}),
        };
        let frames = s.encode(&m);
        let back = s.decode(frames.clone()).unwrap();
        assert_eq!(back.msg_type(), "execute_request");
        assert_eq!(back.identities, vec![b"peer".to_vec()]);
        let mut bad = frames.clone();
        let last = bad.len() - 1;
        bad[last] = br#"{"code": "2+2"}"#.to_vec();
        assert_eq!(s.decode(bad).unwrap_err(), "bad signature");
        assert!(signer("other").decode(frames.clone()).is_err());
        assert!(s.decode(frames[..3].to_vec()).is_err());
        assert!(s.decode(vec![b"junk".to_vec()]).is_err());
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_512), (2026, 2, 28));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
