//! Building a world from a validated scenario: topology, flows (window-
//! and rate-based), workloads, checkpoints.

use super::*;
use super::fat_tree;
use super::flow_routes::OwnLink;
use crate::metrics::pcap::PcapRecorder;

impl World {
    /// Build from a validated scenario (see [`crate::scenario::parse`]).
    pub fn new(s: &Scenario) -> Result<World, String> {
        let (topology, links) = Topology::build(s, queue_options(s))?;
        let queues = links.iter().filter(|l| l.queue.is_some()).count();
        let early_hand_off = s.engine.lookahead && s.engine.early_hand_off.unwrap_or(queues >= super::event_loop::EARLY_HAND_OFF_MIN_QUEUES);
        let mut w = World {
            now_ns: 0,
            end_ns: s.duration_ns,
            warmup_ns: s.warmup_ns,
            seed: s.seed,
            events: EventQueue::new(),
            mediums: topology.mediums.clone(),
            links,
            lines: Lines::default(),
            line_index: Default::default(),
            routes: Routes::default(),
            flows: vec![],
            slot_of: vec![],
            free_slots: vec![],
            retired_rows: Default::default(),
            retire_candidates: VecDeque::new(),
            retire_looks: 0,
            #[cfg(test)]
            retire_eagerly: false,
            slots_are_ids: true,
            max_clock_offset_ns: 0,
            flow_counters: vec![],
            sampled_flows: vec![],
            sample_buffers: vec![],
            sampled_queues: vec![],
            access_queues: VecDeque::new(),
            route_scratch: Default::default(),
            known_routes: Default::default(),
            path_scratch: Default::default(),
            reuse_looks: super::access_reuse::REUSE_LOOKS,
            reused_access_departed_pkts: 0,
            topology,
            workloads: vec![],
            outboxes: outbox::OutboxPool::default(),
            tcp: s.tcp.clone(),
            lookahead: s.engine.lookahead,
            early_hand_off,
            prefetch_flows: s.engine.prefetch,
            prefetch_events: false,
            prefetch_deep: false,
            sojourn_log: SojournLog::default(),
            feedback_route: None,
            catching_up: false,
            next_checkpoint_ns: 0,
            scenario: s.clone(),
            sample_interval_ns: s.metrics.interval_ns,
            timeseries: s.metrics.timeseries,
            flow_ts: FlowSeries::default(),
            queue_ts: QueueSeries::default(),
            probes: ProbeSeries::default(),
            rtt_hist: s.metrics.rtt_histogram.then(|| Box::new(Histogram::new())),
            wall_s: 0.0,
        };
        w.enable_queue_shortcuts(0..w.links.len());
        if w.timeseries {
            w.sampled_queues = (0..w.links.len() as u32).filter(|&i| w.links[i as usize].queue.is_some()).map(|i| (i, NO_OWNER)).collect();
        }
        let shortcuts = s.engine.prefetch && w.links.len() >= super::event_loop::MEMORY_SHORTCUTS_MIN_LINKS;
        w.prefetch_events = shortcuts;
        w.prefetch_deep = shortcuts && w.links.len() >= super::event_loop::DEEP_PREFETCH_MIN_LINKS;
        w.sojourn_log = SojournLog::new(shortcuts);
        if let Some(pc) = &s.metrics.pcap {
            let Some(i) = w.links.iter().position(|l| l.report && l.queue.is_some() && l.name == pc.queue) else {
                let some: Vec<&str> = w.links.iter().filter(|l| l.report).take(3).map(|l| l.name.as_str()).collect();
                return Err(format!("metrics.pcap.queue: no queue '{}' (queues are named as in the summary, e.g. {})", pc.queue, some.join(", ")));
            };
            let q = w.links[i].queue.as_mut().expect("a queue link");
            q.capture = Some(Box::new(PcapRecorder::new(pc.direction == "enqueue", pc.max_packets)));
        }
        // Every route any flow will take, before any flow is built or
        // anything runs: a workload's flows are created mid-run, where a bad
        // route could only panic.
        check_routes(s, &w.topology, &w.links)?;
        // Exact room for the long-lived flows: growing by doubling would hold
        // the old and the new table at once (1.5 × the table at 10 000 flows).
        // Fallibly: the count comes from the input, and an allocation that
        // fails must be an error, not an abort (a count of 10^8 used to end
        // the process with "memory allocation of 96000000000 bytes failed").
        // The allocator may promise more than the machine holds (mimalloc,
        // the extension's allocator, reserves address space without backing
        // it, so a reservation alone no longer fails, and the run would end
        // killed by the kernel): a table larger than memory and swap
        // together is refused first.
        let long_lived: usize = s.flows.iter().map(|g| g.count as usize).sum();
        let table_bytes = long_lived as u128 * (std::mem::size_of::<Flow>() + std::mem::size_of::<FlowQueueCounters>()) as u128;
        let too_many = || {
            let gb = table_bytes as f64 / 1e9;
            format!("flows: {long_lived} flows need {gb:.1} GB for their state alone, more than this machine can allocate")
        };
        if machine_memory_bytes().is_some_and(|m| table_bytes > m as u128) {
            return Err(too_many());
        }
        w.flows.try_reserve_exact(long_lived).map_err(|_| too_many())?;
        w.flow_counters.try_reserve_exact(long_lived).map_err(|_| too_many())?;
        w.slot_of.try_reserve_exact(long_lived).map_err(|_| too_many())?;
        if w.retirement_allowed() && !s.workloads.is_empty() {
            w.retire_looks = super::retire::RETIRE_LOOKS;
            w.slots_are_ids = false;
        }
        // Room for the flows workloads are expected to start, too: grown by
        // doubling, a table of 256 000 web flows (128 s at 2 000 per second)
        // was copied whole at every doubling, and the run is 1.18 x as fast
        // without the copies (docs/performance.md, "Workload flows over long
        // runs"). Only a hint: address space the flows never fill is not
        // backed, and a count beyond the machine's memory is left to the
        // resource guard before the run (`aqmlab run` refuses it) and to
        // growth here.
        let workload_flows = expected_workload_flows(s);
        let all_bytes = (long_lived as u128 + workload_flows as u128) * (std::mem::size_of::<Flow>() + std::mem::size_of::<FlowQueueCounters>()) as u128;
        if workload_flows > 0 && machine_memory_bytes().is_none_or(|m| all_bytes <= m as u128) {
            // A failed reservation leaves the tables to grow as they fill.
            // Where finished flows retire, the flow table holds the flows
            // alive only.
            if w.retire_looks == 0 {
                let _ = w.flows.try_reserve_exact(workload_flows);
            }
            let _ = w.flow_counters.try_reserve_exact(workload_flows);
            let _ = w.slot_of.try_reserve_exact(workload_flows);
            // And the rows of those that retire (`world::retire`): 160 bytes
            // a flow, in columns of 8 or 4, far below the flow table the
            // check above bounded, so reserved without a fallible call.
            if w.retire_looks > 0 {
                w.retired_rows.reserve(workload_flows);
            }
        }
        for (gi, g) in s.flows.iter().enumerate() {
            let ecn = resolve_ecn(&format!("flows[{gi}]"), &g.cc, g.ecn.as_deref())?;
            // One attachment per flow pair: a pattern expands to many.
            let attaches = match (&g.pattern, w.topology.fat_tree()) {
                (Some(_), Some(t)) => {
                    let mut rng = SimRng::derive(s.seed, Domain::Traffic, gi as u64);
                    let perm = fat_tree::derangement(t.hosts(), &mut rng);
                    perm.iter().enumerate().map(|(src, &dst)| Attach::Hosts { src: src as u32, dst }).collect()
                }
                _ => vec![attach_of(s, g.rtt_ns, &g.src, &g.dst)],
            };
            let label: Arc<str> = g.label.clone().unwrap_or_else(|| g.cc.clone()).into();
            let cc_name: Arc<str> = g.cc.as_str().into();
            // Chosen once per group, its controller built once: each flow
            // starts from a copy.
            let group_ends = match rate_source::lookup(&g.cc) {
                Some(entry) => Ends::Rate {
                    entry,
                    rate_bps: g.rate_bps.unwrap_or(0),
                    packet_size_bytes: g.packet_size_bytes.unwrap_or(entry.default_packet_bytes.unwrap_or(s.tcp.mtu_bytes) as u64) as u32,
                    params: &g.params,
                },
                None => Ends::Tcp(tcp_controller(&g.cc, &g.params)?),
            };
            // `count` flows per attachment, attachment by attachment.
            for attach in attaches.iter().flat_map(|a| std::iter::repeat_n(a, g.count as usize)) {
                let id = w.slot_of.len() as u64;
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
                let id = w.add_flow(info, attach, group_ends.clone())?;
                let rng = || SimRng::derive(s.seed, Domain::Marker, id as u64);
                let slot = w.slot(id as usize);
                w.flows[slot].marker = g.marker.as_ref().map(|m| Box::new(PvMarker::new(m, rng())));
            }
        }
        for (wi, wl) in s.workloads.iter().enumerate() {
            let ecn = resolve_ecn(&format!("workloads[{wi}]"), &wl.cc, wl.ecn.as_deref())?;
            let gen = WorkloadGen {
                index: wi,
                rng: SimRng::derive(s.seed, Domain::Workload, wi as u64),
                mean_gap_ns: 1e9 / wl.rate,
                stop_ns: wl.stop_ns.unwrap_or(s.duration_ns),
                size: FlowSizes::new(&wl.size),
                controller: tcp_controller(&wl.cc, &wl.params)?,
                ecn,
                attach: attach_of(s, wl.rtt_ns, &wl.src, &wl.dst),
                label: wl.label.clone().unwrap_or_else(|| format!("{}-{}", wl.kind, wl.cc)).into(),
                cc_name: wl.cc.as_str().into(),
                incast: match (wl.every_ns, w.topology.fat_tree()) {
                    (Some(every_ns), Some(t)) => Some(Incast {
                        every_ns,
                        senders: wl.senders.expect("validated"),
                        dst: wl.dst.as_deref().and_then(|d| fat_tree_spec(s).and_then(|f| f.host(d))),
                        hosts: t.hosts(),
                    }),
                    _ => None,
                },
            };
            w.workloads.push(gen);
            // An incast fires at its start, then every `every`.
            let first = if w.workloads[wi].incast.is_some() { wl.start_ns } else { wl.start_ns + w.next_gap(wi) };
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

    /// The route checks of [`World::new`] without building the world, so
    /// that validation (`aqmlab validate`, every point of a sweep) reports
    /// them before anything runs. Only a graph can fail them (see
    /// `Topology::check_routes`), so only a graph's links are built.
    pub fn check_routes(s: &Scenario) -> Result<(), String> {
        if fat_tree_spec(s).is_some() || s.topology.is_none() {
            return Ok(());
        }
        // No sojourn histograms: these queues carry no packet.
        let (topology, links) = Topology::build(s, QueueOptions { histograms: false, ..queue_options(s) })?;
        check_routes(s, &topology, &links)
    }

    /// The first checkpoint (sample, end of warm-up, end) at or after `t`.
    pub(super) fn checkpoint_after(&self, t: u64) -> u64 {
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

    pub(super) fn next_gap(&mut self, wi: usize) -> u64 {
        let g = &mut self.workloads[wi];
        (g.rng.exponential(g.mean_gap_ns).round() as u64).max(1)
    }

    /// With `engine.lookahead`, give the queues of links `range` the
    /// event-saving shortcuts that are exact for them (`net::link`):
    /// departure lookahead unless their departures can change after
    /// arrival, else early hand-off where `early_hand_off` is on. One rule
    /// for the topology's links and for those made with a flow.
    pub(super) fn enable_queue_shortcuts(&mut self, range: std::ops::Range<usize>) {
        if !self.lookahead {
            return;
        }
        for i in range {
            let l = &mut self.links[i];
            // A link on a shared medium waits for the other direction, and a rate
            // schedule changes a transmission's end: departures not known on arrival.
            let variable = l.medium().is_some() || self.topology.rate_changes.iter().any(|c| c.1 as usize == i);
            l.enable_departure_lookahead(variable);
            if self.early_hand_off {
                l.enable_early_hand_off();
            }
        }
    }

    /// Create a flow (at build time or when a workload spawns one) with the
    /// two ends `ends` describes.
    pub(super) fn add_flow(&mut self, mut info: FlowInfo, attach: &Attach, ends: Ends<'_>) -> Result<u32, String> {
        let id = self.slot_of.len() as u32;
        let first_new_link = self.links.len();
        // A dumbbell's per-flow access queue is made here (or rebuilt in
        // the place of a finished flow's), after the topology's links took
        // their shortcuts in `World::new`.
        let reuse = self.take_free_access_queue();
        if let Some(l) = reuse {
            // The queue is rebuilt with fresh counters: `packet_hops` keeps
            // what it moved for its last owner.
            self.reused_access_departed_pkts += self.links[l as usize].queue.as_ref().map_or(0, |q| q.departed_pkts());
        }
        let mut paths = std::mem::take(&mut self.path_scratch);
        self.topology.paths(id, attach, &mut self.links, reuse, &mut paths)?;
        self.enable_queue_shortcuts(first_new_link..self.links.len());
        if let Some(l) = reuse {
            self.enable_queue_shortcuts(l as usize..l as usize + 1);
            if self.timeseries {
                self.sample_access_queue(l, id);
            }
        } else if self.timeseries {
            let owned = (first_new_link..self.links.len()).filter(|&l| self.links[l].queue.is_some());
            self.sampled_queues.extend(owned.map(|l| (l as u32, id)));
        }
        // A finite TCP flow's access queue is handed on when it ends.
        let handed_on = paths.access_queue.filter(|_| matches!(ends, Ends::Tcp(_)) && info.size_bytes.is_some());
        if let Some(l) = handed_on {
            self.access_queues.push_back((l, id));
        }
        info.base_rtt_ns = paths.base_rtt_ns;
        // The source's clock lags real time by its pure-delay first hop, which
        // then disappears from the forward path and reappears at the end of the
        // reverse path: the source sees exactly the same packets at the same
        // (local) times, and its packets reach the first queue when they should,
        // with no delay-line event per packet. See docs/performance.md.
        let (lead, hops) = leading_delay(&paths.fwd, &self.links);
        let clock_offset_ns = if lead > 0 && self.lookahead {
            paths.fwd.drain(..hops);
            paths.rev.push(Hop::Delay(lead));
            lead
        } else {
            0
        };
        let own = match (paths.access_queue, handed_on) {
            (None, _) => OwnLink::Absent,
            (Some(_), Some(_)) => OwnLink::HandedOn,
            (Some(_), None) => OwnLink::Kept,
        };
        let routes = self.flow_routes(&paths.fwd, &paths.rev, own);
        self.path_scratch = paths;
        match ends {
            Ends::Rate { entry, rate_bps, packet_size_bytes, params } => {
                let spec = RateSourceSpec {
                    flow: id,
                    rate_bps,
                    packet_size_bytes,
                    ecn: info.ecn.codepoint(),
                    start_ns: info.start_ns,
                    stop_ns: info.stop_ns,
                    seed: self.seed,
                };
                let sink = DatagramSink { echo: entry.echoes.then(|| spec.ecn), ..Default::default() };
                let source = (entry.build)(&spec, params)?;
                self.put_flow(Flow::new(id, info, source, Sink::Datagram(sink), routes, clock_offset_ns));
            }
            Ends::Tcp(mut controller) => {
                controller.set_rng(SimRng::derive(self.seed, Domain::Cc, id as u64));
                let spec = SenderSpec {
                    flow: id,
                    cc: controller,
                    ecn: info.ecn,
                    start_ns: info.start_ns,
                    stop_ns: info.stop_ns,
                    total_bytes: info.size_bytes,
                };
                let size_bytes = info.size_bytes;
                if size_bytes.is_some() && info.from_workload {
                    self.retire_candidates.push_back(id);
                }
                // One expression, its ends built in the arguments: a
                // (source, sink) pair built first copied the sender three
                // more times, about 200 instructions of a web flow's
                // set-up (docs/performance.md, stop 64).
                self.put_flow(Flow::new(
                    id,
                    info,
                    Source::Tcp(TcpSender::new(spec, &self.tcp)),
                    Sink::Tcp(TcpReceiver::new(id, &self.tcp, size_bytes)),
                    routes,
                    clock_offset_ns,
                ));
            }
        }
        self.flow_counters.push(FlowQueueCounters::default());
        if self.timeseries {
            self.sampled_flows.push(id);
        }
        self.max_clock_offset_ns = self.max_clock_offset_ns.max(clock_offset_ns);
        self.sync_source_timer(self.slot(id as usize));
        Ok(id)
    }
}

/// What a new flow's two ends are made from (`World::add_flow`).
#[derive(Clone)]
pub(super) enum Ends<'a> {
    /// A TCP sender with this controller, whose random stream `add_flow`
    /// sets per flow, and a TCP receiver.
    Tcp(AnyCc),
    /// A rate-based source (`udp`, `qcn`, `probe`) built by its registry
    /// entry from its params, and a datagram sink.
    Rate { entry: &'static rate_source::RateSourceEntry, rate_bps: u64, packet_size_bytes: u32, params: &'a Value },
}

/// A controller `cc` configured by `params`, fresh: every flow of a group
/// or workload starts from a copy of one, which is the controller each
/// would build (a constructor reads only its config; the random stream is
/// set per flow). Parsing the params for every flow cost about 4 600
/// instructions a flow, 13 % of a web workload's run (docs/performance.md,
/// "A flow's set-up").
fn tcp_controller(cc_name: &str, params: &Value) -> Result<AnyCc, String> {
    let entry = cc::lookup(cc_name).ok_or_else(|| format!("unknown congestion control '{cc_name}'"))?;
    Ok((entry.build)(params)?.0)
}

fn queue_options(s: &Scenario) -> QueueOptions {
    QueueOptions {
        seed: s.seed,
        mtu: s.tcp.mtu_bytes,
        histograms: s.metrics.sojourn_histograms,
        sample_every: s.metrics.sojourn_samples_every,
    }
}

/// The routes of every flow group and workload (`Topology::check_routes`).
fn check_routes(s: &Scenario, topology: &Topology, links: &[Link]) -> Result<(), String> {
    for (gi, g) in s.flows.iter().enumerate() {
        let window_based = rate_source::lookup(&g.cc).is_none();
        topology.check_routes(&format!("flows[{gi}]"), &attach_of(s, g.rtt_ns, &g.src, &g.dst), links, window_based)?;
    }
    for (wi, wl) in s.workloads.iter().enumerate() {
        // Workloads carry TCP flows only (validated).
        topology.check_routes(&format!("workloads[{wi}]"), &attach_of(s, wl.rtt_ns, &wl.src, &wl.dst), links, true)?;
    }
    Ok(())
}

/// The pure delay at the start of a path (before its first queue or lossy
/// link), and how many hops it spans.
fn leading_delay(hops: &[Hop], links: &[Link]) -> (u64, usize) {
    let mut lead = 0;
    for (i, h) in hops.iter().enumerate() {
        match *h {
            Hop::Delay(d) => lead += d,
            Hop::Link(l) => {
                let link = &links[l as usize];
                if link.queue.is_some() || link.loses_or_marks() {
                    return (lead, i);
                }
                lead += link.delay_ns;
            }
        }
    }
    (lead, hops.len())
}

fn fat_tree_spec(s: &Scenario) -> Option<&crate::scenario::FatTreeSpec> {
    s.topology.as_ref().and_then(|t| t.fat_tree.as_ref())
}

fn attach_of(s: &Scenario, rtt: Option<u64>, src: &Option<String>, dst: &Option<String>) -> Attach {
    let host = |n: &Option<String>| fat_tree_spec(s).zip(n.as_deref()).and_then(|(t, n)| t.host(n));
    match (rtt, host(src), host(dst)) {
        (Some(r), _, _) => Attach::Rtt(r),
        (None, Some(src), Some(dst)) => Attach::Hosts { src, dst },
        _ => Attach::Nodes { src: src.clone().unwrap_or_default(), dst: dst.clone().unwrap_or_default() },
    }
}

/// How many flows the workloads will start: a Poisson workload's mean count
/// (rate × its active time) plus six standard deviations, so that a run
/// rarely outgrows it; an incast's senders at each of its periods.
fn expected_workload_flows(s: &Scenario) -> usize {
    let mut n = 0.0;
    for wl in &s.workloads {
        let stop_ns = wl.stop_ns.unwrap_or(s.duration_ns).min(s.duration_ns);
        let active_s = stop_ns.saturating_sub(wl.start_ns) as f64 / 1e9;
        n += match (wl.every_ns, wl.senders) {
            (Some(every_ns), Some(senders)) => (stop_ns.saturating_sub(wl.start_ns).div_ceil(every_ns.max(1))) as f64 * senders as f64,
            _ => {
                let mean = wl.rate * active_s;
                mean + 6.0 * mean.sqrt()
            }
        };
    }
    n.ceil() as usize
}

/// Physical memory plus swap in bytes, where the system says (Linux's
/// `/proc/meminfo`); None elsewhere.
fn machine_memory_bytes() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib = |key: &str| -> Option<u64> {
        let line = info.lines().find(|l| l.starts_with(key))?;
        line[key.len()..].trim().trim_end_matches("kB").trim().parse().ok()
    };
    Some((kib("MemTotal:")? + kib("SwapTotal:").unwrap_or(0)) * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every flow of a group or workload starts from a copy of one
    /// controller (`tcp_controller`), where each once built its own from
    /// the params: the copy must be that controller, field for field, for
    /// every controller, with its defaults and with params set.
    #[test]
    fn a_copied_controller_is_the_one_a_flow_would_build() {
        let set = serde_json::json!({ "initial_window": 4 });
        for entry in cc::REGISTRY {
            for params in [Value::Null, set.clone()] {
                let proto = tcp_controller(entry.name, &params).unwrap();
                let built = (entry.build)(&params).unwrap().0;
                let (mut a, mut b) = (proto.clone(), built);
                assert_eq!(format!("{a:?}"), format!("{b:?}"), "{} with {params}", entry.name);
                a.set_rng(SimRng::derive(7, Domain::Cc, 3));
                b.set_rng(SimRng::derive(7, Domain::Cc, 3));
                assert_eq!(format!("{a:?}"), format!("{b:?}"), "{} with {params}, its stream set", entry.name);
            }
        }
        assert!(tcp_controller("vegas", &Value::Null).unwrap_err().contains("vegas"));
    }
}
