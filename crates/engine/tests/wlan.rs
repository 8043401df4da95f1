//! The shared half-duplex WLAN medium (docs/algorithms/wlan.md) against its
//! laws: a frame of `s` bytes occupies the medium for
//! overhead + (s + header)·8 / rate, and both directions share that time.

mod common;
use common::{queue, run};
use serde_json::{json, Value};

const OVERHEAD_S: f64 = 165.5e-6; // 802.11g: DIFS + mean backoff + PLCP + signal ext. + SIFS + ACK
const HEADER_BYTES: f64 = 36.0;

fn airtime_s(size_bytes: f64, rate_bps: f64) -> f64 {
    OVERHEAD_S + (size_bytes + HEADER_BYTES) * 8.0 / rate_bps
}

/// server --(pure delay)-- ap ==wlan== sta.
fn wlan_topology(rate: &str, schedule: Value, aqm: &str) -> Value {
    json!({"links": [
        {"from": "srv", "to": "ap", "delay": "5ms"},
        {"from": "ap", "to": "sta", "rate": rate, "delay": "0ms", "aqm": aqm, "buffer": "1000pkt",
         "wlan": {}, "rate_schedule": schedule}
    ]})
}

fn departures(r: &aqmlab_engine::Results, name: &str) -> f64 {
    queue(r, name)["departures"].as_f64().unwrap()
}

fn within(measured: f64, predicted: f64, tol: f64, what: &str) {
    let err = (measured / predicted - 1.0).abs();
    eprintln!("{what}: measured {measured:.1}, predicted {predicted:.1}");
    assert!(err <= tol, "{what}: measured {measured:.1}, predicted {predicted:.1} ({:.2} % off)", err * 100.0);
}

#[test]
fn one_saturating_sender_gets_payload_over_payload_plus_overhead() {
    let s = json!({
        "duration": "6s", "warmup": "1s", "seed": 1,
        "topology": wlan_topology("54Mbps", json!([]), "fifo"),
        "flows": [{"cc": "udp", "src": "srv", "dst": "sta", "rate": "60Mbps", "packet_size": "1500B"}]
    });
    let r = run(s);
    let frames_per_s = departures(&r, "ap->sta") / 5.0;
    within(frames_per_s, 1.0 / airtime_s(1500.0, 54e6), 0.01, "frames/s, one direction saturated");
}

#[test]
fn two_saturated_directions_share_the_medium_frame_by_frame() {
    let s = json!({
        "duration": "6s", "warmup": "1s", "seed": 1,
        "topology": wlan_topology("54Mbps", json!([]), "fifo"),
        "flows": [
            {"cc": "udp", "src": "srv", "dst": "sta", "rate": "60Mbps", "packet_size": "1500B"},
            {"cc": "udp", "src": "sta", "dst": "srv", "rate": "60Mbps", "packet_size": "500B"}
        ]
    });
    let r = run(s);
    let (down, up) = (departures(&r, "ap->sta") / 5.0, departures(&r, "ap->sta:rev") / 5.0);
    // Equal transmit opportunities: as many frames each way, and together they fill the air.
    within(down, up, 0.01, "downlink vs uplink frames/s");
    let pair_s = airtime_s(1500.0, 54e6) + airtime_s(500.0, 54e6);
    within(down, 1.0 / pair_s, 0.01, "downlink frames/s with a saturated uplink");
}

#[test]
fn tcp_downlink_goodput_falls_by_the_airtime_of_its_acks() {
    // No loss (the receive window caps the flow below the buffer), so every
    // ACK is 52 bytes; the medium is never idle once the flow is up.
    let s = json!({
        "duration": "20s", "warmup": "5s", "seed": 3,
        "topology": wlan_topology("54Mbps", json!([]), "fifo"),
        "tcp": {"rwnd": "400KB"},
        "flows": [{"cc": "reno", "src": "srv", "dst": "sta"}]
    });
    let r = run(s);
    let (data, acks) = (departures(&r, "ap->sta"), departures(&r, "ap->sta:rev"));
    assert!(acks > 0.3 * data, "the receiver ACKs at least every few segments: {acks} ACKs for {data} segments");
    let busy_s = data * airtime_s(1500.0, 54e6) + acks * airtime_s(52.0, 54e6);
    within(busy_s, 15.0, 0.01, "airtime of data + ACK frames over the 15 s window");
    // The goodput this leaves: data frames in the time the ACKs do not take.
    let predicted_bps = (15.0 - acks * airtime_s(52.0, 54e6)) / airtime_s(1500.0, 54e6) * 1448.0 * 8.0 / 15.0;
    let goodput = r.summary()["flows"][0]["goodput_bps"].as_f64().unwrap();
    within(goodput, predicted_bps, 0.01, "TCP goodput");
    assert!(goodput < 0.95 * 1448.0 * 8.0 / airtime_s(1500.0, 54e6), "ACKs cost airtime: {goodput}");
}

