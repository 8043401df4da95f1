mod common;
use common::*;
use serde_json::json;

#[test]
fn goodput_agrees_with_link_utilization_for_a_single_flow() {
    // The receiver may run ahead of real time (pure-delay reply path); the
    // bytes it reports for the measurement window must still be those that
    // arrived in it: goodput = utilization × rate × payload/packet.
    let r = run(json!({
        "duration": "20s", "warmup": "5s",
        "bottleneck": {"rate": "10Mbps", "buffer": "40pkt"},
        "flows": [{"cc": "reno", "rtt": "100ms"}]
    }));
    let util = queue(&r, "bottleneck")["utilization"].as_f64().unwrap();
    let expect = util * 10e6 * 1448.0 / 1500.0;
    let g = goodput(&r, 0);
    assert!(
        (g - expect).abs() / expect < 0.02,
        "goodput {g} vs {expect}"
    );
    // The sampled series ends at the reported total.
    let delivered = flow_series(&r, 0, "delivered_bytes", 0);
    assert!(delivered.windows(2).all(|w| w[1] >= w[0]));
    assert_eq!(
        *delivered.last().unwrap() as u64,
        flow(&r, 0)["bytes"].as_u64().unwrap()
    );
}

/// The per-flow memory budget (at most 2 kB per flow beyond the packets in
/// flight) is mostly the flow record: state that only some flows use
/// (BBRv2's controller, its delivery-rate sampler) lives behind a box so it
/// does not size every record (docs/performance.md, "Scaling").
#[test]
fn a_flow_record_stays_under_one_kilobyte() {
    let bytes = std::mem::size_of::<aqmlab_engine::world::Flow>();
    assert!(
        bytes <= 1000,
        "a flow record is {bytes} bytes (was 936 when this test was written)"
    );
}
