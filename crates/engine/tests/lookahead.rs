//! The event-saving shortcuts (receiver lookahead, source clock shift,
//! departure lookahead, early hand-off) must not change what is simulated:
//! results with and without them agree.
//!
//! Both schedules break ties between events at the same nanosecond by the order
//! in which they were scheduled, and the shortcuts schedule fewer events, so
//! two events of *different* components that coincide to the nanosecond may
//! run in the other order (both orders are valid). The scenarios therefore
//! use incommensurate rates and delays, where such coincidences do not occur.
mod common;
use common::*;
use serde_json::{json, Value};

fn both(mut s: Value) -> (aqmlab_engine::Results, aqmlab_engine::Results) {
    let fast = run(s.clone());
    s["engine"] = json!({"lookahead": false});
    (fast, run(s))
}

fn assert_same(a: &aqmlab_engine::Results, b: &aqmlab_engine::Results) {
    for name in ["flows", "queues", "sojourn_hist", "sojourn_samples", "flow_ts", "queue_ts", "probes"] {
        // Compared as text so that NaN (a flow without a goodput) equals NaN.
        assert_eq!(format!("{:?}", a.table(name)), format!("{:?}", b.table(name)), "table {name} differs");
    }
    let strip = |mut v: Value| {
        v["perf"] = json!(null);
        v
    };
    assert_eq!(strip(a.summary()), strip(b.summary()));
}

#[test]
fn lookahead_gives_identical_results_on_a_mixed_dumbbell() {
    // Distinct RTTs and jittered starts; loss recovery, delayed-ACK timers,
    // ECN feedback and an AQM timer all interleave with the shortcuts.
    let s = json!({
        "duration": "20s", "warmup": "2s", "seed": 11,
        "bottleneck": {"rate": "19999989bps", "buffer": "60pkt", "aqm": "dualpi2", "delay": "1000003ns"},
        "flows": [
            {"cc": "dctcp", "rtt": "7000071ns", "count": 2, "start_jitter": "13ms"},
            {"cc": "cubic", "rtt": "23000131ns", "ecn": "classic", "start_jitter": "7ms"},
            {"cc": "reno", "rtt": "41000203ns", "stop": "15s"},
            {"cc": "bbr2", "rtt": "13000457ns", "start": "1s"},
            {"cc": "udp", "rtt": "9000289ns", "rate": "1000033bps", "start": "3s"}
        ],
        "workloads": [{"kind": "web", "rate": "5/s", "size": {"dist": "pareto", "min": "2KB", "max": "200KB", "shape": 1.2},
                       "cc": "cubic", "rtt": "31000387ns"}],
        "metrics": {"interval": "50ms"}
    });
    let (a, b) = both(s);
    assert_same(&a, &b);
}

#[test]
fn lookahead_gives_identical_results_with_random_loss_and_a_graph() {
    let s = json!({
        "duration": "10s", "seed": 5,
        "topology": two_router_links(0.001),
        "flows": [{"cc": "cubic", "src": "a", "dst": "c"}, {"cc": "reno", "src": "b", "dst": "c", "start_jitter": "9ms"}]
    });
    let (a, b) = both(s);
    assert_same(&a, &b);
}

#[test]
fn lookahead_gives_identical_results_for_one_flow_to_the_last_sample() {
    // The source lags real time by its access delay; at the end it catches up,
    // so even the final sample and the final RTT estimate agree.
    let s = json!({
        "duration": "20s", "seed": 5,
        "bottleneck": {"rate": "19999999bps", "buffer": "30pkt", "delay": "1000007ns"},
        "flows": [{"cc": "cubic", "rtt": "23000017ns"}],
        "metrics": {"interval": "1ms"}
    });
    let (a, b) = both(s);
    assert_same(&a, &b);
}

