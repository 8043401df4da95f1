//! Tests for [`super::DualPi2`]. Statistical checks use 4 binomial standard
//! deviations as tolerance; the RNG stream is fixed, so they are repeatable.

use super::*;
use crate::aqm::dualq::C;
use crate::aqm::testing::{compare_pass_through, data, env, random_trace, Harness};
use crate::packet::Ecn;

const MS: u64 = 1_000_000;

fn dp(variant: DualPi2Variant, tweak: impl FnOnce(&mut DualPi2Config)) -> Harness<DualPi2> {
    let mut cfg = DualPi2Config { variant, ..DualPi2Config::default() };
    tweak(&mut cfg);
    Harness::new(DualPi2::new(cfg, &env(100_000_000, 10_000)).unwrap())
}

/// Keep 50 packets of `ecn` queued (all at t = 0, so no sojourn and no
/// step; enough that a run of drops inside one dequeue never reaches the
/// 2-MTU floor), with p' fixed, until `n` AQM decisions were made. Returns
/// the (drops, marks, sent) of the packets' sub-queue.
fn held(h: &mut Harness<DualPi2>, ecn: Ecn, p_prime: f64, n: u64) -> (u64, u64, u64) {
    h.q.vars.p_prime = p_prime;
    let sub = h.q.classify(&data(1, ecn)) as usize;
    let mut sent = 0;
    while sent + h.counters[sub].drops() < n {
        while h.q.len_pkts() < 50 {
            h.enqueue(0, data(1, ecn));
        }
        if h.dequeue(0).is_some() {
            sent += 1;
        }
    }
    (h.counters[sub].drops(), h.counters[sub].marks(), sent)
}

#[track_caller]
fn assert_fraction(hits: u64, n: u64, p: f64) {
    let f = hits as f64 / n as f64;
    let tol = 4.0 * (p * (1.0 - p) / n as f64).sqrt();
    assert!((f - p).abs() <= tol, "fraction {f}, expected {p} +- {tol}");
}

// ---- coupling with p' held fixed ----

#[test]
fn fixed_p_prime_classic_signal_fraction_is_p_cl_over_k_squared() {
    let mut h = dp(DualPi2Variant::Linux, |_| {});
    let n = 40_000;
    let (drops, marks, _) = held(&mut h, Ecn::Ect0, 0.3, n);
    assert_eq!(drops, 0, "ECT(0) classic is marked below overload");
    // p_CL = 0.6, k = 2: p_C = (0.6/2)^2 = 0.09.
    assert_fraction(marks, n, (h.q.p_cl() / 2.0).powi(2));
    assert_fraction(marks, n, 0.09);
    h.assert_conservation();
}

#[test]
fn fixed_p_prime_not_ect_classic_is_dropped_with_p_prime_squared() {
    let mut h = dp(DualPi2Variant::Linux, |_| {});
    let n = 40_000;
    let (drops, marks, _) = held(&mut h, Ecn::NotEct, 0.3, n);
    assert_eq!(marks, 0);
    assert_fraction(drops, n, 0.09);
}

#[test]
fn fixed_p_prime_l4s_coupled_mark_fraction_is_k_p_prime() {
    let mut h = dp(DualPi2Variant::Linux, |_| {});
    let n = 40_000;
    let (drops, marks, _) = held(&mut h, Ecn::Ect1, 0.3, n);
    assert_eq!(drops, 0);
    assert_fraction(marks, n, 0.6);
    assert_eq!(h.counters[L as usize].marked_pkts[MarkReason::Coupled as usize], marks);
}

#[test]
fn rfc_variant_marks_l4s_deterministically_with_recur() {
    let mut h = dp(DualPi2Variant::Rfc, |_| {});
    let (_, marks, sent) = held(&mut h, Ecn::Ect1, 0.125, 1000);
    // p_CL = 0.25: the accumulator passes 1 at every 4th packet from the 5th.
    assert_eq!(sent, 1000);
    assert!((249..=250).contains(&marks), "marks {marks}");
}

// ---- overload ----

#[test]
fn overload_switches_l4s_to_drop_with_p_c_and_marks_every_survivor() {
    let mut h = dp(DualPi2Variant::Linux, |_| {});
    let n = 40_000;
    // k*p' = 1.6 > 1: saturated.
    let (drops, marks, sent) = held(&mut h, Ecn::Ect1, 0.8, n);
    assert_fraction(drops, n, 0.64);
    assert_eq!(marks, sent, "100 % marking of what is not dropped");
    assert_eq!(h.counters[L as usize].dropped_pkts[DropReason::Overload as usize], drops);
}

#[test]
fn overload_drops_classic_ect_instead_of_marking() {
    let mut h = dp(DualPi2Variant::Linux, |_| {});
    let n = 40_000;
    let (drops, marks, _) = held(&mut h, Ecn::Ect0, 0.8, n);
    assert_eq!(marks, 0);
    assert_fraction(drops, n, 0.64);
}

