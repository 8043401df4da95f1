//! Departure lookahead's per-packet steps (see `net::link`'s module docs):
//! a packet's admission, with its departure time known on arrival, and the
//! settling of the transmissions that have started since.

use super::{QueueSlot, Waiting};
use crate::aqm::{FlowQueueCounters, QdiscCtx};
use crate::net::sojourn_log::SojournLog;
use crate::packet::Packet;

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
        let tx_ns = self.tx_time(pkt.size_bytes, self.tx_rate_bps);
        let start_ns = self.free_at_ns.max(now_ns);
        if let Some(cap) = self.capture.as_deref_mut().filter(|c| !c.at_enqueue) {
            cap.record(start_ns, pkt); // its dequeue time, known now (see the module docs)
        }
        self.free_at_ns = start_ns + tx_ns;
        let w = Waiting {
            start_ns,
            enq_ns: now_ns,
            tx_ns,
            flow: pkt.flow,
            size_bytes: pkt.size_bytes,
            subq: pkt.subq,
            data: pkt.carries_payload(),
        };
        if start_ns == now_ns {
            self.record_start(&w, Some((log, index)));
        } else {
            self.waiting_bytes += w.size_bytes as u64;
            if self.waiting.is_empty() {
                self.next_start_ns = w.start_ns;
            }
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
            self.next_start_ns = self.waiting.front().map_or(u64::MAX, |n| n.start_ns);
            self.waiting_bytes -= w.size_bytes as u64;
            self.record_start(&w, Some((&mut *log, index)));
        }
    }
}
