//! DualQ Coupled scaffolding shared by `dualpi2` and `curvy_red`: two FIFOs
//! sharing one buffer, the ECN classifier, and the scheduler that protects
//! the Classic queue. The base AQM (what to drop or mark) lives in the
//! algorithm files; this file only stores and schedules.
//!
//! Normative references (read §2.3-2.4 first):
//! - RFC 9332, "Dual-Queue Coupled AQM for L4S", §2.3 (classification by
//!   ECN field), §2.4 (overall structure: L-queue priority with a
//!   starvation-protecting scheduler: WRR or time-shifted FIFO), §4.2.2
//!   (Classic starvation). <https://www.rfc-editor.org/rfc/rfc9332#section-2.4>
//! - RFC 9331 §4 (the L4S identifier: ECT(1), and CE).
//! - Linux `net/sched/sch_dualpi2.c` (`dequeue_packet`: credit-based WRR,
//!   credit reset when both queues are empty; `dualpi2_skb_classify`).

use super::fifo::{initial_capacity, PacketQueue};
use super::{DropReason, QdiscCtx, QueueLimit};
use crate::packet::{Ecn, Packet};
use serde::{Deserialize, Serialize};

/// The [`Qdisc`](super::Qdisc) methods that a dual-queue AQM answers from
/// its `dq: DualQueue` field and its [`DualQueueAqm::judge`]
/// (classification, enqueue, dequeue, pass-through, lengths and sub-queue
/// names), written once for `curvy_red`, `dualpi2` and `vdq_csaqm`. Used
/// inside their `impl Qdisc` blocks.
macro_rules! delegate_to_dual_queue {
    () => {
        fn classify(&self, pkt: &crate::packet::Packet) -> u8 {
            self.dq.classify(pkt)
        }
        fn enqueue(&mut self, pkt: crate::packet::Packet, ctx: &mut super::QdiscCtx) {
            self.dq.enqueue(pkt, ctx);
        }
        fn dequeue(&mut self, ctx: &mut super::QdiscCtx) -> Option<crate::packet::Packet> {
            super::dualq::dequeue(self, ctx)
        }
        fn pass_through(&mut self, pkt: crate::packet::Packet, ctx: &mut super::QdiscCtx) -> Option<crate::packet::Packet> {
            super::dualq::pass_through(self, pkt, ctx)
        }
        fn len_pkts(&self) -> usize {
            self.dq.len()
        }
        fn backlog_bytes(&self) -> u64 {
            self.dq.bytes()
        }
        fn subqueue_names(&self) -> &'static [&'static str] {
            super::dualq::SUBQUEUE_NAMES
        }
        fn subqueue_len_pkts(&self, sub: usize) -> usize {
            self.dq.subqueue_len(sub)
        }
    };
}
pub(crate) use delegate_to_dual_queue;

/// A base AQM over a [`DualQueue`] (DualPI2, Curvy RED, VDQ-CSAQM): what it
/// does with each packet the scheduler takes. [`dequeue`] and
/// [`pass_through`] are built on it.
pub trait DualQueueAqm {
    fn dual_queue(&mut self) -> &mut DualQueue;
    /// The verdict on `pkt`, just taken from its queue, which held
    /// `l_len_before` L packets before: true to send it (marked in place if
    /// the AQM marks it), false if the AQM dropped it (through `ctx`). In
    /// place, so that the packet is not moved through every verdict.
    fn judge(&mut self, pkt: &mut Packet, l_len_before: usize, ctx: &mut QdiscCtx) -> bool;
}

/// `dequeue` of a dual-queue AQM: take packets until the AQM lets one go,
/// which alone moves the WRR credit (Linux `dualpi2_qdisc_dequeue`).
#[inline]
pub fn dequeue<A: DualQueueAqm>(aqm: &mut A, ctx: &mut QdiscCtx) -> Option<Packet> {
    loop {
        let (mut pkt, l_len_before, credit) = aqm.dual_queue().pop(ctx.now_ns)?.into_parts();
        if aqm.judge(&mut pkt, l_len_before, ctx) {
            aqm.dual_queue().commit(credit);
            return Some(pkt);
        }
    }
}

