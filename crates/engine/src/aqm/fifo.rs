//! Tail-drop FIFO, and [`PacketQueue`], the byte-counting ring buffer every
//! discipline stores its packets in.

use super::{DecidesOnArrival, DropReason, Qdisc, QdiscCtx, QdiscEnv, QueueLimit};
use crate::packet::Packet;
use crate::sim::ring::Ring;
use serde::{Deserialize, Serialize};

/// A FIFO of packets that tracks its byte backlog.
#[derive(Debug, Clone, Default)]
pub struct PacketQueue {
    q: Ring<Packet>,
    bytes: u64,
    /// Capacity to reserve at the first push (see `with_capacity`).
    reserve: usize,
}

impl PacketQueue {
    /// A queue that reserves room for `pkts` packets (rounded up to a power
    /// of two, `sim::ring`) at its first push and grows only by doubling, to
    /// its largest backlog, so it does not reallocate in steady state,
    /// while a queue that never holds a packet (departure
    /// lookahead keeps its own records) costs nothing: a fat tree has
    /// thousands, and 256 packets are 16 KB each.
    pub fn with_capacity(pkts: usize) -> Self {
        PacketQueue { q: Ring::new(), bytes: 0, reserve: pkts }
    }
    #[inline]
    pub fn push(&mut self, pkt: Packet) {
        self.bytes += pkt.size_bytes as u64;
        if self.q.capacity() == 0 {
            self.q.reserve(self.reserve, pkt);
        }
        self.q.push_back(pkt);
    }
    #[inline]
    pub fn pop(&mut self) -> Option<Packet> {
        let p = self.q.pop_front()?;
        self.bytes -= p.size_bytes as u64;
        Some(p)
    }
    #[inline]
    pub fn head(&self) -> Option<&Packet> {
        self.q.front()
    }
    #[inline]
    pub fn len(&self) -> usize {
        self.q.len()
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    /// Sojourn time of the head packet at `now_ns` (0 when empty).
    #[inline]
    pub fn head_sojourn_ns(&self, now_ns: u64) -> u64 {
        self.q.front().map_or(0, |p| now_ns.saturating_sub(p.enq_ns))
    }
}

/// The most packets a queue reserves room for at its first packet (16 KB):
/// our choice. It covers the benchmarks' buffers (250 packets) without a
/// reallocation; a larger buffer's ring grows by doubling to the largest
/// backlog it holds, a few times per run at most. At 16 384 (up to stop
/// 56) every queue with a large buffer filled 1 MB at its first packet,
/// backlog or not: 10 000 per-flow access queues of 100 ms without
/// departure lookahead took 11.8 GB (docs/performance.md, "Per-flow
/// access links").
const INITIAL_CAPACITY_MAX_PKTS: u64 = 256;

/// Initial ring capacity: the buffer in packets (in bytes, counted as
/// 64-byte packets, the smallest), at most [`INITIAL_CAPACITY_MAX_PKTS`].
pub(crate) fn initial_capacity(limit: &QueueLimit) -> usize {
    let by_pkts = limit.pkts.unwrap_or(u64::MAX);
    let by_bytes = limit.bytes.map_or(u64::MAX, |b| b / 64);
    by_pkts.min(by_bytes).min(INITIAL_CAPACITY_MAX_PKTS) as usize
}

/// FIFO has no parameters of its own; the buffer limit comes from the scenario.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct FifoConfig {}

#[derive(Debug, Clone)]
pub struct Fifo {
    q: PacketQueue,
    limit: QueueLimit,
}

impl Fifo {
    /// Free the packet ring (departure lookahead: see `AnyQdisc::release_packet_storage`).
    pub fn release_packet_storage(&mut self) {
        debug_assert!(self.q.is_empty());
        self.q = PacketQueue::default();
    }

    pub fn new(_cfg: FifoConfig, env: &QdiscEnv) -> Result<Self, String> {
        Ok(Fifo { q: PacketQueue::with_capacity(initial_capacity(&env.limit)), limit: env.limit })
    }
}

impl DecidesOnArrival for Fifo {
    #[inline]
    fn admit(&mut self, pkt: &mut Packet, backlog_pkts: usize, backlog_bytes: u64, ctx: &mut QdiscCtx) -> bool {
        if self.limit.would_overflow(backlog_pkts, backlog_bytes, pkt.size_bytes) {
            ctx.drop(*pkt, DropReason::Overflow);
            false
        } else {
            true
        }
    }
}

impl Qdisc for Fifo {
    #[inline]
    fn enqueue(&mut self, mut pkt: Packet, ctx: &mut QdiscCtx) {
        if self.admit(&mut pkt, self.q.len(), self.q.bytes(), ctx) {
            self.q.push(pkt);
        }
    }
    #[inline]
    fn dequeue(&mut self, _ctx: &mut QdiscCtx) -> Option<Packet> {
        self.q.pop()
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
    use crate::sim::units::BufferSpec;

    #[test]
    fn fifo_tail_drops_at_the_packet_limit_and_keeps_order() {
        let mut h = Harness::new(Fifo::new(FifoConfig {}, &env(10_000_000, 3)).unwrap());
        for i in 0..5u64 {
            let mut p = data(0, Ecn::NotEct);
            p.seq = i;
            h.enqueue(i, p);
        }
        assert_eq!(h.q.len_pkts(), 3);
        assert_eq!(h.drops(), 2);
        let seqs: Vec<u64> = std::iter::from_fn(|| h.dequeue(10)).map(|p| p.seq).collect();
        assert_eq!(seqs, vec![0, 1, 2]);
        h.assert_conservation();
    }

    #[test]
    fn byte_limit_counts_bytes() {
        let e = QdiscEnv { limit: QueueLimit { pkts: None, bytes: Some(4000) }, ..env(1, 1) };
        let mut h = Harness::new(Fifo::new(FifoConfig {}, &e).unwrap());
        for _ in 0..3 {
            h.enqueue(0, data(0, Ecn::NotEct));
        }
        assert_eq!(h.q.len_pkts(), 2);
        assert_eq!(h.q.backlog_bytes(), 3000);
    }

    #[test]
    fn a_large_buffer_reserves_a_small_ring_and_grows_it_to_the_backlog() {
        // 100 ms at 20 Gbit/s (a per-flow access queue): 250 MB, room for
        // 3.9 M packets of 64 bytes; the ring starts at 256 slots (16 KB)
        // and doubles as the backlog grows, keeping the order.
        let e = QdiscEnv { limit: QueueLimit::from_spec(BufferSpec::Time(100_000_000), 20_000_000_000), ..env(1, 1) };
        let mut f = Fifo::new(FifoConfig {}, &e).unwrap();
        let mut q = std::mem::take(&mut f.q); // the discipline's ring, driven directly
        let mut p = data(0, Ecn::NotEct);
        q.push(p);
        assert_eq!(q.q.capacity(), 256);
        for seq in 1..5_000u64 {
            p.seq = seq;
            q.push(p);
        }
        assert_eq!((q.len(), q.q.capacity()), (5_000, 8_192));
        let seqs: Vec<u64> = std::iter::from_fn(|| q.pop()).map(|p| p.seq).collect();
        assert_eq!(seqs, (0..5_000).collect::<Vec<_>>());
    }
}
