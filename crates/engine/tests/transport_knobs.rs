//! System tests of transport knobs end to end: the buffer, delayed-ACK and
//! RTO settings, the initial window and the ECN handshake (the return path,
//! pacing and flow start/stop/size: transport_features.rs). Each tolerance
//! is derived in a comment from first principles (link rates, packet sizes,
//! timer values).
mod common;
use common::*;
use serde_json::{json, Value};

// ---------------------------------------------------------------------------
// 1. Configuration knobs end to end.

#[test]
fn a_time_buffer_caps_the_queue_at_rate_times_time() {
    // "10ms" at 10 Mbit/s is 12,500 B. A 1500 B segment is admitted while
    // backlog + 1500 ≤ 12,500 (the packet on the wire not counted), so with
    // n = ⌊12,500/1500⌋ = 8 at most 7 wait ahead of it, and it waits for
    // them plus the rest of the one on the wire: sojourn ≤ 8 T = 9.6 ms
    // (T = 1.2 ms), under the nominal 10 ms. A drop means 8 were waiting,
    // so the 8th was admitted behind 7: the maximum is ≥ 7 T = 8.4 ms.
    // "20ms" (25,000 B, n = 16): [15 T, 16 T] = [18, 19.2] ms.
    let with = |buffer: &str| {
        run(json!({
            "duration": "20s", "warmup": "2s",
            "bottleneck": {"rate": "10Mbps", "buffer": buffer},
            "flows": [{"cc": "reno", "rtt": "20ms"}],
            "metrics": {"timeseries": false}
        }))
    };
    for ms in [10.0f64, 20.0] {
        let r = with(&format!("{ms}ms"));
        let q = queue(&r, "bottleneck");
        let max = f64_of(&q["sojourn_ms"]["max"]);
        let n = (10e6 * ms / 1e3 / 8.0 / 1500.0).floor();
        let (lo, hi) = ((n - 1.0) * 1.2, n * 1.2);
        eprintln!("{ms} ms buffer: max sojourn {max:.4} ms in [{lo:.1}, {hi:.1}], drops {}", q["drops"]);
        assert!(u64_of(&q["drops"]) > 0, "the buffer must fill");
        assert!(max <= hi + 1e-6 && max >= lo - 1e-6, "max sojourn {max} ms vs [{lo}, {hi}] ms for a {ms} ms buffer");
    }
    // The time is converted to bytes at the link rate: the same run as 12500B.
    let (r, b) = (with("10ms"), with("12500B"));
    assert_eq!(r.summary()["queues"], b.summary()["queues"]);
    assert_eq!(r.summary()["flows"], b.summary()["flows"]);
}

#[test]
fn delayed_acks_send_one_ack_per_delack_count_segments() {
    // Count ACKs on a fast reverse queue (it never queues: 10 Mbit/s against
    // ≤ 0.4 Mbit/s of ACKs). The flow is lossless and window-limited, so
    // every segment arrives in order and the receiver sends one ACK per
    // `delack_count` full segments (1 with delayed ACKs off): ACKs/data =
    // 1/n up to the few segments at the end of the window (< 0.5 %).
    let ratio = |tcp: Value| {
        let mut tcp = tcp;
        tcp["rwnd"] = json!("43440B");
        let r = run(json!({
            "duration": "5s", "warmup": "1s",
            "bottleneck": {"rate": "10Mbps", "reverse": {"rate": "10Mbps"}},
            "flows": [{"cc": "reno", "rtt": "20ms"}],
            "tcp": tcp,
            "metrics": {"timeseries": false}
        }));
        assert_eq!(u64_of(&flow(&r, 0)["retransmits"]), 0);
        let acks = u64_of(&queue(&r, "bottleneck_rev")["arrivals"]) as f64;
        let data = u64_of(&queue(&r, "bottleneck")["departures"]) as f64;
        (acks / data, goodput(&r, 0))
    };
    let (off, g_off) = ratio(json!({"delayed_ack": false}));
    let (two, g_two) = ratio(json!({}));
    let (three, g_three) = ratio(json!({"delack_count": 3}));
    eprintln!("ACKs per data segment: off {off:.4}, delack 2 {two:.4}, delack 3 {three:.4}");
    assert!((off - 1.0).abs() < 0.005, "delayed ACKs off: {off}");
    assert!((two - 0.5).abs() < 0.005, "every 2nd segment: {two}");
    assert!((three - 1.0 / 3.0).abs() < 0.005, "every 3rd segment: {three}");
    // The window is not ACK-limited here, so the goodput does not change.
    for g in [g_off, g_two, g_three] {
        assert!((g - g_two).abs() / g_two < 0.01, "goodput {g} vs {g_two}");
    }
}

