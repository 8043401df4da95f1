//! The TCP sender: handshake with ECN negotiation, SACK loss recovery, RTO,
//! ECN reaction, optional pacing. Window decisions belong to the
//! [`CongestionControl`](crate::cc::CongestionControl).
//!
//! References (read in this order):
//! - RFC 9293 §3.5 (handshake); RFC 3168 §6.1.1 (ECN-setup SYN: ECE+CWR;
//!   SYN itself Not-ECT) and §6.1.2 (react to ECE at most once per window,
//!   set CWR on the next new segment; retransmissions are Not-ECT).
//! - RFC 6675 §5 (SACK-based loss recovery; recovery point = HighData),
//!   with the scoreboard in [`super::scoreboard`].
//! - RFC 6298 §5 (RTO management: start on send, restart on new ACK, stop
//!   when all is acknowledged, back off on expiry) and RFC 5681 §3.1 (loss window).
//! - RFC 6928 (IW10) via the controller's initial window.
//!
//! Sequence numbers count segments; payload sizes follow from the flow size.

use super::rate::RateSampler;
use super::rtt::RttEstimator;
use super::scoreboard::{Scoreboard, SegState};
use super::{payload_of, segments_for, EcnSetting, Feedback, TcpConfig, SYN_BYTES};
use crate::cc::{AckEvent, AnyCc, CongestionControl, CongestionEvent, CongestionKind, Established};
use crate::packet::{flags, Ecn, Packet, PacketKind};
use crate::sim::{tx_time_ns, NS_PER_SEC};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SenderState {
    /// Before the flow's start time.
    Waiting,
    SynSent,
    Established,
    /// A finite flow whose every byte is acknowledged.
    Finished,
}

/// What a sender did, for the flow table.
#[derive(Debug, Clone, Copy, Default)]
pub struct SenderStats {
    pub segs_sent: u64,
    pub bytes_sent: u64,
    pub retransmits: u64,
    pub rtos: u64,
    pub fast_recoveries: u64,
    pub ecn_reductions: u64,
    /// ACKs that reached the sender (the ACK loss of a path is ack drops over drops + these).
    pub acks_received: u64,
    pub syn_retries: u32,
    /// SYNs sent and SYN-ACKs that reached the sender: with the data and
    /// ACK counts, every packet of the connection is counted at both ends
    /// (a finished flow's retirement reads them, `world::retire`).
    pub syns_sent: u32,
    pub syn_acks_received: u32,
    pub established_ns: Option<u64>,
    pub finished_ns: Option<u64>,
}

/// How a sender is set up.
#[derive(Debug, Clone)]
pub struct SenderSpec {
    pub flow: u32,
    pub cc: AnyCc,
    pub ecn: EcnSetting,
    pub start_ns: u64,
    pub stop_ns: Option<u64>,
    pub total_bytes: Option<u64>,
}

#[derive(Debug, Clone)]
pub struct TcpSender {
    pub flow: u32,
    pub cc: AnyCc,
    rtt: RttEstimator,
    sb: Scoreboard,
    state: SenderState,
    ecn: EcnSetting,
    feedback: Feedback,
    data_ecn: Ecn,
    mss: u32,
    header_bytes: u32,
    dupthresh: u32,
    total_bytes: Option<u64>,
    total_segs: Option<u64>,
    start_ns: u64,
    stop_ns: Option<u64>,
    rwnd_segs: u32,
    /// The last RTT sample, until the world reads it (`take_rtt_sample`).
    unread_rtt_sample_ns: Option<u64>,
    // Loss recovery.
    in_recovery: bool,
    in_rto_recovery: bool,
    recovery_point: u64,
    // ECN reaction (RFC 3168 §6.1.2).
    in_cwr: bool,
    cwr_end: u64,
    cwr_pending: bool,
    last_ce_count: u32,
    // Timers.
    rto_deadline_ns: Option<u64>,
    backoff: u32,
    // Pacing.
    pacing: bool,
    pacing_ss_ratio: f64,
    pacing_ca_ratio: f64,
    pacing_next_ns: u64,
    pace_blocked: bool,
    cwnd_limited: bool,
    // Delivery accounting (for rate samples and invariants).
    delivered: u64,
    /// Delivery-rate sampling, only for controllers that ask for it (BBRv2);
    /// boxed so that the other senders' records do not carry its 150 bytes.
    rate: Option<Box<RateSampler>>,
    pub stats: SenderStats,
}

