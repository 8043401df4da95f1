//! Early hand-off's steps in the world (see `net::link`'s module docs): an
//! arrival at such a queue, the end of its transmission as an event, and the
//! start of the next transmission, whose packet goes straight to the line
//! after the queue when nothing waits behind it.

use super::*;

impl World {
    /// Early hand-off (see `net::link`): the end of queue `l`'s transmission,
    /// as an event. The next transmission starts, then the packet that was
    /// not handed on leaves, then one handed on now follows it. Out of line,
    /// as [`Self::arrive_early`] is.
    #[inline(never)]
    pub(super) fn tx_done_early(&mut self, l: usize) {
        let q = self.links[l].queue.as_mut().expect("only queue links transmit");
        let held = q.end_tx();
        let handed = self.start_early(l as u32);
        if let Some(pkt) = held {
            self.forward(&mut { pkt });
        }
        self.hand_on_early(handed)
    }

    /// Early hand-off: `pkt` arrives at queue `l`. Out of line: inlined,
    /// it cost every other queue's packets a few instructions (the forwarding
    /// code around them grew), for a call it saves only here.
    #[inline(never)]
    pub(super) fn arrive_early(&mut self, l: u32, pkt: &Packet) {
        let now = self.now_ns;
        let q = self.links[l as usize].queue.as_mut().expect("queue stage");
        q.settle_tx_end(now, &mut self.flow_counters);
        if !q.is_sending() && q.qdisc.len_pkts() == 0 {
            let passed = q.pass_through(now, *pkt, &mut self.flow_counters);
            return self.leave_at_once(l, passed);
        }
        q.arrive(now, *pkt, &mut self.flow_counters);
        if !q.is_sending() {
            let handed = self.start_early(l);
            self.hand_on_early(handed);
        } else if let Some(t) = q.arm_if_waiting() {
            self.events.schedule(t, Event::LinkTxDone(l));
        }
    }

    /// Early hand-off (see `net::link`): start queue `l`'s next transmission,
    /// if it has a packet. When no packet waits behind it and a lossless
    /// line follows, the packet is returned, with that line and the end of
    /// its transmission, for the caller to put on the line now
    /// ([`Self::enter_line`], after anything that left before it); the end
    /// of the transmission then gets no event unless an arrival or the
    /// discipline's timer arms one. Otherwise the packet leaves at its
    /// event, as without the shortcut (a busy queue needs the event anyway).
    #[inline(always)]
    pub(super) fn start_early(&mut self, l: u32) -> Option<(Packet, Stage, u64)> {
        let now = self.now_ns;
        let q = self.links[l as usize].queue.as_mut().expect("a queue");
        let done = q.start_tx(now, &mut self.flow_counters)?;
        q.sending_until(done);
        if q.qdisc.len_pkts() == 0 {
            let p = q.packet_on_wire().expect("a packet just started");
            if let Some(line) = early_line(&self.routes, &self.lines, p) {
                return Some((q.hand_on(), line, done));
            }
        }
        q.arm_tx_end();
        self.events.schedule(done, Event::LinkTxDone(l));
        None
    }

    /// Early hand-off: a packet that passed straight through queue `l`'s
    /// empty discipline (`QueueSlot::pass_through`) goes on the line after
    /// the queue now, as [`Self::start_early`] hands one on, or else stays
    /// on the wire until its transmission's end event.
    #[inline(always)]
    fn leave_at_once(&mut self, l: u32, passed: Option<(Packet, u64)>) {
        let Some((pkt, done)) = passed else { return };
        if let Some(line) = early_line(&self.routes, &self.lines, &pkt) {
            return self.hand_on_early(Some((pkt, line, done)));
        }
        self.links[l as usize].queue.as_mut().expect("a queue").put_on_wire(pkt);
        self.events.schedule(done, Event::LinkTxDone(l));
    }

    /// Early hand-off: put a packet [`Self::start_early`] returned on its
    /// line, unless its transmission ends after the run (then it never left).
    #[inline(always)]
    pub(super) fn hand_on_early(&mut self, handed: Option<(Packet, Stage, u64)>) {
        if let Some((mut pkt, line, leaves_ns)) = handed.filter(|h| h.2 <= self.end_ns) {
            let hop = pkt.hop;
            self.enter_line(&mut pkt, line, hop, leaves_ns);
        }
    }
}

/// The line a packet leaving a queue enters, if it may enter it before its
/// transmission ends: a line follows, and it is lossless (a lossy line draws
/// its random numbers in entry order, which early entries would change).
#[inline(always)]
fn early_line(routes: &Routes, lines: &Lines, pkt: &Packet) -> Option<Stage> {
    match routes.stage(pkt.route, pkt.hop) {
        Some(line @ (Stage::Line(d) | Stage::SinkLine(d))) if !lines[d as usize].is_lossy() => Some(line),
        _ => None,
    }
}
