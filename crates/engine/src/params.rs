//! Parameter parsing and the user-facing error text every strict parse shares.
//!
//! Bottom layer above `sim/`: the algorithms (`aqm/`, `cc/`, `ppv/`,
//! `transport/`) parse their `params` tables and word their errors with these
//! helpers, and so does `scenario`; nothing here imports from the layers
//! above. Errors are one line: `path: what is wrong (did you mean ...? allowed: ...)`.

use serde::de::{DeserializeOwned, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use std::fmt;

/// Deserialise an algorithm's parameters (strict: unknown keys are errors)
/// with every unspecified field at its documented default.
pub fn parse_params<T: DeserializeOwned + Default>(params: &Value) -> Result<T, String> {
    if params.is_null() {
        return Ok(T::default());
    }
    from_value_path(params.clone())
}

/// Serialise a config (all defaults filled in) for the normalised scenario.
pub fn to_value<T: Serialize>(cfg: &T) -> Value {
    serde_json::to_value(cfg).expect("configs serialise")
}


/// The keys a struct accepts, in declaration order, exactly as serde's derive
/// lists them (the `FIELDS` it hands to `deserialize_struct`, the same list its
/// "unknown field" errors quote). None for a type that is not a plain struct
/// (one with `#[serde(flatten)]` is read as a map and names no fields).
pub fn struct_keys<'de, T: Deserialize<'de>>() -> Option<&'static [&'static str]> {
    match T::deserialize(KeyProbe) {
        Err(KeyProbeEnd(keys)) => keys,
        Ok(_) => None,
    }
}

/// A deserializer that answers nothing: it stops at the first request and
/// reports the field list if that request was for a struct.
struct KeyProbe;

#[derive(Debug)]
struct KeyProbeEnd(Option<&'static [&'static str]>);

impl fmt::Display for KeyProbeEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("key probe")
    }
}

impl std::error::Error for KeyProbeEnd {}

impl serde::de::Error for KeyProbeEnd {
    fn custom<M: fmt::Display>(_: M) -> Self {
        KeyProbeEnd(None)
    }
}

impl<'de> Deserializer<'de> for KeyProbe {
    type Error = KeyProbeEnd;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, KeyProbeEnd> {
        Err(KeyProbeEnd(None))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, KeyProbeEnd> {
        Err(KeyProbeEnd(Some(fields)))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

/// Deserialise `value` strictly; on error return one line
/// "path: message" with a "did you mean" for near-miss keys.
pub fn from_value_path<T: DeserializeOwned>(value: Value) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let mut path = e.path().to_string();
        let msg = polish_serde_message(&e.inner().to_string());
        // serde's path for an unknown key ends in the key itself; name the parent.
        if msg.starts_with("unknown key '") {
            let key = msg["unknown key '".len()..].split('\'').next().unwrap_or("");
            if let Some(parent) = path.strip_suffix(key).map(|p| p.trim_end_matches('.').to_string()) {
                path = parent;
            }
        }
        if path.is_empty() || path == "." {
            msg
        } else {
            format!("{path}: {msg}")
        }
    })
}

/// Turns serde's "unknown field `targt`, expected one of `a`, `b`" into
/// "unknown key 'targt' (did you mean 'target'? allowed: a, b)".
pub fn polish_serde_message(msg: &str) -> String {
    if let Some(rest) = msg.strip_prefix("unknown field `") {
        let (bad, tail) = rest.split_once('`').unwrap_or((rest, ""));
        let allowed: Vec<&str> = tail.split('`').skip(1).step_by(2).collect();
        return unknown_choice("key", bad, &allowed);
    }
    if let Some(rest) = msg.strip_prefix("unknown variant `") {
        let (bad, tail) = rest.split_once('`').unwrap_or((rest, ""));
        let allowed: Vec<&str> = tail.split('`').skip(1).step_by(2).collect();
        return unknown_choice("value", bad, &allowed);
    }
    if let Some(rest) = msg.strip_prefix("missing field `") {
        let name = rest.split('`').next().unwrap_or(rest);
        return format!("missing required key '{name}'");
    }
    if msg.starts_with("data did not match any variant of untagged enum") {
        // Only the unit-bearing fields (sim::units) are untagged enums.
        return "expected text with a unit, e.g. '5ms', '10Mbps', '1.5MB' or '250pkt'".to_string();
    }
    if let Some(rest) = msg.strip_prefix("invalid type: ").or_else(|| msg.strip_prefix("invalid value: ")) {
        if let Some((given, expected)) = rest.rsplit_once(", expected ") {
            return format!("{} is not allowed here: expected {}", describe_given(given), describe_expected(expected));
        }
    }
    msg.replace('`', "'")
}

