//! Unit tests of BBRv2's rules against tcp_bbr2.c v2alpha.
use super::*;
use crate::cc::RateSample;

fn est() -> Established {
    Established { now_ns: 0, srtt_ns: 10 * NS_PER_MS, segment_bytes: 1500, accurate_ecn: false }
}

/// One RTT (10 ms) of ACKs, each acknowledging 2 segments, at a delivery
/// rate of `bw` segments/s; every rate sample spans the last RTT.
fn round(b: &mut Bbr2, now: &mut u64, bw: f64, delivered: &mut u64, in_flight: u32, losses_first: u32) {
    let per_rtt = (bw * 0.01) as u64;
    let acks = per_rtt / 2;
    for k in 0..acks {
        *now += 10 * NS_PER_MS / acks;
        *delivered += 2;
        let ev = AckEvent {
            now_ns: *now,
            acked_segs: 2,
            delivered_segs: 2,
            in_flight_segs: in_flight,
            cwnd_limited: true,
            rate: Some(&RateSample {
                delivered_segs: per_rtt,
                interval_ns: 10 * NS_PER_MS,
                tx_in_flight_segs: in_flight,
                rtt_ns: 10 * NS_PER_MS,
                prior_delivered: delivered.saturating_sub(per_rtt),
                acked_sacked: 2,
                losses: if k == 0 { losses_first } else { 0 },
                ..Default::default()
            }),
            ..Default::default()
        };
        b.on_ack(&ev);
    }
}

#[test]
fn startup_paces_at_high_gain_and_exits_after_three_flat_rounds() {
    let mut b = Bbr2::new(Bbr2Config::default()).unwrap();
    b.on_established(&est());
    // Initial pacing: 2.885 × 10 segments / 10 ms × 0.99.
    let expect = 2.885 * 10.0 / 0.01 * 0.99 * 1500.0 * 8.0;
    assert!((b.pacing_rate_bps().unwrap() as f64 - expect).abs() / expect < 1e-6);
    let (mut delivered, mut now) = (0, 0);
    // Bandwidth flat at 1000 segments/s: full pipe after 3 rounds without 25 % growth.
    for _ in 0..6 {
        round(&mut b, &mut now, 1000.0, &mut delivered, 20, 0);
    }
    assert!(b.full_bw_reached, "mode {}", b.mode_name());
    assert_ne!(b.mode, Mode::Startup);
    // BDP = 1000 segments/s × 10 ms = 10 segments.
    assert_eq!(b.bdp(b.max_bw(), 1.0), 10);
}

#[test]
fn probe_bw_settles_with_cwnd_near_two_bdp_and_pacing_near_bw() {
    let mut b = Bbr2::new(Bbr2Config::default()).unwrap();
    b.on_established(&est());
    let (mut delivered, mut now) = (0, 0);
    for _ in 0..50 {
        round(&mut b, &mut now, 5000.0, &mut delivered, 50, 0);
    }
    assert_eq!(b.mode, Mode::ProbeBw);
    // BDP = 50 segments; PROBE_BW cwnd target is 2·BDP plus small budgets.
    assert!((100..=110).contains(&b.cwnd()), "cwnd {}", b.cwnd());
    let bw_bps = 5000.0 * 1500.0 * 8.0;
    let pacing = b.pacing_rate_bps().unwrap() as f64;
    assert!(pacing > 0.7 * bw_bps && pacing < 1.3 * bw_bps, "pacing {pacing} vs bw {bw_bps}");
}

