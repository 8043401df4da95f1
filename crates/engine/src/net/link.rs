//! Links: a transmitter (rate, queue discipline) plus propagation delay.
//!
//! A link with a rate serialises one packet at a time from its queue; only
//! the packet being sent has an event. A link without a rate is a pure delay.
//! The queue slot does the bookkeeping every discipline shares (ns-3's
//! non-virtual interface): arrivals, departures, sojourn times, the
//! conservation invariant, and the warm-up snapshot.
//!
//! Departure lookahead: when the discipline decides everything on arrival
//! and serves in arrival order ([`crate::aqm::DecidesOnArrival`]), and the
//! link's rate and loss never change, a packet's transmission start and end
//! are known the moment it arrives. The slot then hands the packet on at
//! once, stamped with its departure time, and keeps only a compact record
//! of it until its start passes: the backlog the discipline's next
//! decisions read, and the departure bookkeeping (counters, sojourn
//! histograms, busy time), settled at the next arrival or checkpoint. No
//! end-of-transmission event is needed.
//!
//! Early hand-off: every other discipline (the AQMs that decide at dequeue)
//! chooses its next packet only when the wire falls free, so its queue keeps
//! an end-of-transmission event. But the packet that starts is known: when a
//! lossless line follows the queue, it enters that line at once, stamped with
//! the end of its transmission, and the event is scheduled only while
//! packets wait for it. When none wait, the end of the transmission changes
//! nothing but the discipline's state on finding itself empty (CoDel leaves
//! its dropping state, for one); that dequeue runs, at its own time, before
//! anything else touches the queue (an arrival, the discipline's timer, a
//! checkpoint), as ends of transmission run first at a nanosecond (see
//! `sim::scheduler`). In a fat tree two hops in three find the queue
//! empty behind them, and so need no event; a dumbbell's bottleneck rarely
//! empties, so the shortcut is on only from 64 queues
//! (`world::event_loop::EARLY_HAND_OFF_MIN_QUEUES`; docs/performance.md).

use crate::aqm::{
    AnyQdisc, DropReason, FlowQueueCounters, MarkReason, Qdisc, QdiscCtx, SubqueueCounters, MAX_SUBQUEUES,
};
use super::sojourn_log::SojournLog;
use crate::metrics::histogram::{Buckets, Histogram};
use crate::packet::Packet;
use crate::sim::ring::Ring;
use crate::sim::serialiser::Serialiser;
use crate::sim::rng::SimRng;

/// Raw sojourn sample: (dequeue time, sub-queue, flow, sojourn).
pub type SojournSample = (u64, u8, u32, u64);

/// Departure lookahead: an accepted packet, already handed on, whose
/// transmission has not started yet. 32 bytes, two to a cache line: its
/// transmission time is not kept, as waiting packets are sent back to
/// back and it ends where the next one's starts, or the last one's at the
/// queue's `free_at_ns` (`QueueSlot::start_due`). Debug builds keep it to
/// check that.
#[derive(Debug, Clone, Copy)]
struct Waiting {
    start_ns: u64,
    enq_ns: u64,
    flow: u32,
    size_bytes: u32,
    subq: u8,
    data: bool,
    #[cfg(debug_assertions)]
    tx_ns: u64,
}

impl Waiting {
    #[inline(always)]
    fn of(pkt: &Packet, start_ns: u64, enq_ns: u64, #[cfg_attr(not(debug_assertions), allow(unused_variables))] tx_ns: u64) -> Self {
        Waiting {
            start_ns,
            enq_ns,
            flow: pkt.flow,
            size_bytes: pkt.size_bytes,
            subq: pkt.subq,
            data: pkt.carries_payload(),
            #[cfg(debug_assertions)]
            tx_ns,
        }
    }
}

