//! The scenario: what to simulate, validated before anything runs.
//!
//! The Python front reads TOML and hands the engine the same tree as JSON.
//! Deserialisation is strict (unknown keys are errors, with "did you mean");
//! [`Scenario::validate`] then checks meaning (known AQM/CC names, positive
//! rates, warm-up shorter than the run, ...) and fills every default, so the
//! normalised scenario written to `summary.json` says exactly what ran.
//! Errors are one line: `path: what is wrong (allowed: ...)`.

use crate::sim::units::{
    serde_buffer, serde_duration, serde_opt_duration, serde_opt_rate, serde_opt_size, serde_per_second, serde_rate,
    BufferSpec,
};
use crate::transport::{rate_source, EcnSetting, TcpConfig};
use crate::{aqm, cc};
use crate::params::{from_value_path, unknown_choice};
use serde::{Deserialize, Serialize};
use serde_json::Value;

fn default_seed() -> u64 {
    1
}
fn default_count() -> u32 {
    1
}
fn default_aqm() -> String {
    "fifo".into()
}
/// Default buffer: 100 ms at the link rate (a common testbed choice; ns-3's
/// 100-packet default is far too small at 10 Gbit/s and too large at 1 Mbit/s).
fn default_buffer() -> BufferSpec {
    BufferSpec::Time(100_000_000)
}
fn default_true() -> bool {
    true
}
fn default_interval() -> u64 {
    100_000_000
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(rename = "duration", with = "serde_duration")]
    pub duration_ns: u64,
    /// Excluded from summary statistics.
    #[serde(rename = "warmup", default, with = "serde_duration")]
    pub warmup_ns: u64,
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// A dumbbell: senders → bottleneck → receivers, per-flow base RTTs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bottleneck: Option<BottleneckSpec>,
    /// An explicit graph of links (instead of `bottleneck`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<TopologySpec>,
    #[serde(default)]
    pub flows: Vec<FlowGroup>,
    #[serde(default)]
    pub workloads: Vec<Workload>,
    #[serde(default)]
    pub tcp: TcpConfig,
    #[serde(default)]
    pub metrics: MetricsConfig,
    #[serde(default)]
    pub engine: EngineConfig,
}

/// How the engine runs (never what it simulates).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct EngineConfig {
    /// Exact shortcuts that save events (docs/performance.md): a receiver
    /// whose replies travel a pure-delay path runs when a packet enters its
    /// last delay, and a source folds its pure-delay first hop into its clock.
    /// Off gives the textbook event schedule; results agree (tests check it).
    pub lookahead: bool,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig { lookahead: true }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateChange {
    #[serde(rename = "at", with = "serde_duration")]
    pub at_ns: u64,
    #[serde(rename = "rate", with = "serde_rate")]
    pub rate_bps: u64,
}

