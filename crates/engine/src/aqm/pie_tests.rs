//! Trace-driven tests for [`super::Pie`]; expected values are worked out by
//! hand from the RFC 8033 / Linux formulas in the comments.

use super::*;
use crate::aqm::testing::{compare_pass_through, data, env, random_trace, Harness};
use crate::packet::Ecn;

const MS: u64 = 1_000_000;

fn pie(cfg: PieConfig) -> Harness<Pie> {
    Harness::new(Pie::new(cfg, &env(10_000_000, 100_000)).unwrap())
}

#[track_caller]
fn assert_close(got: f64, want: f64) {
    assert!((got - want).abs() <= 1e-12 + 1e-9 * want.abs(), "got {got:e}, want {want:e}");
}

/// Every 15 ms: enqueue one packet; from 30 ms on also dequeue one (its
/// sojourn is exactly 30 ms) and run the update. Returns p after each update.
fn constant_30ms_delay(h: &mut Harness<Pie>, updates: usize) -> Vec<f64> {
    let mut ps = vec![];
    for k in 0..updates as u64 + 2 {
        let t = k * 15 * MS;
        h.enqueue(t, data(1, Ecn::NotEct));
        if k >= 2 {
            assert_eq!(h.dequeue(t).map(|p| t - p.enq_ns), Some(30 * MS));
            h.timer(t);
            ps.push(h.q.vars.p);
        }
    }
    ps
}

// ---- controller arithmetic ----

#[test]
fn step_to_30ms_delay_raises_p_by_autoscaled_gains() {
    let mut h = pie(PieConfig::default());
    let ps = constant_30ms_delay(&mut h, 4);
    // 1st: (0.125*(0.030-0.015) + 1.25*(0.030-0)) / 2048 (p < 1e-6)
    let p1 = (0.001875 + 0.0375) / 2048.0;
    assert_close(ps[0], 1.922_607_421_875e-5);
    assert_close(ps[0], p1);
    // Then only the integral term 0.001875 remains, /128 while 1e-5 <= p < 1e-4.
    assert_close(ps[1], 3.387_451_171_875e-5);
    assert_close(ps[2], 4.852_294_921_875e-5);
    assert_close(ps[3], 6.317_138_671_875e-5);
}

#[test]
fn linux_314_preset_scales_gains_in_three_tiers() {
    let cfg =
        PieConfig { preset: PiePreset::Linux314, estimator: Some(PieEstimator::Timestamp), ..PieConfig::default() };
    let mut h = pie(cfg);
    let ps = constant_30ms_delay(&mut h, 2);
    // target 20 ms: (0.125*0.010 + 1.25*0.030)/8 = 0.00484375; then +0.00125/8.
    assert_close(ps[0], 0.004_843_75);
    assert_close(ps[1], 0.005);
}

#[test]
fn autoscale_table_matches_rfc_8033_decades() {
    let f = |p| 1.0 / autoscale(Scaling::Rfc, p);
    assert_eq!(
        [f(0.0), f(5e-6), f(5e-5), f(5e-4), f(5e-3), f(0.05), f(0.1)],
        [2048.0, 512.0, 128.0, 32.0, 8.0, 2.0, 1.0]
    );
}

fn with_state(preset: PiePreset, p: f64, qdelay_ns: u64, qdelay_old_ns: u64) -> Harness<Pie> {
    let mut h = pie(PieConfig { preset, ..PieConfig::default() });
    for _ in 0..4 {
        h.enqueue(0, data(1, Ecn::NotEct));
    }
    h.q.vars.p = p;
    h.q.vars.qdelay_ns = qdelay_ns;
    h.q.vars.qdelay_old_ns = qdelay_old_ns;
    h
}

#[test]
fn above_ten_percent_increase_is_capped_at_two_percent() {
    let mut h = with_state(PiePreset::Rfc8033, 0.15, 100 * MS, 0);
    h.timer(1);
    // Raw step 0.125*0.085 + 1.25*0.1 = 0.135625 > 0.02: capped.
    assert_close(h.q.vars.p, 0.17);
    // Linux also adds 2 % above 250 ms of delay.
    let mut h = with_state(PiePreset::Linux, 0.15, 300 * MS, 0);
    h.timer(1);
    assert_close(h.q.vars.p, 0.19);
}

#[test]
fn empty_queue_for_two_updates_decays_p() {
    // RFC: (0.5 - 0.125*0.015) * 0.98; Linux: the same step, then p -= p/64.
    let mut h = with_state(PiePreset::Rfc8033, 0.5, 0, 0);
    h.q.q = PacketQueue::default();
    h.timer(1);
    assert_close(h.q.vars.p, 0.498_125 * 0.98);
    let mut h = with_state(PiePreset::Linux, 0.5, 0, 0);
    h.q.q = PacketQueue::default();
    h.timer(1);
    assert_close(h.q.vars.p, 0.498_125 - 0.498_125 / 64.0);
}

