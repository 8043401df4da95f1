//! Validation: what a scenario means (known AQM/CC names, positive rates,
//! warm-up shorter than the run, ...), with every default filled in, so the
//! normalised scenario written to `summary.json` says exactly what ran.

use super::spec::*;
use crate::params::{from_value_path, unknown_choice};
use crate::registry::{flow_cc_names, is_rate_based, resolve_ecn};
use crate::sim::units::BufferSpec;
use crate::transport::{rate_source, EcnSetting};
use crate::{aqm, cc};
use serde_json::Value;

/// Parse the JSON form of a scenario (strict keys), then validate it.
pub fn parse(json: &str) -> Result<Scenario, String> {
    let v: Value = serde_json::from_str(json).map_err(|e| format!("scenario is not valid JSON: {e}"))?;
    let mut s: Scenario = from_value_path(v)?;
    s.validate()?;
    Ok(s)
}

fn check_prob(path: &str, p: f64) -> Result<(), String> {
    if !(0.0..=1.0).contains(&p) {
        return Err(format!("{path}: must be a probability in [0, 1] (got {p})"));
    }
    Ok(())
}

fn check_rate(path: &str, r: u64) -> Result<(), String> {
    if r == 0 {
        return Err(format!("{path}: must be positive"));
    }
    Ok(())
}

fn check_buffer(path: &str, b: BufferSpec) -> Result<(), String> {
    if matches!(b, BufferSpec::Packets(0) | BufferSpec::Bytes(0) | BufferSpec::Time(0)) {
        return Err(format!("{path}: must be positive"));
    }
    Ok(())
}

/// Validate and normalise a queue: returns the params with defaults filled.
fn check_queue(path: &str, aqm_name: &str, params: &Value, rate_bps: u64, buffer: BufferSpec, mtu: u32) -> Result<Value, String> {
    check_buffer(&format!("{path}.buffer"), buffer)?;
    if !(params.is_null() || params.is_object()) {
        return Err(format!("{path}.params: must be a table of parameter overrides"));
    }
    let env = aqm::QdiscEnv { link_rate_bps: rate_bps, mtu_bytes: mtu, limit: aqm::QueueLimit::from_spec(buffer, rate_bps) };
    match aqm::lookup(aqm_name) {
        None => Err(format!("{path}.aqm: {}", unknown_choice("AQM", aqm_name, &aqm::aqm_names()))),
        Some(e) => (e.build)(params, &env).map(|(_, p)| p).map_err(|m| join_path(&format!("{path}.params"), &m)),
    }
}

fn check_schedule(path: &str, sched: &[RateChange]) -> Result<(), String> {
    for (i, c) in sched.iter().enumerate() {
        check_rate(&format!("{path}.rate_schedule[{i}].rate"), c.rate_bps)?;
        if i > 0 && c.at_ns <= sched[i - 1].at_ns {
            // Two changes at one instant: only the last would ever hold.
            return Err(format!("{path}.rate_schedule[{i}].at: changes must be in time order, one per instant"));
        }
    }
    Ok(())
}

/// Prefix an error from a nested parse with its location: "field: msg"
/// becomes "prefix.field: msg"; a message without a field becomes "prefix: msg".
pub fn join_path(prefix: &str, msg: &str) -> String {
    match msg.split_once(": ") {
        Some((head, _)) if !head.is_empty() && !head.contains(' ') && !head.contains('\'') => format!("{prefix}.{msg}"),
        _ => format!("{prefix}: {msg}"),
    }
}

