//! Instantaneous step ECN marking, as a DCTCP switch does.
//!
//! Reference: Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM 2010, §3.1
//! ("mark the CE codepoint if the queue occupancy is greater than K upon
//! arrival"), and RFC 8257 §3.1 (the switch side: no averaging, a single
//! threshold). The paper's guidance is K > C·RTT/7 (20 packets at 1 Gbit/s,
//! 65 at 10 Gbit/s). A time threshold marks on *sojourn* at dequeue instead,
//! as the native L4S step of Linux DualPI2 does.

use super::fifo::{initial_capacity, PacketQueue};
use super::{DecidesOnArrival, DropReason, MarkReason, Qdisc, QdiscCtx, QdiscEnv, QueueLimit};
use crate::packet::Packet;
use crate::sim::units::{serde_buffer, BufferSpec};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct StepConfig {
    /// Marking threshold K: packets or bytes (checked on arrival against the
    /// queue the packet finds) or time (checked on the packet's sojourn at dequeue).
    #[serde(with = "serde_buffer")]
    pub threshold: BufferSpec,
    /// Drop (instead of passing unmarked) Not-ECT packets that cross the
    /// threshold, as a RED-with-ECN switch configured for DCTCP does.
    pub drop_non_ect: bool,
}

impl Default for StepConfig {
    fn default() -> Self {
        StepConfig {
            // DCTCP paper §3.4: K = 65 packets at 10 Gbit/s.
            threshold: BufferSpec::Packets(65),
            drop_non_ect: false,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Step {
    q: PacketQueue,
    limit: QueueLimit,
    cfg: StepConfig,
}

impl Step {
    /// Free the packet ring (departure lookahead: see `AnyQdisc::release_packet_storage`).
    pub fn release_packet_storage(&mut self) {
        debug_assert!(self.q.is_empty());
        self.q = PacketQueue::default();
    }

    pub fn new(cfg: StepConfig, env: &QdiscEnv) -> Result<Self, String> {
        // A zero threshold, in any unit, would mark every packet: refused
        // alike (a time of 0 was once accepted while 0 packets was not).
        if matches!(cfg.threshold, BufferSpec::Packets(0) | BufferSpec::Bytes(0) | BufferSpec::Time(0)) {
            return Err("threshold: must be positive".into());
        }
        Ok(Step { q: PacketQueue::with_capacity(initial_capacity(&env.limit)), limit: env.limit, cfg })
    }

    /// Apply the step to `pkt`; false if it was dropped (a Not-ECT packet
    /// under `drop_non_ect`).
    #[inline]
    fn signal(&self, pkt: &mut Packet, ctx: &mut QdiscCtx) -> bool {
        if self.cfg.drop_non_ect {
            ctx.mark_or_drop(pkt, MarkReason::Step, DropReason::Aqm)
        } else {
            ctx.mark(pkt, MarkReason::Step);
            true
        }
    }

    /// A packet or byte threshold is checked on arrival only; a time
    /// threshold needs the sojourn at dequeue.
    pub fn decides_on_arrival(&self) -> bool {
        !matches!(self.cfg.threshold, BufferSpec::Time(_))
    }
}

impl DecidesOnArrival for Step {
    #[inline]
    fn admit(&mut self, pkt: &mut Packet, backlog_pkts: usize, backlog_bytes: u64, ctx: &mut QdiscCtx) -> bool {
        if self.limit.would_overflow(backlog_pkts, backlog_bytes, pkt.size_bytes) {
            ctx.drop(*pkt, DropReason::Overflow);
            return false;
        }
        let above = match self.cfg.threshold {
            BufferSpec::Packets(k) => backlog_pkts as u64 >= k,
            BufferSpec::Bytes(k) => backlog_bytes >= k,
            BufferSpec::Time(_) => false,
        };
        !above || self.signal(pkt, ctx)
    }
}

impl Qdisc for Step {
    #[inline]
    fn enqueue(&mut self, mut pkt: Packet, ctx: &mut QdiscCtx) {
        if self.admit(&mut pkt, self.q.len(), self.q.bytes(), ctx) {
            self.q.push(pkt);
        }
    }

    #[inline]
    fn dequeue(&mut self, ctx: &mut QdiscCtx) -> Option<Packet> {
        loop {
            let mut pkt = self.q.pop()?;
            if let BufferSpec::Time(k_ns) = self.cfg.threshold {
                if ctx.now_ns.saturating_sub(pkt.enq_ns) > k_ns && !self.signal(&mut pkt, ctx) {
                    continue;
                }
            }
            return Some(pkt);
        }
    }
    fn len_pkts(&self) -> usize {
        self.q.len()
    }
    fn backlog_bytes(&self) -> u64 {
        self.q.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aqm::testing::{data, env, Harness};
    use crate::packet::Ecn;

    #[test]
    fn marks_exactly_the_arrivals_that_find_k_or_more_packets() {
        let cfg = StepConfig { threshold: BufferSpec::Packets(3), drop_non_ect: false };
        let mut h = Harness::new(Step::new(cfg, &env(1_000_000_000, 100)).unwrap());
        for _ in 0..6 {
            h.enqueue(0, data(0, Ecn::Ect0));
        }
        let ecn: Vec<Ecn> = std::iter::from_fn(|| h.dequeue(1)).map(|p| p.ecn).collect();
        assert_eq!(ecn, vec![Ecn::Ect0, Ecn::Ect0, Ecn::Ect0, Ecn::Ce, Ecn::Ce, Ecn::Ce]);
        assert_eq!(h.marks(), 3);
        assert_eq!(h.drops(), 0);
    }

    #[test]
    fn time_threshold_marks_on_sojourn_and_can_drop_not_ect() {
        let cfg = StepConfig { threshold: BufferSpec::Time(1_000_000), drop_non_ect: true };
        let mut h = Harness::new(Step::new(cfg, &env(1_000_000_000, 100)).unwrap());
        h.enqueue(0, data(0, Ecn::Ect1));
        h.enqueue(0, data(1, Ecn::NotEct));
        h.enqueue(2_000_000, data(2, Ecn::Ect1));
        assert_eq!(h.dequeue(1_500_000).unwrap().ecn, Ecn::Ce); // sojourn 1.5 ms > 1 ms
        // The Not-ECT packet is dropped; the next one (sojourn 0.5 ms) passes unmarked.
        let p = h.dequeue(2_500_000).unwrap();
        assert_eq!((p.flow, p.ecn), (2, Ecn::Ect1));
        assert_eq!(h.drops(), 1);
        h.assert_conservation();
    }
}