impl TcpSender {
    pub fn new(spec: SenderSpec, cfg: &TcpConfig) -> Self {
        let mss = cfg.mss_bytes();
        let rate = spec.cc.wants_rate_samples().then(|| Box::new(RateSampler::new()));
        TcpSender {
            flow: spec.flow,
            cc: spec.cc,
            rtt: RttEstimator::new(cfg.rto_min_ns, cfg.rto_max_ns, cfg.rto_initial_ns),
            sb: Scoreboard::new(),
            state: SenderState::Waiting,
            ecn: spec.ecn,
            feedback: Feedback::None,
            data_ecn: Ecn::NotEct,
            mss,
            header_bytes: cfg.header_bytes,
            dupthresh: cfg.dupthresh,
            total_bytes: spec.total_bytes,
            total_segs: spec.total_bytes.map(|b| segments_for(b, mss)),
            start_ns: spec.start_ns,
            stop_ns: spec.stop_ns,
            rwnd_segs: cfg.rwnd_bytes.map_or(u32::MAX, |b| (b / mss as u64).clamp(1, u32::MAX as u64) as u32),
            unread_rtt_sample_ns: None,
            in_recovery: false,
            in_rto_recovery: false,
            recovery_point: 0,
            in_cwr: false,
            cwr_end: 0,
            cwr_pending: false,
            last_ce_count: 0,
            rto_deadline_ns: None,
            backoff: 0,
            pacing: cfg.pacing,
            pacing_ss_ratio: cfg.pacing_ss_ratio,
            pacing_ca_ratio: cfg.pacing_ca_ratio,
            pacing_next_ns: 0,
            pace_blocked: false,
            cwnd_limited: true,
            delivered: 0,
            rate,
            stats: SenderStats::default(),
        }
    }

    /// Slots of the scoreboard's segment ring (tests: a finished sender's is 0).
    #[cfg(test)]
    pub(crate) fn segment_capacity(&self) -> usize {
        self.sb.segment_capacity()
    }

    pub fn state(&self) -> SenderState {
        self.state
    }
    /// The RTT sample of the last ACK, if it gave one and nobody read it yet
    /// (for `metrics.rtt_histogram`).
    #[inline]
    pub fn take_rtt_sample(&mut self) -> Option<u64> {
        self.unread_rtt_sample_ns.take()
    }

    pub fn srtt_ns(&self) -> u64 {
        self.rtt.srtt_ns()
    }
    pub fn latest_rtt_ns(&self) -> u64 {
        self.rtt.latest_ns()
    }
    pub fn min_rtt_ns(&self) -> u64 {
        self.rtt.min_rtt_ns()
    }
    pub fn cwnd(&self) -> u32 {
        self.cc.cwnd()
    }
    pub fn ssthresh(&self) -> u32 {
        self.cc.ssthresh()
    }
    pub fn in_flight(&self) -> u32 {
        self.sb.pipe()
    }
    pub fn snd_una(&self) -> u64 {
        self.sb.una()
    }
    pub fn snd_nxt(&self) -> u64 {
        self.sb.nxt()
    }
    pub fn feedback(&self) -> Feedback {
        self.feedback
    }
    /// Payload bytes the receiver has acknowledged cumulatively.
    pub fn acked_bytes(&self) -> u64 {
        let b = self.sb.una() * self.mss as u64;
        self.total_bytes.map_or(b, |t| b.min(t))
    }
    pub fn check_invariants(&self) -> Result<(), String> {
        self.sb.check_invariants()
    }
    /// Prefetch the state an ACK touches outside this record.
    #[inline(always)]
    pub fn prefetch_heap_state(&self) {
        self.sb.prefetch_ends();
    }

    /// The earliest time this sender needs to run again without a packet arriving.
    #[inline]
    pub fn next_wakeup_ns(&self) -> Option<u64> {
        match self.state {
            SenderState::Waiting => Some(self.start_ns),
            SenderState::Finished => None,
            // Pacing holds nothing back on most calls: the RTO alone.
            _ if !self.pace_blocked => self.rto_deadline_ns,
            _ => Some(self.rto_deadline_ns.map_or(self.pacing_next_ns, |a| a.min(self.pacing_next_ns))),
        }
    }

