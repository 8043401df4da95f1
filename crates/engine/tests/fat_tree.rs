//! The fat-tree topology (`[topology] fat_tree`): determinism, and the laws
//! a single flow on an idle tree must obey. ECMP's spread over the core
//! switches is tested where the hash lives (`world/fat_tree.rs`).
mod common;
use common::*;
use serde_json::{json, Value};

fn tree(k: u32) -> Value {
    json!({"k": k, "rate": "10Gbps", "delay": "1us", "buffer": "250pkt", "aqm": "step", "params": {"threshold": "65pkt"}})
}

fn busy_k4(seed: u64) -> Value {
    json!({
        "duration": "30ms", "seed": seed,
        "topology": {"fat_tree": tree(4)},
        "flows": [{"cc": "dctcp", "pattern": "permutation", "start_jitter": "1ms"}],
        "workloads": [{"kind": "incast", "cc": "dctcp", "every": "10ms", "start": "5ms", "senders": 8,
                       "size": {"dist": "fixed", "mean": "64KB"}}],
        "metrics": {"interval": "5ms"}
    })
}

fn without_wall(r: &aqmlab_engine::Results) -> Value {
    let mut v = r.summary();
    v["perf"]["wall_s"] = json!(null);
    v
}

#[test]
fn same_seed_gives_an_identical_summary_and_another_seed_other_paths() {
    let (a, b) = (run(busy_k4(3)), run(busy_k4(3)));
    assert_eq!(without_wall(&a), without_wall(&b));
    for name in ["flows", "queues", "flow_ts", "queue_ts"] {
        assert_eq!(format!("{:?}", a.table(name)), format!("{:?}", b.table(name)), "table {name} differs");
    }
    // The run did what it says: 16 permutation flows and three incasts of 8.
    let s = a.summary();
    assert_eq!(s["flows"].as_array().unwrap().len(), 16, "the long flows");
    assert_eq!(s["workload_flows"]["started"], 3 * 8, "incasts at 5, 15 and 25 ms");
    assert_eq!(s["queues"].as_array().unwrap().len(), 6 * 16, "one queue per direction of 48 links");
    // Another seed draws another permutation and other ECMP paths.
    let c = run(busy_k4(4));
    assert_ne!(without_wall(&a)["queues"], without_wall(&c)["queues"]);
}

/// A k = 16 tree has 6 144 ports, more than an L2 cache holds, so each
/// event prefetches the state of the next three (line headers, head
/// packets, queues, waiting rings, the slots packets will be written to),
/// and the queues' histogram buckets are counted in deferred batches
/// (`engine.prefetch`).
/// Neither may change a result: every table and the summary are the same
/// without them (the histograms included, whose runs of equal buckets are
/// counted late: at each sample, the end of warm-up and the end). The test
/// would also catch a hint that read past a table (a panic).
#[test]
fn prefetching_a_large_tree_changes_nothing() {
    let s = |prefetch: bool| {
        json!({
            "duration": "2ms", "warmup": "700us", "seed": 5,
            "topology": {"fat_tree": tree(16)},
            "flows": [{"cc": "dctcp", "pattern": "permutation", "start_jitter": "200us"}],
            "workloads": [{"kind": "incast", "cc": "dctcp", "every": "1ms", "start": "500us", "senders": 32,
                           "size": {"dist": "fixed", "mean": "64KB"}}],
            "metrics": {"interval": "500us"},
            "engine": {"prefetch": prefetch}
        })
    };
    let (on, off) = (run(s(true)), run(s(false)));
    assert!(on.summary()["perf"]["packet_hops"].as_u64().unwrap() > 100_000, "the tree carried traffic");
    assert_eq!(without_wall(&on), without_wall(&off));
    for name in ["flows", "queues", "sojourn_hist", "flow_ts", "queue_ts"] {
        assert_eq!(format!("{:?}", on.table(name)), format!("{:?}", off.table(name)), "table {name} differs");
    }
}

