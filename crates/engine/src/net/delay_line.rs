//! A propagation delay: every packet leaves exactly `delay_ns` after it
//! entered. Because the delay is constant, departures are in entry order, so
//! only the head needs an event: the event list holds one entry per busy
//! line, not one per packet in flight. Lines are shared by every path with
//! the same delay after the same queue (packets carry their own route), so
//! ten thousand equal-RTT flows through one bottleneck need a handful of
//! lines; each queue has lines of its own (`route::compile`).
//!
//! A receiver that runs ahead of real time (see `Stage::SinkLine`) may hand
//! a line a departure earlier than one already queued (a delayed-ACK timer of
//! another flow); such a packet is inserted in time order, after any packet
//! with the same arrival time, so the line stays sorted and FIFO among equals.
//!
//! While a packet is on a line its `enq_ns` holds the time it reaches the
//! line's end: no stage reads `enq_ns` before the next queue restamps it, and
//! keeping the time in the packet makes an entry one 64-byte cache line
//! rather than 72 bytes straddling two.

use crate::packet::Packet;
use crate::sim::ring::Ring;

/// A line's header: every field a hop reads or writes, in one 64-byte cache
/// line (a test checks the size). A fat tree has a line per port, and a hop
/// touches two of them (the one it leaves, the one it enters); at 96 bytes,
/// every other header straddled two cache lines, and a prefetch of the
/// header loaded only the first (docs/performance.md). The rare list of
/// lossy links lives apart, in [`Lines`].
#[derive(Debug, Clone)]
#[repr(align(64))]
pub struct DelayLine {
    pub delay_ns: u64,
    /// Ordered by `enq_ns`, the arrival time at the line's end.
    q: Ring<Packet>,
    /// The latest `enq_ns` on the line (meaningful while it is not empty):
    /// a push compares with it here, in the header it touches anyway,
    /// instead of loading the tail packet, written a hop ago and in a large
    /// fat tree usually out of cache (docs/performance.md).
    tail_at_ns: u64,
    /// Time of the pending head event, or [`NO_EVENT`]: an `Option<u64>`
    /// would take 16 bytes and the header a second cache line.
    event_at_ns: u64,
    /// Route and hop the head continues on, noted when its event was
    /// scheduled: a prefetch hint (`World::prefetch_next_event`), never
    /// read for a decision.
    head_route: u32,
    head_hop: u8,
    /// Links merged into this line drop or mark at random ([`Lines::lossy_links`]).
    lossy: bool,
}

/// `event_at_ns` when no event is pending: later than any event time.
const NO_EVENT: u64 = u64::MAX;

impl DelayLine {
    pub fn new(delay_ns: u64, lossy: bool) -> Self {
        DelayLine { delay_ns, q: Ring::new(), tail_at_ns: 0, event_at_ns: NO_EVENT, head_route: 0, head_hop: 0, lossy }
    }

    /// Whether links merged into this line drop or mark at random.
    #[inline(always)]
    pub fn is_lossy(&self) -> bool {
        self.lossy
    }

    /// Route and hop the head continues on (a prefetch hint).
    #[inline(always)]
    pub fn head_next(&self) -> (u32, u8) {
        (self.head_route, self.head_hop)
    }

    /// Add a copy of `src` leaving at `depart_ns`, stamped with the `route`
    /// and `hop` it continues on. Returns a time to schedule when the head
    /// now arrives earlier than the pending event (or none is pending).
    ///
    /// The packet is copied first and stamped in its slot: a whole-packet
    /// load right after narrow stores to the same bytes (setting the hop or
    /// the exit time on the caller's copy) cannot be forwarded from the store
    /// buffer and stalls until the stores commit (A-10: 2 % of wall time).
    /// Always inlined: it runs for about every second packet, and a call
    /// costs A-10 ten instructions per packet (callgrind).
    #[inline(always)]
    pub fn push(&mut self, depart_ns: u64, src: &Packet, route: u32, hop: u8) -> Option<u64> {
        let at = depart_ns + self.delay_ns;
        debug_assert_eq!(self.q.back().map(|t| t.enq_ns), (!self.q.is_empty()).then_some(self.tail_at_ns));
        let early = !self.q.is_empty() && self.tail_at_ns > at;
        // `src` is only read by this copy: a caller that built the packet in
        // registers stores it straight into the slot (see `world::outbox`).
        stamp(self.q.push_back_mut(*src), at, route, hop);
        if early {
            self.sort_in_newest(); // behind the tail, which stays the latest
            return self.rearm();
        }
        self.tail_at_ns = at;
        if self.event_at_ns != NO_EVENT {
            // Appended behind a head whose event is pending (a line with a
            // pending event is never empty, and the event is never later
            // than its head): nothing to schedule, and the head, the line's
            // oldest packet and often out of cache, is not read.
            debug_assert!(Some(self.event_at_ns) <= self.head_time());
            return None;
        }
        self.rearm()
    }

