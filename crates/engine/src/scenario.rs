//! The scenario: what to simulate, validated before anything runs.

use serde::de::DeserializeOwned;

/// Deserialise `value` strictly; on error return one line
/// "path: message" with a "did you mean" for near-miss keys.
pub fn from_value_path<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let msg = polish_serde_message(&e.inner().to_string());
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
        return unknown_choice_named("key", bad, &allowed);
    }
    if let Some(rest) = msg.strip_prefix("unknown variant `") {
        let (bad, tail) = rest.split_once('`').unwrap_or((rest, ""));
        let allowed: Vec<&str> = tail.split('`').skip(1).step_by(2).collect();
        return unknown_choice_named("value", bad, &allowed);
    }
    msg.replace('`', "'")
}

/// "unknown AQM 'codle' (did you mean 'codel'? allowed: fifo, codel, ...)".
pub fn unknown_choice(what: &str, bad: &str, allowed: &[&str]) -> String {
    unknown_choice_named(what, bad, allowed)
}

fn unknown_choice_named(what: &str, bad: &str, allowed: &[&str]) -> String {
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
