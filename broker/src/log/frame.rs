//! The on-disk frame of one record, kept apart from any file handling so the
//! encoding and its failure modes can be tested byte by byte.
//!
//! ```text
//! +---------+---------+------------+------------------+------------------------+
//! | len u32 | crc u32 | offset u64 | leader_epoch i32 | {"key":..,"value":..}  |
//! +---------+---------+------------+------------------+------------------------+
//!           |<------------------------ len bytes (the body) -------------------->|
//! ```
//!
//! An idempotent producer's record adds `"producer":{"id":..,"epoch":..,"sequence":..}`
//! to the payload (Kafka's batch header fields), so the CRC covers it as it covers
//! the value; a record without it reads as before.
//!
//! All integers are little-endian. The CRC-32C covers the length field and the body,
//! so a flipped bit anywhere in a frame is caught; a frame whose declared length runs
//! past the end of the file is a torn write.

use serde::{Deserialize, Serialize};

use super::{ProducerStamp, Record, RecordValue};

/// Bytes before the body: length and CRC.
pub const HEADER_BYTES: usize = 8;
/// Fixed part of the body: offset and leader epoch.
const FIXED_BODY_BYTES: usize = 12;
/// Largest body accepted; a larger declared length is corruption, not a record.
pub const MAX_BODY_BYTES: usize = 64 << 20;

#[derive(Serialize)]
struct PayloadRef<'a> {
    key: &'a Option<String>,
    value: &'a RecordValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    producer: &'a Option<ProducerStamp>,
}

#[derive(Deserialize)]
struct Payload {
    key: Option<String>,
    value: RecordValue,
    #[serde(default)]
    producer: Option<ProducerStamp>,
}

/// Append the frame of `record` to `out`. Fails only if the record is too large.
pub fn encode(record: &Record, out: &mut Vec<u8>) -> Result<(), String> {
    let payload = serde_json::to_vec(&PayloadRef {
        key: &record.key,
        value: &record.value,
        producer: &record.producer,
    })
    .map_err(|e| format!("record at offset {} cannot be encoded: {e}", record.offset))?;
    let body_len = FIXED_BODY_BYTES + payload.len();
    if body_len > MAX_BODY_BYTES {
        return Err(format!(
            "record at offset {} is {body_len} bytes, more than the limit of {MAX_BODY_BYTES}",
            record.offset
        ));
    }
    let len = (body_len as u32).to_le_bytes();
    let start = out.len();
    out.extend_from_slice(&len);
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&record.offset.to_le_bytes());
    out.extend_from_slice(&record.leader_epoch.to_le_bytes());
    out.extend_from_slice(&payload);
    let crc = checksum(&len, &out[start + HEADER_BYTES..]);
    out[start + 4..start + HEADER_BYTES].copy_from_slice(&crc.to_le_bytes());
    Ok(())
}

/// Why bytes at some position are not a valid frame.
#[derive(Debug, Clone, PartialEq)]
pub enum Invalid {
    /// The file ends inside the frame (a write cut short).
    Torn { needed: usize, available: usize },
    /// The frame is complete but its contents are wrong.
    Corrupt(String),
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Invalid::Torn { needed, available } => {
                write!(f, "torn record ({available} of {needed} bytes present)")
            }
            Invalid::Corrupt(why) => write!(f, "corrupt record ({why})"),
        }
    }
}

