//! Routes on a graph, checked when the world is built (before anything
//! runs): a TCP flow's data path must cross a link with a rate, and every
//! route a flow group or a workload will use must exist.
//!
//! Without a rated link nothing queues or drops: each window arrives whole a
//! base RTT later, slow start doubles it every RTT, and the process used to
//! abort with "memory allocation of 2147483648 bytes failed" (half a second
//! of simulated time). A workload's flows are built mid-run, where a missing
//! route used to panic ("workload flow builds").

mod common;
use aqmlab_engine::{run_json, scenario, World};
use common::*;
use serde_json::{json, Value};

/// The graph of the lookahead tests: only r1 -> r2 (and its reverse) has a rate.
fn graph(flows: Value) -> Value {
    json!({"duration": "500ms", "seed": 5, "topology": two_router_links(0.01), "flows": flows})
}

/// The error building the world gives (the scenario itself parses), the
/// same as the route checks alone give (what validation runs).
fn build_error(v: &Value) -> String {
    let s = scenario::parse(&v.to_string()).expect("the scenario parses");
    let e = match World::new(&s) {
        Ok(_) => panic!("the world was built"),
        Err(e) => e,
    };
    assert_eq!(World::check_routes(&s).err().as_ref(), Some(&e));
    e
}

#[test]
fn a_tcp_flow_without_a_rated_link_on_its_data_path_is_a_build_error_naming_it() {
    // /work/notes/perf30/lr_500ms.json: flow 1 (b -> a) crosses b->r1 and a->r1's reverse, both pure delays.
    let v = graph(json!([
        {"cc": "cubic", "src": "c", "dst": "a"},
        {"cc": "reno", "src": "b", "dst": "a", "start_jitter": "9ms"},
        {"cc": "dctcp", "src": "c", "dst": "b"}
    ]));
    let expected = "flows[1]: no link on the path from 'b' to 'a' (b->r1, a->r1:rev) has a rate; a TCP flow needs at \
                    least one rate-limited link on its data path to bound its window (give one of these links a rate)";
    assert_eq!(build_error(&v), expected);
    assert_eq!(run_json(&v.to_string(), |_| true).err().as_deref(), Some(expected));
    // A finite flow too: its window is bounded only by its size.
    let v = graph(json!([{"cc": "bbr2", "src": "a", "dst": "b", "size": "1GB"}]));
    assert!(build_error(&v).starts_with("flows[0]: no link on the path from 'a' to 'b' (a->r1, b->r1:rev) has a rate;"));
}

#[test]
fn a_workload_without_a_rated_link_or_without_a_route_is_rejected_before_the_run() {
    let mut v = graph(json!([{"cc": "reno", "src": "a", "dst": "c"}]));
    v["workloads"] = json!([{"kind": "web", "rate": "100/s", "cc": "cubic", "src": "b", "dst": "a",
                             "size": {"dist": "pareto", "min": "10KB", "max": "1GB", "shape": 1.2}}]);
    assert!(build_error(&v).starts_with("workloads[0]: no link on the path from 'b' to 'a' (b->r1, a->r1:rev) has a rate;"));
    // One-way links: nothing leaves b, so b's workload has no route at all.
    let v = json!({
        "duration": "300ms",
        "topology": {"links": [
            {"from": "a", "to": "r", "rate": "10Mbps", "delay": "2ms"},
            {"from": "r", "to": "b", "rate": "10Mbps", "delay": "2ms", "duplex": false}
        ]},
        "flows": [{"cc": "reno", "src": "a", "dst": "r"}],
        "workloads": [{"kind": "web", "rate": "100/s", "cc": "reno", "src": "b", "dst": "a", "size": {"dist": "fixed", "mean": "10KB"}}]
    });
    assert_eq!(build_error(&v), "workloads[0]: no route from 'b' to 'a'");
}

#[test]
fn a_pure_delay_ack_path_and_a_rate_based_flow_without_a_rated_link_still_run() {
    // r1 -> r2 is one-way; the ACKs return over a pure-delay link, as on a
    // dumbbell without `reverse`. The data path's queue bounds the window.
    let v = json!({
        "duration": "3s", "warmup": "1s",
        "topology": {"links": [
            {"from": "a", "to": "r1", "delay": "2ms"},
            {"from": "r1", "to": "r2", "rate": "10Mbps", "delay": "4ms", "buffer": "50pkt", "duplex": false},
            {"from": "r2", "to": "r1", "delay": "4ms", "duplex": false},
            {"from": "r2", "to": "c", "delay": "2ms"}
        ]},
        "flows": [{"cc": "cubic", "src": "a", "dst": "c"}]
    });
    World::check_routes(&scenario::parse(&v.to_string()).unwrap()).unwrap();
    let r = run(v);
    let g = goodput(&r, 0);
    // The link's payload rate, nearly: one Cubic flow with a 50-packet buffer
    // keeps it nearly full; a hole filled just after the warm-up may count
    // bytes that crossed before it (the 1 % above).
    let payload_bps = 10e6 * 1448.0 / 1500.0;
    assert!(g > 0.8 * payload_bps && g <= 1.01 * payload_bps, "goodput {g}");
    // A constant-rate source paces itself: it needs no rated link (b -> a has none).
    let r = run(graph(json!([{"cc": "udp", "src": "b", "dst": "a", "rate": "5Mbps"}])));
    let g = goodput(&r, 0);
    assert!(g > 0.9 * 5e6 && g <= 5e6, "udp goodput {g}");
}

#[test]
fn a_graph_flow_from_a_node_to_itself_is_rejected_when_validated() {
    let v = graph(json!([{"cc": "reno", "src": "a", "dst": "a"}]));
    assert_eq!(scenario::parse(&v.to_string()).unwrap_err(), "flows[0].dst: 'a' is src too; a flow needs two nodes");
}
