//! Queue disciplines: one file per algorithm, all behind [`Qdisc`].
//!
//! An AQM sees packets and time only (never TCP state). It stores packets it
//! accepts, and reports every drop or mark through [`QdiscCtx`], which keeps
//! the shared bookkeeping (ns-3's non-virtual interface): arrivals,
//! departures, drops and marks per sub-queue and per reason, per-flow
//! counters, and sojourn times. The engine wraps each qdisc in a
//! [`QueueSlot`](crate::net::link) that checks the conservation invariant
//! `arrived = departed + dropped + resident`.
//!
//! Adding an algorithm touches its own file, one line in [`AqmKind`] /
//! [`AnyQdisc`], and its tests.

pub mod drop_log;
pub mod bernoulli;
pub mod codel;
pub mod curvy_red;
pub mod dualpi2;
pub mod dualq;
pub mod fifo;
pub mod fq_codel;
pub mod pi;
pub mod pi2;
pub mod pie;
pub mod qcn;
pub mod red;
pub mod step;
pub mod vdq_csaqm;

use crate::packet::{Ecn, Packet};
use crate::params::{parse_params, to_value, unknown_choice};
use crate::sim::rng::SimRng;
use crate::sim::units::BufferSpec;

/// Why a packet was dropped. Indexes per-reason counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum DropReason {
    /// The buffer limit was reached (tail drop, or the fattest flow for FQ).
    Overflow = 0,
    /// The AQM chose the packet (early drop) and it was not ECN-capable,
    /// or the AQM drops regardless of ECN (e.g. PIE above 10 %).
    Aqm = 1,
    /// DualQ overload: L4S traffic dropped because the coupled probability saturated.
    Overload = 2,
    /// Random loss configured on a link.
    LinkLoss = 3,
}
pub const DROP_REASONS: [&str; 4] = ["overflow", "aqm", "overload", "link_loss"];

/// Why a packet was CE-marked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum MarkReason {
    /// The AQM's (classic) probability chose it.
    Aqm = 0,
    /// A native L4S / DCTCP step or ramp threshold.
    Step = 1,
    /// The coupled L4S probability (RFC 9332 p_CL).
    Coupled = 2,
    /// Random CE marking configured on a link.
    LinkMark = 3,
}
pub const MARK_REASONS: [&str; 4] = ["aqm", "step", "coupled", "link_mark"];

/// Most sub-queues any discipline has (DualQ: 2). Per-sub-queue stats are fixed arrays.
pub const MAX_SUBQUEUES: usize = 4;

/// Counters the context updates; the owner folds them into stats.
///
/// `repr(C)`, in this order: what every packet updates (arrival, departure,
/// sojourn sum) and the marks come first, in the first 64 bytes, so that
/// a packet's pass touches one line of them, not two; drops are rare and
/// come last (`QueueSlot`'s layout, docs/performance.md).
#[derive(Debug, Clone, Default)]
#[repr(C)]
pub struct SubqueueCounters {
    pub arrived_pkts: u64,
    pub arrived_bytes: u64,
    pub departed_pkts: u64,
    pub departed_bytes: u64,
    /// Sum of the sojourn times of departed packets (ns; set by the queue
    /// slot): over an interval, its difference / departures is the mean
    /// queue delay (the `queue_ts` series).
    pub sojourn_sum_ns: u64,
    pub marked_pkts: [u64; 4],
    pub dropped_pkts: [u64; 4],
    pub dropped_bytes: u64,
}

impl SubqueueCounters {
    pub fn drops(&self) -> u64 {
        self.dropped_pkts.iter().sum()
    }
    pub fn marks(&self) -> u64 {
        self.marked_pkts.iter().sum()
    }
}

/// Per-flow counters of what queues did to a flow's packets.
#[derive(Debug, Clone, Copy, Default)]
pub struct FlowQueueCounters {
    pub drops: u64,
    pub marks: u64,
    /// Of `drops`, packets without payload (pure ACKs): the ACK loss a
    /// shared WLAN medium's AQM inflicts on uplink flows (docs/algorithms/wlan.md).
    pub ack_drops: u64,
}

