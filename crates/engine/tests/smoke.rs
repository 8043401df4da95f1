mod common;
use common::*;
use serde_json::json;

#[test]
fn one_reno_flow_fills_a_fifo_of_one_bdp() {
    // 10 Mbit/s, 20 ms: BDP = 25 kB = about 17 packets.
    let r = run(json!({
        "duration": "20s", "warmup": "5s",
        "bottleneck": {"rate": "10Mbps", "buffer": "17pkt"},
        "flows": [{"cc": "reno", "rtt": "20ms"}]
    }));
    let q = queue(&r, "bottleneck");
    eprintln!("{}", serde_json::to_string_pretty(&r.summary).unwrap());
    assert!(q["utilization"].as_f64().unwrap() > 0.95);
}
