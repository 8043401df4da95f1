// Profiling helper: run a scenario file and print throughput and events by
// kind (`cargo run --release --example runjson -- scenario.json`).
fn main() {
    let s = std::fs::read_to_string(std::env::args().nth(1).expect("scenario.json")).unwrap();
    let r = aqmlab_engine::run_json(&s, |_| true).unwrap();
    let v = r.summary();
    let p = &v["perf"];
    let pk = p["bottleneck_packets"].as_f64().unwrap();
    let w = p["wall_s"].as_f64().unwrap();
    println!("pkts {pk} events {} wall {w:.3}s -> {:.2} Mpkt/s; events/pkt {}", p["events"], pk / w / 1e6, p["events_by_kind"]);
}