    /// The packet just appended arrives before the one ahead of it (a
    /// receiver ran ahead): move it to its place in time order, after any
    /// packet with the same arrival time. Rare, so kept out of `push`.
    #[inline(never)]
    fn sort_in_newest(&mut self) {
        let p = self.q.pop_back().expect("just pushed");
        let i = self.q.partition_point(|q| q.enq_ns <= p.enq_ns);
        self.q.insert(i, p);
    }

    /// The line's event fired at `now_ns`: false if it was superseded.
    #[inline]
    pub fn take_event(&mut self, now_ns: u64) -> bool {
        if self.event_at_ns == now_ns {
            self.event_at_ns = NO_EVENT;
            true
        } else {
            false
        }
    }

    /// After popping what is due: the next head time to schedule, if any.
    #[inline]
    pub fn rearm(&mut self) -> Option<u64> {
        let Some(p) = self.q.front() else {
            self.q.rewind(); // the line has emptied: reuse its first slots
            return None;
        };
        let head = p.enq_ns;
        // `NO_EVENT` is later than any head.
        if head < self.event_at_ns {
            (self.event_at_ns, self.head_route, self.head_hop) = (head, p.route, p.hop);
            Some(head)
        } else {
            None
        }
    }

    /// Remove the head if it has arrived by `now_ns`.
    #[inline]
    pub fn pop_due(&mut self, now_ns: u64) -> Option<Packet> {
        self.q.pop_front_if(|p| p.enq_ns <= now_ns)
    }

    #[inline]
    pub fn head_time(&self) -> Option<u64> {
        self.q.front().map(|p| p.enq_ns)
    }

    /// Where the head packet lies (a prefetch hint: the address, not a read).
    #[inline]
    pub fn head_slot(&self) -> Option<&Packet> {
        self.q.front()
    }

    /// Where the next packet pushed is written, if there is room (a
    /// prefetch hint).
    #[inline]
    pub fn tail_slot_hint(&self) -> Option<&Packet> {
        self.q.back_slot_hint()
    }

    /// The flow of the `i`-th packet from the head, if any.
    #[inline]
    pub fn flow_at(&self, i: usize) -> Option<u32> {
        self.q.get(i).map(|p| p.flow)
    }

    pub fn len(&self) -> usize {
        self.q.len()
    }
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
}

/// Where a packet on a line goes next, and when it reaches the line's end.
#[inline(always)]
fn stamp(p: &mut Packet, at: u64, route: u32, hop: u8) {
    p.enq_ns = at;
    p.route = route;
    p.hop = hop;
}

/// The delay lines of a world, by index, and the lossy links merged into
/// each: a list that a few lines have and a hop never reads unless its line
/// is lossy, kept out of the lines' headers.
#[derive(Debug, Clone, Default)]
pub struct Lines {
    lines: Vec<DelayLine>,
    /// By line; empty for lines without lossy links.
    lossy_links: Vec<Vec<u32>>,
}

impl Lines {
    /// Add a line of `delay_ns` whose packets cross the rate-less random-loss
    /// links `lossy_links`; returns its index.
    pub fn add(&mut self, delay_ns: u64, lossy_links: Vec<u32>) -> u32 {
        self.lines.push(DelayLine::new(delay_ns, !lossy_links.is_empty()));
        self.lossy_links.push(lossy_links);
        self.lines.len() as u32 - 1
    }

    /// The rate-less random-loss links merged into line `d`, in path order.
    pub fn lossy_links(&self, d: usize) -> &[u32] {
        &self.lossy_links[d]
    }

    /// Every line (tests that check the network has emptied).
    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl Iterator<Item = &DelayLine> {
        self.lines.iter()
    }
}

impl std::ops::Index<usize> for Lines {
    type Output = DelayLine;
    #[inline(always)]
    fn index(&self, d: usize) -> &DelayLine {
        &self.lines[d]
    }
}

