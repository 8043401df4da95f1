//! Trace-driven tests of VDQ-CSAQM: the virtual queue and its CTV, the
//! dequeue decisions of the slides, strict priority and conservation.
use super::*;
use crate::aqm::testing::{compare_pass_through, data, env, random_trace, Harness};
use crate::packet::Ecn;

const GBPS: u64 = 1_000_000_000;

fn pkt(flow: u32, ecn: Ecn, pv: u32) -> Packet {
    let mut p = data(flow, ecn);
    p.aux = pv;
    p
}

fn vdq(cfg: VdqCsaqmConfig) -> Harness<VdqCsaqm> {
    Harness::new(VdqCsaqm::new(cfg, &env(GBPS, 10_000)).unwrap())
}

// ---------------------------------------------------------------------------
// Virtual queue and CTV

#[test]
fn ctv_signals_the_lowest_valued_share_equal_to_the_excess_per_period() {
    // 12 Mbit/s = 1500 B/ms; target 3 ms = 4500 B; limit 100 ms.
    let mut vq = VirtualQueue::new(12_000_000, 3_000_000, 100_000_000);
    assert_eq!(vq.target_bytes, 4500);
    for pv in (1..=20).rev() {
        vq.push(0, pv * 10, 1500);
    }
    // 30000 B held, 25500 B over target. Over a 100 ms period (150000 B) the
    // share to signal is 0.17: 5100 B, i.e. the four lowest-valued records.
    assert_eq!(vq.ctv(100_000_000, 0), Some(40));
    // Over 200 ms the share halves: 2550 B, two records.
    assert_eq!(vq.ctv(200_000_000, 0), Some(20));
    // Over 10 ms (15000 B) the excess exceeds a period: everything is signalled.
    assert_eq!(vq.ctv(10_000_000, 0), Some(200));
}

#[test]
fn vq_at_or_below_its_target_has_no_ctv() {
    let mut vq = VirtualQueue::new(12_000_000, 3_000_000, 100_000_000);
    for pv in [5, 6, 7] {
        vq.push(0, pv, 1500);
    }
    assert_eq!((vq.bytes(), vq.ctv(10_000_000, 0)), (4500, None));
    // Unmarked packets (PV 0) rank lowest: they are signalled first.
    vq.push(0, 0, 1500);
    assert_eq!(vq.ctv(10_000_000, 0), Some(0));
}

#[test]
fn vq_serves_records_at_its_rate_and_forgets_their_values() {
    let mut vq = VirtualQueue::new(12_000_000, 3_000_000, 100_000_000);
    for i in 0..10 {
        vq.push(0, 100 + i, 1500);
    }
    vq.drain(4_000_000); // 4 ms = 6000 B = the four oldest records
    assert_eq!(vq.bytes(), 6 * 1500);
    assert_eq!((100..104).map(|v| vq.bytes_of_value(v)).sum::<u64>(), 0);
    assert_eq!(vq.bytes_of_value(104), 1500);
    // Half a record of service is remembered, not lost to rounding.
    vq.drain(4_500_000);
    vq.drain(5_000_000);
    assert_eq!(vq.bytes(), 5 * 1500);
    // Empty VQ: no credit accumulates while idle.
    vq.drain(1_000_000_000);
    vq.push(1_000_000_000, 9, 1500);
    vq.drain(1_000_000_500);
    assert_eq!(vq.bytes(), 1500);
}