/// What a discipline may touch while it runs: the clock, its random stream,
/// the drop/mark accounting, and the feedback channel to sources.
pub struct QdiscCtx<'a> {
    pub now_ns: u64,
    pub rng: &'a mut SimRng,
    pub(crate) counters: &'a mut [SubqueueCounters; MAX_SUBQUEUES],
    pub(crate) flow_counters: &'a mut [FlowQueueCounters],
    /// Control packets for flows' sources (see [`QdiscCtx::notify_source`]);
    /// `None` where the caller routes no feedback, or the discipline sends
    /// none ([`Qdisc::notifies_sources`]).
    pub(crate) feedback: Option<&'a mut Vec<Packet>>,
    /// The queue's packet capture, which logs drops (`[metrics] pcap`).
    pub(crate) capture: Option<&'a mut drop_log::DropLog>,
}

impl<'a> QdiscCtx<'a> {
    pub fn new(
        now_ns: u64,
        rng: &'a mut SimRng,
        counters: &'a mut [SubqueueCounters; MAX_SUBQUEUES],
        flow_counters: &'a mut [FlowQueueCounters],
    ) -> Self {
        QdiscCtx { now_ns, rng, counters, flow_counters, feedback: None, capture: None }
    }

    /// Log drops into the queue's packet capture, if it has one.
    #[inline(always)]
    pub fn with_capture(mut self, capture: Option<&'a mut drop_log::DropLog>) -> Self {
        self.capture = capture;
        self
    }

    /// Collect what [`QdiscCtx::notify_source`] sends into `out`; the engine
    /// routes it from there (the queue slot's feedback buffer). `None`: the
    /// discipline sends nothing ([`Qdisc::notifies_sources`]).
    #[inline(always)]
    pub fn with_feedback(mut self, out: Option<&'a mut Vec<Packet>>) -> Self {
        self.feedback = out;
        self
    }

    /// Send a control packet `msg` (e.g. a QCN congestion notification
    /// message, `PacketKind::Cnm`) to the source of the flow `about` belongs
    /// to. The engine delivers it over a pure delay equal to the one-way
    /// propagation delay from that source to this queue, as if reflected
    /// straight back (802.1Qau CNMs are addressed to the sampled frame's
    /// source). Only packets travelling from a source (data, SYN, datagrams)
    /// can be reflected; for others nothing is sent.
    pub fn notify_source(&mut self, about: &Packet, mut msg: Packet) {
        if !about.from_source() {
            return;
        }
        msg.flow = about.flow;
        msg.ts_ns = self.now_ns;
        msg.enq_ns = self.now_ns;
        let out = self.feedback.as_deref_mut();
        out.expect("a discipline that notifies sources says so (Qdisc::notifies_sources)").push(msg);
    }

    /// Discard `pkt` for `reason`.
    pub fn drop(&mut self, pkt: Packet, reason: DropReason) {
        let c = &mut self.counters[pkt.subq as usize];
        c.dropped_pkts[reason as usize] += 1;
        c.dropped_bytes += pkt.size_bytes as u64;
        if let Some(f) = self.flow_counters.get_mut(pkt.flow as usize) {
            f.drops += 1;
            f.ack_drops += u64::from(!pkt.carries_payload());
        }
        if let Some(cap) = self.capture.as_deref_mut() {
            cap.record(self.now_ns, &pkt, reason as u8);
        }
    }

    /// Set CE on an ECN-capable packet. Returns false (and changes nothing)
    /// for a Not-ECT packet, which the caller must then drop.
    ///
    /// A packet that is CE already (marked upstream, or by this queue's AQM
    /// before its link's random marking) stays CE and is not counted again:
    /// a queue's `marks` are the packets it turned CE, at most one per packet
    /// (Linux's qdisc statistics would count it again).
    pub fn mark(&mut self, pkt: &mut Packet, reason: MarkReason) -> bool {
        if !pkt.ecn.is_ect() {
            return false;
        }
        if pkt.ecn != Ecn::Ce {
            pkt.ecn = Ecn::Ce;
            self.counters[pkt.subq as usize].marked_pkts[reason as usize] += 1;
            if let Some(f) = self.flow_counters.get_mut(pkt.flow as usize) {
                f.marks += 1;
            }
        }
        true
    }

    /// RFC 3168 §7: signal congestion by CE if the packet is ECN-capable,
    /// otherwise by dropping it (counted here; the caller discards its
    /// copy). True if it survives. In place: a verdict on a packet the
    /// caller keeps does not move it.
    #[inline]
    pub fn mark_or_drop(&mut self, pkt: &mut Packet, mark: MarkReason, drop: DropReason) -> bool {
        if self.mark(pkt, mark) {
            return true;
        }
        self.drop(*pkt, drop);
        false
    }
}

