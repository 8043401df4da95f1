//! From a run's records to tables and the summary document.
//!
//! Statistics cover the measurement window [warm-up, duration]. The summary
//! keys are a documented contract (docs/results.md); Python adds `version`,
//! the normalised `scenario` and the wall time.

use super::histogram::Histogram;
use super::flow_rows::FlowFigures;
use super::records::{QueueRecord, RunRecords};
use super::series::FlowSeries;
use super::{Column, Results, Table, TextColumn};
use crate::aqm::{SubqueueCounters, DROP_REASONS, MARK_REASONS};
use crate::sim::ns_to_secs;
use crate::transport::EcnSetting;
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// Jain's fairness index of `xs` (1 = perfectly fair).
pub fn jain(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if s2 == 0.0 {
        return None;
    }
    Some(s * s / (xs.len() as f64 * s2))
}

fn diff(now: &SubqueueCounters, then: &SubqueueCounters) -> SubqueueCounters {
    let mut d = SubqueueCounters {
        arrived_pkts: now.arrived_pkts - then.arrived_pkts,
        arrived_bytes: now.arrived_bytes - then.arrived_bytes,
        departed_pkts: now.departed_pkts - then.departed_pkts,
        departed_bytes: now.departed_bytes - then.departed_bytes,
        dropped_bytes: now.dropped_bytes - then.dropped_bytes,
        ..Default::default()
    };
    for k in 0..4 {
        d.dropped_pkts[k] = now.dropped_pkts[k] - then.dropped_pkts[k];
        d.marked_pkts[k] = now.marked_pkts[k] - then.marked_pkts[k];
    }
    d
}

fn add(a: &mut SubqueueCounters, b: &SubqueueCounters) {
    a.arrived_pkts += b.arrived_pkts;
    a.arrived_bytes += b.arrived_bytes;
    a.departed_pkts += b.departed_pkts;
    a.departed_bytes += b.departed_bytes;
    a.dropped_bytes += b.dropped_bytes;
    for k in 0..4 {
        a.dropped_pkts[k] += b.dropped_pkts[k];
        a.marked_pkts[k] += b.marked_pkts[k];
    }
}

/// Mean, percentiles and maximum of a histogram of nanoseconds, in ms (null when empty).
fn ms_stats(h: Option<&Histogram>) -> Value {
    let ms = |ns: f64| ns / 1e6;
    match h {
        Some(h) if h.count() > 0 => json!({
            "mean": ms(h.mean()), "p10": ms(h.quantile(0.1)), "p50": ms(h.quantile(0.5)), "p90": ms(h.quantile(0.9)),
            "p99": ms(h.quantile(0.99)), "max": ms(h.max() as f64), "samples": h.count(),
        }),
        _ => Value::Null,
    }
}

fn queue_stats(c: &SubqueueCounters, h: Option<&Histogram>) -> Value {
    let sojourn = ms_stats(h);
    let mut drops_by = Map::new();
    let mut marks_by = Map::new();
    for (k, n) in DROP_REASONS.iter().enumerate() {
        drops_by.insert(n.to_string(), json!(c.dropped_pkts[k]));
    }
    for (k, n) in MARK_REASONS.iter().enumerate() {
        marks_by.insert(n.to_string(), json!(c.marked_pkts[k]));
    }
    let rate = |x: u64, of: u64| if of == 0 { 0.0 } else { x as f64 / of as f64 };
    json!({
        "sojourn_ms": sojourn,
        "arrivals": c.arrived_pkts,
        "departures": c.departed_pkts,
        "drops": c.drops(),
        "marks": c.marks(),
        "drop_rate": rate(c.drops(), c.arrived_pkts),
        "mark_rate": rate(c.marks(), c.departed_pkts),
        "drops_by_reason": drops_by,
        "marks_by_reason": marks_by,
    })
}

