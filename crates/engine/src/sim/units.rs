//! Human units at the edge: "10Mbps", "5ms", "1.5MB", "250pkt", "10/s".
//!
//! Parsed once, exactly (decimal arithmetic, no float rounding), into the
//! engine's integer units: nanoseconds, bits per second, bytes. Each parser
//! returns a one-line error that names the accepted units. The `serde_*`
//! modules let config structs keep raw integers with unit-suffixed names
//! (`target_ns`) while the scenario file speaks human units (`target = "5ms"`).

use std::fmt;

/// A parse failure; the caller prefixes the field path.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitError(pub String);

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

const DURATION_UNITS: &[(&str, u64)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("min", 60_000_000_000),
];
const RATE_UNITS: &[(&str, u64)] = &[
    ("bps", 1),
    ("kbps", 1_000),
    ("Kbps", 1_000),
    ("Mbps", 1_000_000),
    ("Gbps", 1_000_000_000),
    ("Tbps", 1_000_000_000_000),
];
const SIZE_UNITS: &[(&str, u64)] = &[
    ("B", 1),
    ("KB", 1_000),
    ("kB", 1_000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
];

/// Splits "1.5MB" into ("1.5", "MB").
fn split_number(s: &str) -> (&str, &str) {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.' || *c == '-' || *c == '+' || *c == 'e'))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    // An 'e' that is not followed by a digit belongs to the unit (none of ours start with e).
    (s[..end].trim(), s[end..].trim())
}

/// Exact decimal `number * scale`; an error when that is not a whole number.
/// Rejects negatives, NaN-like input and overflow.
fn scaled_decimal(num: &str, scale: u64, what: &str, original: &str) -> Result<u64, UnitError> {
    let bad = || UnitError(format!("'{original}' is not a valid {what}"));
    if num.is_empty() {
        return Err(bad());
    }
    if num.starts_with('-') {
        return Err(UnitError(format!("'{original}': a {what} cannot be negative")));
    }
    let num = num.trim_start_matches('+');
    let (mantissa, exp10): (&str, i32) = match num.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().map_err(|_| bad())?),
        None => (num, 0),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if (int_part.is_empty() && frac_part.is_empty())
        || !int_part.chars().all(|c| c.is_ascii_digit())
        || !frac_part.chars().all(|c| c.is_ascii_digit())
    {
        return Err(bad());
    }
    let digits = format!("{int_part}{frac_part}");
    let mut value: u128 = digits.parse::<u128>().map_err(|_| bad())?;
    let mut exp = exp10 - frac_part.len() as i32;
    value = value.checked_mul(scale as u128).ok_or_else(bad)?;
    while exp > 0 {
        value = value.checked_mul(10).ok_or_else(bad)?;
        exp -= 1;
    }
    while exp < 0 {
        // Never round: every base unit here is discrete (ns, bit/s, byte,
        // packet), so a value finer than it is a mistake to report.
        if value % 10 != 0 {
            return Err(UnitError(format!(
                "'{original}' is not a whole number of {} (aqmlab never rounds a {what})",
                base_unit(what)
            )));
        }
        value /= 10;
        exp += 1;
    }
    if value > MAX_QUANTITY as u128 {
        return Err(UnitError(format!(
            "'{original}' is too large: a {what} is at most 2^58 {} ({})",
            base_unit(what),
            max_in_words(what)
        )));
    }
    Ok(value as u64)
}

/// The largest value any duration, rate, size or packet count may take, in
/// its base unit: 2^58 (9.1 years in ns, 288 Pbit/s, 256 PiB). The engine
/// adds a handful of input durations (start + jitter + RTT + delays) and
/// multiplies sizes by 8 in u64; capping every input at 2^64 / 64 keeps all
/// of that exact, where the full u64 range overflowed (found by fuzzing,
/// tests/fuzz.rs: a delay of 18446744073709551615ns doubled in validation).
pub const MAX_QUANTITY: u64 = 1 << 58;

fn max_in_words(what: &str) -> &'static str {
    match what {
        "duration" => "about 9.1 years",
        "rate" => "about 288 Pbit/s",
        "size" => "256 PiB",
        _ => "about 2.9e17",
    }
}

/// The discrete step behind each quantity's base unit (for error messages).
fn base_unit(what: &str) -> &'static str {
    match what {
        "duration" => "ns",
        "rate" => "bit/s",
        "size" => "bytes",
        _ => "packets",
    }
}

fn parse_with(s: &str, units: &[(&str, u64)], what: &str, example: &str) -> Result<u64, UnitError> {
    let (num, unit) = split_number(s);
    if unit.is_empty() {
        return Err(UnitError(format!(
            "'{s}' needs a unit, e.g. '{example}' (units: {})",
            unit_list(units)
        )));
    }
    match units.iter().find(|(u, _)| *u == unit) {
        Some((_, scale)) => scaled_decimal(num, *scale, what, s),
        None => Err(UnitError(format!(
            "'{s}': unknown {what} unit '{unit}' (allowed: {})",
            unit_list(units)
        ))),
    }
}