/// The FIFO model builds its histogram from the records only when a CTV is
/// computed. Against a reference that keeps one bin per value up to date at
/// every record's entry and exit (and serves with 128-bit arithmetic), over
/// a random trace of pushes and drains that fills the VQ past its limit and
/// lets it run empty: the same bytes, the same per-value bytes and the same
/// CTV for every rule and several periods, twice in a row.
#[test]
fn fifo_ctv_equals_a_histogram_kept_per_record() {
    struct Reference {
        rate_bps: u64,
        limit_bytes: u64,
        records: std::collections::VecDeque<(u32, u64)>,
        head_served: u64,
        bins: Vec<u64>,
        bytes: u64,
        last_ns: u64,
        carry: u128,
        /// Records discarded because the VQ was full.
        discarded: usize,
    }
    impl Reference {
        fn pop(&mut self) {
            let (pv, size) = self.records.pop_front().unwrap();
            self.bins[pv as usize] -= size;
            self.bytes -= size;
            self.head_served = 0;
        }
        fn drain(&mut self, now_ns: u64) {
            let dt = now_ns.saturating_sub(self.last_ns);
            self.last_ns = self.last_ns.max(now_ns);
            if self.bytes == 0 {
                self.carry = 0;
                return;
            }
            let total = u128::from(self.rate_bps) * u128::from(dt) + self.carry;
            let mut serve = (total / 8_000_000_000) as u64;
            self.carry = total % 8_000_000_000;
            while let Some(&(_, size)) = self.records.front() {
                if serve < size - self.head_served {
                    self.head_served += serve;
                    return;
                }
                serve -= size - self.head_served;
                self.pop();
            }
            self.carry = 0;
        }
        fn push(&mut self, now_ns: u64, pv: u32, size: u64) {
            self.drain(now_ns);
            while !self.records.is_empty() && self.bytes + size > self.limit_bytes {
                self.pop();
                self.discarded += 1;
            }
            self.records.push_back((pv, size));
            self.bins[pv as usize] += size;
            self.bytes += size;
        }
        fn lowest_share_value(&self, share: f64) -> u32 {
            let mut below = 0;
            (0..=PV_MAX).find(|&v| {
                below += self.bins[v as usize];
                below as f64 >= share
            })
            .unwrap_or(PV_MAX)
        }
    }
    // 12 Mbit/s = 1500 B/ms; target 3 ms, limit 20 ms = 30000 B.
    let (rate_bps, target_ns, limit_ns) = (12_000_000, 3_000_000, 20_000_000);
    let mut rule_vqs = [CtvRule::ExcessShare, CtvRule::Budget].map(|r| VirtualQueue::with_model(rate_bps, target_ns, limit_ns, VqModel::Fifo, r));
    let mut reference = Reference {
        rate_bps,
        limit_bytes: 30_000,
        records: Default::default(),
        head_served: 0,
        bins: vec![0; PV_MAX as usize + 1],
        bytes: 0,
        last_ns: 0,
        carry: 0,
        discarded: 0,
    };
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let (mut now, mut signalled, mut emptied) = (0u64, 0, 0);
    for step in 0..20_000 {
        // Bursts faster than the VQ's rate, then pauses that drain it.
        now += if (step / 500) % 2 == 0 { next(800_000) } else { next(3_000_000) };
        let (pv, size) = (next(u64::from(PV_MAX) + 1) as u32, 64 + next(1437));
        reference.push(now, pv, size);
        for vq in &mut rule_vqs {
            vq.push(now, pv, size as u32);
        }
        // The record just pushed is the only one: the VQ had run empty.
        emptied += usize::from(reference.records.len() == 1);
        if step % 7 != 0 {
            continue;
        }
        let waiting = next(20_000);
        for (vq, rule) in rule_vqs.iter_mut().zip([CtvRule::ExcessShare, CtvRule::Budget]) {
            assert_eq!(vq.bytes(), reference.bytes, "step {step}");
            let probe = next(u64::from(PV_MAX) + 1) as u32;
            assert_eq!(vq.bytes_of_value(probe), reference.bins[probe as usize], "step {step}");
            for period_ns in [1_000_000, 10_000_000, 100_000_000] {
                let held = reference.bytes + waiting;
                let want = (held > 4_500 && reference.bytes > 0).then(|| {
                    let excess = (held - 4_500) as f64;
                    let f = match rule {
                        CtvRule::ExcessShare => (excess / (rate_bps * period_ns / 8_000_000_000) as f64).min(1.0),
                        CtvRule::Budget => excess / held as f64,
                    };
                    reference.lowest_share_value(f * reference.bytes as f64)
                });
                let got = vq.ctv(period_ns, waiting);
                assert_eq!(got, want, "step {step}, {rule:?}, period {period_ns} ns");
                assert_eq!(vq.ctv(period_ns, waiting), got, "a second computation, step {step}");
                signalled += usize::from(got.is_some());
            }
        }
    }
    // The trace reached every regime: CTVs set, the VQ full and empty.
    let full = reference.discarded;
    assert!(signalled > 1000 && full > 100 && emptied > 10, "{signalled} CTVs set, {full} records discarded, {emptied} times empty");
}

