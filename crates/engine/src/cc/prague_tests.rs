//! Prague's rules, one test per rule of `tcp_prague.c` v0.6 that aqmlab keeps.

use super::*;

const MS: u64 = 1_000_000;

fn established(p: &mut Prague, srtt_ns: u64, accurate_ecn: bool) {
    p.on_established(&Established { now_ns: 0, srtt_ns, segment_bytes: 1500, accurate_ecn });
}

/// An ACK delivering `delivered` segments, `ce` of them CE-marked.
fn ack(now_ns: u64, una: u64, nxt: u64, delivered: u32, ce: u32) -> AckEvent<'static> {
    AckEvent {
        now_ns,
        acked_segs: delivered,
        delivered_segs: delivered,
        ce_segs: ce,
        ece: ce > 0,
        srtt_ns: 10 * MS,
        snd_una: una,
        snd_nxt: nxt,
        in_flight_segs: 0,
        cwnd_limited: true,
        ..Default::default()
    }
}

fn congestion(now_ns: u64, kind: CongestionKind) -> CongestionEvent {
    CongestionEvent { now_ns, kind, in_flight_segs: 0, srtt_ns: 10 * MS }
}

/// A Prague flow out of slow start at `cwnd`, with α = `alpha` and AccECN.
fn in_avoidance(cwnd: u32, alpha: f64, cfg: PragueConfig) -> Prague {
    let mut p = Prague::new(cfg).unwrap();
    established(&mut p, 10 * MS, true);
    p.cwnd = cwnd;
    p.ssthresh = cwnd;
    p.alpha = alpha;
    p.saw_ce = true;
    p
}

#[test]
fn alpha_stays_one_until_the_first_mark_then_follows_the_marked_fraction_per_round() {
    let mut p = Prague::new(PragueConfig::default()).unwrap();
    established(&mut p, 10 * MS, true);
    // Rounds without CE leave α at 1 (no proof of an AQM on the path).
    p.on_ack(&ack(1, 0, 10, 0, 0));
    p.on_ack(&ack(2, 10, 20, 10, 0));
    assert_eq!(p.alpha(), 1.0);
    // A round with 2 of 8 marked: α = 15/16 + 0.25/16.
    p.on_ack(&ack(3, 15, 20, 6, 2));
    assert_eq!(p.alpha(), 1.0, "mid-round ACKs do not update α");
    p.on_ack(&ack(4, 20, 30, 2, 0));
    assert!((p.alpha() - (15.0 / 16.0 + 0.25 / 16.0)).abs() < 1e-12, "alpha {}", p.alpha());
}

#[test]
fn an_ecn_cut_removes_alpha_half_of_the_window_one_segment_per_ack_setting_ssthresh() {
    let mut p = in_avoidance(100, 0.2, PragueConfig::default());
    p.on_congestion(&congestion(MS, CongestionKind::Ecn));
    assert!((p.frac_cwnd() - 90.0).abs() < 1e-9, "frac {}", p.frac_cwnd());
    assert_eq!(p.cwnd(), 100, "cwnd itself moves only on ACKs");
    // Fully marked ACKs grow nothing; each one steps cwnd down by one.
    for i in 1..=10u32 {
        p.on_ack(&ack(MS + i as u64, i as u64, 1000, 1, 1));
        assert_eq!(p.cwnd(), 100 - i);
        assert_eq!(p.ssthresh(), 100 - i);
    }
    p.on_ack(&ack(2 * MS, 11, 1000, 1, 1));
    assert_eq!(p.cwnd(), 90, "the cut is exactly alpha/2 of the window");
}

#[test]
fn additive_increase_counts_only_unmarked_segments_and_runs_in_cwr() {
    // Unmarked: one segment per window of acked segments.
    let mut p = in_avoidance(50, 0.5, PragueConfig::default());
    for i in 0..50u64 {
        p.on_ack(&ack(i, i, 10_000, 1, 0));
    }
    assert_eq!(p.cwnd(), 51);
    // Half marked: half the growth (the (1 − p) factor of the unsaturated increase).
    let mut q = in_avoidance(50, 0.5, PragueConfig::default());
    for i in 0..100u64 {
        q.on_ack(&ack(i, i, 10_000, 1, (i % 2) as u32));
    }
    assert_eq!(q.cwnd(), 51, "frac {}", q.frac_cwnd());
    assert!(q.frac_cwnd() < 51.05);
}

#[test]
fn loss_halves_the_window_and_suspends_growth_until_recovery_ends() {
    let mut p = in_avoidance(40, 0.1, PragueConfig::default());
    p.on_congestion(&congestion(MS, CongestionKind::Loss));
    assert!((p.frac_cwnd() - 20.0).abs() < 1e-9);
    for i in 0..40u64 {
        p.on_ack(&ack(MS + i, i, 10_000, 1, 0));
    }
    assert_eq!(p.cwnd(), 20, "no growth while in loss");
    assert_eq!(p.ssthresh(), 20);
    p.on_recovery_exit(2 * MS);
    for i in 0..20u64 {
        p.on_ack(&ack(2 * MS + i, 40 + i, 10_000, 1, 0));
    }
    assert_eq!(p.cwnd(), 21);
}

