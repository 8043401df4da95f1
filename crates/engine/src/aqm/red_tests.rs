//! Tests for [`super::Red`] (RED and ARED). Expected values come from the
//! Floyd-Jacobson / ARED formulas worked out in the comments.

use super::*;
use crate::aqm::testing::{compare_pass_through, data, env, random_trace, Harness};
use crate::packet::Ecn;

const MS: u64 = 1_000_000;

#[track_caller]
fn assert_close(got: f64, want: f64, tol: f64) {
    assert!((got - want).abs() <= tol, "got {got}, want {want} (tol {tol})");
}

// ---- the probability functions ----

#[test]
fn p_b_is_linear_between_thresholds_then_gentle_up_to_twice_max_th() {
    let pb = |avg, gentle| red_p_b(avg, 5.0, 15.0, 0.1, gentle);
    assert_eq!(pb(4.9, true), 0.0);
    assert_close(pb(10.0, true), 0.05, 1e-15);
    assert_close(pb(15.0, true), 0.1, 1e-15);
    assert_close(pb(22.5, true), 0.1 + 0.9 * 0.5, 1e-15);
    assert_eq!(pb(30.0, true), 1.0);
    assert_eq!(pb(15.0, false), 1.0);
}

#[test]
fn p_a_grows_with_count_since_last_drop() {
    // Floyd-Jacobson: p_b/(1 - count*p_b).
    assert_close(red_p_a(0.05, 10, false), 0.1, 1e-15);
    assert_eq!(red_p_a(0.05, 20, false), 1.0);
    // ns-2 wait: nothing until count*p_b >= 1, then p_b/(2 - count*p_b).
    assert_eq!(red_p_a(0.05, 19, true), 0.0);
    assert_close(red_p_a(0.05, 30, true), 0.1, 1e-15);
    assert_eq!(red_p_a(0.05, 40, true), 1.0);
}

// ---- statistical check with the queue held ----

fn red(cfg: RedConfig) -> Harness<Red> {
    Harness::new(Red::new(cfg, &env(10_000_000, 1_000)).unwrap())
}

/// w_q = 1 makes avg the instantaneous length seen by each arrival.
fn instant(ecn: bool, gentle: bool, hard_drop: bool) -> RedConfig {
    RedConfig { min_th: 5.0, max_th: 15.0, max_p: 0.1, w_q: 1.0, ecn, gentle, hard_drop, ..RedConfig::default() }
}

/// Fill to `q` packets, then `n` arrivals that each find exactly `q`
/// packets (an accepted arrival is followed by one departure). Returns the
/// fraction of arrivals that were dropped or marked.
fn held_signal_fraction(h: &mut Harness<Red>, q: usize, n: usize, ecn: Ecn) -> f64 {
    while h.q.len_pkts() < q {
        h.enqueue(0, data(1, ecn));
    }
    let before = h.drops() + h.marks();
    for _ in 0..n {
        h.enqueue(0, data(1, ecn));
        if h.q.len_pkts() > q {
            h.dequeue(0).unwrap();
        }
    }
    (h.drops() + h.marks() - before) as f64 / n as f64
}

/// Long-run signal fraction 1/E[N], N = arrivals between signals, for a
/// fixed p_b under the wait rule (p_a(n) = 0 for n*p_b < 1, p_b/(2 - n*p_b)
/// below 2, then 1), by summing the survival function.
fn renewal_fraction(p_b: f64) -> f64 {
    let (mut surv, mut e) = (1.0f64, 0.0f64);
    for n in 1..10_000u32 {
        e += surv;
        let x = n as f64 * p_b;
        let pa = if x < 1.0 {
            0.0
        } else if x < 2.0 {
            p_b / (2.0 - x)
        } else {
            1.0
        };
        surv *= 1.0 - pa.min(1.0);
        if surv == 0.0 {
            break;
        }
    }
    1.0 / e
}

#[test]
fn held_queue_between_thresholds_drops_at_the_red_rate() {
    let mut h = red(instant(false, true, true));
    let n = 40_000;
    let f = held_signal_fraction(&mut h, 10, n, Ecn::NotEct);
    let want = renewal_fraction(0.05); // p_b = 0.1 * (10-5)/(15-5)
    let tol = 4.0 * (want * (1.0 - want) / n as f64).sqrt();
    assert_close(f, want, tol);
    assert_eq!(h.marks(), 0);
    h.assert_conservation();
}