/// Validate the endpoints and controller of a flow group or workload;
/// returns the normalised CC params and the resolved ECN setting.
fn check_endpoint(
    path: &str,
    cc_name: &str,
    params: &Value,
    ecn: Option<&str>,
    rtt_ns: Option<u64>,
    src: &Option<String>,
    dst: &Option<String>,
    topo: &Option<TopologySpec>,
    bottleneck_delay_ns: u64,
    generated: bool,
) -> Result<(Value, EcnSetting), String> {
    if !flow_cc_names().contains(&cc_name) {
        return Err(format!("{path}.cc: {}", unknown_choice("congestion control", cc_name, &flow_cc_names())));
    }
    let ecn = resolve_ecn(path, cc_name, ecn)?;
    match topo {
        None => {
            let rtt = rtt_ns.ok_or_else(|| format!("{path}.rtt: required (the flow's base RTT, e.g. '10ms')"))?;
            if rtt == 0 {
                return Err(format!("{path}.rtt: must be positive"));
            }
            if rtt < 2 * bottleneck_delay_ns {
                return Err(format!("{path}.rtt: {} is shorter than twice the bottleneck delay", crate::sim::units::format_duration_ns(rtt)));
            }
            if src.is_some() || dst.is_some() {
                return Err(format!("{path}: src/dst apply to a [topology]; a dumbbell flow takes rtt"));
            }
        }
        Some(t) => {
            let nodes = t.node_names();
            for (k, v) in [("src", src), ("dst", dst)] {
                // Generated traffic (a pattern, an incast) picks its own ends.
                let Some(n) = v.as_deref() else {
                    if generated {
                        continue;
                    }
                    return Err(format!("{path}.{k}: required with a [topology]"));
                };
                if let Some(ft) = &t.fat_tree {
                    if ft.host(n).is_none() {
                        return Err(format!("{path}.{k}: '{n}' is not a host of the fat tree; allowed: h0 to h{}", ft.hosts() - 1));
                    }
                } else if !nodes.contains(&n) {
                    return Err(format!("{path}.{k}: {}", unknown_choice("node", n, &nodes)));
                }
            }
            if src.is_some() && src == dst {
                let ends = if t.fat_tree.is_some() { "hosts" } else { "nodes" };
                return Err(format!("{path}.dst: '{}' is src too; a flow needs two {ends}", dst.as_deref().unwrap_or_default()));
            }
            if rtt_ns.is_some() {
                return Err(format!("{path}.rtt: with a [topology] the RTT follows from the links"));
            }
        }
    }
    if !(params.is_null() || params.is_object()) {
        return Err(format!("{path}.params: must be a table of parameter overrides"));
    }
    let normalized = match rate_source::lookup(cc_name) {
        Some(e) => (e.normalize)(params),
        None => (cc::lookup(cc_name).expect("checked above").build)(params).map(|(_, p)| p),
    };
    let params = normalized.map_err(|m| join_path(&format!("{path}.params"), &m))?;
    Ok((params, ecn))
}

/// Largest fat tree accepted: k = 64 is 65 536 hosts and 5 120 switches.
pub const MAX_FAT_TREE_K: u32 = 64;

impl FatTreeSpec {
    pub fn hosts(&self) -> u32 {
        self.k * self.k * self.k / 4
    }

    /// The index of host `name` ("h17" → 17), if it is one of this tree's.
    pub fn host(&self, name: &str) -> Option<u32> {
        let digits = name.strip_prefix('h')?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || (digits.len() > 1 && digits.starts_with('0')) {
            return None;
        }
        digits.parse().ok().filter(|&i| i < self.hosts())
    }
}

impl TopologySpec {
    pub fn node_names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = vec![];
        for l in &self.links {
            for n in [l.from.as_str(), l.to.as_str()] {
                if !v.contains(&n) {
                    v.push(n);
                }
            }
        }
        v
    }
}

