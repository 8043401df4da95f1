// Refactoring check (scripts/summary_fingerprint.py): run a scenario file and
// write its whole result, less wall-clock fields, as text: the summary on the
// first line, then every table (name and columns), so that a hash of the file
// proves two engines produce bit-identical results
// (`cargo run --release --example results_digest -- scenario.json out.txt`).
use std::io::Write;

fn main() {
    let mut args = std::env::args().skip(1);
    let s = std::fs::read_to_string(args.next().expect("scenario.json")).unwrap();
    let out = args.next().expect("out.txt");
    let r = aqmlab_engine::run_json(&s, |_| true).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let mut v = r.summary();
    let perf = v["perf"].as_object_mut().unwrap();
    perf.retain(|k, _| k != "wall_s" && !k.ends_with("_per_s"));
    let mut f = std::io::BufWriter::new(std::fs::File::create(out).unwrap());
    writeln!(f, "{v}").unwrap();
    for t in &r.tables {
        // Debug of f64 is exact (shortest round-trip form), NaN included.
        writeln!(f, "{:?}", t).unwrap();
    }
}