#[test]
fn ideal_vq_serves_the_highest_values_first_and_discards_the_lowest() {
    // 12 Mbit/s = 1500 B/ms; limit 10 ms = 15000 B.
    let mut vq = VirtualQueue::with_model(12_000_000, 3_000_000, 10_000_000, VqModel::Ideal, CtvRule::ExcessShare);
    for pv in [50, 10, 30, 20, 40] {
        vq.push(0, pv, 1500);
    }
    vq.drain(2_500_000); // 3750 B from the top: 50 and 40 gone, half of 30
    assert_eq!((vq.bytes(), vq.hist[50], vq.hist[40], vq.hist[30]), (3750, 0, 0, 750));
    // Overflow: 8 more records make 15750 B; the 750 B over the limit leave the lowest bin.
    for _ in 0..8 {
        vq.push(2_500_000, 60, 1500);
    }
    assert_eq!((vq.bytes(), vq.hist[10], vq.hist[20]), (15_000, 750, 1500));
    // Served to empty: no carry or stale bounds survive.
    vq.drain(1_000_000_000);
    assert_eq!(vq.bytes(), 0);
    vq.push(1_000_000_000, 7, 1500);
    assert_eq!((vq.hist[7], vq.lo, vq.hi), (1500, 7, 7));
}

#[test]
fn budget_rule_signals_everything_outside_the_highest_valued_target_bytes() {
    // Target 3 ms = 4500 B: the three highest-valued records are kept.
    let mut vq = VirtualQueue::with_model(12_000_000, 3_000_000, 100_000_000, VqModel::Fifo, CtvRule::Budget);
    for pv in 1..=10 {
        vq.push(0, pv * 10, 1500);
    }
    // 15000 B held, 10500 B over: 70 % of the bytes, the seven lowest records.
    assert_eq!(vq.ctv(10_000_000, 0), Some(70));
    // 1500 B still waiting in the physical queue use budget too: eight records.
    assert_eq!(vq.ctv(10_000_000, 1500), Some(80));
}

#[test]
fn waiting_bytes_count_towards_the_vq_only_with_count_waiting() {
    // 1,000 Classic packets (1.5 MB) arrive at once; ten have left by the
    // first update. VQ1 (10 ms at 0.98 Gbit/s = 1.225 MB) holds 15 kB, the
    // physical queue 1.485 MB more.
    for (count_waiting, want_ctv) in [(true, true), (false, false)] {
        let mut h = vdq(VdqCsaqmConfig { count_waiting, ..VdqCsaqmConfig::default() });
        for i in 0..1000 {
            h.enqueue(0, pkt(i % 4, Ecn::NotEct, 100));
        }
        for _ in 0..10 {
            h.dequeue(10_000_000);
        }
        h.timer(10_000_000);
        assert_eq!(h.q.ctv1().is_some(), want_ctv, "count_waiting = {count_waiting}");
    }
}

#[test]
fn full_vq_discards_its_oldest_records() {
    // Limit 2 ms = 3000 B: two records.
    let mut vq = VirtualQueue::new(12_000_000, 1_000_000, 2_000_000);
    for pv in [1, 2, 3] {
        vq.push(0, pv, 1500);
    }
    assert_eq!(vq.bytes(), 3000);
    assert_eq!((vq.bytes_of_value(1), vq.bytes_of_value(2), vq.bytes_of_value(3)), (0, 1500, 1500));
}

// ---------------------------------------------------------------------------
// Dequeue decisions (slides p. 14)

/// A VDQ-CSAQM whose CTVs are set by filling the VQs and running the timer.
fn with_ctvs(ctv0: Option<u32>, ctv1: Option<u32>, classic_ecn: bool) -> Harness<VdqCsaqm> {
    let mut h = vdq(VdqCsaqmConfig { classic_ecn, ..VdqCsaqmConfig::default() });
    let now = 10_000_000;
    for (vq, ctv) in [(&mut h.q.vq0, ctv0), (&mut h.q.vq1, ctv1)] {
        if let Some(c) = ctv {
            // Above the target with values > c, then one record at c tips it over.
            let n = vq.target_bytes / 1500;
            for _ in 0..n {
                vq.push(now, c + 1000, 1500);
            }
            vq.push(now, c, 1500);
            vq.push(now, c, 1500);
        }
    }
    h.timer(now);
    assert_eq!((h.q.ctv0(), h.q.ctv1()), (ctv0, ctv1));
    h
}