#[test]
fn overflow_mode_caps_p_prime_at_one_over_k() {
    let mut h = dp(DualPi2Variant::Linux, |c| c.drop_on_overload = false);
    h.enqueue(0, data(1, Ecn::NotEct));
    h.timer(2_000 * MS); // 2 s of Classic sojourn: the PI step alone exceeds 1
    assert_eq!(h.q.vars.p_prime, 0.5);
}

#[test]
fn l4s_overload_wrr_still_serves_classic_ten_percent() {
    let mut h = dp(DualPi2Variant::Linux, |_| {});
    let mut classic = 0;
    for _ in 0..10_000 {
        while h.q.dq.l.len() < 20 {
            h.enqueue(0, data(1, Ecn::Ect1));
        }
        while h.q.dq.c.len() < 20 {
            h.enqueue(0, data(2, Ecn::NotEct));
        }
        if h.dequeue(0).unwrap().subq == C {
            classic += 1;
        }
    }
    // wc = 10 %: after the initial credit (-80 MTU) one C packet per 9 L.
    assert!((999..=1001).contains(&classic), "classic {classic}");
}

// ---- native L4S AQM ----

#[test]
fn linux_step_marks_l4s_above_1ms_sojourn_only() {
    let mut h = dp(DualPi2Variant::Linux, |_| {});
    for _ in 0..4 {
        h.enqueue(0, data(1, Ecn::Ect1));
    }
    assert_eq!(h.dequeue(900_000).unwrap().ecn, Ecn::Ect1);
    assert_eq!(h.dequeue(MS).unwrap().ecn, Ecn::Ect1, "exactly 1 ms is not above");
    assert_eq!(h.dequeue(1_100_000).unwrap().ecn, Ecn::Ce);
    // The step applies even to a lone packet and below 2 MTU of backlog.
    assert_eq!(h.dequeue(5 * MS).unwrap().ecn, Ecn::Ce);
    assert_eq!(h.counters[L as usize].marked_pkts[MarkReason::Step as usize], 2);
}

#[test]
fn rfc_ramp_marks_half_at_its_midpoint_and_spares_a_lone_packet() {
    let mut h = dp(DualPi2Variant::Rfc, |_| {});
    // Batches of 10 L packets served 1.0 ms after arrival: ramp
    // (1.0 - 0.8)/0.4 = 0.5 for the first 9; the 10th is alone (Th_len).
    for b in 0..100u64 {
        let t = b * 10 * MS;
        for _ in 0..10 {
            h.enqueue(t, data(1, Ecn::Ect1));
        }
        for _ in 0..10 {
            h.dequeue(t + MS).unwrap();
        }
    }
    let marks = h.counters[L as usize].marked_pkts[MarkReason::Step as usize];
    assert!((449..=450).contains(&marks), "marks {marks}");
    // A lone packet far above the ramp is not marked.
    let mut h = dp(DualPi2Variant::Rfc, |_| {});
    h.enqueue(0, data(1, Ecn::Ect1));
    assert_eq!(h.dequeue(5 * MS).unwrap().ecn, Ecn::Ect1);
}

// ---- the 2-MTU floor ----

#[test]
fn no_pi_signal_while_less_than_two_mtu_remain() {
    let mut h = dp(DualPi2Variant::Linux, |_| {});
    h.q.vars.p_prime = 1.0;
    for s in 0..3 {
        let mut p = data(1, Ecn::NotEct);
        p.seq = s;
        h.enqueue(0, p);
    }
    // 1st pop leaves 3000 B: dropped (p' = 1); 2nd leaves 1500 B < 2 MTU: sent.
    assert_eq!(h.dequeue(0).unwrap().seq, 1);
    assert_eq!(h.drops(), 1);
    assert_eq!(h.dequeue(0).unwrap().seq, 2);
    assert_eq!((h.drops(), h.marks()), (1, 0));
}

// ---- the PI controller ----

#[test]
fn pi_update_uses_max_head_sojourn_in_linux_and_classic_only_in_rfc() {
    let mut h = dp(DualPi2Variant::Linux, |_| {});
    h.enqueue(0, data(1, Ecn::Ect1));
    h.timer(30 * MS);
    // 41/256 * (0.030 - 0.015) + 819/256 * (0.030 - 0)
    assert!((h.q.vars.p_prime - 0.098_378_906_25).abs() < 1e-12, "{}", h.q.vars.p_prime);
    let mut h = dp(DualPi2Variant::Rfc, |_| {});
    h.enqueue(0, data(1, Ecn::Ect1));
    h.timer(30 * MS);
    assert_eq!(h.q.vars.p_prime, 0.0, "an L-queue delay does not drive the RFC PI");
    h.enqueue(0, data(2, Ecn::NotEct));
    h.timer(60 * MS);
    // Classic head 60 ms, previous 0: 0.15*(0.060-0.015) + 3*(0.060-0) = 0.18675.
    assert!((h.q.vars.p_prime - 0.186_75).abs() < 1e-12, "{}", h.q.vars.p_prime);
    assert_eq!(h.q.next_timer_ns(), Some(75 * MS));
}