/// [`Qdisc::pass_through`](super::Qdisc::pass_through) of a dual-queue AQM:
/// a packet that finds both queues empty never enters them
/// ([`DualQueue::pass_through`]) and is judged as [`dequeue`] judges a
/// lone packet (sojourn 0). If the AQM drops it, `dequeue`'s next pop would
/// find both queues empty and restart the WRR credit; so does this.
#[inline]
pub fn pass_through<A: DualQueueAqm>(aqm: &mut A, pkt: Packet, ctx: &mut QdiscCtx) -> Option<Packet> {
    let (mut pkt, l_len_before) = aqm.dual_queue().pass_through(pkt, ctx)?;
    if aqm.judge(&mut pkt, l_len_before, ctx) {
        return Some(pkt);
    }
    aqm.dual_queue().restart_credit();
    None
}

/// Sub-queue indices (order of [`SUBQUEUE_NAMES`]).
pub const L: u8 = 0;
pub const C: u8 = 1;
pub const SUBQUEUE_NAMES: &[&str] = &["l4s", "classic"];

/// Which ECN codepoints go to the L-queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum L4sEct {
    /// ECT(1) and CE (RFC 9331 §4, RFC 9332 §2.3; Linux `l4s_ect`).
    L4s,
    /// Any ECT codepoint, so ECT(0) DCTCP also lands in L (Linux `any_ect`).
    Any,
}

/// How the scheduler protects the Classic queue from L4S priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SchedulerKind {
    /// Linux credit-based weighted round robin (classic_protection = wc %).
    Wrr,
    /// RFC 9332 §2.4 time-shifted FIFO: serve L unless C's head is older
    /// than L's head by more than tshift.
    TsFifo,
}

#[derive(Debug, Clone)]
enum Sched {
    Wrr { credit: i64, init: i64, wc: i64, wl: i64 },
    TsFifo { tshift_ns: u64 },
}

/// A packet taken by the scheduler, with what the AQM needs to judge it.
pub struct Popped {
    pub pkt: Packet,
    /// L-queue length (packets) before this pop.
    pub l_len_before: usize,
    /// WRR credit change to apply only if the packet is sent (Linux).
    credit_change: i64,
}

#[derive(Debug, Clone)]
pub struct DualQueue {
    pub l: PacketQueue,
    pub c: PacketQueue,
    limit: QueueLimit,
    l4s_ect: L4sEct,
    sched: Sched,
    pub mtu: u64,
}

impl DualQueue {
    /// `wc_percent`: Classic weight of the WRR (ignored for TS-FIFO).
    pub fn new(
        limit: QueueLimit,
        mtu: u32,
        l4s_ect: L4sEct,
        kind: SchedulerKind,
        wc_percent: u8,
        tshift_ns: u64,
    ) -> Result<Self, String> {
        if wc_percent > 100 {
            return Err("classic_protection: must be a percentage in 0..=100".into());
        }
        let sched = match kind {
            SchedulerKind::Wrr => {
                let (wc, wl) = (wc_percent as i64, 100 - wc_percent as i64);
                // Linux dualpi2_calculate_c_protection: init = MTU*(wc - wl) (< 0 favours L).
                let init = mtu as i64 * (wc - wl);
                Sched::Wrr { credit: init, init, wc, wl }
            }
            SchedulerKind::TsFifo => Sched::TsFifo { tshift_ns },
        };
        let cap = initial_capacity(&limit);
        Ok(DualQueue {
            l: PacketQueue::with_capacity(cap),
            c: PacketQueue::with_capacity(cap),
            limit,
            l4s_ect,
            sched,
            mtu: mtu as u64,
        })
    }

