//! FQ-CoDel: flow queueing (DRR with a new-flow list) with CoDel per flow.
//!
//! Normative references (read §4 first):
//! - RFC 8290, "The Flow Queue CoDel Packet Scheduler and Active Queue
//!   Management Algorithm", §4 (enqueue, dequeue, the new/old lists, and the
//!   parameters with their defaults). <https://www.rfc-editor.org/rfc/rfc8290#section-4>
//! - Linux `net/sched/sch_fq_codel.c` (`fq_codel_enqueue`, `fq_codel_drop`,
//!   `fq_codel_dequeue`): overflow drops from the fattest flow's head, in
//!   batches of up to half its backlog or 64 packets.
//! - CoDel itself: [`super::codel`] (RFC 8289).
//!
//! Flow classification: `packet.flow_hash() % flows`. The simulator's flow id
//! stands in for the perturbed 5-tuple hash of Linux (`skb_get_hash` with a
//! random seed); distinct flows can collide exactly as hashed 5-tuples do.
//!
//! DEVIATION (Linux sch_fq_codel.c): memory is counted as packet bytes on the
//! wire, not `skb->truesize`.

use super::codel::{codel_config, codel_dequeue, pass_through_vars, CodelConfig, CodelParams, CodelQueue, CodelVars};
use super::fifo::PacketQueue;
use super::{DropReason, Qdisc, QdiscCtx, QdiscEnv};
use crate::packet::Packet;
use crate::sim::units::serde_size;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

codel_config! {
    /// FQ-CoDel's own parameters, then CoDel's (target, interval, ecn,
    /// ce_threshold: [`codel_config`]), which run per flow.
    #[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
    #[serde(default, deny_unknown_fields)]
    pub struct FqCodelConfig {
        /// Number of hash buckets (flow queues).
        pub flows: u32,
        /// DRR quantum: bytes a flow may send per round.
        #[serde(rename = "quantum", with = "serde_size")]
        pub quantum_bytes: u64,
        /// Byte ceiling on everything queued (in addition to the scenario's buffer).
        #[serde(rename = "memory_limit", with = "serde_size")]
        pub memory_limit_bytes: u64,
        /// Most packets one overflow event drops from the fattest flow.
        pub drop_batch_size: u32,
    }
}

impl Default for FqCodelConfig {
    fn default() -> Self {
        FqCodelConfig {
            // 1024 buckets; RFC 8290 §4 and Linux fq_codel_init.
            flows: 1024,
            // 1514 B = psched_mtu on Ethernet (1500 + 14 header); RFC 8290 §4, Linux.
            quantum_bytes: 1514,
            // 32 MiB; Linux fq_codel_init ("memory_limit = 32 << 20").
            memory_limit_bytes: 32 << 20,
            // 64 packets; Linux fq_codel_init (bounds the cost of one overflow).
            drop_batch_size: 64,
            // CoDel's own defaults (5 ms / 100 ms), as RFC 8290 §4 specifies;
            // taken from CodelConfig so the two cannot drift apart.
            target_ns: CodelConfig::default().target_ns,
            interval_ns: CodelConfig::default().interval_ns,
            // on; RFC 8290 §4 and Linux fq_codel_init (unlike sch_codel).
            ecn: true,
            // disabled; Linux default.
            ce_threshold_ns: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    None,
    New,
    Old,
}

#[derive(Debug, Clone)]
struct Flow {
    q: PacketQueue,
    vars: CodelVars,
    /// DRR deficit in bytes (may go negative).
    deficit: i64,
    list: List,
}

/// One flow's queue seen by CoDel: pops keep the qdisc totals in step, and
/// the MTU check uses the total backlog (RFC 8290 §4 leaves this open;
/// Linux passes `sch->qstats.backlog`).
struct FlowView<'a> {
    q: &'a mut PacketQueue,
    total_bytes: &'a mut u64,
    total_pkts: &'a mut usize,
}

impl CodelQueue for FlowView<'_> {
    fn pop(&mut self) -> Option<Packet> {
        let p = self.q.pop()?;
        *self.total_bytes -= p.size_bytes as u64;
        *self.total_pkts -= 1;
        Some(p)
    }
    fn backlog_bytes(&self) -> u64 {
        *self.total_bytes
    }
}