// ---- burst allowance ----

#[test]
fn burst_allowance_suppresses_early_drops_until_it_runs_out() {
    let mut h = with_state(PiePreset::Rfc8033, 0.5, 30 * MS, 30 * MS);
    for _ in 0..200 {
        h.enqueue(0, data(1, Ecn::NotEct));
    }
    assert_eq!(h.drops(), 0, "150 ms of burst allowance at start");
    // Nine updates leave 15 ms; the tenth exhausts it.
    for k in 1..=9 {
        h.timer(k * 15 * MS);
    }
    assert_eq!(h.q.vars.burst_ns, 15 * MS);
    for _ in 0..200 {
        h.enqueue(136 * MS, data(1, Ecn::NotEct));
    }
    assert_eq!(h.drops(), 0);
    h.timer(150 * MS);
    for _ in 0..200 {
        h.enqueue(151 * MS, data(1, Ecn::NotEct));
    }
    assert!(h.drops() > 20, "p ~ 0.5 once the allowance is gone: {}", h.drops());
    h.assert_conservation();
}

#[test]
fn rfc_preset_rearms_burst_after_two_quiet_updates_with_p_zero() {
    let mut h = with_state(PiePreset::Rfc8033, 0.0, 0, 0);
    h.q.vars.burst_ns = 0;
    h.timer(1);
    assert_eq!(h.q.vars.burst_ns, 150 * MS);
}

// ---- ECN ----

fn marking_run(p: f64, ecn: Ecn) -> Harness<Pie> {
    let cfg = PieConfig { ecn: true, derandomize: Some(false), ..PieConfig::default() };
    let mut h = pie(cfg);
    h.q.vars = PieVars { p, qdelay_old_ns: 30 * MS, ..PieVars::default() };
    for _ in 0..4000 {
        h.enqueue(0, data(1, ecn));
    }
    h
}

#[test]
fn ect_is_marked_while_p_at_most_ten_percent() {
    let h = marking_run(0.05, Ecn::Ect0);
    assert_eq!(h.drops(), 0);
    assert!((150..250).contains(&h.marks()), "marks {}", h.marks()); // 4000*0.05 = 200
    let h = marking_run(0.1, Ecn::Ect1);
    assert_eq!(h.drops(), 0);
}

#[test]
fn ect_is_dropped_above_ten_percent() {
    let h = marking_run(0.2, Ecn::Ect0);
    assert_eq!(h.marks(), 0);
    assert!((700..900).contains(&h.drops()), "drops {}", h.drops()); // 4000*0.2 = 800
}

#[test]
fn not_ect_is_dropped_even_at_low_p() {
    let h = marking_run(0.05, Ecn::NotEct);
    assert_eq!(h.marks(), 0);
    assert!(h.drops() > 100);
}

// ---- derandomisation ----

#[test]
fn derandomised_drops_are_spaced_between_accu_bounds() {
    let mut h = pie(PieConfig::default());
    h.enqueue(0, data(1, Ecn::NotEct));
    h.enqueue(0, data(1, Ecn::NotEct));
    // p = 1/64 exactly: accu reaches 0.85 at the 55th arrival and 8.5 at the 544th.
    h.q.vars = PieVars { p: 1.0 / 64.0, qdelay_old_ns: 30 * MS, ..PieVars::default() };
    let mut last = 0u64;
    let mut gaps = vec![];
    for i in 1..=50_000u64 {
        let before = h.drops();
        h.enqueue(0, data(1, Ecn::NotEct));
        if h.drops() > before {
            gaps.push(i - last);
            last = i;
        }
    }
    assert!(gaps.len() > 100);
    let (lo, hi) = (gaps.iter().min().unwrap(), gaps.iter().max().unwrap());
    assert!(*lo >= 55 && *hi <= 544, "gaps span {lo}..{hi}");
    // Gap = 54 + Geometric(1/64) capped at 490: mean 54 + 64(1 - (63/64)^490)
    // = 117.97, sd 63.5; over ~420 gaps the sample mean is within 4 sd (12.4).
    let mean = gaps.iter().sum::<u64>() as f64 / gaps.len() as f64;
    assert!((105.5..130.5).contains(&mean), "mean gap {mean}");
}

// ---- dequeue-rate estimator ----

#[test]
fn dq_rate_estimator_turns_backlog_into_delay_by_littles_law() {
    let cfg = PieConfig { preset: PiePreset::Linux, estimator: Some(PieEstimator::DqRate), ..PieConfig::default() };
    let mut h = pie(cfg);
    for _ in 0..40 {
        h.enqueue(0, data(1, Ecn::NotEct));
    }
    // 1500 B every 1.2 ms. The measurement starts at the first dequeue
    // (58.5 kB left >= 16 KiB) and completes after 11 packets (16.5 kB) at
    // 13.2 ms: rate = 16 500 B / 12 ms.
    for k in 1..=11u64 {
        h.dequeue(k * 1_200_000);
    }
    h.timer(13_200_000);
    let rate = 16_500.0 / 12e6; // bytes per ns
    let want = (29.0 * 1500.0 / rate) as u64; // 31.636 ms
    assert!(h.q.vars.qdelay_ns.abs_diff(want) <= 1, "{} vs {want}", h.q.vars.qdelay_ns);
}

