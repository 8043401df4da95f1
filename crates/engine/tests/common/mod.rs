//! Shared helpers for the system tests: run a scenario given as JSON.
#![allow(dead_code)]

use aqmlab_engine::{run_json, Results};
use serde_json::Value;

#[track_caller]
pub fn run(scenario: Value) -> Results {
    match run_json(&scenario.to_string(), |_| true) {
        Ok(r) => r,
        Err(e) => panic!("scenario failed: {e}"),
    }
}

/// The summary entry of flow `i`.
pub fn flow(r: &Results, i: usize) -> Value {
    r.summary()["flows"][i].clone()
}

pub fn goodput(r: &Results, i: usize) -> f64 {
    flow(r, i)["goodput_bps"].as_f64().expect("goodput")
}

pub fn queue(r: &Results, name: &str) -> Value {
    r.summary()["queues"].as_array().unwrap().iter().find(|q| q["name"] == name).expect("queue").clone()
}

/// Time-weighted values of a flow's column from flow_ts after `from_ns`.
pub fn flow_series(r: &Results, flow: u64, col: &str, from_ns: u64) -> Vec<f64> {
    let t = r.table("flow_ts");
    let ts = t.f64s("t_ns");
    let fl = t.f64s("flow");
    let v = t.f64s(col);
    (0..ts.len()).filter(|&i| fl[i] as u64 == flow && ts[i] as u64 >= from_ns).map(|i| v[i]).collect()
}

pub fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// A graph of two routers: a (lossy at `loss_a`) and b reach r1 over pure
/// delay, r2 reaches c; only r1 -> r2 (and its reverse) has a rate.
pub fn two_router_links(loss_a: f64) -> Value {
    serde_json::json!({"links": [
        {"from": "a", "to": "r1", "delay": "3ms", "loss": loss_a},
        {"from": "b", "to": "r1", "delay": "5ms"},
        {"from": "r1", "to": "r2", "rate": "10Mbps", "delay": "4ms", "aqm": "codel", "buffer": "100pkt"},
        {"from": "r2", "to": "c", "delay": "2ms"}
    ]})
}

pub fn f64_of(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

pub fn u64_of(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// Rows of the `queue_ts` table for `queue`: (t_ns, column value).
pub fn queue_series(r: &Results, queue: &str, col: &str) -> Vec<(u64, f64)> {
    let t = r.table("queue_ts");
    let (ts, names, v) = (t.f64s("t_ns"), t.strs("queue"), t.f64s(col));
    (0..ts.len()).filter(|&i| names[i] == queue).map(|i| (ts[i] as u64, v[i])).collect()
}

/// The value of a cumulative series at sample time `t_ns`.
pub fn at(series: &[(u64, f64)], t_ns: u64) -> f64 {
    series.iter().find(|s| s.0 == t_ns).unwrap_or_else(|| panic!("no sample at {t_ns} ns")).1
}

/// One column of the flows table for flow `i`.
pub fn flow_col(r: &Results, i: usize, col: &str) -> f64 {
    r.table("flows").f64s(col)[i]
}
