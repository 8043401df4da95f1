//! The event list.
//!
//! Holds one entry per *component* with pending work (a link transmitting, a
//! delay line's head packet, a flow's next timer), never one per packet in
//! flight. At the same nanosecond, transmissions finish first (a queue sends
//! its departing packet before it accepts an arrival of that instant; ACK
//! clocking makes such coincidences recur), then everything else runs in
//! scheduling order (a sequence number breaks the ties). Every run is
//! deterministic.


/// What an event does; the index points into the world's component tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A link finished serialising its current packet.
    LinkTxDone(u32),
    /// The head packet of a delay line reaches the line's end.
    LineArrival(u32),
    /// A TCP/UDP/QCN sender's timer (RTO, pacing, start, stop).
    SenderTimer(u32),
    /// A receiver's timer (delayed ACK).
    ReceiverTimer(u32),
    /// A queue discipline's periodic update (PIE, PI2, DualPI2, ARED, ...).
    QdiscTimer(u32),
    /// A scheduled link-rate change (index into the change list).
    LinkRateChange(u32),
    /// A workload generator creates its next flow.
    WorkloadArrival(u32),
    /// Metrics sampling tick.
    Sample,
    /// Warm-up ends: snapshot counters.
    WarmupEnd,
}

impl Event {
    /// Pack into 32 bits: 4 bits of kind, 28 bits of index.
    #[inline]
    fn encode(self) -> u32 {
        let (kind, idx) = match self {
            Event::LinkTxDone(i) => (0, i),
            Event::LineArrival(i) => (1, i),
            Event::SenderTimer(i) => (2, i),
            Event::ReceiverTimer(i) => (3, i),
            Event::QdiscTimer(i) => (4, i),
            Event::LinkRateChange(i) => (5, i),
            Event::WorkloadArrival(i) => (6, i),
            Event::Sample => (7, 0),
            Event::WarmupEnd => (8, 0),
        };
        debug_assert!(idx < (1 << 28), "component index {idx} exceeds 2^28");
        (kind << 28) | idx
    }

    #[inline]
    fn decode(code: u32) -> Event {
        let idx = code & ((1 << 28) - 1);
        match code >> 28 {
            0 => Event::LinkTxDone(idx),
            1 => Event::LineArrival(idx),
            2 => Event::SenderTimer(idx),
            3 => Event::ReceiverTimer(idx),
            4 => Event::QdiscTimer(idx),
            5 => Event::LinkRateChange(idx),
            6 => Event::WorkloadArrival(idx),
            7 => Event::Sample,
            _ => Event::WarmupEnd,
        }
    }
}

/// A 16-byte heap entry ordered by (time, class, sequence). The sequence
/// number (31 bits, wrapping) makes equal-time events of a class run in
/// scheduling order; a wrap can only reorder two events at the same
/// nanosecond scheduled two billion events apart, and even then deterministically.
#[derive(Debug, Clone, Copy)]
struct Entry {
    time_ns: u64,
    /// class << 63 | seq << 32 | encoded event; class 0 = transmission done.
    rest: u64,
}

impl Entry {
    /// Ordered by (time, class, seq, event): the event code below the unique
    /// sequence number never decides an order (except across a sequence wrap,
    /// deterministically). Times differ far more often than they tie, so the
    /// time is compared first on its own.
    #[inline(always)]
    fn before(&self, other: &Entry) -> bool {
        self.time_ns < other.time_ns || (self.time_ns == other.time_ns && self.rest < other.rest)
    }

    /// The order as one number: `a.key() < b.key()` iff `a.before(b)`. One
    /// 128-bit comparison sets a flag without a branch (see `sift_down_from_root`).
    #[inline(always)]
    fn key(&self) -> u128 {
        (u128::from(self.time_ns) << 64) | u128::from(self.rest)
    }
}

/// Children per node: a 4-ary heap halves the depth of a binary heap and
/// keeps siblings in one cache line (4 × 16 bytes).
const ARITY: usize = 4;

/// A 4-ary min-heap of entries.
///
/// Popping hands out the root but leaves its slot open (`hole`): the next
/// push puts its entry there and sifts it down. Events re-arm their own
/// component right after they run (a delay line schedules its next head, a
/// timer its next deadline), so the entry that fills the hole is usually
/// close to the minimum and sinks a level or two, where removing the root
/// would have sunk the last leaf through the whole depth. A pop or a look at
/// the top with the hole still open first removes the root for real. The
/// multiset of entries, and so the pop order, is that of a plain heap.
#[derive(Debug, Default)]
struct Heap {
    v: Vec<Entry>,
    hole: bool,
}

