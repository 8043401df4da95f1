//! A FIFO propagation delay: every packet leaves exactly `delay_ns` after it
//! entered. Because the delay is constant, departures are in entry order, so
//! only the head needs an event: the event list holds one entry per busy
//! line, not one per packet in flight.

use super::packet::Packet;
use std::collections::VecDeque;

#[derive(Debug, Clone)]
pub struct DelayLine {
    pub delay_ns: u64,
    q: VecDeque<(u64, Packet)>,
    /// Links merged into this line that drop or mark at random (usually none).
    pub lossy_links: Vec<u32>,
}

impl DelayLine {
    pub fn new(delay_ns: u64, lossy_links: Vec<u32>) -> Self {
        DelayLine { delay_ns, q: VecDeque::new(), lossy_links }
    }

    /// Add a packet at `now_ns`. Returns the arrival time to schedule if the
    /// line was empty (otherwise an event is already pending for the head).
    #[inline]
    pub fn push(&mut self, now_ns: u64, pkt: Packet) -> Option<u64> {
        let at = now_ns + self.delay_ns;
        let was_empty = self.q.is_empty();
        self.q.push_back((at, pkt));
        was_empty.then_some(at)
    }

    /// Remove the head if it has arrived by `now_ns`.
    #[inline]
    pub fn pop_due(&mut self, now_ns: u64) -> Option<Packet> {
        match self.q.front() {
            Some(&(at, _)) if at <= now_ns => self.q.pop_front().map(|(_, p)| p),
            _ => None,
        }
    }

    #[inline]
    pub fn head_time(&self) -> Option<u64> {
        self.q.front().map(|&(t, _)| t)
    }

    pub fn len(&self) -> usize {
        self.q.len()
    }
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    pub fn release_memory(&mut self) {
        if self.q.is_empty() {
            self.q = VecDeque::new();
        }
    }
}