#[test]
fn l4s_packet_at_or_below_max_ctv_is_marked_above_is_forwarded() {
    for (ctv0, ctv1) in [(Some(500), Some(300)), (Some(300), Some(500)), (None, Some(500)), (Some(500), None)] {
        let mut h = with_ctvs(ctv0, ctv1, false);
        let t = 10_000_000;
        for pv in [499, 500, 501, 0] {
            h.enqueue(t, pkt(1, Ecn::Ect1, pv));
        }
        let ecns: Vec<Ecn> = std::iter::from_fn(|| h.dequeue(t)).map(|p| p.ecn).collect();
        assert_eq!(ecns, [Ecn::Ce, Ecn::Ce, Ecn::Ect1, Ecn::Ce], "ctv0 {ctv0:?} ctv1 {ctv1:?}");
        let c = &h.counters[L as usize];
        // CTV1 decides first (coupled), CTV0 for the rest.
        let coupled = c.marked_pkts[MarkReason::Coupled as usize];
        assert_eq!(coupled, if ctv1 == Some(500) { 3 } else if ctv1.is_some() { 1 } else { 0 });
        assert_eq!(h.drops(), 0);
    }
}

#[test]
fn classic_packet_at_or_below_ctv1_is_dropped_and_ctv0_does_not_apply() {
    let mut h = with_ctvs(Some(900), Some(300), false);
    let t = 10_000_000;
    for (pv, ecn) in [(300, Ecn::NotEct), (301, Ecn::NotEct), (299, Ecn::Ect0), (800, Ecn::NotEct)] {
        h.enqueue(t, pkt(2, ecn, pv));
    }
    let pvs: Vec<u32> = std::iter::from_fn(|| h.dequeue(t)).map(|p| p.value()).collect();
    assert_eq!(pvs, [301, 800]);
    assert_eq!((h.drops(), h.marks()), (2, 0));
    h.assert_conservation();
}

#[test]
fn classic_ecn_marks_ect_below_ctv1_but_still_drops_not_ect() {
    let mut h = with_ctvs(None, Some(300), true);
    let t = 10_000_000;
    h.enqueue(t, pkt(2, Ecn::Ect0, 10));
    h.enqueue(t, pkt(2, Ecn::NotEct, 10));
    let out: Vec<Ecn> = std::iter::from_fn(|| h.dequeue(t)).map(|p| p.ecn).collect();
    assert_eq!(out, [Ecn::Ce]);
    assert_eq!((h.drops(), h.marks()), (1, 1));
}

#[test]
fn sent_packets_update_the_vqs_l4s_both_classic_only_vq1_dropped_none() {
    let mut h = with_ctvs(None, Some(300), false);
    let (b0, b1) = (h.q.vq0.bytes(), h.q.vq1.bytes());
    let t = h.q.vq1.last_ns; // no drain between
    h.enqueue(t, pkt(1, Ecn::Ect1, 100)); // marked, still sent
    h.enqueue(t, pkt(2, Ecn::NotEct, 100)); // dropped
    h.enqueue(t, pkt(2, Ecn::NotEct, 999)); // sent
    while h.dequeue(t).is_some() {}
    assert_eq!(h.q.vq0.bytes(), b0 + 1500);
    assert_eq!(h.q.vq1.bytes(), b1 + 3000);
}

#[test]
fn l4s_has_strict_priority_over_classic() {
    let mut h = vdq(VdqCsaqmConfig::default());
    for i in 0..20 {
        h.enqueue(0, pkt(i % 2, if i % 2 == 0 { Ecn::NotEct } else { Ecn::Ect1 }, 100));
    }
    let order: Vec<u8> = std::iter::from_fn(|| h.dequeue(1)).map(|p| p.subq).collect();
    assert_eq!(order, [[L; 10], [1; 10]].concat());
}

