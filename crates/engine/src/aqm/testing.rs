//! A harness for trace-driven AQM unit tests: scripted arrivals and
//! dequeues at given times, with counters to assert on.
use super::*;
use crate::packet::PacketKind;
use crate::sim::rng::Domain;

pub struct Harness<Q: Qdisc> {
    pub q: Q,
    pub rng: SimRng,
    pub counters: [SubqueueCounters; MAX_SUBQUEUES],
    pub flows: Vec<FlowQueueCounters>,
    /// What the discipline sent to sources (`notify_source`).
    pub feedback: Vec<Packet>,
}

impl<Q: Qdisc> Harness<Q> {
    pub fn new(q: Q) -> Self {
        Harness {
            q,
            rng: SimRng::derive(1, Domain::Queue, 0),
            counters: Default::default(),
            flows: vec![FlowQueueCounters::default(); 64],
            feedback: vec![],
        }
    }
    pub fn ctx(&mut self, now_ns: u64) -> (&mut Q, QdiscCtx<'_>) {
        let ctx = QdiscCtx::new(now_ns, &mut self.rng, &mut self.counters, &mut self.flows);
        (&mut self.q, ctx.with_feedback(Some(&mut self.feedback)))
    }
    /// Classify and stamp an arriving packet, and count it, as the engine does.
    fn arrival(&mut self, now_ns: u64, mut pkt: Packet) -> Packet {
        pkt.subq = self.q.classify(&pkt);
        pkt.enq_ns = now_ns;
        let c = &mut self.counters[pkt.subq as usize];
        c.arrived_pkts += 1;
        c.arrived_bytes += pkt.size_bytes as u64;
        pkt
    }
    fn departure(&mut self, p: &Packet) {
        let c = &mut self.counters[p.subq as usize];
        c.departed_pkts += 1;
        c.departed_bytes += p.size_bytes as u64;
    }
    #[track_caller]
    pub fn enqueue(&mut self, now_ns: u64, pkt: Packet) {
        let pkt = self.arrival(now_ns, pkt);
        let (q, mut ctx) = self.ctx(now_ns);
        q.enqueue(pkt, &mut ctx);
    }
    #[track_caller]
    pub fn dequeue(&mut self, now_ns: u64) -> Option<Packet> {
        let (q, mut ctx) = self.ctx(now_ns);
        let p = q.dequeue(&mut ctx)?;
        self.departure(&p);
        Some(p)
    }
    /// What [`Qdisc::pass_through`] gives at `now_ns`, counted as an
    /// arrival and, if it is sent, a departure.
    #[track_caller]
    pub fn pass(&mut self, now_ns: u64, pkt: Packet) -> Option<Packet> {
        let pkt = self.arrival(now_ns, pkt);
        let (q, mut ctx) = self.ctx(now_ns);
        let p = q.pass_through(pkt, &mut ctx)?;
        self.departure(&p);
        Some(p)
    }
    pub fn timer(&mut self, now_ns: u64) {
        let (q, mut ctx) = self.ctx(now_ns);
        q.on_timer(&mut ctx);
    }
    pub fn drops(&self) -> u64 {
        self.counters.iter().map(|c| c.drops()).sum()
    }
    pub fn marks(&self) -> u64 {
        self.counters.iter().map(|c| c.marks()).sum()
    }
    /// arrived = departed + dropped + resident.
    #[track_caller]
    pub fn assert_conservation(&self) {
        let arrived: u64 = self.counters.iter().map(|c| c.arrived_pkts).sum();
        let departed: u64 = self.counters.iter().map(|c| c.departed_pkts).sum();
        assert_eq!(arrived, departed + self.drops() + self.q.len_pkts() as u64);
    }
}

/// A 1500-byte data packet of `flow` with the given ECN codepoint.
pub fn data(flow: u32, ecn: Ecn) -> Packet {
    let mut p = Packet::new(PacketKind::Data, flow, 1500);
    p.ecn = ecn;
    p
}

