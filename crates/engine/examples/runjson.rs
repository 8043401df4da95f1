// Profiling helper: run a scenario file and print throughput and events by
// kind (`cargo run --release --example runjson -- scenario.json [summary.json]`).
// With a second argument the summary (less wall-clock fields) is written there,
// so an optimisation can be checked to leave results bit-identical.
/// The allocator of the Python extension (crates/aqmlab-py), so that wall
/// times here are those of `aqmlab run` and `aqmlab bench`.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let mut args = std::env::args().skip(1);
    let s = std::fs::read_to_string(args.next().expect("scenario.json")).unwrap();
    // Bad input is one line and exit code 2, as in the CLI (not a panic).
    let r = aqmlab_engine::run_json(&s, |_| true).unwrap_or_else(|e| {
        eprintln!("runjson: error: {e}");
        std::process::exit(2)
    });
    let mut v = r.summary();
    let p = &v["perf"];
    let pk = p["bottleneck_packets"].as_f64().unwrap();
    let w = p["wall_s"].as_f64().unwrap();
    println!("pkts {pk} events {} wall {w:.3}s -> {:.2} Mpkt/s; events/pkt {}", p["events"], pk / w / 1e6, p["events_by_kind"]);
    if let Some(out) = args.next() {
        let perf = v["perf"].as_object_mut().unwrap();
        perf.retain(|k, _| k != "wall_s" && !k.ends_with("_per_s"));
        std::fs::write(out, v.to_string()).unwrap();
    }
}
