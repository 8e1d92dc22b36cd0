//! The checksum line every small state file of the broker ends with: the partitions'
//! checkpoints (high watermark, leader-epoch cache), the controller voter's vote,
//! purge point, log end and snapshot. A strict parse alone does not catch a flipped
//! bit that turns one digit into another (`1234` read as `5234`), and these files
//! hold exactly such numbers; with the line, any damage the disk does to a file while
//! its process is down reads back as an error naming the file and a byte, never as
//! another value.
//!
//! ```text
//! 0                       <- the body, as it always was (ends with a newline)
//! 1234
//! crc32c 8a1b2c3d         <- CRC-32C of every byte above, 8 lowercase hex digits
//! ```
//!
//! Files are still replaced whole ([`crate::fsutil::write_atomic`]): the line is not
//! about torn writes, which the atomic replacement rules out, but about what the
//! disk changes afterwards.

use std::fmt;

/// What the checksum line starts with.
const TAG: &str = "crc32c ";
/// The line's length: the tag, 8 hex digits, a newline.
const LINE: usize = TAG.len() + 8 + 1;

/// `body` (given a final newline if it lacks one) followed by its checksum line.
pub fn seal(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 1 + LINE);
    out.extend_from_slice(body);
    if !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(format!("{TAG}{crc:08x}\n").as_bytes());
    out
}

/// Why a sealed file does not check, and at which byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corrupt {
    /// The byte the problem was found at: where the checksum line is, or should be.
    pub offset: usize,
    /// What is wrong, in words.
    pub why: String,
}

impl fmt::Display for Corrupt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "corrupt at byte {}: {}", self.offset, self.why)
    }
}

/// The body of a sealed file (without its checksum line), if its checksum matches.
pub fn unseal(bytes: &[u8]) -> Result<&[u8], Corrupt> {
    let len = bytes.len();
    if len < LINE + 1 || !bytes.ends_with(b"\n") {
        return Err(Corrupt {
            offset: len,
            why: format!("{len} bytes, not ending with a checksum line (cut short?)"),
        });
    }
    let (body, line) = bytes.split_at(len - LINE);
    let stored = line
        .strip_prefix(TAG.as_bytes())
        .and_then(|rest| rest.strip_suffix(b"\n"))
        .filter(|hex| {
            hex.iter()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
        })
        .and_then(|hex| std::str::from_utf8(hex).ok())
        .and_then(|hex| u32::from_str_radix(hex, 16).ok());
    let Some(stored) = stored.filter(|_| body.ends_with(b"\n")) else {
        return Err(Corrupt {
            offset: body.len(),
            why: format!(
                "no checksum line ({:?} where `{TAG}` and 8 hex digits were due)",
                String::from_utf8_lossy(line)
            ),
        });
    };
    let computed = crc32c::crc32c(body);
    if stored != computed {
        return Err(Corrupt {
            offset: body.len(),
            why: format!(
                "checksum mismatch: crc32c {stored:08x} stored, {computed:08x} computed over \
                 bytes 0..{}",
                body.len()
            ),
        });
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::damage::sweep;

    #[test]
    fn a_sealed_body_unseals_as_written() {
        for body in [&b""[..], b"\n", b"0\n1234\n", b"{\"term\":3}"] {
            let sealed = seal(body);
            let got = unseal(&sealed).unwrap();
            assert!(got.starts_with(body), "{body:?}");
            assert!(got.len() <= body.len() + 1);
        }
        let sealed = seal(b"0\n42\n");
        let text = String::from_utf8(sealed).unwrap();
        assert!(text.starts_with("0\n42\ncrc32c "), "{text}");
        assert_eq!(text.len(), 5 + LINE);
    }

    #[test]
    fn every_damage_is_caught_and_placed() {
        let sealed = seal(b"0\n3\n0 0\n5 17\n9 1099511627776\n");
        for damage in sweep(sealed.len()) {
            if damage.first_change(&sealed).is_none() {
                continue;
            }
            let err = unseal(&damage.apply(&sealed)).unwrap_err();
            assert!(err.offset <= sealed.len(), "{damage:?}: {err}");
            assert!(err.to_string().starts_with("corrupt at byte "), "{err}");
        }
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let sealed = seal(b"0\n7\n");
        let cut = unseal(&sealed[..sealed.len() - 1]).unwrap_err();
        assert!(cut.why.contains("cut short"), "{cut}");
        let unsealed = unseal(b"0\n7\nsomething else\n").unwrap_err();
        assert!(unsealed.why.contains("no checksum line"), "{unsealed}");
        let mut flipped = sealed.clone();
        flipped[2] ^= 0x01;
        let err = unseal(&flipped).unwrap_err();
        assert_eq!(err.offset, 4);
        assert!(err.why.contains("checksum mismatch"), "{err}");
        assert!(err.why.contains("over bytes 0..4"), "{err}");
    }
}
