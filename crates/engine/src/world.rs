//! The world: builds a validated scenario and runs its event loop.
//!
//! One event list drives everything. Packets move by value between queues
//! (events only for the packet being sent), delay lines (events only for the
//! head) and endpoints (timers are lazy: a timer that moves later is not
//! re-inserted, the early event just finds nothing due and re-arms).

// These imports are the prelude of the world's submodules (`use super::*`).
use crate::aqm::{FlowQueueCounters, Qdisc};
use crate::cc::{self, AnyCc, CongestionControl};
use crate::metrics::histogram::Histogram;
use crate::metrics::series::{FlowSeries, ProbeSeries, QueueSeries};
use crate::metrics::{summary, Results};
use crate::net::delay_line::{DelayLine, Lines};
use crate::net::link::Link;
use crate::net::medium::Medium;
use crate::net::sojourn_log::SojournLog;
use crate::packet::{Packet, PacketKind};
use crate::net::route::{self, Hop, Routes, Stage};
use crate::ppv::marker::PvMarker;
use crate::registry::resolve_ecn;
use crate::scenario::{Scenario, SizeDist};
use crate::sim::prefetch::prefetch;
use crate::sim::rng::{BoundedPareto, Domain, SimRng};
use crate::sim::scheduler::{Event, EventQueue};
use crate::transport::rate_source::{self, RateSourceSpec};
use crate::transport::tcp_receiver::TcpReceiver;
use crate::transport::tcp_sender::{SenderSpec, SenderState, TcpSender};
use crate::transport::udp::DatagramSink;
use crate::transport::{EcnSetting, TcpConfig};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::Arc;

pub use crate::transport::endpoint::{Sink, Source};

mod access_reuse;
mod build;
mod early_hand_off;
mod event_loop;
mod fat_tree;
mod feedback;
mod flow;
mod flow_routes;
mod medium;
mod outbox;
mod records;
mod retire;
mod sample;
mod topology;

pub use crate::metrics::records::FlowInfo;
pub use flow::Flow;
use build::Ends;
use flow::{FlowSizes, Incast, WorkloadGen, NO_TIMER};

use topology::{Attach, QueueOptions, Topology};

/// The owner of a topology's queue in `World::sampled_queues`: no flow.
const NO_OWNER: u32 = u32::MAX;

pub struct World {
    now_ns: u64,
    end_ns: u64,
    warmup_ns: u64,
    seed: u64,
    events: EventQueue,
    pub links: Vec<Link>,
    /// Shared half-duplex media (`net::medium`); empty without WLAN links.
    mediums: Vec<Medium>,
    lines: Lines,
    line_index: rustc_hash::FxHashMap<route::LineKey, u32>,
    routes: Routes,
    /// Buffers a new flow's paths are written into (`Topology::paths`) and
    /// its two routes compiled into (`route::compile`).
    path_scratch: topology::FlowPaths,
    route_scratch: [Vec<Stage>; 2],
    /// The routes compiled so far, by what compiling their paths read (`flow_routes`).
    known_routes: flow_routes::KnownRoutes,
    /// The flows alive, and retired flows' places not yet taken again: a
    /// flow is found through `slot_of` (`world::retire`).
    pub flows: Vec<Flow>,
    /// By flow id, the flow's place in `flows` (`RETIRED` once retired).
    slot_of: Vec<u32>,
    /// Places in `flows` that retired flows left, for new flows to take.
    free_slots: Vec<u32>,
    /// The `flows` table's rows of the flows retired so far, in the order
    /// they retired (their records are not kept: `world::retire`).
    retired_rows: crate::metrics::flow_rows::FlowRows,
    /// A workload's finite TCP flows, in the order they are next looked at
    /// for retirement (`World::retire_finished_flows`).
    retire_candidates: VecDeque<u32>,
    /// How many of them a new flow looks at (`retire::RETIRE_LOOKS`; 0
    /// without workloads, when nothing may retire
    /// (`retire::retirement_allowed`), or in tests that check retiring
    /// changes nothing).
    retire_looks: usize,
    /// Tests only: every candidate that can retire does, after every event
    /// (`World::retire_every_finished_flow`), so that a condition of
    /// `can_retire` is put to the test at the earliest moment it matters.
    #[cfg(test)]
    retire_eagerly: bool,
    /// No flow can retire (no workload, or `retire_looks` 0 when built):
    /// every flow's place is its id (`World::slot`).
    slots_are_ids: bool,
    /// The largest clock offset of any flow ever started (`catch_up_sources`).
    max_clock_offset_ns: u64,
    flow_counters: Vec<FlowQueueCounters>,
    /// The flows a sample still visits, in id order: a flow leaves once its
    /// last sample is taken (`Flow::sampled_done`), so that a sample costs
    /// the flows alive, not every flow a workload ever started. Empty
    /// without time series (no sample runs).
    sampled_flows: Vec<u32>,
    /// Emptied buffers of lagging sources' owed samples
    /// (`Flow::pending_samples`), handed to the next flow that owes one: a
    /// web flow lives a sample or two, and allocating each its own buffer
    /// cost about 100 instructions a flow (docs/performance.md).
    sample_buffers: Vec<Vec<(u64, u64)>>,
    /// The queues a sample settles, in link order, each with the flow that
    /// owns it (`NO_OWNER` for a topology's queues): every queue but the
    /// access queues (a dumbbell's `access_rate`) whose flows have finished
    /// and which have emptied, which no settling would change again. A
    /// workload adds an access queue with every flow it starts, and a
    /// sample that settled them all cost the queues of every flow ever
    /// started. Empty without time series (no sample runs).
    sampled_queues: Vec<(u32, u32)>,
    /// A dumbbell's access queues that finite TCP flows own, each with its
    /// flow, in the order they are next looked at for reuse
    /// (`World::take_free_access_queue`). Empty without access queues.
    access_queues: VecDeque<(u32, u32)>,
    /// How many of them a new flow looks at (`access_reuse::REUSE_LOOKS`;
    /// 0, a queue per flow, in tests that check reuse changes nothing).
    reuse_looks: usize,
    /// Packets that left access queues since rebuilt for another flow:
    /// part of `packet_hops`, which a rebuilt queue's counters no longer hold.
    reused_access_departed_pkts: u64,
    topology: Topology,
    workloads: Vec<WorkloadGen>,
    /// Buffers for what endpoints send (`outbox`).
    outboxes: outbox::OutboxPool,
    tcp: TcpConfig,
    lookahead: bool,
    /// Early hand-off for queues without departure lookahead (`engine.early_hand_off`,
    /// by default from `EARLY_HAND_OFF_MIN_QUEUES` queues on; only with `lookahead`).
    early_hand_off: bool,
    /// `engine.prefetch`, and the flow table is the prefetched kind (see `prefetch_flows_behind`).
    prefetch_flows: bool,
    /// `engine.prefetch` from `MEMORY_SHORTCUTS_MIN_LINKS` links on (see `prefetch_next_event`).
    prefetch_events: bool,
    /// `prefetch_events`, one event deeper: from `DEEP_PREFETCH_MIN_LINKS` links.
    prefetch_deep: bool,
    /// Deferred histogram buckets (`net::sojourn_log`), on where many queues
    /// share the caches.
    sojourn_log: SojournLog,
    /// The empty route feedback packets travel on (created on first use; see `feedback.rs`).
    feedback_route: Option<u32>,
    /// After the end: lagging sources finish their last moments (see `catch_up_sources`).
    catching_up: bool,
    /// The next time delivered bytes are read (sample, end of warm-up, end).
    next_checkpoint_ns: u64,
    scenario: Scenario,
    sample_interval_ns: u64,
    timeseries: bool,
    flow_ts: FlowSeries,
    queue_ts: QueueSeries,
    probes: ProbeSeries,
    /// Every TCP RTT sample after warm-up (`metrics.rtt_histogram`), boxed: 43 KB.
    rtt_hist: Option<Box<Histogram>>,
    wall_s: f64,
}

