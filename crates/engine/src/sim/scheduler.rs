//! The event list.
//!
//! Holds one entry per *component* with pending work (a link transmitting, a
//! delay line's head packet, a flow's next timer), never one per packet in
//! flight. At the same nanosecond, transmissions finish first (a queue sends
//! its departing packet before it accepts an arrival of that instant; ACK
//! clocking makes such coincidences recur), then everything else runs in
//! scheduling order (a sequence number breaks the ties). Every run is
//! deterministic.

use super::heap::{Entry, EMPTY};
use super::wheel::Wheel;

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

/// The line of a [`Event::LineArrival`] entry, None for any other event or
/// a vacant entry (whose code's kind, 15, is no event's).
#[inline(always)]
fn line_of(e: &Entry) -> Option<u32> {
    let code = e.rest as u32;
    (code >> 28 == Event::LineArrival(0).encode() >> 28).then_some(code & ((1 << 28) - 1))
}

/// Packet events: buckets of 8 ns, 8 192 of them (65.5 µs ahead); later
/// packet events, on long delay lines, wait in a wheel of 65.5 µs buckets
/// (67 ms ahead), and beyond that in a heap. A fat tree pops a few hundred
/// packet events per simulated microsecond, so a bucket pours a few entries
/// into the sorted run; a dumbbell's events, a microsecond or more apart,
/// skip the empty buckets between them through the occupancy bits.
type PacketWheel = Wheel<3, 8192, 128, Wheel<16, 1024, 16>>;

/// Timers (RTOs, delayed ACKs, pacing, stop times; one or two per flow,
/// mostly far ahead, popped rarely): buckets of 2^17 ns (131 µs), 8 192 of
/// them (about 1.07 s ahead; later timers, such as backed-off RTOs, stop
/// times and the end of warm-up, wait in the overflow). In one heap, ten
/// thousand flows' timers would make every re-armed timer sift through
/// seven levels, most of them cache misses. A timer due within the bucket
/// being popped is inserted into its sorted run, moving the entries on
/// one side of its place. Ten thousand flows time out in clusters: with
/// 1 ms buckets those moves were 1.7 % of C-10000's instructions, with
/// these narrower ones 0.7 %, at no measurable cost to B
/// (docs/performance.md).
type TimerWheel = Wheel<17, 8192, 128>;

/// Packet events (transmissions, delay-line heads: near-future, popped
/// constantly) and timers (one or two per flow, mostly far away, popped
/// rarely) in two wheels of different bucket widths, under one sequence
/// counter. Popping compares the two tops (and the front slot), so the
/// order is exactly that of a single heap of all events.
#[derive(Debug)]
pub struct EventQueue {
    /// The earliest packet event scheduled since the last pop, kept out of
    /// the wheel: most packet events of a dumbbell are popped soon after
    /// they are scheduled (the next end of transmission), and this saves
    /// them a bucket push and a pour. `EMPTY` when vacant. The pop order is
    /// unchanged: keys are unique, and `pop` takes the least of this and the
    /// two wheels' tops.
    front: Entry,
    packets: PacketWheel,
    timers: TimerWheel,
    next_seq: u32,
    /// Events executed, by kind: indexed by the encoding's 4-bit kind, so
    /// the index needs no bound check (kinds 9 to 15 never occur); their
    /// sum is the number executed.
    popped_by_kind: [u64; 16],
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            front: EMPTY,
            packets: PacketWheel::default(),
            timers: TimerWheel::default(),
            next_seq: 0,
            popped_by_kind: [0; 16],
        }
    }
}

impl EventQueue {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the packet wheel splits its buckets by time when it pours them.
    #[cfg(test)]
    fn packet_buckets_split(&self) -> bool {
        self.packets.splits_buckets()
    }

    /// Inlined at every call site: most pass a known kind, which then picks
    /// the wheel at compile time. Left to the compiler, it went out of line
    /// once the wheel's push changed (stop 51), which cost A-10-ack1 about
    /// 25 instructions a packet (docs/performance.md).
    #[inline(always)]
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

    /// Where the earliest event is: 0 = the front slot, 1 = packet wheel,
    /// 2 = timer wheel; None if nothing is due by `limit_ns`.
    #[inline]
    fn earliest(&self, limit_ns: u64) -> Option<u8> {
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
        let code = e.rest as u32;
        self.popped_by_kind[(code >> 28) as usize] += 1;
        (e.time_ns, Event::decode(code))
    }

    /// The delay lines whose head arrivals are likely the next two packet
    /// events, as prefetch hints: the first two of
    /// [`Self::peek_three_line_arrivals`] (its third is found and dropped:
    /// 0.7 instructions a hop of D, plain build). Changes nothing.
    #[inline]
    pub fn peek_line_arrivals(&self) -> (Option<u32>, Option<u32>) {
        let [next, after, _] = self.peek_three_line_arrivals();
        (next, after)
    }

    /// The delay lines of the likely next three packet events (prefetch
    /// hints): the front slot merged into the packet wheel's sorted run,
    /// ignoring timers; None for an event of another kind, and for an
    /// entry not at hand (still in a bucket: the run's `second` and `third`
    /// are `EMPTY` then). Entries never tie (each has its own sequence
    /// number), and a vacant front slot sorts last, so with the wheel
    /// empty the front slot's event is next and none follows. Changes
    /// nothing.
    #[inline]
    pub fn peek_three_line_arrivals(&self) -> [Option<u32>; 3] {
        let (f, a, b, c) = (&self.front, self.packets.top(), self.packets.second(), self.packets.third());
        let order = if f.before(a) {
            [f, a, b]
        } else if f.before(b) {
            [a, f, b]
        } else if f.before(c) {
            [a, b, f]
        } else {
            [a, b, c]
        };
        order.map(line_of)
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
        self.popped_by_kind.iter().sum()
    }

    pub fn len(&self) -> usize {
        usize::from(!self.front.is_vacant()) + self.packets.len() + self.timers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.front.is_vacant() && self.packets.is_empty() && self.timers.is_empty()
    }
}

#[cfg(test)]
#[path = "scheduler_tests.rs"]
mod tests;
