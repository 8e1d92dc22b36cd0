//! The degraded conditions a link's proxy can put on the bytes it forwards, short of a
//! cut (docs/faults.md#degraded-links), as Toxiproxy's toxics and Jepsen's `net` do
//! with netem: latency with jitter (`slow`), lost segments and dropped connections
//! (`flaky`), a bandwidth limit (`throttle`).
//!
//! They are TCP-true: the proxy only ever delays bytes, stalls them, or ends a
//! connection with a reset — it never drops bytes out of the middle of a stream,
//! which no real network does to a TCP connection (the kernel would retransmit
//! them). What the peers see is what a lossy, slow or narrow network makes TCP show
//! them: late bytes, head-of-line stalls and connection resets.
//!
//! Every random draw comes from a per-connection source seeded from the link's seed
//! and the connection's number on that link, and every chunk draws the same numbers
//! whatever conditions are in force, so a seed fixes which chunks are stalled or
//! reset (the chunks themselves still depend on the peers' timing).

use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Latency on every chunk forwarded: `delay` plus a uniform draw in `0..=jitter`.
/// Chunks keep their order (a chunk due before its predecessor waits for it), as
/// TCP delivers a stream in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slow {
    pub delay: Duration,
    pub jitter: Duration,
}

/// A lossy link. `reset`: the fraction of connections that end in a reset (RST both
/// ways): each new connection, and each chunk forwarded, is with this probability the
/// connection's end (the chunk is not delivered). `loss`: the fraction of chunks
/// "lost" once: held for [`RETRANSMIT`] before they are forwarded (and everything
/// after them, in order), as TCP shows a lost segment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Flaky {
    pub reset: f64,
    pub loss: f64,
}

/// How long a lost chunk waits: Linux's minimum retransmission timeout.
pub const RETRANSMIT: Duration = Duration::from_millis(200);

/// What the proxy does to a link's bytes besides cutting it; the default: nothing.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Conditions {
    pub slow: Option<Slow>,
    pub flaky: Option<Flaky>,
    /// Bytes per second in each direction of each connection (Toxiproxy's
    /// `bandwidth`).
    pub throttle: Option<u64>,
}

/// What happens to one chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Forward it after this long.
    Forward(Duration),
    /// End the connection with a reset, without forwarding it.
    Reset,
}

/// One connection's seeded draws (one source per direction, plus one for its start).
#[derive(Debug, Clone)]
pub struct Dice {
    rng: ChaCha8Rng,
}

impl Dice {
    /// The source for stream `stream` (0: the connection's start, 1 and 2 its
    /// directions) of connection number `conn` on a link seeded `seed`.
    pub fn new(seed: u64, conn: u64, stream: u64) -> Dice {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ conn.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        rng.set_stream(stream);
        Dice { rng }
    }

    /// Whether a new connection is reset at once.
    pub fn reset_at_start(&mut self, c: &Conditions) -> bool {
        let draw: f64 = self.rng.random();
        c.flaky.is_some_and(|f| draw < f.reset)
    }

    /// The fate of the next chunk.
    pub fn chunk(&mut self, c: &Conditions) -> Fate {
        // Always three draws, so the sequence does not depend on the conditions.
        let (reset, loss, jitter): (f64, f64, f64) =
            (self.rng.random(), self.rng.random(), self.rng.random());
        let mut wait = Duration::ZERO;
        if let Some(f) = c.flaky {
            if reset < f.reset {
                return Fate::Reset;
            }
            if loss < f.loss {
                wait += RETRANSMIT;
            }
        }
        if let Some(s) = c.slow {
            wait += s.delay + s.jitter.mul_f64(jitter);
        }
        Fate::Forward(wait)
    }
}

/// The largest piece written at once under `throttle` bytes per second: a twentieth of
/// a second's worth (at least 256 bytes), so the rate holds over short spans too.
pub fn piece(throttle: u64) -> usize {
    usize::try_from(throttle / 20)
        .unwrap_or(usize::MAX)
        .max(256)
}

/// How long `bytes` take at `throttle` bytes per second.
pub fn transfer_time(bytes: usize, throttle: u64) -> Duration {
    Duration::from_secs_f64(bytes as f64 / throttle.max(1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_the_same_fates() {
        let c = Conditions {
            slow: Some(Slow {
                delay: Duration::from_millis(10),
                jitter: Duration::from_millis(5),
            }),
            flaky: Some(Flaky {
                reset: 0.1,
                loss: 0.2,
            }),
            throttle: None,
        };
        let fates = |seed, conn| {
            let mut d = Dice::new(seed, conn, 1);
            (0..100).map(|_| d.chunk(&c)).collect::<Vec<_>>()
        };
        assert_eq!(fates(7, 3), fates(7, 3));
        assert_ne!(fates(7, 3), fates(7, 4));
        assert_ne!(fates(7, 3), fates(8, 3));
    }

    #[test]
    fn fates_follow_the_conditions() {
        let mut d = Dice::new(1, 0, 1);
        let none = Conditions::default();
        for _ in 0..1000 {
            assert_eq!(d.chunk(&none), Fate::Forward(Duration::ZERO));
        }
        let slow = Conditions {
            slow: Some(Slow {
                delay: Duration::from_millis(50),
                jitter: Duration::from_millis(20),
            }),
            ..Conditions::default()
        };
        for _ in 0..1000 {
            let Fate::Forward(w) = d.chunk(&slow) else {
                panic!("slow never resets");
            };
            assert!(w >= Duration::from_millis(50) && w <= Duration::from_millis(70));
        }
        let flaky = Conditions {
            flaky: Some(Flaky {
                reset: 0.05,
                loss: 0.25,
            }),
            ..Conditions::default()
        };
        let fates: Vec<Fate> = (0..20_000).map(|_| d.chunk(&flaky)).collect();
        let resets = fates.iter().filter(|f| **f == Fate::Reset).count() as f64;
        let lost = fates
            .iter()
            .filter(|f| **f == Fate::Forward(RETRANSMIT))
            .count() as f64;
        assert!((resets / 20_000.0 - 0.05).abs() < 0.01, "{resets} resets");
        // Lost among the chunks not reset.
        assert!(
            (lost / (20_000.0 - resets) - 0.25).abs() < 0.02,
            "{lost} lost"
        );
    }

    #[test]
    fn throttle_pieces_and_times() {
        assert_eq!(piece(1000), 256);
        assert_eq!(piece(100_000), 5000);
        assert_eq!(transfer_time(5000, 10_000), Duration::from_millis(500));
    }
}