impl Heap {
    #[inline]
    fn push(&mut self, e: Entry) {
        if self.hole {
            self.hole = false;
            self.sift_down_from_root(e);
            return;
        }
        let mut i = self.v.len();
        self.v.push(e);
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if !e.before(&self.v[parent]) {
                break;
            }
            self.v[i] = self.v[parent];
            i = parent;
        }
        self.v[i] = e;
    }

    /// Remove the handed-out root, if any, so that `top` is the least entry.
    #[inline]
    fn settle(&mut self) {
        if self.hole {
            self.hole = false;
            let last = self.v.pop().expect("a hole lies in a non-empty heap");
            if !self.v.is_empty() {
                self.sift_down_from_root(last);
            }
        }
    }

    /// The least entry, or [`EMPTY`] (later than any event). Needs `settle`.
    #[inline]
    fn top(&self) -> &Entry {
        debug_assert!(!self.hole);
        self.v.first().unwrap_or(&EMPTY)
    }

    /// Hand out the least entry (the heap is settled and non-empty); its slot
    /// stays open for the next push.
    #[inline]
    fn take_top(&mut self) -> Entry {
        debug_assert!(!self.hole && !self.v.is_empty());
        self.hole = true;
        self.v[0]
    }

    fn len(&self) -> usize {
        self.v.len() - usize::from(self.hole)
    }

    /// Put `e` at the root and sift it down.
    ///
    /// Which of four children is least is a coin flip, so a branch per
    /// comparison would mispredict about half the time (in a fat tree, with
    /// hundreds of pending line events, that was half of all mispredicted
    /// branches, docs/performance.md). A full set of children is therefore
    /// reduced without branches: two pairs, then their winners, each
    /// comparison turned into an index. Keys are unique, so the order of the
    /// comparisons cannot change which child wins.
    #[inline]
    fn sift_down_from_root(&mut self, e: Entry) {
        let v = &mut self.v[..];
        let n = v.len();
        let key = e.key();
        let mut i = 0;
        loop {
            let first = i * ARITY + 1;
            let best = if first + ARITY <= n {
                let a = first + usize::from(v[first + 1].key() < v[first].key());
                let b = first + 2 + usize::from(v[first + 3].key() < v[first + 2].key());
                let b_wins = v[b].key() < v[a].key();
                // Arithmetic select: a `cmov`, never a branch.
                a ^ ((a ^ b) & usize::from(b_wins).wrapping_neg())
            } else if first < n {
                // The last, partial set of children.
                (first + 1..n).fold(first, |best, j| if v[j].key() < v[best].key() { j } else { best })
            } else {
                break;
            };
            if v[best].key() >= key {
                break;
            }
            v[i] = v[best];
            i = best;
        }
        v[i] = e;
    }
}

/// Width of a far-timer bucket: 2^20 ns, about 1 ms.
const BUCKET_SHIFT: u32 = 20;
/// Buckets in the ring: about 1.07 s ahead. Later timers (backed-off RTOs,
/// stop times, the end of warm-up) wait in an overflow heap.
const BUCKETS: usize = 1024;

/// The timers: one or two per flow, mostly far ahead (RTOs, delayed ACKs),
/// popped rarely. In one heap, ten thousand flows' timers would make every
/// re-armed timer sift through seven levels, most of them cache misses.
/// Here only the timers before `horizon_ns` are in a heap (`near`); later
/// ones wait unsorted in buckets of about 1 ms (a push touches one cache
/// line), those beyond the ring's reach in `overflow`. When `near` runs dry
/// the next non-empty bucket is poured into it. Every timer in `near` is
/// earlier than every timer outside it, so its top is the earliest timer
/// and the pop order is exactly that of a single heap.
#[derive(Debug)]
struct Timers {
    near: Heap,
    /// Start of the bucket at `cursor`; `near` holds exactly the timers before it.
    horizon_ns: u64,
    cursor: usize,
    /// Bucket `(cursor + k) % BUCKETS` holds timers in
    /// `[horizon + k·2^BUCKET_SHIFT, horizon + (k+1)·2^BUCKET_SHIFT)`.
    ring: Vec<Vec<Entry>>,
    in_ring: usize,
    overflow: Heap,
    /// Emptied bucket buffers for reuse: a bucket holds no storage while it
    /// is empty, so the ring keeps only what live timers need (a burst of
    /// ten thousand timers in one bucket does not stay allocated), and
    /// steady state allocates nothing.
    spare: Vec<Vec<Entry>>,
}

