//! The per-packet steps of two shortcuts (see `net::link`'s module docs).
//! Departure lookahead: a packet's admission, with its departure time known
//! on arrival, and the settling of the transmissions that have started
//! since. Early hand-off: a starting packet leaves the queue at once, and
//! the end of its transmission runs as an event only while packets wait.

use super::{Link, QueueSlot, Waiting};
use crate::aqm::{FlowQueueCounters, Qdisc, QdiscCtx};
use crate::net::sojourn_log::SojournLog;
use crate::packet::Packet;

impl Link {
    /// Turn departure lookahead on where it is exact (see `net::link`):
    /// the discipline decides on arrival, and the link neither changes rate
    /// (`has_rate_schedule`) nor loses or marks at random.
    pub fn enable_departure_lookahead(&mut self, has_rate_schedule: bool) {
        let fixed = !has_rate_schedule && !self.loses_or_marks();
        if let Some(q) = &mut self.queue {
            q.departure_lookahead = fixed && q.qdisc.decides_on_arrival();
            if q.departure_lookahead {
                q.qdisc.release_packet_storage();
            }
        }
    }

    /// Turn early hand-off on where it is exact (see `net::link`): a
    /// queue without departure lookahead whose link neither shares a medium
    /// nor loses or marks at random, and whose discipline sends nothing to
    /// sources (their feedback leaves at the end of a transmission).
    pub fn enable_early_hand_off(&mut self) {
        if let Some(q) = &mut self.queue {
            q.hands_on_early = !q.departure_lookahead && !q.on_medium && !q.link_random && !q.notifies_sources;
        }
    }
}

impl QueueSlot {
    /// Departure lookahead: admit `pkt` (perhaps marking it) and return the
    /// time its transmission ends (when it leaves the link), or None if dropped.
    #[inline]
    pub fn arrive_ahead(
        &mut self,
        now_ns: u64,
        pkt: &mut Packet,
        flow_counters: &mut [FlowQueueCounters],
        log: &mut SojournLog,
        index: u32,
    ) -> Option<u64> {
        debug_assert!(self.departure_lookahead);
        self.start_due(now_ns, log, index);
        // `pkt.enq_ns` is not set: the packet leaves at once, and the line it
        // enters stamps its own time there (a store here would stall that
        // copy, see `World::enter_line`); the waiting record keeps `now_ns`.
        if let Some(cap) = self.capture.as_deref_mut().filter(|c| c.at_enqueue) {
            cap.record(now_ns, pkt);
        }
        // No feedback buffer: a discipline that decides on arrival sends none.
        let mut ctx = QdiscCtx::new(now_ns, &mut self.rng, &mut self.counters, flow_counters).with_capture(self.capture.as_deref_mut().map(|c| &mut c.drops));
        if !self.qdisc.classify_and_admit(pkt, self.waiting.len(), self.waiting_bytes, &mut ctx) {
            return None;
        }
        // Transmissions run back to back in arrival order, so this packet
        // starts when the last accepted one ends (or now, if that is past).
        let tx_ns = self.tx.frame_ns(pkt.size_bytes);
        let start_ns = self.free_at_ns.max(now_ns);
        if let Some(cap) = self.capture.as_deref_mut().filter(|c| !c.at_enqueue) {
            cap.record(start_ns, pkt); // its dequeue time, known now (see the module docs)
        }
        self.free_at_ns = start_ns + tx_ns;
        let w = Waiting::of(pkt, start_ns, now_ns, tx_ns);
        if start_ns == now_ns {
            self.record_start(&w, tx_ns, Some((log, index)));
        } else {
            self.waiting_bytes += w.size_bytes as u64;
            // The oldest waiting packet's start: this one's if none waits
            // (`next_start_ns` is u64::MAX then), else the front's, which
            // starts earlier. A select, where a test on the ring's length
            // went either way (0.19 mispredicted branches a hop of D).
            self.next_start_ns = self.next_start_ns.min(w.start_ns);
            self.waiting.push_back(w);
        }
        Some(start_ns + tx_ns)
    }

    /// Departure lookahead: settle the transmissions that have started by
    /// `now_ns` (at the same nanosecond a transmission starts before an
    /// arrival is seen, as a finishing transmission runs first without it).
    #[inline(always)]
    pub fn start_due(&mut self, now_ns: u64, log: &mut SojournLog, index: u32) {
        while self.next_start_ns <= now_ns {
            let w = self.waiting.pop_front().expect("a front exists");
            // Its transmission ends where the next one starts, or the last
            // one's where the transmitter falls free (see `Waiting`).
            let ends_ns;
            (self.next_start_ns, ends_ns) = match self.waiting.front() {
                Some(n) => (n.start_ns, n.start_ns),
                None => {
                    self.waiting.rewind(); // emptied: reuse its first slots
                    (u64::MAX, self.free_at_ns)
                }
            };
            let tx_ns = ends_ns - w.start_ns;
            #[cfg(debug_assertions)]
            debug_assert_eq!(tx_ns, w.tx_ns, "a waiting packet's transmission does not end where the next starts");
            self.waiting_bytes -= w.size_bytes as u64;
            self.record_start(&w, tx_ns, Some((&mut *log, index)));
        }
    }