#[derive(Debug, Clone)]
pub struct FqCodel {
    flows: Vec<Flow>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    codel: CodelParams,
    quantum: i64,
    drop_batch: u32,
    limit_pkts: u64,
    limit_bytes: u64,
    total_bytes: u64,
    total_pkts: usize,
}

impl FqCodel {
    pub fn new(cfg: FqCodelConfig, env: &QdiscEnv) -> Result<Self, String> {
        if cfg.flows == 0 || cfg.flows > 65_536 {
            return Err("flows: must be between 1 and 65536".into());
        }
        if cfg.quantum_bytes == 0 {
            return Err("quantum: must be positive".into());
        }
        if cfg.drop_batch_size == 0 {
            return Err("drop_batch_size: must be positive".into());
        }
        if cfg.memory_limit_bytes == 0 {
            return Err("memory_limit: must be positive".into());
        }
        let codel = cfg.codel_params(env.mtu_bytes)?;
        let flow = Flow { q: PacketQueue::default(), vars: CodelVars::default(), deficit: 0, list: List::None };
        Ok(FqCodel {
            flows: vec![flow; cfg.flows as usize],
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            codel,
            quantum: cfg.quantum_bytes as i64,
            drop_batch: cfg.drop_batch_size,
            limit_pkts: env.limit.pkts.unwrap_or(u64::MAX),
            limit_bytes: env.limit.bytes.unwrap_or(u64::MAX).min(cfg.memory_limit_bytes),
            total_bytes: 0,
            total_pkts: 0,
        })
    }

    fn bucket(&self, pkt: &Packet) -> usize {
        (pkt.flow_hash() % self.flows.len() as u32) as usize
    }

    /// Whether a qdisc holding `pkts` packets of `bytes` in all is over its
    /// packet or memory limit (checked after each enqueue, Linux
    /// `fq_codel_enqueue`; and by `pass_through` for a packet alone).
    #[inline]
    fn over_limit(&self, pkts: u64, bytes: u64) -> bool {
        pkts > self.limit_pkts || bytes > self.limit_bytes
    }

    /// Linux `fq_codel_drop`: find the flow with the largest byte backlog
    /// (first one on ties) and drop from its head until half of that backlog
    /// is gone or `drop_batch` packets were dropped.
    fn drop_from_fattest(&mut self, ctx: &mut QdiscCtx) {
        let mut fat = 0;
        for (i, f) in self.flows.iter().enumerate() {
            if f.q.bytes() > self.flows[fat].q.bytes() {
                fat = i;
            }
        }
        let threshold = self.flows[fat].q.bytes() / 2;
        let (mut i, mut len) = (0u32, 0u64);
        let f = &mut self.flows[fat];
        while let Some(p) = f.q.pop() {
            len += p.size_bytes as u64;
            self.total_bytes -= p.size_bytes as u64;
            self.total_pkts -= 1;
            ctx.drop(p, DropReason::Overflow);
            i += 1;
            if i >= self.drop_batch || len >= threshold {
                break;
            }
        }
        // Linux: "tell codel to increase its signal strength also".
        f.vars.count += i;
    }
}

/// Remove the head of the list a flow was taken from.
fn pop_list(new_flows: &mut VecDeque<u32>, old_flows: &mut VecDeque<u32>, from_new: bool) {
    if from_new {
        new_flows.pop_front();
    } else {
        old_flows.pop_front();
    }
}

impl Qdisc for FqCodel {
    fn enqueue(&mut self, pkt: Packet, ctx: &mut QdiscCtx) {
        let idx = self.bucket(&pkt);
        self.total_bytes += pkt.size_bytes as u64;
        self.total_pkts += 1;
        let f = &mut self.flows[idx];
        f.q.push(pkt);
        // RFC 8290 §4: a flow on neither list joins the new list with a full quantum.
        if f.list == List::None {
            f.list = List::New;
            f.deficit = self.quantum;
            self.new_flows.push_back(idx as u32);
        }
        if self.over_limit(self.total_pkts as u64, self.total_bytes) {
            self.drop_from_fattest(ctx);
        }
    }

