//! BBRv2's path model and its controls (tcp_bbr2.c v2alpha): the max-bw
//! filter, BDP and quantisation budget, ACK aggregation, the full-pipe test,
//! DRAIN, the min-RTT filter and PROBE_RTT, gains, pacing rate and cwnd.
use super::{AckPhase, Bbr2, Cycle, Mode, CWND_MIN_TARGET, EXTRA_ACKED_MAX_NS, EXTRA_ACKED_WIN_RTTS, FULL_BW_CNT, FULL_BW_THRESH, MIN_RTT_WIN_NS, PROBE_DOWN_GAIN, PROBE_RTT_CWND_GAIN, PROBE_UP_GAIN};
use crate::cc::RateSample;
impl Bbr2 {
    pub(super) fn max_bw(&self) -> f64 {
        self.max_bw[0].max(self.max_bw[1])
    }

    /// The estimated bandwidth: max filter bounded by the short/long-term limits.
    pub(super) fn bw(&self) -> f64 {
        self.max_bw().min(self.bw_lo).min(self.bw_hi)
    }

    /// ceil(bw × min_rtt × gain), or the initial window without an RTT.
    pub(super) fn bdp(&self, bw: f64, gain: f64) -> u32 {
        if self.min_rtt_ns == u64::MAX {
            return self.init_cwnd;
        }
        (bw * self.min_rtt_ns as f64 * 1e-9 * gain).ceil() as u32
    }

    /// Linux `bbr_min_tso_segs`: 2 segments per burst above 1.2 Mbit/s.
    pub(super) fn tso_segs_goal(&self) -> u32 {
        if self.pacing_rate * self.segment_bytes as f64 * 8.0 < 1.2e6 {
            1
        } else {
            2
        }
    }

    pub(super) fn quantization_budget(&self, cwnd: u32) -> u32 {
        let mut c = cwnd.max(3 * self.tso_segs_goal()).max(CWND_MIN_TARGET);
        if self.mode == Mode::ProbeBw && self.cycle == Cycle::Up {
            c += 2;
        }
        c
    }

    pub(super) fn inflight(&self, bw: f64, gain: f64) -> u32 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    pub(super) fn target_inflight(&self) -> u32 {
        self.inflight(self.bw(), 1.0).min(self.cwnd)
    }

    pub(super) fn inflight_with_headroom(&self) -> u32 {
        if self.inflight_hi == u32::MAX {
            return u32::MAX;
        }
        let headroom = ((self.inflight_hi as f64 * self.cfg.inflight_headroom) as u32).max(1);
        self.inflight_hi.saturating_sub(headroom).max(CWND_MIN_TARGET)
    }

    pub(super) fn is_probing_bandwidth(&self) -> bool {
        self.mode == Mode::Startup || (self.mode == Mode::ProbeBw && matches!(self.cycle, Cycle::Refill | Cycle::Up))
    }

    pub(super) fn probe_rtt_cwnd(&self) -> u32 {
        self.bdp(self.bw(), PROBE_RTT_CWND_GAIN).max(CWND_MIN_TARGET)
    }

    pub(super) fn extra_acked(&self) -> u32 {
        self.extra_acked[0].max(self.extra_acked[1])
    }


    pub(super) fn save_cwnd(&mut self) {
        self.prior_cwnd = if !self.in_loss_recovery && self.mode != Mode::ProbeRtt {
            self.cwnd
        } else {
            self.prior_cwnd.max(self.cwnd)
        };
    }


