//! Links: a transmitter (rate, queue discipline) plus propagation delay.
//!
//! A link with a rate serialises one packet at a time from its queue; only
//! the packet being sent has an event. A link without a rate is a pure delay.
//! The queue slot does the bookkeeping every discipline shares (ns-3's
//! non-virtual interface): arrivals, departures, sojourn times, the
//! conservation invariant, and the warm-up snapshot.

use crate::aqm::{
    AnyQdisc, DropReason, FlowQueueCounters, MarkReason, Qdisc, QdiscCtx, SubqueueCounters, MAX_SUBQUEUES,
};
use crate::metrics::histogram::Histogram;
use crate::net::packet::{Packet, PacketKind};
use crate::sim::rng::SimRng;
use crate::sim::NS_PER_SEC;

/// Raw sojourn sample: (dequeue time, sub-queue, flow, sojourn).
pub type SojournSample = (u64, u8, u32, u64);

#[derive(Debug, Clone)]
pub struct QueueSlot {
    pub qdisc: AnyQdisc,
    pub aqm_name: String,
    rng: SimRng,
    pub counters: [SubqueueCounters; MAX_SUBQUEUES],
    /// Counters at the end of warm-up (summary statistics exclude warm-up).
    pub counters_at_warmup: [SubqueueCounters; MAX_SUBQUEUES],
    in_tx: Option<Packet>,
    /// Remainder of bits·1e9 / rate, so the long-run rate is exact.
    tx_carry: u64,
    /// (size, rate, bits·1e9 / rate, remainder) of the last packet size seen:
    /// saves a division per packet when sizes repeat.
    tx_cache: (u32, u64, u64, u64),
    pub busy_ns: u64,
    pub busy_ns_at_warmup: u64,
    /// Data-direction packets sent (the benchmark's "bottleneck packets").
    pub data_departed: u64,
    pub hist: Vec<Histogram>,
    sample_every: u32,
    sample_countdown: u32,
    pub samples: Vec<SojournSample>,
    /// Time of the pending qdisc timer event, if any.
    pub timer_at: Option<u64>,
    /// Control packets the discipline sent to sources (`QdiscCtx::notify_source`),
    /// waiting for the world to route them; empty (never allocated) for
    /// disciplines that send none.
    pub(crate) feedback: Vec<Packet>,
}

#[derive(Debug, Clone)]
pub struct Link {
    pub name: String,
    /// 0: pure delay (no transmitter, no queue).
    pub rate_bps: u64,
    pub delay_ns: u64,
    pub loss: f64,
    pub mark: f64,
    rng: SimRng,
    pub queue: Option<QueueSlot>,
    /// Listed in the summary's queue table.
    pub report: bool,
    /// Counted in perf.bottleneck_packets.
    pub bottleneck: bool,
    /// Packets lost or marked at random on a pure-delay link.
    pub random_drops: u64,
    pub random_marks: u64,
}

impl Link {
    pub fn new(name: String, rate_bps: u64, delay_ns: u64, loss: f64, mark: f64, rng: SimRng) -> Self {
        Link { name, rate_bps, delay_ns, loss, mark, rng, queue: None, report: false, bottleneck: false, random_drops: 0, random_marks: 0 }
    }