/// A queue's capacity, resolved from the scenario's buffer (packets, bytes,
/// or time at the link rate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueLimit {
    pub pkts: Option<u64>,
    pub bytes: Option<u64>,
}

impl QueueLimit {
    pub fn from_spec(spec: BufferSpec, rate_bps: u64) -> Self {
        match spec {
            BufferSpec::Packets(p) => QueueLimit { pkts: Some(p), bytes: None },
            BufferSpec::Bytes(b) => QueueLimit { pkts: None, bytes: Some(b) },
            BufferSpec::Time(t) => QueueLimit {
                pkts: None,
                bytes: Some(crate::sim::bytes_in(rate_bps, t)),
            },
        }
    }

    /// Would adding a packet of `size` to a queue holding (`len_pkts`,
    /// `backlog_bytes`) exceed the limit?
    #[inline]
    pub fn would_overflow(&self, len_pkts: usize, backlog_bytes: u64, size: u32) -> bool {
        self.pkts.is_some_and(|p| len_pkts as u64 + 1 > p)
            || self.bytes.is_some_and(|b| backlog_bytes + size as u64 > b)
    }

    /// The limit in bytes, using `mtu` per packet for packet limits.
    pub fn as_bytes(&self, mtu: u32) -> u64 {
        match (self.pkts, self.bytes) {
            (_, Some(b)) => b,
            (Some(p), None) => p * mtu as u64,
            (None, None) => u64::MAX,
        }
    }
}

/// What a discipline is told about its link when it is built.
#[derive(Debug, Clone, Copy)]
pub struct QdiscEnv {
    pub link_rate_bps: u64,
    pub mtu_bytes: u32,
    pub limit: QueueLimit,
}

/// The interface every queue discipline implements.
///
/// `enqueue` takes ownership: the discipline either stores the packet or
/// reports it through `ctx.drop`. `dequeue` may drop or mark packets (CoDel,
/// DualPI2) before returning one; it returns `None` only when it holds no
/// packet it is willing to send now.
pub trait Qdisc {
    /// Sub-queue of `pkt` (index into [`Qdisc::subqueue_names`]); called by
    /// the engine before `enqueue` so arrivals are counted per sub-queue.
    fn classify(&self, _pkt: &Packet) -> u8 {
        0
    }
    fn enqueue(&mut self, pkt: Packet, ctx: &mut QdiscCtx);
    fn dequeue(&mut self, ctx: &mut QdiscCtx) -> Option<Packet>;
    /// `enqueue` then `dequeue` at the same instant, called only when the
    /// discipline holds no packet and the transmitter is idle (the engine's
    /// early hand-off, `net::link`; `pkt.enq_ns` is `ctx.now_ns`). An
    /// override must leave the discipline exactly as that pair would; it
    /// exists to skip the pair's work on the packet store.
    #[inline]
    fn pass_through(&mut self, pkt: Packet, ctx: &mut QdiscCtx) -> Option<Packet> {
        self.enqueue(pkt, ctx);
        self.dequeue(ctx)
    }
    /// Packets resident.
    fn len_pkts(&self) -> usize;
    /// Bytes resident.
    fn backlog_bytes(&self) -> u64;
    /// Names of the sub-queues, e.g. `["l4s", "classic"]`.
    fn subqueue_names(&self) -> &'static [&'static str] {
        &["all"]
    }
    /// Packets resident per sub-queue (for time series); default: all in 0.
    fn subqueue_len_pkts(&self, sub: usize) -> usize {
        if sub == 0 {
            self.len_pkts()
        } else {
            0
        }
    }
    /// When the periodic update (PIE, PI2, ARED, ...) next wants to run.
    fn next_timer_ns(&self) -> Option<u64> {
        None
    }
    fn on_timer(&mut self, _ctx: &mut QdiscCtx) {}
    /// Whether the discipline sends control packets to sources
    /// ([`QdiscCtx::notify_source`]); only then does the engine give it a
    /// feedback buffer and look into it after each packet.
    fn notifies_sources(&self) -> bool {
        false
    }
    /// Names of internal probabilities/state worth plotting over time.
    fn probe_names(&self) -> &'static [&'static str] {
        &[]
    }
    /// Current values, in the order of `probe_names`.
    fn probe(&self, _out: &mut [f64]) {}
}

