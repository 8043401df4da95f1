//! Where endpoints put the packets they send, on the way to `forward`.
//!
//! An endpoint builds each packet field by field. Reading such a packet back
//! whole soon after (a 64-byte copy is a few wide loads) cannot be served
//! from the store buffer: the loads wait until every narrow store has
//! committed. In A-10 with an ACK per packet those waits were about a tenth
//! of the wall time (docs/performance.md, "Where the time goes"). So:
//! - a sender's packets are collected in a buffer the caller owns and are
//!   forwarded in place, by reference, never copied;
//! - a receiver whose reverse route starts with a lossless delay line writes
//!   its replies straight into that line ([`ReplyToLine`]); the line's slot
//!   is read next when the reply reaches the line's end, long after.

use super::*;
use crate::transport::endpoint::Outbox;

/// Buffers for endpoint output, one per nesting level: a packet forwarded
/// from a buffer can reach another endpoint (a receiver under departure
/// lookahead, any endpoint over a zero-delay path), which then needs a
/// buffer of its own. Buffers are returned empty and keep their capacity,
/// so the steady state allocates nothing.
#[derive(Debug, Default)]
pub(super) struct OutboxPool {
    free: Vec<Vec<Packet>>,
}

impl OutboxPool {
    #[inline]
    pub(super) fn take(&mut self) -> Vec<Packet> {
        self.free.pop().unwrap_or_else(|| Vec::with_capacity(64))
    }

    #[inline]
    pub(super) fn give_back(&mut self, mut out: Vec<Packet>) {
        out.clear();
        self.free.push(out);
    }
}

/// A receiver's replies, put on the lossless delay line `d` their route
/// starts with, leaving at their own departure time (never before now).
pub(super) struct ReplyToLine<'a> {
    pub(super) line: &'a mut DelayLine,
    pub(super) events: &'a mut EventQueue,
    pub(super) d: u32,
    pub(super) route: u32,
    pub(super) now_ns: u64,
}

impl Outbox for ReplyToLine<'_> {
    #[inline(always)]
    fn push(&mut self, p: Packet) {
        let leaves_ns = p.enq_ns.max(self.now_ns);
        if let Some(at) = self.line.push(leaves_ns, &p, self.route, 1) {
            self.events.schedule(at, Event::LineArrival(self.d));
        }
    }
}