/// A queue on a link: discipline, its parameters and the buffer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSpec {
    #[serde(default = "default_aqm")]
    pub aqm: String,
    #[serde(default)]
    pub params: Value,
    #[serde(default = "default_buffer", with = "serde_buffer")]
    pub buffer: BufferSpec,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BottleneckSpec {
    #[serde(rename = "rate", with = "serde_rate")]
    pub rate_bps: u64,
    /// One-way propagation delay of the bottleneck link itself (part of every flow's RTT).
    #[serde(rename = "delay", default, with = "serde_duration")]
    pub delay_ns: u64,
    #[serde(default = "default_buffer", with = "serde_buffer")]
    pub buffer: BufferSpec,
    #[serde(default = "default_aqm")]
    pub aqm: String,
    /// Overrides of the AQM's parameters, named as in its spec.
    #[serde(default)]
    pub params: Value,
    /// Random drop probability on the link.
    #[serde(default)]
    pub loss: f64,
    /// Random CE-mark probability on the link (ECN-capable packets only).
    #[serde(default)]
    pub mark: f64,
    /// Rate changes over time ("at 2 s the rate becomes 0.5 Gbps").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rate_schedule: Vec<RateChange>,
    /// Sender access-link rate (NIC serialisation); unlimited by default.
    #[serde(rename = "access_rate", default, with = "serde_opt_rate", skip_serializing_if = "Option::is_none")]
    pub access_rate_bps: Option<u64>,
    /// A queue on the ACK path; uncongested (pure delay) by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse: Option<ReverseSpec>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReverseSpec {
    #[serde(rename = "rate", with = "serde_rate")]
    pub rate_bps: u64,
    #[serde(flatten)]
    pub queue: QueueSpec,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopologySpec {
    pub links: Vec<LinkSpec>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub from: String,
    pub to: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// None: a pure delay (no serialisation, no queue).
    #[serde(rename = "rate", default, with = "serde_opt_rate", skip_serializing_if = "Option::is_none")]
    pub rate_bps: Option<u64>,
    #[serde(rename = "delay", default, with = "serde_duration")]
    pub delay_ns: u64,
    #[serde(default = "default_buffer", with = "serde_buffer")]
    pub buffer: BufferSpec,
    #[serde(default = "default_aqm")]
    pub aqm: String,
    #[serde(default)]
    pub params: Value,
    #[serde(default)]
    pub loss: f64,
    #[serde(default)]
    pub mark: f64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rate_schedule: Vec<RateChange>,
    /// Also create the reverse link (same rate and delay, tail-drop FIFO).
    #[serde(default = "default_true")]
    pub duplex: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowGroup {
    /// Congestion control name, "udp" for constant bit rate, or "qcn" for a
    /// QCN rate-limited source (802.1Qau reaction point).
    pub cc: String,
    #[serde(default = "default_count")]
    pub count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Base RTT (dumbbell).
    #[serde(rename = "rtt", default, with = "serde_opt_duration", skip_serializing_if = "Option::is_none")]
    pub rtt_ns: Option<u64>,
    /// End nodes (graph topology).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst: Option<String>,
    /// off | classic | l4s | dctcp; default depends on `cc`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn: Option<String>,
    /// Overrides of the congestion control's parameters.
    #[serde(default)]
    pub params: Value,
    #[serde(rename = "start", default, with = "serde_duration")]
    pub start_ns: u64,
    /// Each flow starts uniformly at random within this after `start`.
    #[serde(rename = "start_jitter", default, with = "serde_duration")]
    pub start_jitter_ns: u64,
    #[serde(rename = "stop", default, with = "serde_opt_duration", skip_serializing_if = "Option::is_none")]
    pub stop_ns: Option<u64>,
    /// Finite flow size (payload); unbounded when absent.
    #[serde(rename = "size", default, with = "serde_opt_size", skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// UDP: sending rate; QCN: line (maximum) rate.
    #[serde(rename = "rate", default, with = "serde_opt_rate", skip_serializing_if = "Option::is_none")]
    pub rate_bps: Option<u64>,
    /// UDP and QCN: datagram size on the wire (default: the MTU).
    #[serde(rename = "packet_size", default, with = "serde_opt_size", skip_serializing_if = "Option::is_none")]
    pub packet_size_bytes: Option<u64>,
    /// Per Packet Value edge marker for each flow of the group (none: PV 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marker: Option<crate::ppv::marker::MarkerSpec>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizeDist {
    /// pareto | exponential | fixed | uniform
    pub dist: String,
    #[serde(rename = "min", default, with = "serde_opt_size", skip_serializing_if = "Option::is_none")]
    pub min_bytes: Option<u64>,
    #[serde(rename = "max", default, with = "serde_opt_size", skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
    #[serde(rename = "mean", default, with = "serde_opt_size", skip_serializing_if = "Option::is_none")]
    pub mean_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// web: finite TCP flows arriving over time.
    pub kind: String,
    /// poisson
    #[serde(default = "default_arrival")]
    pub arrival: String,
    #[serde(with = "serde_per_second")]
    pub rate: f64,
    pub size: SizeDist,
    pub cc: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(rename = "rtt", default, with = "serde_opt_duration", skip_serializing_if = "Option::is_none")]
    pub rtt_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn: Option<String>,
    #[serde(default)]
    pub params: Value,
    #[serde(rename = "start", default, with = "serde_duration")]
    pub start_ns: u64,
    #[serde(rename = "stop", default, with = "serde_opt_duration", skip_serializing_if = "Option::is_none")]
    pub stop_ns: Option<u64>,
}

fn default_arrival() -> String {
    "poisson".into()
}

/// Which collectors run. Switched-off collectors cost nothing.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsConfig {
    /// Sampling interval of the time series (goodput, cwnd, RTT, queue length, AQM probabilities).
    #[serde(rename = "interval", with = "serde_duration")]
    pub interval_ns: u64,
    /// Per-flow and per-queue time series.
    pub timeseries: bool,
    /// Per-sub-queue sojourn-time histograms (percentiles in the summary).
    pub sojourn_histograms: bool,
    /// Record the sojourn of every N-th dequeued packet as a raw sample (0: off).
    pub sojourn_samples_every: u32,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig { interval_ns: default_interval(), timeseries: true, sojourn_histograms: true, sojourn_samples_every: 0 }
    }
}

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
        if i > 0 && c.at_ns < sched[i - 1].at_ns {
            return Err(format!("{path}.rate_schedule[{i}].at: changes must be in time order"));
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

/// Sources that send at a set rate rather than under a congestion window
/// (see [`rate_source`]).
pub fn is_rate_based(cc_name: &str) -> bool {
    rate_source::lookup(cc_name).is_some()
}

/// Everything a scenario can name, with its summary and default parameters:
/// `{"aqm": {name: {summary, defaults}}, "cc": {name: {summary, defaults,
/// default_ecn}}, "ecn": [...]}`. The `cc` table lists the congestion
/// controls, then the rate-based sources (`udp`, `qcn`). AQM defaults
/// that depend on the link are shown for 100 Mbit/s and 1500-byte packets.
pub fn registry() -> Result<Value, String> {
    let env = aqm::QdiscEnv { link_rate_bps: 100_000_000, mtu_bytes: 1500, limit: aqm::QueueLimit { pkts: Some(1000), bytes: None } };
    let mut aqms = serde_json::Map::new();
    for e in aqm::REGISTRY {
        let (_, defaults) = (e.build)(&Value::Null, &env)?;
        aqms.insert(e.name.into(), serde_json::json!({"summary": e.summary, "defaults": defaults}));
    }
    let mut ccs = serde_json::Map::new();
    for e in cc::REGISTRY {
        let (_, defaults) = (e.build)(&Value::Null)?;
        ccs.insert(e.name.into(), serde_json::json!({"summary": e.summary, "defaults": defaults, "default_ecn": e.default_ecn}));
    }
    for e in rate_source::REGISTRY {
        let defaults = (e.normalize)(&Value::Null)?;
        ccs.insert(e.name.into(), serde_json::json!({"summary": e.summary, "defaults": defaults, "default_ecn": e.default_ecn}));
    }
    Ok(serde_json::json!({"aqm": aqms, "cc": ccs, "ecn": EcnSetting::NAMES}))
}

/// Names a flow's `cc` may take.
pub fn flow_cc_names() -> Vec<&'static str> {
    let mut v = cc::cc_names();
    v.extend(rate_source::names());
    v
}

