//! Time, events, randomness and units: the simulator's foundations.
//!
//! Time is `u64` nanoseconds everywhere in the engine (names end in `_ns`);
//! rates are bits per second (`_bps`); sizes are bytes (`_bytes`).

mod heap;
pub mod prefetch;
pub mod ring;
pub mod rng;
pub mod scheduler;
pub mod serialiser;
pub mod units;
mod wheel;

pub const NS_PER_US: u64 = 1_000;
pub const NS_PER_MS: u64 = 1_000_000;
pub const NS_PER_SEC: u64 = 1_000_000_000;

/// Seconds as f64, for reports and float formulas (never for event times).
#[inline]
pub fn ns_to_secs(ns: u64) -> f64 {
    ns as f64 * 1e-9
}

/// Float seconds to integer ns, rounded to nearest (for derived timer values).
#[inline]
pub fn secs_to_ns(s: f64) -> u64 {
    if s <= 0.0 {
        0
    } else {
        (s * 1e9 + 0.5) as u64
    }
}

/// Whole bytes sent at `rate_bps` in `ns` (rounded down; 128-bit, so any
/// rate and duration): the inverse of [`tx_time_ns`].
#[inline]
pub fn bytes_in(rate_bps: u64, ns: u64) -> u64 {
    (u128::from(rate_bps) * u128::from(ns) / u128::from(8 * NS_PER_SEC)) as u64
}

/// Serialisation time of `bytes` at `rate_bps`, rounded up to a whole ns.
#[inline]
pub fn tx_time_ns(bytes: u64, rate_bps: u64) -> u64 {
    (bytes * 8 * NS_PER_SEC).div_ceil(rate_bps)
}