#[test]
fn loss_in_a_round_cuts_inflight_lo_by_beta_when_not_probing() {
    let mut b = Bbr2::new(Bbr2Config::default()).unwrap();
    b.on_established(&est());
    let (mut delivered, mut now) = (0, 0);
    for _ in 0..20 {
        round(&mut b, &mut now, 5000.0, &mut delivered, 50, 0);
    }
    assert!(!b.is_probing_bandwidth(), "mode {}", b.mode_name());
    assert_eq!(b.inflight_lo, u32::MAX);
    let cwnd = b.cwnd();
    // A loss in this round; at the round's end inflight_lo = max(latest, 0.7 · cwnd).
    round(&mut b, &mut now, 5000.0, &mut delivered, 50, 1);
    round(&mut b, &mut now, 5000.0, &mut delivered, 50, 0);
    assert_eq!(b.inflight_lo, ((cwnd as f64 * 0.7) as u32).max(50));
}

// ---- v2alpha rules: ECN and loss signals ------------------------------------

fn est_ecn(srtt_ms: u64) -> Established {
    Established { now_ns: 0, srtt_ns: srtt_ms * NS_PER_MS, segment_bytes: 1500, accurate_ecn: true }
}

/// A flow driven ACK by ACK: each ACK delivers 2 segments, CE-marked when
/// `ce(k)` says so; every rate sample spans the last `per_rtt` deliveries.
struct Driver {
    now: u64,
    delivered: u64,
    ce_hist: Vec<bool>,
    k: u64,
}

impl Driver {
    fn new() -> Self {
        Driver { now: 0, delivered: 0, ce_hist: vec![], k: 0 }
    }

    fn ack(&mut self, b: &mut Bbr2, per_rtt: u64, in_flight: u32, ce: bool, losses: u32) {
        self.now += 10 * NS_PER_MS / (per_rtt / 2);
        self.delivered += 2;
        self.k += 1;
        self.ce_hist.push(ce);
        let window = (per_rtt / 2) as usize;
        let ce_in_window = self.ce_hist.iter().rev().take(window).filter(|&&c| c).count() as u64 * 2;
        let ev = AckEvent {
            now_ns: self.now,
            acked_segs: 2,
            delivered_segs: 2,
            ce_segs: if ce { 2 } else { 0 },
            ece: ce,
            in_flight_segs: in_flight,
            cwnd_limited: true,
            rate: Some(&RateSample {
                delivered_segs: per_rtt,
                delivered_ce_segs: ce_in_window,
                interval_ns: 10 * NS_PER_MS,
                tx_in_flight_segs: in_flight,
                rtt_ns: 10 * NS_PER_MS,
                prior_delivered: self.delivered.saturating_sub(per_rtt),
                acked_sacked: 2,
                losses,
                lost_segs: losses as u64,
                ..Default::default()
            }),
            ..Default::default()
        };
        b.on_ack(&ev);
    }

    /// One round of ACKs at 5000 segments/s (50 per 10 ms), CE on the
    /// first `ce_acks` ACKs.
    fn round(&mut self, b: &mut Bbr2, ce_acks: u64) {
        for k in 0..25 {
            self.ack(b, 50, 50, k < ce_acks, 0);
        }
    }
}

fn eligible_flow(params: serde_json::Value, srtt_ms: u64) -> Bbr2 {
    let cfg: Bbr2Config = serde_json::from_value(params).unwrap();
    let mut b = Bbr2::new(cfg).unwrap();
    b.on_established(&est_ecn(srtt_ms));
    b
}

