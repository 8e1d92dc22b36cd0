//! The option values `watermark run` parses itself: a number of clients in all or
//! per node, positive numbers, seconds — each refused with a message saying what it
//! accepts.

/// `--concurrency`: clients in all, or per node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Concurrency {
    Total(u32),
    PerNode(u32),
}

/// Most concurrent clients a run takes.
pub(super) const MAX_CONCURRENCY: u32 = 1000;

impl Concurrency {
    /// The number of clients with `nodes` nodes.
    pub(super) fn clients(self, nodes: u32) -> u32 {
        match self {
            Concurrency::Total(n) => n,
            Concurrency::PerNode(k) => k.saturating_mul(nodes),
        }
    }
}

/// `N` (1 to 1000) or `Kn` (K clients per node).
pub(super) fn parse_concurrency(s: &str) -> Result<Concurrency, String> {
    let (digits, per_node) = match s.strip_suffix('n') {
        Some(k) => (k, true),
        None => (s, false),
    };
    let bad = || {
        format!(
            "`{s}` is neither a number of clients (1 to {MAX_CONCURRENCY}) nor `Kn`, K clients per node (e.g. 2n)"
        )
    };
    let n: u32 = digits.parse().map_err(|_| bad())?;
    if n == 0 || n > MAX_CONCURRENCY {
        return Err(bad());
    }
    Ok(if per_node {
        Concurrency::PerNode(n)
    } else {
        Concurrency::Total(n)
    })
}

pub(super) fn parse_positive(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("`{s}` is not a positive number")),
    }
}

/// Seconds in (0, 86400].
pub(crate) fn parse_positive_secs(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 86_400.0 => Ok(v),
        _ => Err(format!("`{s}` is not a number of seconds in (0, 86400]")),
    }
}

/// A number of seconds in [0, 3600] (`--settle`: none is allowed).
pub(crate) fn parse_settle_secs(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=3600.0).contains(&v) => Ok(v),
        _ => Err(format!("`{s}` is not a number of seconds in [0, 3600]")),
    }
}