    /// RFC 9332 §2.3: the ECN field selects the queue (ECT(1)/CE -> L).
    pub fn classify(&self, pkt: &Packet) -> u8 {
        let to_l = match self.l4s_ect {
            L4sEct::L4s => pkt.ecn.is_l4s_id(),
            L4sEct::Any => pkt.ecn != Ecn::NotEct,
        };
        if to_l {
            L
        } else {
            C
        }
    }

    /// RFC 9332 §2.4: one buffer limit shared by both queues; tail drop beyond it.
    pub fn enqueue(&mut self, pkt: Packet, ctx: &mut QdiscCtx) {
        if self.limit.would_overflow(self.len(), self.bytes(), pkt.size_bytes) {
            ctx.drop(pkt, DropReason::Overflow);
        } else if pkt.subq == L {
            self.l.push(pkt);
        } else {
            self.c.push(pkt);
        }
    }

    /// Pick the next packet (L priority with Classic protection). Returns None
    /// when both queues are empty, which also resets the WRR credit (Linux).
    pub fn pop(&mut self, now: u64) -> Option<Popped> {
        let (ln, cn) = (self.l.len(), self.c.len());
        if ln == 0 && cn == 0 {
            self.restart_credit();
            return None;
        }
        let serve_l = match &self.sched {
            Sched::Wrr { credit, .. } => ln > 0 && (cn == 0 || *credit <= 0),
            Sched::TsFifo { tshift_ns } => {
                ln > 0 && (cn == 0 || self.l.head_sojourn_ns(now) + *tshift_ns > self.c.head_sojourn_ns(now))
            }
        };
        let pkt = if serve_l { self.l.pop() } else { self.c.pop() }.expect("chosen queue is non-empty");
        // Linux dequeue_packet: the credit moves only while both queues are backlogged.
        let credit_change = match self.sched {
            Sched::Wrr { wc, wl, .. } => {
                let len = pkt.size_bytes as i64;
                match serve_l {
                    true if cn > 0 => wc * len,
                    false if ln > 0 => -wl * len,
                    _ => 0,
                }
            }
            Sched::TsFifo { .. } => 0,
        };
        Some(Popped { pkt, l_len_before: ln, credit_change })
    }

    /// Both queues were found empty: the WRR credit starts again (Linux
    /// `dequeue_packet`).
    pub fn restart_credit(&mut self) {
        if let Sched::Wrr { credit, init, .. } = &mut self.sched {
            *credit = *init;
        }
    }

    /// `enqueue` then `pop` of a packet that finds both queues empty
    /// ([`Qdisc::pass_through`](super::Qdisc::pass_through)), without
    /// storing it. None if alone it overflows the buffer: dropped, and the
    /// pop that would follow finds both queues empty. Otherwise the packet
    /// and the L-queue length `pop` would report before it (1 if it is an
    /// L packet, else 0); the credit does not move, the other queue being
    /// empty.
    #[inline]
    pub fn pass_through(&mut self, pkt: Packet, ctx: &mut QdiscCtx) -> Option<(Packet, usize)> {
        debug_assert!(self.is_empty());
        if self.limit.would_overflow(0, 0, pkt.size_bytes) {
            ctx.drop(pkt, DropReason::Overflow);
            self.restart_credit();
            return None;
        }
        let l_len_before = usize::from(pkt.subq == L);
        Some((pkt, l_len_before))
    }

    /// The WRR credit (None for TS-FIFO), for tests that compare states.
    #[cfg(test)]
    pub fn credit(&self) -> Option<i64> {
        match self.sched {
            Sched::Wrr { credit, .. } => Some(credit),
            Sched::TsFifo { .. } => None,
        }
    }

    /// The popped packet is being sent: apply its WRR credit change (packets
    /// dropped by the AQM after the pop do not count, as in Linux).
    pub fn commit(&mut self, popped_credit: i64) {
        if let Sched::Wrr { credit, .. } = &mut self.sched {
            *credit += popped_credit;
        }
    }

