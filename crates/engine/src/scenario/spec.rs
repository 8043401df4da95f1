//! The scenario's serde form: every table and key a scenario file may hold,
//! with its defaults. Strict (`deny_unknown_fields`); meaning is checked in
//! `validate.rs`.

use crate::sim::units::{
    serde_buffer, serde_duration, serde_opt_duration, serde_opt_rate, serde_opt_size, serde_per_second, serde_rate,
    BufferSpec,
};
use crate::transport::TcpConfig;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Every table a scenario may hold, by its path (`[]`: a list of tables),
/// with the keys it accepts, as serde derives them from the structs below.
/// Python's scenario dataclasses are checked against this listing
/// (tests/test_scenario_keys.py); `params` tables belong to the registry.
pub fn key_tables() -> Vec<(&'static str, &'static [&'static str])> {
    fn keys<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
        crate::params::struct_keys::<T>().expect("scenario tables are plain structs")
    }
    vec![
        ("", keys::<Scenario>()),
        ("bottleneck", keys::<BottleneckSpec>()),
        ("bottleneck.rate_schedule[]", keys::<RateChange>()),
        ("bottleneck.reverse", keys::<ReverseSpec>()),
        ("topology", keys::<TopologySpec>()),
        ("topology.links[]", keys::<LinkSpec>()),
        ("topology.links[].rate_schedule[]", keys::<RateChange>()),
        ("topology.links[].wlan", keys::<WlanSpec>()),
        ("topology.fat_tree", keys::<FatTreeSpec>()),
        ("flows[]", keys::<FlowGroup>()),
        ("flows[].marker", keys::<crate::ppv::marker::MarkerSpec>()),
        ("workloads[]", keys::<Workload>()),
        ("workloads[].size", keys::<SizeDist>()),
        ("tcp", keys::<TcpConfig>()),
        ("metrics", keys::<MetricsConfig>()),
        ("metrics.pcap", keys::<PcapSpec>()),
        ("engine", keys::<EngineConfig>()),
    ]
}