/// A sub-queue's sojourn statistics that every departure updates: the
/// histogram's buckets and the largest sojourn since the last time-series
/// sample (or the end of warm-up, see [`QueueSlot::take_sojourn_max`]).
/// Half a cache line. The histogram's count and sum are the sub-queue's
/// departures and sojourn sum since warm-up, which its counters hold
/// already; its maximum is put together from this one
/// ([`QueueSlot::take_histograms`]).
#[derive(Debug, Clone, Default)]
#[repr(C)]
struct SojournStats {
    buckets: Buckets,
    max_ns: u64,
}

/// A queue, its transmitter's state and its statistics.
///
/// The layout is fixed (`repr(C)`) and ordered by how often a field is
/// touched: a packet's pass through a queue with departure lookahead reads
/// and writes the first four cache lines (the scalars below, the first
/// sub-queue's sojourn statistics and its counters up to the marks) and
/// the discipline's first line, and nothing else of the slot (a drop also
/// writes the fifth line, where the counters' drops end). Without departure lookahead (the
/// AQMs) a packet's pass also reads the packet on the wire, one line after
/// the discipline; flags in the first line say whether it must read more
/// (a medium, random loss or marking, feedback to sources). A fat tree
/// holds thousands of queues and consecutive hops touch unrelated ones, so
/// each of those lines is a cache miss; kept together they are few
/// (docs/performance.md).
#[derive(Debug, Clone)]
#[repr(C)]
pub struct QueueSlot {
    // --- first 128 bytes: every packet ---
    /// Time of the pending qdisc timer event, if any. First: its tag's spare
    /// values are where `Option<QueueSlot>` keeps its own, which every
    /// packet reads.
    pub timer_at: Option<u64>,
    /// Departure lookahead is on (see the module docs).
    departure_lookahead: bool,
    /// Sub-queues with a histogram (0: histograms off).
    hist_subqueues: u8,
    /// The link sends on a shared medium (`Link::medium`): an arrival reads
    /// that line of the link only then.
    on_medium: bool,
    /// The link loses or marks at random (`Link::loss`, `Link::mark`): a
    /// departure reads those fields, in the link's last line, only then.
    link_random: bool,
    sample_every: u32,
    sample_countdown: u32,
    /// The discipline sends control packets to sources
    /// ([`Qdisc::notifies_sources`]): only then has it a `feedback` buffer,
    /// and only then does a packet's pass read it (a cold line).
    notifies_sources: bool,
    /// Early hand-off is on (see the module docs).
    hands_on_early: bool,
    /// Early hand-off: a transmission has started whose end has not run
    /// yet (its packet may have left; other queues read `in_tx`).
    sending: bool,
    /// Early hand-off: an end-of-transmission event is scheduled (at
    /// `free_at_ns`); without one, the end runs when the queue is next touched.
    tx_done_armed: bool,
    /// Start of the oldest waiting packet (u64::MAX if none): most arrivals
    /// find nothing started and test this field, not the ring's front.
    next_start_ns: u64,
    /// Departure lookahead: when the transmitter finishes the last accepted
    /// packet. Early hand-off: when the transmission on the wire ends.
    free_at_ns: u64,
    waiting_bytes: u64,
    /// The transmitter's rate and the remainder its frames carry: here, a
    /// hop reads them with the queue's other hot fields, not from a line of
    /// their own (`Link::set_rate_bps`).
    tx: Serialiser,
    /// Departure lookahead: accepted packets not yet started, oldest first.
    waiting: Ring<Waiting>,
    /// The transmitter's totals.
    pub busy_ns: u64,
    /// Data-direction packets sent (the benchmark's "bottleneck packets").
    pub data_departed: u64,
    // --- the third line: the first sub-queue's sojourn statistics, the
    // capture, then the first sub-queue's counters (what every packet
    // updates ends in the fourth line; the drops reach into the fifth), then the
    // discipline ---
    sojourn0: SojournStats,
    /// Packet capture (`[metrics] pcap`) of this queue; None: off.
    pub capture: Option<Box<crate::metrics::pcap::PcapRecorder>>,
    pub counters: [SubqueueCounters; MAX_SUBQUEUES],
    pub qdisc: AnyQdisc,
    /// The packet on the wire (queues without departure lookahead, unless
    /// handed on early): one line, right after the discipline, read and
    /// written on every packet there.
    in_tx: OnWire,
    // --- rarely touched ---
    /// The sojourn statistics of the sub-queues after the first.
    sojourn_rest: [SojournStats; MAX_SUBQUEUES - 1],
    /// Per sub-queue, the largest sojourn since warm-up in the time-series
    /// intervals already sampled (`take_sojourn_max`).
    max_sampled_ns: [u64; MAX_SUBQUEUES],
    /// Per sub-queue, the largest sojourn of the sampling interval that
    /// warm-up ended, up to its end: the interval's sample still reports it.
    max_before_warmup_ns: [u64; MAX_SUBQUEUES],
    /// Counters at the end of warm-up (summary statistics exclude warm-up).
    pub counters_at_warmup: [SubqueueCounters; MAX_SUBQUEUES],
    pub busy_ns_at_warmup: u64,
    rng: SimRng,
    pub samples: Vec<SojournSample>,
    /// Control packets the discipline sent to sources (`QdiscCtx::notify_source`),
    /// waiting for the world to route them; empty (never allocated) for
    /// disciplines that send none.
    pub(crate) feedback: Vec<Packet>,
    pub aqm_name: String,
}