    pub fn on_timer(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        if self.state == SenderState::Waiting {
            if now_ns >= self.start_ns {
                self.send_syn(now_ns, out);
            }
            return;
        }
        if self.rto_deadline_ns.is_some_and(|d| d <= now_ns) {
            self.on_rto(now_ns, out);
        } else if self.pace_blocked && now_ns >= self.pacing_next_ns {
            self.try_send(now_ns, out);
        }
    }

    /// Always inlined, as is `on_ack`: the world's delivery is the one
    /// caller on the per-packet path, and a call here cost every ACK its
    /// register saves (A-10-ack1: 17 instructions per packet, callgrind,
    /// docs/performance.md).
    #[inline(always)]
    pub fn on_packet(&mut self, now_ns: u64, pkt: &Packet, out: &mut Vec<Packet>) {
        match pkt.kind {
            PacketKind::SynAck => self.on_syn_ack(now_ns, pkt, out),
            PacketKind::Ack => {
                self.stats.acks_received += 1;
                self.on_ack(now_ns, pkt, out)
            }
            _ => {}
        }
    }

    fn send_syn(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        let mut syn = Packet::new(PacketKind::Syn, self.flow, SYN_BYTES);
        syn.ts_ns = now_ns;
        syn.enq_ns = now_ns;
        // RFC 3168 §6.1.1: ECN-setup SYN has ECE and CWR; AccECN adds AE.
        syn.flags = match self.ecn.feedback() {
            Feedback::None => 0,
            Feedback::Classic => flags::ECE | flags::CWR,
            Feedback::Accurate => flags::ECE | flags::CWR | flags::AE,
        };
        out.push(syn);
        self.stats.syns_sent += 1;
        self.state = SenderState::SynSent;
        self.rto_deadline_ns = Some(now_ns + self.rtt.backed_off_rto_ns(self.backoff));
    }

    fn on_syn_ack(&mut self, now_ns: u64, pkt: &Packet, out: &mut Vec<Packet>) {
        self.stats.syn_acks_received += 1;
        if self.state != SenderState::SynSent {
            return;
        }
        self.feedback = match (self.ecn.feedback(), pkt.has_flag(flags::ECE), pkt.has_flag(flags::AE)) {
            (Feedback::None, _, _) | (_, false, _) => Feedback::None,
            (Feedback::Accurate, true, true) => Feedback::Accurate,
            // A classic-only peer: fall back to RFC 3168 feedback.
            (_, true, _) => Feedback::Classic,
        };
        self.data_ecn = if self.feedback == Feedback::None { Ecn::NotEct } else { self.ecn.codepoint() };
        // The SYN-ACK echoes the SYN's timestamp: a valid RTT sample (RFC 7323).
        self.rtt.on_sample(now_ns.saturating_sub(pkt.ts_ns));
        self.backoff = 0;
        self.rto_deadline_ns = None;
        self.state = SenderState::Established;
        self.stats.established_ns = Some(now_ns);
        self.cc.on_established(&Established {
            now_ns,
            srtt_ns: self.rtt.srtt_ns(),
            segment_bytes: self.mss + self.header_bytes,
            accurate_ecn: self.feedback == Feedback::Accurate,
        });
        self.try_send(now_ns, out);
    }

    fn on_rto(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        self.backoff += 1;
        match self.state {
            SenderState::SynSent => {
                self.stats.syn_retries += 1;
                self.send_syn(now_ns, out);
            }
            SenderState::Established if self.sb.outstanding() > 0 => {
                self.stats.rtos += 1;
                // A timeout inside a recovery episode does not reduce ssthresh
                // again (Linux tcp_enter_loss keeps the episode's ssthresh).
                let already_reduced = self.in_recovery || self.in_rto_recovery;
                self.cc.on_rto(now_ns, self.flight_size(), already_reduced);
                let newly_lost = self.sb.mark_all_lost();
                if let Some(r) = &mut self.rate {
                    r.on_lost(newly_lost);
                }
                self.in_recovery = false;
                self.in_cwr = false;
                self.in_rto_recovery = true;
                self.recovery_point = self.sb.nxt();
                self.cwr_pending = self.feedback == Feedback::Classic;
                self.rto_deadline_ns = Some(now_ns + self.rtt.backed_off_rto_ns(self.backoff));
                self.try_send(now_ns, out);
            }
            _ => self.rto_deadline_ns = None,
        }
    }

