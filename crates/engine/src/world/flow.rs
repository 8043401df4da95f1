//! A flow as the world holds it: its static facts (cold, boxed), its two
//! ends, its routes and timers; and the workload generators that start
//! finite flows.

use super::flow_routes::FlowRoutes;
use super::*;

/// Aligned to a cache line so that every record spans the same lines (949
/// bytes padded to 960): A-100 and C-10000 miss L1 about 0.5 times fewer
/// per packet than with records straddling lines at random (cachegrind).
#[derive(Debug, Clone)]
#[repr(align(64))]
pub struct Flow {
    /// Cold facts, out of line so the hot per-packet state packs tighter.
    pub info: Box<FlowInfo>,
    /// The flow's id (what its packets, events and result rows name): its
    /// place in the flow table too, unless a retired flow's place was
    /// reused (`world::retire`).
    pub(super) id: u32,
    pub source: Source,
    pub sink: Sink,
    pub(super) fwd_route: u32,
    pub(super) rev_route: u32,
    /// The delay line the reverse route starts with, if it is lossless: the
    /// receiver's replies go straight into it (`ReplyToLine`). Noted here so
    /// that a delivery does not look it up through the route and the line.
    pub(super) reply_line: Option<u32>,
    /// When each end's timer event is armed for (`NO_TIMER`: none), in
    /// 8 bytes each where an `Option` took 16.
    pub(super) source_timer_at: u64,
    pub(super) sink_timer_at: u64,
    /// Receiver's delivered bytes when warm-up ended.
    pub delivered_at_warmup: u64,
    /// Delivered bytes at the end of the run.
    pub delivered_at_end: u64,
    /// Packets the receiver processed ahead of real time (see
    /// [`Stage::SinkLine`]) that arrive after the next checkpoint (sample,
    /// end of warm-up, end of run): (arrival time, delivered bytes before
    /// it), so checkpoints count only what has really arrived.
    pub(super) early: VecDeque<(u64, u64)>,
    /// The source runs this far behind real time: its pure-delay first hop
    /// is folded into its clock (see `add_flow`).
    pub(super) clock_offset_ns: u64,
    /// Samples (real time, delivered bytes) whose source-side values are
    /// taken once the lagging source's clock reaches them.
    pub(super) pending_samples: Vec<(u64, u64)>,
    /// Stopped being sampled (finished before the last sample).
    pub(super) sampled_done: bool,
    /// Per Packet Value edge marker (`[[flows]] marker`); None costs one test per send.
    pub marker: Option<Box<PvMarker>>,
}

impl Flow {
    /// A new flow's record: its two ends, on its routes, its source
    /// `clock_offset_ns` behind real time (`World::add_flow`).
    #[inline(always)]
    pub(super) fn new(id: u32, info: FlowInfo, source: Source, sink: Sink, routes: FlowRoutes, clock_offset_ns: u64) -> Flow {
        Flow {
            info: Box::new(info),
            id,
            source,
            sink,
            fwd_route: routes.fwd,
            rev_route: routes.rev,
            reply_line: routes.reply_line,
            source_timer_at: NO_TIMER,
            sink_timer_at: NO_TIMER,
            delivered_at_warmup: 0,
            delivered_at_end: 0,
            early: VecDeque::new(),
            clock_offset_ns,
            pending_samples: vec![],
            sampled_done: false,
            marker: None,
        }
    }

    /// Prefetch what the record points to (see [`crate::sim::prefetch`]).
    #[inline(always)]
    pub(super) fn prefetch_heap_state(&self) {
        if let Source::Tcp(s) = &self.source {
            s.prefetch_heap_state();
        }
    }