impl Scenario {
    /// Check meaning and fill defaults (AQM and CC parameters included).
    pub fn validate(&mut self) -> Result<(), String> {
        if self.duration_ns == 0 {
            return Err("duration: must be positive".into());
        }
        if self.warmup_ns >= self.duration_ns {
            return Err(format!(
                "warmup: {} must be shorter than duration {}",
                crate::sim::units::format_duration_ns(self.warmup_ns),
                crate::sim::units::format_duration_ns(self.duration_ns)
            ));
        }
        self.tcp.validate().map_err(|m| format!("tcp.{m}"))?;
        if self.engine.early_hand_off == Some(true) && !self.engine.lookahead {
            return Err("engine.early_hand_off: true is one of the lookahead shortcuts; allowed with engine.lookahead = true only".into());
        }
        if self.metrics.interval_ns == 0 {
            return Err("metrics.interval: must be positive".into());
        }
        let gi = self.metrics.goodput_interval_ns;
        if gi > 0 && (gi % self.metrics.interval_ns != 0 || !self.metrics.timeseries) {
            let fmt = crate::sim::units::format_duration_ns;
            return Err(format!(
                "metrics.goodput_interval: {} is not allowed here: allowed are 0s (off) or a whole multiple of metrics.interval ({}), with metrics.timeseries on",
                fmt(gi),
                fmt(self.metrics.interval_ns)
            ));
        }
        let mtu = self.tcp.mtu_bytes;
        let mut bottleneck_delay = 0;
        match (&mut self.bottleneck, &mut self.topology) {
            (Some(_), Some(_)) => return Err("bottleneck: give either [bottleneck] (a dumbbell) or [topology], not both".into()),
            (None, None) => return Err("bottleneck: required (or a [topology] with links)".into()),
            (Some(b), None) => {
                check_rate("bottleneck.rate", b.rate_bps)?;
                check_prob("bottleneck.loss", b.loss)?;
                check_prob("bottleneck.mark", b.mark)?;
                check_schedule("bottleneck", &b.rate_schedule)?;
                b.params = check_queue("bottleneck", &b.aqm, &b.params, b.rate_bps, b.buffer, mtu)?;
                if let Some(r) = &mut b.reverse {
                    check_rate("bottleneck.reverse.rate", r.rate_bps)?;
                    r.params = check_queue("bottleneck.reverse", &r.aqm, &r.params, r.rate_bps, r.buffer, mtu)?;
                }
                if let Some(a) = b.access_rate_bps {
                    check_rate("bottleneck.access_rate", a)?;
                }
                bottleneck_delay = b.delay_ns;
            }
            (None, Some(t)) if t.fat_tree.is_some() => {
                let ft = t.fat_tree.as_mut().expect("matched");
                if !t.links.is_empty() {
                    return Err("topology.links: give either links or fat_tree, not both".into());
                }
                if ft.k < 2 || ft.k % 2 != 0 || ft.k > MAX_FAT_TREE_K {
                    return Err(format!("topology.fat_tree.k: {}; allowed: an even number from 2 to {MAX_FAT_TREE_K}", ft.k));
                }
                check_rate("topology.fat_tree.rate", ft.rate_bps)?;
                ft.params = check_queue("topology.fat_tree", &ft.aqm, &ft.params, ft.rate_bps, ft.buffer, mtu)?;
            }
            (None, Some(t)) => {
                if t.links.is_empty() {
                    return Err("topology.links: needs at least one link".into());
                }
                for (i, l) in t.links.iter_mut().enumerate() {
                    let p = format!("topology.links[{i}]");
                    if l.from == l.to {
                        return Err(format!("{p}: from and to are the same node '{}'", l.from));
                    }
                    check_prob(&format!("{p}.loss"), l.loss)?;
                    check_prob(&format!("{p}.mark"), l.mark)?;
                    check_schedule(&p, &l.rate_schedule)?;
                    if let Some(w) = &l.wlan {
                        if !l.duplex {
                            return Err(format!("{p}.duplex: a wlan link is one medium for both directions; give duplex = true"));
                        }
                        if w.overhead_ns > 1_000_000_000 {
                            return Err(format!("{p}.wlan.overhead: {} ns per frame; allowed: at most 1 s", w.overhead_ns));
                        }
                        if w.stations == 0 || w.stations > 1000 {
                            return Err(format!("{p}.wlan.stations: {}; allowed: 1 to 1000", w.stations));
                        }
                        if let Some(r) = w.aqm_rate_bps {
                            check_rate(&format!("{p}.wlan.aqm_rate"), r)?;
                        }
                    }
                    match l.rate_bps {
                        Some(r) => {
                            check_rate(&format!("{p}.rate"), r)?;
                            // A WLAN medium's AQM is told `aqm_rate`, as the topology builds it.
                            let told = l.wlan.as_ref().map_or(r, |w| {
                                w.aqm_rate_bps.unwrap_or_else(|| {
                                    crate::net::medium::frame_rate_bps(r, mtu, w.header_bytes, w.overhead_ns)
                                })
                            });
                            l.params = check_queue(&p, &l.aqm, &l.params, told, l.buffer, mtu)?;
                        }
                        None if l.wlan.is_some() => {
                            return Err(format!("{p}.rate: a wlan link needs its PHY rate (e.g. '54Mbps')"));
                        }
                        None if l.aqm != "fifo" || !l.rate_schedule.is_empty() => {
                            return Err(format!("{p}.rate: a link without a rate is a pure delay and cannot have a queue or rate schedule"));
                        }
                        None => {}
                    }
                }
                check_unique_link_names(&t.links)?;
            }
        }
        if self.flows.is_empty() && self.workloads.is_empty() {
            return Err("flows: at least one flow or workload is required".into());
        }
        let topo = self.topology.clone();
        for (i, f) in self.flows.iter_mut().enumerate() {
            let p = format!("flows[{i}]");
            if f.count == 0 {
                return Err(format!("{p}.count: must be at least 1"));
            }
            if let Some(pat) = &f.pattern {
                if pat != "permutation" {
                    return Err(format!("{p}.pattern: {}", unknown_choice("traffic pattern", pat, &["permutation"])));
                }
                if !topo.as_ref().is_some_and(|t| t.fat_tree.is_some()) {
                    return Err(format!("{p}.pattern: traffic patterns apply to a [topology] fat_tree"));
                }
                if f.src.is_some() || f.dst.is_some() {
                    return Err(format!("{p}.pattern: a pattern picks src and dst; give no src/dst"));
                }
            }
            let (params, ecn) =
                check_endpoint(&p, &f.cc, &f.params, f.ecn.as_deref(), f.rtt_ns, &f.src, &f.dst, &topo, bottleneck_delay, f.pattern.is_some())?;
            f.params = params;
            f.ecn = Some(ecn.name().to_string());
            if let Some(m) = &mut f.marker {
                m.validate(&format!("{p}.marker"))?;
            }
            if let Some(s) = f.stop_ns {
                if s <= f.start_ns {
                    return Err(format!("{p}.stop: must be later than start"));
                }
            }
            if let Some(entry) = rate_source::lookup(&f.cc) {
                if entry.needs_rate {
                    let r = f.rate_bps.ok_or_else(|| format!("{p}.rate: required for a {} flow (e.g. '10Mbps')", f.cc))?;
                    check_rate(&format!("{p}.rate"), r)?;
                } else if f.rate_bps.is_some() {
                    return Err(format!("{p}.rate: a {} flow sets its own pace (params.interval); remove rate", f.cc));
                }
                if f.size_bytes.is_some() {
                    return Err(format!("{p}.size: {} flows run from start to stop; size applies to TCP", f.cc));
                }
                let ps = f.packet_size_bytes.unwrap_or(mtu as u64);
                if !(64..=65_535).contains(&ps) {
                    return Err(format!("{p}.packet_size: must lie in 64B..=65535B"));
                }
            } else {
                if f.rate_bps.is_some() {
                    let rated: Vec<&str> = rate_source::REGISTRY.iter().filter(|e| e.needs_rate).map(|e| e.name).collect();
                    return Err(format!("{p}.rate: only {} flows have a rate", rated.join(" and ")));
                }
                if f.packet_size_bytes.is_some() {
                    return Err(format!("{p}.packet_size: TCP segment size comes from tcp.mtu_bytes"));
                }
                if f.size_bytes == Some(0) {
                    return Err(format!("{p}.size: must be positive"));
                }
            }
        }
        for (i, w) in self.workloads.iter_mut().enumerate() {
            let p = format!("workloads[{i}]");
            let incast = w.kind == "incast";
            if !incast && w.kind != "web" {
                return Err(format!("{p}.kind: {}", unknown_choice("workload kind", &w.kind, &["web", "incast"])));
            }
            if incast {
                let Some(ft) = topo.as_ref().and_then(|t| t.fat_tree.as_ref()) else {
                    return Err(format!("{p}.kind: an incast needs a [topology] fat_tree"));
                };
                let every = w.every_ns.ok_or_else(|| format!("{p}.every: required for an incast (e.g. '10ms')"))?;
                if every == 0 {
                    return Err(format!("{p}.every: must be positive"));
                }
                let n = w.senders.ok_or_else(|| format!("{p}.senders: required for an incast (e.g. 32)"))?;
                if n == 0 || n >= ft.hosts() {
                    return Err(format!("{p}.senders: {n}; allowed: 1 to {} (the other hosts)", ft.hosts() - 1));
                }
                if w.src.is_some() {
                    return Err(format!("{p}.src: an incast picks its senders; give only dst (or none: a random host each time)"));
                }
                if w.rate != 0.0 {
                    return Err(format!("{p}.rate: an incast repeats every `every`; rate applies to web workloads"));
                }
            } else {
                if w.rate <= 0.0 {
                    return Err(format!("{p}.rate: required and positive for a web workload (e.g. '100/s')"));
                }
                if w.every_ns.is_some() || w.senders.is_some() {
                    return Err(format!("{p}: every/senders apply to an incast workload"));
                }
            }
            if w.arrival != "poisson" {
                return Err(format!("{p}.arrival: {}", unknown_choice("arrival process", &w.arrival, &["poisson"])));
            }
            if is_rate_based(&w.cc) {
                return Err(format!("{p}.cc: web workloads carry TCP flows"));
            }
            let (params, ecn) =
                check_endpoint(&p, &w.cc, &w.params, w.ecn.as_deref(), w.rtt_ns, &w.src, &w.dst, &topo, bottleneck_delay, incast)?;
            w.params = params;
            w.ecn = Some(ecn.name().to_string());
            w.size.check(&format!("{p}.size"))?;
            if let Some(s) = w.stop_ns {
                if s <= w.start_ns {
                    return Err(format!("{p}.stop: must be later than start"));
                }
            }
        }
        if let Some(pc) = &self.metrics.pcap {
            // A fat tree's queue names are the world's (checked when it is built).
            if let Some(names) = self.queue_names() {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                if !names.contains(&pc.queue.as_str()) {
                    return Err(format!("metrics.pcap.queue: {}", unknown_choice("queue", &pc.queue, &names)));
                }
            }
            if !["dequeue", "enqueue"].contains(&pc.direction.as_str()) {
                return Err(format!("metrics.pcap.direction: {}", unknown_choice("direction", &pc.direction, &["dequeue", "enqueue"])));
            }
            if pc.max_packets == 0 {
                return Err("metrics.pcap.max_packets: must be at least 1 (leave pcap out to capture nothing)".into());
            }
        }
        Ok(())
    }