#[test]
fn held_queue_in_gentle_region_drops_on_the_gentle_ramp() {
    let mut h = red(instant(false, true, true));
    let n = 40_000;
    let f = held_signal_fraction(&mut h, 20, n, Ecn::NotEct);
    // p_b = 0.1 + 0.9*(20-15)/15 = 0.4: signals at the 3rd arrival w.p. 1/2,
    // else at the 4th: E[N] = 3.5.
    let want = 1.0 / 3.5;
    assert_close(renewal_fraction(0.4), want, 1e-12);
    let tol = 4.0 * (want * (1.0 - want) / n as f64).sqrt();
    assert_close(f, want, tol);
}

// ---- ECN ----

#[test]
fn ecn_marks_ect_in_the_probabilistic_region_and_never_drops() {
    let mut h = red(instant(true, true, true));
    let f = held_signal_fraction(&mut h, 10, 20_000, Ecn::Ect0);
    assert_eq!(h.drops(), 0);
    assert!(f > 0.02, "{f}");
}

#[test]
fn forced_region_drops_even_ect_with_hard_drop() {
    // Gentle: forced at avg >= 2*max_th = 30. Filling to 30 with ECT packets
    // is all marks; the 31st arrival finds 30 and is dropped.
    let mut h = red(instant(true, true, true));
    while h.q.len_pkts() < 30 {
        h.enqueue(0, data(1, Ecn::Ect0));
    }
    assert_eq!(h.drops(), 0);
    for _ in 0..50 {
        h.enqueue(0, data(1, Ecn::Ect0));
    }
    assert_eq!(h.drops(), 50);
    // Non-gentle: forced from max_th = 15.
    let mut h = red(instant(true, false, true));
    while h.q.len_pkts() < 15 {
        h.enqueue(0, data(1, Ecn::Ect1));
    }
    h.enqueue(0, data(1, Ecn::Ect1));
    assert_eq!(h.drops(), 1);
}

#[test]
fn forced_region_marks_ect_without_hard_drop_like_linux() {
    let mut h = red(instant(true, true, false));
    while h.q.len_pkts() < 30 {
        h.enqueue(0, data(1, Ecn::Ect0));
    }
    let marks = h.marks();
    h.enqueue(0, data(1, Ecn::Ect0));
    assert_eq!((h.drops(), h.marks()), (0, marks + 1));
}

// ---- averaging ----

#[test]
fn idle_period_decays_average_as_if_ptc_packets_passed() {
    let mut h = red(RedConfig::default());
    h.enqueue(0, data(1, Ecn::NotEct));
    h.dequeue(0); // empty: idle from t = 0
    h.q.vars.avg = 10.0;
    h.enqueue(1_000 * MS, data(1, Ecn::NotEct));
    // 10 Mb/s / (8*1500 B) = 833.3 pkt/s -> m = 833; avg *= 0.998^(833+1).
    assert_close(h.q.vars.avg, 10.0 * 0.998f64.powi(834), 1e-12);
}

#[test]
fn busy_queue_average_is_plain_ewma() {
    let mut h = red(RedConfig::default());
    for _ in 0..3 {
        h.enqueue(0, data(1, Ecn::NotEct));
    }
    // Arrivals see 0, 1, 2 packets; the first at t=0 had m = 0.
    let w = 0.002f64;
    let want = ((w * 0.0) * (1.0 - w) + w * 1.0) * (1.0 - w) + w * 2.0;
    assert_close(h.q.vars.avg, want, 1e-15);
}

// ---- Adaptive RED ----

fn ared(rate_bps: u64) -> Harness<Red> {
    Harness::new(Red::new(AredConfig::default(), &env(rate_bps, 1_000)).unwrap())
}

#[test]
fn ared_thresholds_and_weight_follow_link_rate() {
    // 100 Mb/s: C = 8333.3 pkt/s, target 5 ms -> 41.67 pkts; min_th = 20.83.
    let p = ared(100_000_000).q.params;
    assert_close(p.min_th, 0.005 * 1e8 / 12_000.0 / 2.0, 1e-9);
    assert_close(p.max_th, 3.0 * p.min_th, 1e-12);
    assert_close(p.w_q, 1.0 - (-12_000.0f64 / 1e8).exp(), 1e-15);
    // 10 Mb/s: target*C/2 = 2.08 < 5, so min_th = 5, max_th = 15.
    let p = ared(10_000_000).q.params;
    assert_eq!((p.min_th, p.max_th), (5.0, 15.0));
}

fn ared_with(cfg: AredConfig, rate_bps: u64) -> RedParams {
    Red::new(cfg, &env(rate_bps, 1_000)).unwrap().params
}