#[test]
fn delack_timeout_delays_the_ack_of_a_lone_segment() {
    // A 2-segment flow with an initial window of 1: the receiver holds the
    // ACK of the lone first segment until `delack_timeout` (no second
    // segment comes); the second segment completes the flow and is ACKed at
    // once. Everything else is identical, so the completion time grows by
    // exactly the timeout: +40 ms (default) and +100 ms over no delayed ACKs.
    let fct = |tcp: Value| {
        let r = run(json!({
            "duration": "2s",
            "bottleneck": {"rate": "10Mbps"},
            "flows": [{"cc": "reno", "rtt": "20ms", "size": "2896B", "params": {"initial_window": 1}}],
            "tcp": tcp,
            "metrics": {"timeseries": false}
        }));
        assert_eq!(u64_of(&flow(&r, 0)["bytes"]), 2896);
        f64_of(&flow(&r, 0)["fct_s"])
    };
    let off = fct(json!({"delayed_ack": false}));
    let default = fct(json!({}));
    let long = fct(json!({"delack_timeout": "100ms"}));
    eprintln!("2-segment flow, IW 1: fct {off:.6} s (no delayed ACKs), {default:.6} s (40 ms), {long:.6} s (100 ms)");
    assert!((default - off - 0.040).abs() < 1e-9, "default delack adds {} s", default - off);
    assert!((long - off - 0.100).abs() < 1e-9, "100 ms delack adds {} s", long - off);
}

/// A 10-segment flow whose IW10 burst meets a 5-packet buffer: one packet
/// goes straight onto the wire, five queue, the last four are dropped.
/// They are the tail, so no later segment triggers SACK or dupacks: only
/// the retransmission timer recovers them.
fn tail_loss(tcp: Value, params: Value) -> aqmlab_engine::Results {
    run(json!({
        "duration": "3s",
        "bottleneck": {"rate": "10Mbps", "buffer": "5pkt"},
        "flows": [{"cc": "reno", "rtt": "20ms", "size": "14480B", "params": params}],
        "tcp": tcp,
        "metrics": {"timeseries": false}
    }))
}

#[test]
fn rto_min_sets_the_tail_loss_recovery_time() {
    // The timer restarts on the last ACK (RFC 6298 §5.3) with RTO = srtt +
    // max(4·rttvar, rto_min) (Linux); both floors here exceed 4·rttvar
    // (≤ 40 ms for a 20 ms path), and everything before the timeout is the
    // same in both runs, so the completion times differ by exactly
    // 500 − 200 = 300 ms.
    let a = tail_loss(json!({}), json!({}));
    let b = tail_loss(json!({"rto_min": "500ms"}), json!({}));
    let (fa, fb) = (flow(&a, 0), flow(&b, 0));
    let (ta, tb) = (f64_of(&fa["fct_s"]), f64_of(&fb["fct_s"]));
    eprintln!("tail loss: fct {ta:.6} s (rto_min 200 ms), {tb:.6} s (500 ms); drops {} rtos {}", fa["drops"], fa["rtos"]);
    for f in [&fa, &fb] {
        assert_eq!(u64_of(&f["drops"]), 4, "IW10 into 1 + 5 places");
        assert_eq!(u64_of(&f["rtos"]), 1);
        assert_eq!(u64_of(&f["bytes"]), 14_480);
    }
    assert!(((tb - ta) - 0.300).abs() < 1e-9, "fct difference {} s vs 0.3 s", tb - ta);
    // And the recovery takes at least the floor: handshake + first flight
    // (≥ 1.5 RTT) + 200 ms.
    assert!(ta > 0.030 + 0.200, "fct {ta}");
}

// ---------------------------------------------------------------------------
// 2. The initial window.

#[test]
fn the_first_flight_is_the_initial_window() {
    // 100 ms RTT, 100 Mbit/s, no bottleneck delay: the SYN reaches the
    // bottleneck at 25 ms, the SYN-ACK returns at 100 ms and the first
    // flight reaches the bottleneck at 125 ms; the first ACK returns at
    // ≥ 200 ms and its new data arrive at ≥ 225 ms. So at 150 and 220 ms
    // the bottleneck has seen the SYN plus exactly IW segments, and at
    // 150 ms all IW segments are in flight with cwnd = IW.
    for (params, iw) in [(json!({}), 10.0), (json!({"initial_window": 4}), 4.0)] {
        let r = run(json!({
            "duration": "300ms",
            "bottleneck": {"rate": "100Mbps"},
            "flows": [{"cc": "cubic", "rtt": "100ms", "params": params}],
            "metrics": {"interval": "10ms"}
        }));
        let arrived = queue_series(&r, "bottleneck", "arrived_pkts");
        let t = r.table("flow_ts");
        let (ts, inflight, cwnd) = (t.f64s("t_ns"), t.f64s("in_flight_segs"), t.f64s("cwnd_segs"));
        let i150 = ts.iter().position(|&x| x == 150e6).unwrap();
        eprintln!(
            "IW {iw}: bottleneck arrivals at 120/150/220/260 ms: {} {} {} {}; in flight {} cwnd {} at 150 ms",
            at(&arrived, 120_000_000),
            at(&arrived, 150_000_000),
            at(&arrived, 220_000_000),
            at(&arrived, 260_000_000),
            inflight[i150],
            cwnd[i150]
        );
        assert_eq!(at(&arrived, 120_000_000), 1.0, "only the SYN before the first flight");
        assert_eq!(at(&arrived, 150_000_000), 1.0 + iw);
        assert_eq!(at(&arrived, 220_000_000), 1.0 + iw, "nothing more until the first ACK is back");
        assert!(at(&arrived, 260_000_000) > 1.0 + iw, "the second round");
        assert_eq!((inflight[i150], cwnd[i150]), (iw, iw));
    }
}

