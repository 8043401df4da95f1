//! BBRv2's PROBE_BW cycle (tcp_bbr2.c v2alpha): DOWN, CRUISE, REFILL and UP,
//! the probe wait (wall clock or Reno-coexistence rounds), and the upper
//! bounds inflight_hi/bw_hi that a too-high probe cuts.
use super::{AckPhase, Bbr2, Cycle, Mode, BW_PROBE_BASE_NS, BW_PROBE_MAX_ROUNDS, BW_PROBE_PIF_GAIN, BW_PROBE_RAND_NS, BW_PROBE_RAND_ROUNDS, BW_PROBE_RENO_GAIN};
use crate::cc::RateSample;
impl Bbr2 {
    pub(super) fn pick_probe_wait(&mut self) {
        self.rounds_since_probe = self.rng.below(BW_PROBE_RAND_ROUNDS) as u32;
        self.probe_wait_ns = BW_PROBE_BASE_NS + self.rng.below(BW_PROBE_RAND_NS);
    }

    pub(super) fn raise_inflight_hi_slope(&mut self) {
        let growth_this_round = 1u32 << self.bw_probe_up_rounds.min(30);
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.bw_probe_up_cnt = (self.cwnd / growth_this_round).max(1);
    }

    pub(super) fn start_probe_refill(&mut self, up_rounds: u32) {
        self.reset_lower_bounds();
        self.bw_probe_up_rounds = up_rounds;
        self.bw_probe_up_acks = 0;
        self.stopped_risky_probe = false;
        self.got_ok_bw_probe_sample = false;
        self.ack_phase = AckPhase::Refilling;
        self.next_rtt_delivered = self.delivered;
        self.cycle = Cycle::Refill;
    }

