//! System tests of transport features end to end: the return path's own
//! queue, pacing, and flow start/stop/size (the buffer/delayed-ACK/RTO
//! knobs, the initial window and the ECN handshake: transport_knobs.rs).
//! Each tolerance is derived in a comment from first principles (link
//! rates, packet sizes, timer values).
mod common;
use common::*;
use serde_json::{json, Value};

/// Payload bytes of a full segment: 1500 − 52 (IP + TCP + timestamps).
const MSS: f64 = 1448.0;
/// A pure ACK without SACK blocks is the 52 header bytes.
const ACK_BYTES: f64 = 52.0;

// ---------------------------------------------------------------------------
// 1. The return path through its own queue (`bottleneck.reverse`).

fn ack_limited(delayed_ack: bool) -> aqmlab_engine::Results {
    run(json!({
        "duration": "8s", "warmup": "3s",
        "bottleneck": {"rate": "20Mbps", "buffer": "100ms",
                       "reverse": {"rate": "100kbps", "buffer": "100pkt"}},
        "flows": [{"cc": "reno", "rtt": "20ms"}],
        // The receive window bounds how many ACKs can wait in the reverse
        // queue (≤ 45 segments, so ≤ 45 ACKs), far below its 100 packets.
        "tcp": {"rwnd": "64KiB", "delayed_ack": delayed_ack},
        "metrics": {"timeseries": false}
    }))
}

#[test]
fn a_slow_ack_path_caps_forward_goodput_at_ack_rate_times_data_per_ack() {
    // With no ACK loss the sender is clocked by the reverse link alone:
    // ACKs leave it at R_rev / (52 B · 8) = 100e3 / 416 = 240.4 /s, each
    // acknowledging k segments (k = 2 with delayed ACKs, 1 without), so
    // goodput = 240.4 · k · 1448 B · 8 = 5.569 Mbit/s (k = 2) or 2.785
    // Mbit/s (k = 1), well under the 20 Mbit/s forward link. The only
    // slack is the busy fraction of the reverse link (≥ 99 % once the
    // window exceeds the ACK-clocked pipe of ~10 segments): 2 %.
    for (delack, k) in [(true, 2.0), (false, 1.0)] {
        let r = ack_limited(delack);
        let cap = 100e3 / (ACK_BYTES * 8.0) * k * MSS * 8.0;
        let g = goodput(&r, 0);
        let rev = queue(&r, "bottleneck_rev");
        let fwd = queue(&r, "bottleneck");
        eprintln!(
            "ACK-limited (delayed ACKs {delack}): goodput {:.3} Mbit/s vs cap {:.3} ({:.4}); reverse util {:.4}, drops {}; forward util {:.3}",
            g / 1e6,
            cap / 1e6,
            g / cap,
            f64_of(&rev["utilization"]),
            rev["drops"],
            f64_of(&fwd["utilization"])
        );
        assert!((g - cap).abs() / cap < 0.02, "delayed ACKs {delack}: goodput {g} vs ACK-clock cap {cap}");
        assert_eq!(u64_of(&rev["drops"]), 0, "no ACK may be lost for the cap to be exact");
        assert!(f64_of(&rev["utilization"]) > 0.99, "the reverse link is the bottleneck");
        assert!(f64_of(&fwd["utilization"]) < 0.3, "the forward link is not");
        // ACKs wait in the reverse queue: the window beyond the ACK-clocked
        // pipe (45 − ~10 segments, i.e. ~35/k ACKs of 4.16 ms) sits there.
        let p50 = f64_of(&rev["sojourn_ms"]["p50"]);
        let expect_ms = (45.0 - 240.4 * k * 0.020) / k * 4.16;
        eprintln!("  reverse sojourn p50 {p50:.1} ms vs ~{expect_ms:.1} ms");
        assert!((p50 - expect_ms).abs() / expect_ms < 0.25, "reverse sojourn p50 {p50} ms vs ~{expect_ms:.0} ms");
    }
}