    pub fn len(&self) -> usize {
        self.l.len() + self.c.len()
    }
    pub fn is_empty(&self) -> bool {
        self.l.is_empty() && self.c.is_empty()
    }
    pub fn bytes(&self) -> u64 {
        self.l.bytes() + self.c.bytes()
    }
    pub fn subqueue_len(&self, sub: usize) -> usize {
        match sub as u8 {
            L => self.l.len(),
            C => self.c.len(),
            _ => 0,
        }
    }
}

impl Popped {
    /// Split into the packet, the L-queue length before the pop, and the credit change.
    pub fn into_parts(self) -> (Packet, usize, i64) {
        (self.pkt, self.l_len_before, self.credit_change)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aqm::testing::data;
    use crate::aqm::{FlowQueueCounters, SubqueueCounters, MAX_SUBQUEUES};
    use crate::sim::rng::{Domain, SimRng};

    fn dq(kind: SchedulerKind) -> DualQueue {
        DualQueue::new(QueueLimit { pkts: Some(1000), bytes: None }, 1500, L4sEct::L4s, kind, 10, 50_000_000).unwrap()
    }

    fn push(q: &mut DualQueue, ecn: Ecn, at: u64) {
        let mut rng = SimRng::derive(1, Domain::Queue, 0);
        let mut counters: [SubqueueCounters; MAX_SUBQUEUES] = Default::default();
        let mut flows = vec![FlowQueueCounters::default(); 4];
        let mut ctx = QdiscCtx::new(at, &mut rng, &mut counters, &mut flows);
        let mut p = data(1, ecn);
        p.subq = q.classify(&p);
        p.enq_ns = at;
        q.enqueue(p, &mut ctx);
    }

    #[test]
    fn classifier_sends_ect1_and_ce_to_l_and_ect0_by_option() {
        let q = dq(SchedulerKind::Wrr);
        let c = |ecn| q.classify(&data(1, ecn));
        assert_eq!([c(Ecn::Ect1), c(Ecn::Ce), c(Ecn::Ect0), c(Ecn::NotEct)], [L, L, C, C]);
        let q = DualQueue::new(QueueLimit { pkts: Some(1), bytes: None }, 1500, L4sEct::Any, SchedulerKind::Wrr, 10, 0)
            .unwrap();
        assert_eq!(q.classify(&data(1, Ecn::Ect0)), L);
    }

    #[test]
    fn wrr_with_both_backlogged_gives_classic_one_packet_in_ten() {
        let mut q = dq(SchedulerKind::Wrr);
        for _ in 0..200 {
            push(&mut q, Ecn::Ect1, 0);
            push(&mut q, Ecn::NotEct, 0);
        }
        let mut order = vec![];
        for _ in 0..40 {
            let p = q.pop(0).unwrap();
            order.push(p.pkt.subq);
            q.commit(p.credit_change);
        }
        // Credit starts at 1500*(10-90): 8 L packets bring it to 0, the 9th
        // makes it positive, then C; thereafter 9 L : 1 C.
        let c_at: Vec<usize> = order.iter().enumerate().filter(|(_, s)| **s == C).map(|(i, _)| i).collect();
        assert_eq!(c_at, vec![9, 19, 29, 39]);
    }

    #[test]
    fn ts_fifo_serves_classic_once_its_head_is_older_by_tshift() {
        let mut q = dq(SchedulerKind::TsFifo);
        push(&mut q, Ecn::NotEct, 0);
        push(&mut q, Ecn::Ect1, 40_000_000);
        // At 60 ms: L sojourn 20 ms + 50 > C sojourn 60 ms -> L.
        assert_eq!(q.pop(60_000_000).unwrap().pkt.subq, L);
        push(&mut q, Ecn::Ect1, 100_000_000);
        // At 160 ms: L 60 + 50 = 110 < C 160 -> C.
        assert_eq!(q.pop(160_000_000).unwrap().pkt.subq, C);
    }
}