#[test]
fn ctv_follows_the_load_through_the_timer() {
    // L4S traffic at the full link rate (above VQ0's 0.95 C): VQ0 grows past
    // its 1 ms target and a CTV appears at the next update; after a quiet
    // period the VQs drain and the CTVs are cleared.
    let mut h = vdq(VdqCsaqmConfig::default());
    let gap = 12_000; // 1500 B at 1 Gbit/s
    let mut t = 0;
    while t < 30_000_000 {
        h.enqueue(t, pkt(1, Ecn::Ect1, 1000 + (t / gap % 7) as u32));
        h.dequeue(t);
        if h.q.next_timer_ns().is_some_and(|n| n <= t) {
            h.timer(t);
        }
        t += gap;
    }
    assert!(h.q.ctv0().is_some(), "VQ0 over target at 100 % load");
    assert!(h.q.ctv1().is_none(), "VQ1 (0.98 C, 10 ms) not yet over target");
    h.timer(60_000_000);
    assert_eq!((h.q.ctv0(), h.q.ctv1()), (None, None));
}

#[test]
fn random_trace_conserves_packets() {
    // 10 Mbit/s with short VQ targets, so CTVs come and go during the trace.
    let cfg = VdqCsaqmConfig {
        vq0_target_ns: 1_000_000,
        vq0_limit_ns: 5_000_000,
        vq1_target_ns: 2_000_000,
        vq1_limit_ns: 9_000_000,
        classic_ecn: true,
        ..Default::default()
    };
    let mut h = Harness::new(VdqCsaqm::new(cfg, &env(10_000_000, 50)).unwrap());
    random_trace(&mut h, 20_000);
    h.assert_conservation();
}

#[test]
fn config_errors_name_the_field() {
    let e = |cfg: VdqCsaqmConfig| VdqCsaqm::new(cfg, &env(GBPS, 100)).unwrap_err();
    assert!(e(VdqCsaqmConfig { vq0_factor: 1.5, ..Default::default() }).starts_with("vq0_factor: must be a fraction"));
    assert!(e(VdqCsaqmConfig { vq1_limit_ns: 5_000_000, ..Default::default() }).starts_with("vq1_limit: must exceed vq1_target"));
    assert!(e(VdqCsaqmConfig { update_interval_ns: 0, ..Default::default() }).starts_with("update_interval:"));
    assert!(e(VdqCsaqmConfig { classic_protection: 101, ..Default::default() }).starts_with("classic_protection:"));
}

/// The engine's early hand-off relies on `pass_through` leaving VDQ-CSAQM
/// exactly as `enqueue` then `dequeue` would (`compare_pass_through`:
/// packets, counters, both virtual queues, both CTVs and the WRR credit
/// after every step of a trace of overload and drain). At 2 Mbit/s the
/// trace's departures (about 2.5 Mbit/s in overload) fill the virtual
/// queues, so CTVs are set and packets signalled; a passed packet is pushed
/// to the virtual queues as a sent one is.
#[test]
fn pass_through_equals_enqueue_then_dequeue() {
    for classic_protection in [0, 10] {
        let cfg = VdqCsaqmConfig { classic_protection, ..VdqCsaqmConfig::default() };
        let e = env(2_000_000, 200);
        let mut a = Harness::new(VdqCsaqm::new(cfg.clone(), &e).unwrap());
        let mut b = Harness::new(VdqCsaqm::new(cfg, &e).unwrap());
        // A VQ's records and counters (its histogram follows from the records;
        // formatting its bins at every step made the test take 48 s).
        let vq = |v: &VirtualQueue| format!("{:?} {} {} {} {} {} {}", v.records, v.head_served, v.bytes, v.last_ns, v.carry, v.lo, v.hi);
        let state = |q: &VdqCsaqm| format!("{} {} {:?} {:?} {:?}", vq(&q.vq0), vq(&q.vq1), q.ctv0, q.ctv1, q.dq.credit());
        let (passed, changed) = compare_pass_through(&mut a, &mut b, state);
        assert!(passed > 1000, "{passed} arrivals at an empty queue");
        assert!(changed > 1000, "{changed} passed packets changed the virtual queues");
        assert!(a.drops() + a.marks() > 100, "{} signals", a.drops() + a.marks());
    }
}
