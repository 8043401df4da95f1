//! System tests of the AQMs on a dumbbell (issue: the AQM family to specification).
mod common;
use common::*;
use serde_json::{json, Value};

fn four_cubic(aqm: &str, params: Value) -> aqmlab_engine::Results {
    run(json!({
        "duration": "60s", "warmup": "20s", "seed": 4,
        "bottleneck": {"rate": "10Mbps", "buffer": "1000pkt", "aqm": aqm, "params": params},
        "flows": [{"cc": "cubic", "rtt": "100ms", "count": 4, "start_jitter": "100ms"}],
        "metrics": {"timeseries": false}
    }))
}

fn sojourn(q: &Value, stat: &str) -> f64 {
    q["sojourn_ms"][stat].as_f64().unwrap()
}

#[test]
fn four_cubic_flows_hold_each_aqm_near_its_delay_target() {
    // (aqm, params, sub-queue to read, target ms, tolerated band ms)
    let cases = [
        ("codel", json!({}), None, 5.0, (2.0, 10.0)),
        ("pie", json!({}), None, 15.0, (8.0, 25.0)),
        ("dualpi2", json!({}), Some("classic"), 15.0, (8.0, 25.0)),
    ];
    for (aqm, params, sub, target, (lo, hi)) in cases {
        let r = four_cubic(aqm, params);
        let q = queue(&r, "bottleneck");
        let util = q["utilization"].as_f64().unwrap();
        let stats = match sub {
            Some(s) => &q["subqueues"][s],
            None => &q,
        };
        let mean = sojourn(stats, "mean");
        eprintln!("{aqm}: mean sojourn {mean:.2} ms (target {target}), utilization {util:.3}");
        assert!(util > 0.90, "{aqm}: utilization {util}");
        assert!((lo..=hi).contains(&mean), "{aqm}: mean sojourn {mean:.2} ms, target {target} ms");
    }
}

fn pair(aqm: &str, params: Value) -> aqmlab_engine::Results {
    run(json!({
        "duration": "60s", "warmup": "15s", "seed": 2,
        "bottleneck": {"rate": "40Mbps", "buffer": "200ms", "aqm": aqm, "params": params},
        "flows": [
            {"cc": "dctcp", "rtt": "10ms", "ecn": "l4s"},
            {"cc": "cubic", "rtt": "10ms", "ecn": "classic"}
        ],
        "metrics": {"timeseries": false}
    }))
}

#[test]
fn dualpi2_gives_l4s_sub_millisecond_delay_and_near_equal_rates() {
    let r = pair("dualpi2", json!({}));
    let q = queue(&r, "bottleneck");
    let l4s = &q["subqueues"]["l4s"];
    let (p50, p99) = (sojourn(l4s, "p50"), sojourn(l4s, "p99"));
    let ratio = r.summary()["fairness"]["l4s_classic_ratio"].as_f64().unwrap();
    eprintln!("dualpi2: L4S p50 {p50:.3} ms p99 {p99:.3} ms, DCTCP:CUBIC {ratio:.2}, classic mean {:.2} ms", sojourn(&q["subqueues"]["classic"], "mean"));
    assert!(p50 < 1.0, "L4S median sojourn {p50} ms");
    assert!(p99 < 2.0, "L4S p99 sojourn {p99} ms");
    assert_eq!(l4s["drops"].as_u64().unwrap(), 0, "L4S drops");
    assert!((0.5..=2.0).contains(&ratio), "DCTCP:CUBIC goodput ratio {ratio}");
}

#[test]
fn single_queue_pie_and_red_let_dctcp_starve_cubic() {
    // Both with ECN on, as in the seed's PIE*/RED* runs: one probability for
    // both, so DCTCP (W ≈ 2/p) far out-grows CUBIC (W ∝ p^-3/4).
    for aqm in ["pie", "red"] {
        let r = pair(aqm, json!({"ecn": true}));
        let ratio = r.summary()["fairness"]["l4s_classic_ratio"].as_f64().unwrap();
        eprintln!("{aqm}: DCTCP:CUBIC {ratio:.1}");
        assert!(ratio > 5.0, "{aqm}: DCTCP:CUBIC goodput ratio {ratio}");
    }
}