/// Resolve a flow's ECN setting: the explicit one, or the controller's default.
pub fn resolve_ecn(path: &str, cc_name: &str, ecn: Option<&str>) -> Result<EcnSetting, String> {
    let name = match ecn {
        Some(e) => e,
        None => match rate_source::lookup(cc_name) {
            Some(e) => e.default_ecn,
            None => cc::lookup(cc_name).map_or("off", |e| e.default_ecn),
        },
    };
    EcnSetting::parse(name).ok_or_else(|| format!("{path}.ecn: {}", unknown_choice("ECN setting", name, &EcnSetting::NAMES)))
}

/// Validate the endpoints and controller of a flow group or workload; returns normalised CC params.
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
) -> Result<Value, String> {
    if !flow_cc_names().contains(&cc_name) {
        return Err(format!("{path}.cc: {}", unknown_choice("congestion control", cc_name, &flow_cc_names())));
    }
    resolve_ecn(path, cc_name, ecn)?;
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
                let n = v.as_deref().ok_or_else(|| format!("{path}.{k}: required with a [topology]"))?;
                if !nodes.contains(&n) {
                    return Err(format!("{path}.{k}: {}", unknown_choice("node", n, &nodes)));
                }
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
    normalized.map_err(|m| join_path(&format!("{path}.params"), &m))
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
        if self.metrics.interval_ns == 0 {
            return Err("metrics.interval: must be positive".into());
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
                    r.queue.params = check_queue("bottleneck.reverse", &r.queue.aqm, &r.queue.params, r.rate_bps, r.queue.buffer, mtu)?;
                }
                if let Some(a) = b.access_rate_bps {
                    check_rate("bottleneck.access_rate", a)?;
                }
                bottleneck_delay = b.delay_ns;
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
                    match l.rate_bps {
                        Some(r) => {
                            check_rate(&format!("{p}.rate"), r)?;
                            l.params = check_queue(&p, &l.aqm, &l.params, r, l.buffer, mtu)?;
                        }
                        None if l.aqm != "fifo" || !l.rate_schedule.is_empty() => {
                            return Err(format!("{p}.rate: a link without a rate is a pure delay and cannot have a queue or rate schedule"));
                        }
                        None => {}
                    }
                }
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
            f.params = check_endpoint(&p, &f.cc, &f.params, f.ecn.as_deref(), f.rtt_ns, &f.src, &f.dst, &topo, bottleneck_delay)?;
            f.ecn = Some(format!("{:?}", resolve_ecn(&p, &f.cc, f.ecn.as_deref())?).to_lowercase());
            if let Some(m) = &mut f.marker {
                m.validate(&format!("{p}.marker"))?;
            }
            if let Some(s) = f.stop_ns {
                if s <= f.start_ns {
                    return Err(format!("{p}.stop: must be later than start"));
                }
            }
            if is_rate_based(&f.cc) {
                let r = f.rate_bps.ok_or_else(|| format!("{p}.rate: required for a {} flow (e.g. '10Mbps')", f.cc))?;
                check_rate(&format!("{p}.rate"), r)?;
                if f.size_bytes.is_some() {
                    return Err(format!("{p}.size: {} flows run from start to stop; size applies to TCP", f.cc));
                }
                let ps = f.packet_size_bytes.unwrap_or(mtu as u64);
                if !(64..=65_535).contains(&ps) {
                    return Err(format!("{p}.packet_size: must lie in 64B..=65535B"));
                }
            } else {
                if f.rate_bps.is_some() {
                    let rated: Vec<&str> = rate_source::names().collect();
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
            if w.kind != "web" {
                return Err(format!("{p}.kind: {}", unknown_choice("workload kind", &w.kind, &["web"])));
            }
            if w.arrival != "poisson" {
                return Err(format!("{p}.arrival: {}", unknown_choice("arrival process", &w.arrival, &["poisson"])));
            }
            if is_rate_based(&w.cc) {
                return Err(format!("{p}.cc: web workloads carry TCP flows"));
            }
            w.params = check_endpoint(&p, &w.cc, &w.params, w.ecn.as_deref(), w.rtt_ns, &w.src, &w.dst, &topo, bottleneck_delay)?;
            w.ecn = Some(format!("{:?}", resolve_ecn(&p, &w.cc, w.ecn.as_deref())?).to_lowercase());
            w.size.check(&format!("{p}.size"))?;
        }
        Ok(())
    }

    /// The normalised scenario as JSON (all defaults filled in).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("scenario serialises")
    }
}

