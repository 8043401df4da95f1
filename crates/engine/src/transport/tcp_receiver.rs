//! The TCP receiver: cumulative and selective ACKs, delayed ACKs, ECN feedback.
//!
//! References (read in this order):
//! - RFC 5681 §4.2: ACK at least every second full-sized segment, within
//!   500 ms; send an immediate ACK for out-of-order data and for data that
//!   fills a hole.
//! - RFC 2018 §4: the first SACK block reports the most recently received
//!   segment's block; the others repeat the most recently reported blocks.
//! - RFC 7323 §4.3: TS.Recent is taken from the segment that advances the
//!   left edge, so the echoed timestamp measures the RTT of the oldest data
//!   an ACK covers.
//! - RFC 3168 §6.1.3 (classic ECE latch until CWR); RFC 8257 §3.2 (DCTCP:
//!   ECE mirrors CE, with an immediate ACK when the CE state changes);
//!   draft-ietf-tcpm-accurate-ecn §3.2 (cumulative CE counter).

use super::endpoint::Outbox;
use super::{ack_size_bytes, payload_of, Feedback, TcpConfig, SYN_BYTES};
use crate::packet::{flags, Ecn, Packet, PacketKind, SackBlock, MAX_SACK_BLOCKS};

#[derive(Debug, Clone, Copy)]
struct OooRange {
    start: u64,
    end: u64,
    /// When this block last grew (RFC 2018 recency order).
    touched: u64,
}

#[derive(Debug, Clone)]
pub struct TcpReceiver {
    pub flow: u32,
    rcv_nxt: u64,
    ooo: Vec<OooRange>,
    touch_clock: u64,
    total_bytes: Option<u64>,
    total_segs: Option<u64>,
    mss: u32,
    header_bytes: u32,
    delayed_ack: bool,
    delack_count: u32,
    delack_timeout_ns: u64,
    accept_ecn: bool,
    feedback: Feedback,
    /// RFC 3168: ECE latched until CWR.
    ece_latched: bool,
    /// RFC 8257: CE state of the last data segment.
    ce_state: bool,
    /// Data packets received with CE (AccECN r.cep).
    ce_count: u32,
    /// Full segments received since the last ACK.
    pending: u32,
    delack_deadline_ns: Option<u64>,
    ts_recent: u64,
    established: bool,
    completed_ns: Option<u64>,
    /// Data segments received (duplicates included).
    pub segs_received: u64,
    pub ce_received: u64,
    pub acks_sent: u64,
}

impl TcpReceiver {
    pub fn new(flow: u32, cfg: &TcpConfig, total_bytes: Option<u64>) -> Self {
        let mss = cfg.mss_bytes();
        TcpReceiver {
            flow,
            rcv_nxt: 0,
            ooo: Vec::new(),
            touch_clock: 0,
            total_bytes,
            total_segs: total_bytes.map(|b| super::segments_for(b, mss)),
            mss,
            header_bytes: cfg.header_bytes,
            delayed_ack: cfg.delayed_ack,
            delack_count: cfg.delack_count,
            delack_timeout_ns: cfg.delack_timeout_ns,
            accept_ecn: cfg.receiver_ecn,
            feedback: Feedback::None,
            ece_latched: false,
            ce_state: false,
            ce_count: 0,
            pending: 0,
            delack_deadline_ns: None,
            ts_recent: 0,
            established: false,
            completed_ns: None,
            segs_received: 0,
            ce_received: 0,
            acks_sent: 0,
        }
    }