/// The packet on the wire, on a cache line of its own whatever the size of
/// the discipline before it (`QueueSlot::in_tx`).
#[derive(Debug, Clone)]
#[repr(C, align(64))]
struct OnWire(Option<Packet>);

/// A link: a pure delay, or a queue and its transmitter before the delay.
///
/// `repr(C)`: the queue's hot lines (see [`QueueSlot`]) start the record.
/// Aligned to a cache line so that they are four lines in every link:
/// unaligned, links of 2 160 bytes straddled one more in three of four. The
/// rate lives in the queue, and a flag there says whether `medium` needs
/// reading, so a hop reads nothing of the link past its queue's hot lines
/// (docs/performance.md).
#[derive(Debug, Clone)]
#[repr(C, align(64))]
pub struct Link {
    pub queue: Option<QueueSlot>,
    /// The shared medium (`net::medium`) this link sends on, if any: its
    /// transmissions are started by the medium, never by the link alone.
    /// Set through [`Link::join_medium`].
    medium: Option<u32>,
    pub name: String,
    pub delay_ns: u64,
    /// Random loss and marking probabilities, fixed at [`Link::new`]
    /// (the queue keeps whether either is set, `QueueSlot::link_random`).
    loss: f64,
    mark: f64,
    rng: SimRng,
    /// Listed in the summary's queue table.
    pub report: bool,
    /// Counted in perf.bottleneck_packets.
    pub bottleneck: bool,
    /// Packets lost or marked at random on a pure-delay link.
    pub random_drops: u64,
    pub random_marks: u64,
}

/// Bytes from the start of a [`Link`] that a packet's pass through its
/// queue touches (see [`QueueSlot`]'s layout): four lines.
const HOT_BYTES: usize = 256;

impl Link {
    /// Start loading what a packet's arrival at this link's queue will touch
    /// (the lines [`QueueSlot`] keeps first, the discipline's first line, the
    /// rate); a hint that changes nothing else (see `sim::prefetch`).
    #[inline(always)]
    pub fn prefetch_hot(&self) {
        use crate::sim::prefetch::prefetch_bytes;
        use std::mem::offset_of;
        prefetch_bytes(self, 0, HOT_BYTES);
        prefetch_bytes(self, offset_of!(Link, queue) + offset_of!(QueueSlot, qdisc), 1);
    }