/// Queue rows and summary entries for one reported queue.
fn summarize_queue(q: &QueueRecord, window_ns: u64, rows: &mut QueueRows) -> Value {
    let names = q.subqueue_names;
    let mut total = SubqueueCounters::default();
    let mut merged = Histogram::new();
    let mut subs = Map::new();
    for (k, sub) in names.iter().enumerate() {
        let c = diff(&q.counters[k], &q.counters_at_warmup[k]);
        add(&mut total, &c);
        let h = q.hist.get(k);
        if let Some(h) = h {
            merged.merge(h);
        }
        rows.push(&q.name, sub, &q.aqm, &c, h, true);
        if names.len() > 1 {
            subs.insert(sub.to_string(), queue_stats(&c, h));
        }
    }
    if names.len() > 1 {
        // The merged histogram's buckets are its sub-queues' (not written twice).
        rows.push(&q.name, "all", &q.aqm, &total, q.hist.first().map(|_| &merged), false);
    }
    let busy = q.busy_ns - q.busy_ns_at_warmup;
    let mut v = queue_stats(&total, q.hist.first().map(|_| &merged));
    let o = v.as_object_mut().unwrap();
    o.insert("name".into(), json!(q.name));
    o.insert("aqm".into(), json!(q.aqm));
    o.insert("rate_bps".into(), json!(q.rate_bps));
    o.insert("utilization".into(), json!((busy as f64 / window_ns as f64).min(1.0)));
    o.insert("subqueues".into(), Value::Object(subs));
    v
}

#[derive(Default)]
struct QueueRows {
    queue: TextColumn,
    subqueue: TextColumn,
    aqm: TextColumn,
    arrivals: Vec<u64>,
    departures: Vec<u64>,
    drops: Vec<u64>,
    marks: Vec<u64>,
    mean_ns: Vec<f64>,
    p50_ns: Vec<f64>,
    p90_ns: Vec<f64>,
    p99_ns: Vec<f64>,
    cdf: (TextColumn, TextColumn, Vec<u64>, Vec<u64>, Vec<u64>),
}

impl QueueRows {
    /// Rows sized for `queues`' histogram buckets, exactly: a fat tree's run
    /// to millions, and growing by doubling could hold twice that.
    fn for_queues(queues: &[QueueRecord]) -> Self {
        let n = queues.iter().flat_map(|q| &q.hist).map(|h| h.buckets().count()).sum();
        let (mut rows, u64s) = (QueueRows::default(), || Vec::with_capacity(n));
        rows.cdf = (TextColumn::with_capacity(n), TextColumn::with_capacity(n), u64s(), u64s(), u64s());
        rows
    }

    /// A row of the queues table and, with `buckets`, the histogram's rows.
    fn push(&mut self, name: &str, sub: &str, aqm: &str, c: &SubqueueCounters, h: Option<&Histogram>, buckets: bool) {
        self.queue.push(name);
        self.subqueue.push(sub);
        self.aqm.push(aqm);
        self.arrivals.push(c.arrived_pkts);
        self.departures.push(c.departed_pkts);
        self.drops.push(c.drops());
        self.marks.push(c.marks());
        let q = |p: f64| h.map_or(f64::NAN, |h| if h.count() == 0 { f64::NAN } else { h.quantile(p) });
        self.mean_ns.push(h.map_or(f64::NAN, |h| if h.count() == 0 { f64::NAN } else { h.mean() }));
        self.p50_ns.push(q(0.5));
        self.p90_ns.push(q(0.9));
        self.p99_ns.push(q(0.99));
        if let Some(h) = h.filter(|_| buckets) {
            for (lo, hi, n) in h.buckets() {
                self.cdf.0.push(name);
                self.cdf.1.push(sub);
                self.cdf.2.push(lo);
                self.cdf.3.push(hi);
                self.cdf.4.push(n);
            }
        }
    }
}