    pub(super) fn start_probe_up(&mut self, now: u64) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.next_rtt_delivered = self.delivered;
        self.cycle_stamp_ns = now;
        self.cycle = Cycle::Up;
        self.raise_inflight_hi_slope();
    }

    pub(super) fn start_probe_down(&mut self, now: u64) {
        self.reset_congestion_signals();
        self.bw_probe_up_cnt = u32::MAX;
        self.pick_probe_wait();
        self.cycle_stamp_ns = now;
        self.ack_phase = AckPhase::ProbeStopping;
        self.next_rtt_delivered = self.delivered;
        self.cycle = Cycle::Down;
    }

    pub(super) fn start_probe_cruise(&mut self) {
        if self.inflight_lo != u32::MAX {
            self.inflight_lo = self.inflight_lo.min(self.inflight_hi);
        }
        self.cycle = Cycle::Cruise;
    }


    pub(super) fn handle_inflight_too_high(&mut self, now: u64, rs: &RateSample) {
        self.prev_probe_too_high = true;
        self.bw_probe_samples = false;
        if !rs.app_limited {
            let floor = (self.target_inflight() as f64 * (1.0 - self.cfg.beta)) as u32;
            self.inflight_hi = rs.tx_in_flight_segs.max(floor);
            if self.ecn_eligible && !self.got_ok_bw_probe_sample {
                let cut = 1.0 - self.ecn_alpha * self.cfg.ecn_factor;
                if self.bw_hi.is_infinite() {
                    self.bw_hi = self.max_bw();
                }
                self.bw_hi *= cut;
            }
        }
        if self.mode == Mode::ProbeBw && self.cycle == Cycle::Up {
            self.start_probe_down(now);
        }
    }

    pub(super) fn exit_probe_rtt(&mut self, now: u64) {
        self.reset_lower_bounds();
        if self.full_bw_reached {
            self.mode = Mode::ProbeBw;
            self.start_probe_down(now);
            self.start_probe_cruise();
        } else {
            self.mode = Mode::Startup;
        }
    }


    pub(super) fn adapt_upper_bounds(&mut self, now: u64, rs: &RateSample, bw: f64, cwnd_limited: bool) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            if self.mode == Mode::ProbeBw && !rs.app_limited && self.max_bw[1] > 0.0 {
                // Keep the max of the last one or two cycles.
                self.max_bw[0] = self.max_bw[1];
                self.max_bw[1] = 0.0;
            }
            if self.mode == Mode::ProbeBw && self.stopped_risky_probe && !self.prev_probe_too_high {
                self.start_probe_refill(0);
                return true;
            }
        }
        if self.is_inflight_too_high(rs) {
            if self.bw_probe_samples {
                self.handle_inflight_too_high(now, rs);
            }
        } else {
            self.got_ok_bw_probe_sample |= self.bw_probe_samples;
            if self.inflight_hi == u32::MAX && self.bw_hi.is_infinite() {
                return false;
            }
            if rs.tx_in_flight_segs > self.inflight_hi {
                self.inflight_hi = rs.tx_in_flight_segs;
            }
            if bw > self.bw_hi {
                self.bw_hi = bw;
            }
            if self.mode == Mode::ProbeBw && self.cycle == Cycle::Up {
                // Raise inflight_hi by one per bw_probe_up_cnt segments ACKed.
                if !cwnd_limited || self.cwnd < self.inflight_hi {
                    self.bw_probe_up_acks = 0;
                } else {
                    self.bw_probe_up_acks += rs.acked_sacked;
                    if self.bw_probe_up_acks >= self.bw_probe_up_cnt {
                        let delta = self.bw_probe_up_acks / self.bw_probe_up_cnt;
                        self.bw_probe_up_acks -= delta * self.bw_probe_up_cnt;
                        self.inflight_hi = self.inflight_hi.saturating_add(delta);
                    }
                    if self.round_start {
                        self.raise_inflight_hi_slope();
                    }
                }
            }
        }
        false
    }

    pub(super) fn is_reno_coexistence_probe_time(&self) -> bool {
        let reno_rounds = (self.target_inflight() as f64 * BW_PROBE_RENO_GAIN) as u32;
        self.rounds_since_probe >= BW_PROBE_MAX_ROUNDS.min(reno_rounds)
    }

    pub(super) fn check_time_to_probe_bw(&mut self, now: u64) -> bool {
        if now > self.cycle_stamp_ns + self.probe_wait_ns || self.is_reno_coexistence_probe_time() {
            self.start_probe_refill(0);
            return true;
        }
        false
    }

    pub(super) fn update_cycle_phase(&mut self, now: u64, rs: &RateSample, bw_sample: f64, in_flight: u32, cwnd_limited: bool) {
        if !self.full_bw_reached {
            return;
        }
        if self.adapt_upper_bounds(now, rs, bw_sample, cwnd_limited) || self.mode != Mode::ProbeBw {
            return;
        }
        let bw = self.max_bw();
        match self.cycle {
            Cycle::Cruise => {
                self.check_time_to_probe_bw(now);
            }
            Cycle::Refill => {
                if self.round_start {
                    self.bw_probe_samples = true;
                    self.start_probe_up(now);
                }
            }
            Cycle::Up => {
                let mut stop = false;
                if self.prev_probe_too_high && in_flight >= self.inflight_hi {
                    self.stopped_risky_probe = true;
                    stop = true;
                } else if now > self.cycle_stamp_ns + self.min_rtt_ns && in_flight >= self.inflight(bw, BW_PROBE_PIF_GAIN) {
                    stop = true;
                }
                if stop {
                    self.prev_probe_too_high = false;
                    self.start_probe_down(now);
                }
            }
            Cycle::Down => {
                if self.check_time_to_probe_bw(now) {
                    return;
                }
                // drain_to_target: cruise once inflight is under the BDP and the headroom.
                if in_flight <= self.inflight_with_headroom() && in_flight <= self.inflight(bw, 1.0) {
                    self.start_probe_cruise();
                }
            }
        }
    }
}
