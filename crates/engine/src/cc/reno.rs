//! NewReno congestion control with optional Alternative Backoff with ECN.
//!
//! References (read in this order):
//! - RFC 5681 §3.1 (slow start, congestion avoidance, eq. (4) ssthresh =
//!   max(FlightSize/2, 2·SMSS), loss window after RTO):
//!   <https://www.rfc-editor.org/rfc/rfc5681#section-3.1>
//! - RFC 3465 §2 (appropriate byte counting; here in segments, as Linux
//!   `tcp_cong_avoid_ai` does, so delayed ACKs do not halve the growth).
//! - RFC 8511 §3 (ABE): on an ECE-triggered reduction use
//!   ssthresh = FlightSize·β_ecn, with β_ecn = 0.8 recommended for Reno;
//!   loss keeps β = 0.5.
//!
//! - RFC 5681 §3.1 per-ACK growth, as an option (`ack_counting = "per_ack"`):
//!   slow start adds min(N, SMSS) per ACK and congestion avoidance
//!   SMSS·SMSS/cwnd per ACK (eq. 3), so delayed ACKs halve the growth; ns-3's
//!   `TcpNewReno` grows this way, Linux counts acked segments (the default).
//!
//! Loss recovery itself (RFC 6675 SACK recovery, RFC 6582 recovery point)
//! lives in the TCP sender; this file only decides window sizes.

use super::{
    additive_increase, slow_start, AckEvent, CongestionControl, CongestionEvent, CongestionKind,
    INITIAL_WINDOW_SEGS, LOSS_WINDOW_SEGS,
};
use super::hystart::HyStartPp;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct RenoConfig {
    /// Multiplicative decrease on loss.
    pub beta: f64,
    /// Multiplicative decrease on ECN-Echo (ABE, RFC 8511). `None`: same as `beta`
    /// (plain RFC 3168 behaviour).
    pub beta_ecn: Option<f64>,
    /// Initial window in segments.
    pub initial_window: u32,
    /// HyStart++ slow start (RFC 9406).
    pub hystart: bool,
    /// What one unit of growth counts: acked segments (RFC 3465, Linux) or ACKs (RFC 5681 §3.1, ns-3 NewReno).
    pub ack_counting: AckCounting,
}

/// How window growth counts acknowledgements.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum AckCounting {
    /// Every newly acked segment counts (RFC 3465 with L unbounded; Linux `tcp_cong_avoid_ai`).
    Segments,
    /// Every ACK counts once, however many segments it acknowledges (RFC 5681 §3.1; ns-3 `TcpNewReno`).
    PerAck,
}

impl Default for RenoConfig {
    fn default() -> Self {
        RenoConfig {
            // RFC 5681 eq. (4): halve on loss.
            beta: 0.5,
            // RFC 3168 §6.1.2: react to ECE as to loss unless ABE is asked for
            // (RFC 8511 recommends 0.8; FreeBSD's default beta_ecn is 80 %).
            beta_ecn: None,
            // RFC 6928: 10 segments.
            initial_window: INITIAL_WINDOW_SEGS,
            // Off, as Linux tcp_reno and RFC 5681 slow start.
            hystart: false,
            // Linux.
            ack_counting: AckCounting::Segments,
        }
    }
}

/// Checks a multiplicative-decrease factor; shared by Reno and CUBIC configs.
pub(crate) fn check_beta(name: &str, b: f64) -> Result<(), String> {
    if !(b > 0.0 && b < 1.0) {
        return Err(format!("{name}: must lie strictly between 0 and 1 (got {b})"));
    }
    Ok(())
}

#[derive(Debug, Clone)]
pub struct Reno {
    cfg: RenoConfig,
    cwnd: u32,
    ssthresh: u32,
    /// Acked segments not yet turned into window growth (RFC 3465 counter).
    cwnd_cnt: u32,
    hystart: Option<HyStartPp>,
}

impl Reno {
    pub fn new(cfg: RenoConfig) -> Result<Self, String> {
        check_beta("beta", cfg.beta)?;
        if let Some(b) = cfg.beta_ecn {
            check_beta("beta_ecn", b)?;
        }
        if cfg.initial_window == 0 {
            return Err("initial_window: must be at least 1 segment".into());
        }
        Ok(Reno { cwnd: cfg.initial_window, ssthresh: u32::MAX, cwnd_cnt: 0, hystart: cfg.hystart.then(HyStartPp::new), cfg })
    }

    fn beta_for(&self, kind: CongestionKind) -> f64 {
        match kind {
            CongestionKind::Loss => self.cfg.beta,
            CongestionKind::Ecn => self.cfg.beta_ecn.unwrap_or(self.cfg.beta),
        }
    }
}

/// RFC 5681 eq. (4), generalised to a factor: max(FlightSize·β, 2).
#[inline]
pub(crate) fn reduced_ssthresh(flight_segs: u32, beta: f64) -> u32 {
    ((flight_segs as f64 * beta) as u32).max(2)
}