/// Drive `h` with a seeded random mix of arrivals (all ECN codepoints,
/// flows 0..8, sizes 64..1500 B), dequeues and due timer ticks, over
/// about `steps` events spaced up to 2 ms apart.
pub fn random_trace<Q: Qdisc>(h: &mut Harness<Q>, steps: usize) {
    let mut r = SimRng::derive(99, Domain::Workload, 0);
    let ecns = [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce];
    let mut now = 0u64;
    for _ in 0..steps {
        now += r.below(2_000_000);
        match r.below(10) {
            0..=5 => {
                let mut p = data(r.below(8) as u32, ecns[r.below(4) as usize]);
                p.size_bytes = 64 + r.below(1437) as u32;
                h.enqueue(now, p);
            }
            6..=8 => {
                h.dequeue(now);
            }
            _ => {}
        }
        if h.q.next_timer_ns().is_some_and(|t| t <= now) {
            h.timer(now);
        }
    }
}

/// Check a discipline's `pass_through` against `enqueue` then `dequeue`:
/// `a` and `b`, built alike, run one seeded trace of 40 000 steps that
/// alternates overload (arrivals 60 % of the steps, so queues stand above
/// a 5 ms target for more than an interval) and drain (20 %; queues
/// empty), running due timer ticks before each step. At an arrival to an
/// empty discipline with the transmitter idle (here: every second such
/// arrival, so that queues build), `a` passes the packet through and `b`
/// enqueues and dequeues it. The packets sent, the counters and `state`
/// (what the discipline keeps besides its packet store) must agree after
/// every step. Returns how many arrivals were passed through, and how many
/// of them changed `state`.
#[track_caller]
pub fn compare_pass_through<Q: Qdisc>(a: &mut Harness<Q>, b: &mut Harness<Q>, state: impl Fn(&Q) -> String) -> (u32, u32) {
    let mut r = SimRng::derive(7, Domain::Workload, 0);
    let ecns = [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce];
    let (mut now, mut passed, mut changed) = (0u64, 0, 0);
    for step in 0..40_000u64 {
        now += r.below(2_000_000);
        // Due timer ticks first (the probability updates of PIE and the PI
        // controllers, ARED's max_p, VDQ-CSAQM's CTVs).
        for h in [&mut *a, &mut *b] {
            while h.q.next_timer_ns().is_some_and(|t| t <= now) {
                h.timer(now);
            }
        }
        let overload = (step / 400) % 2 == 0;
        if r.below(10) < if overload { 6 } else { 2 } {
            let mut p = data(1 + r.below(4) as u32, ecns[r.below(4) as usize]);
            p.seq = step;
            p.size_bytes = 64 + r.below(1437) as u32;
            if a.q.len_pkts() == 0 && r.below(2) == 0 {
                let before = state(&a.q);
                passed += 1;
                let got = a.pass(now, p);
                changed += (state(&a.q) != before) as u32;
                b.enqueue(now, p);
                assert_eq!(got, b.dequeue(now), "step {step}");
            } else {
                a.enqueue(now, p);
                b.enqueue(now, p);
            }
        } else {
            assert_eq!(a.dequeue(now), b.dequeue(now), "step {step}");
        }
        assert_eq!(state(&a.q), state(&b.q), "step {step}");
        assert_eq!(format!("{:?}", a.counters), format!("{:?}", b.counters), "step {step}");
    }
    while a.q.len_pkts() > 0 {
        assert_eq!(a.dequeue(now), b.dequeue(now));
    }
    assert_eq!(b.q.len_pkts(), 0);
    (passed, changed)
}

pub fn env(rate_bps: u64, limit_pkts: u64) -> QdiscEnv {
    QdiscEnv {
        link_rate_bps: rate_bps,
        mtu_bytes: 1500,
        limit: QueueLimit { pkts: Some(limit_pkts), bytes: None },
    }
}