// ---- presets and validation ----

#[test]
fn presets_resolve_their_defaults_and_honour_overrides() {
    let p = Pie::new(PieConfig { preset: PiePreset::Linux314, ..PieConfig::default() }, &env(1, 10)).unwrap().params;
    assert_eq!((p.target_ns, p.tupdate_ns, p.max_burst_ns), (20 * MS, 30 * MS, 100 * MS));
    assert_eq!((p.estimator, p.derandomize), (PieEstimator::DqRate, false));
    let cfg = PieConfig { preset: PiePreset::Linux314, target_ns: Some(5 * MS), ..PieConfig::default() };
    assert_eq!(Pie::new(cfg, &env(1, 10)).unwrap().params.target_ns, 5 * MS);
    let e = Pie::new(PieConfig { tupdate_ns: Some(0), ..PieConfig::default() }, &env(1, 10)).unwrap_err();
    assert!(e.starts_with("tupdate:"), "{e}");
}

#[test]
fn registry_parses_preset_names_and_human_units() {
    let params = serde_json::json!({"preset": "linux-3.14", "max_burst": "50ms", "ecn": true});
    let (q, norm) = crate::aqm::build("pie", &params, &env(10_000_000, 100)).unwrap();
    let crate::aqm::AnyQdisc::Pie(pie) = q else { panic!("not pie") };
    assert_eq!((pie.params.target_ns, pie.params.max_burst_ns), (20 * MS, 50 * MS));
    assert_eq!(norm["preset"], "linux-3.14");
    assert_eq!(norm["max_burst"], "50ms");
    let e = crate::aqm::build("pie", &serde_json::json!({"preset": "linux-4"}), &env(1, 1)).unwrap_err();
    assert!(e.contains("linux-3.14"), "{e}");
}

#[test]
fn random_trace_conserves_packets_in_every_preset() {
    for preset in [PiePreset::Rfc8033, PiePreset::Linux, PiePreset::Linux314] {
        let cfg = PieConfig { preset, ecn: true, ..PieConfig::default() };
        let mut h = Harness::new(Pie::new(cfg, &env(10_000_000, 50)).unwrap());
        random_trace(&mut h, 20_000);
        h.assert_conservation();
    }
}

/// The engine's early hand-off relies on `pass_through` leaving PIE exactly
/// as `enqueue` then `dequeue` would (`compare_pass_through`: packets,
/// counters, random draws and PIE's variables after every step of a trace
/// of overload and drain, timer ticks included): the three presets, both
/// estimators, ECN on and off, and a byte limit below a packet.
#[test]
fn pass_through_equals_enqueue_then_dequeue() {
    let cases = [
        (PiePreset::Rfc8033, None, false, None),
        (PiePreset::Rfc8033, Some(PieEstimator::DqRate), true, None),
        (PiePreset::Linux, None, true, None),
        (PiePreset::Linux, Some(PieEstimator::DqRate), false, None),
        (PiePreset::Linux314, None, false, None),
        (PiePreset::Linux, None, false, Some(1000)),
    ];
    for (preset, estimator, ecn, limit_bytes) in cases {
        let cfg = PieConfig { preset, estimator, ecn, ..PieConfig::default() };
        let mut e = env(10_000_000, 200);
        if let Some(b) = limit_bytes {
            e.limit = crate::aqm::QueueLimit { pkts: None, bytes: Some(b) };
        }
        let mut a = Harness::new(Pie::new(cfg.clone(), &e).unwrap());
        let mut b = Harness::new(Pie::new(cfg, &e).unwrap());
        let (passed, changed) = compare_pass_through(&mut a, &mut b, |q| format!("{:?}", q.vars));
        let case = format!("{preset:?} {estimator:?} ecn {ecn} limit {limit_bytes:?}");
        assert!(passed > 1000, "{case}: {passed} arrivals at an empty queue");
        if limit_bytes.is_none() {
            assert!(a.drops() + a.marks() > 100, "{case}: {} signals", a.drops() + a.marks());
        }
        // A packet leaving an empty queue sets the timestamp estimator's
        // delay and dequeue clock; the rate estimator measures only from a
        // backlog of `dq_threshold` bytes, so it keeps its variables.
        if a.q.params.estimator == PieEstimator::Timestamp {
            assert!(changed > 100, "{case}: {changed} passed packets changed PIE's variables");
        }
    }
}