    fn dequeue(&mut self, ctx: &mut QdiscCtx) -> Option<Packet> {
        loop {
            // RFC 8290 §4: new flows first, then old flows.
            let from_new = !self.new_flows.is_empty();
            let head = if from_new { self.new_flows.front() } else { self.old_flows.front() };
            let idx = *head? as usize;
            let flow = &mut self.flows[idx];
            if flow.deficit <= 0 {
                // RFC 8290 §4: out of credit: refill and go to the back of the old list.
                flow.deficit += self.quantum;
                pop_list(&mut self.new_flows, &mut self.old_flows, from_new);
                flow.list = List::Old;
                self.old_flows.push_back(idx as u32);
                continue;
            }
            let mut view =
                FlowView { q: &mut flow.q, total_bytes: &mut self.total_bytes, total_pkts: &mut self.total_pkts };
            match codel_dequeue(&self.codel, &mut flow.vars, &mut view, ctx) {
                Some(p) => {
                    flow.deficit -= p.size_bytes as i64;
                    return Some(p);
                }
                None => {
                    pop_list(&mut self.new_flows, &mut self.old_flows, from_new);
                    // RFC 8290 §4: an emptied new flow goes to the old list
                    // (if any old flow waits) so new flows cannot starve old ones.
                    if from_new && !self.old_flows.is_empty() {
                        flow.list = List::Old;
                        self.old_flows.push_back(idx as u32);
                    } else {
                        flow.list = List::None;
                    }
                }
            }
        }
    }

    /// RFC 8290 §4 on an empty qdisc whose lists are empty too (the dequeue
    /// that found it empty took every flow off them, as the engine's does
    /// at the end of each transmission): the packet's flow joins the new
    /// list with a full quantum and is served at once, spending its size,
    /// and its CoDel sees a sojourn of 0 ([`pass_through_vars`]); the
    /// flow's ring is never touched. With a flow still listed, or a packet
    /// that alone overflows the limit, enqueue then dequeue.
    fn pass_through(&mut self, pkt: Packet, ctx: &mut QdiscCtx) -> Option<Packet> {
        debug_assert!(self.total_pkts == 0 && pkt.enq_ns == ctx.now_ns);
        if self.over_limit(1, pkt.size_bytes as u64) || !self.new_flows.is_empty() || !self.old_flows.is_empty() {
            self.enqueue(pkt, ctx);
            return self.dequeue(ctx);
        }
        let idx = self.bucket(&pkt);
        let flow = &mut self.flows[idx];
        flow.list = List::New;
        flow.deficit = self.quantum - pkt.size_bytes as i64;
        self.new_flows.push_back(idx as u32);
        pass_through_vars(&mut flow.vars);
        Some(pkt)
    }