    /// In-order payload bytes delivered to the application.
    pub fn delivered_bytes(&self) -> u64 {
        let b = self.rcv_nxt * self.mss as u64;
        self.total_bytes.map_or(b, |t| b.min(t))
    }
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }
    /// When the last byte of a finite flow arrived.
    pub fn completed_ns(&self) -> Option<u64> {
        self.completed_ns
    }
    pub fn next_wakeup_ns(&self) -> Option<u64> {
        self.delack_deadline_ns
    }

    pub fn on_timer(&mut self, now_ns: u64, out: &mut impl Outbox) {
        if let Some(d) = self.delack_deadline_ns.filter(|&d| d <= now_ns) {
            self.send_ack(d, out);
        }
    }

    /// Handle an arriving packet. Emitted packets carry their departure time
    /// in `enq_ns`. The world may call this ahead of real time (the receiver
    /// only feeds a pure-delay path), so a delayed-ACK deadline that falls
    /// before this arrival is served first, at its own time.
    #[inline]
    pub fn on_packet(&mut self, now_ns: u64, pkt: &Packet, out: &mut impl Outbox) {
        self.on_timer(now_ns, out);
        match pkt.kind {
            PacketKind::Syn => self.on_syn(now_ns, pkt, out),
            PacketKind::Data => self.on_data(now_ns, pkt, out),
            _ => {}
        }
    }

    /// Reply to a (possibly repeated) SYN, accepting ECN if asked and allowed.
    #[cold]
    fn on_syn(&mut self, now_ns: u64, syn: &Packet, out: &mut impl Outbox) {
        let wants_ecn = syn.has_flag(flags::ECE) && syn.has_flag(flags::CWR);
        self.feedback = match (self.accept_ecn && wants_ecn, syn.has_flag(flags::AE)) {
            (false, _) => Feedback::None,
            (true, false) => Feedback::Classic,
            (true, true) => Feedback::Accurate,
        };
        let mut p = Packet::new(PacketKind::SynAck, self.flow, SYN_BYTES);
        p.ts_ns = syn.ts_ns;
        p.enq_ns = now_ns;
        p.flags = match self.feedback {
            Feedback::None => 0,
            // RFC 3168 §6.1.1: an ECN-setup SYN-ACK has ECE set and CWR clear.
            Feedback::Classic => flags::ECE,
            Feedback::Accurate => flags::ECE | flags::AE,
        };
        out.push(p);
    }

    fn on_data(&mut self, now_ns: u64, pkt: &Packet, out: &mut impl Outbox) {
        self.established = true;
        self.segs_received += 1;
        let is_ce = pkt.ecn == Ecn::Ce;
        if is_ce {
            self.ce_received += 1;
        }
        match self.feedback {
            Feedback::None => {}
            Feedback::Classic => {
                // RFC 3168 §6.1.3: CWR ends the latch; a CE (even on the same packet) restarts it.
                if pkt.has_flag(flags::CWR) {
                    self.ece_latched = false;
                }
                if is_ce {
                    self.ece_latched = true;
                }
            }
            Feedback::Accurate => {
                if is_ce != self.ce_state {
                    // RFC 8257 §3.2: acknowledge what came before with the old
                    // state, so the sender can attribute marks exactly.
                    if self.pending > 0 {
                        self.send_ack(now_ns, out);
                    }
                    self.ce_state = is_ce;
                }
                if is_ce {
                    self.ce_count = self.ce_count.wrapping_add(1);
                }
            }
        }

        let seq = pkt.seq;
        let had_holes = !self.ooo.is_empty();
        let mut immediate;
        if seq == self.rcv_nxt {
            if self.pending == 0 {
                // RFC 7323 §4.3: echo the oldest unacknowledged in-order segment.
                self.ts_recent = pkt.ts_ns;
            }
            self.rcv_nxt += 1;
            // Pull in buffered out-of-order data.
            if let Some(i) = self.ooo.iter().position(|r| r.start == self.rcv_nxt) {
                self.rcv_nxt = self.ooo[i].end;
                self.ooo.swap_remove(i);
                self.ts_recent = pkt.ts_ns;
            }
            immediate = had_holes;
        } else if seq > self.rcv_nxt {
            self.insert_ooo(seq);
            immediate = true;
        } else {
            // Duplicate (spurious retransmission): ACK at once (RFC 5681 §4.2).
            immediate = true;
        }

        let done = self.total_segs.is_some_and(|t| self.rcv_nxt >= t);
        if done && self.completed_ns.is_none() {
            self.completed_ns = Some(now_ns);
        }
        let full = payload_of(seq, self.mss, self.total_bytes) == self.mss;
        if full {
            self.pending += 1;
        } else {
            immediate = true; // a short (last) segment is pushed: ACK at once
        }
        if immediate || done || !self.delayed_ack || self.pending >= self.delack_count {
            self.send_ack(now_ns, out);
        } else if self.delack_deadline_ns.is_none() {
            self.delack_deadline_ns = Some(now_ns + self.delack_timeout_ns);
        }
    }

    fn insert_ooo(&mut self, seq: u64) {
        self.touch_clock += 1;
        let t = self.touch_clock;
        // Extend a neighbouring block, merging two if the segment bridges them.
        let below = self.ooo.iter().position(|r| r.end == seq);
        let above = self.ooo.iter().position(|r| r.start == seq + 1);
        match (below, above) {
            (Some(b), Some(a)) => {
                self.ooo[b].end = self.ooo[a].end;
                self.ooo[b].touched = t;
                self.ooo.swap_remove(a);
            }
            (Some(b), None) => {
                self.ooo[b].end = seq + 1;
                self.ooo[b].touched = t;
            }
            (None, Some(a)) => {
                self.ooo[a].start = seq;
                self.ooo[a].touched = t;
            }
            (None, None) => {
                if self.ooo.iter().any(|r| r.start <= seq && seq < r.end) {
                    return; // duplicate of buffered data
                }
                self.ooo.push(OooRange { start: seq, end: seq + 1, touched: t });
            }
        }
    }

    /// Always inlined: as a call, its entry and exit (the register saves)
    /// were 18 of the 108 instructions an ACK cost (A-10-ack1, callgrind;
    /// docs/performance.md).
    #[inline(always)]
    fn send_ack(&mut self, at_ns: u64, out: &mut impl Outbox) {
        // Only the rare ACK with SACK blocks is built in memory: the common
        // one stays in registers until `out` stores it where it goes (see
        // `Outbox`).
        if self.ooo.is_empty() {
            out.push(self.ack(at_ns));
        } else {
            out.push(self.ack_with_sack_blocks(at_ns));
        }
        self.pending = 0;
        self.delack_deadline_ns = None;
        self.acks_sent += 1;
    }

    /// An ACK leaving at `at_ns`, without SACK blocks.
    #[inline(always)]
    fn ack(&self, at_ns: u64) -> Packet {
        let mut p = Packet::new(PacketKind::Ack, self.flow, ack_size_bytes(self.header_bytes, 0));
        p.enq_ns = at_ns;
        p.seq = self.rcv_nxt;
        p.ts_ns = self.ts_recent;
        let ece = match self.feedback {
            Feedback::None => false,
            Feedback::Classic => self.ece_latched,
            Feedback::Accurate => self.ce_state,
        };
        if ece {
            p.flags |= flags::ECE;
        }
        p.aux = self.ce_count;
        p
    }

    /// RFC 2018 §4: the most recently changed blocks first.
    #[inline(never)]
    fn ack_with_sack_blocks(&self, at_ns: u64) -> Packet {
        let mut p = self.ack(at_ns);
        let n = self.ooo.len().min(MAX_SACK_BLOCKS);
        let mut order: [(u64, usize); MAX_SACK_BLOCKS] = [(0, usize::MAX); MAX_SACK_BLOCKS];
        for (i, r) in self.ooo.iter().enumerate() {
            // Keep the n most recently touched (tiny insertion sort).
            let mut k = MAX_SACK_BLOCKS;
            while k > 0 && (order[k - 1].1 == usize::MAX || order[k - 1].0 < r.touched) {
                k -= 1;
            }
            if k < MAX_SACK_BLOCKS {
                order.copy_within(k..MAX_SACK_BLOCKS - 1, k + 1);
                order[k] = (r.touched, i);
            }
        }
        for (slot, &(_, i)) in order.iter().take(n).enumerate() {
            let r = self.ooo[i];
            let len = (r.end - r.start).min(u16::MAX as u64) as u16;
            p.set_sack_block(slot, SackBlock { start_off: (r.start - self.rcv_nxt) as u32, len });
        }
        p.size_bytes = ack_size_bytes(self.header_bytes, n);
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(seq: u64, ecn: Ecn) -> Packet {
        let mut p = Packet::new(PacketKind::Data, 0, 1500);
        p.seq = seq;
        p.ts_ns = 1000 + seq;
        p.ecn = ecn;
        p
    }

    fn rx(feedback: Feedback) -> TcpReceiver {
        let mut r = TcpReceiver::new(0, &TcpConfig::default(), None);
        r.feedback = feedback;
        r
    }

    #[test]
    fn delayed_acks_every_second_segment_and_timer_for_the_odd_one() {
        let mut r = rx(Feedback::None);
        let mut out = vec![];
        r.on_packet(0, &data(0, Ecn::NotEct), &mut out);
        assert!(out.is_empty());
        assert_eq!(r.next_wakeup_ns(), Some(40_000_000));
        r.on_packet(1, &data(1, Ecn::NotEct), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].seq, 2);
        assert_eq!(out[0].ts_ns, 1000, "TSecr echoes the older segment of the pair");
        r.on_packet(2, &data(2, Ecn::NotEct), &mut out);
        r.on_timer(40_000_002, &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(out[1].seq, 3);
    }

    #[test]
    fn out_of_order_data_is_acked_at_once_with_sack_blocks_most_recent_first() {
        let mut r = rx(Feedback::None);
        let mut out = vec![];
        r.on_packet(0, &data(0, Ecn::NotEct), &mut out);
        r.on_packet(0, &data(2, Ecn::NotEct), &mut out); // hole at 1
        r.on_packet(0, &data(5, Ecn::NotEct), &mut out); // hole at 3,4
        r.on_packet(0, &data(3, Ecn::NotEct), &mut out); // extends block [2,3)
        let last = out.last().unwrap();
        assert_eq!(last.seq, 1);
        assert_eq!(last.sack_block(0), SackBlock { start_off: 1, len: 2 }); // [2,4)
        assert_eq!(last.sack_block(1), SackBlock { start_off: 4, len: 1 }); // [5,6)
        assert_eq!(last.size_bytes, ack_size_bytes(52, 2));
        // Filling the hole is acked at once and pulls in the first block.
        r.on_packet(0, &data(1, Ecn::NotEct), &mut out);
        assert_eq!(out.last().unwrap().seq, 4);
    }

    #[test]
    fn classic_ece_latches_until_cwr() {
        let mut r = rx(Feedback::Classic);
        r.delayed_ack = false;
        let mut out = vec![];
        r.on_packet(0, &data(0, Ecn::Ce), &mut out);
        r.on_packet(0, &data(1, Ecn::Ect0), &mut out);
        let mut cwr = data(2, Ecn::Ect0);
        cwr.flags |= flags::CWR;
        r.on_packet(0, &cwr, &mut out);
        let ece: Vec<bool> = out.iter().map(|p| p.has_flag(flags::ECE)).collect();
        assert_eq!(ece, vec![true, true, false]);
    }

    #[test]
    fn dctcp_receiver_acks_immediately_when_ce_state_changes() {
        let mut r = rx(Feedback::Accurate);
        let mut out = vec![];
        r.on_packet(0, &data(0, Ecn::Ect1), &mut out); // pending 1, no ACK yet
        r.on_packet(0, &data(1, Ecn::Ce), &mut out); // state flips: ACK seq 1 with ECE=0 first
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].seq, out[0].has_flag(flags::ECE)), (1, false));
        r.on_packet(0, &data(2, Ecn::Ce), &mut out); // second CE segment: delayed ACK fires
        assert_eq!(out.len(), 2);
        assert_eq!((out[1].seq, out[1].has_flag(flags::ECE), out[1].aux), (3, true, 2));
    }
}