    /// Bytes the receiver has processed (possibly ahead of real time).
    pub(super) fn processed_bytes(&self) -> u64 {
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

/// `Flow::source_timer_at` and `Flow::sink_timer_at` with no timer armed:
/// later than any time a timer is armed for.
pub(super) const NO_TIMER: u64 = u64::MAX;

/// A workload generator (Poisson arrivals of finite TCP flows).
#[derive(Debug, Clone)]
pub(super) struct WorkloadGen {
    pub(super) index: usize,
    pub(super) rng: SimRng,
    pub(super) mean_gap_ns: f64,
    pub(super) stop_ns: u64,
    pub(super) size: FlowSizes,
    /// Built once from the workload's params; each flow starts from a copy.
    pub(super) controller: AnyCc,
    pub(super) ecn: EcnSetting,
    pub(super) attach: Attach,
    pub(super) label: Arc<str>,
    pub(super) cc_name: Arc<str>,
    /// An incast instead of Poisson arrivals (`kind = "incast"`).
    pub(super) incast: Option<Incast>,
}

/// Every `every_ns`, `senders` distinct hosts of the fat tree each start a
/// flow to one host: `dst`, or one drawn at random each time.
#[derive(Debug, Clone)]
pub(super) struct Incast {
    pub(super) every_ns: u64,
    pub(super) senders: u32,
    pub(super) dst: Option<u32>,
    pub(super) hosts: u32,
}

/// A workload's flow sizes, ready to draw: its validated size distribution
/// (`workloads[].size`) with the constants computed once.
#[derive(Debug, Clone, Copy)]
pub(super) enum FlowSizes {
    Pareto(BoundedPareto),
    Exponential { mean_bytes: f64 },
    Uniform { min_bytes: u64, max_bytes: u64 },
    Fixed(u64),
}

impl FlowSizes {
    /// Of a distribution validated (`SizeDist::check`: it has the keys its
    /// kind reads).
    pub(super) fn new(d: &SizeDist) -> Self {
        let bytes = |v: Option<u64>| v.expect("validated: the distribution has the sizes it reads");
        match d.dist.as_str() {
            "pareto" => {
                let shape = d.shape.expect("validated: a pareto has a shape");
                FlowSizes::Pareto(BoundedPareto::new(bytes(d.min_bytes) as f64, bytes(d.max_bytes) as f64, shape))
            }
            "exponential" => FlowSizes::Exponential { mean_bytes: bytes(d.mean_bytes) as f64 },
            "uniform" => FlowSizes::Uniform { min_bytes: bytes(d.min_bytes), max_bytes: bytes(d.max_bytes) },
            _ => FlowSizes::Fixed(bytes(d.mean_bytes)),
        }
    }

    /// Draw a flow size in bytes (at least 1).
    pub(super) fn sample(&self, rng: &mut SimRng) -> u64 {
        let v = match *self {
            FlowSizes::Pareto(ref d) => rng.bounded_pareto(d),
            FlowSizes::Exponential { mean_bytes } => rng.exponential(mean_bytes),
            FlowSizes::Uniform { min_bytes, max_bytes } => return min_bytes + rng.below(max_bytes - min_bytes + 1),
            FlowSizes::Fixed(bytes) => return bytes,
        };
        (v.round() as u64).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `Flow::new` carries what `add_flow` compiled for the flow: the
    /// record of a TCP flow and of a rate-based one (the two ways into the
    /// table) holds its routes, its clock offset and the lossless line its
    /// replies are written into. The shortcut of that line leaves results
    /// as they are, so a record that lost it would pass every results test.
    #[test]
    fn a_new_record_holds_the_routes_its_flow_compiled() {
        let s = json!({
            "duration": "10ms", "seed": 1,
            "bottleneck": {"rate": "100Mbps", "buffer": "20ms"},
            "flows": [{"cc": "cubic", "rtt": "20ms"}, {"cc": "udp", "rtt": "20ms", "rate": "1Mbps"}],
            "engine": {"lookahead": true}
        });
        let w = World::new(&crate::scenario::parse(&s.to_string()).unwrap()).unwrap();
        assert_eq!(w.flows.len(), 2);
        assert!(matches!(w.flows[0].source, Source::Tcp(_)) && matches!(w.flows[0].sink, Sink::Tcp(_)));
        assert!(matches!(w.flows[1].sink, Sink::Datagram(_)));
        for (i, f) in w.flows.iter().enumerate() {
            // The pure delay leading the forward path is folded into the
            // source's clock (half of the 20 ms round trip, by default).
            assert!(f.clock_offset_ns > 0, "flow {i}: clock offset");
            assert_eq!(f.info.base_rtt_ns, 20_000_000, "flow {i}: base RTT");
            let first = w.routes.stage(f.rev_route, 0);
            let Some(Stage::Line(d)) = first else { panic!("flow {i}: reverse route starts with {first:?}") };
            assert_eq!(f.reply_line, Some(d), "flow {i}: replies go into the reverse route's first line");
            assert!(w.routes.stages_of(f.fwd_route).any(|s| matches!(s, Stage::Queue(_))), "flow {i}: forward route crosses the bottleneck");
        }
        assert_eq!(w.flow_counters.len(), 2);
    }
}