#[test]
fn acks_queue_and_drop_in_a_small_reverse_buffer() {
    // Without a receive window the window keeps growing, so ACKs pile up in
    // a 5-packet reverse queue and the excess is dropped. Cumulative ACKs
    // make ACK loss cheap: each surviving ACK acknowledges everything before
    // it, so the data per ACK grows with the window and the ACK-clock cap of
    // the lossless case (5.57 Mbit/s) no longer applies; Reno with a 100 ms
    // (≥ 1 BDP) forward buffer then fills the 20 Mbit/s forward link.
    let r = run(json!({
        "duration": "8s", "warmup": "3s",
        "bottleneck": {"rate": "20Mbps", "reverse": {"rate": "100kbps", "buffer": "5pkt"}},
        "flows": [{"cc": "reno", "rtt": "20ms"}],
        "metrics": {"timeseries": false}
    }));
    let s = r.summary();
    let names: Vec<&str> = s["queues"].as_array().unwrap().iter().map(|q| q["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["bottleneck", "bottleneck_rev"]);
    let rev = queue(&r, "bottleneck_rev");
    let (arr, dep, drops) = (u64_of(&rev["arrivals"]), u64_of(&rev["departures"]), u64_of(&rev["drops"]));
    let max = f64_of(&rev["sojourn_ms"]["max"]);
    let util = f64_of(&rev["utilization"]);
    let g = goodput(&r, 0);
    let cap = 100e3 / (ACK_BYTES * 8.0) * 2.0 * MSS * 8.0;
    let fwd_payload = 20e6 * MSS / 1500.0;
    eprintln!(
        "small reverse buffer: ACK arrivals {arr}, departures {dep}, drops {drops}, max sojourn {max:.2} ms, util {util:.4}; goodput {:.3} Mbit/s (lossless ACK cap {:.3}, forward payload rate {:.3})",
        g / 1e6,
        cap / 1e6,
        fwd_payload / 1e6
    );
    assert_eq!(rev["aqm"], "fifo");
    assert_eq!(u64_of(&rev["rate_bps"]), 100_000);
    assert!(drops > 0 && dep > 0, "ACKs must both queue and drop");
    // A packet is admitted to a 5-packet FIFO only with ≤ 4 ahead of it, so
    // it waits for those and the rest of the one on the wire: ≤ 5 ACK
    // times, 20.8 ms for 52 B ACKs (32 ms if all carried 3 SACK blocks, 80 B).
    // A drop means 5 were waiting, so the 5th was admitted behind 4: the
    // maximum is ≥ 4 ACK times (16.6 ms).
    assert!(max >= 4.0 * 4.16 && max <= 5.0 * 6.4 + 1e-6, "max ACK sojourn {max} ms");
    // The link is saturated with ACKs of at least 52 B: at most 240.4 per
    // second over the 5 s window, and exactly that when none carries SACK
    // blocks (the forward queue loses nothing in this window).
    assert!(util > 0.999, "reverse utilization {util}");
    assert!(dep as f64 <= 240.4 * 5.0 + 1.0 && dep as f64 >= 0.98 * 240.4 * 5.0, "ACK departures {dep}");
    // arrivals = departures + drops, up to the ≤ 6 ACKs resident at the
    // window's two ends.
    assert!(arr + 6 >= dep + drops && arr <= dep + drops + 6, "conservation: {arr} vs {dep} + {drops}");
    // Goodput counts what reaches the receiver in the window, i.e. what left
    // the forward link in a 5 s interval shifted by the receiver-side delay:
    // at most the payload rate plus one segment straddling the window's edge.
    assert!(g > 2.0 * cap && g > 0.9 * fwd_payload, "goodput {g}");
    assert!(g <= fwd_payload + MSS * 8.0 / 5.0, "goodput {g} above the link's payload rate");
}

// ---------------------------------------------------------------------------
// 2. Pacing (`tcp.pacing`).

#[test]
fn pacing_removes_the_slow_start_queue() {
    // 100 Mbit/s, 50 ms: one 1500 B packet takes T = 0.12 ms, the BDP is 417
    // packets. Unpaced, each ACK (2 segments) releases 4 back to back, so a
    // slow-start round of W segments arrives at twice the link rate and
    // leaves a queue of ~W/2: by the 5th round (W = 160, data at ~262 ms)
    // that is ~80 packets, 9.6 ms. Paced at 2·W/srtt, packets are spaced by
    // srtt/(2W) ≥ 50 ms/320 = 0.156 ms > T while W ≤ 160, so a packet finds
    // at most the previous one still on the wire: sojourn < T. The run ends
    // (300 ms) before the 6th round (W = 320) reaches the queue at 312 ms.
    let run_with = |pacing: bool| {
        run(json!({
            "duration": "300ms",
            "bottleneck": {"rate": "100Mbps", "buffer": "1000pkt"},
            "flows": [{"cc": "reno", "rtt": "50ms"}],
            "tcp": {"pacing": pacing},
            "metrics": {"timeseries": false}
        }))
    };
    let (plain, paced) = (run_with(false), run_with(true));
    let soj = |r: &aqmlab_engine::Results, k: &str| f64_of(&queue(r, "bottleneck")["sojourn_ms"][k]);
    let (max0, max1) = (soj(&plain, "max"), soj(&paced, "max"));
    let (b0, b1) = (u64_of(&flow(&plain, 0)["bytes"]), u64_of(&flow(&paced, 0)["bytes"]));
    eprintln!("slow start: max sojourn unpaced {max0:.3} ms, paced {max1:.3} ms; bytes {b0} vs {b1}");
    assert!((max0 - 9.6).abs() < 0.3 * 9.6, "unpaced max sojourn {max0} ms vs ~W/2·T = 9.6 ms");
    assert!(max1 < 0.12, "paced max sojourn {max1} ms vs T = 0.12 ms");
    // Rounds still start once per RTT (at the first ACK of the previous
    // one), but spreading each over srtt/2 delays its last segment: by
    // 300 ms the paced flow has delivered rounds 1-4 (150 segments, done by
    // 200 + 25 + 25 ms) but less of round 5 than the unpaced one.
    assert!(b1 < b0 && b1 > 150 * 1448, "bytes {b1} (paced) vs {b0}");
}

#[test]
fn pacing_keeps_steady_state_goodput() {
    // Reno over a 1-BDP FIFO (34 packets; BDP 33) keeps the link busy: after
    // halving from 67 packets cwnd is still a BDP. Paced at 1.2 × cwnd/srtt
    // in congestion avoidance, the sender outpaces the link except just
    // after a reduction, while srtt (gain 1/8 per ACK) still holds the
    // drained 20 ms queue: for a few RTTs (~0.1 s) the pacing rate is
    // ~1.2 · 34 / 40 ms ≈ 0.6 C. Once per ~1 s sawtooth (33 RTTs of
    // 20-40 ms), that costs at most a few percent: within 3 %, and both
    // ≥ 95 % of the payload rate 20e6 · 1448/1500.
    let run_with = |pacing: bool| {
        run(json!({
            "duration": "30s", "warmup": "5s",
            "bottleneck": {"rate": "20Mbps", "buffer": "34pkt"},
            "flows": [{"cc": "reno", "rtt": "20ms"}],
            "tcp": {"pacing": pacing},
            "metrics": {"timeseries": false}
        }))
    };
    let (plain, paced) = (run_with(false), run_with(true));
    let (g0, g1) = (goodput(&plain, 0), goodput(&paced, 0));
    let payload_rate = 20e6 * MSS / 1500.0;
    let p99 = |r: &aqmlab_engine::Results| f64_of(&queue(r, "bottleneck")["sojourn_ms"]["p99"]);
    eprintln!(
        "steady state: goodput unpaced {:.3}, paced {:.3} Mbit/s (payload rate {:.3}); p99 sojourn {:.2} vs {:.2} ms",
        g0 / 1e6,
        g1 / 1e6,
        payload_rate / 1e6,
        p99(&plain),
        p99(&paced)
    );
    assert!((g1 - g0).abs() / g0 < 0.03, "paced {g1} vs unpaced {g0}");
    assert!(g0 > 0.95 * payload_rate && g1 > 0.95 * payload_rate);
}

// ---------------------------------------------------------------------------
// 3. Start, stop and size.

#[test]
fn a_one_segment_flow_completes_in_one_and_a_half_rtts_plus_serialisation() {
    // 20 ms RTT with no bottleneck delay: 5 ms sender access, 5 ms receiver
    // access each way. SYN (64 B) at 0: bottleneck at 5 ms, 51.2 µs on the
    // 10 Mbit/s wire, receiver at 10.0512 ms; SYN-ACK back at 20.0512 ms;
    // the 1000 B payload (1052 B packet) reaches the bottleneck at
    // 25.0512 ms, takes 841.6 µs, and arrives at 30.8928 ms. Exact.
    let r = run(json!({
        "duration": "1s",
        "bottleneck": {"rate": "10Mbps"},
        "flows": [{"cc": "cubic", "rtt": "20ms", "size": "1000B"}]
    }));
    let f = flow(&r, 0);
    let fct = f64_of(&f["fct_s"]);
    eprintln!("one-segment flow: fct {fct} s, bytes {}", f["bytes"]);
    assert_eq!(u64_of(&f["bytes"]), 1000);
    assert!((fct - 0.030_892_8).abs() < 1e-9, "fct {fct} s vs 30.8928 ms");
    assert!((f64_of(&f["goodput_bps"]) - 8000.0 / fct).abs() < 1e-6, "goodput = size·8/fct");
}

#[test]
fn a_finite_flow_delivers_exactly_its_size_at_the_link_rate() {
    // 2 MB = 1382 segments (the last one 312 B) plus 52 B of headers each:
    // 2,071,864 B on the wire, 1.6575 s at 10 Mbit/s. Add the handshake (one
    // RTT, 20 ms) and the last packet's receiver-side access delay (5 ms)
    // and the sender's (5 ms) for the lower bound 1.6875 s. IW10 fills the
    // 17-packet pipe in the second round and the 100 ms buffer keeps the
    // link busy through loss recovery, so at most one RTT more is lost.
    let r = run(json!({
        "duration": "5s",
        "bottleneck": {"rate": "10Mbps"},
        "flows": [{"cc": "reno", "rtt": "20ms", "size": "2MB"}]
    }));
    let f = flow(&r, 0);
    let fct = f64_of(&f["fct_s"]);
    let wire = 2e6 + 1382.0 * 52.0;
    let lower = wire * 8.0 / 10e6 + 0.020 + 0.010;
    eprintln!("2 MB flow: fct {fct:.4} s vs lower bound {lower:.4} s (+{:.1} ms), retransmits {}", (fct - lower) * 1e3, f["retransmits"]);
    assert_eq!(u64_of(&f["bytes"]), 2_000_000, "exactly the size, not a rounded-up segment count");
    assert_eq!(flow_col(&r, 0, "size_bytes"), 2e6);
    assert!(fct >= lower - 1e-9 && fct <= lower + 0.020, "fct {fct} vs [{lower}, {lower} + 1 RTT]");
    // Nothing arrives after completion: the last sample still shows the size.
    assert_eq!(*flow_series(&r, 0, "delivered_bytes", 0).last().unwrap(), 2e6);
}

/// 10 Mbit/s, 20 ms; a 30-segment receive window (> the 17-segment BDP)
/// keeps the link busy with no loss, so every packet sent is delivered.
fn lossless(flows: Value, duration: &str) -> aqmlab_engine::Results {
    run(json!({
        "duration": duration,
        "bottleneck": {"rate": "10Mbps"},
        "flows": flows,
        "tcp": {"rwnd": "43440B"},
        "metrics": {"interval": "10ms"}
    }))
}

#[test]
fn a_stopped_flow_sends_no_new_data_after_stop() {
    let r = lossless(json!([{"cc": "reno", "rtt": "20ms", "stop": "3s"}]), "6s");
    let f = flow(&r, 0);
    assert_eq!(u64_of(&f["retransmits"]), 0, "the scenario must be lossless");
    // Whatever the sender sent before stop arrives, and nothing else: bytes
    // delivered = new segments sent × MSS.
    let sent = flow_col(&r, 0, "segs_sent");
    let bytes = u64_of(&f["bytes"]) as f64;
    assert_eq!(bytes, sent * MSS, "delivered {bytes} vs {sent} segments sent");
    // The sender stops at 3 s (its own clock); its last packet reaches the
    // bottleneck 5 ms later and has left it after the ≤ 30-packet window
    // drains (36 ms): no arrivals or deliveries after 3.05 s.
    let arrived = queue_series(&r, "bottleneck", "arrived_pkts");
    let delivered: Vec<(u64, f64)> = {
        let t = r.table("flow_ts");
        let (ts, v) = (t.f64s("t_ns"), t.f64s("delivered_bytes"));
        (0..ts.len()).map(|i| (ts[i] as u64, v[i])).collect()
    };
    let (a_stop, a_after, a_end) = (at(&arrived, 2_990_000_000), at(&arrived, 3_050_000_000), at(&arrived, 6_000_000_000));
    let (d_after, d_end) = (at(&delivered, 3_050_000_000), at(&delivered, 6_000_000_000));
    eprintln!("stop at 3 s: arrivals {a_stop} (2.99 s), {a_after} (3.05 s), {a_end} (6 s); delivered {d_after} (3.05 s), {d_end} (6 s)");
    assert!(a_after > a_stop, "still sending just before stop");
    assert_eq!(a_after, a_end, "no packet reaches the bottleneck after stop");
    assert_eq!(d_after, d_end, "nothing delivered after the drain");
    // Goodput is over the active time (0..3 s) and counts everything sent in
    // it: the link's 9.65 Mbit/s of payload less the time before the first
    // data reach it and the short first round (≥ 25 + 8 ms), plus what is
    // still queued (≤ 13 packets above the 17-packet BDP, 15.6 ms) or in the
    // 5 ms sender access delay at stop (≤ 21 ms): within (0.98, 1].
    let g = goodput(&r, 0);
    let payload_rate = 10e6 * MSS / 1500.0;
    eprintln!("stopped flow goodput {:.3} Mbit/s vs {:.3}", g / 1e6, payload_rate / 1e6);
    assert!(g <= payload_rate && g > 0.98 * payload_rate, "goodput {g} over its 3 s");
    // The same run cut at 3 s has sent the same segments (± the last
    // instant's ACK-clocked pair).
    let cut = lossless(json!([{"cc": "reno", "rtt": "20ms"}]), "3s");
    let sent_cut = flow_col(&cut, 0, "segs_sent");
    eprintln!("segments sent: {sent} (stop at 3 s of 6 s), {sent_cut} (3 s run)");
    assert!((sent - sent_cut).abs() <= 2.0, "segments sent {sent} vs {sent_cut} in a 3 s run");
}

#[test]
fn a_late_flow_sends_nothing_before_start() {
    let r = lossless(json!([{"cc": "reno", "rtt": "20ms", "start": "1s"}]), "4s");
    let arrived = queue_series(&r, "bottleneck", "arrived_pkts");
    // The SYN leaves at 1 s and reaches the bottleneck 5 ms later.
    assert_eq!(at(&arrived, 1_000_000_000), 0.0, "a packet before start");
    assert_eq!(at(&arrived, 1_010_000_000), 1.0, "the SYN, alone, within the first RTT");
    let first_t = r.table("flow_ts").f64s("t_ns")[0];
    assert_eq!(first_t, 1e9, "the flow is sampled from its start");
    assert_eq!(flow_col(&r, 0, "start_ns"), 1e9);
    // The link can be busy only for 3 of the 4 s: utilization ≤ 0.75, less
    // the handshake and the first, 10-packet round (< 2 RTTs = 40 ms, 1 %
    // of 4 s). Goodput is over the 3 active seconds: the payload rate less
    // those 40 ms and the ≤ 30 segments (36 ms) still in flight at the end:
    // ≥ (3 − 0.076)/3 = 0.975 of it.
    let util = f64_of(&queue(&r, "bottleneck")["utilization"]);
    let g = goodput(&r, 0);
    let payload_rate = 10e6 * MSS / 1500.0;
    eprintln!("late flow: utilization {util:.4} (0.75), goodput {:.3} Mbit/s vs {:.3} ({:.4})", g / 1e6, payload_rate / 1e6, g / payload_rate);
    assert!(util <= 0.75 && util > 0.74, "utilization {util}");
    assert!(g <= payload_rate && g > 0.975 * payload_rate, "goodput {g}");
}

// ---------------------------------------------------------------------------
// The event-saving shortcuts with the features above.

#[test]
fn lookahead_gives_identical_results_with_a_reverse_queue_and_pacing() {
    // The receiver runs ahead of real time when its replies start with a
    // pure delay; here they then meet a queue (the reverse link), and paced
    // senders wake on their own timers. Incommensurate rates and delays
    // keep events of different components from coinciding to the
    // nanosecond (see tests/lookahead.rs), so both schedules must agree.
    let s = json!({
        "duration": "6s", "warmup": "1s",
        "bottleneck": {"rate": "20000017bps", "delay": "1000003ns", "buffer": "60pkt", "aqm": "codel",
                       "params": {"ecn": true},
                       "reverse": {"rate": "300007bps", "buffer": "20pkt"}},
        "flows": [
            {"cc": "cubic", "rtt": "20000011ns", "start_jitter": "7000003ns", "count": 2},
            {"cc": "reno", "rtt": "33000007ns", "ecn": "classic", "stop": "4000000019ns"},
            {"cc": "dctcp", "rtt": "12000029ns", "start": "500000021ns", "size": "3000017B"}
        ],
        "tcp": {"pacing": true},
        "metrics": {"interval": "50ms"}
    });
    let fast = run(s.clone());
    let mut s2 = s;
    s2["engine"] = json!({"lookahead": false});
    let slow = run(s2);
    for name in ["flows", "queues", "sojourn_hist", "flow_ts", "queue_ts"] {
        assert_eq!(format!("{:?}", fast.table(name)), format!("{:?}", slow.table(name)), "table {name} differs");
    }
    let rev = queue(&fast, "bottleneck_rev");
    eprintln!("lookahead with reverse queue: ACK drops {}, events {} vs {}", rev["drops"], fast.summary()["perf"]["events"], slow.summary()["perf"]["events"]);
    assert!(u64_of(&rev["arrivals"]) > 0);
}