    #[inline(always)] // see `on_packet`
    fn on_ack(&mut self, now_ns: u64, ack: &Packet, out: &mut Vec<Packet>) {
        if self.state != SenderState::Established {
            return;
        }
        let ack_seq = ack.seq.min(self.sb.nxt());
        let rate = &mut self.rate;
        // Two instances: without a rate sampler the callback is empty and the
        // scoreboard drops the acknowledged segments without visiting them.
        let (acked, mut delivered) = match rate.as_deref_mut() {
            None => self.sb.advance_una(ack_seq, |_, _| {}),
            Some(r) => self.sb.advance_una(ack_seq, |seq, st| {
                if st.flags & super::scoreboard::SACKED == 0 {
                    r.on_delivered(seq, now_ns);
                }
            }),
        };
        // RFC 2018 §3: most ACKs carry no SACK option (no hole at the
        // receiver); one test on all block lengths skips the per-block loop.
        let any_sack = (0..crate::packet::MAX_SACK_BLOCKS).fold(0, |a, i| a | ack.sack_block(i).len);
        if any_sack != 0 {
            for i in 0..crate::packet::MAX_SACK_BLOCKS {
                let b = ack.sack_block(i);
                if b.len > 0 {
                    let s = ack_seq + b.start_off as u64;
                    delivered += self.sb.sack(s, s + b.len as u64, |seq, _| {
                        if let Some(r) = rate.as_mut() {
                            r.on_delivered(seq, now_ns);
                        }
                    });
                }
            }
        }
        if let Some(r) = rate.as_mut() {
            r.advance(self.sb.una());
        }
        if delivered > 0 {
            self.delivered += delivered as u64;
        }

        // ECN feedback.
        let ece = ack.has_flag(flags::ECE);
        let ce_segs = if self.feedback == Feedback::Accurate {
            let d = ack.aux.wrapping_sub(self.last_ce_count);
            self.last_ce_count = ack.aux;
            d.min(delivered)
        } else {
            0
        };

        // RFC 7323 RTTM on ACKs that advance the window; RFC 6298 §5.3 timer restart.
        let mut rtt_sample = None;
        if acked > 0 {
            if ack.ts_ns > 0 {
                let r = now_ns.saturating_sub(ack.ts_ns);
                self.rtt.on_sample(r);
                rtt_sample = Some(r);
                self.unread_rtt_sample_ns = Some(r);
            }
            self.backoff = 0;
            self.rto_deadline_ns = (self.sb.outstanding() > 0).then(|| now_ns + self.rtt.rto_ns());
        }

        let una = self.sb.una();
        if self.in_recovery && una >= self.recovery_point {
            self.in_recovery = false;
            self.cc.on_recovery_exit(now_ns);
        }
        if self.in_rto_recovery && una >= self.recovery_point {
            self.in_rto_recovery = false;
            self.cc.on_recovery_exit(now_ns);
        }
        if self.in_cwr && una > self.cwr_end {
            self.in_cwr = false;
        }

        let newly_lost = self.sb.detect_losses(self.dupthresh);
        let lost_retx = self.sb.detect_lost_retransmissions();
        let mut rate_sample = None;
        if let Some(r) = &mut self.rate {
            r.on_lost(newly_lost + lost_retx);
            r.on_ce(ce_segs);
            rate_sample = r.take_sample(now_ns, self.rtt.min_rtt_ns(), newly_lost + lost_retx);
        }
        if newly_lost > 0 && !self.in_recovery && !self.in_rto_recovery {
            // RFC 6675 §5 (4): enter recovery, RecoveryPoint = HighData.
            self.in_recovery = true;
            self.recovery_point = self.sb.nxt();
            self.stats.fast_recoveries += 1;
            self.cc.on_congestion(&CongestionEvent {
                now_ns,
                kind: CongestionKind::Loss,
                in_flight_segs: self.flight_size(),
                srtt_ns: self.rtt.srtt_ns(),
            });
            // One reduction per window covers ECE in the same window too.
            self.in_cwr = true;
            self.cwr_end = self.recovery_point;
            // RFC 3168 §6.1.2: CWR follows a reduction "for any reason".
            self.cwr_pending = self.feedback == Feedback::Classic;
        } else {
            let signal = match self.feedback {
                Feedback::None => false,
                Feedback::Classic => ece,
                Feedback::Accurate => ce_segs > 0 || ece,
            };
            if signal && !self.in_cwr && !self.in_recovery && !self.in_rto_recovery {
                self.stats.ecn_reductions += 1;
                self.cc.on_congestion(&CongestionEvent {
                    now_ns,
                    kind: CongestionKind::Ecn,
                    in_flight_segs: self.flight_size(),
                    srtt_ns: self.rtt.srtt_ns(),
                });
                self.in_cwr = true;
                self.cwr_end = self.sb.nxt();
                self.cwr_pending = self.feedback == Feedback::Classic;
            }
        }

        // Growth pauses in fast recovery and, with classic feedback, for the
        // window after an ECN reduction (Linux's CWR state; the latched ECE
        // says nothing new). With per-packet feedback an ECE ACK acknowledges
        // CE-marked data and grows nothing (RFC 3168 §6.1.2).
        let classic_cwr = self.feedback == Feedback::Classic && self.in_cwr;
        // Built by the controller's dispatch arm, only as far as its
        // `on_ack` reads it (`AnyCc::on_ack_then_window`). The flags are
        // copied in rather than read through `self` (3 instructions per
        // ACK fewer, profile-guided).
        let (rtt, sb, in_recovery, cwnd_limited) = (&self.rtt, &self.sb, self.in_recovery, self.cwnd_limited);
        let ev = || AckEvent {
            now_ns,
            acked_segs: acked,
            delivered_segs: delivered,
            ce_segs,
            ece: ece && self.feedback == Feedback::Accurate,
            rtt_ns: rtt_sample,
            srtt_ns: rtt.srtt_ns(),
            min_rtt_ns: rtt.min_rtt_ns(),
            snd_una: una,
            snd_nxt: sb.nxt(),
            in_flight_segs: sb.pipe(),
            in_recovery: in_recovery || classic_cwr,
            cwnd_limited,
            rate: rate_sample.as_ref(),
        };
        // The window and pacing rate the ACK leaves, from the same dispatch.
        let (cwnd, cc_rate) = self.cc.on_ack_then_window(ev);

        if self.total_segs.is_some_and(|t| una >= t) {
            self.state = SenderState::Finished;
            self.rto_deadline_ns = None;
            self.stats.finished_ns = Some(now_ns);
            self.sb.release_buffers();
            return;
        }
        self.send_burst(now_ns, cwnd, cc_rate, out);
    }