    /// Start loading the front of the queue's waiting ring, if it holds
    /// packets. Reads the ring's header among the queue's first 128 bytes,
    /// so it pays only once `prefetch_hot` has started them an event before.
    #[inline(always)]
    pub fn prefetch_waiting(&self) {
        if let Some(w) = self.queue.as_ref().and_then(|q| q.waiting.front()) {
            crate::sim::prefetch::prefetch(w);
        }
    }

    /// Start loading the queue's tag and sub-queue `sub`'s histogram buckets'
    /// header (`SojournLog::apply`).
    #[inline(always)]
    pub fn prefetch_histogram(&self, sub: usize) {
        use crate::sim::prefetch::prefetch_bytes;
        use std::mem::offset_of;
        prefetch_bytes(self, 0, 1);
        let at = match sub {
            0 => offset_of!(QueueSlot, sojourn0),
            _ => offset_of!(QueueSlot, sojourn_rest) + (sub - 1) * std::mem::size_of::<SojournStats>(),
        };
        prefetch_bytes(self, offset_of!(Link, queue) + at, 1);
    }

    /// Where bucket `b` of sub-queue `sub`'s histogram lies, if it exists yet.
    #[inline(always)]
    pub fn histogram_slot(&self, sub: usize, b: usize) -> Option<&u64> {
        self.queue.as_ref()?.sojourn(sub).buckets.bucket_slot(b)
    }

    /// Count a bucket the sojourn log deferred.
    #[inline(always)]
    pub fn count_sojourn_run(&mut self, sub: usize, b: usize, n: u32) {
        self.queue.as_mut().expect("only queues log sojourns").sojourn_mut(sub).buckets.count_run(b, n);
    }

    /// A pure delay; [`Link::with_queue`] gives it a queue and transmitter.
    pub fn new(name: String, delay_ns: u64, loss: f64, mark: f64, rng: SimRng) -> Self {
        Link { name, delay_ns, loss, mark, rng, queue: None, report: false, bottleneck: false, random_drops: 0, random_marks: 0, medium: None }
    }

    /// Give the link and its queue the random streams they would have been
    /// built with (a copy of a link built once: a dumbbell's access links,
    /// `access_link` in world/topology.rs).
    pub fn set_random_streams(&mut self, link_rng: SimRng, queue_rng: SimRng) {
        self.rng = link_rng;
        if let Some(q) = &mut self.queue {
            q.rng = queue_rng;
        }
    }

    /// Take over the name of `old`, which this link replaces, and what its
    /// queue allocated: the discipline's name and the waiting ring's buffer
    /// (empty). `old` is an idle queue of the same kind, a dumbbell's
    /// access queue a later flow reuses (`access_link` in
    /// world/topology.rs); this link starts as a new one would, without
    /// allocating them again.
    pub fn take_buffers_of(&mut self, old: &mut Link) {
        self.name = std::mem::take(&mut old.name);
        if let (Some(q), Some(o)) = (&mut self.queue, &mut old.queue) {
            debug_assert!(o.waiting.is_empty() && q.aqm_name == o.aqm_name, "{} is not an idle {}", self.name, q.aqm_name);
            q.aqm_name = std::mem::take(&mut o.aqm_name);
            q.waiting = std::mem::take(&mut o.waiting);
            q.waiting.rewind();
        }
    }

    /// The link loses or marks packets at random.
    #[inline(always)]
    pub fn loses_or_marks(&self) -> bool {
        match &self.queue {
            Some(q) => q.link_random,
            None => self.loss > 0.0 || self.mark > 0.0,
        }
    }

    /// A new transmitter rate from now on (`rate_schedule`).
    pub fn set_rate_bps(&mut self, rate_bps: u64) {
        self.queue.as_mut().expect("only links with a queue have a rate").tx.set_rate_bps(rate_bps);
    }

    /// The shared medium this link sends on, if any.
    #[inline(always)]
    pub fn medium(&self) -> Option<u32> {
        self.medium
    }