#[test]
fn ecn_alpha_is_a_per_round_ewma_of_the_ce_fraction_with_gain_one_sixteenth() {
    // tcp_bbr2.c bbr2_update_ecn_alpha: alpha starts at 1 (ecn_alpha_init)
    // and once per round alpha ← (1 − g)·alpha + g·CE/delivered, g = 1/16.
    let mut b = eligible_flow(serde_json::json!({"ecn": true, "ecn_max_rtt": "0s"}), 10);
    assert_eq!(b.ecn_alpha, 1.0);
    let mut d = Driver::new();
    let (mut updates, mut checked) = (0, 0);
    for r in 0..60u64 {
        // CE on 5 of 25 ACKs: a CE fraction of 0.2 per round after the first 30.
        let ce_acks = if r < 30 { 0 } else { 5 };
        for k in 0..25 {
            let (alpha, last_d, last_ce) = (b.ecn_alpha, b.alpha_last_delivered, b.alpha_last_delivered_ce);
            d.ack(&mut b, 50, 50, k < ce_acks, 0);
            if b.alpha_last_delivered != last_d {
                let ratio = (b.delivered_ce - last_ce) as f64 / (b.delivered - last_d) as f64;
                let expect = (15.0 / 16.0) * alpha + ratio / 16.0;
                assert!((b.ecn_alpha - expect).abs() < 1e-12, "alpha {} vs {expect}", b.ecn_alpha);
                updates += 1;
                checked += (ratio > 0.0) as u32;
            }
        }
    }
    // One update per round (packet-timed rounds of 50 segments).
    assert!((58..=61).contains(&updates), "{updates} alpha updates in 60 rounds");
    assert!(checked > 20);
    // 30 rounds at 0.2 take alpha to within (15/16)^30 ≈ 0.14 of the gap to 0.2.
    assert!((b.ecn_alpha - 0.2).abs() < 0.2 * 0.15 + 1e-3, "alpha {}", b.ecn_alpha);
}

#[test]
fn ecn_in_a_round_cuts_inflight_lo_and_bw_lo_by_alpha_times_ecn_factor_when_not_probing() {
    // tcp_bbr2.c bbr2_adapt_lower_bounds: once per round with CE seen and not
    // probing, inflight_lo ← inflight_lo·(1 − alpha·ecn_factor) (from cwnd
    // when unset), and bw_lo likewise (ecn_bw_lo).
    let mut b = eligible_flow(serde_json::json!({"ecn": true, "ecn_max_rtt": "0s"}), 10);
    let mut d = Driver::new();
    for _ in 0..30 {
        d.round(&mut b, 0);
    }
    assert!(b.full_bw_reached && b.ecn_eligible);
    let mut cuts = 0;
    for r in 0..40u64 {
        let round_cuts_before = cuts;
        for k in 0..25 {
            let lo_before = if b.inflight_lo == u32::MAX { b.cwnd } else { b.inflight_lo };
            let bw_lo_before = if b.bw_lo.is_infinite() { b.max_bw() } else { b.bw_lo };
            let probing = b.is_probing_bandwidth();
            let lo_was = b.inflight_lo;
            d.ack(&mut b, 50, 50, k % 5 == 0, 0);
            // A cut: inflight_lo set or lowered (REFILL's reset sets it to MAX).
            if b.inflight_lo != lo_was && b.inflight_lo != u32::MAX {
                assert!(!probing, "cut while probing (round {r})");
                let cut = 1.0 - b.ecn_alpha * b.cfg.ecn_factor;
                assert_eq!(b.inflight_lo, ((lo_before as f64 * cut) as u32).min(lo_before), "round {r}");
                assert!((b.bw_lo - bw_lo_before * cut).abs() <= 1e-9 * bw_lo_before, "bw_lo {} vs {}", b.bw_lo, bw_lo_before * cut);
                cuts += 1;
            }
        }
        assert!(cuts - round_cuts_before <= 1, "more than one ECN cut in round {r}");
        if b.is_probing_bandwidth() {
            // REFILL resets the lower bounds; the synthetic flight never ends UP.
            assert_eq!(b.inflight_lo, u32::MAX);
            break;
        }
        assert_eq!(cuts - round_cuts_before, 1, "no ECN cut in marked cruising round {r}");
    }
    assert!(cuts >= 5, "{cuts} ECN cuts before the next probe");
}

