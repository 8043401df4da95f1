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
