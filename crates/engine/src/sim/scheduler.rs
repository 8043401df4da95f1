//! The event list.
//!
//! Holds one entry per *component* with pending work (a link transmitting, a
//! delay line's head packet, a flow's next timer), never one per packet in
//! flight. Ties at the same nanosecond run in scheduling order (a sequence
//! number breaks them), which makes every run deterministic.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

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

#[derive(Debug, Clone, Copy)]
struct Entry {
    time_ns: u64,
    seq: u64,
    event: Event,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.time_ns == o.time_ns && self.seq == o.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap, we want the earliest first.
    fn cmp(&self, o: &Self) -> Ordering {
        o.time_ns.cmp(&self.time_ns).then_with(|| o.seq.cmp(&self.seq))
    }
}

#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    next_seq: u64,
    popped: u64,
}

impl EventQueue {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    pub fn schedule(&mut self, time_ns: u64, event: Event) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { time_ns, seq, event });
    }

    /// The earliest event, or None when nothing is pending.
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, Event)> {
        let e = self.heap.pop()?;
        self.popped += 1;
        Some((e.time_ns, e.event))
    }

    #[inline]
    pub fn peek_time(&self) -> Option<u64> {
        self.heap.peek().map(|e| e.time_ns)
    }

    /// Events executed so far (the benchmark's "events").
    pub fn events_popped(&self) -> u64 {
        self.popped
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_order_and_fifo_on_ties() {
        let mut q = EventQueue::new();
        q.schedule(30, Event::Sample);
        q.schedule(10, Event::LineArrival(1));
        q.schedule(10, Event::LineArrival(2));
        q.schedule(20, Event::LinkTxDone(0));
        q.schedule(10, Event::LineArrival(3));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (10, Event::LineArrival(1)),
                (10, Event::LineArrival(2)),
                (10, Event::LineArrival(3)),
                (20, Event::LinkTxDone(0)),
                (30, Event::Sample)
            ]
        );
        assert_eq!(q.events_popped(), 5);
    }
}