/// Decode the frame at the start of `buf`: the record and the frame's length.
pub fn decode(buf: &[u8]) -> Result<(Record, usize), Invalid> {
    if buf.len() < HEADER_BYTES {
        return Err(Invalid::Torn {
            needed: HEADER_BYTES,
            available: buf.len(),
        });
    }
    let len_bytes: [u8; 4] = buf[0..4].try_into().expect("4 bytes");
    let body_len = u32::from_le_bytes(len_bytes) as usize;
    if !(FIXED_BODY_BYTES..=MAX_BODY_BYTES).contains(&body_len) {
        return Err(Invalid::Corrupt(format!("impossible length {body_len}")));
    }
    let frame_len = HEADER_BYTES + body_len;
    if buf.len() < frame_len {
        return Err(Invalid::Torn {
            needed: frame_len,
            available: buf.len(),
        });
    }
    let stored = u32::from_le_bytes(buf[4..8].try_into().expect("4 bytes"));
    let body = &buf[HEADER_BYTES..frame_len];
    let computed = checksum(&len_bytes, body);
    if stored != computed {
        return Err(Invalid::Corrupt(format!(
            "CRC {stored:#010x} stored, {computed:#010x} computed"
        )));
    }
    let offset = u64::from_le_bytes(body[0..8].try_into().expect("8 bytes"));
    let leader_epoch = i32::from_le_bytes(body[8..12].try_into().expect("4 bytes"));
    let payload: Payload = serde_json::from_slice(&body[FIXED_BODY_BYTES..])
        .map_err(|e| Invalid::Corrupt(format!("payload is not a key and value: {e}")))?;
    let record = Record {
        offset,
        leader_epoch,
        producer: payload.producer,
        key: payload.key,
        value: payload.value,
    };
    Ok((record, frame_len))
}

fn checksum(len: &[u8; 4], body: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(len), body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::rv;

    fn record() -> Record {
        Record {
            offset: 42,
            leader_epoch: 7,
            producer: None,
            key: Some("k".into()),
            value: rv!({"n": [1, 2, 3]}),
        }
    }

    fn framed() -> Vec<u8> {
        let mut buf = Vec::new();
        encode(&record(), &mut buf).unwrap();
        buf
    }

    #[test]
    fn round_trip() {
        let buf = framed();
        let (r, n) = decode(&buf).unwrap();
        assert_eq!(r, record());
        assert_eq!(n, buf.len());
    }

    #[test]
    fn a_producer_stamp_round_trips_under_the_crc() {
        let rec = Record {
            producer: Some(ProducerStamp {
                id: 9,
                epoch: 2,
                sequence: 41,
                records_after: 2,
            }),
            ..record()
        };
        let mut buf = Vec::new();
        encode(&rec, &mut buf).unwrap();
        assert_eq!(decode(&buf).unwrap(), (rec, buf.len()));
        // A flipped bit in the stamp is caught like one in the value.
        let at = buf.windows(2).position(|w| w == b"41").unwrap();
        buf[at] ^= 1;
        assert!(matches!(decode(&buf), Err(Invalid::Corrupt(_))));
    }

    #[test]
    fn round_trip_without_key_and_with_trailing_bytes() {
        let rec = Record {
            key: None,
            value: rv!(null),
            ..record()
        };
        let mut buf = Vec::new();
        encode(&rec, &mut buf).unwrap();
        let n = buf.len();
        buf.extend_from_slice(b"next");
        assert_eq!(decode(&buf).unwrap(), (rec, n));
    }

    #[test]
    fn every_short_prefix_is_torn() {
        let buf = framed();
        for cut in 0..buf.len() {
            match decode(&buf[..cut]) {
                Err(Invalid::Torn { available, .. }) => assert_eq!(available, cut),
                other => panic!("cut at {cut}: {other:?}"),
            }
        }
    }

    #[test]
    fn every_flipped_bit_is_caught() {
        let buf = framed();
        for i in 0..buf.len() {
            for bit in 0..8 {
                let mut bad = buf.clone();
                bad[i] ^= 1 << bit;
                assert!(
                    decode(&bad).is_err(),
                    "flipping bit {bit} of byte {i} went unnoticed"
                );
            }
        }
    }

    #[test]
    fn oversized_length_is_corrupt_not_allocated() {
        let mut buf = framed();
        buf[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(decode(&buf), Err(Invalid::Corrupt(_))));
    }
}