fn unit_list(units: &[(&str, u64)]) -> String {
    units.iter().map(|(u, _)| *u).collect::<Vec<_>>().join(", ")
}

/// "5ms" -> 5_000_000 ns.
pub fn parse_duration_ns(s: &str) -> Result<u64, UnitError> {
    parse_with(s, DURATION_UNITS, "duration", "5ms")
}

/// "10Mbps" -> 10_000_000 bit/s.
pub fn parse_rate_bps(s: &str) -> Result<u64, UnitError> {
    parse_with(s, RATE_UNITS, "rate", "10Mbps")
}

/// "1.5MB" -> 1_500_000 bytes (decimal prefixes; KiB/MiB/GiB are binary).
pub fn parse_size_bytes(s: &str) -> Result<u64, UnitError> {
    parse_with(s, SIZE_UNITS, "size", "1.5MB")
}

/// "10/s" -> events per second as f64 (arrival rates may be fractional).
pub fn parse_per_second(s: &str) -> Result<f64, UnitError> {
    let t = s.trim();
    let Some(num) = t.strip_suffix("/s") else {
        return Err(UnitError(format!("'{s}' needs the unit '/s', e.g. '10/s'")));
    };
    let v: f64 = num.trim().parse().map_err(|_| UnitError(format!("'{s}' is not a valid rate per second")))?;
    if !(v.is_finite() && v > 0.0) {
        return Err(UnitError(format!("'{s}': a rate per second must be positive")));
    }
    Ok(v)
}

/// A queue's buffer limit: packets, bytes, or time at the link rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferSpec {
    Packets(u64),
    Bytes(u64),
    Time(u64),
}

/// "250pkt" | "1.5MB" | "250ms".
pub fn parse_buffer(s: &str) -> Result<BufferSpec, UnitError> {
    let (num, unit) = split_number(s);
    if unit == "pkt" || unit == "pkts" {
        return scaled_decimal(num, 1, "packet count", s).map(BufferSpec::Packets);
    }
    if DURATION_UNITS.iter().any(|(u, _)| *u == unit) {
        return parse_duration_ns(s).map(BufferSpec::Time);
    }
    if SIZE_UNITS.iter().any(|(u, _)| *u == unit) {
        return parse_size_bytes(s).map(BufferSpec::Bytes);
    }
    Err(UnitError(format!(
        "'{s}' is not a buffer size: use packets ('250pkt'), bytes ('1.5MB') or time at the link rate ('250ms')"
    )))
}

fn format_with(value: u64, units: &[(&str, u64)]) -> String {
    // The largest unit that represents the value exactly (skipping aliases like µs, Kbps, kB).
    let mut best = units[0];
    for &(u, scale) in units {
        if matches!(u, "µs" | "Kbps" | "kB" | "KiB" | "MiB" | "GiB" | "min") {
            continue;
        }
        if value % scale == 0 && scale >= best.1 {
            best = (u, scale);
        }
    }
    if value == 0 {
        return format!("0{}", units[0].0);
    }
    format!("{}{}", value / best.1, best.0)
}

/// Canonical text for a duration: 5_000_000 -> "5ms" (exact, round-trips).
pub fn format_duration_ns(ns: u64) -> String {
    format_with(ns, DURATION_UNITS)
}

/// Canonical text for a rate: 40_000_000 -> "40Mbps".
pub fn format_rate_bps(bps: u64) -> String {
    format_with(bps, RATE_UNITS)
}

/// Canonical text for a size: 1_500_000 -> "1500KB".
pub fn format_size_bytes(b: u64) -> String {
    format_with(b, &SIZE_UNITS[..5])
}

pub fn format_buffer(b: BufferSpec) -> String {
    match b {
        BufferSpec::Packets(p) => format!("{p}pkt"),
        BufferSpec::Bytes(x) => format_size_bytes(x),
        BufferSpec::Time(t) => format_duration_ns(t),
    }
}

/// Serde adapters: the field holds an integer in base units; the file holds text.
macro_rules! serde_unit {
    ($modname:ident, $ty:ty, $parse:path, $format:path, $expect:expr) => {
        pub mod $modname {
            use serde::{de, Deserialize, Deserializer, Serializer};
            pub fn serialize<S: Serializer>(v: &$ty, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&$format(*v))
            }
            pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<$ty, D::Error> {
                #[derive(Deserialize)]
                #[serde(untagged)]
                enum Raw {
                    Text(String),
                    Number(serde_json::Number),
                }
                match Raw::deserialize(d)? {
                    Raw::Text(t) => $parse(&t).map_err(|e| de::Error::custom(e.0)),
                    // Same message as for a string without a unit (names the units).
                    Raw::Number(n) => Err(de::Error::custom(
                        $parse(&n.to_string()).err().map_or_else(|| format!("{n} needs a unit, e.g. '{}'", $expect), |e| e.0),
                    )),
                }
            }
        }
    };
}

serde_unit!(serde_duration, u64, super::parse_duration_ns, super::format_duration_ns, "5ms");
serde_unit!(serde_rate, u64, super::parse_rate_bps, super::format_rate_bps, "10Mbps");
serde_unit!(serde_size, u64, super::parse_size_bytes, super::format_size_bytes, "1.5MB");
serde_unit!(serde_buffer, super::BufferSpec, super::parse_buffer, super::format_buffer, "250pkt");

