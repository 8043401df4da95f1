//! BBRv2 system tests: the model's claims (full utilization with a small
//! queue, min-RTT tracking, fair sharing) on a dumbbell.
mod common;
use common::*;
use serde_json::json;

#[test]
fn bbr2_fills_the_pipe_with_a_small_queue_where_cubic_fills_the_buffer() {
    let scenario = |cc: &str| {
        run(json!({
            "duration": "30s", "warmup": "10s",
            "bottleneck": {"rate": "20Mbps", "buffer": "500pkt"},
            "flows": [{"cc": cc, "rtt": "40ms"}],
            "metrics": {"interval": "100ms"}
        }))
    };
    let (b, c) = (scenario("bbr2"), scenario("cubic"));
    let (qb, qc) = (queue(&b, "bottleneck"), queue(&c, "bottleneck"));
    let util = qb["utilization"].as_f64().unwrap();
    let (db, dc) = (qb["sojourn_ms"]["mean"].as_f64().unwrap(), qc["sojourn_ms"]["mean"].as_f64().unwrap());
    eprintln!("bbr2: utilization {util:.3}, mean sojourn {db:.1} ms; cubic: mean sojourn {dc:.1} ms");
    assert!(util > 0.9, "utilization {util}");
    // BBR bounds inflight near 1-2 BDP (queue ≤ 1 BDP = 40 ms); CUBIC fills 500 packets (300 ms).
    assert!(db < 40.0, "BBRv2 mean queueing delay {db} ms");
    assert!(dc > 3.0 * db, "CUBIC {dc} ms vs BBRv2 {db} ms");
}

#[test]
fn bbr2_tracks_the_path_min_rtt_through_probe_rtt() {
    let r = run(json!({
        "duration": "20s",
        "bottleneck": {"rate": "10Mbps", "buffer": "200pkt"},
        "flows": [{"cc": "bbr2", "rtt": "50ms"}],
        "metrics": {"interval": "500ms"}
    }));
    let t = r.table("probes");
    let (probe, value) = (t.strs("probe"), t.f64s("value"));
    let min_rtt: Vec<f64> = (0..probe.len()).filter(|&i| probe[i] == "min_rtt_ms").map(|i| value[i]).collect();
    let last = *min_rtt.last().unwrap();
    eprintln!("bbr2 min_rtt estimate {last:.2} ms (base 50 ms)");
    // Base RTT plus at most a few serialisation times (1.2 ms each at 10 Mbit/s).
    assert!((50.0..55.0).contains(&last), "min_rtt {last} ms");
}

#[test]
fn two_bbr2_flows_share_fairly_when_losses_bound_inflight() {
    // A shallow buffer (0.6 BDP): BBRv2's loss response (inflight_hi, bw_lo)
    // is what equalises flows. In a deep buffer without loss or ECN both flows
    // sit cwnd-limited at 2·BDP of their own estimates and may keep an unequal
    // split (docs/algorithms/tcp.md).
    let r = run(json!({
        "duration": "60s", "warmup": "20s", "seed": 3,
        "bottleneck": {"rate": "20Mbps", "buffer": "30pkt"},
        "flows": [{"cc": "bbr2", "rtt": "30ms", "count": 2, "start_jitter": "500ms"}],
        "metrics": {"timeseries": false}
    }));
    let j = r.summary()["fairness"]["jain"].as_f64().unwrap();
    let util = queue(&r, "bottleneck")["utilization"].as_f64().unwrap();
    eprintln!("two bbr2 flows: Jain {j:.3}, utilization {util:.3}");
    assert!(j > 0.95, "Jain {j}");
    assert!(util > 0.9, "utilization {util}");
}

#[test]
fn bbr2_with_l4s_ecn_keeps_the_dualpi2_l4s_queue_short() {
    let r = run(json!({
        "duration": "30s", "warmup": "10s",
        "bottleneck": {"rate": "100Mbps", "buffer": "250ms", "aqm": "dualpi2"},
        "flows": [{"cc": "bbr2", "rtt": "5ms", "ecn": "l4s", "params": {"ecn": true}}],
        "metrics": {"timeseries": false}
    }));
    let q = queue(&r, "bottleneck");
    let l4s = &q["subqueues"]["l4s"];
    let p99 = l4s["sojourn_ms"]["p99"].as_f64().unwrap();
    let util = q["utilization"].as_f64().unwrap();
    eprintln!("bbr2 over dualpi2 (L4S): p99 {p99:.2} ms, utilization {util:.3}, marks {}", l4s["marks"]);
    assert!(l4s["marks"].as_u64().unwrap() > 0);
    assert!(p99 < 5.0, "L4S p99 {p99} ms");
    assert!(util > 0.85, "utilization {util}");
}