/// A discipline that decides each packet's fate on arrival, from the
/// backlog it finds alone, and serves in arrival order (nothing at dequeue,
/// no timer, no feedback). Its packets' departure times are then known on
/// arrival, so the engine may keep the backlog itself and only ask for the
/// decision (departure lookahead, see `net::link`).
pub trait DecidesOnArrival: Qdisc {
    /// The arrival decision alone, given the backlog the caller keeps: true
    /// if accepted (`pkt` perhaps marked), false if dropped (reported
    /// through `ctx`). The discipline stores nothing.
    fn admit(&mut self, pkt: &mut Packet, backlog_pkts: usize, backlog_bytes: u64, ctx: &mut QdiscCtx) -> bool;
}

/// Static dispatch over the disciplines (no boxes, `Clone` for snapshots).
#[derive(Debug, Clone)]
pub enum AnyQdisc {
    Fifo(fifo::Fifo),
    Step(step::Step),
    Codel(codel::Codel),
    FqCodel(fq_codel::FqCodel),
    Pie(pie::Pie),
    Red(red::Red),
    Pi2(pi2::Pi2),
    DualPi2(dualpi2::DualPi2),
    CurvyRed(curvy_red::CurvyRed),
    VdqCsaqm(vdq_csaqm::VdqCsaqm),
    Qcn(qcn::Qcn),
    Bernoulli(bernoulli::Bernoulli),
}

macro_rules! dispatch {
    ($self:expr, $q:ident => $e:expr) => {
        match $self {
            AnyQdisc::Fifo($q) => $e,
            AnyQdisc::Step($q) => $e,
            AnyQdisc::Codel($q) => $e,
            AnyQdisc::FqCodel($q) => $e,
            AnyQdisc::Pie($q) => $e,
            AnyQdisc::Red($q) => $e,
            AnyQdisc::Pi2($q) => $e,
            AnyQdisc::DualPi2($q) => $e,
            AnyQdisc::CurvyRed($q) => $e,
            AnyQdisc::VdqCsaqm($q) => $e,
            AnyQdisc::Qcn($q) => $e,
            AnyQdisc::Bernoulli($q) => $e,
        }
    };
}

/// Put an arriving packet in its sub-queue and count the arrival there.
#[inline(always)]
fn classify_and_count<Q: Qdisc>(q: &Q, pkt: &mut Packet, ctx: &mut QdiscCtx) {
    pkt.subq = q.classify(pkt);
    let c = &mut ctx.counters[pkt.subq as usize];
    c.arrived_pkts += 1;
    c.arrived_bytes += pkt.size_bytes as u64;
}

/// The per-packet arrival paths, each with one dispatch on the discipline
/// (classifying and then enqueueing through the enum would dispatch twice).
impl AnyQdisc {
    /// Classify, count the arrival, enqueue.
    #[inline]
    pub fn classify_and_enqueue(&mut self, mut pkt: Packet, ctx: &mut QdiscCtx) {
        dispatch!(self, q => {
            classify_and_count(q, &mut pkt, ctx);
            q.enqueue(pkt, ctx)
        })
    }

    /// Classify, count the arrival, and [pass it
    /// through](Qdisc::pass_through) an empty discipline.
    #[inline]
    pub fn classify_and_pass_through(&mut self, mut pkt: Packet, ctx: &mut QdiscCtx) -> Option<Packet> {
        dispatch!(self, q => {
            classify_and_count(q, &mut pkt, ctx);
            q.pass_through(pkt, ctx)
        })
    }

    /// Whether this discipline, as configured, [decides on
    /// arrival](DecidesOnArrival): the disciplines listed here are exactly
    /// those that [`classify_and_admit`](AnyQdisc::classify_and_admit) serves.
    pub fn decides_on_arrival(&self) -> bool {
        match self {
            AnyQdisc::Fifo(_) => true,
            AnyQdisc::Step(q) => q.decides_on_arrival(),
            _ => false,
        }
    }