/// Total goodput (bit/s) of all flows in consecutive intervals of
/// `interval_ns` from the end of warm-up (whole intervals only): the
/// difference of the summed cumulative delivered bytes at the interval's
/// ends, each flow read at its last sample at or before the boundary (of
/// samples at one instant, the largest).
///
/// One pass over the rows in time order, keeping the sum of every flow's
/// latest value. A search per flow and boundary (flows × intervals) cost
/// more than the run itself: 2 000 web flows a second over 128 s, at
/// 100 ms, 3.08 s against 1.28 s without (docs/performance.md).
pub fn goodput_intervals(series: &FlowSeries, warm_ns: u64, end_ns: u64, interval_ns: u64) -> Vec<f64> {
    if interval_ns == 0 || end_ns < warm_ns + interval_ns {
        return vec![];
    }
    let n = ((end_ns - warm_ns) / interval_ns) as usize;
    let rows = series.t_ns.len();
    // The run leaves its rows in time order (`FlowSeries::sort_by_time`):
    // an order is made only for rows that are not.
    let order: Option<Vec<usize>> = (!series.t_ns.is_sorted()).then(|| {
        let mut order: Vec<usize> = (0..rows).collect();
        order.sort_by_key(|&i| series.t_ns[i]);
        order
    });
    let row = |r: usize| order.as_ref().map_or(r, |o| o[r]);
    let flows = series.flow.iter().max().map_or(0, |&f| f as usize + 1);
    // Each flow's latest (time, bytes), and their sum.
    let mut latest = vec![(0u64, 0u64); flows];
    let mut sum = 0u64;
    let mut total = Vec::with_capacity(n + 1);
    let mut r = 0;
    for k in 0..=n as u64 {
        let boundary_ns = warm_ns + k * interval_ns;
        while r < rows && series.t_ns[row(r)] <= boundary_ns {
            let i = row(r);
            r += 1;
            let (t, bytes) = (series.t_ns[i], series.delivered_bytes[i]);
            let last = &mut latest[series.flow[i] as usize];
            let value = if last.0 == t { bytes.max(last.1) } else { bytes };
            sum = sum - last.1 + value;
            *last = (t, value);
        }
        total.push(sum);
    }
    let secs = ns_to_secs(interval_ns);
    total.windows(2).map(|w| w[1].saturating_sub(w[0]) as f64 * 8.0 / secs).collect()
}