    /// Send on shared medium `m` (a link with a queue: the medium starts its
    /// transmissions).
    pub fn join_medium(&mut self, m: u32) {
        self.medium = Some(m);
        self.queue.as_mut().expect("a medium's links have queues").on_medium = true;
    }

    /// A queue and a transmitter of `rate_bps` before the delay.
    pub fn with_queue(mut self, rate_bps: u64, qdisc: AnyQdisc, aqm_name: String, rng: SimRng, histograms: bool, sample_every: u32) -> Self {
        let nsub = qdisc.subqueue_names().len();
        let notifies_sources = qdisc.notifies_sources();
        let link_random = self.loses_or_marks();
        self.queue = Some(QueueSlot {
            qdisc,
            aqm_name,
            rng,
            counters: Default::default(),
            counters_at_warmup: Default::default(),
            in_tx: OnWire(None),
            tx: Serialiser::new(rate_bps),
            busy_ns: 0,
            busy_ns_at_warmup: 0,
            data_departed: 0,
            hist_subqueues: if histograms { nsub as u8 } else { 0 },
            on_medium: self.medium.is_some(),
            link_random,
            notifies_sources,
            hands_on_early: false,
            sending: false,
            tx_done_armed: false,
            sojourn0: SojournStats::default(),
            sojourn_rest: Default::default(),
            max_sampled_ns: [0; MAX_SUBQUEUES],
            max_before_warmup_ns: [0; MAX_SUBQUEUES],
            sample_every,
            sample_countdown: sample_every,
            samples: vec![],
            capture: None,
            timer_at: None,
            feedback: vec![],
            departure_lookahead: false,
            waiting: Ring::new(),
            waiting_bytes: 0,
            next_start_ns: u64::MAX,
            free_at_ns: 0,
        });
        self
    }

    /// Random loss and marking of the link itself (a mark sets CE in place);
    /// returns whether the packet survives.
    #[inline]
    pub fn apply_random(&mut self, pkt: &mut Packet, flow_counters: &mut [FlowQueueCounters]) -> bool {
        if self.loss > 0.0 && self.rng.roll(self.loss) {
            match &mut self.queue {
                Some(q) => QdiscCtx::new(0, &mut self.rng, &mut q.counters, flow_counters).drop(*pkt, DropReason::LinkLoss),
                None => {
                    self.random_drops += 1;
                    if let Some(f) = flow_counters.get_mut(pkt.flow as usize) {
                        f.drops += 1;
                    }
                }
            }
            return false;
        }
        if self.mark > 0.0 && pkt.ecn.is_ect() && self.rng.roll(self.mark) {
            match &mut self.queue {
                Some(q) => {
                    QdiscCtx::new(0, &mut self.rng, &mut q.counters, flow_counters).mark(pkt, MarkReason::LinkMark);
                }
                None => {
                    pkt.ecn = crate::packet::Ecn::Ce;
                    self.random_marks += 1;
                    if let Some(f) = flow_counters.get_mut(pkt.flow as usize) {
                        f.marks += 1;
                    }
                }
            }
        }
        true
    }
}

impl QueueSlot {
    /// Hand a packet to the discipline. Returns true if the transmitter is
    /// idle and should start.
    #[inline]
    pub fn arrive(&mut self, now_ns: u64, mut pkt: Packet, flow_counters: &mut [FlowQueueCounters]) -> bool {
        pkt.enq_ns = now_ns;
        if let Some(cap) = self.capture.as_deref_mut().filter(|c| c.at_enqueue) {
            cap.record(now_ns, &pkt);
        }
        let (qdisc, mut ctx) = self.qdisc_and_ctx(now_ns, flow_counters);
        qdisc.classify_and_enqueue(pkt, &mut ctx);
        self.in_tx.0.is_none()
    }