#[test]
fn ecn_logic_switches_on_only_below_ecn_max_rtt_and_zero_means_any_rtt() {
    // bbr2_update_ecn_alpha: ecn_eligible once bbr_ecn_enable and
    // (min_rtt ≤ ecn_max_rtt_us or ecn_max_rtt_us = 0); ecn_factor = 0 turns
    // the ECN logic off. aqmlab also requires accurate ECN.
    let run = |params: serde_json::Value, srtt_ms: u64, accurate: bool| {
        let cfg: Bbr2Config = serde_json::from_value(params).unwrap();
        let mut b = Bbr2::new(cfg).unwrap();
        b.on_established(&Established { accurate_ecn: accurate, ..est_ecn(srtt_ms) });
        let mut d = Driver::new();
        for _ in 0..40 {
            d.round(&mut b, 5);
        }
        (b.ecn_eligible, b.inflight_lo)
    };
    use serde_json::json;
    // 10 ms path: the default 5 ms keeps ECN off, and marks cut nothing.
    assert_eq!(run(json!({"ecn": true}), 10, true), (false, u32::MAX));
    // 4 ms path: below the default threshold.
    assert!(run(json!({"ecn": true}), 4, true).0);
    // Exactly at the threshold counts (min_rtt ≤ ecn_max_rtt).
    assert!(run(json!({"ecn": true}), 5, true).0);
    assert!(run(json!({"ecn": true, "ecn_max_rtt": "0s"}), 10, true).0);
    assert!(run(json!({"ecn": true, "ecn_max_rtt": "20ms"}), 10, true).0);
    assert!(!run(json!({"ecn": false, "ecn_max_rtt": "0s"}), 10, true).0);
    assert!(!run(json!({"ecn": true, "ecn_max_rtt": "0s"}), 10, false).0);
    assert!(!run(json!({"ecn": true, "ecn_max_rtt": "0s", "ecn_factor": 0.0}), 10, true).0);
}

#[test]
fn a_sample_is_too_high_at_half_its_deliveries_ce_or_more_than_two_percent_lost() {
    // bbr2_is_inflight_too_high: lost > loss_thresh·tx_in_flight, or
    // delivered_ce ≥ ecn_thresh·delivered (ECN-eligible flows only).
    let mut b = eligible_flow(serde_json::json!({"ecn": true, "ecn_max_rtt": "0s"}), 10);
    let rs = |ce: u64, lost: u64| RateSample { delivered_segs: 100, delivered_ce_segs: ce, lost_segs: lost, tx_in_flight_segs: 100, ..Default::default() };
    assert!(!b.is_inflight_too_high(&rs(50, 0)), "not eligible yet");
    b.ecn_eligible = true;
    assert!(b.is_inflight_too_high(&rs(50, 0)));
    assert!(!b.is_inflight_too_high(&rs(49, 0)));
    assert!(b.is_inflight_too_high(&rs(0, 3)));
    assert!(!b.is_inflight_too_high(&rs(0, 2)));
}

#[test]
fn a_too_high_probe_sets_inflight_hi_to_tx_in_flight_cuts_bw_hi_and_goes_down() {
    // bbr2_handle_inflight_too_high: inflight_hi = max(tx_in_flight,
    // (1 − beta)·target_inflight); with ECN eligibility and no good probe
    // sample yet, bw_hi ← bw_hi·(1 − alpha·ecn_factor); UP → DOWN.
    let mut b = eligible_flow(serde_json::json!({"ecn": true, "ecn_max_rtt": "0s"}), 10);
    let mut d = Driver::new();
    for _ in 0..30 {
        d.round(&mut b, 0);
    }
    b.mode = Mode::ProbeBw;
    b.cycle = Cycle::Up;
    b.got_ok_bw_probe_sample = false;
    let (max_bw, alpha, target) = (b.max_bw(), b.ecn_alpha, b.target_inflight());
    let tx = 80;
    b.handle_inflight_too_high(d.now, &RateSample { tx_in_flight_segs: tx, delivered_segs: 100, delivered_ce_segs: 60, ..Default::default() });
    assert_eq!(b.inflight_hi, tx.max((target as f64 * 0.7) as u32));
    assert!((b.bw_hi - max_bw * (1.0 - alpha / 3.0)).abs() < 1e-9 * max_bw);
    assert_eq!(b.cycle, Cycle::Down);
    assert!(b.prev_probe_too_high);
    // A floor at 0.7 of the target when the sample's flight was small.
    b.cycle = Cycle::Up;
    let target = b.target_inflight();
    b.handle_inflight_too_high(d.now, &RateSample { tx_in_flight_segs: 5, ..Default::default() });
    assert_eq!(b.inflight_hi, (target as f64 * 0.7) as u32);
}

