//! The world: builds a validated scenario and runs its event loop.
//!
//! One event list drives everything. Packets move by value between queues
//! (events only for the packet being sent), delay lines (events only for the
//! head) and endpoints (timers are lazy: a timer that moves later is not
//! re-inserted, the early event just finds nothing due and re-arms).

use crate::aqm::{FlowQueueCounters, Qdisc};
use crate::cc::{self, CongestionControl};
use crate::metrics::series::{FlowSeries, ProbeSeries, QueueSeries};
use crate::metrics::{summary, Results};
use crate::net::delay_line::DelayLine;
use crate::net::link::Link;
use crate::packet::{Packet, PacketKind};
use crate::net::route::{self, Hop, Routes, Stage};
use crate::ppv::marker::PvMarker;
use crate::scenario::{resolve_ecn, Scenario, SizeDist};
use crate::sim::prefetch::prefetch;
use crate::sim::rng::{Domain, SimRng};
use crate::sim::scheduler::{Event, EventQueue};
use crate::transport::rate_source::{self, RateSourceSpec};
use crate::transport::tcp_receiver::TcpReceiver;
use crate::transport::tcp_sender::{SenderSpec, SenderState, TcpSender};
use crate::transport::udp::DatagramSink;
use crate::transport::{EcnSetting, TcpConfig};
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

pub use crate::transport::endpoint::{Sink, Source};

mod feedback;
mod records;
mod topology;

use topology::{Attach, QueueOptions, Topology};

/// Static facts about a flow, for the flow table.
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

/// Aligned to a cache line so that every record spans the same lines (936
/// bytes padded to 960): A-100 and C-10000 miss L1 about 0.5 times fewer
/// per packet than with records straddling lines at random (cachegrind).
#[derive(Debug, Clone)]
#[repr(align(64))]
pub struct Flow {
    /// Cold facts, out of line so the hot per-packet state packs tighter.
    pub info: Box<FlowInfo>,
    pub source: Source,
    pub sink: Sink,
    fwd_route: u32,
    rev_route: u32,
    source_timer_at: Option<u64>,
    sink_timer_at: Option<u64>,
    /// Receiver's delivered bytes when warm-up ended.
    pub delivered_at_warmup: u64,
    /// Delivered bytes at the end of the run.
    pub delivered_at_end: u64,
    /// Packets the receiver processed ahead of real time (see
    /// [`Stage::SinkLine`]) that arrive after the next checkpoint (sample,
    /// end of warm-up, end of run): (arrival time, delivered bytes before
    /// it), so checkpoints count only what has really arrived.
    early: VecDeque<(u64, u64)>,
    /// The source runs this far behind real time: its pure-delay first hop
    /// is folded into its clock (see `add_flow`).
    clock_offset_ns: u64,
    /// Samples (real time, delivered bytes) whose source-side values are
    /// taken once the lagging source's clock reaches them.
    pending_samples: Vec<(u64, u64)>,
    /// Stopped being sampled (finished before the last sample).
    sampled_done: bool,
    /// Per Packet Value edge marker (`[[flows]] marker`); None costs one test per send.
    pub marker: Option<Box<PvMarker>>,
}

impl Flow {
    /// Prefetch what the record points to (see [`crate::sim::prefetch`]).
    #[inline(always)]
    fn prefetch_heap_state(&self) {
        if let Source::Tcp(s) = &self.source {
            s.prefetch_heap_state();
        }
    }

    /// Bytes the receiver has processed (possibly ahead of real time).
    fn processed_bytes(&self) -> u64 {
        match &self.sink {
            Sink::Tcp(r) => r.delivered_bytes(),
            Sink::Datagram(d) => d.bytes,
        }
    }

    /// In-order bytes delivered by real time `now_ns`.
    pub fn delivered_bytes_at(&mut self, now_ns: u64) -> u64 {
        while self.early.front().is_some_and(|&(t, _)| t <= now_ns) {
            self.early.pop_front();
        }
        match self.early.front() {
            Some(&(_, before)) => before,
            None => self.processed_bytes(),
        }
    }
}

/// A workload generator (Poisson arrivals of finite TCP flows).
#[derive(Debug, Clone)]
struct WorkloadGen {
    index: usize,
    rng: SimRng,
    mean_gap_ns: f64,
    stop_ns: u64,
    size: SizeDist,
    params: Value,
    ecn: EcnSetting,
    attach: Attach,
    label: Arc<str>,
    cc_name: Arc<str>,
}

pub struct World {
    now_ns: u64,
    end_ns: u64,
    warmup_ns: u64,
    seed: u64,
    events: EventQueue,
    pub links: Vec<Link>,
    lines: Vec<DelayLine>,
    line_index: BTreeMap<(u64, Vec<u32>), u32>,
    routes: Routes,
    pub flows: Vec<Flow>,
    flow_counters: Vec<FlowQueueCounters>,
    topology: Topology,
    workloads: Vec<WorkloadGen>,
    /// Packets an endpoint just emitted, sent from here (see `emit`).
    scratch: Vec<Packet>,
    tcp: TcpConfig,
    lookahead: bool,
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
    wall_s: f64,
}