#[test]
fn a_timeout_leaves_the_minimum_window_as_cwnd_and_ssthresh() {
    let mut p = in_avoidance(40, 0.1, PragueConfig::default());
    p.on_rto(MS, 40, false);
    assert_eq!(p.cwnd(), 1);
    // The next ACK applies the carried reduction: below MIN_CWND it stops at 2.
    p.on_ack(&ack(2 * MS, 1, 100, 1, 0));
    assert_eq!((p.cwnd(), p.ssthresh()), (2, 2));
}

#[test]
fn rate_scaling_grows_short_rtt_flows_like_a_flow_at_the_target_after_the_transition() {
    let cfg = PragueConfig { rtt_transition_rounds: 3, ..PragueConfig::default() };
    let mut p = in_avoidance(20, 0.1, cfg);
    let srtt = 5 * MS;
    let mut una = 0u64;
    let mut t = 0u64;
    for _ in 0..3 {
        assert_eq!(p.ai_ack_increase, 1.0, "unscaled before the transition");
        t += srtt;
        let mut a = ack(t, una, una + 20, 1, 0);
        a.srtt_ns = srtt;
        p.on_ack(&a);
        una += 20;
    }
    // 5 ms is 39 units of 128 µs; 25 ms is 195 units.
    let expected = (39.0f64 / 195.0).powi(2);
    assert!((p.ai_ack_increase - expected).abs() < 1e-12, "ai {}", p.ai_ack_increase);
    // Above the target the increase is unscaled.
    p.srtt_ns = 30 * MS;
    p.update_ai();
    assert_eq!(p.ai_ack_increase, 1.0);
    // RTT_CONTROL_NONE never scales.
    let mut q = in_avoidance(20, 0.1, PragueConfig { rtt_scaling: RttScaling::None, rtt_transition_rounds: 0, ..PragueConfig::default() });
    q.srtt_ns = 5 * MS;
    q.update_ai();
    assert_eq!(q.ai_ack_increase, 1.0);
}

#[test]
fn scalable_scaling_follows_its_r0_r1_law() {
    let mut p = in_avoidance(20, 0.1, PragueConfig { rtt_scaling: RttScaling::Scalable, rtt_transition_rounds: 0, ..PragueConfig::default() });
    // At R0 (128 units = 16.384 ms): (R0/8 + R0 − R1)·R0/R0² = (16 + 116)/128.
    p.srtt_ns = 128 * RTT_UNIT_NS;
    p.update_ai();
    assert!((p.ai_ack_increase - 132.0 / 128.0).abs() < 1e-12, "ai {}", p.ai_ack_increase);
    // Below R1 only the 1/8 floor is left, scaled by rtt/R0.
    p.srtt_ns = 2 * RTT_UNIT_NS;
    p.update_ai();
    assert!((p.ai_ack_increase - 16.0 * 2.0 / 16384.0).abs() < 1e-12);
}

#[test]
fn once_rtt_independent_cuts_and_alpha_updates_wait_a_target_rtt() {
    let cfg = PragueConfig { rtt_transition_rounds: 0, ..PragueConfig::default() };
    let mut p = in_avoidance(100, 0.5, cfg);
    p.round = 1;
    p.on_congestion(&congestion(100 * MS, CongestionKind::Ecn));
    let after_first = p.frac_cwnd();
    assert!((after_first - 75.0).abs() < 1e-9);
    // 10 ms later (less than the 25 ms target, rounded to 24.96 ms): no cut.
    p.on_congestion(&congestion(110 * MS, CongestionKind::Ecn));
    assert_eq!(p.frac_cwnd(), after_first);
    p.on_congestion(&congestion(126 * MS, CongestionKind::Ecn));
    assert!(p.frac_cwnd() < after_first);
    // α: a round that ends 5 ms after the last update is not folded in.
    p.alpha_stamp_ns = 200 * MS;
    p.next_seq = 0;
    p.on_ack(&ack(205 * MS, 10, 20, 4, 4));
    assert_eq!(p.alpha(), 0.5);
    p.on_ack(&ack(226 * MS, 20, 30, 4, 4));
    assert!(p.alpha() > 0.5);
}

#[test]
fn pacing_is_the_window_per_srtt_doubled_below_half_ssthresh() {
    let mut p = in_avoidance(100, 0.1, PragueConfig::default());
    // 100 · 1500 B · 8 / 10 ms = 120 Mbit/s.
    assert_eq!(p.pacing_rate_bps(), Some(120_000_000));
    p.ssthresh = 300;
    assert_eq!(p.pacing_rate_bps(), Some(240_000_000));
}

#[test]
fn without_accecn_prague_is_reno() {
    let mut p = Prague::new(PragueConfig::default()).unwrap();
    established(&mut p, 10 * MS, false);
    assert_eq!(p.pacing_rate_bps(), None);
    for i in 0..10u64 {
        p.on_ack(&ack(i, i, 100, 1, 0));
    }
    assert_eq!(p.cwnd(), 20, "Reno slow start");
    p.on_congestion(&CongestionEvent { now_ns: MS, kind: CongestionKind::Ecn, in_flight_segs: 20, srtt_ns: 10 * MS });
    assert_eq!(p.cwnd(), 10, "RFC 3168 halving");
}