/// Emptied bucket buffers kept for reuse, and the largest one kept (entries).
const SPARE_BUCKETS: usize = 8;
const SPARE_MAX_ENTRIES: usize = 1024;

impl Default for Timers {
    fn default() -> Self {
        Timers {
            near: Heap::default(),
            horizon_ns: 0,
            cursor: 0,
            ring: (0..BUCKETS).map(|_| Vec::new()).collect(),
            in_ring: 0,
            overflow: Heap::default(),
            spare: Vec::new(),
        }
    }
}

impl Timers {
    /// Out of line: timers are scheduled rarely, and inlined here this would
    /// bloat every caller of `EventQueue::schedule` (the packet events' path).
    #[inline(never)]
    fn push(&mut self, e: Entry) {
        if e.time_ns < self.horizon_ns {
            self.near.push(e);
            return;
        }
        let k = (e.time_ns - self.horizon_ns) >> BUCKET_SHIFT;
        if k < BUCKETS as u64 {
            let bucket = &mut self.ring[(self.cursor + k as usize) % BUCKETS];
            if bucket.capacity() == 0 {
                *bucket = self.spare.pop().unwrap_or_default();
            }
            bucket.push(e);
            self.in_ring += 1;
        } else {
            self.overflow.push(e);
        }
    }

    /// Make `top` the earliest timer, pouring buckets into `near` if it is empty.
    #[inline]
    fn settle(&mut self) {
        self.near.settle();
        if self.near.v.is_empty() && self.len() > 0 {
            self.refill();
        }
    }

    #[inline(never)]
    fn refill(&mut self) {
        while self.near.v.is_empty() {
            if self.in_ring == 0 {
                // Nothing within reach: jump whole (empty) buckets to the
                // overflow's earliest timer.
                self.overflow.settle();
                debug_assert!(!self.overflow.v.is_empty(), "refill of an empty timer set");
                let skip = (self.overflow.top().time_ns - self.horizon_ns) >> BUCKET_SHIFT;
                self.horizon_ns += skip << BUCKET_SHIFT;
                self.cursor = (self.cursor + (skip % BUCKETS as u64) as usize) % BUCKETS;
                self.pull_overflow();
                continue;
            }
            if !self.ring[self.cursor].is_empty() {
                let mut bucket = std::mem::take(&mut self.ring[self.cursor]);
                self.in_ring -= bucket.len();
                for e in bucket.drain(..) {
                    self.near.push(e);
                }
                if self.spare.len() < SPARE_BUCKETS && bucket.capacity() <= SPARE_MAX_ENTRIES {
                    self.spare.push(bucket);
                }
            }
            self.horizon_ns += 1 << BUCKET_SHIFT;
            self.cursor = (self.cursor + 1) % BUCKETS;
            self.pull_overflow();
        }
    }

    /// Move overflow timers that the ring now reaches into it.
    fn pull_overflow(&mut self) {
        let reach_ns = self.horizon_ns.saturating_add((BUCKETS as u64) << BUCKET_SHIFT);
        loop {
            self.overflow.settle();
            if self.overflow.v.is_empty() || self.overflow.top().time_ns >= reach_ns {
                return;
            }
            let e = self.overflow.take_top();
            self.push(e);
        }
    }

    /// The earliest timer, or [`EMPTY`]. Needs `settle`.
    #[inline]
    fn top(&self) -> &Entry {
        self.near.top()
    }

    #[inline]
    fn take_top(&mut self) -> Entry {
        self.near.take_top()
    }

    fn len(&self) -> usize {
        self.near.len() + self.in_ring + self.overflow.len()
    }
}

/// Packet events (transmissions, delay-line heads: few, near-future, popped
/// constantly) in a heap, and timers (one or two per flow, mostly far away,
/// popped rarely) in [`Timers`], under one sequence counter. Popping
/// compares the two tops, so the order is exactly that of a single heap,
/// while the hot heap stays small.
#[derive(Debug)]
pub struct EventQueue {
    /// The earliest packet event scheduled since the last pop, kept out of
    /// the heap: most packet events are popped soon after they are scheduled
    /// (the next end of transmission), and this saves them a sift up and a
    /// sift down. `EMPTY` when vacant. The pop order is unchanged: keys are
    /// unique, and `pop` takes the least of this and the two heap tops.
    front: Entry,
    packets: Heap,
    timers: Timers,
    next_seq: u32,
    popped: u64,
    /// Events executed, by kind (index = the 4-bit kind of the encoding).
    popped_by_kind: [u64; 9],
}