impl World {

    pub fn events_executed(&self) -> u64 {
        self.events.events_popped()
    }

    pub fn events_by_kind(&self) -> [(&'static str, u64); 9] {
        self.events.events_by_kind()
    }

    pub fn bottleneck_packets(&self) -> u64 {
        self.links.iter().filter(|l| l.bottleneck).filter_map(|l| l.queue.as_ref()).map(|q| q.data_departed).sum()
    }

    /// Packets (data and ACKs) that left any queue so far.
    pub fn packet_hops(&self) -> u64 {
        self.reused_access_departed_pkts + self.links.iter().filter_map(|l| l.queue.as_ref()).map(|q| q.departed_pkts()).sum::<u64>()
    }

    pub fn wall_s(&self) -> f64 {
        self.wall_s
    }
    pub fn warmup_ns(&self) -> u64 {
        self.warmup_ns
    }
    pub fn end_ns(&self) -> u64 {
        self.end_ns
    }
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }
    pub fn seed(&self) -> u64 {
        self.seed
    }
    pub fn flow_counters(&self) -> &[FlowQueueCounters] {
        &self.flow_counters
    }

    /// Consume the world into tables and the summary document.
    pub fn into_results(self) -> Results {
        summary::build(self.into_records())
    }
}

/// Test support: runs `a` and `b` of one scenario agree in every table, in
/// the summary, and in the counts of events, bottleneck packets and
/// packet-hops (the summary's `perf` but its wall-clock figures). `what`
/// names the case in a failure.
#[cfg(test)]
pub(crate) fn assert_same_results(what: &str, a: &Results, b: &Results) {
    for t in ["flows", "queues", "sojourn_hist", "sojourn_samples", "flow_ts", "queue_ts", "probes"] {
        assert_eq!(format!("{:?}", a.table(t)), format!("{:?}", b.table(t)), "{what}: table {t}");
        // Their codes too: the front hands them over as they are.
        let columns = |r: &Results| -> Vec<(Vec<u32>, Vec<String>)> {
            r.table(t).columns.iter().filter_map(|(_, c)| match c {
                crate::metrics::Column::Str(c) => Some((c.codes().to_vec(), c.values().to_vec())),
                _ => None,
            })
            .collect()
        };
        assert!(columns(a) == columns(b), "{what}: table {t}'s text columns are coded differently");
    }
    let (mut a, mut b) = (a.summary(), b.summary());
    for k in ["events", "bottleneck_packets", "packet_hops", "events_by_kind"] {
        assert_eq!(a["perf"][k], b["perf"][k], "{what}: perf.{k}");
    }
    a["perf"] = Value::Null;
    b["perf"] = Value::Null;
    assert_eq!(a, b, "{what}: summary");
}

/// Parse, validate, build and run a scenario given as JSON.
pub fn run_json(json: &str, progress: impl FnMut(u64) -> bool) -> Result<Results, String> {
    let s = crate::scenario::parse(json)?;
    let mut w = World::new(&s)?;
    w.run(progress)?;
    Ok(w.into_results())
}