impl std::ops::IndexMut<usize> for Lines {
    #[inline(always)]
    fn index_mut(&mut self, d: usize) -> &mut DelayLine {
        &mut self.lines[d]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::PacketKind;

    fn pkt(seq: u64) -> Packet {
        let mut p = Packet::new(PacketKind::Ack, 0, 52);
        p.seq = seq;
        p
    }

    #[test]
    fn a_header_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<DelayLine>(), 64);
        assert_eq!(std::mem::align_of::<DelayLine>(), 64);
    }

    #[test]
    fn lines_keep_their_lossy_links_apart() {
        let mut lines = Lines::default();
        assert_eq!(lines.add(10, vec![]), 0);
        assert_eq!(lines.add(20, vec![3, 1]), 1);
        assert!(!lines[0].is_lossy() && lines[1].is_lossy());
        assert_eq!((lines.lossy_links(0), lines.lossy_links(1)), (&[][..], &[3, 1][..]));
        assert_eq!(lines[1].delay_ns, 20);
    }

    #[test]
    fn a_line_carrying_one_packet_at_a_time_keeps_it_in_one_slot() {
        let mut l = DelayLine::new(10, false);
        let mut first_slot = None;
        for i in 0..50u64 {
            // As the event loop does: push, pop when due, rearm.
            assert_eq!(l.push(100 * i, &pkt(i), 0, 0), Some(100 * i + 10));
            let slot: *const Packet = l.head_slot().unwrap();
            assert_eq!(*first_slot.get_or_insert(slot), slot, "packet {i} went to another slot");
            assert!(l.take_event(100 * i + 10));
            assert_eq!(l.pop_due(100 * i + 10).map(|p| p.seq), Some(i));
            assert_eq!(l.rearm(), None);
        }
    }

    #[test]
    fn late_pushes_are_inserted_in_time_order_and_move_the_head_event() {
        let mut l = DelayLine::new(10, false);
        assert_eq!(l.push(100, &pkt(1), 0, 0), Some(110));
        assert_eq!(l.push(105, &pkt(2), 0, 0), None);
        // An earlier departure becomes the new head: a new (earlier) event.
        assert_eq!(l.push(95, &pkt(0), 0, 0), Some(105));
        // Equal arrival times keep entry order.
        assert_eq!(l.push(100, &pkt(9), 0, 0), None);
        assert!(!l.take_event(110), "the 110 event was superseded");
        assert!(l.take_event(105));
        let mut order = vec![];
        while let Some(p) = l.pop_due(200) {
            order.push(p.seq);
        }
        assert_eq!(order, vec![0, 1, 9, 2]);
        assert_eq!(l.rearm(), None);
    }

    #[test]
    fn a_push_while_the_head_event_runs_schedules_the_head_and_packets_carry_their_exit_time() {
        let mut l = DelayLine::new(10, false);
        assert_eq!(l.push(0, &pkt(1), 0, 0), Some(10));
        assert_eq!(l.push(5, &pkt(2), 0, 0), None);
        // The head's event runs: popping it leaves packet 2 (due at 15)
        // without a pending event until a push or `rearm` schedules one.
        assert!(l.take_event(10));
        let p = l.pop_due(10).expect("head due");
        assert_eq!((p.seq, p.enq_ns), (1, 10));
        assert_eq!(l.push(10, &pkt(3), 0, 0), Some(15), "the head, not the packet pushed");
        assert_eq!(l.rearm(), None, "already scheduled");
        assert_eq!(l.push(12, &pkt(4), 0, 0), None);
        assert!(l.take_event(15));
        assert_eq!(l.pop_due(15).map(|p| (p.seq, p.enq_ns)), Some((2, 15)));
        assert_eq!(l.pop_due(15), None);
        assert_eq!(l.rearm(), Some(20));
    }

    /// The reference: a list kept sorted by inserting each packet after
    /// every packet arriving at the same time or earlier. Departures range
    /// from now to a little ahead (receivers running ahead), often at equal
    /// times, so early packets land at the front, middle and back.
    #[test]
    fn random_pushes_and_pops_leave_in_the_order_of_a_sorted_list() {
        let mut rng = crate::sim::rng::SimRng::derive(7, crate::sim::rng::Domain::Flow, 0);
        for round in 0..200 {
            let delay = 1 + rng.below(20);
            let mut l = DelayLine::new(delay, false);
            let mut reference: Vec<(u64, u64)> = vec![]; // (arrival, seq)
            let (mut now, mut seq) = (0u64, 0u64);
            let (mut popped, mut expected) = (vec![], vec![]);
            for _ in 0..300 {
                if rng.below(3) == 0 {
                    now += rng.below(8);
                    let _ = l.take_event(now);
                    while let Some(p) = l.pop_due(now) {
                        popped.push(p.seq);
                    }
                    while reference.first().is_some_and(|&(t, _)| t <= now) {
                        expected.push(reference.remove(0).1);
                    }
                    assert_eq!(l.head_time(), reference.first().map(|&(t, _)| t), "round {round}");
                } else {
                    let depart = now + rng.below(6);
                    seq += 1;
                    l.push(depart, &pkt(seq), 0, 0);
                    let at = depart + delay;
                    let i = reference.partition_point(|&(t, _)| t <= at);
                    reference.insert(i, (at, seq));
                    assert_eq!(l.len(), reference.len());
                }
            }
            assert_eq!(popped, expected, "round {round}");
        }
    }

    #[test]
    fn packets_carry_the_route_position_they_were_pushed_with_on_append_and_on_insert() {
        let mut l = DelayLine::new(10, false);
        let mut stale = pkt(1);
        (stale.route, stale.hop) = (99, 7);
        assert_eq!(l.push(100, &stale, 3, 1), Some(110));
        // Before the tail: the sorted insert stamps its packet too.
        assert_eq!(l.push(90, &pkt(2), 4, 2), Some(100));
        let first = l.pop_due(200).expect("due");
        let second = l.pop_due(200).expect("due");
        assert_eq!((first.seq, first.route, first.hop, first.enq_ns), (2, 4, 2, 100));
        assert_eq!((second.seq, second.route, second.hop, second.enq_ns), (1, 3, 1, 110));
    }
}