    /// Early hand-off: a transmission has started (`start_tx`) and ends at
    /// `end_ns`; until it has run, the queue is sending even once its
    /// packet has left.
    #[inline(always)]
    pub fn sending_until(&mut self, end_ns: u64) {
        debug_assert!(self.hands_on_early && !self.sending);
        self.sending = true;
        self.free_at_ns = end_ns;
    }

    /// Early hand-off: `pkt` arrives at an idle queue whose discipline holds
    /// no packet. The discipline takes it and gives it back at once
    /// ([`Qdisc::pass_through`], the same as `arrive` then `start_tx`), and
    /// its transmission starts; returns it, not on the wire, with the end of
    /// its transmission ([`Self::put_on_wire`] if it cannot be handed on).
    /// None if the discipline dropped it.
    #[inline]
    pub fn pass_through(&mut self, now_ns: u64, mut pkt: Packet, flow_counters: &mut [FlowQueueCounters]) -> Option<(Packet, u64)> {
        debug_assert!(self.hands_on_early && !self.is_sending() && self.qdisc.len_pkts() == 0);
        pkt.enq_ns = now_ns;
        if let Some(cap) = self.capture.as_deref_mut().filter(|c| c.at_enqueue) {
            cap.record(now_ns, &pkt);
        }
        let (qdisc, mut ctx) = self.qdisc_and_ctx(now_ns, flow_counters);
        let pkt = qdisc.classify_and_pass_through(pkt, &mut ctx)?;
        let done = self.begin_tx(now_ns, &pkt, 0, 0);
        self.sending_until(done);
        Some((pkt, done))
    }

    /// Early hand-off: a packet [`Self::pass_through`] returned stays on the
    /// wire until the end of its transmission, which runs as an event (the
    /// caller schedules it at `free_at_ns`).
    #[inline]
    pub fn put_on_wire(&mut self, pkt: Packet) {
        debug_assert!(self.sending && self.in_tx.0.is_none());
        self.in_tx.0 = Some(pkt);
        self.arm_tx_end();
    }

    /// Early hand-off: the packet on the wire leaves the queue now, its
    /// transmission still running until `free_at_ns`.
    #[inline]
    pub fn hand_on(&mut self) -> Packet {
        debug_assert!(self.hands_on_early);
        self.in_tx.0.take().expect("a packet was in transmission")
    }

    /// Early hand-off: the end-of-transmission event runs; the packet on the
    /// wire if it was not handed on.
    #[inline]
    pub fn end_tx(&mut self) -> Option<Packet> {
        debug_assert!(self.hands_on_early && self.sending && self.tx_done_armed);
        self.tx_done_armed = false;
        self.sending = false;
        self.in_tx.0.take()
    }

    /// Early hand-off: the running transmission's end will run as an event
    /// (the caller schedules it at `free_at_ns`).
    #[inline]
    pub fn arm_tx_end(&mut self) {
        debug_assert!(self.sending && !self.tx_done_armed);
        self.tx_done_armed = true;
    }

    /// Early hand-off: a transmission whose packet was handed on needs its
    /// end to run as an event once packets wait for it; returns its time
    /// the first time only, to be scheduled.
    #[inline]
    pub fn arm_if_waiting(&mut self) -> Option<u64> {
        let needed = self.sending && !self.tx_done_armed && self.qdisc.len_pkts() > 0;
        debug_assert!(!self.sending || self.tx_done_armed || self.in_tx.0.is_none());
        self.tx_done_armed |= needed;
        needed.then_some(self.free_at_ns)
    }

    /// Early hand-off: run the end of a transmission that has no event, if
    /// it is due (see `net::link`): the discipline, empty, dequeues at
    /// that time, exactly as the event would have had it do.
    #[inline]
    pub fn settle_tx_end(&mut self, now_ns: u64, flow_counters: &mut [FlowQueueCounters]) {
        if self.sending && !self.tx_done_armed && self.free_at_ns <= now_ns {
            self.dequeue_emptied(flow_counters);
        }
    }

    /// Out of line: it holds a copy of the discipline's dispatch
    /// (`AnyQdisc::dequeue`, always inlined), which at every call site
    /// would grow the code each hop runs.
    #[inline(never)]
    fn dequeue_emptied(&mut self, flow_counters: &mut [FlowQueueCounters]) {
        debug_assert!(self.hands_on_early && self.in_tx.0.is_none());
        self.sending = false;
        let (qdisc, mut ctx) = self.qdisc_and_ctx(self.free_at_ns, flow_counters);
        let none = qdisc.dequeue(&mut ctx);
        assert!(none.is_none(), "queue discipline '{}' had no packets but dequeued one", self.aqm_name);
    }
}