#[test]
fn a_rate_step_in_the_trace_changes_throughput_at_the_step() {
    let run_window = |step_at: &str, warmup: &str, duration: &str| {
        let s = json!({
            "duration": duration, "warmup": warmup, "seed": 1,
            "topology": wlan_topology("54Mbps", json!([{"at": step_at, "rate": "24Mbps"}]), "fifo"),
            "flows": [{"cc": "udp", "src": "srv", "dst": "sta", "rate": "60Mbps", "packet_size": "1500B"}]
        });
        departures(&run(s), "ap->sta")
    };
    // Before the step (window 1..4 s of a run that steps at 4 s) and after it (4..8 s).
    let before = run_window("4s", "1s", "4s") / 3.0;
    let after = run_window("4s", "4s", "8s") / 4.0;
    within(before, 1.0 / airtime_s(1500.0, 54e6), 0.01, "frames/s before the step");
    within(after, 1.0 / airtime_s(1500.0, 24e6), 0.01, "frames/s after the step");
}

#[test]
fn codel_on_the_ap_queue_keeps_its_target_on_a_wlan() {
    // A discipline that drops at dequeue still hands the medium on.
    let s = json!({
        "duration": "20s", "warmup": "5s", "seed": 2,
        "topology": wlan_topology("54Mbps", json!([]), "codel"),
        "flows": [{"cc": "cubic", "src": "srv", "dst": "sta", "count": 4}]
    });
    let r = run(s);
    let q = queue(&r, "ap->sta");
    let p50 = q["sojourn_ms"]["p50"].as_f64().unwrap();
    assert!(p50 < 20.0, "CoDel's median sojourn on the AP queue: {p50} ms");
    assert!(q["drops"].as_u64().unwrap() > 0);
}

#[test]
fn a_wlan_link_must_be_duplex() {
    let s = json!({
        "duration": "1s",
        "topology": {"links": [{"from": "a", "to": "b", "rate": "54Mbps", "duplex": false, "wlan": {}}]},
        "flows": [{"cc": "udp", "src": "a", "dst": "b", "rate": "1Mbps"}]
    });
    let e = aqmlab_engine::run_json(&s.to_string(), |_| true).err().expect("rejected");
    assert!(e.contains("topology.links[0].duplex"), "{e}");
}

#[test]
fn stations_share_the_medium_frame_by_frame_with_the_access_point() {
    // Three saturated stations behind one queue against the access point:
    // three uplink frames per downlink frame, together filling the air.
    let mut topo = wlan_topology("54Mbps", json!([]), "fifo");
    topo["links"][1]["wlan"] = json!({"stations": 3});
    let s = json!({
        "duration": "6s", "warmup": "1s", "seed": 1,
        "topology": topo,
        "flows": [
            {"cc": "udp", "src": "srv", "dst": "sta", "rate": "60Mbps", "packet_size": "1500B"},
            {"cc": "udp", "src": "sta", "dst": "srv", "rate": "60Mbps", "packet_size": "1500B"}
        ]
    });
    let r = run(s);
    let (down, up) = (departures(&r, "ap->sta") / 5.0, departures(&r, "ap->sta:rev") / 5.0);
    within(up, 3.0 * down, 0.01, "uplink vs 3 × downlink frames/s");
    within(down + up, 1.0 / airtime_s(1500.0, 54e6), 0.01, "all frames/s");
}

#[test]
fn the_engine_shortcuts_do_not_change_a_wlan_run() {
    // Receiver lookahead and the source clock shift stay on around a medium
    // (its own queues never depart on arrival); results must not move.
    let mut topo = wlan_topology("54000007bps", json!([{"at": "3000000011ns", "rate": "24000011bps"}]), "codel");
    topo["links"][0]["delay"] = json!("5000011ns");
    topo["links"][1]["wlan"] = json!({"stations": 2});
    let s = json!({
        "duration": "8s", "warmup": "1s", "seed": 4,
        "topology": topo,
        "flows": [
            {"cc": "reno", "src": "srv", "dst": "sta", "count": 2, "start_jitter": "7ms"},
            {"cc": "cubic", "src": "sta", "dst": "srv", "count": 2, "start_jitter": "11ms"}
        ],
        "metrics": {"interval": "10ms"}
    });
    let fast = run(s.clone());
    let mut slow_s = s;
    slow_s["engine"] = json!({"lookahead": false});
    let slow = run(slow_s);
    let strip = |mut v: Value| {
        v["perf"] = json!(null);
        v
    };
    assert_eq!(strip(fast.summary()), strip(slow.summary()));
}