/// Optional variants of the adapters (`None` stays absent/null).
macro_rules! serde_opt_unit {
    ($modname:ident, $ty:ty, $inner:ident) => {
        pub mod $modname {
            use serde::{Deserialize, Deserializer, Serializer};
            pub fn serialize<S: Serializer>(v: &Option<$ty>, s: S) -> Result<S::Ok, S::Error> {
                match v {
                    Some(x) => super::$inner::serialize(x, s),
                    None => s.serialize_none(),
                }
            }
            pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<$ty>, D::Error> {
                struct W($ty);
                impl<'de> Deserialize<'de> for W {
                    fn deserialize<D2: Deserializer<'de>>(d: D2) -> Result<Self, D2::Error> {
                        super::$inner::deserialize(d).map(W)
                    }
                }
                Ok(Option::<W>::deserialize(d)?.map(|w| w.0))
            }
        }
    };
}

serde_opt_unit!(serde_opt_duration, u64, serde_duration);
serde_opt_unit!(serde_opt_rate, u64, serde_rate);
serde_opt_unit!(serde_opt_size, u64, serde_size);
serde_opt_unit!(serde_opt_buffer, super::BufferSpec, serde_buffer);

/// Serde adapter for "10/s" arrival rates.
pub mod serde_per_second {
    use serde::{de, Deserialize, Deserializer, Serializer};
    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{v}/s"))
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        let t = String::deserialize(d)?;
        super::parse_per_second(&t).map_err(|e| de::Error::custom(e.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_exactly() {
        assert_eq!(parse_duration_ns("5ms"), Ok(5_000_000));
        assert_eq!(parse_duration_ns("100us"), Ok(100_000));
        assert_eq!(parse_duration_ns("1.5s"), Ok(1_500_000_000));
        assert_eq!(parse_duration_ns("0.1ms"), Ok(100_000));
        assert_eq!(parse_duration_ns(" 250 ms "), Ok(250_000_000));
        assert_eq!(parse_duration_ns("1e-3s"), Ok(1_000_000));
    }

    #[test]
    fn rates_and_sizes_parse_exactly() {
        assert_eq!(parse_rate_bps("10Mbps"), Ok(10_000_000));
        assert_eq!(parse_rate_bps("0.5Gbps"), Ok(500_000_000));
        assert_eq!(parse_size_bytes("1.5MB"), Ok(1_500_000));
        assert_eq!(parse_size_bytes("1KiB"), Ok(1024));
        assert_eq!(parse_buffer("250pkt"), Ok(BufferSpec::Packets(250)));
        assert_eq!(parse_buffer("250ms"), Ok(BufferSpec::Time(250_000_000)));
        assert_eq!(parse_buffer("1MB"), Ok(BufferSpec::Bytes(1_000_000)));
        assert_eq!(parse_per_second("10/s"), Ok(10.0));
    }

    #[test]
    fn bad_units_name_the_allowed_ones() {
        let e = parse_rate_bps("-10Mbps").unwrap_err();
        assert!(e.0.contains("negative"), "{e}");
        let e = parse_rate_bps("10Mbit").unwrap_err();
        assert!(e.0.contains("Mbps"), "{e}");
        let e = parse_duration_ns("10").unwrap_err();
        assert!(e.0.contains("needs a unit"), "{e}");
        assert!(parse_duration_ns("ms").is_err());
        assert!(parse_buffer("10 parsecs").is_err());
    }

    #[test]
    fn values_finer_than_the_base_unit_are_rejected_not_rounded() {
        let e = parse_buffer("1.5pkt").unwrap_err();
        assert!(e.0.contains("whole number of packets"), "{e}");
        let e = parse_rate_bps("0.5bps").unwrap_err();
        assert!(e.0.contains("bit/s"), "{e}");
        assert!(parse_duration_ns("1.5ns").is_err());
        assert!(parse_size_bytes("1.0005kB").is_err());
        // Trailing zeros are exact, and so is anything that lands on the step.
        assert_eq!(parse_duration_ns("0.300s"), Ok(300_000_000));
        assert_eq!(parse_buffer("2.0pkt"), Ok(BufferSpec::Packets(2)));
        // Only the documented spellings of packets.
        assert!(parse_buffer("1000p").is_err());
        assert_eq!(parse_buffer("1000pkts"), Ok(BufferSpec::Packets(1000)));
    }

    #[test]
    fn canonical_text_round_trips() {
        for ns in [0u64, 1, 1_500, 5_000_000, 100_000_000, 2_000_000_000, 1_250_000] {
            assert_eq!(parse_duration_ns(&format_duration_ns(ns)), Ok(ns));
        }
        assert_eq!(format_duration_ns(5_000_000), "5ms");
        assert_eq!(format_rate_bps(40_000_000), "40Mbps");
        for b in [1u64, 1500, 1_000_000, 123_456_789] {
            assert_eq!(parse_size_bytes(&format_size_bytes(b)), Ok(b));
        }
    }
}