fn target(ms: u64) -> AredConfig {
    AredConfig { target_delay_ns: ms * MS, ..AredConfig::default() }
}

#[test]
fn ared_target_is_the_middle_of_the_thresholds_above_the_floor() {
    // Floyd, Gummadi, Shenker 2001, §5: target queue = target_delay * C =
    // (min_th + max_th)/2 with max_th = 3 min_th. 100 Mb/s, 1500 B: C = 8333.3 pkt/s.
    for ms in [5, 10, 20, 30] {
        let p = ared_with(target(ms), 100_000_000);
        let c = 1e8 / 12_000.0;
        assert_close((p.min_th + p.max_th) / 2.0, ms as f64 * 1e-3 * c, 1e-9);
        assert_close(p.max_th, 3.0 * p.min_th, 1e-12);
    }
}

#[test]
fn ared_target_has_no_effect_below_the_floor_at_10_mbps() {
    // §5's 5-packet floor on min_th: at 10 Mb/s (C = 833.3 pkt/s) target*C/2
    // reaches 5 packets only at 12 ms, so 5 and 10 ms give the same queue.
    let c = 1e7 / 12_000.0;
    let floor_ms = 2.0 * 5.0 / c * 1e3;
    assert_close(floor_ms, 12.0, 1e-9);
    assert_eq!((ared_with(target(5), 10_000_000).min_th, ared_with(target(10), 10_000_000).max_th), (5.0, 15.0));
    let p = ared_with(target(20), 10_000_000);
    assert_close(p.min_th, 0.020 * c / 2.0, 1e-9);
}

#[test]
fn ared_without_the_floor_maps_every_target() {
    // min_th_floor = 0: the §5 mapping alone, as a Linux user converting a
    // target delay to byte thresholds gets (5 ms at 10 Mb/s: 2.08 / 6.25 pkts).
    let p = ared_with(AredConfig { min_th_floor: 0.0, ..target(5) }, 10_000_000);
    assert_close(p.min_th, 0.005 * 1e7 / 12_000.0 / 2.0, 1e-12);
    assert_close(p.max_th, 3.0 * p.min_th, 1e-12);
}

#[test]
fn ared_explicit_thresholds_override_the_target() {
    // ns-2: a non-zero thresh_/maxthresh_ is kept; maxthresh_ = 0 gives 3*thresh_.
    let p = ared_with(AredConfig { min_th: Some(20.0), max_th: Some(50.0), ..target(5) }, 10_000_000);
    assert_eq!((p.min_th, p.max_th), (20.0, 50.0));
    let p = ared_with(AredConfig { min_th: Some(8.0), w_q: Some(0.25), ..target(5) }, 10_000_000);
    assert_eq!((p.min_th, p.max_th, p.w_q), (8.0, 24.0, 0.25));
    let e = Red::new(AredConfig { min_th: Some(8.0), max_th: Some(8.0), ..target(5) }, &env(10_000_000, 10)).unwrap_err();
    assert!(e.starts_with("max_th:"), "{e}");
    let e = Red::new(AredConfig { min_th_floor: -1.0, ..target(5) }, &env(10_000_000, 10)).unwrap_err();
    assert!(e.starts_with("min_th_floor:"), "{e}");
}

#[test]
fn ared_adapts_max_p_around_explicit_thresholds() {
    // §4's band [min_th + 0.4(max_th - min_th), min_th + 0.6(max_th - min_th)]
    // follows the thresholds given: 20..50 -> band 32..38.
    let mut h = Harness::new(Red::new(AredConfig { min_th: Some(20.0), max_th: Some(50.0), ..target(5) }, &env(10_000_000, 1_000)).unwrap());
    h.enqueue(0, data(1, Ecn::NotEct));
    h.enqueue(0, data(1, Ecn::NotEct));
    h.q.vars.avg = 39.0;
    h.q.vars.max_p = 0.02;
    assert_close(max_p_after_ticks(&mut h, 1)[0], 0.025, 1e-15);
    h.q.vars.avg = 35.0;
    assert_close(max_p_after_ticks(&mut h, 1)[0], 0.025, 1e-15);
    h.q.vars.avg = 31.0;
    assert_close(max_p_after_ticks(&mut h, 1)[0], 0.0225, 1e-15);
}

/// 10 Mb/s ARED (band 9..11 packets) with two packets queued (not idle) and avg forced.
fn ared_at(avg: f64, max_p: f64) -> Harness<Red> {
    let mut h = ared(10_000_000);
    h.enqueue(0, data(1, Ecn::NotEct));
    h.enqueue(0, data(1, Ecn::NotEct));
    h.q.vars.avg = avg;
    h.q.vars.max_p = max_p;
    h
}