    /// Names of the queues the summary reports (`queues[].name`); None for
    /// a fat tree (`world/fat_tree.rs` names its 6N links).
    pub fn queue_names(&self) -> Option<Vec<String>> {
        Some(match (&self.bottleneck, &self.topology) {
            (_, Some(t)) if t.fat_tree.is_some() => return None,
            (Some(b), _) => {
                let mut v = vec!["bottleneck".to_string()];
                if b.reverse.is_some() {
                    v.push("bottleneck_rev".into());
                }
                v
            }
            (None, Some(t)) => {
                let mut v = vec![];
                for l in t.links.iter().filter(|l| l.rate_bps.is_some()) {
                    v.push(l.queue_name(false));
                    if l.duplex {
                        v.push(l.queue_name(true));
                    }
                }
                v
            }
            (None, None) => vec![],
        })
    }

    /// The normalised scenario as JSON (all defaults filled in).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("scenario serialises")
    }
}

pub const SIZE_DISTS: [&str; 4] = ["pareto", "exponential", "fixed", "uniform"];

impl SizeDist {
    fn check(&self, path: &str) -> Result<(), String> {
        // A key the distribution does not read would be ignored without a
        // word (a fixed size "with a min"); name it instead.
        let used: &[&str] = match self.dist.as_str() {
            "pareto" => &["min", "max", "shape"],
            "exponential" | "fixed" => &["mean"],
            "uniform" => &["min", "max"],
            _ => &["min", "max", "mean", "shape"],
        };
        let given = [
            ("min", self.min_bytes.is_some()),
            ("max", self.max_bytes.is_some()),
            ("mean", self.mean_bytes.is_some()),
            ("shape", self.shape.is_some()),
        ];
        if let Some((k, _)) = given.iter().find(|(k, g)| *g && !used.contains(k)) {
            return Err(format!("{path}.{k}: dist '{}' does not use it (it takes {})", self.dist, used.join(", ")));
        }
        let need = |v: Option<u64>, k: &str| v.filter(|&x| x > 0).ok_or_else(|| format!("{path}.{k}: required and positive for dist '{}'", self.dist));
        match self.dist.as_str() {
            "pareto" => {
                let (lo, hi) = (need(self.min_bytes, "min")?, need(self.max_bytes, "max")?);
                if hi <= lo {
                    return Err(format!("{path}.max: must exceed min"));
                }
                let shape = self.shape.ok_or_else(|| format!("{path}.shape: required for pareto (e.g. 1.2)"))?;
                if !(shape > 0.0 && shape.is_finite()) {
                    return Err(format!("{path}.shape: must be positive"));
                }
            }
            "exponential" | "fixed" => {
                need(self.mean_bytes, "mean")?;
            }
            "uniform" => {
                let (lo, hi) = (need(self.min_bytes, "min")?, need(self.max_bytes, "max")?);
                if hi < lo {
                    return Err(format!("{path}.max: must not be below min"));
                }
            }
            other => return Err(format!("{path}.dist: {}", unknown_choice("size distribution", other, &SIZE_DISTS))),
        }
        Ok(())
    }
}

/// Every queue of a topology has its own name in the results (`queues[].name`,
/// `result.queue(name)`, a sweep's `queues.<name>.*` columns, `metrics.pcap.queue`):
/// two links named alike, or two unnamed links between the same nodes, would
/// be two queues under one name.
fn check_unique_link_names(links: &[LinkSpec]) -> Result<(), String> {
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (i, l) in links.iter().enumerate() {
        if l.rate_bps.is_none() {
            continue; // a pure delay has no queue
        }
        for n in [Some(l.queue_name(false)), l.duplex.then(|| l.queue_name(true))].into_iter().flatten() {
            if let Some(j) = seen.insert(n.clone(), i) {
                let fix = if l.name.is_some() { "give each link its own name" } else { "give one of them a name" };
                let key = if l.name.is_some() { ".name" } else { "" };
                return Err(format!("topology.links[{i}]{key}: queue name '{n}' is already used by topology.links[{j}] ({fix})"));
            }
        }
    }
    Ok(())
}