/// Flow tables larger than a per-core L2 cache (512 KiB to 1 MiB on current
/// x86 CPUs) are prefetched; smaller ones mostly hit in L2 already.
const PREFETCH_MIN_FLOWS: usize = (1 << 20) / std::mem::size_of::<Flow>();

/// Progress is reported every this many events.
const PROGRESS_EVERY: u64 = 1 << 16;

impl World {
    /// Build from a validated scenario (see [`crate::scenario::parse`]).
    pub fn new(s: &Scenario) -> Result<World, String> {
        let opt = QueueOptions {
            seed: s.seed,
            mtu: s.tcp.mtu_bytes,
            histograms: s.metrics.sojourn_histograms,
            sample_every: s.metrics.sojourn_samples_every,
        };
        let (topology, mut links) = Topology::build(s, opt)?;
        if s.engine.lookahead {
            for (i, l) in links.iter_mut().enumerate() {
                l.enable_departure_lookahead(topology.rate_changes.iter().any(|c| c.1 as usize == i));
            }
        }
        let mut w = World {
            now_ns: 0,
            end_ns: s.duration_ns,
            warmup_ns: s.warmup_ns,
            seed: s.seed,
            events: EventQueue::new(),
            links,
            lines: vec![],
            line_index: BTreeMap::new(),
            routes: Routes::default(),
            flows: vec![],
            flow_counters: vec![],
            topology,
            workloads: vec![],
            scratch: Vec::with_capacity(64),
            tcp: s.tcp.clone(),
            lookahead: s.engine.lookahead,
            feedback_route: None,
            catching_up: false,
            next_checkpoint_ns: 0,
            scenario: s.clone(),
            sample_interval_ns: s.metrics.interval_ns,
            timeseries: s.metrics.timeseries,
            flow_ts: FlowSeries::default(),
            queue_ts: QueueSeries::default(),
            probes: ProbeSeries::default(),
            wall_s: 0.0,
        };
        // Exact room for the long-lived flows: growing by doubling would hold
        // the old and the new table at once (1.5 × the table at 10 000 flows).
        let long_lived: usize = s.flows.iter().map(|g| g.count as usize).sum();
        w.flows.reserve_exact(long_lived);
        w.flow_counters.reserve_exact(long_lived);
        for (gi, g) in s.flows.iter().enumerate() {
            let ecn = resolve_ecn(&format!("flows[{gi}]"), &g.cc, g.ecn.as_deref())?;
            let attach = attach_of(g.rtt_ns, &g.src, &g.dst);
            let label: Arc<str> = g.label.clone().unwrap_or_else(|| g.cc.clone()).into();
            let cc_name: Arc<str> = g.cc.as_str().into();
            for _ in 0..g.count {
                let id = w.flows.len() as u64;
                let jitter = if g.start_jitter_ns > 0 {
                    SimRng::derive(s.seed, Domain::Flow, id).below(g.start_jitter_ns + 1)
                } else {
                    0
                };
                let info = FlowInfo {
                    group: gi as u32,
                    label: label.clone(),
                    cc: cc_name.clone(),
                    ecn,
                    base_rtt_ns: 0,
                    start_ns: g.start_ns + jitter,
                    stop_ns: g.stop_ns,
                    size_bytes: g.size_bytes,
                    from_workload: false,
                };
                let rate_based = g.rate_bps.map(|r| (r, g.packet_size_bytes.unwrap_or(s.tcp.mtu_bytes as u64) as u32));
                let id = w.add_flow(info, &attach, &g.params, rate_based)?;
                let rng = || SimRng::derive(s.seed, Domain::Marker, id as u64);
                w.flows[id as usize].marker = g.marker.as_ref().map(|m| Box::new(PvMarker::new(m, rng())));
            }
        }
        for (wi, wl) in s.workloads.iter().enumerate() {
            let ecn = resolve_ecn(&format!("workloads[{wi}]"), &wl.cc, wl.ecn.as_deref())?;
            let gen = WorkloadGen {
                index: wi,
                rng: SimRng::derive(s.seed, Domain::Workload, wi as u64),
                mean_gap_ns: 1e9 / wl.rate,
                stop_ns: wl.stop_ns.unwrap_or(s.duration_ns),
                size: wl.size.clone(),
                params: wl.params.clone(),
                ecn,
                attach: attach_of(wl.rtt_ns, &wl.src, &wl.dst),
                label: wl.label.clone().unwrap_or_else(|| format!("web-{}", wl.cc)).into(),
                cc_name: wl.cc.as_str().into(),
            };
            w.workloads.push(gen);
            let first = wl.start_ns + w.next_gap(wi);
            if first < w.workloads[wi].stop_ns {
                w.events.schedule(first, Event::WorkloadArrival(wi as u32));
            }
        }
        for i in 0..w.topology.rate_changes.len() {
            let at = w.topology.rate_changes[i].0;
            w.events.schedule(at, Event::LinkRateChange(i as u32));
        }
        for l in 0..w.links.len() {
            w.sync_qdisc_timer(l);
        }
        if w.warmup_ns > 0 {
            w.events.schedule(w.warmup_ns, Event::WarmupEnd);
        }
        if w.timeseries {
            w.events.schedule(0, Event::Sample);
        }
        w.next_checkpoint_ns = w.checkpoint_after(0);
        Ok(w)
    }