/// Defines a scenario table's struct with the fields that several tables
/// share spliced in where `@queue`, `@conditions`, `@endpoints` and
/// `@cc_options` stand; every other field is written out as usual. The
/// fields stay flat and in the order written: that order is the "allowed"
/// list of unknown-key errors and of `key_tables`. A shared struct behind
/// `#[serde(flatten)]` would be read as a map: `deny_unknown_fields` would
/// not apply to it, its errors would lose the list of allowed keys, and
/// `key_tables` could not list the table (`params::struct_keys`). The same
/// splicing as `aqm::pi::pi_config`, for markers anywhere in the list: the
/// fields are read one at a time into `[$($done)*]`, then written out.
macro_rules! scenario_table {
    ($(#[$attr:meta])* pub struct $name:ident { $($body:tt)* }) => {
        scenario_table!(@fields [$(#[$attr])* pub struct $name] [] $($body)*);
    };
    // Nothing left to read: the struct.
    (@fields [$($head:tt)*] [$($done:tt)*]) => {
        $($head)* { $($done)* }
    };
    // A queue's link (dumbbell bottleneck, graph link, fat-tree link).
    (@fields $head:tt [$($done:tt)*] @queue $($rest:tt)*) => {
        scenario_table!(@fields $head [$($done)*
            /// One-way propagation delay of the link.
            #[serde(rename = "delay", default, with = "serde_duration")]
            pub delay_ns: u64,
            #[serde(default = "default_buffer", with = "serde_buffer")]
            pub buffer: BufferSpec,
            #[serde(default = "default_aqm")]
            pub aqm: String,
            /// Overrides of the AQM's parameters, named as in its spec.
            #[serde(default)]
            pub params: Value,
        ] $($rest)*);
    };
    // What else happens on a link besides its queue (dumbbell bottleneck, graph link).
    (@fields $head:tt [$($done:tt)*] @conditions $($rest:tt)*) => {
        scenario_table!(@fields $head [$($done)*
            /// Random drop probability on the link.
            #[serde(default)]
            pub loss: f64,
            /// Random CE-mark probability on the link (ECN-capable packets only).
            #[serde(default)]
            pub mark: f64,
            /// Rate changes over time ("at 2 s the rate becomes 0.5 Gbps").
            #[serde(default, skip_serializing_if = "Vec::is_empty")]
            pub rate_schedule: Vec<RateChange>,
        ] $($rest)*);
    };
    // Who a flow's packets travel between (flow groups, workloads).
    (@fields $head:tt [$($done:tt)*] @endpoints $($rest:tt)*) => {
        scenario_table!(@fields $head [$($done)*
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
        ] $($rest)*);
    };
    // How a flow's congestion control runs (flow groups, workloads).
    (@fields $head:tt [$($done:tt)*] @cc_options $($rest:tt)*) => {
        scenario_table!(@fields $head [$($done)*
            /// off | classic | l4s | dctcp; default depends on `cc`.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub ecn: Option<String>,
            /// Overrides of the congestion control's parameters.
            #[serde(default)]
            pub params: Value,
        ] $($rest)*);
    };
    // A field written out in the table: kept as it stands.
    (@fields $head:tt [$($done:tt)*] $(#[$fattr:meta])* pub $field:ident: $ty:ty, $($rest:tt)*) => {
        scenario_table!(@fields $head [$($done)* $(#[$fattr])* pub $field: $ty,] $($rest)*);
    };
}

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
    /// Cache prefetch hints for large flow and link tables (`sim::prefetch`)
    /// and batched histogram counts in topologies with many queues
    /// (`net::sojourn_log`): never a change in results, only in speed. Off
    /// to check exactly that.
    pub prefetch: bool,
    /// Early hand-off, one of the lookahead shortcuts (`net::link`): a queue
    /// that decides at dequeue hands a starting packet to the line after it
    /// at once. Unset: on in topologies with many queues, where most queues
    /// idle and it saves events (`world::event_loop::EARLY_HAND_OFF_MIN_QUEUES`);
    /// in a dumbbell it saves almost none and costs about 4 % more
    /// instructions a packet. `true` or `false` force it, to check that
    /// results agree.
    pub early_hand_off: Option<bool>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig { lookahead: true, prefetch: true, early_hand_off: None }
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

scenario_table! {
    /// The dumbbell's bottleneck link (its delay is part of every flow's RTT).
    #[derive(Debug, Clone, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct BottleneckSpec {
        #[serde(rename = "rate", with = "serde_rate")]
        pub rate_bps: u64,
        @queue
        @conditions
        /// Sender access-link rate (NIC serialisation); unlimited by default.
        #[serde(rename = "access_rate", default, with = "serde_opt_rate", skip_serializing_if = "Option::is_none")]
        pub access_rate_bps: Option<u64>,
        /// A queue on the ACK path; uncongested (pure delay) by default.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub reverse: Option<ReverseSpec>,
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReverseSpec {
    #[serde(rename = "rate", with = "serde_rate")]
    pub rate_bps: u64,
    // The queue's keys written out rather than a flattened struct: serde's
    // `flatten` reads a map and loses the key list of "unknown key" errors.
    #[serde(default = "default_aqm")]
    pub aqm: String,
    #[serde(default)]
    pub params: Value,
    #[serde(default = "default_buffer", with = "serde_buffer")]
    pub buffer: BufferSpec,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopologySpec {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<LinkSpec>,
    /// A k-ary fat tree built by the engine (instead of `links`); see
    /// `world/fat_tree.rs` and docs/scenario.md.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fat_tree: Option<FatTreeSpec>,
}

scenario_table! {
    /// A three-tier k-ary fat tree (Al-Fares et al., SIGCOMM 2008, §3): k pods of
    /// k/2 edge and k/2 aggregation switches, (k/2)² core switches, k³/4 hosts
    /// named `h0` … `h{k³/4-1}`; every link full duplex with one queue per
    /// direction (host NICs included), all alike.
    #[derive(Debug, Clone, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct FatTreeSpec {
        pub k: u32,
        #[serde(rename = "rate", with = "serde_rate")]
        pub rate_bps: u64,
        @queue
    }
}

scenario_table! {
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
        @queue
        @conditions
        /// Also create the reverse link (same rate and delay, tail-drop FIFO).
        #[serde(default = "default_true")]
        pub duplex: bool,
        /// Make the link a shared half-duplex WLAN medium (docs/algorithms/wlan.md):
        /// both directions send on one transmitter, `rate` is the PHY data rate,
        /// and every frame costs the MAC/PHY overhead. Needs `duplex`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub wlan: Option<WlanSpec>,
    }
}

impl LinkSpec {
    /// The name of the link's queue in the results: its `name`, or
    /// `from->to`; the reverse direction of a duplex link adds `:rev`.
    pub fn queue_name(&self, reverse: bool) -> String {
        let base = self.name.clone().unwrap_or_else(|| format!("{}->{}", self.from, self.to));
        if reverse {
            format!("{base}:rev")
        } else {
            base
        }
    }
}

/// The WLAN medium model's constants; defaults are 802.11g (ERP-OFDM, short
/// slot, 54 Mbit/s data with ACKs at 24 Mbit/s), see `net::medium`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WlanSpec {
    /// Airtime every frame costs besides its bits at the PHY rate
    /// (DIFS + mean backoff + preamble/PLCP header + signal extension + SIFS + MAC ACK).
    #[serde(rename = "overhead", default = "default_wlan_overhead", with = "serde_duration")]
    pub overhead_ns: u64,
    /// Bytes every frame carries besides the IP packet (MAC header, FCS, LLC/SNAP).
    #[serde(rename = "mac_header", default = "default_wlan_header")]
    pub header_bytes: u32,
    /// The rate the AQM is told (its `link_rate_bps`); default: the model's
    /// throughput for MTU frames at the PHY rate.
    #[serde(rename = "aqm_rate", default, with = "serde_opt_rate", skip_serializing_if = "Option::is_none")]
    pub aqm_rate_bps: Option<u64>,
    /// Stations behind the reverse direction's one queue: it may send this
    /// many frames per frame of the forward direction (the access point)
    /// when both have frames (DCF's equal access per station).
    #[serde(default = "default_wlan_stations")]
    pub stations: u32,
}

fn default_wlan_stations() -> u32 {
    1
}

fn default_wlan_overhead() -> u64 {
    crate::net::medium::OVERHEAD_80211G_NS
}
fn default_wlan_header() -> u32 {
    crate::net::medium::HEADER_80211_BYTES
}

scenario_table! {
    #[derive(Debug, Clone, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct FlowGroup {
        /// Congestion control name, "udp" for constant bit rate, or "qcn" for a
        /// QCN rate-limited source (802.1Qau reaction point).
        pub cc: String,
        #[serde(default = "default_count")]
        pub count: u32,
        @endpoints
        /// A traffic pattern over a fat tree's hosts instead of src/dst:
        /// "permutation" (every host sends `count` flows to one other host, each
        /// host receiving from exactly one; a random derangement drawn from the seed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub pattern: Option<String>,
        @cc_options
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

scenario_table! {
    #[derive(Debug, Clone, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Workload {
        /// web: finite TCP flows arriving over time (Poisson, `rate`);
        /// incast: every `every`, `senders` hosts of a fat tree each start a
        /// flow of `size` to one host (`dst`, or a random host each time).
        pub kind: String,
        /// poisson
        #[serde(default = "default_arrival")]
        pub arrival: String,
        /// Arrivals per second (web).
        #[serde(with = "serde_per_second", default, skip_serializing_if = "is_zero")]
        pub rate: f64,
        /// Period of an incast (incast).
        #[serde(rename = "every", default, with = "serde_opt_duration", skip_serializing_if = "Option::is_none")]
        pub every_ns: Option<u64>,
        /// Senders per incast (incast).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub senders: Option<u32>,
        pub size: SizeDist,
        pub cc: String,
        @endpoints
        @cc_options
        #[serde(rename = "start", default, with = "serde_duration")]
        pub start_ns: u64,
        #[serde(rename = "stop", default, with = "serde_opt_duration", skip_serializing_if = "Option::is_none")]
        pub stop_ns: Option<u64>,
    }
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
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
    /// A histogram of every TCP RTT sample (one per ACK that advances the
    /// window, RFC 7323) after warm-up, all flows together: `rtt_ms` in the summary.
    pub rtt_histogram: bool,
    /// Total goodput per interval of this length in the summary (`goodput_intervals`;
    /// 0: off). A multiple of `interval`; needs the time series.
    #[serde(rename = "goodput_interval", with = "serde_duration")]
    pub goodput_interval_ns: u64,
    /// Capture one queue's packets as a pcap file (`metrics::pcap`); None: off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pcap: Option<PcapSpec>,
}

/// `[metrics] pcap = { queue, direction, max_packets }`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PcapSpec {
    /// A reported queue's name, as in the summary's `queues[].name`.
    #[serde(default = "default_pcap_queue")]
    pub queue: String,
    /// "dequeue": packets as they start transmission (with the marks the
    /// queue set); "enqueue": as they arrive, before the discipline decides.
    #[serde(default = "default_pcap_direction")]
    pub direction: String,
    /// Packets recorded at most (then the capture stops; drops likewise).
    #[serde(default = "default_pcap_max")]
    pub max_packets: u64,
}

fn default_pcap_queue() -> String {
    "bottleneck".into()
}
fn default_pcap_direction() -> String {
    "dequeue".into()
}
fn default_pcap_max() -> u64 {
    100_000
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            interval_ns: default_interval(),
            timeseries: true,
            sojourn_histograms: true,
            sojourn_samples_every: 0,
            rtt_histogram: false,
            goodput_interval_ns: 0,
            pcap: None,
        }
    }
}