    /// RFC 5681 FlightSize, capped at cwnd: data SACKed or sent beyond the
    /// window during recovery is not "in flight" for the next reduction
    /// (Linux computes ssthresh from cwnd for the same reason).
    fn flight_size(&self) -> u32 {
        self.sb.outstanding().min(self.cc.cwnd())
    }

    #[inline]
    fn has_new_data(&self, now_ns: u64) -> bool {
        self.total_segs.is_none_or(|t| self.sb.nxt() < t) && self.stop_ns.is_none_or(|s| now_ns < s)
    }

    /// Pacing rate: the controller's own (`cc_rate`, its `pacing_rate_bps`),
    /// or cwnd/srtt scaled (Linux `tcp_update_pacing_rate`).
    #[inline]
    fn pacing_rate_bps(&self, cc_rate: Option<u64>) -> Option<u64> {
        if cc_rate.is_some() {
            return cc_rate;
        }
        // Pacing off (the default): decided in the caller, the rate
        // computation stays out of line.
        if !self.pacing {
            return None;
        }
        self.own_pacing_rate_bps()
    }

    #[inline(never)]
    fn own_pacing_rate_bps(&self) -> Option<u64> {
        if !self.rtt.has_sample() {
            return None;
        }
        let cwnd = self.cc.cwnd();
        let ratio = if cwnd < self.cc.ssthresh() / 2 { self.pacing_ss_ratio } else { self.pacing_ca_ratio };
        let bits = cwnd as f64 * (self.mss + self.header_bytes) as f64 * 8.0;
        Some(((ratio * bits * NS_PER_SEC as f64 / self.rtt.srtt_ns().max(1) as f64) as u64).max(1))
    }