/// serde's "floating point `1.5`" / "string \"x\"" / "map" in the user's words.
fn describe_given(given: &str) -> String {
    let quoted = given
        .split_once('`')
        .map(|(_, v)| v.trim_end_matches('`').to_string())
        .or_else(|| given.split_once('"').map(|(_, v)| v.trim_end_matches('"').to_string()));
    match (given.split([' ', '`', '"']).next().unwrap_or(""), quoted) {
        ("map", _) => "a table".to_string(),
        ("sequence", _) => "a list".to_string(),
        (_, Some(v)) => format!("'{v}'"),
        _ => given.replace('`', "'"),
    }
}

/// serde's expected type names ("u32", "f64", "a sequence") in TOML terms.
fn describe_expected(expected: &str) -> String {
    let e = expected.trim();
    let text = match e {
        "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number, 0 or more",
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number",
        "f32" | "f64" => "a number",
        "a boolean" => "true or false",
        "a string" => "text in quotes",
        "a sequence" => "a list (e.g. [1, 2] or [[...]] tables)",
        _ if e == "a map" || e.starts_with("struct ") => "a table of keys",
        _ => return e.replace('`', "'"),
    };
    text.to_string()
}

/// "unknown AQM 'codle' (did you mean 'codel'? allowed: fifo, codel, ...)".
pub fn unknown_choice(what: &str, bad: &str, allowed: &[&str]) -> String {
    if allowed.is_empty() {
        // e.g. a `fifo` queue's params: "(allowed: )" read as a truncated message.
        return format!("unknown {what} '{bad}' (this table takes no {what}s)");
    }
    let list = allowed.join(", ");
    match closest(bad, allowed) {
        Some(s) => format!("unknown {what} '{bad}' (did you mean '{s}'? allowed: {list})"),
        None => format!("unknown {what} '{bad}' (allowed: {list})"),
    }
}

/// The allowed word nearest to `bad` by edit distance, if it is close.
pub fn closest<'a>(bad: &str, allowed: &[&'a str]) -> Option<&'a str> {
    let b = bad.to_ascii_lowercase();
    allowed
        .iter()
        .map(|a| (edit_distance(&b, &a.to_ascii_lowercase()), *a))
        .filter(|(d, a)| *d <= 2.max(a.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, a)| a)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let sub = prev[j - 1] + usize::from(a[i - 1] != b[j - 1]);
            cur[j] = sub.min(prev[j] + 1).min(cur[j - 1] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Two {
        #[serde(rename = "rate")]
        rate_bps: u64,
        name: String,
    }

    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Flat {
        #[serde(flatten)]
        inner: Two,
    }

    #[test]
    fn struct_keys_are_serdes_field_list() {
        assert_eq!(struct_keys::<Two>(), Some(&["rate", "name"][..]));
        assert_eq!(struct_keys::<Flat>(), None);
        assert_eq!(struct_keys::<u64>(), None);
        // The same list serde's unknown-field error quotes.
        let e = from_value_path::<Two>(serde_json::json!({"rate": 1, "name": "x", "rtae": 2})).unwrap_err();
        assert!(e.ends_with("allowed: rate, name)"), "{e}");
    }

    #[test]
    fn an_empty_choice_list_says_so() {
        assert_eq!(unknown_choice("key", "target", &[]), "unknown key 'target' (this table takes no keys)");
    }
}