impl CongestionControl for Reno {
    fn on_ack(&mut self, ev: &AckEvent) {
        if !ev.may_grow() {
            return;
        }
        let mut acked = match self.cfg.ack_counting {
            AckCounting::Segments => ev.acked_segs,
            AckCounting::PerAck => 1,
        };
        if self.cwnd < self.ssthresh {
            if let Some(h) = &mut self.hystart {
                let g = h.on_ack(ev, acked);
                self.cwnd = self.cwnd.saturating_add(g.segs).min(self.ssthresh);
                if g.exit {
                    self.ssthresh = self.cwnd;
                }
                return;
            }
            acked = slow_start(&mut self.cwnd, self.ssthresh, acked);
            if acked == 0 {
                return;
            }
        }
        let w = self.cwnd;
        additive_increase(&mut self.cwnd, &mut self.cwnd_cnt, w, acked);
    }

    fn on_congestion(&mut self, ev: &CongestionEvent) {
        self.ssthresh = reduced_ssthresh(ev.in_flight_segs, self.beta_for(ev.kind));
        self.cwnd = self.ssthresh;
        self.cwnd_cnt = 0;
        if let Some(h) = &mut self.hystart {
            h.on_congestion();
        }
    }

    fn on_rto(&mut self, _now_ns: u64, in_flight: u32, already_reduced: bool) {
        if !already_reduced {
            self.ssthresh = reduced_ssthresh(in_flight, self.cfg.beta);
        }
        self.cwnd = LOSS_WINDOW_SEGS;
        self.cwnd_cnt = 0;
        if let Some(h) = &mut self.hystart {
            h.on_rto();
        }
    }

    fn cwnd(&self) -> u32 {
        self.cwnd
    }
    fn ssthresh(&self) -> u32 {
        self.ssthresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(acked: u32) -> AckEvent<'static> {
        AckEvent { acked_segs: acked, delivered_segs: acked, cwnd_limited: true, ..Default::default() }
    }

    fn congestion(kind: CongestionKind, flight: u32) -> CongestionEvent {
        CongestionEvent { now_ns: 0, kind, in_flight_segs: flight, srtt_ns: 0 }
    }

    #[test]
    fn slow_start_doubles_per_round_then_grows_one_per_round() {
        let mut r = Reno::new(RenoConfig::default()).unwrap();
        // One round: every segment of the window acked (ACK per 2 segments).
        for _ in 0..5 {
            r.on_ack(&ack(2));
        }
        assert_eq!(r.cwnd(), 20);
        r.on_congestion(&congestion(CongestionKind::Loss, 20));
        assert_eq!((r.cwnd(), r.ssthresh()), (10, 10));
        for _ in 0..5 {
            r.on_ack(&ack(2));
        }
        assert_eq!(r.cwnd(), 11);
    }

    #[test]
    fn per_ack_counting_halves_growth_under_delayed_acks() {
        // RFC 5681 §3.1: +1 segment per ACK in slow start, +1/cwnd per ACK after.
        let mut r = Reno::new(RenoConfig { ack_counting: AckCounting::PerAck, ..Default::default() }).unwrap();
        for _ in 0..5 {
            r.on_ack(&ack(2)); // one round of 10 segments, an ACK per 2
        }
        assert_eq!(r.cwnd(), 15, "slow start: 5 ACKs, 5 segments");
        r.on_congestion(&congestion(CongestionKind::Loss, 20));
        for _ in 0..10 {
            r.on_ack(&ack(2)); // two rounds at cwnd 10
        }
        assert_eq!(r.cwnd(), 11, "congestion avoidance: one segment per cwnd ACKs, i.e. per two rounds");
    }

    #[test]
    fn abe_backs_off_less_on_ecn_than_on_loss() {
        let cfg = RenoConfig { beta_ecn: Some(0.8), ..Default::default() };
        let mut r = Reno::new(cfg).unwrap();
        r.on_congestion(&congestion(CongestionKind::Ecn, 100));
        assert_eq!(r.cwnd(), 80);
        r.on_congestion(&congestion(CongestionKind::Loss, 80));
        assert_eq!(r.cwnd(), 40);
    }

    #[test]
    fn rto_collapses_to_the_loss_window() {
        let mut r = Reno::new(RenoConfig::default()).unwrap();
        r.on_rto(0, 40, false);
        assert_eq!((r.cwnd(), r.ssthresh()), (1, 20));
    }

    #[test]
    fn no_growth_in_recovery_or_when_not_cwnd_limited() {
        let mut r = Reno::new(RenoConfig::default()).unwrap();
        r.on_ack(&AckEvent { in_recovery: true, ..ack(4) });
        r.on_ack(&AckEvent { cwnd_limited: false, ..ack(4) });
        assert_eq!(r.cwnd(), 10);
    }

    #[test]
    fn bad_beta_is_rejected_with_the_field_name() {
        let e = Reno::new(RenoConfig { beta_ecn: Some(1.5), ..Default::default() }).unwrap_err();
        assert!(e.starts_with("beta_ecn:"), "{e}");
    }
}
