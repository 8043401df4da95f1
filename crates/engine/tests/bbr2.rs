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
fn two_bbr2_flows_through_a_shallow_buffer_both_meet_losses_and_fill_the_link() {
    // A shallow buffer (0.6 BDP): both flows' probes run into losses, which
    // is what sets inflight_hi and cuts bw_lo/inflight_lo. Whether that
    // equalises the flows is judged over seeds by the validation row
    // bbr2-convergence (docs/validation.md); one seed's Jain index here
    // moved from 0.99 to 0.93 when the loss round started at the first loss
    // as tcp_bbr2.c does, so it is printed, not asserted.
    let r = run(json!({
        "duration": "60s", "warmup": "20s", "seed": 3,
        "bottleneck": {"rate": "20Mbps", "buffer": "30pkt"},
        "flows": [{"cc": "bbr2", "rtt": "30ms", "count": 2, "start_jitter": "500ms"}],
        "metrics": {"timeseries": false}
    }));
    let j = r.summary()["fairness"]["jain"].as_f64().unwrap();
    let util = queue(&r, "bottleneck")["utilization"].as_f64().unwrap();
    let flows = r.summary()["flows"].as_array().unwrap().clone();
    eprintln!("two bbr2 flows: Jain {j:.3}, utilization {util:.3}");
    for f in &flows {
        assert!(f["retransmits"].as_u64().unwrap() > 0, "flow {} saw no loss", f["id"]);
        assert!(f["cc_state"]["inflight_hi"].as_f64().is_some_and(|h| h > 0.0), "inflight_hi unset: {}", f["cc_state"]);
    }
    assert!(util > 0.9, "utilization {util}");
}

#[test]
fn bbr2_with_l4s_ecn_keeps_the_dualpi2_l4s_queue_short() {
    let r = run(json!({
        "duration": "30s", "warmup": "10s",
        "bottleneck": {"rate": "100Mbps", "buffer": "250ms", "aqm": "dualpi2"},
        // A 5 ms base RTT measures just above upstream's ecn_max_rtt (5 ms),
        // which would leave the ECN logic off: 0 = at any RTT.
        "flows": [{"cc": "bbr2", "rtt": "5ms", "ecn": "l4s", "params": {"ecn": true, "ecn_max_rtt": "0s"}}],
        "metrics": {"timeseries": false}
    }));
    assert_eq!(r.summary()["flows"][0]["cc_state"]["ecn_eligible"].as_f64(), Some(1.0), "ECN logic off");
    let q = queue(&r, "bottleneck");
    let l4s = &q["subqueues"]["l4s"];
    let p99 = l4s["sojourn_ms"]["p99"].as_f64().unwrap();
    let util = q["utilization"].as_f64().unwrap();
    eprintln!("bbr2 over dualpi2 (L4S): p99 {p99:.2} ms, utilization {util:.3}, marks {}", l4s["marks"]);
    assert!(l4s["marks"].as_u64().unwrap() > 0);
    assert!(p99 < 5.0, "L4S p99 {p99} ms");
    assert!(util > 0.85, "utilization {util}");
}
