// Debug helper: run a scenario file, print perf.
#[derive(serde::Deserialize)]
struct Doc {
    perf: Perf,
}
#[derive(serde::Deserialize)]
struct Perf {
    bottleneck_packets: f64,
    events: f64,
    wall_s: f64,
}
fn main() {
    let s = std::fs::read_to_string(std::env::args().nth(1).unwrap()).unwrap();
    let r = aqmlab_engine::run_json(&s, |_| true).unwrap();
    let d: Doc = serde_json::from_str(&r.summary_json).unwrap();
    let p = d.perf;
    println!("pkts {} events {} wall {:.3}s -> {:.2} Mpkt/s, {:.2} events/pkt", p.bottleneck_packets, p.events, p.wall_s, p.bottleneck_packets / p.wall_s / 1e6, p.events / p.bottleneck_packets);
}
