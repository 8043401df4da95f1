// Debug helper: first divergence per flow in flow_ts between two runs.
use aqmlab_engine::run_json;
use std::collections::BTreeMap;
fn main() {
    let load = |i: usize| run_json(&std::fs::read_to_string(std::env::args().nth(i).unwrap()).unwrap(), |_| true).unwrap();
    let (a, b) = (load(1), load(2));
    let key = |r: &aqmlab_engine::Results| {
        let t = r.table("flow_ts");
        let (ts, f, d, c) = (t.f64s("t_ns"), t.f64s("flow"), t.f64s("delivered_bytes"), t.f64s("cwnd_segs"));
        let mut m = BTreeMap::new();
        for i in 0..ts.len() { m.insert((f[i] as u64, ts[i] as u64), (d[i], c[i])); }
        m
    };
    let (ka, kb) = (key(&a), key(&b));
    let mut first: BTreeMap<u64, (u64, String)> = BTreeMap::new();
    for (k, v) in &ka {
        if kb.get(k) != Some(v) && !first.contains_key(&k.0) { first.insert(k.0, (k.1, format!("{:?} vs {:?}", v, kb.get(k)))); }
    }
    let mut v: Vec<_> = first.into_iter().collect();
    v.sort_by_key(|x| x.1 .0);
    for (f, (t, s)) in v.iter().take(8) { println!("flow {f} first differs at {:.4}s: {s}", *t as f64 / 1e9); }
}