#[test]
fn variants_resolve_their_appendix_a_and_kernel_defaults() {
    let p = dp(DualPi2Variant::Rfc, |_| {}).q.params;
    assert_eq!((p.target_ns, p.tupdate_ns, p.alpha, p.beta, p.native), (15 * MS, 15 * MS, 0.15, 3.0, NativeAqm::Ramp));
    let p = dp(DualPi2Variant::Linux, |c| c.alpha = Some(0.2)).q.params;
    assert_eq!((p.tupdate_ns, p.alpha, p.native), (16 * MS, 0.2, NativeAqm::Step));
    let e = DualPi2::new(DualPi2Config { coupling_factor: 0.0, ..DualPi2Config::default() }, &env(1, 1)).unwrap_err();
    assert!(e.starts_with("coupling_factor:"), "{e}");
}

#[test]
fn registry_builds_every_dualq_name_and_rejects_unknown_keys() {
    let params = serde_json::json!({"variant": "rfc", "scheduler": "ts_fifo", "ramp_min_th": "500us"});
    let (q, norm) = crate::aqm::build("dualpi2", &params, &env(10_000_000, 100)).unwrap();
    assert_eq!(q.subqueue_names(), &["l4s", "classic"]);
    assert_eq!(q.probe_names(), &["p_prime", "p_c", "p_cl"]);
    assert_eq!((norm["variant"].as_str(), norm["ramp_min_th"].as_str()), (Some("rfc"), Some("500us")));
    let e = crate::aqm::build("dualpi2", &serde_json::json!({"tupdat": "1ms"}), &env(1, 1)).unwrap_err();
    assert!(e.contains("tupdate"), "{e}");
    for name in ["red", "ared", "codel", "fq_codel", "pie", "pi2", "dualpi2", "curvy_red"] {
        assert!(crate::aqm::build(name, &serde_json::Value::Null, &env(10_000_000, 100)).is_ok(), "{name}");
    }
}

#[test]
fn random_trace_conserves_packets_in_both_variants_and_schedulers() {
    for (variant, sched) in [
        (DualPi2Variant::Linux, SchedulerKind::Wrr),
        (DualPi2Variant::Rfc, SchedulerKind::Wrr),
        (DualPi2Variant::Rfc, SchedulerKind::TsFifo),
    ] {
        let mut h = dp(variant, |c| {
            c.scheduler = sched;
            c.tupdate_ns = Some(5 * MS);
        });
        h.q.dq = DualQueue::new(
            crate::aqm::QueueLimit { pkts: Some(40), bytes: None },
            1500,
            L4sEct::L4s,
            sched,
            10,
            50 * MS,
        )
        .unwrap();
        random_trace(&mut h, 20_000);
        h.assert_conservation();
    }
}

/// The engine's early hand-off relies on `pass_through` leaving DualPI2
/// exactly as `enqueue` then `dequeue` would (`compare_pass_through`:
/// packets, counters, random draws, DualPI2's variables and the WRR credit
/// after every step of a trace of overload and drain): both variants, both
/// schedulers, any-ECT classification without drop on overload, and a byte
/// limit that a lone packet can overflow (which restarts the credit).
#[test]
fn pass_through_equals_enqueue_then_dequeue() {
    type Tweak = fn(&mut DualPi2Config);
    let cases: [(&str, DualPi2Variant, Tweak, Option<u64>); 4] = [
        ("linux", DualPi2Variant::Linux, |_| {}, None),
        ("rfc, ts-fifo", DualPi2Variant::Rfc, |c| c.scheduler = SchedulerKind::TsFifo, None),
        ("any ect, no drop on overload", DualPi2Variant::Linux, |c| {
            c.l4s_ect = L4sEct::Any;
            c.drop_on_overload = false;
        }, None),
        ("1000-byte limit", DualPi2Variant::Linux, |_| {}, Some(1000)),
    ];
    for (name, variant, tweak, limit_bytes) in cases {
        let mut cfg = DualPi2Config { variant, tupdate_ns: Some(5 * MS), ..DualPi2Config::default() };
        tweak(&mut cfg);
        let mut e = env(100_000_000, 200);
        if let Some(b) = limit_bytes {
            e.limit = crate::aqm::QueueLimit { pkts: None, bytes: Some(b) };
        }
        let mut a = Harness::new(DualPi2::new(cfg.clone(), &e).unwrap());
        let mut b = Harness::new(DualPi2::new(cfg, &e).unwrap());
        let (passed, changed) = compare_pass_through(&mut a, &mut b, |q| format!("{:?} {:?}", q.vars, q.dq.credit()));
        assert!(passed > 1000, "{name}: {passed} arrivals at an empty queue");
        // The PI's and the step's signals (random draws) between them.
        assert!(a.drops() > 100 && a.marks() > 100, "{name}: {} drops, {} marks", a.drops(), a.marks());
        if limit_bytes.is_some() {
            assert!(changed > 0, "{name}: no lone packet overflowed the buffer after the credit moved");
        }
    }
}