pub const SIZE_DISTS: [&str; 4] = ["pareto", "exponential", "fixed", "uniform"];

impl SizeDist {
    fn check(&self, path: &str) -> Result<(), String> {
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

    /// Draw a flow size in bytes (at least 1).
    pub fn sample(&self, rng: &mut crate::sim::rng::SimRng) -> u64 {
        let v = match self.dist.as_str() {
            "pareto" => rng.bounded_pareto(self.min_bytes.unwrap() as f64, self.max_bytes.unwrap() as f64, self.shape.unwrap()),
            "exponential" => rng.exponential(self.mean_bytes.unwrap() as f64),
            "uniform" => {
                let (lo, hi) = (self.min_bytes.unwrap(), self.max_bytes.unwrap());
                return lo + rng.below(hi - lo + 1);
            }
            _ => return self.mean_bytes.unwrap(),
        };
        (v.round() as u64).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Value {
        serde_json::json!({
            "duration": "2s",
            "bottleneck": {"rate": "10Mbps", "aqm": "fifo"},
            "flows": [{"cc": "reno", "rtt": "20ms"}]
        })
    }

    #[test]
    fn the_registry_lists_every_name_a_scenario_accepts_with_defaults_that_validate() {
        let reg = registry().unwrap();
        let listed: Vec<&str> = reg["cc"].as_object().unwrap().keys().map(String::as_str).collect();
        let mut accepted = flow_cc_names();
        accepted.sort_unstable();
        let mut listed_sorted = listed.clone();
        listed_sorted.sort_unstable();
        assert_eq!(listed_sorted, accepted);
        let aqms: Vec<&str> = reg["aqm"].as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(aqms.len(), aqm::REGISTRY.len());
        // Each source's listed defaults, given back as its params, are accepted.
        let mut v = base();
        v["flows"] = serde_json::json!([{"cc": "qcn", "rtt": "20ms", "rate": "5Mbps", "params": reg["cc"]["qcn"]["defaults"].clone()}]);
        parse(&v.to_string()).unwrap();
    }

    fn err(v: Value) -> String {
        parse(&v.to_string()).unwrap_err()
    }

    #[test]
    fn minimal_scenario_fills_defaults() {
        let s = parse(&base().to_string()).unwrap();
        assert_eq!(s.seed, 1);
        assert_eq!(s.flows[0].ecn.as_deref(), Some("off"));
        let j = s.to_json();
        assert_eq!(j["bottleneck"]["buffer"], "100ms");
        assert_eq!(j["tcp"]["delack_timeout"], "40ms");
        assert_eq!(j["flows"][0]["params"]["beta"], 0.5);
    }

    #[test]
    fn typos_get_did_you_mean_with_the_path() {
        let mut v = base();
        v["bottleneck"]["aqm"] = "fifp".into();
        assert!(err(v).starts_with("bottleneck.aqm: unknown AQM 'fifp' (did you mean 'fifo'? allowed: fifo, step"));
        let mut v = base();
        v["flows"][0]["cc"] = "rneo".into();
        assert!(err(v).starts_with("flows[0].cc: unknown congestion control 'rneo' (did you mean 'reno'?"));
        let mut v = base();
        v["bottleneck"]["rtae"] = "1Mbps".into();
        let e = err(v);
        assert!(e.starts_with("bottleneck: unknown key 'rtae' (did you mean 'rate'?"), "{e}");
        let mut v = base();
        v["flows"][0]["params"] = serde_json::json!({"betta": 0.7});
        let e = err(v);
        assert!(e.starts_with("flows[0].params: unknown key 'betta' (did you mean 'beta'?"), "{e}");
    }

    #[test]
    fn bad_values_name_the_field() {
        let mut v = base();
        v["bottleneck"]["rate"] = "-10Mbps".into();
        assert!(err(v).starts_with("bottleneck.rate: '-10Mbps': a rate cannot be negative"));
        let mut v = base();
        v["warmup"] = "3s".into();
        assert_eq!(err(v), "warmup: 3s must be shorter than duration 2s");
        let mut v = base();
        v["flows"][0]["rtt"] = serde_json::Value::Null;
        assert!(err(v).starts_with("flows[0].rtt: required"));
        let mut v = base();
        v["flows"][0]["ecn"] = "l4".into();
        assert!(err(v).contains("did you mean 'l4s'"));
        let mut v = base();
        v["bottleneck"]["loss"] = 1.5.into();
        assert!(err(v).starts_with("bottleneck.loss: must be a probability"));
    }

    #[test]
    fn qcn_flows_take_a_rate_and_strict_reaction_point_params() {
        let mut v = base();
        v["bottleneck"]["aqm"] = "qcn".into();
        v["bottleneck"]["params"] = serde_json::json!({"q_eq": "22pkt"});
        v["flows"] = serde_json::json!([{"cc": "qcn", "rtt": "40us", "rate": "1Gbps", "params": {"fbhat": true}}]);
        let s = parse(&v.to_string()).unwrap();
        let j = s.to_json();
        assert_eq!(j["bottleneck"]["params"]["q_eq"], "22pkt");
        assert_eq!(j["bottleneck"]["params"]["sample_base"], "150KB");
        assert_eq!(j["flows"][0]["params"]["fbhat"], true);
        assert_eq!(j["flows"][0]["params"]["r_ai"], "5Mbps");
        assert_eq!(j["flows"][0]["params"]["timer"], "15ms");
        let mut w = v.clone();
        w["flows"][0]["params"] = serde_json::json!({"fbaht": true});
        let e = err(w);
        assert!(e.starts_with("flows[0].params: unknown key 'fbaht' (did you mean 'fbhat'?"), "{e}");
        let mut w = v.clone();
        w["flows"][0]["rate"] = serde_json::Value::Null;
        assert_eq!(err(w), "flows[0].rate: required for a qcn flow (e.g. '10Mbps')");
        let mut w = v.clone();
        w["flows"][0]["params"] = serde_json::json!({"gd": 0.5});
        assert!(err(w).starts_with("flows[0].params.gd: must lie in (0, 1/63)"));
        let mut w = v;
        w["bottleneck"]["params"] = serde_json::json!({"q_eq": "1ms"});
        assert!(err(w).starts_with("bottleneck.params.q_eq: must be packets or bytes"));
    }
}
