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
    assert!((g - expect).abs() / expect < 0.02, "goodput {g} vs {expect}");
    // The sampled series ends at the reported total.
    let delivered = flow_series(&r, 0, "delivered_bytes", 0);
    assert!(delivered.windows(2).all(|w| w[1] >= w[0]));
    assert_eq!(*delivered.last().unwrap() as u64, flow(&r, 0)["bytes"].as_u64().unwrap());
}

/// A packet the AQM marks and its link's random marking marks again is one
/// marked packet: every departing packet here is CE once (`mark = 1`), so
/// the queue's marks equal its departures, the reasons share them out, and
/// the flow's marks equal the queue's.
#[test]
fn a_packet_marked_twice_in_one_queue_counts_once() {
    let r = run(json!({
        "duration": "2s",
        "bottleneck": {"rate": "10Mbps", "buffer": "100pkt", "aqm": "dualpi2", "mark": 1.0},
        "flows": [{"cc": "dctcp", "rtt": "20ms"}],
        "metrics": {"timeseries": false}
    }));
    let q = queue(&r, "bottleneck");
    let (marks, departures) = (q["marks"].as_u64().unwrap(), q["departures"].as_u64().unwrap());
    let by_reason: u64 = q["marks_by_reason"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
    assert!(q["marks_by_reason"]["step"].as_u64().unwrap() > 0, "the AQM marked too: {q}");
    assert_eq!(by_reason, marks);
    // Data departures only: the pure ACKs of the reverse path use another queue.
    assert!(marks <= departures && marks + 5 >= departures, "{marks} marks for {departures} departures");
    assert!(q["mark_rate"].as_f64().unwrap() <= 1.0);
    assert_eq!(flow(&r, 0)["marks"].as_u64().unwrap(), marks);
}

/// The per-flow memory budget (at most 2 kB per flow beyond the packets in
/// flight) is mostly the flow record: state that only some flows use
/// (BBRv2's controller, its delivery-rate sampler) lives behind a box so it
/// does not size every record (docs/performance.md, "Scaling").
#[test]
fn a_flow_record_stays_under_one_kilobyte() {
    let bytes = std::mem::size_of::<aqmlab_engine::world::Flow>();
    assert!(bytes <= 1000, "a flow record is {bytes} bytes (936 of fields padded to 960 when this test was last touched)");
}

/// With more than 1 MiB of flow records the engine prefetches the state of
/// the packets behind each delay line's head (`sim/prefetch.rs`, its one
/// `unsafe` block). This runs that path: 1 500 flows starting within 50 ms
/// must still fill a 10 Gbit/s link, most of them must get data through
/// (the rest lose their SYNs in the start-up burst and back off, as TCP
/// does), and a second run must give the identical summary.
#[test]
fn a_flow_table_larger_than_l2_is_prefetched_and_fills_the_link() {
    let flows = 1500;
    assert!(
        flows * std::mem::size_of::<aqmlab_engine::world::Flow>() > 1 << 20,
        "the table must exceed the prefetch threshold"
    );
    let s = json!({
        "duration": "1s", "seed": 5,
        "bottleneck": {"rate": "10Gbps", "buffer": "3000pkt", "aqm": "step",
                       "params": {"threshold": "200pkt"}},
        "flows": [
            {"cc": "dctcp", "rtt": "2ms", "count": 1000, "start_jitter": "50ms"},
            {"cc": "cubic", "rtt": "3ms", "count": 500, "ecn": "off", "start_jitter": "50ms"}
        ]
    });
    let a = run(s.clone());
    let util = queue(&a, "bottleneck")["utilization"].as_f64().unwrap();
    assert!(util > 0.95, "utilization {util}");
    let moved = a
        .table("flows")
        .f64s("bytes")
        .iter()
        .filter(|&&b| b > 0.0)
        .count();
    assert!(moved >= 1200, "{moved} of {flows} flows delivered data");
    let strip = |mut v: serde_json::Value| {
        v["perf"] = json!(null);
        v
    };
    assert_eq!(strip(a.summary()), strip(run(s).summary()));
}