    pub(super) fn update_ack_aggregation(&mut self, rs: &RateSample, now: u64) {
        if rs.acked_sacked == 0 || rs.interval_ns == 0 {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(31);
            let thresh = if self.full_bw_reached { EXTRA_ACKED_WIN_RTTS } else { 1 };
            if self.extra_acked_win_rtts >= thresh {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch_s = now.saturating_sub(self.ack_epoch_ns) as f64 * 1e-9;
        let mut expected = (self.bw() * epoch_s) as u32;
        if self.ack_epoch_acked <= expected {
            self.ack_epoch_acked = 0;
            self.ack_epoch_ns = now;
            expected = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + rs.acked_sacked).min(0xFFFFF);
        let extra = (self.ack_epoch_acked - expected).min(self.cwnd);
        let slot = &mut self.extra_acked[self.extra_acked_win_idx];
        *slot = (*slot).max(extra);
    }


    pub(super) fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.app_limited {
            return;
        }
        if self.max_bw() >= self.full_bw * FULL_BW_THRESH {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    pub(super) fn check_drain(&mut self, now: u64, in_flight: u32) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            self.ssthresh = self.inflight(self.max_bw(), 1.0);
            self.reset_congestion_signals();
        }
        if self.mode == Mode::Drain && in_flight <= self.inflight(self.max_bw(), 1.0) {
            self.mode = Mode::ProbeBw;
            self.start_probe_down(now);
        }
    }


    pub(super) fn update_min_rtt(&mut self, now: u64, rs: &RateSample, in_flight: u32) {
        let probe_rtt_expired = now > self.probe_rtt_min_stamp_ns + self.cfg.probe_rtt_win_ns;
        if rs.rtt_ns > 0 && (rs.rtt_ns <= self.probe_rtt_min_ns || probe_rtt_expired) {
            self.probe_rtt_min_ns = rs.rtt_ns;
            self.probe_rtt_min_stamp_ns = now;
        }
        let min_rtt_expired = now > self.min_rtt_stamp_ns + MIN_RTT_WIN_NS;
        if self.probe_rtt_min_ns <= self.min_rtt_ns || min_rtt_expired {
            self.min_rtt_ns = self.probe_rtt_min_ns;
            self.min_rtt_stamp_ns = self.probe_rtt_min_stamp_ns;
        }
        if probe_rtt_expired && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd();
            self.probe_rtt_done_ns = None;
            self.ack_phase = AckPhase::ProbeStopping;
            self.next_rtt_delivered = self.delivered;
        }
        if self.mode == Mode::ProbeRtt {
            match self.probe_rtt_done_ns {
                None if in_flight <= self.probe_rtt_cwnd() => {
                    self.probe_rtt_done_ns = Some(now + self.cfg.probe_rtt_mode_ns);
                    self.probe_rtt_round_done = false;
                    self.next_rtt_delivered = self.delivered;
                }
                Some(done) => {
                    if self.round_start {
                        self.probe_rtt_round_done = true;
                    }
                    if self.probe_rtt_round_done && now > done {
                        self.probe_rtt_min_stamp_ns = now;
                        self.cwnd = self.cwnd.max(self.prior_cwnd);
                        self.exit_probe_rtt(now);
                    }
                }
                None => {}
            }
        }
    }

    pub(super) fn update_gains(&mut self) {
        let (p, c) = match self.mode {
            Mode::Startup => (self.cfg.high_gain, self.cfg.high_gain),
            Mode::Drain => (1.0 / self.cfg.high_gain, self.cfg.high_gain),
            Mode::ProbeBw => (
                match self.cycle {
                    Cycle::Up => PROBE_UP_GAIN,
                    Cycle::Down => PROBE_DOWN_GAIN,
                    Cycle::Cruise | Cycle::Refill => 1.0,
                },
                self.cfg.cwnd_gain,
            ),
            Mode::ProbeRtt => (1.0, 1.0),
        };
        self.pacing_gain = p;
        self.cwnd_gain = c;
    }

    pub(super) fn set_pacing_rate(&mut self, bw: f64) {
        let rate = bw * self.pacing_gain * (1.0 - self.cfg.pacing_margin);
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    pub(super) fn set_cwnd(&mut self, acked: u32, bw: f64) {
        if acked > 0 {
            let mut target = self.bdp(bw, self.cwnd_gain);
            // ACK aggregation allowance, bounded by 100 ms at the estimated bw.
            let max_aggr = (self.bw() * EXTRA_ACKED_MAX_NS as f64 * 1e-9) as u32;
            target += self.extra_acked().min(max_aggr);
            let target = self.quantization_budget(target);
            let mut cwnd = self.cwnd;
            if self.full_bw_reached {
                cwnd = (cwnd + acked).min(target);
            } else if cwnd < target || cwnd < 2 * self.init_cwnd {
                cwnd += acked;
            }
            self.cwnd = cwnd.max(CWND_MIN_TARGET);
        }
        if self.mode == Mode::ProbeRtt {
            self.cwnd = self.cwnd.min(self.probe_rtt_cwnd());
        }
    }

    pub(super) fn bound_cwnd_for_inflight_model(&mut self) {
        let mut cap = u32::MAX;
        if self.mode == Mode::ProbeBw && self.cycle != Cycle::Cruise {
            cap = self.inflight_hi;
        } else if self.mode == Mode::ProbeRtt || (self.mode == Mode::ProbeBw && self.cycle == Cycle::Cruise) {
            cap = self.inflight_with_headroom();
        }
        cap = cap.min(self.inflight_lo).max(CWND_MIN_TARGET);
        self.cwnd = self.cwnd.min(cap);
    }
}
