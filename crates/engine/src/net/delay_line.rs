//! A propagation delay: every packet leaves exactly `delay_ns` after it
//! entered. Because the delay is constant, departures are in entry order, so
//! only the head needs an event: the event list holds one entry per busy
//! line, not one per packet in flight. Lines are shared by every path with
//! the same delay (packets carry their own route), so a dumbbell of ten
//! thousand equal-RTT flows needs a handful of lines.
//!
//! A receiver that runs ahead of real time (see `Stage::SinkLine`) may hand
//! a line a departure earlier than one already queued (a delayed-ACK timer of
//! another flow); such a packet is inserted in time order, after any packet
//! with the same arrival time, so the line stays sorted and FIFO among equals.

use super::packet::Packet;
use std::collections::VecDeque;

#[derive(Debug, Clone)]
pub struct DelayLine {
    pub delay_ns: u64,
    q: VecDeque<(u64, Packet)>,
    /// Links merged into this line that drop or mark at random (usually none).
    pub lossy_links: Vec<u32>,
    /// Time of the pending head event, if any.
    pub event_at: Option<u64>,
}

impl DelayLine {
    pub fn new(delay_ns: u64, lossy_links: Vec<u32>) -> Self {
        DelayLine { delay_ns, q: VecDeque::new(), lossy_links, event_at: None }
    }

    /// Add a packet leaving at `depart_ns`. Returns a time to schedule when
    /// the head now arrives earlier than the pending event (or none is pending).
    #[inline]
    pub fn push(&mut self, depart_ns: u64, pkt: Packet) -> Option<u64> {
        let at = depart_ns + self.delay_ns;
        if self.q.back().is_none_or(|&(t, _)| t <= at) {
            self.q.push_back((at, pkt));
        } else {
            let i = self.q.partition_point(|&(t, _)| t <= at);
            self.q.insert(i, (at, pkt));
        }
        let head = self.q.front().expect("just pushed").0;
        if self.event_at.is_none_or(|e| head < e) {
            self.event_at = Some(head);
            Some(head)
        } else {
            None
        }
    }

    /// The line's event fired at `now_ns`: false if it was superseded.
    #[inline]
    pub fn take_event(&mut self, now_ns: u64) -> bool {
        if self.event_at == Some(now_ns) {
            self.event_at = None;
            true
        } else {
            false
        }
    }

    /// After popping what is due: the next head time to schedule, if any.
    #[inline]
    pub fn rearm(&mut self) -> Option<u64> {
        let head = self.q.front()?.0;
        if self.event_at.is_none_or(|e| head < e) {
            self.event_at = Some(head);
            Some(head)
        } else {
            None
        }
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

    /// The flow of the `i`-th packet from the head, if any.
    #[inline]
    pub fn flow_at(&self, i: usize) -> Option<u32> {
        self.q.get(i).map(|(_, p)| p.flow)
    }

    pub fn len(&self) -> usize {
        self.q.len()
    }
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::packet::PacketKind;

    fn pkt(seq: u64) -> Packet {
        let mut p = Packet::new(PacketKind::Ack, 0, 52);
        p.seq = seq;
        p
    }

    #[test]
    fn late_pushes_are_inserted_in_time_order_and_move_the_head_event() {
        let mut l = DelayLine::new(10, vec![]);
        assert_eq!(l.push(100, pkt(1)), Some(110));
        assert_eq!(l.push(105, pkt(2)), None);
        // An earlier departure becomes the new head: a new (earlier) event.
        assert_eq!(l.push(95, pkt(0)), Some(105));
        // Equal arrival times keep entry order.
        assert_eq!(l.push(100, pkt(9)), None);
        assert!(!l.take_event(110), "the 110 event was superseded");
        assert!(l.take_event(105));
        let mut order = vec![];
        while let Some(p) = l.pop_due(200) {
            order.push(p.seq);
        }
        assert_eq!(order, vec![0, 1, 9, 2]);
        assert_eq!(l.rearm(), None);
    }
}
