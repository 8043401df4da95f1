// Debug helper: run a scenario file, print perf.
fn main() {
    let s = std::fs::read_to_string(std::env::args().nth(1).unwrap()).unwrap();
    let r = aqmlab_engine::run_json(&s, |_| true).unwrap();
    let p = &r.summary["perf"];
    let pk = p["bottleneck_packets"].as_f64().unwrap();
    let w = p["wall_s"].as_f64().unwrap();
    println!("pkts {} events {} wall {:.3}s -> {:.2} Mpkt/s, {:.1} events/pkt util {}", pk, p["events"], w, pk / w / 1e6, p["events"].as_f64().unwrap() / pk, r.summary["queues"][0]["utilization"]);
}