    /// Departure lookahead keeps its own 40-byte records and never stores a
    /// packet in the discipline: give back the discipline's pre-sized packet
    /// ring (16 KB for 250 packets; a fat tree has thousands of queues).
    pub fn release_packet_storage(&mut self) {
        match self {
            AnyQdisc::Fifo(q) => q.release_packet_storage(),
            AnyQdisc::Step(q) => q.release_packet_storage(),
            _ => {}
        }
    }

    /// Classify, count the arrival, then [`DecidesOnArrival::admit`]
    /// (departure lookahead, enabled only where `decides_on_arrival` holds).
    #[inline]
    pub fn classify_and_admit(&mut self, pkt: &mut Packet, backlog_pkts: usize, backlog_bytes: u64, ctx: &mut QdiscCtx) -> bool {
        #[inline(always)]
        fn admit<Q: DecidesOnArrival>(q: &mut Q, pkt: &mut Packet, pkts: usize, bytes: u64, ctx: &mut QdiscCtx) -> bool {
            classify_and_count(q, pkt, ctx);
            q.admit(pkt, pkts, bytes, ctx)
        }
        match self {
            AnyQdisc::Fifo(q) => admit(q, pkt, backlog_pkts, backlog_bytes, ctx),
            AnyQdisc::Step(q) => admit(q, pkt, backlog_pkts, backlog_bytes, ctx),
            _ => unreachable!("departure lookahead on a discipline that does not decide on arrival"),
        }
    }
}

impl Qdisc for AnyQdisc {
    #[inline]
    fn classify(&self, pkt: &Packet) -> u8 {
        dispatch!(self, q => q.classify(pkt))
    }
    #[inline]
    fn enqueue(&mut self, pkt: Packet, ctx: &mut QdiscCtx) {
        dispatch!(self, q => q.enqueue(pkt, ctx))
    }
    /// Always inlined: a transmission's start takes the packet straight into
    /// its slot, where an out-of-line dispatch would return it through a copy.
    #[inline(always)]
    fn dequeue(&mut self, ctx: &mut QdiscCtx) -> Option<Packet> {
        dispatch!(self, q => q.dequeue(ctx))
    }
    #[inline]
    fn len_pkts(&self) -> usize {
        dispatch!(self, q => q.len_pkts())
    }
    #[inline]
    fn backlog_bytes(&self) -> u64 {
        dispatch!(self, q => q.backlog_bytes())
    }
    fn subqueue_names(&self) -> &'static [&'static str] {
        dispatch!(self, q => q.subqueue_names())
    }
    fn subqueue_len_pkts(&self, sub: usize) -> usize {
        dispatch!(self, q => q.subqueue_len_pkts(sub))
    }
    #[inline]
    fn next_timer_ns(&self) -> Option<u64> {
        dispatch!(self, q => q.next_timer_ns())
    }
    fn on_timer(&mut self, ctx: &mut QdiscCtx) {
        dispatch!(self, q => q.on_timer(ctx))
    }
    fn notifies_sources(&self) -> bool {
        dispatch!(self, q => q.notifies_sources())
    }
    fn probe_names(&self) -> &'static [&'static str] {
        dispatch!(self, q => q.probe_names())
    }
    fn probe(&self, out: &mut [f64]) {
        dispatch!(self, q => q.probe(out))
    }
}

/// The registry: name -> (build, defaults). One line per algorithm.
pub struct AqmEntry {
    pub name: &'static str,
    pub summary: &'static str,
    /// Build from (strict) params; returns the discipline and its normalised params.
    pub build: fn(&serde_json::Value, &QdiscEnv) -> Result<(AnyQdisc, serde_json::Value), String>,
}

macro_rules! entry {
    ($name:expr, $summary:expr, $cfg:ty, $variant:ident, $ty:ty) => {
        AqmEntry {
            name: $name,
            summary: $summary,
            build: |params, env| {
                let cfg: $cfg = parse_params(params)?;
                let q = <$ty>::new(cfg.clone(), env)?;
                Ok((AnyQdisc::$variant(q), to_value(&cfg)))
            },
        }
    };
}