    pub fn with_queue(mut self, qdisc: AnyQdisc, aqm_name: String, rng: SimRng, histograms: bool, sample_every: u32) -> Self {
        let nsub = qdisc.subqueue_names().len();
        self.queue = Some(QueueSlot {
            qdisc,
            aqm_name,
            rng,
            counters: Default::default(),
            counters_at_warmup: Default::default(),
            in_tx: None,
            tx_carry: 0,
            tx_cache: (0, 0, 0, 0),
            busy_ns: 0,
            busy_ns_at_warmup: 0,
            data_departed: 0,
            hist: if histograms { vec![Histogram::new(); nsub] } else { vec![] },
            sample_every,
            sample_countdown: sample_every,
            samples: vec![],
            timer_at: None,
            feedback: vec![],
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
                    pkt.ecn = crate::net::packet::Ecn::Ce;
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
        pkt.subq = self.qdisc.classify(&pkt);
        pkt.enq_ns = now_ns;
        let c = &mut self.counters[pkt.subq as usize];
        c.arrived_pkts += 1;
        c.arrived_bytes += pkt.size_bytes as u64;
        let mut ctx = QdiscCtx::new(now_ns, &mut self.rng, &mut self.counters, flow_counters).with_feedback(&mut self.feedback);
        self.qdisc.enqueue(pkt, &mut ctx);
        self.in_tx.is_none()
    }

    /// Take the next packet from the discipline and start sending it at
    /// `rate_bps`. Returns when transmission ends, or None if nothing to send.
    #[inline]
    pub fn start_tx(&mut self, now_ns: u64, rate_bps: u64, flow_counters: &mut [FlowQueueCounters]) -> Option<u64> {
        debug_assert!(self.in_tx.is_none());
        let mut ctx = QdiscCtx::new(now_ns, &mut self.rng, &mut self.counters, flow_counters).with_feedback(&mut self.feedback);
        let pkt = self.qdisc.dequeue(&mut ctx)?;
        let sub = pkt.subq as usize;
        let c = &mut self.counters[sub];
        c.departed_pkts += 1;
        c.departed_bytes += pkt.size_bytes as u64;
        if matches!(pkt.kind, PacketKind::Data | PacketKind::Datagram) {
            self.data_departed += 1;
        }
        let sojourn = now_ns - pkt.enq_ns;
        if let Some(h) = self.hist.get_mut(sub) {
            h.record(sojourn);
        }
        if self.sample_every > 0 {
            self.sample_countdown -= 1;
            if self.sample_countdown == 0 {
                self.sample_countdown = self.sample_every;
                self.samples.push((now_ns, pkt.subq, pkt.flow, sojourn));
            }
        }
        let tx_ns = self.tx_time(pkt.size_bytes, rate_bps);
        self.busy_ns += tx_ns;
        self.in_tx = Some(pkt);
        Some(now_ns + tx_ns)
    }

    /// Serialisation time with the remainder carried, so the long-run rate is
    /// exact: floor((bits·1e9 + carry) / rate).
    #[inline]
    fn tx_time(&mut self, size: u32, rate_bps: u64) -> u64 {
        if self.tx_cache.0 != size || self.tx_cache.1 != rate_bps {
            let num = size as u64 * 8 * NS_PER_SEC;
            self.tx_cache = (size, rate_bps, num / rate_bps, num % rate_bps);
        }
        let (_, _, q, r) = self.tx_cache;
        // r + carry < 2·rate, so one conditional subtraction replaces the division.
        let rem = r + self.tx_carry;
        if rem >= rate_bps {
            self.tx_carry = rem - rate_bps;
            q + 1
        } else {
            self.tx_carry = rem;
            q
        }
    }

    /// The packet whose transmission just ended.
    #[inline]
    pub fn finish_tx(&mut self) -> Packet {
        self.in_tx.take().expect("a packet was in transmission")
    }

    pub fn is_sending(&self) -> bool {
        self.in_tx.is_some()
    }

    /// The discipline has control packets for sources waiting to be routed.
    #[inline(always)]
    pub fn has_feedback(&self) -> bool {
        !self.feedback.is_empty()
    }

    pub fn qdisc_timer(&mut self, now_ns: u64, flow_counters: &mut [FlowQueueCounters]) {
        let mut ctx = QdiscCtx::new(now_ns, &mut self.rng, &mut self.counters, flow_counters).with_feedback(&mut self.feedback);
        self.qdisc.on_timer(&mut ctx);
    }

    /// arrived = departed + dropped + resident (+1 while a packet is on the wire).
    pub fn check_conservation(&self, name: &str) -> Result<(), String> {
        let arrived: u64 = self.counters.iter().map(|c| c.arrived_pkts).sum();
        let departed: u64 = self.counters.iter().map(|c| c.departed_pkts).sum();
        // Link losses happen after departure, so they are not part of the queue's balance.
        let dropped: u64 =
            self.counters.iter().map(|c| c.drops() - c.dropped_pkts[DropReason::LinkLoss as usize]).sum();
        let resident = self.qdisc.len_pkts() as u64;
        if arrived != departed + dropped + resident {
            return Err(format!(
                "queue '{name}' lost track of packets: arrived {arrived} != departed {departed} + dropped {dropped} + resident {resident}"
            ));
        }
        Ok(())
    }

    /// Start of the measurement window: remember counters, clear histograms.
    pub fn end_warmup(&mut self) {
        self.counters_at_warmup = self.counters.clone();
        self.busy_ns_at_warmup = self.busy_ns;
        self.hist.iter_mut().for_each(Histogram::reset);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aqm::fifo::{Fifo, FifoConfig};
    use crate::aqm::testing::{data, env};
    use crate::net::packet::Ecn;
    use crate::sim::rng::Domain;

    fn fifo_link(limit_pkts: u64) -> Link {
        let rng = || SimRng::derive(1, Domain::Queue, 0);
        let q = AnyQdisc::Fifo(Fifo::new(FifoConfig {}, &env(10_000_000, limit_pkts)).unwrap());
        Link::new("bottleneck".into(), 10_000_000, 0, 0.0, 0.0, rng()).with_queue(q, "fifo".into(), rng(), true, 0)
    }

    #[test]
    fn conservation_holds_through_arrivals_drops_and_departures() {
        let mut link = fifo_link(3);
        let q = link.queue.as_mut().unwrap();
        let mut flows = vec![FlowQueueCounters::default(); 2];
        for _ in 0..5 {
            q.arrive(0, data(1, Ecn::NotEct), &mut flows); // 3 queued, 2 tail-dropped
        }
        q.start_tx(0, 10_000_000, &mut flows).unwrap();
        q.check_conservation("bottleneck").unwrap();
        assert_eq!(q.qdisc.len_pkts(), 2);
    }

    #[test]
    fn a_lost_packet_is_an_error_naming_the_queue_and_the_counts() {
        let mut link = fifo_link(10);
        let q = link.queue.as_mut().unwrap();
        let mut flows = vec![FlowQueueCounters::default(); 2];
        q.arrive(0, data(1, Ecn::NotEct), &mut flows);
        // A discipline that forgot a packet: counted in, neither queued, sent nor dropped.
        q.counters[0].arrived_pkts += 1;
        let err = q.check_conservation("bottleneck").unwrap_err();
        assert_eq!(
            err,
            "queue 'bottleneck' lost track of packets: arrived 2 != departed 0 + dropped 0 + resident 1"
        );
    }
}
