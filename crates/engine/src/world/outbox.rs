//! Delivery to endpoints, and where endpoints put the packets they send on
//! the way to `forward`.
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

impl World {
    /// A packet reached the end of its route: hand it to its endpoint.
    pub(super) fn deliver(&mut self, pkt: &Packet) {
        if pkt.from_source() {
            return self.deliver_to_sink(pkt, self.now_ns);
        }
        let f = self.slot(pkt.flow as usize);
        let local = self.now_ns - self.flows[f].clock_offset_ns;
        self.flush_source_samples(f, local);
        let mut out = self.outboxes.take();
        let flow = &mut self.flows[f];
        match &mut flow.source {
            Source::Tcp(s) => {
                s.on_packet(local, pkt, &mut out);
                if let Some(h) = self.rtt_hist.as_deref_mut() {
                    if let Some(r) = s.take_rtt_sample().filter(|_| self.now_ns >= self.warmup_ns) {
                        h.record(r);
                    }
                }
            }
            Source::Qcn(q) if pkt.kind == PacketKind::Cnm => q.on_cnm(local, pkt),
            Source::Probe(p) if pkt.kind == PacketKind::EchoReply => p.on_reply(local, pkt),
            _ => {}
        }
        if let Some(m) = flow.marker.as_deref_mut() {
            m.mark_all(local, &mut out);
        }
        let route = flow.fwd_route;
        self.emit(out, route);
        self.sync_source_timer(f);
    }

    /// Hand a packet to its receiver at `arrival_ns` (later than now when the
    /// route ends in a [`Stage::SinkLine`]); replies leave at their own
    /// departure times, which are never earlier than now.
    #[inline]
    pub(super) fn deliver_to_sink(&mut self, pkt: &Packet, arrival_ns: u64) {
        let f = self.slot(pkt.flow as usize);
        let now = self.now_ns;
        let flow = &mut self.flows[f];
        if arrival_ns > self.next_checkpoint_ns {
            flow.delivered_bytes_at(now); // drop entries that have arrived
            let before = flow.processed_bytes();
            flow.early.push_back((arrival_ns, before));
        }
        let route = flow.rev_route;
        // A reply leaving later than now (the receiver ran ahead) can only
        // enter the pure delay its route starts with (see `SinkLine`). A
        // lossless line takes the replies as the receiver writes them
        // ([`ReplyToLine`]). Otherwise (a lossy line, or during the catch-up,
        // where `forward` drops a reply leaving now) a reply leaving later
        // enters the line through `enter_line`, one leaving now is forwarded.
        if let (Some(d), false) = (flow.reply_line, self.catching_up) {
            let line = &mut self.lines[d as usize];
            let mut out = ReplyToLine { line, events: &mut self.events, d, route, now_ns: now };
            match &mut flow.sink {
                Sink::Tcp(r) => r.on_packet(arrival_ns, pkt, &mut out),
                Sink::Datagram(s) => s.on_packet(arrival_ns, pkt, &mut out),
            }
            return self.sync_sink_timer(f);
        }
        let first = self.routes.stage(route, 0);
        let mut out = self.outboxes.take();
        match &mut flow.sink {
            Sink::Tcp(r) => r.on_packet(arrival_ns, pkt, &mut out),
            Sink::Datagram(s) => s.on_packet(arrival_ns, pkt, &mut out),
        }
        for p in &mut out {
            let leaves_ns = p.enq_ns;
            p.route = route;
            p.hop = 0;
            match first {
                Some(line @ Stage::Line(_)) if leaves_ns > now => self.enter_line(p, line, 0, leaves_ns),
                _ => self.forward(p),
            }
        }
        self.outboxes.give_back(out);
        self.sync_sink_timer(f);
    }

    /// Send what an endpoint put in `out` along `route`, in place (see
    /// this module's docs), and return the buffer to the pool.
    #[inline]
    pub(super) fn emit(&mut self, mut out: Vec<Packet>, route: u32) {
        for p in &mut out {
            p.route = route;
            p.hop = 0;
            self.forward(p);
        }
        self.outboxes.give_back(out);
    }
}