#[test]
fn an_iw_burst_overflows_a_small_buffer_by_iw_minus_six() {
    // The same tail-loss setup observes the first flight directly: of a
    // burst of IW back-to-back segments, 1 + 5 fit (wire + 5-packet buffer),
    // IW − 6 are dropped; with IW = 8 that is 2.
    let r = tail_loss(json!({}), json!({"initial_window": 8}));
    let q = queue(&r, "bottleneck");
    eprintln!("IW 8 into 1 + 5: drops {}", q["drops"]);
    assert_eq!(u64_of(&q["drops"]), 2);
}

// ---------------------------------------------------------------------------
// 3. The ECN handshake.

#[test]
fn a_receiver_without_ecn_leaves_every_flow_without_ecn() {
    // The link CE-marks every ECN-capable packet (mark = 1). With ECN
    // negotiated every data segment is marked; with receivers refusing
    // ECN (tcp.receiver_ecn = false) the sender falls back to Not-ECT, so
    // nothing can be marked and no ECN reduction can happen.
    let scenario = |receiver_ecn: bool| {
        json!({
            "duration": "2s",
            "bottleneck": {"rate": "10Mbps", "mark": 1.0},
            "flows": [
                {"cc": "reno", "rtt": "20ms", "ecn": "classic"},
                {"cc": "dctcp", "rtt": "20ms"},
                {"cc": "cubic", "rtt": "20ms", "ecn": "dctcp"}
            ],
            "tcp": {"receiver_ecn": receiver_ecn},
            "metrics": {"timeseries": false}
        })
    };
    let on = run(scenario(true));
    let off = run(scenario(false));
    for (i, negotiated) in [(0, "classic"), (1, "accurate"), (2, "accurate")] {
        let (a, b) = (flow(&on, i), flow(&off, i));
        eprintln!(
            "flow {i} ({}): negotiated {} / {}; marks {} / {}; ECN reductions {} / {}",
            a["ecn"], a["ecn_negotiated"], b["ecn_negotiated"], a["marks"], b["marks"], a["ecn_reductions"], b["ecn_reductions"]
        );
        assert_eq!(a["ecn_negotiated"], negotiated);
        assert!(u64_of(&a["marks"]) > 0 && u64_of(&a["ecn_reductions"]) > 0);
        assert_eq!(b["ecn"], a["ecn"], "what the flow asked for is unchanged");
        assert_eq!(b["ecn_negotiated"], "off");
        assert_eq!(u64_of(&b["marks"]), 0, "Not-ECT data cannot be marked");
        assert_eq!(u64_of(&b["ecn_reductions"]), 0);
    }
}

#[test]
fn the_syn_is_not_ect_but_every_new_data_segment_is() {
    // RFC 3168 §6.1.1: the ECN-setup SYN is Not-ECT. With every ECT packet
    // CE-marked by the link and no loss (all 70 segments of the flow would
    // fit in the default 100 ms = 83-packet buffer at once), the bottleneck
    // marks exactly the data segments: arrivals − 1.
    for ecn in ["classic", "l4s"] {
        let r = run(json!({
            "duration": "2s",
            "bottleneck": {"rate": "10Mbps", "mark": 1.0},
            "flows": [{"cc": "reno", "rtt": "20ms", "ecn": ecn, "size": "100KB"}],
            "metrics": {"timeseries": false}
        }));
        let q = queue(&r, "bottleneck");
        let f = flow(&r, 0);
        let (arr, marks) = (u64_of(&q["arrivals"]), u64_of(&q["marks"]));
        eprintln!("{ecn}: bottleneck arrivals {arr}, marks {marks}, segments sent {}", flow_col(&r, 0, "segs_sent"));
        assert_eq!(u64_of(&f["retransmits"]), 0);
        assert!(f["fct_s"].is_number(), "the flow completes");
        assert_eq!(arr as f64, flow_col(&r, 0, "segs_sent") + 1.0, "SYN + segments");
        assert_eq!(marks, arr - 1, "every data segment marked, the SYN not");
        assert_eq!(u64_of(&f["marks"]), marks);
    }
}