pub fn build(mut r: RunRecords) -> Results {
    let warm = r.warmup_ns;
    let end = r.end_ns;
    let window = (end - warm).max(1);

    // Flows: the rows of those that retired during the run (room for them
    // reserved when the world was built, from the workloads' expected
    // flows), then the others'. Room for these at once: grown by doubling,
    // 16 346 flows (8 s of the W benchmark) cost 2.7 M of the summary's
    // 21.3 M instructions in copies.
    let mut t = std::mem::take(&mut r.retired_rows);
    t.reserve(r.flows.len());
    let mut flows_json = vec![];
    let mut long_goodputs = vec![];
    let (mut l4s, mut classic) = (vec![], vec![]);
    for f in &r.flows {
        let info = &f.info;
        let x = FlowFigures::of(f, warm, end);
        // A long flow's goodput is NaN exactly when it was not active in the window.
        if info.size_bytes.is_none() && f.tcp_source && !x.goodput_bps.is_nan() {
            long_goodputs.push(x.goodput_bps);
            if info.ecn == EcnSetting::L4s {
                l4s.push(x.goodput_bps);
            } else {
                classic.push(x.goodput_bps);
            }
        }
        if !info.from_workload {
            // Only the summary's flows report it (not a workload's).
            let cc_state = f.tcp.as_ref().filter(|t| !t.cc_state.is_empty()).map(|t| t.cc_state.iter().copied().collect());
            flows_json.push(FlowSummary {
                id: f.id as usize,
                group: info.group,
                label: info.label.clone(),
                cc: info.cc.clone(),
                ecn: info.ecn.name(),
                ecn_negotiated: x.negotiated,
                rtt_ms: info.base_rtt_ns as f64 / 1e6,
                goodput_bps: (!x.goodput_bps.is_nan()).then_some(x.goodput_bps),
                bytes: f.delivered_at_end,
                retransmits: x.retransmits,
                rtos: x.rtos,
                ecn_reductions: x.ecn_reductions,
                drops: f.drops,
                marks: f.marks,
                ack_drops: f.ack_drops,
                acks_received: f.acks_received,
                srtt_ms: x.srtt_ns as f64 / 1e6,
                fct_s: x.fct_ns.map(ns_to_secs),
                cc_state,
                probe_rtt_ms: super::latency::probe_stats(f, warm),
            });
        }
        t.push(f, &x);
    }
    let t = t.into_id_order();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let mut fairness = json!({ "jain": jain(&long_goodputs) });
    if !l4s.is_empty() && !classic.is_empty() && mean(&classic) > 0.0 {
        fairness["l4s_classic_ratio"] = json!(mean(&l4s) / mean(&classic));
    }

    // Queues.
    let mut rows = QueueRows::for_queues(&r.queues);
    let queues_json: Vec<Value> = r
        .queues
        .iter_mut()
        .map(|q| {
            let v = summarize_queue(q, window, &mut rows);
            // Its rows are written: free the histograms now, not after the
            // whole table is built (a k = 16 fat tree's are about 28 MB).
            q.hist = Vec::new();
            v
        })
        .collect();
    let mut samples = (vec![], TextColumn::new(), TextColumn::new(), vec![], vec![]);
    for q in &r.queues {
        for &(ts, sub, flow, soj) in &q.samples {
            samples.0.push(ts);
            samples.1.push(&q.name);
            samples.2.push(q.subqueue_names[sub as usize]);
            samples.3.push(flow as u64);
            samples.4.push(soj);
        }
    }

    // Serialised straight to text from typed rows: a JSON value tree costs
    // about 1.5 kB per flow, which matters with ten thousand flows.
    let doc = SummaryDoc {
        // Division, not ns_to_secs's multiplication by 1e-9: it is correctly
        // rounded, so "0.3s" shows as 0.3, not 0.30000000000000004.
        duration_s: end as f64 / 1e9,
        warmup_s: warm as f64 / 1e9,
        seed: r.seed,
        perf: json!({
            "events": r.perf.events,
            "events_by_kind": r.perf.events_by_kind.iter().filter(|(_, n)| *n > 0).map(|(k, n)| (k.to_string(), json!(n))).collect::<Map<String, Value>>(),
            "bottleneck_packets": r.perf.bottleneck_packets,
            "packet_hops": r.perf.packet_hops,
            "sim_s": ns_to_secs(end),
            "wall_s": r.perf.wall_s,
        }),
        flows: flows_json,
        workload_flows: super::workload::summarize(&t),
        queues: queues_json,
        fairness,
        goodput_intervals: (r.goodput_interval_ns > 0).then(|| {
            json!({ "interval_s": ns_to_secs(r.goodput_interval_ns),
                    "total_bps": goodput_intervals(&r.flow_series, warm, end, r.goodput_interval_ns) })
        }),
        rtt_ms: r.rtt_hist.as_ref().map(|h| ms_stats(Some(h))),
    };
    let summary_json = serde_json::to_string(&doc).expect("summary serialises");

    let mut tables = vec![t.into_table()];
    tables.push(
        Table::new("queues")
            .col("queue", Column::Str(rows.queue))
            .col("subqueue", Column::Str(rows.subqueue))
            .col("aqm", Column::Str(rows.aqm))
            .col("arrivals", Column::U64(rows.arrivals))
            .col("departures", Column::U64(rows.departures))
            .col("drops", Column::U64(rows.drops))
            .col("marks", Column::U64(rows.marks))
            .col("sojourn_mean_ns", Column::F64(rows.mean_ns))
            .col("sojourn_p50_ns", Column::F64(rows.p50_ns))
            .col("sojourn_p90_ns", Column::F64(rows.p90_ns))
            .col("sojourn_p99_ns", Column::F64(rows.p99_ns)),
    );
    tables.push(
        Table::new("sojourn_hist")
            .col("queue", Column::Str(rows.cdf.0))
            .col("subqueue", Column::Str(rows.cdf.1))
            .col("lo_ns", Column::U64(rows.cdf.2))
            .col("hi_ns", Column::U64(rows.cdf.3))
            .col("count", Column::U64(rows.cdf.4)),
    );
    tables.push(r.flow_series.into_table());
    tables.push(r.queue_series.into_table());
    tables.push(r.probes.into_table("probes"));
    tables.push(super::latency::probe_table(&r.flows));
    tables.push(
        Table::new("sojourn_samples")
            .col("t_ns", Column::U64(samples.0))
            .col("queue", Column::Str(samples.1))
            .col("subqueue", Column::Str(samples.2))
            .col("flow", Column::U64(samples.3))
            .col("sojourn_ns", Column::U64(samples.4)),
    );
    let mut files = vec![];
    if let Some(cap) = &r.pcap {
        files.push(("capture.pcap".to_string(), super::pcap::file_bytes(cap)));
        tables.push(super::pcap::drops_table(cap));
    }
    Results { tables, summary_json, files }
}

/// One long-running flow in `summary.json` (docs/results.md).
#[derive(Serialize)]
struct FlowSummary {
    id: usize,
    group: u32,
    #[serde(serialize_with = "ser_str")]
    label: Arc<str>,
    #[serde(serialize_with = "ser_str")]
    cc: Arc<str>,
    ecn: &'static str,
    ecn_negotiated: &'static str,
    rtt_ms: f64,
    goodput_bps: Option<f64>,
    bytes: u64,
    retransmits: u64,
    rtos: u64,
    ecn_reductions: u64,
    drops: u64,
    marks: u64,
    /// Of `drops`, pure ACKs, and the ACKs that reached the sender (whole run).
    ack_drops: u64,
    acks_received: u64,
    srtt_ms: f64,
    fct_s: Option<f64>,
    /// The controller's probes at the end of the run (absent without probes).
    #[serde(skip_serializing_if = "Option::is_none")]
    cc_state: Option<std::collections::BTreeMap<&'static str, f64>>,
    /// A latency probe's RTT statistics (absent for other flows).
    #[serde(skip_serializing_if = "Option::is_none")]
    probe_rtt_ms: Option<Value>,
}