    fn len_pkts(&self) -> usize {
        self.total_pkts
    }
    fn backlog_bytes(&self) -> u64 {
        self.total_bytes
    }
    fn probe_names(&self) -> &'static [&'static str] {
        &["new_flows", "old_flows"]
    }
    fn probe(&self, out: &mut [f64]) {
        out[0] = self.new_flows.len() as f64;
        out[1] = self.old_flows.len() as f64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aqm::testing::{compare_pass_through, env, random_trace, Harness};
    use crate::packet::{Ecn, PacketKind};

    fn fq(limit_pkts: u64) -> Harness<FqCodel> {
        Harness::new(FqCodel::new(FqCodelConfig::default(), &env(10_000_000, limit_pkts)).unwrap())
    }

    fn pkt(flow: u32, seq: u64, size: u32) -> Packet {
        let mut p = Packet::new(PacketKind::Data, flow, size);
        p.seq = seq;
        p.ecn = Ecn::Ect0;
        p
    }

    #[test]
    fn distinct_test_flows_land_in_distinct_buckets() {
        let h = fq(10);
        let b: Vec<usize> = (1..=3).map(|f| h.q.bucket(&pkt(f, 0, 100))).collect();
        assert!(b[0] != b[1] && b[1] != b[2] && b[0] != b[2], "{b:?}");
    }

    #[test]
    fn backlogged_bulk_flow_sparse_arrival_is_dequeued_next() {
        let mut h = fq(1000);
        for s in 0..100 {
            h.enqueue(0, pkt(1, s, 1500));
        }
        for _ in 0..5 {
            assert_eq!(h.dequeue(0).unwrap().flow, 1);
        }
        // The bulk flow has used its quantum and sits on the old list; a new
        // flow's packet goes to the new list and is served first.
        h.enqueue(1, pkt(2, 0, 100));
        assert_eq!(h.dequeue(2).unwrap().flow, 2);
        assert_eq!(h.dequeue(3).unwrap().flow, 1);
        h.assert_conservation();
    }

    #[test]
    fn emptied_new_flow_moves_to_old_list_while_old_flows_wait() {
        let mut h = fq(1000);
        for s in 0..10 {
            h.enqueue(0, pkt(1, s, 1500));
        }
        h.dequeue(0);
        h.dequeue(0); // flow 1 has spent its quantum (deficit < 0)
        h.enqueue(0, pkt(2, 0, 100));
        assert_eq!(h.dequeue(0).unwrap().flow, 2);
        // Flow 2 is empty; the next dequeue finds it empty on the new list and
        // must park it behind flow 1 on the old list, not drop it from the lists.
        assert_eq!(h.dequeue(0).unwrap().flow, 1);
        let b2 = h.q.bucket(&pkt(2, 0, 100));
        assert_eq!(h.q.flows[b2].list, List::Old);
    }

    #[test]
    fn overflow_drops_from_fattest_flow_head_not_the_sparse_arrival() {
        let mut h = fq(20);
        for s in 0..20 {
            h.enqueue(0, pkt(1, s, 1500));
        }
        h.enqueue(1, pkt(2, 0, 1500)); // 21 > 20: overflow
                                       // Flow 1 (30 000 B) loses half its backlog from the head: seqs 0..9.
        assert_eq!(h.flows[1].drops, 10);
        assert_eq!(h.flows[2].drops, 0);
        assert_eq!(h.q.len_pkts(), 11);
        let mut seqs = vec![];
        while let Some(p) = h.dequeue(2) {
            if p.flow == 1 {
                seqs.push(p.seq);
            }
        }
        assert_eq!(seqs, (10..20).collect::<Vec<_>>());
        h.assert_conservation();
    }

    #[test]
    fn overflow_batch_is_capped_at_drop_batch_size() {
        let cfg = FqCodelConfig { drop_batch_size: 4, ..FqCodelConfig::default() };
        let mut h = Harness::new(FqCodel::new(cfg, &env(10_000_000, 20)).unwrap());
        for s in 0..21 {
            h.enqueue(0, pkt(1, s, 1500));
        }
        assert_eq!(h.drops(), 4);
        let b1 = h.q.bucket(&pkt(1, 0, 1500));
        assert_eq!(h.q.flows[b1].vars.count, 4, "codel count raised by the batch");
    }

    #[test]
    fn drr_shares_bytes_equally_between_backlogged_flows_of_different_sizes() {
        let mut h = fq(100_000);
        for s in 0..3000 {
            h.enqueue(0, pkt(1, s, 1500));
            h.enqueue(0, pkt(2, s, 500));
        }
        let mut bytes = [0u64; 3];
        for _ in 0..4000 {
            let p = h.dequeue(0).unwrap();
            bytes[p.flow as usize] += p.size_bytes as u64;
        }
        // Byte (not packet) fairness: equal to within one quantum plus one packet.
        let diff = bytes[1].abs_diff(bytes[2]);
        assert!(diff <= 1514 + 1500, "bytes {bytes:?}");
        assert!(bytes[1] > 1_000_000, "both flows served: {bytes:?}");
    }

    #[test]
    fn codel_mtu_check_uses_total_backlog_not_the_flow_backlog() {
        let cfg = FqCodelConfig { ecn: false, ..FqCodelConfig::default() };
        let mut h = Harness::new(FqCodel::new(cfg, &env(10_000_000, 1000)).unwrap());
        h.enqueue(0, pkt(1, 0, 1500));
        for s in 0..10 {
            h.enqueue(0, pkt(2, s, 1500));
        }
        // Flow 1 has been above target for an interval already.
        let b1 = h.q.bucket(&pkt(1, 0, 1500));
        h.q.flows[b1].vars.first_above_ns = 1;
        // Its only packet (flow backlog 0 after the pop, qdisc backlog 15 kB) is dropped.
        let p = h.dequeue(200_000_000).unwrap();
        assert_eq!(p.flow, 2);
        assert_eq!((h.flows[1].drops, h.flows[2].drops), (1, 0));
        h.assert_conservation();
    }

    #[test]
    fn random_trace_conserves_packets() {
        let mut h = fq(50);
        random_trace(&mut h, 20_000);
        h.assert_conservation();
    }

    /// What FQ-CoDel keeps besides its packets: the lists, each flow's
    /// list, deficit, CoDel variables and backlog, the totals.
    fn state(q: &FqCodel) -> String {
        let flows: Vec<_> = q.flows.iter().map(|f| (f.list, f.deficit, &f.vars, f.q.len(), f.q.bytes())).collect();
        format!("{:?} {:?} {} {} {:?}", q.new_flows, q.old_flows, q.total_pkts, q.total_bytes, flows)
    }

    /// The engine's early hand-off relies on `pass_through` leaving FQ-CoDel
    /// exactly as `enqueue` then `dequeue` would (`compare_pass_through`,
    /// four flows in 16 buckets), with ECN on and off and a byte limit
    /// below a packet; then, by hand, both of its paths: an arrival after
    /// the last packet left but before a dequeue found the qdisc empty
    /// (that flow still on the new list: enqueue then dequeue), and one
    /// after (the lists empty: the shortcut).
    #[test]
    fn pass_through_equals_enqueue_then_dequeue() {
        for (ecn, limit) in [(true, 40), (false, 40), (true, 0)] {
            // 16 buckets for the trace's four flows: collisions too, and a
            // state cheap to compare after every step.
            let cfg = FqCodelConfig { ecn, flows: 16, ..FqCodelConfig::default() };
            let mut e = env(10_000_000, limit);
            if limit == 0 {
                e.limit = crate::aqm::QueueLimit { pkts: None, bytes: Some(1000) };
            }
            let mut a = Harness::new(FqCodel::new(cfg.clone(), &e).unwrap());
            let mut b = Harness::new(FqCodel::new(cfg, &e).unwrap());
            let (passed, changed) = compare_pass_through(&mut a, &mut b, state);
            assert!(passed > 1000, "{passed} arrivals at an empty qdisc");
            if limit > 0 {
                assert!(changed > 1000, "{changed} arrivals at an empty qdisc changed its state");
                assert!(a.drops() + a.marks() > 100, "{} signals", a.drops() + a.marks());
            }
            let now = 100_000_000_000;
            for still_listed in [true, false] {
                a.enqueue(now, pkt(3, 0, 1500));
                b.enqueue(now, pkt(3, 0, 1500));
                assert_eq!(a.dequeue(now), b.dequeue(now));
                if !still_listed {
                    assert_eq!((a.dequeue(now), b.dequeue(now)), (None, None));
                }
                assert_eq!(a.q.new_flows.is_empty(), !still_listed || limit == 0);
                let got = a.pass(now, pkt(1, 1, 700));
                b.enqueue(now, pkt(1, 1, 700));
                assert_eq!(got, b.dequeue(now));
                assert_eq!(state(&a.q), state(&b.q));
                assert_eq!((a.dequeue(now), b.dequeue(now)), (None, None));
            }
            a.assert_conservation();
        }
    }
}