#[test]
fn lookahead_gives_identical_results_with_qcn_feedback() {
    // CNMs travel back to lagging sources (2·offset + route delay) and must
    // reach them at the same local time as in the textbook schedule; a CUBIC
    // flow through the same congestion point ignores the CNMs it is sent.
    let s = json!({
        "duration": "400ms", "seed": 7,
        "bottleneck": {"rate": "999999937bps", "buffer": "80pkt", "aqm": "qcn", "delay": "300017ns",
                       "params": {"q_eq": "17pkt"},
                       "rate_schedule": [{"at": "100000003ns", "rate": "299999981bps"}, {"at": "250000007ns", "rate": "999999937bps"}]},
        "flows": [
            {"cc": "qcn", "count": 3, "rtt": "1100071ns", "rate": "400000037bps", "packet_size": "1499B",
             "start_jitter": "1ms", "params": {"fbhat": true}},
            {"cc": "qcn", "rtt": "700093ns", "rate": "350000011bps", "packet_size": "1201B"},
            {"cc": "cubic", "rtt": "2300131ns", "start": "50ms"}
        ],
        "metrics": {"interval": "5ms"}
    });
    let (a, b) = both(s);
    assert!(a.table("probes").strs("probe").iter().any(|p| p == "cnms"));
    let cnms = a.table("probes");
    let (owner, probe, value) = (cnms.strs("owner"), cnms.strs("probe"), cnms.f64s("value"));
    let sent = (0..owner.len()).filter(|&i| owner[i] == "bottleneck" && probe[i] == "cnms").map(|i| value[i]).fold(0.0, f64::max);
    assert!(sent > 100.0, "the congestion point sent {sent} CNMs");
    assert_same(&a, &b);
}

/// End-of-transmission events run: with departure lookahead, the queues that
/// decide on arrival need none.
fn tx_done_events(r: &aqmlab_engine::Results) -> u64 {
    r.summary()["perf"]["events_by_kind"]["link_tx_done"].as_u64().unwrap_or(0)
}

#[test]
fn departure_lookahead_gives_identical_results_on_a_step_dumbbell() {
    // Step marking (dropping Not-ECT above K) and tail drops decide on
    // arrival, so every packet's departure is known then. A FIFO reverse
    // queue takes the ACKs; warm-up, samples, sojourn histograms and raw
    // sojourn samples are all settled lazily and must match to the packet.
    let s = json!({
        "duration": "8s", "warmup": "1500000007ns", "seed": 3,
        "bottleneck": {"rate": "49999991bps", "buffer": "40pkt", "aqm": "step", "delay": "500009ns",
                       "params": {"threshold": "17pkt", "drop_non_ect": true},
                       "reverse": {"rate": "1500007bps", "buffer": "25pkt"}},
        "flows": [
            {"cc": "dctcp", "rtt": "5000011ns", "count": 3, "start_jitter": "11ms"},
            {"cc": "cubic", "rtt": "17000023ns", "ecn": "off"},
            {"cc": "reno", "rtt": "29000039ns", "ecn": "classic", "stop": "6000000013ns"},
            {"cc": "udp", "rtt": "7000057ns", "rate": "3000017bps", "start": "2000000011ns"}
        ],
        "workloads": [{"kind": "web", "rate": "7/s", "size": {"dist": "pareto", "min": "3KB", "max": "300KB", "shape": 1.3},
                       "cc": "dctcp", "rtt": "11000071ns"}],
        "metrics": {"interval": "20ms", "sojourn_samples_every": 7}
    });
    let (a, b) = both(s);
    assert_same(&a, &b);
    let q = queue(&a, "bottleneck");
    assert!(q["drops"].as_u64() > Some(0) && q["marks"].as_u64() > Some(0), "drops and marks exercised: {q}");
    assert!(a.table("sojourn_samples").f64s("sojourn_ns").len() > 1000);
    assert_eq!(tx_done_events(&a), 0, "both queues depart on arrival");
    assert!(tx_done_events(&b) > 30_000, "{}", tx_done_events(&b));
}

#[test]
fn departure_lookahead_covers_a_dumbbell_s_per_flow_access_queues() {
    // With `access_rate` every flow, the web flows made mid-run included,
    // gets an access queue of its own, made after the topology's queues took
    // their shortcuts; it must take departure lookahead too (a FIFO decides
    // on arrival), with a delay line of its own: the access rate is below a
    // flow's share, so the access queues hold backlogs and enter packets on
    // their lines well ahead of now, in an order no shared line would keep.
    let s = json!({
        "duration": "6s", "warmup": "1000000007ns", "seed": 17,
        "bottleneck": {"rate": "49999991bps", "buffer": "40pkt", "aqm": "step", "delay": "500009ns",
                       "params": {"threshold": "17pkt"}, "access_rate": "13000027bps",
                       "reverse": {"rate": "2500009bps", "buffer": "30pkt"}},
        "flows": [
            {"cc": "dctcp", "rtt": "5000011ns", "count": 3, "start_jitter": "11ms"},
            {"cc": "cubic", "rtt": "17000023ns", "ecn": "classic"},
            {"cc": "reno", "rtt": "29000039ns", "stop": "4000000013ns"}
        ],
        "workloads": [{"kind": "web", "rate": "5/s", "size": {"dist": "pareto", "min": "3KB", "max": "300KB", "shape": 1.3},
                       "cc": "dctcp", "rtt": "11000071ns"}],
        "metrics": {"interval": "20ms", "sojourn_samples_every": 5}
    });
    let (a, b) = both(s);
    assert_same(&a, &b);
    assert!(a.summary()["workload_flows"]["completed"].as_u64() > Some(10), "web flows made mid-run: {}", a.summary()["workload_flows"]["completed"]);
    assert_eq!(tx_done_events(&a), 0, "the bottleneck, the reverse queue and every access queue depart on arrival");
    assert!(tx_done_events(&b) > 20_000, "{}", tx_done_events(&b));
}