fn max_p_after_ticks(h: &mut Harness<Red>, ticks: u64) -> Vec<f64> {
    (1..=ticks)
        .map(|k| {
            h.timer(k * 500 * MS);
            h.q.vars.max_p
        })
        .collect()
}

#[test]
fn ared_max_p_climbs_by_min_of_alpha_and_quarter_above_band() {
    let mut h = ared_at(13.0, 0.02);
    let got = max_p_after_ticks(&mut h, 6);
    // +max_p/4 while max_p < 0.04, then +0.01.
    let want = [0.025, 0.03125, 0.039_062_5, 0.048_828_125, 0.058_828_125, 0.068_828_125];
    for (g, w) in got.iter().zip(want) {
        assert_close(*g, w, 1e-15);
    }
    assert_eq!(h.q.next_timer_ns(), Some(3_500 * MS));
}

#[test]
fn ared_max_p_decays_by_beta_below_band_down_to_bottom() {
    let mut h = ared_at(7.0, 0.02);
    let got = max_p_after_ticks(&mut h, 8);
    let want = [0.018, 0.0162, 0.01458, 0.013_122, 0.011_809_8, 0.010_628_82, 0.01, 0.01];
    for (g, w) in got.iter().zip(want) {
        assert_close(*g, w, 1e-12);
    }
}

#[test]
fn ared_max_p_is_held_inside_the_band_and_capped_at_top() {
    let mut h = ared_at(10.0, 0.05);
    assert_eq!(max_p_after_ticks(&mut h, 3), vec![0.05; 3]);
    let mut h = ared_at(13.0, 0.495);
    assert_eq!(max_p_after_ticks(&mut h, 2), vec![0.5, 0.5]);
}

// ---- config and conservation ----

#[test]
fn config_errors_name_the_field() {
    let e = Red::new(RedConfig { max_th: 4.0, ..RedConfig::default() }, &env(1, 1)).unwrap_err();
    assert!(e.starts_with("max_th:"), "{e}");
    let e = Red::new(AredConfig { interval_ns: 0, ..AredConfig::default() }, &env(1, 1)).unwrap_err();
    assert!(e.starts_with("interval:"), "{e}");
}

#[test]
fn random_trace_conserves_packets_red_and_ared() {
    let mut h = Harness::new(Red::new(RedConfig { ecn: true, ..RedConfig::default() }, &env(10_000_000, 40)).unwrap());
    random_trace(&mut h, 20_000);
    h.assert_conservation();
    let mut h = Harness::new(Red::new(AredConfig::default(), &env(10_000_000, 40)).unwrap());
    random_trace(&mut h, 20_000);
    h.assert_conservation();
}

/// The engine's early hand-off relies on `pass_through` leaving RED exactly
/// as `enqueue` then `dequeue` would (`compare_pass_through`: packets,
/// counters, random draws and RED's variables, the idle clock included,
/// after every step of a trace of overload and drain): RED with ECN, gentle
/// and byte mode, ARED (its timer ticks), and a byte limit below a packet.
#[test]
fn pass_through_equals_enqueue_then_dequeue() {
    let e = env(10_000_000, 200);
    let mut small = env(10_000_000, 200);
    small.limit = crate::aqm::QueueLimit { pkts: None, bytes: Some(1000) };
    let cases: [(&str, Red, crate::aqm::QdiscEnv); 4] = [
        ("red", Red::new(RedConfig::default(), &e).unwrap(), e.clone()),
        ("red ecn gentle bytes", Red::new(RedConfig { ecn: true, gentle: true, byte_mode: true, ..RedConfig::default() }, &e).unwrap(), e.clone()),
        ("ared", Red::new(AredConfig::default(), &e).unwrap(), e.clone()),
        ("red 1000-byte limit", Red::new(RedConfig::default(), &small).unwrap(), small.clone()),
    ];
    for (name, q, _) in cases {
        let mut a = Harness::new(q.clone());
        let mut b = Harness::new(q);
        let (passed, changed) = compare_pass_through(&mut a, &mut b, |q| format!("{:?}", q.vars));
        assert!(passed > 1000, "{name}: {passed} arrivals at an empty queue");
        assert!(changed > 1000, "{name}: {changed} passed packets changed RED's variables");
        if name != "red 1000-byte limit" {
            assert!(a.drops() + a.marks() > 100, "{name}: {} signals", a.drops() + a.marks());
        }
    }
}
