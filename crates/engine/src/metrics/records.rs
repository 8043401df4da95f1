//! Plain records of a finished run: what the summary and the tables are
//! built from.
//!
//! The world fills these once, at the end of a run (`world/records.rs`), so
//! that `metrics` reads data, never the World: it knows nothing of sources,
//! sinks, links or the event loop.

use super::flow_rows::FlowRows;
use super::histogram::Histogram;
use super::series::{FlowSeries, ProbeSeries, QueueSeries};
use crate::aqm::SubqueueCounters;
use crate::transport::EcnSetting;
use std::sync::Arc;

/// Everything [`super::summary::build`] needs of a run.
pub struct RunRecords {
    pub warmup_ns: u64,
    pub end_ns: u64,
    pub seed: u64,
    pub perf: PerfRecord,
    /// Every flow that had not retired by the end of the run, in flow-id
    /// order.
    pub flows: Vec<FlowRecord>,
    /// The `flows` table's rows of the flows that retired during the run,
    /// in the order they retired (`world::retire`).
    pub retired_rows: FlowRows,
    /// Every reported queue (a link with a queue and `report`), in link order.
    pub queues: Vec<QueueRecord>,
    pub flow_series: FlowSeries,
    pub queue_series: QueueSeries,
    pub probes: ProbeSeries,
    /// `metrics.goodput_interval` (0: no `goodput_intervals` in the summary).
    pub goodput_interval_ns: u64,
    /// `metrics.rtt_histogram`: every TCP RTT sample after warm-up.
    pub rtt_hist: Option<Box<super::histogram::Histogram>>,
    /// `metrics.pcap`: the captured queue's packets and drops.
    pub pcap: Option<super::pcap::PcapRecords>,
}

/// The run's cost (the benchmark's figures).
pub struct PerfRecord {
    pub events: u64,
    pub events_by_kind: Vec<(&'static str, u64)>,
    /// Data packets that left the bottleneck queues.
    pub bottleneck_packets: u64,
    /// Packets (data and ACKs) that left any queue: packet-hops.
    pub packet_hops: u64,
    pub wall_s: f64,
}

/// Static facts about a flow, for the flow table (the world keeps one per
/// flow, boxed, and hands it over in its [`FlowRecord`]).
#[derive(Debug, Clone)]
pub struct FlowInfo {
    /// Index of the `[[flows]]` group, or `flows.len() + w` for workload `w`.
    pub group: u32,
    /// Shared by every flow of the group (no allocation per flow).
    pub label: Arc<str>,
    pub cc: Arc<str>,
    pub ecn: EcnSetting,
    pub base_rtt_ns: u64,
    pub start_ns: u64,
    pub stop_ns: Option<u64>,
    pub size_bytes: Option<u64>,
    /// Created by a workload (short flows).
    pub from_workload: bool,
}

/// One flow: its static facts and its end-of-run counters.
pub struct FlowRecord {
    pub id: u32,
    pub info: FlowInfo,
    /// Receiver's delivered bytes when warm-up ended, and at the end.
    pub delivered_at_warmup: u64,
    pub delivered_at_end: u64,
    /// Packets of this flow the queues dropped and marked.
    pub drops: u64,
    pub marks: u64,
    /// Of `drops`, pure ACKs (whole run).
    pub ack_drops: u64,
    /// ACKs that reached the TCP sender (whole run; 0 for other sources).
    pub acks_received: u64,
    /// The sender is TCP.
    pub tcp_source: bool,
    /// Packets (datagram and QCN sources) or segments (TCP) sent.
    pub sent: u64,
    /// Sender and receiver statistics when both ends are TCP.
    pub tcp: Option<TcpRecord>,
    /// When a TCP receiver had every byte of a finite flow (may lie after
    /// the end of the run: a receiver can run ahead of real time).
    pub completed_ns: Option<u64>,
    /// A latency probe (`cc = "probe"`), and its samples: (reply arrival,
    /// request sequence, RTT), ns.
    pub is_probe: bool,
    pub probe_rtt: Vec<(u64, u64, u64)>,
}

/// A TCP connection's statistics.
pub struct TcpRecord {
    pub retransmits: u64,
    pub rtos: u64,
    pub ecn_reductions: u64,
    /// SYN retransmissions (each one an initial-RTO wait, 1 s by default).
    pub syn_retries: u64,
    pub srtt_ns: u64,
    /// ECN feedback the handshake settled on: "off", "classic" or "accurate".
    pub negotiated: &'static str,
    /// The controller's probes at the end of the run (name, value), e.g.
    /// BBRv2's `ecn_eligible`; empty for controllers without probes.
    pub cc_state: Vec<(&'static str, f64)>,
}

/// One reported queue.
pub struct QueueRecord {
    pub name: String,
    pub aqm: String,
    pub rate_bps: u64,
    pub subqueue_names: &'static [&'static str],
    /// Per sub-queue, at the end and at the end of warm-up.
    pub counters: Vec<SubqueueCounters>,
    pub counters_at_warmup: Vec<SubqueueCounters>,
    /// Per sub-queue sojourn histograms (empty when not recorded).
    pub hist: Vec<Histogram>,
    pub busy_ns: u64,
    pub busy_ns_at_warmup: u64,
    /// Raw sojourn samples: (time, sub-queue, flow, sojourn), all in ns.
    pub samples: Vec<(u64, u8, u32, u64)>,
}
