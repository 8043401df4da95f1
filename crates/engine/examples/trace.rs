// Debug helper (not part of the product): print a flow's time series for a scenario file.
use aqmlab_engine::run_json;
fn main() {
    let s = std::env::args().nth(1).unwrap();
    let every: usize = std::env::args().nth(2).map(|x| x.parse().unwrap()).unwrap_or(1);
    let r = run_json(&std::fs::read_to_string(s).unwrap(), |_| true).unwrap();
    let t = r.table("flow_ts");
    let (ts, f, cw, ss, rt, sr, fl) = (t.f64s("t_ns"), t.f64s("flow"), t.f64s("cwnd_segs"), t.f64s("ssthresh_segs"), t.f64s("retransmits"), t.f64s("srtt_ns"), t.f64s("in_flight_segs"));
    for i in (0..ts.len()).step_by(every) {
        println!("{:8.3} f{} cwnd {:5} ssth {:10} inflight {:5} retx {:6} srtt {:.2}ms", ts[i]/1e9, f[i], cw[i], ss[i], fl[i], rt[i], sr[i]/1e6);
    }
    println!("{}", serde_json::to_string_pretty(&r.summary()["flows"]).unwrap());
}