    /// Send what the window (RFC 6675 pipe < cwnd), the receive window and
    /// pacing allow: lost segments first (NextSeg rule 1), then new data.
    fn try_send(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        let (cwnd, cc_rate) = (self.cc.cwnd(), self.cc.pacing_rate_bps());
        self.send_burst(now_ns, cwnd, cc_rate, out)
    }

    /// `try_send`'s body, inlined into the ACK path (one call and its
    /// register saves less per ACK); the rarer callers share one copy.
    /// `cwnd` and `cc_rate` are the controller's window and pacing rate now;
    /// they are read once, as sending changes no controller's window
    /// (`on_sent` contract; Prague's pacing rate follows `on_sent`, but only
    /// from the next burst on, as before).
    #[inline(always)]
    fn send_burst(&mut self, now_ns: u64, cwnd: u32, cc_rate: Option<u64>, out: &mut Vec<Packet>) {
        self.pace_blocked = false;
        let pacing_rate = self.pacing_rate_bps(cc_rate);
        let cwnd = cwnd.min(self.rwnd_segs);
        // Each send adds one to pipe (RFC 6675 §4: a new segment is
        // outstanding, a retransmission is counted in RetransOut), so it is
        // counted here rather than recomputed from the scoreboard.
        let mut pipe = self.sb.pipe();
        loop {
            debug_assert_eq!(pipe, self.sb.pipe());
            if pipe >= cwnd {
                self.cwnd_limited = true;
                break;
            }
            if pacing_rate.is_some() && now_ns < self.pacing_next_ns {
                self.pace_blocked = true;
                break;
            }
            let (seq, retx) = if let Some(s) = self.sb.next_retransmit() {
                (s, true)
            } else if self.has_new_data(now_ns) {
                (self.sb.nxt(), false)
            } else {
                self.cwnd_limited = false;
                if let Some(r) = &mut self.rate {
                    r.mark_app_limited(pipe);
                }
                break;
            };
            let size = self.send_segment(now_ns, seq, retx, pipe, out);
            pipe += 1;
            if let Some(rate) = pacing_rate {
                self.pacing_next_ns = self.pacing_next_ns.max(now_ns) + tx_time_ns(size as u64, rate);
            }
        }
        if self.rto_deadline_ns.is_none() && self.sb.outstanding() > 0 {
            // RFC 6298 §5.1.
            self.rto_deadline_ns = Some(now_ns + self.rtt.backed_off_rto_ns(self.backoff));
        }
    }

    /// Send segment `seq` with `pipe` segments in flight before it.
    #[inline(always)]
    fn send_segment(&mut self, now_ns: u64, seq: u64, retx: bool, pipe: u32, out: &mut Vec<Packet>) -> u32 {
        let payload = payload_of(seq, self.mss, self.total_bytes);
        let size = payload + self.header_bytes;
        let mut p = Packet::new(PacketKind::Data, self.flow, size);
        p.seq = seq;
        p.ts_ns = now_ns;
        p.enq_ns = now_ns;
        // RFC 3168 §6.1.5: classic retransmissions are Not-ECT. Accurate-ECN
        // (L4S) senders keep ECT so the packet stays in its queue (RFC 9331 §4.1).
        p.ecn = if retx && self.feedback == Feedback::Classic { Ecn::NotEct } else { self.data_ecn };
        if retx {
            p.flags |= flags::RETX;
        } else if self.cwr_pending {
            p.flags |= flags::CWR;
            self.cwr_pending = false;
        }
        let st = SegState { tx_ns: now_ns, flags: 0 };
        if let Some(r) = &mut self.rate {
            r.on_send(seq, now_ns, pipe);
        }
        if retx {
            self.sb.mark_retransmitted(seq, st);
            self.stats.retransmits += 1;
        } else {
            self.sb.push(st);
        }
        self.stats.segs_sent += 1;
        self.stats.bytes_sent += payload as u64;
        debug_assert_eq!(self.sb.pipe(), pipe + 1);
        self.cc.on_sent(now_ns, pipe + 1);
        out.push(p);
        size
    }
}