pub const REGISTRY: &[AqmEntry] = &[
    entry!("fifo", "tail-drop FIFO", fifo::FifoConfig, Fifo, fifo::Fifo),
    entry!("step", "DCTCP-style instantaneous step ECN marking at threshold K", step::StepConfig, Step, step::Step),
    entry!("codel", "CoDel, RFC 8289", codel::CodelConfig, Codel, codel::Codel),
    entry!("fq_codel", "FQ-CoDel, RFC 8290", fq_codel::FqCodelConfig, FqCodel, fq_codel::FqCodel),
    entry!("red", "RED (Floyd-Jacobson 1993), ns-3 semantics", red::RedConfig, Red, red::Red),
    entry!("ared", "Adaptive RED (Floyd-Gummadi-Shenker 2001)", red::AredConfig, Red, red::Red),
    entry!("pie", "PIE, RFC 8033", pie::PieConfig, Pie, pie::Pie),
    entry!("pi2", "PI2 single queue (CoNEXT 2016)", pi2::Pi2Config, Pi2, pi2::Pi2),
    entry!("dualpi2", "DualQ Coupled PI2, RFC 9332", dualpi2::DualPi2Config, DualPi2, dualpi2::DualPi2),
    entry!("curvy_red", "DualQ Curvy RED, RFC 9332 App. B", curvy_red::CurvyRedConfig, CurvyRed, curvy_red::CurvyRed),
    entry!("vdq_csaqm", "Virtual DualQ Core-Stateless AQM for per-packet values (Nádas et al., ANRW 2020)", vdq_csaqm::VdqCsaqmConfig, VdqCsaqm, vdq_csaqm::VdqCsaqm),
    entry!("qcn", "QCN congestion point, IEEE 802.1Qau (tail-drop FIFO + CNM feedback)", qcn::QcnConfig, Qcn, qcn::Qcn),
    entry!("bernoulli", "drops or CE-marks each arrival independently with probability p (a validation instrument)", bernoulli::BernoulliConfig, Bernoulli, bernoulli::Bernoulli),
];

pub fn aqm_names() -> Vec<&'static str> {
    REGISTRY.iter().map(|e| e.name).collect()
}

pub fn lookup(name: &str) -> Option<&'static AqmEntry> {
    REGISTRY.iter().find(|e| e.name == name)
}

/// Build a discipline by name; errors are one line naming the allowed values.
pub fn build(name: &str, params: &serde_json::Value, env: &QdiscEnv) -> Result<(AnyQdisc, serde_json::Value), String> {
    match lookup(name) {
        Some(e) => (e.build)(params, env),
        None => Err(unknown_choice("AQM", name, &aqm_names())),
    }
}

#[cfg(test)]
pub(crate) mod testing;

#[cfg(test)]
mod tests {
    use super::testing::{data, env, Harness};
    use super::*;
    use crate::packet::Ecn;

    /// Departure lookahead trusts `decides_on_arrival`: every discipline it
    /// names must be served by `classify_and_admit` (which would panic), and
    /// decide as its own `enqueue` does, given the same backlog.
    #[test]
    fn every_discipline_that_decides_on_arrival_admits_as_it_enqueues() {
        let mut deciders = vec![];
        for e in REGISTRY {
            for params in [serde_json::Value::Null, serde_json::json!({"threshold": "2pkt"})] {
                let Ok((q, _)) = (e.build)(&params, &env(10_000_000, 3)) else { continue };
                if !q.decides_on_arrival() {
                    continue;
                }
                deciders.push(e.name);
                let (mut ahead, mut queued) = (Harness::new(q.clone()), Harness::new(q));
                let mut backlog = 0;
                for _ in 0..5 {
                    let mut p = data(1, Ecn::Ect1);
                    let (q, mut ctx) = ahead.ctx(0);
                    backlog += usize::from(q.classify_and_admit(&mut p, backlog, backlog as u64 * 1500, &mut ctx));
                    let (q, mut ctx) = queued.ctx(0);
                    q.classify_and_enqueue(data(1, Ecn::Ect1), &mut ctx);
                }
                let (a, b) = (&ahead.counters[0], &queued.counters[0]);
                assert_eq!((backlog, a.arrived_pkts, a.drops(), a.marks()), (queued.q.len_pkts(), b.arrived_pkts, b.drops(), b.marks()), "{} {params}", e.name);
                assert!(a.drops() > 0, "{} {params}: the limit of 3 packets was never reached", e.name);
                assert_eq!(a.marks() > 0, !params.is_null(), "{} {params}: marks only above K = 2", e.name);
            }
        }
        deciders.dedup();
        assert_eq!(deciders, ["fifo", "step"]);
    }
}
