//! Deterministic damage for the corruption tests: the ways the harness's `corrupt`
//! fault changes one file while its process is down — a flipped bit, the file cut
//! short, a range zeroed — enumerated over a file's bytes, so that each test walks
//! every position instead of sampling a few and a failure names the exact case.

/// One change to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Damage {
    /// Flip bit `bit` of byte `at`.
    Flip { at: usize, bit: u8 },
    /// Cut the file to `len` bytes.
    Truncate { len: usize },
    /// Zero `len` bytes from `from` (as far as the file goes).
    Zero { from: usize, len: usize },
}

impl Damage {
    /// `bytes` with the damage done.
    pub fn apply(self, bytes: &[u8]) -> Vec<u8> {
        let mut out = bytes.to_vec();
        match self {
            Damage::Flip { at, bit } => out[at] ^= 1 << bit,
            Damage::Truncate { len } => out.truncate(len),
            Damage::Zero { from, len } => {
                let end = (from + len).min(out.len());
                out[from..end].fill(0);
            }
        }
        out
    }

    /// The first byte of `bytes` the damage changes (a cut changes the byte it cuts
    /// at); None if it changes nothing (zeroing bytes that were zero).
    pub fn first_change(self, bytes: &[u8]) -> Option<usize> {
        let damaged = self.apply(bytes);
        let common = bytes.len().min(damaged.len());
        (0..common)
            .find(|&i| bytes[i] != damaged[i])
            .or((damaged.len() != bytes.len()).then_some(common))
    }
}

/// Every case for a file of `len` bytes: a flip at every byte (the bit rotating with
/// the position), every shorter length, and zeroed runs of 1, 4 and 64 bytes from
/// every third byte.
pub fn sweep(len: usize) -> Vec<Damage> {
    let mut all = Vec::new();
    for at in 0..len {
        all.push(Damage::Flip {
            at,
            bit: (at % 8) as u8,
        });
    }
    for cut in 0..len {
        all.push(Damage::Truncate { len: cut });
    }
    for from in (0..len).step_by(3) {
        for run in [1, 4, 64] {
            all.push(Damage::Zero { from, len: run });
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_damage_changes_what_it_says() {
        let bytes = b"ab\0\0cd";
        assert_eq!(Damage::Flip { at: 1, bit: 0 }.apply(bytes), b"ac\0\0cd");
        assert_eq!(Damage::Truncate { len: 2 }.apply(bytes), b"ab");
        assert_eq!(
            Damage::Zero { from: 4, len: 64 }.apply(bytes),
            b"ab\0\0\0\0"
        );
        assert_eq!(Damage::Flip { at: 1, bit: 0 }.first_change(bytes), Some(1));
        assert_eq!(Damage::Truncate { len: 2 }.first_change(bytes), Some(2));
        assert_eq!(Damage::Zero { from: 2, len: 2 }.first_change(bytes), None);
        assert_eq!(
            Damage::Zero { from: 2, len: 3 }.first_change(bytes),
            Some(4)
        );
        assert_eq!(sweep(6).len(), 6 + 6 + 2 * 3);
    }
}