/// A tree has 48 links each way, so its AQM queues hand packets on early by
/// default (`engine.early_hand_off`; `EARLY_HAND_OFF_MIN_QUEUES` is 64):
/// fewer end-of-transmission events, and every table the same as with the
/// shortcut off. One flow each way, h0 and h15 both sending, so that CoDel's
/// queues see data and ACKs mixed, enter their dropping state (a 2 µs target)
/// and empty between packets; warm-up and samples read the queues between
/// events. (Many flows would meet at a queue at the same nanosecond, where
/// either order is valid and the two runs may take different ones:
/// docs/architecture.md.)
#[test]
fn a_tree_with_an_aqm_hands_packets_on_early_by_default_and_changes_nothing() {
    let s = |early: Option<bool>| {
        let mut s = json!({
            "duration": "6ms", "warmup": "1000003ns", "seed": 9,
            "topology": {"fat_tree": {"k": 4, "rate": "10Gbps", "delay": "1us", "buffer": "200pkt", "aqm": "codel",
                                      "params": {"target": "2us", "interval": "40us", "ecn": true}}},
            "flows": [{"cc": "dctcp", "src": "h0", "dst": "h15"},
                      {"cc": "cubic", "src": "h15", "dst": "h0", "ecn": "classic", "start": "1500007ns"}],
            "metrics": {"interval": "250007ns", "sojourn_samples_every": 7}
        });
        if let Some(e) = early {
            s["engine"] = json!({"early_hand_off": e});
        }
        run(s)
    };
    let (default, off) = (s(None), s(Some(false)));
    assert_eq!(without_wall(&default)["flows"], without_wall(&off)["flows"]);
    for name in ["flows", "queues", "sojourn_hist", "sojourn_samples", "flow_ts", "queue_ts"] {
        assert_eq!(format!("{:?}", default.table(name)), format!("{:?}", off.table(name)), "table {name} differs");
    }
    let marks: u64 = default.summary()["queues"].as_array().unwrap().iter().map(|q| q["marks"].as_u64().unwrap_or(0)).sum();
    assert!(marks > 0, "CoDel marked");
    let tx_done = |r: &aqmlab_engine::Results| r.summary()["perf"]["events_by_kind"]["link_tx_done"].as_u64().unwrap_or(0);
    let (early, every) = (tx_done(&default), tx_done(&off));
    assert!(early < every * 7 / 10, "end-of-transmission events {early} (default) vs {every} (early hand-off off)");
}

/// One long flow from h0 to h15 crosses 6 links each way (host, edge,
/// aggregation, core, aggregation, edge, host).
fn single_flow(size: Option<&str>) -> aqmlab_engine::Results {
    let mut f = json!({"cc": "dctcp", "src": "h0", "dst": "h15"});
    if let Some(s) = size {
        f["size"] = json!(s);
    }
    run(json!({
        "duration": "20ms",
        "topology": {"fat_tree": tree(4)},
        "flows": [f],
        "tcp": {"delayed_ack": false},
        "metrics": {"timeseries": false, "rtt_histogram": true}
    }))
}

#[test]
fn a_single_flow_sees_the_rtt_of_its_hops_and_fills_the_link_less_headers() {
    // RTT of the first segment on an idle tree: every hop costs its delay and
    // the serialisation of the packet at 10 Gbit/s, there (1500 B: 1200 ns)
    // and back (a 52 B ACK: 41.6 ns, which the link's exact-rate clock
    // rounds down to 41 ns for the first packet and carries the 0.6 ns on).
    let r = single_flow(Some("1448B"));
    let s = r.summary();
    assert_eq!(s["flows"][0]["rtt_ms"], json!(0.012), "base RTT 2 x 6 hops x 1 us");
    let hops = 6.0;
    let law_ns = 2.0 * hops * 1000.0 + hops * 1200.0 + hops * 41.0;
    let rtt_ns = s["rtt_ms"]["max"].as_f64().unwrap() * 1e6;
    assert!((rtt_ns - law_ns).abs() < 0.5, "first RTT {rtt_ns} ns, law {law_ns} ns");

    // A long flow: goodput = rate x payload / packet (1448 of 1500 bytes).
    // The NIC's queue never drains (DCTCP halves at most, and K = 65 packets
    // is four times the 16-packet BDP), so the shortfall is the start-up
    // (about 0.1 ms of 20 ms): within 1 %.
    let r = single_flow(None);
    let g = goodput(&r, 0);
    let law = 10e9 * 1448.0 / 1500.0;
    assert!((g - law).abs() / law < 0.01, "goodput {g}, law {law}");
    // Every link of the path, and no other, carried the flow's packets.
    let busy: Vec<String> = r.summary()["queues"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|q| q["departures"].as_u64().unwrap() > 0)
        .map(|q| q["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(busy.len(), 12, "{busy:?}");
}

#[test]
fn bad_fat_tree_input_is_one_clear_line() {
    let mut s = busy_k4(1);
    s["topology"]["fat_tree"]["k"] = json!(5);
    let e = aqmlab_engine::run_json(&s.to_string(), |_| true).err().unwrap();
    assert!(e.starts_with("topology.fat_tree.k: 5; allowed: an even number"), "{e}");
    let mut s = busy_k4(1);
    s["flows"] = json!([{"cc": "dctcp", "src": "h0", "dst": "h16"}]);
    let e = aqmlab_engine::run_json(&s.to_string(), |_| true).err().unwrap();
    assert!(e.starts_with("flows[0].dst: 'h16' is not a host of the fat tree; allowed: h0 to h15"), "{e}");
    let mut s = busy_k4(1);
    s["workloads"][0]["senders"] = json!(16);
    let e = aqmlab_engine::run_json(&s.to_string(), |_| true).err().unwrap();
    assert!(e.starts_with("workloads[0].senders: 16; allowed: 1 to 15"), "{e}");
}