fn ser_str<S: serde::Serializer>(v: &Arc<str>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(v)
}

#[derive(Serialize)]
struct SummaryDoc {
    duration_s: f64,
    warmup_s: f64,
    seed: u64,
    perf: Value,
    flows: Vec<FlowSummary>,
    workload_flows: Value,
    queues: Vec<Value>,
    fairness: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    goodput_intervals: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rtt_ms: Option<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn goodput_intervals_difference_the_summed_cumulative_bytes() {
        // Two flows sampled every second; flow 1 starts at 2 s. From warm-up
        // (1 s) in 2 s intervals: [1, 3] and [3, 5] (5..6 s is not whole).
        let mut s = FlowSeries::default();
        for t in 0..=6u64 {
            s.push(t * S, 0, t * 1_000, 0, 0, 0, 0, 0, 0);
            if t >= 2 {
                s.push(t * S, 1, (t - 2) * 500, 0, 0, 0, 0, 0, 0);
            }
        }
        let got = goodput_intervals(&s, S, 6 * S, 2 * S);
        // flow 0: 2000 B per interval; flow 1: 500 B then 1000 B. bit/s over 2 s.
        assert_eq!(got, vec![(2_000.0 + 500.0) * 8.0 / 2.0, (2_000.0 + 1_000.0) * 8.0 / 2.0]);
        assert!(goodput_intervals(&s, S, 2 * S, 2 * S).is_empty());
    }

    /// The definition, read off directly: at each boundary, each flow's
    /// rows sorted by (time, bytes), the last at or before it.
    fn goodput_intervals_by_definition(s: &FlowSeries, warm_ns: u64, end_ns: u64, interval_ns: u64) -> Vec<f64> {
        let n = (end_ns - warm_ns) / interval_ns;
        let mut by_flow: std::collections::BTreeMap<u64, Vec<(u64, u64)>> = Default::default();
        for i in 0..s.t_ns.len() {
            by_flow.entry(s.flow[i]).or_default().push((s.t_ns[i], s.delivered_bytes[i]));
        }
        let at = |b: u64| -> u64 {
            by_flow.values().map(|rows| {
                let mut rows = rows.clone();
                rows.sort();
                rows.iter().rev().find(|r| r.0 <= b).map_or(0, |r| r.1)
            }).sum()
        };
        (0..n).map(|k| (at(warm_ns + (k + 1) * interval_ns) - at(warm_ns + k * interval_ns)) as f64 * 8.0 / ns_to_secs(interval_ns)).collect()
    }

    #[test]
    fn goodput_intervals_in_one_pass_read_what_the_definition_reads() {
        // Flows that start and end at different samples, rows out of time
        // order (as lagging sources record them), two rows of one flow at one
        // instant (the larger first), samples between boundaries and on them.
        let mut rng = crate::sim::rng::SimRng::derive(5, crate::sim::rng::Domain::Flow, 0);
        let mut next = move |m: u64| rng.below(m);
        let mut s = FlowSeries::default();
        for f in 0..40u32 {
            let (start, len) = (next(30), 1 + next(20));
            let mut bytes = 0;
            for t in start..start + len {
                bytes += next(5_000);
                let t_ns = t * S / 4 + next(3) * S / 8;
                if next(6) == 0 {
                    s.push(t_ns, f, bytes + 1 + next(100), 0, 0, 0, 0, 0, 0);
                }
                s.push(t_ns, f, bytes, 0, 0, 0, 0, 0, 0);
            }
        }
        let got = goodput_intervals(&s, S, 12 * S, S / 2);
        assert_eq!(got.len(), 22);
        assert_eq!(got, goodput_intervals_by_definition(&s, S, 12 * S, S / 2));
        s.sort_by_time();
        assert_eq!(got, goodput_intervals(&s, S, 12 * S, S / 2));
    }
}