    /// The first checkpoint (sample, end of warm-up, end) at or after `t`.
    fn checkpoint_after(&self, t: u64) -> u64 {
        let mut c = self.end_ns;
        // No warm-up (0) is no checkpoint: nothing is read at time 0.
        if self.warmup_ns > 0 && self.warmup_ns >= t {
            c = c.min(self.warmup_ns);
        }
        if self.timeseries {
            c = c.min(t.div_ceil(self.sample_interval_ns) * self.sample_interval_ns);
        }
        c
    }

    fn next_gap(&mut self, wi: usize) -> u64 {
        let g = &mut self.workloads[wi];
        (g.rng.exponential(g.mean_gap_ns).round() as u64).max(1)
    }

    /// Create a flow (at build time or when a workload spawns one);
    /// `rate_based` is (rate, packet size) for a udp or qcn source, None for TCP.
    fn add_flow(&mut self, mut info: FlowInfo, attach: &Attach, params: &Value, rate_based: Option<(u64, u32)>) -> Result<u32, String> {
        let id = self.flows.len() as u32;
        let mut paths = self.topology.paths(attach, &mut self.links)?;
        info.base_rtt_ns = paths.base_rtt_ns;
        // The source's clock lags real time by its pure-delay first hop, which
        // then disappears from the forward path and reappears at the end of the
        // reverse path: the source sees exactly the same packets at the same
        // (local) times, and its packets reach the first queue when they should,
        // with no delay-line event per packet. See docs/performance.md.
        let (lead, rest) = split_leading_delay(&paths.fwd, &self.links);
        let clock_offset_ns = if lead > 0 && self.lookahead {
            paths.fwd = rest;
            paths.rev.push(Hop::Delay(lead));
            lead
        } else {
            0
        };
        let mut fwd = route::compile(&paths.fwd, &self.links, &mut self.lines, &mut self.line_index);
        let rev = route::compile(&paths.rev, &self.links, &mut self.lines, &mut self.line_index);
        if self.lookahead && matches!(rev.first(), Some(Stage::Line(_))) {
            route::make_sink_line(&mut fwd);
        }
        let fwd_route = self.routes.intern(fwd);
        let rev_route = self.routes.intern(rev);
        let (source, sink) = match rate_based {
            Some((rate_bps, packet_size_bytes)) => {
                let entry = rate_source::lookup(&info.cc).ok_or_else(|| format!("'{}' is not a rate-based source", info.cc))?;
                let spec = RateSourceSpec {
                    flow: id,
                    rate_bps,
                    packet_size_bytes,
                    ecn: info.ecn.codepoint(),
                    start_ns: info.start_ns,
                    stop_ns: info.stop_ns,
                    seed: self.seed,
                };
                ((entry.build)(&spec, params)?, Sink::Datagram(DatagramSink::default()))
            }
            None => {
                let entry = cc::lookup(info.cc.as_ref()).ok_or_else(|| format!("unknown congestion control '{}'", info.cc))?;
                let (mut controller, _) = (entry.build)(params)?;
                controller.set_rng(SimRng::derive(self.seed, Domain::Cc, id as u64));
                let spec = SenderSpec {
                    flow: id,
                    cc: controller,
                    ecn: info.ecn,
                    start_ns: info.start_ns,
                    stop_ns: info.stop_ns,
                    total_bytes: info.size_bytes,
                };
                (
                    Source::Tcp(TcpSender::new(spec, &self.tcp)),
                    Sink::Tcp(TcpReceiver::new(id, &self.tcp, info.size_bytes)),
                )
            }
        };
        self.flows.push(Flow {
            info: Box::new(info),
            source,
            sink,
            fwd_route,
            rev_route,
            source_timer_at: None,
            sink_timer_at: None,
            delivered_at_warmup: 0,
            delivered_at_end: 0,
            early: VecDeque::new(),
            clock_offset_ns,
            pending_samples: vec![],
            sampled_done: false,
            marker: None,
        });
        self.flow_counters.push(FlowQueueCounters::default());
        self.sync_source_timer(id as usize);
        Ok(id)
    }

    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }

    /// Run to the end. `progress(now_ns)` is called every few thousand
    /// events; returning false aborts the run with an error.
    pub fn run(&mut self, mut progress: impl FnMut(u64) -> bool) -> Result<(), String> {
        let wall = std::time::Instant::now();
        let mut since_progress = 0u64;
        while let Some((t, ev)) = self.events.pop_until(self.end_ns) {
            if t < self.now_ns {
                return Err(format!("time went backwards: event {ev:?} at {t} ns after {} ns", self.now_ns));
            }
            self.now_ns = t;
            self.dispatch(ev);
            since_progress += 1;
            if since_progress == PROGRESS_EVERY {
                since_progress = 0;
                if !progress(self.now_ns) {
                    return Err("interrupted".into());
                }
            }
        }
        let end = self.end_ns;
        self.now_ns = end;
        self.start_due_transmissions();
        for f in &mut self.flows {
            f.delivered_at_end = f.delivered_bytes_at(end);
        }
        self.catch_up_sources()?;
        self.now_ns = end;
        self.wall_s = wall.elapsed().as_secs_f64();
        // Samples still owed fall after a source's last event: its state is final.
        for i in 0..self.flows.len() {
            self.flush_source_samples(i, u64::MAX);
        }
        self.flow_ts.sort_by_time();
        progress(self.end_ns);
        self.check_invariants()
    }

    /// Sources whose clock lags real time have not yet lived their last
    /// `clock_offset_ns`: run only their events (ACK arrivals, timers) up to
    /// local time `end`. Whatever they send now would reach the network after
    /// the end, so it is discarded, exactly as the textbook schedule would
    /// leave it unsimulated in its first delay line.
    fn catch_up_sources(&mut self) -> Result<(), String> {
        let end = self.end_ns;
        let horizon = end + self.flows.iter().map(|f| f.clock_offset_ns).max().unwrap_or(0);
        if horizon == end {
            return Ok(());
        }
        self.catching_up = true;
        while let Some((t, ev)) = self.events.pop_until(horizon) {
            if t < self.now_ns {
                return Err(format!("time went backwards: event {ev:?} at {t} ns after {} ns", self.now_ns));
            }
            self.now_ns = t;
            match ev {
                Event::SenderTimer(f) if t - self.flows[f as usize].clock_offset_ns <= end => self.on_source_timer(f as usize),
                Event::LineArrival(d) => {
                    let d = d as usize;
                    if !self.lines[d].take_event(t) {
                        continue;
                    }
                    while let Some(p) = self.lines[d].pop_due(t) {
                        let f = p.flow as usize;
                        if !p.from_source()
                            && self.routes.stage(p.route, p.hop).is_none()
                            && t - self.flows[f].clock_offset_ns <= end
                        {
                            self.deliver(&p);
                        }
                    }
                    if let Some(next) = self.lines[d].rearm() {
                        self.events.schedule(next, Event::LineArrival(d as u32));
                    }
                }
                _ => {}
            }
        }
        self.catching_up = false;
        Ok(())
    }

    #[inline]
    fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::LinkTxDone(l) => self.on_tx_done(l as usize),
            Event::LineArrival(d) => self.on_line_arrival(d as usize),
            Event::SenderTimer(f) => self.on_source_timer(f as usize),
            Event::ReceiverTimer(f) => self.on_sink_timer(f as usize),
            Event::QdiscTimer(l) => self.on_qdisc_timer(l as usize),
            Event::LinkRateChange(i) => {
                let (_, link, rate) = self.topology.rate_changes[i as usize];
                self.links[link as usize].rate_bps = rate;
            }
            Event::WorkloadArrival(w) => self.on_workload_arrival(w as usize),
            Event::Sample => self.on_sample(),
            Event::WarmupEnd => self.on_warmup_end(),
        }
    }

    #[inline]
    fn on_tx_done(&mut self, l: usize) {
        let now = self.now_ns;
        let link = &mut self.links[l];
        let q = link.queue.as_mut().expect("only queue links transmit");
        let mut pkt = q.finish_tx();
        if let Some(done) = q.start_tx(now, link.rate_bps, &mut self.flow_counters) {
            self.events.schedule(done, Event::LinkTxDone(l as u32));
        }
        if q.has_feedback() {
            self.send_feedback(l);
        }
        let link = &mut self.links[l];
        if (link.loss == 0.0 && link.mark == 0.0) || link.apply_random(&mut pkt, &mut self.flow_counters) {
            self.forward(&mut pkt);
        }
    }

    #[inline]
    fn on_line_arrival(&mut self, d: usize) {
        if !self.lines[d].take_event(self.now_ns) {
            return; // superseded by an earlier head
        }
        while let Some(mut p) = self.lines[d].pop_due(self.now_ns) {
            self.prefetch_flows_behind(d);
            self.forward(&mut p);
        }
        if let Some(t) = self.lines[d].rearm() {
            self.events.schedule(t, Event::LineArrival(d as u32));
        }
    }

    /// The packets behind a line's head are usually the next events to run:
    /// start loading the state they will touch, two deep so that the record
    /// fetched one event ago can already be read for what it points to.
    /// Only worth its instructions once the flow table outgrows the L2 cache.
    #[inline(always)]
    fn prefetch_flows_behind(&self, d: usize) {
        if self.flows.len() < PREFETCH_MIN_FLOWS {
            return;
        }
        let line = &self.lines[d];
        if let Some(f) = line.flow_at(1) {
            prefetch(&self.flows[f as usize]);
        }
        if let Some(f) = line.flow_at(0) {
            let f = f as usize;
            self.flows[f].prefetch_heap_state();
            prefetch(&self.flow_counters[f]);
        }
    }

    /// Move a packet to the next stage of its route, or deliver it.
    #[inline]
    fn forward(&mut self, pkt: &mut Packet) {
        if self.catching_up {
            return; // sent after the end of the run
        }
        let now = self.now_ns;
        match self.routes.stage(pkt.route, pkt.hop) {
            None => self.deliver(pkt),
            Some(Stage::Queue(l)) => {
                pkt.hop += 1;
                let link = &mut self.links[l as usize];
                let q = link.queue.as_mut().expect("queue stage");
                if q.departs_on_arrival() {
                    if let Some(leaves_ns) = q.arrive_ahead(now, pkt, link.rate_bps, &mut self.flow_counters) {
                        self.forward_ahead(pkt, leaves_ns);
                    }
                    return;
                }
                if q.arrive(now, *pkt, &mut self.flow_counters) {
                    if let Some(done) = q.start_tx(now, link.rate_bps, &mut self.flow_counters) {
                        self.events.schedule(done, Event::LinkTxDone(l));
                    }
                }
                if q.has_feedback() {
                    self.send_feedback(l as usize);
                }
            }
            Some(line) => self.enter_line(pkt, line, now),
        }
    }

    /// A packet that leaves a queue with departure lookahead at `leaves_ns`
    /// (now or later) enters the line that follows the queue (see
    /// `route::compile`) as if it left then.
    #[inline]
    fn forward_ahead(&mut self, pkt: &mut Packet, leaves_ns: u64) {
        if leaves_ns > self.end_ns {
            return; // still on the wire at the end, as its departure event would not run
        }
        match self.routes.stage(pkt.route, pkt.hop) {
            Some(line @ (Stage::Line(_) | Stage::SinkLine(_))) => self.enter_line(pkt, line, leaves_ns),
            other => unreachable!("a line follows every queue with departure lookahead, found {other:?}"),
        }
    }

    /// Put a packet that leaves its previous stage at `leaves_ns` (now, or
    /// later under departure lookahead) on the line stage `line`.
    #[inline(always)]
    fn enter_line(&mut self, pkt: &mut Packet, line: Stage, leaves_ns: u64) {
        let (Stage::Line(d) | Stage::SinkLine(d)) = line else {
            unreachable!("{line:?} is not a line");
        };
        pkt.hop += 1;
        if !self.random_losses(d as usize, pkt) {
            return;
        }
        if let Stage::SinkLine(_) = line {
            let arrival = leaves_ns + self.lines[d as usize].delay_ns;
            self.deliver_to_sink(pkt, arrival);
        } else if let Some(at) = self.lines[d as usize].push(leaves_ns, pkt, pkt.route, pkt.hop) {
            self.events.schedule(at, Event::LineArrival(d));
        }
    }

    /// Departure lookahead: settle every transmission started by now (before
    /// counters, backlogs or histograms are read).
    fn start_due_transmissions(&mut self) {
        let now = self.now_ns;
        for l in &mut self.links {
            if let Some(q) = &mut l.queue {
                q.start_due(now);
            }
        }
    }

    /// Random loss and marking of rate-less links merged into line `d`.
    #[inline(always)]
    fn random_losses(&mut self, d: usize, pkt: &mut Packet) -> bool {
        self.lines[d].lossy_links.is_empty() || self.random_losses_slow(d, pkt)
    }

    #[inline(never)]
    fn random_losses_slow(&mut self, d: usize, pkt: &mut Packet) -> bool {
        for i in 0..self.lines[d].lossy_links.len() {
            let l = self.lines[d].lossy_links[i] as usize;
            if !self.links[l].apply_random(pkt, &mut self.flow_counters) {
                return false;
            }
        }
        true
    }

    /// A packet reached the end of its route: hand it to its endpoint.
    fn deliver(&mut self, pkt: &Packet) {
        if pkt.from_source() {
            return self.deliver_to_sink(pkt, self.now_ns);
        }
        let f = pkt.flow as usize;
        let local = self.now_ns - self.flows[f].clock_offset_ns;
        self.flush_source_samples(f, local);
        let base = self.scratch.len();
        let flow = &mut self.flows[f];
        match &mut flow.source {
            Source::Tcp(s) => s.on_packet(local, pkt, &mut self.scratch),
            Source::Qcn(q) if pkt.kind == PacketKind::Cnm => q.on_cnm(local, pkt),
            _ => {}
        }
        if let Some(m) = flow.marker.as_deref_mut() {
            m.mark_all(local, &mut self.scratch[base..]);
        }
        let route = flow.fwd_route;
        self.emit(base, route);
        self.sync_source_timer(f);
    }

    /// Hand a packet to its receiver at `arrival_ns` (later than now when the
    /// route ends in a [`Stage::SinkLine`]); replies leave at their own
    /// departure times, which are never earlier than now.
    #[inline]
    fn deliver_to_sink(&mut self, pkt: &Packet, arrival_ns: u64) {
        let f = pkt.flow as usize;
        let now = self.now_ns;
        // Replies go to `scratch` after whatever the endpoints that led here
        // (a source, under departure lookahead) are still sending; see `emit`.
        let base = self.scratch.len();
        let flow = &mut self.flows[f];
        if arrival_ns > self.next_checkpoint_ns {
            flow.delivered_bytes_at(now); // drop entries that have arrived
            let before = flow.processed_bytes();
            flow.early.push_back((arrival_ns, before));
        }
        match &mut flow.sink {
            Sink::Tcp(r) => r.on_packet(arrival_ns, pkt, &mut self.scratch),
            Sink::Datagram(d) => d.on_packet(arrival_ns, pkt),
        }
        let route = flow.rev_route;
        for i in base..self.scratch.len() {
            // A reply leaving later than now (the receiver ran ahead) can
            // only enter the pure delay its route starts with (see `SinkLine`).
            // A lossless line takes it straight from `scratch` (see `DelayLine::push`);
            // during the catch-up `forward` would drop a reply leaving now, so it goes there.
            let leaves_ns = self.scratch[i].enq_ns;
            let first = self.routes.stage(route, 0);
            if let Some(Stage::Line(d)) = first {
                let line = &mut self.lines[d as usize];
                if line.lossy_links.is_empty() && (leaves_ns > now || !self.catching_up) {
                    if let Some(at) = line.push(leaves_ns.max(now), &self.scratch[i], route, 1) {
                        self.events.schedule(at, Event::LineArrival(d));
                    }
                    continue;
                }
            }
            let mut p = self.scratch[i];
            p.route = route;
            p.hop = 0;
            match first {
                Some(line @ Stage::Line(_)) if leaves_ns > now => self.enter_line(&mut p, line, leaves_ns),
                _ => self.forward(&mut p),
            }
        }
        self.scratch.truncate(base);
        self.sync_sink_timer(f);
    }

    /// Send what an endpoint appended to `scratch` after `base` along
    /// `route`. An endpoint reached while they are sent (a receiver under
    /// departure lookahead, any endpoint over a zero-delay path) appends,
    /// sends and removes its own packets after these, so nothing allocates.
    #[inline]
    fn emit(&mut self, base: usize, route: u32) {
        for i in base..self.scratch.len() {
            let mut p = self.scratch[i];
            p.route = route;
            p.hop = 0;
            self.forward(&mut p);
        }
        self.scratch.truncate(base);
    }

    fn on_source_timer(&mut self, f: usize) {
        let now = self.now_ns;
        if self.flows[f].source_timer_at != Some(now) {
            return; // superseded
        }
        self.flows[f].source_timer_at = None;
        let local = now - self.flows[f].clock_offset_ns;
        self.flush_source_samples(f, local);
        let base = self.scratch.len();
        let out = &mut self.scratch;
        match &mut self.flows[f].source {
            Source::Tcp(s) => s.on_timer(local, out),
            Source::Cbr(c) => c.on_timer(local, out),
            Source::Qcn(q) => q.on_timer(local, out),
        }
        if let Some(m) = self.flows[f].marker.as_deref_mut() {
            m.mark_all(local, &mut self.scratch[base..]);
        }
        let route = self.flows[f].fwd_route;
        self.emit(base, route);
        self.sync_source_timer(f);
    }

    fn on_sink_timer(&mut self, f: usize) {
        let now = self.now_ns;
        if self.flows[f].sink_timer_at != Some(now) {
            return;
        }
        self.flows[f].sink_timer_at = None;
        let base = self.scratch.len();
        if let Sink::Tcp(r) = &mut self.flows[f].sink {
            r.on_timer(now, &mut self.scratch);
        }
        let route = self.flows[f].rev_route;
        self.emit(base, route);
        self.sync_sink_timer(f);
    }

    /// Arm the source's timer if it now wants to run earlier than armed.
    #[inline(always)]
    fn sync_source_timer(&mut self, f: usize) {
        let flow = &mut self.flows[f];
        let want = match &flow.source {
            Source::Tcp(s) => s.next_wakeup_ns(),
            Source::Cbr(c) => c.next_wakeup_ns(),
            Source::Qcn(q) => q.next_wakeup_ns(),
        };
        if let Some(w) = want.map(|local| local + flow.clock_offset_ns) {
            let w = w.max(self.now_ns);
            if flow.source_timer_at.is_none_or(|t| w < t) {
                flow.source_timer_at = Some(w);
                self.events.schedule(w, Event::SenderTimer(f as u32));
            }
        }
    }

    /// Arm the receiver's timer if it now wants to run earlier than armed.
    #[inline(always)]
    fn sync_sink_timer(&mut self, f: usize) {
        let flow = &mut self.flows[f];
        let want = match &flow.sink {
            Sink::Tcp(r) => r.next_wakeup_ns(),
            Sink::Datagram(_) => None,
        };
        if let Some(w) = want {
            let w = w.max(self.now_ns);
            if flow.sink_timer_at.is_none_or(|t| w < t) {
                flow.sink_timer_at = Some(w);
                self.events.schedule(w, Event::ReceiverTimer(f as u32));
            }
        }
    }

    fn sync_qdisc_timer(&mut self, l: usize) {
        let Some(q) = self.links[l].queue.as_mut() else { return };
        if let Some(t) = q.qdisc.next_timer_ns() {
            let t = t.max(self.now_ns);
            if q.timer_at.is_none_or(|a| t < a) {
                q.timer_at = Some(t);
                self.events.schedule(t, Event::QdiscTimer(l as u32));
            }
        }
    }

    fn on_qdisc_timer(&mut self, l: usize) {
        let now = self.now_ns;
        let link = &mut self.links[l];
        let q = link.queue.as_mut().expect("qdisc timers belong to queues");
        if q.timer_at != Some(now) {
            return;
        }
        q.timer_at = None;
        q.qdisc_timer(now, &mut self.flow_counters);
        // A timer may release packets (e.g. a shaper); restart an idle transmitter.
        if !q.is_sending() && q.qdisc.len_pkts() > 0 {
            if let Some(done) = q.start_tx(now, link.rate_bps, &mut self.flow_counters) {
                self.events.schedule(done, Event::LinkTxDone(l as u32));
            }
        }
        if q.has_feedback() {
            self.send_feedback(l);
        }
        self.sync_qdisc_timer(l);
    }

    fn on_workload_arrival(&mut self, wi: usize) {
        let now = self.now_ns;
        let g = &mut self.workloads[wi];
        let size = g.size.sample(&mut g.rng);
        let info = FlowInfo {
            group: (self.scenario.flows.len() + g.index) as u32,
            label: g.label.clone(),
            cc: g.cc_name.clone(),
            ecn: g.ecn,
            base_rtt_ns: 0,
            start_ns: now,
            stop_ns: None,
            size_bytes: Some(size),
            from_workload: true,
        };
        let (attach, params) = (g.attach.clone(), g.params.clone());
        // Validated at parse time; a failure here would be an engine bug.
        self.add_flow(info, &attach, &params, None).expect("workload flow builds");
        let next = now + self.next_gap(wi);
        if next < self.workloads[wi].stop_ns {
            self.events.schedule(next, Event::WorkloadArrival(wi as u32));
        }
    }

    fn on_warmup_end(&mut self) {
        let now = self.now_ns;
        self.start_due_transmissions();
        for f in &mut self.flows {
            f.delivered_at_warmup = f.delivered_bytes_at(now);
        }
        for l in &mut self.links {
            if let Some(q) = &mut l.queue {
                q.end_warmup();
            }
        }
        self.next_checkpoint_ns = self.checkpoint_after(now + 1);
    }

    fn on_sample(&mut self) {
        let t = self.now_ns;
        self.start_due_transmissions();
        for i in 0..self.flows.len() {
            let f = &mut self.flows[i];
            if f.sampled_done || t < f.info.start_ns {
                continue;
            }
            let delivered = f.delivered_bytes_at(t);
            if f.clock_offset_ns == 0 {
                self.sample_source(i, t, delivered);
            } else {
                f.pending_samples.push((t, delivered));
            }
        }
        for l in &self.links {
            let Some(q) = &l.queue else { continue };
            if !l.report {
                continue;
            }
            let names = q.qdisc.subqueue_names();
            for (k, sub) in names.iter().enumerate() {
                let c = &q.counters[k];
                let s = &mut self.queue_ts;
                s.t_ns.push(t);
                s.queue.push(l.name.clone());
                s.subqueue.push(sub.to_string());
                s.backlog_pkts.push(q.subqueue_backlog_pkts(k) as u64);
                s.arrived_pkts.push(c.arrived_pkts);
                s.departed_pkts.push(c.departed_pkts);
                s.dropped_pkts.push(c.drops());
                s.marked_pkts.push(c.marks());
            }
            let pn = q.qdisc.probe_names();
            if !pn.is_empty() {
                let mut vals = [0.0; 8];
                q.qdisc.probe(&mut vals[..pn.len()]);
                for (k, n) in pn.iter().enumerate() {
                    self.probes.push(t, &l.name, n, vals[k]);
                }
            }
        }
        self.next_checkpoint_ns = self.checkpoint_after(t + 1);
        let next = t + self.sample_interval_ns;
        if next <= self.end_ns {
            self.events.schedule(next, Event::Sample);
        }
    }

    /// Record the source-side columns of a sample at real time `t`.
    fn sample_source(&mut self, i: usize, t: u64, delivered: u64) {
        let f = &mut self.flows[i];
        match &f.source {
            Source::Tcp(s) => {
                if s.state() == SenderState::Finished {
                    f.sampled_done = true;
                }
                self.flow_ts.push(t, i as u32, delivered, s.cwnd(), s.ssthresh(), s.srtt_ns(), s.in_flight(), s.stats.retransmits, 0);
                let names = s.cc.probe_names();
                if !names.is_empty() && !f.info.from_workload {
                    let mut vals = [0.0; 8];
                    s.cc.probe(&mut vals[..names.len()]);
                    for (k, n) in names.iter().enumerate() {
                        self.probes.push(t, &format!("flow{i}"), n, vals[k]);
                    }
                }
            }
            Source::Cbr(c) => self.flow_ts.push(t, i as u32, delivered, 0, 0, 0, 0, 0, c.rate_bps()),
            Source::Qcn(q) => {
                self.flow_ts.push(t, i as u32, delivered, 0, 0, 0, 0, 0, q.rp.rate_bps());
                let mut vals = [0.0; 8];
                let names = q.probe_names();
                q.probe(&mut vals[..names.len()]);
                for (k, n) in names.iter().enumerate() {
                    self.probes.push(t, &format!("flow{i}"), n, vals[k]);
                }
            }
        }
    }

    /// Take the samples a lagging source owes, before it handles an event at
    /// `local_ns`: its state has not changed since its previous event.
    #[inline(always)]
    fn flush_source_samples(&mut self, f: usize, local_ns: u64) {
        if self.flows[f].pending_samples.first().is_some_and(|&(t, _)| t < local_ns) {
            self.flush_source_samples_due(f, local_ns);
        }
    }

    /// The rare half of [`Self::flush_source_samples`] (once per sample interval).
    #[cold]
    #[inline(never)]
    fn flush_source_samples_due(&mut self, f: usize, local_ns: u64) {
        let pending = std::mem::take(&mut self.flows[f].pending_samples);
        let (due, later): (Vec<_>, Vec<_>) = pending.into_iter().partition(|&(t, _)| t < local_ns);
        for (t, delivered) in due {
            if self.flows[f].sampled_done {
                return; // finished: later samples are dropped, as when sampled on time
            }
            self.sample_source(f, t, delivered);
        }
        self.flows[f].pending_samples = later;
    }

    /// End-of-run checks: a violation is an error with context, never silent.
    fn check_invariants(&self) -> Result<(), String> {
        for l in &self.links {
            if let Some(q) = &l.queue {
                q.check_conservation(&l.name)?;
            }
        }
        for (i, f) in self.flows.iter().enumerate() {
            if let (Source::Tcp(s), Sink::Tcp(r)) = (&f.source, &f.sink) {
                if r.delivered_bytes() > s.stats.bytes_sent {
                    return Err(format!(
                        "flow {i}: receiver has {} bytes but the sender sent only {}",
                        r.delivered_bytes(),
                        s.stats.bytes_sent
                    ));
                }
                if r.rcv_nxt() < s.snd_una() {
                    return Err(format!("flow {i}: sender saw ACK {} beyond receiver's {}", s.snd_una(), r.rcv_nxt()));
                }
                s.check_invariants().map_err(|e| format!("flow {i}: {e}"))?;
            }
        }
        Ok(())
    }

    pub fn events_executed(&self) -> u64 {
        self.events.events_popped()
    }

    pub fn events_by_kind(&self) -> [(&'static str, u64); 9] {
        self.events.events_by_kind()
    }

    pub fn bottleneck_packets(&self) -> u64 {
        self.links.iter().filter(|l| l.bottleneck).filter_map(|l| l.queue.as_ref()).map(|q| q.data_departed).sum()
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

/// The pure delay at the start of a path (before its first queue or lossy
/// link), and the path without it.
fn split_leading_delay(hops: &[Hop], links: &[Link]) -> (u64, Vec<Hop>) {
    let mut lead = 0;
    let mut i = 0;
    while i < hops.len() {
        match hops[i] {
            Hop::Delay(d) => lead += d,
            Hop::Link(l) => {
                let link = &links[l as usize];
                if link.queue.is_some() || link.loss > 0.0 || link.mark > 0.0 {
                    break;
                }
                lead += link.delay_ns;
            }
        }
        i += 1;
    }
    (lead, hops[i..].to_vec())
}

fn attach_of(rtt: Option<u64>, src: &Option<String>, dst: &Option<String>) -> Attach {
    match rtt {
        Some(r) => Attach::Rtt(r),
        None => Attach::Nodes { src: src.clone().unwrap_or_default(), dst: dst.clone().unwrap_or_default() },
    }
}

/// Parse, validate, build and run a scenario given as JSON.
pub fn run_json(json: &str, progress: impl FnMut(u64) -> bool) -> Result<Results, String> {
    let s = crate::scenario::parse(json)?;
    let mut w = World::new(&s)?;
    w.run(progress)?;
    Ok(w.into_results())
}