    /// The discipline and what it may touch at `now_ns` (its random stream,
    /// the counters, the capture's drop log, and the feedback buffer if it
    /// notifies sources), borrowed apart so that one can be passed to the other.
    #[inline(always)]
    fn qdisc_and_ctx<'a>(&'a mut self, now_ns: u64, flow_counters: &'a mut [FlowQueueCounters]) -> (&'a mut AnyQdisc, QdiscCtx<'a>) {
        let ctx = QdiscCtx::new(now_ns, &mut self.rng, &mut self.counters, flow_counters)
            .with_feedback(self.notifies_sources.then_some(&mut self.feedback))
            .with_capture(self.capture.as_deref_mut().map(|c| &mut c.drops));
        (&mut self.qdisc, ctx)
    }

    /// Take the next packet from the discipline and start sending it at the
    /// link's rate. Returns when transmission ends, or None if nothing to send.
    #[inline]
    pub fn start_tx(&mut self, now_ns: u64, flow_counters: &mut [FlowQueueCounters]) -> Option<u64> {
        self.start_tx_airtime(now_ns, 0, 0, flow_counters)
    }

    /// As [`Self::start_tx`], on a shared medium (`net::medium`) too: the
    /// packet goes out as a frame of `header_bytes` more at the link's rate plus
    /// `overhead_ns` of airtime (both 0 on a wire). Returns when it ends.
    #[inline(always)]
    pub fn start_tx_airtime(
        &mut self,
        now_ns: u64,
        header_bytes: u32,
        overhead_ns: u64,
        flow_counters: &mut [FlowQueueCounters],
    ) -> Option<u64> {
        debug_assert!(self.in_tx.0.is_none());
        let (qdisc, mut ctx) = self.qdisc_and_ctx(now_ns, flow_counters);
        let pkt = qdisc.dequeue(&mut ctx)?;
        let done = self.begin_tx(now_ns, &pkt, header_bytes, overhead_ns);
        self.in_tx.0 = Some(pkt);
        Some(done)
    }

    /// The start of `pkt`'s transmission, taken from the discipline at
    /// `now_ns`: its capture, its duration and the departure bookkeeping.
    /// Returns when it ends.
    #[inline(always)]
    fn begin_tx(&mut self, now_ns: u64, pkt: &Packet, header_bytes: u32, overhead_ns: u64) -> u64 {
        if let Some(cap) = self.capture.as_deref_mut().filter(|c| !c.at_enqueue) {
            cap.record(now_ns, pkt);
        }
        let tx_ns = overhead_ns + self.tx.frame_ns(pkt.size_bytes + header_bytes);
        let w = Waiting::of(pkt, now_ns, pkt.enq_ns, tx_ns);
        self.record_start(&w, tx_ns, None);
        now_ns + tx_ns
    }

    /// The bookkeeping of a transmission of `tx_ns` that starts: departure
    /// counters, sojourn histogram and samples, busy time.
    /// `log`: the world's sojourn log and this queue's link index, where
    /// the histogram bucket is noted if the log is on (`net::sojourn_log`).
    #[inline(always)]
    fn record_start(&mut self, w: &Waiting, tx_ns: u64, log: Option<(&mut SojournLog, u32)>) {
        let sub = w.subq as usize;
        let c = &mut self.counters[sub];
        c.departed_pkts += 1;
        c.departed_bytes += w.size_bytes as u64;
        // Not a branch: data and ACKs alternate at many ports.
        self.data_departed += w.data as u64;
        let sojourn = w.start_ns - w.enq_ns;
        c.sojourn_sum_ns += sojourn;
        let histogram = sub < self.hist_subqueues as usize;
        let stats = self.sojourn_mut(sub);
        stats.max_ns = stats.max_ns.max(sojourn);
        if histogram {
            match log {
                Some((log, index)) if log.is_on() => {
                    if let Some(run) = stats.buckets.record_run(sojourn) {
                        log.push(index, w.subq, run);
                    }
                }
                _ => stats.buckets.record(sojourn),
            }
        }
        if self.sample_every > 0 {
            self.sample_countdown -= 1;
            if self.sample_countdown == 0 {
                self.sample_countdown = self.sample_every;
                self.samples.push((w.start_ns, w.subq, w.flow, sojourn));
            }
        }
        self.busy_ns += tx_ns;
    }

    #[inline(always)]
    fn sojourn_mut(&mut self, sub: usize) -> &mut SojournStats {
        match sub {
            0 => &mut self.sojourn0,
            _ => &mut self.sojourn_rest[sub - 1],
        }
    }

    #[inline(always)]
    fn sojourn(&self, sub: usize) -> &SojournStats {
        match sub {
            0 => &self.sojourn0,
            _ => &self.sojourn_rest[sub - 1],
        }
    }

    /// Sub-queue `sub`'s largest sojourn since the last sample (a
    /// time-series sample, `World::on_sample`), and the start of the next
    /// interval. Warm-up may have ended within the interval: what came
    /// before it counts here but not in the histogram's maximum.
    pub fn take_sojourn_max(&mut self, sub: usize) -> u64 {
        let since_last = std::mem::take(&mut self.sojourn_mut(sub).max_ns);
        self.max_sampled_ns[sub] = self.max_sampled_ns[sub].max(since_last);
        since_last.max(std::mem::take(&mut self.max_before_warmup_ns[sub]))
    }

    /// The transmitter's rate.
    #[inline(always)]
    pub fn tx_rate_bps(&self) -> u64 {
        self.tx.rate_bps()
    }

    /// The link sends on a shared medium (see `Link::medium`).
    #[inline(always)]
    pub fn on_medium(&self) -> bool {
        self.on_medium
    }

    /// Departure lookahead is on: use [`QueueSlot::arrive_ahead`], never
    /// `arrive`/`start_tx`.
    #[inline(always)]
    pub fn departs_on_arrival(&self) -> bool {
        self.departure_lookahead
    }

    /// Count the histograms' open sojourn runs (`Buckets::record_run`);
    /// with the log, before anything reads them (`World::start_due_transmissions`
    /// and, at a sample, `start_due_sampled_transmissions`).
    pub fn settle_sojourn_runs(&mut self) {
        (0..self.hist_subqueues as usize).for_each(|sub| self.sojourn_mut(sub).buckets.settle_run());
    }

    /// Packets resident (waiting to be sent; not the one on the wire).
    pub fn backlog_pkts(&self) -> usize {
        if self.departure_lookahead {
            self.waiting.len()
        } else {
            self.qdisc.len_pkts()
        }
    }

    /// Packets resident in sub-queue `sub`.
    pub fn subqueue_backlog_pkts(&self, sub: usize) -> usize {
        if self.departure_lookahead {
            self.waiting.iter().filter(|w| w.subq as usize == sub).count()
        } else {
            self.qdisc.subqueue_len_pkts(sub)
        }
    }

    /// The packet whose transmission just ended.
    #[inline]
    pub fn finish_tx(&mut self) -> Packet {
        self.in_tx.0.take().expect("a packet was in transmission")
    }

    /// A transmission has started whose end has not run yet (under early
    /// hand-off its packet may have left already).
    pub fn is_sending(&self) -> bool {
        self.in_tx.0.is_some() || self.sending
    }

    /// At `now_ns` nothing is queued, waiting, being sent or still to be
    /// settled, and no event of the queue is pending: a queue built afresh
    /// in its place would behave the same from now on (a dumbbell reuses a
    /// finished flow's access queue, `World::take_free_access_queue`).
    /// Conservative: transmissions started under departure lookahead but
    /// not yet settled count as waiting.
    pub fn is_idle_at(&self, now_ns: u64) -> bool {
        self.waiting.is_empty()
            && self.qdisc.len_pkts() == 0
            && !self.is_sending()
            && !self.tx_done_armed
            && self.timer_at.is_none()
            && self.free_at_ns <= now_ns
    }

    /// Early hand-off is on (see the module docs).
    #[inline(always)]
    pub fn hands_on_early(&self) -> bool {
        self.hands_on_early
    }

    /// The packet on the wire, if it has not been handed on.
    #[inline(always)]
    pub fn packet_on_wire(&self) -> Option<&Packet> {
        self.in_tx.0.as_ref()
    }

    /// The discipline has control packets for sources waiting to be routed.
    #[inline(always)]
    pub fn has_feedback(&self) -> bool {
        self.notifies_sources && !self.feedback.is_empty()
    }

    pub fn qdisc_timer(&mut self, now_ns: u64, flow_counters: &mut [FlowQueueCounters]) {
        let (qdisc, mut ctx) = self.qdisc_and_ctx(now_ns, flow_counters);
        qdisc.on_timer(&mut ctx);
    }

    /// Slots of the waiting ring's buffer (tests of its reuse).
    #[cfg(test)]
    pub(crate) fn waiting_capacity(&self) -> usize {
        self.waiting.capacity()
    }

    /// Packets (data and ACKs) that left the queue, over its sub-queues.
    pub fn departed_pkts(&self) -> u64 {
        self.counters.iter().map(|c| c.departed_pkts).sum()
    }

    /// arrived = departed + dropped + resident (+1 while a packet is on the wire).
    pub fn check_conservation(&self, name: &str) -> Result<(), String> {
        let arrived: u64 = self.counters.iter().map(|c| c.arrived_pkts).sum();
        let departed = self.departed_pkts();
        // Link losses happen after departure, so they are not part of the queue's balance.
        let dropped: u64 =
            self.counters.iter().map(|c| c.drops() - c.dropped_pkts[DropReason::LinkLoss as usize]).sum();
        let resident = self.backlog_pkts() as u64;
        if arrived != departed + dropped + resident {
            return Err(format!(
                "queue '{name}' lost track of packets: arrived {arrived} != departed {departed} + dropped {dropped} + resident {resident}"
            ));
        }
        Ok(())
    }

    /// Start of the measurement window: remember counters, clear histograms
    /// (the interval's largest sojourn so far is kept for its sample).
    pub fn end_warmup(&mut self) {
        self.counters_at_warmup = self.counters.clone();
        self.busy_ns_at_warmup = self.busy_ns;
        for sub in 0..MAX_SUBQUEUES {
            let stats = self.sojourn_mut(sub);
            stats.buckets.reset();
            let before = std::mem::take(&mut stats.max_ns);
            self.max_before_warmup_ns[sub] = self.max_before_warmup_ns[sub].max(before);
            self.max_sampled_ns[sub] = 0;
        }
    }

    /// The sojourn histograms, one per sub-queue (empty when not recorded),
    /// leaving empty ones behind: the buckets, with the departures and the
    /// sojourn sum since warm-up from the counters, and the largest sojourn
    /// since warm-up.
    pub fn take_histograms(&mut self) -> Vec<Histogram> {
        (0..self.hist_subqueues as usize)
            .map(|sub| {
                let (c, at) = (&self.counters[sub], &self.counters_at_warmup[sub]);
                let (n, sum) = (c.departed_pkts - at.departed_pkts, (c.sojourn_sum_ns - at.sojourn_sum_ns) as u128);
                let max = self.max_sampled_ns[sub].max(self.sojourn(sub).max_ns);
                std::mem::take(&mut self.sojourn_mut(sub).buckets).into_histogram(n, sum, max)
            })
            .collect()
    }
}

// The per-packet steps of departure lookahead and early hand-off (see the
// module docs).
#[path = "link_lookahead.rs"]
mod lookahead;

#[cfg(test)]
#[path = "link_tests.rs"]
mod tests;