#[test]
fn departure_lookahead_gives_identical_results_through_queues_in_series() {
    // r0 -> r1 has no delay, so its departures reach r1's queue through a
    // zero-delay line; r1 -> r2 marks on a byte threshold and is followed by
    // a lossy rate-less link; r2 -> d changes rate mid-run, so it keeps its
    // end-of-transmission events.
    let s = json!({
        "duration": "6s", "seed": 9,
        "topology": {"links": [
            {"from": "a", "to": "r0", "delay": "1000003ns"},
            {"from": "b", "to": "r1", "delay": "2000017ns"},
            {"from": "r0", "to": "r1", "rate": "30000001bps", "delay": "0ns", "buffer": "50pkt"},
            {"from": "r1", "to": "r2", "rate": "20000003bps", "delay": "3000007ns", "aqm": "step",
             "params": {"threshold": "30001B"}, "buffer": "80pkt"},
            {"from": "r2", "to": "x", "delay": "1000033ns", "loss": 0.002},
            {"from": "x", "to": "d", "rate": "25000009bps", "delay": "2000003ns", "buffer": "60pkt",
             "rate_schedule": [{"at": "3000000007ns", "rate": "15000011bps"}]}
        ]},
        "flows": [
            {"cc": "dctcp", "src": "a", "dst": "d", "count": 2, "start_jitter": "5ms"},
            {"cc": "cubic", "src": "b", "dst": "d", "ecn": "classic"}
        ],
        "metrics": {"interval": "10ms"}
    });
    let (a, b) = both(s);
    assert_same(&a, &b);
    let (fast, slow) = (tx_done_events(&a), tx_done_events(&b));
    // Only x -> d keeps its events; the reverse links are FIFOs that depart on arrival.
    assert!(fast > 0 && fast < slow / 2, "end-of-transmission events {fast} (lookahead) vs {slow}");
}

#[test]
fn early_hand_off_gives_identical_results_through_aqms_in_series() {
    // Queues that decide at dequeue (CoDel, PIE, FQ-CoDel, RED, DualPI2)
    // hand a starting packet to the line after them at once, and keep their
    // end-of-transmission event only while packets wait. b's access queue
    // and the branch to e idle between bursts, so their disciplines' dequeue
    // on an empty queue runs late, at its own time; r0 -> r1 (no delay: the
    // next stage is a queue) and r1 -> r2 (a lossy rate-less link follows)
    // keep every event; r3 -> d changes rate mid-run; PIE and DualPI2 run
    // timers; samples and the warm-up read the queues between events.
    let s = json!({
        "duration": "6s", "warmup": "1000000007ns", "seed": 13,
        "topology": {"links": [
            {"from": "a", "to": "r0", "delay": "1000003ns"},
            {"from": "b", "to": "r0", "rate": "70000021bps", "delay": "3000011ns", "buffer": "40pkt", "aqm": "codel",
             "params": {"target": "500009ns", "interval": "10000019ns", "ecn": true}},
            {"from": "r0", "to": "r1", "rate": "40000007bps", "delay": "0ns", "buffer": "60pkt", "aqm": "codel",
             "params": {"target": "2000003ns", "interval": "40000009ns", "ecn": true}},
            {"from": "r1", "to": "r2", "rate": "30000001bps", "delay": "2000017ns", "buffer": "80pkt", "aqm": "pie"},
            {"from": "r2", "to": "x", "delay": "1000033ns", "loss": 0.002},
            {"from": "x", "to": "r3", "rate": "25000009bps", "delay": "1500007ns", "buffer": "70pkt", "aqm": "fq_codel"},
            {"from": "r3", "to": "d", "rate": "20000003bps", "delay": "700001ns", "buffer": "60pkt", "aqm": "dualpi2",
             "rate_schedule": [{"at": "3000000007ns", "rate": "35000011bps"}]},
            {"from": "r1", "to": "e", "rate": "15000017bps", "delay": "900007ns", "buffer": "50pkt", "aqm": "red"}
        ]},
        "flows": [
            {"cc": "dctcp", "src": "a", "dst": "d", "count": 2, "start_jitter": "5ms"},
            {"cc": "cubic", "src": "b", "dst": "d", "ecn": "classic"},
            {"cc": "prague", "src": "b", "dst": "d", "start": "1500000013ns"},
            {"cc": "reno", "src": "a", "dst": "e", "stop": "4000000019ns"},
            {"cc": "udp", "src": "b", "dst": "e", "rate": "2000029bps", "start": "2000000011ns"}
        ],
        "metrics": {"interval": "10000007ns", "sojourn_samples_every": 5}
    });
    // Six queues: early hand-off is off by default (`EARLY_HAND_OFF_MIN_QUEUES`)
    // and forced on here; the default and the textbook schedule must agree with it.
    let mut forced = s.clone();
    forced["engine"] = json!({"early_hand_off": true});
    let (a, b) = both(forced);
    assert_same(&a, &b);
    let default = run(s);
    assert_same(&a, &default);
    for q in ["b->r0", "r0->r1", "r1->r2", "x->r3", "r3->d", "r1->e"] {
        let q = queue(&a, q);
        assert!(q["departures"].as_u64() > Some(1000), "every queue carries traffic: {q}");
    }
    // The default keeps the AQMs' events (the reverse FIFOs lose theirs to
    // departure lookahead either way).
    let (early, without) = (tx_done_events(&a), tx_done_events(&default));
    assert!(early > 0 && early < without * 9 / 10, "end-of-transmission events {early} (early hand-off) vs {without}");
}