/// No event: later than any event, and told apart from real entries by its
/// `rest`, which no event can have (an event code's kind is at most 8).
const EMPTY: Entry = Entry { time_ns: u64::MAX, rest: u64::MAX };

impl Entry {
    #[inline(always)]
    fn is_vacant(&self) -> bool {
        self.rest == u64::MAX
    }
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            front: EMPTY,
            packets: Heap::default(),
            timers: Timers::default(),
            next_seq: 0,
            popped: 0,
            popped_by_kind: [0; 9],
        }
    }
}

impl EventQueue {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    pub fn schedule(&mut self, time_ns: u64, event: Event) {
        let class = u64::from(!matches!(event, Event::LinkTxDone(_)));
        let seq = (self.next_seq & 0x7FFF_FFFF) as u64;
        let e = Entry { time_ns, rest: (class << 63) | (seq << 32) | event.encode() as u64 };
        self.next_seq = self.next_seq.wrapping_add(1);
        match event {
            Event::LinkTxDone(_) | Event::LineArrival(_) => {
                if e.before(&self.front) {
                    let displaced = std::mem::replace(&mut self.front, e);
                    if !displaced.is_vacant() {
                        self.packets.push(displaced);
                    }
                } else {
                    self.packets.push(e);
                }
            }
            _ => self.timers.push(e),
        }
    }

    /// Where the earliest event is: 0 = the front slot, 1 = packet heap,
    /// 2 = timer heap; None if nothing is due by `limit_ns`.
    #[inline]
    fn earliest(&mut self, limit_ns: u64) -> Option<u8> {
        self.packets.settle();
        self.timers.settle();
        let (mut best, mut src) = (&self.front, 0);
        if self.packets.top().before(best) {
            (best, src) = (self.packets.top(), 1);
        }
        if self.timers.top().before(best) {
            (best, src) = (self.timers.top(), 2);
        }
        (best.time_ns <= limit_ns && !best.is_vacant()).then_some(src)
    }

    #[inline]
    fn take(&mut self, src: u8) -> (u64, Event) {
        let e = match src {
            0 => std::mem::replace(&mut self.front, EMPTY),
            1 => self.packets.take_top(),
            _ => self.timers.take_top(),
        };
        self.popped += 1;
        let code = e.rest as u32;
        self.popped_by_kind[(code >> 28).min(8) as usize] += 1;
        (e.time_ns, Event::decode(code))
    }

    /// The packet event likely to run next, as a prefetch hint: the least
    /// of the front slot and the heap's top (below the handed-out root, its
    /// four children), ignoring timers. Reads no more than one cache line of
    /// the heap, changes nothing.
    #[inline]
    pub fn peek_packet_event(&self) -> Option<Event> {
        let v = &self.packets.v;
        let top = if self.packets.hole {
            v.get(1..v.len().min(ARITY + 1)).and_then(|kids| kids.iter().min_by_key(|e| e.key()))
        } else {
            v.first()
        };
        let best = match top {
            Some(t) if t.before(&self.front) => t,
            _ => &self.front,
        };
        (!best.is_vacant()).then(|| Event::decode(best.rest as u32))
    }

    /// The earliest event, or None when nothing is pending.
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, Event)> {
        self.pop_until(u64::MAX)
    }

    /// The earliest event if it is due no later than `limit_ns`.
    #[inline]
    pub fn pop_until(&mut self, limit_ns: u64) -> Option<(u64, Event)> {
        let src = self.earliest(limit_ns)?;
        Some(self.take(src))
    }

    /// Events executed, by kind name.
    pub fn events_by_kind(&self) -> [(&'static str, u64); 9] {
        const NAMES: [&str; 9] =
            ["link_tx_done", "line_arrival", "sender_timer", "receiver_timer", "qdisc_timer", "link_rate_change", "workload_arrival", "sample", "warmup_end"];
        std::array::from_fn(|i| (NAMES[i], self.popped_by_kind[i]))
    }


    /// Events executed so far (the benchmark's "events").
    pub fn events_popped(&self) -> u64 {
        self.popped
    }

    pub fn len(&self) -> usize {
        usize::from(!self.front.is_vacant()) + self.packets.len() + self.timers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
#[path = "scheduler_tests.rs"]
mod tests;
