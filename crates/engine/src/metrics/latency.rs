//! Latency-probe results (`cc = "probe"`, `transport::probe`): the table of
//! every RTT sample and each probe flow's summary statistics, the figures
//! Flent's RRUL test reports as "latency under load".

use super::records::FlowRecord;
use super::{Column, Table};
use serde_json::{json, Value};

/// Every probe RTT sample of the run: `t_ns` (reply arrival), `flow`, `seq`
/// (the request's), `rtt_ns`; ordered by time, then flow.
pub fn probe_table(flows: &[FlowRecord]) -> Table {
    let mut rows: Vec<(u64, u64, u64, u64)> = vec![];
    for f in flows {
        rows.extend(f.probe_rtt.iter().map(|&(t, seq, rtt)| (t, u64::from(f.id), seq, rtt)));
    }
    rows.sort_unstable();
    Table::new("probe_rtt")
        .col("t_ns", Column::U64(rows.iter().map(|r| r.0).collect()))
        .col("flow", Column::U64(rows.iter().map(|r| r.1).collect()))
        .col("seq", Column::U64(rows.iter().map(|r| r.2).collect()))
        .col("rtt_ns", Column::U64(rows.iter().map(|r| r.3).collect()))
}

/// A probe flow's RTT statistics over the replies that arrived after
/// warm-up, in ms: `mean`, `min`, `p10`, `p50`, `p90`, `p99`, `max` (exact
/// nearest-rank quantiles of the samples), `samples`; null when a probe has
/// no sample. None for other flows.
pub fn probe_stats(f: &FlowRecord, warmup_ns: u64) -> Option<Value> {
    if !f.is_probe {
        return None;
    }
    let mut v: Vec<u64> = f.probe_rtt.iter().filter(|s| s.0 >= warmup_ns).map(|s| s.2).collect();
    if v.is_empty() {
        return Some(Value::Null);
    }
    v.sort_unstable();
    let n = v.len();
    // Nearest rank: the smallest sample with at least q·n samples at or below it.
    let q = |p: f64| v[((p * n as f64).ceil() as usize).clamp(1, n) - 1] as f64 / 1e6;
    let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n as f64 / 1e6;
    Some(json!({
        "mean": mean, "min": v[0] as f64 / 1e6, "p10": q(0.1), "p50": q(0.5), "p90": q(0.9),
        "p99": q(0.99), "max": v[n - 1] as f64 / 1e6, "samples": n,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::records::FlowInfo;
    use crate::transport::EcnSetting;

    #[test]
    fn nearest_rank_quantiles_of_the_samples_after_warmup() {
        let info = FlowInfo {
            group: 0,
            label: "probe".into(),
            cc: "probe".into(),
            ecn: EcnSetting::Off,
            base_rtt_ns: 0,
            start_ns: 0,
            stop_ns: None,
            size_bytes: None,
            from_workload: false,
        };
        let mut f = FlowRecord {
            id: 0,
            info,
            delivered_at_warmup: 0,
            delivered_at_end: 0,
            drops: 0,
            marks: 0,
            ack_drops: 0,
            acks_received: 0,
            tcp_source: false,
            sent: 11,
            tcp: None,
            completed_ns: None,
            is_probe: true,
            probe_rtt: vec![],
        };
        // One sample in warm-up (ignored), then 1..=10 ms.
        f.probe_rtt = std::iter::once((5, 0, 99_000_000)).chain((1..=10).map(|k| (100 + k, k, k * 1_000_000))).collect();
        let s = probe_stats(&f, 100).unwrap();
        assert_eq!(s["samples"], 10);
        assert_eq!(s["min"], 1.0);
        assert_eq!(s["p50"], 5.0);
        assert_eq!(s["p90"], 9.0);
        assert_eq!(s["p99"], 10.0);
        assert_eq!(s["mean"], 5.5);
        assert_eq!(probe_table(std::slice::from_ref(&f)).rows(), 11);
    }
}