#[test]
fn two_rounds_at_half_ce_end_startup_with_inflight_hi_at_the_bdp() {
    // bbr2_check_ecn_too_high_in_startup: full_ecn_cnt = 2 consecutive rounds
    // with CE ratio ≥ ecn_thresh end STARTUP; inflight_hi = BDP (+ budget).
    let mut b = eligible_flow(serde_json::json!({"ecn": true, "ecn_max_rtt": "0s"}), 10);
    let mut d = Driver::new();
    // Growing deliveries keep the bandwidth test from ending STARTUP first.
    d.round(&mut b, 0);
    assert_eq!(b.mode, Mode::Startup);
    let mut rounds = 0;
    while b.mode == Mode::Startup && rounds < 5 {
        d.round(&mut b, 13); // 13 of 25 ACKs CE: 52 %
        rounds += 1;
    }
    assert!(b.full_bw_reached);
    assert!(rounds <= 3, "STARTUP lasted {rounds} marked rounds");
    assert_eq!(b.inflight_hi, b.inflight(b.max_bw(), 1.0));
}

#[test]
fn the_first_loss_of_a_round_restarts_the_loss_round() {
    // bbr2_skb_marked_lost: the first loss in a round sets
    // loss_round_delivered = delivered, so the lower bounds are cut a full
    // round after it, not at the end of the round it fell in.
    let mut b = Bbr2::new(Bbr2Config::default()).unwrap();
    b.on_established(&est());
    let mut d = Driver::new();
    for _ in 0..20 {
        d.round(&mut b, 0);
    }
    assert!(!b.is_probing_bandwidth(), "mode {}", b.mode_name());
    for _ in 0..12 {
        d.ack(&mut b, 50, 50, false, 0);
    }
    d.ack(&mut b, 50, 50, false, 1);
    let at_loss = d.delivered;
    assert_eq!(b.loss_round_delivered, at_loss);
    // Until a sample's prior_delivered reaches the loss point, nothing is cut.
    while d.delivered < at_loss + 50 {
        assert_eq!(b.inflight_lo, u32::MAX, "cut before a full round after the loss");
        d.ack(&mut b, 50, 50, false, 0);
    }
    assert_ne!(b.inflight_lo, u32::MAX, "no cut a round after the loss");
}

#[test]
fn leaving_fast_recovery_keeps_the_model_cwnd_and_only_an_rto_restores_prior_cwnd() {
    // bbr2_set_state restores cwnd = max(cwnd, prior_cwnd) on leaving
    // TCP_CA_Loss only; fast recovery ends without a restore.
    let mut b = Bbr2::new(Bbr2Config::default()).unwrap();
    b.on_established(&est());
    let mut d = Driver::new();
    for _ in 0..20 {
        d.round(&mut b, 0);
    }
    let cwnd = b.cwnd;
    b.on_congestion(&CongestionEvent { now_ns: d.now, kind: CongestionKind::Loss, in_flight_segs: 50, srtt_ns: 10 * NS_PER_MS });
    assert_eq!(b.prior_cwnd, cwnd);
    b.cwnd = cwnd / 2;
    b.on_recovery_exit(d.now);
    assert_eq!(b.cwnd, cwnd / 2);
    b.on_rto(d.now, 50, false);
    assert_eq!(b.cwnd, 1);
    b.on_recovery_exit(d.now);
    assert_eq!(b.cwnd, b.prior_cwnd.max(1));
}