#[test]
fn early_hand_off_is_on_from_64_queues_and_changes_nothing_there() {
    // Sixteen flows through their own access queues into one shared
    // bottleneck and out through their own egress queues: 33 links, each
    // with a FIFO for its reverse direction, so 66 queues, and early hand-off
    // is on by default (`EARLY_HAND_OFF_MIN_QUEUES`). Rates and delays are
    // distinct and incommensurate, so that no two packets reach a queue at
    // the same nanosecond (where either order would be valid and the runs
    // could part: docs/architecture.md); every table must be the same as
    // with the shortcut off, for AQMs that idle between packets (the egress
    // queues, one flow each) and for a busy one (the bottleneck).
    let aqms = ["codel", "pie", "fq_codel", "red"];
    let ccs = ["dctcp", "cubic", "prague", "reno"];
    let mut links = vec![json!({"from": "r0", "to": "r1", "rate": "400000009bps", "delay": "2000003ns", "buffer": "300pkt",
                                "aqm": "dualpi2"})];
    let mut flows = vec![];
    for i in 0..16u64 {
        let (aqm, cc) = (aqms[i as usize % 4], ccs[i as usize / 4]);
        links.push(json!({"from": format!("h{i}"), "to": "r0", "rate": format!("{}bps", 100_000_007 + 7_919 * i),
                          "delay": format!("{}ns", 300_007 + 10_037 * i), "buffer": "100pkt", "aqm": aqm}));
        links.push(json!({"from": "r1", "to": format!("d{i}"), "rate": format!("{}bps", 200_000_033 + 104_729 * i),
                          "delay": format!("{}ns", 500_009 + 20_011 * i), "buffer": "100pkt", "aqm": aqms[(i as usize + 1) % 4]}));
        let ecn = if cc == "cubic" || cc == "reno" { "classic" } else { "l4s" };
        flows.push(json!({"cc": cc, "src": format!("h{i}"), "dst": format!("d{i}"), "ecn": ecn,
                          "start": format!("{}ns", 1_000_003 * i)}));
    }
    let s = |early: Option<bool>| {
        let mut s = json!({
            "duration": "3s", "warmup": "500000009ns", "seed": 21,
            "topology": {"links": links.clone()}, "flows": flows.clone(),
            "metrics": {"interval": "50000017ns", "sojourn_samples_every": 11}
        });
        if let Some(e) = early {
            s["engine"] = json!({"early_hand_off": e});
        }
        run(s)
    };
    let (default, off) = (s(None), s(Some(false)));
    assert_same(&default, &off);
    assert_eq!(default.summary()["queues"].as_array().map(Vec::len), Some(66), "33 links, each way");
    let (early, every) = (tx_done_events(&default), tx_done_events(&off));
    assert!(early < every * 8 / 10, "end-of-transmission events {early} (default) vs {every} (early hand-off off)");
}
