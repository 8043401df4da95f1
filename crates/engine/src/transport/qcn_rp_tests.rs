//! Reaction point and QCN source: scripted CNMs, sends and timer expiries
//! with exact expected rates (cycle jitter off).

use super::*;
use crate::packet::PacketKind;
use crate::sim::rng::Domain;

const G: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;

/// Allerton 2008 §II's RP (extra fast recovery off, the default), no jitter.
fn exact() -> QcnRpConfig {
    QcnRpConfig { cycle_jitter: 0.0, ..QcnRpConfig::default() }
}

/// With seed 003's extra fast recovery.
fn efr() -> QcnRpConfig {
    QcnRpConfig { extra_fast_recovery: true, ..exact() }
}

fn rp(line_bps: u64, cfg: QcnRpConfig) -> ReactionPoint {
    ReactionPoint::new(cfg, line_bps, SimRng::derive(1, Domain::Flow, 0))
}

/// Send 1500-byte packets until a byte-counter cycle ends; returns how many.
#[track_caller]
fn bc_cycle(r: &mut ReactionPoint) -> u32 {
    for n in 1..10_000 {
        if r.on_sent(1500) {
            return n;
        }
    }
    panic!("no cycle ended");
}

// ---------------------------------------------------------------------------
// Rate decrease

#[test]
fn cnm_cuts_cr_by_gd_fb_and_keeps_the_old_cr_as_target() {
    let mut r = rp(G, exact());
    assert_eq!((r.rate_bps(), r.stage()), (G, RpStage::Released));
    // 1 Gbit/s * (1 - 32/128) = 750 Mbit/s; TR = the rate before the cut.
    r.on_cnm(0, 32);
    assert_eq!((r.vars.cr_bps, r.vars.tr_bps, r.rate_bps()), (750_000_000, G, 750_000_000));
    assert_eq!(r.stage(), RpStage::FastRecovery);
    // |Fb| = 63: 750 Mbit/s * 65/128 = 380 859 375 bit/s exactly; TR follows CR.
    r.on_cnm(1, 63);
    assert_eq!((r.vars.cr_bps, r.vars.tr_bps), (380_859_375, 750_000_000));
    // Never below the minimum rate (5 Mbit/s).
    for t in 2..30 {
        r.on_cnm(t, 63);
    }
    assert_eq!(r.vars.cr_bps, 5_000_000);
    assert_eq!(r.vars.cnms, 30);
}

// ---------------------------------------------------------------------------
// Fast Recovery, Active Increase, release

#[test]
fn fast_recovery_halves_the_gap_to_tr_for_five_cycles_then_active_increase_releases() {
    let mut r = rp(G, exact());
    r.on_cnm(0, 32); // CR 750 M, TR 1 G
    // CR_k = TR - (TR - CR_0)/2^k, TR fixed; 150 KB = 100 packets per cycle.
    for want in [875_000_000, 937_500_000, 968_750_000, 984_375_000, 992_187_500] {
        assert_eq!(bc_cycle(&mut r), 100);
        assert_eq!((r.vars.cr_bps, r.vars.tr_bps), (want, G));
    }
    assert_eq!(r.stage(), RpStage::FastRecovery);
    // Cycle 6 is Active Increase and half as long (75 KB): TR += 5 Mbit/s, CR = (CR + TR)/2.
    assert_eq!(bc_cycle(&mut r), 50);
    assert_eq!((r.vars.cr_bps, r.vars.tr_bps), (998_593_750, 1_005_000_000));
    assert_eq!(r.stage(), RpStage::ActiveIncrease);
    // Cycle 7: TR 1.010 G, CR would be 1 004 296 875 > line rate: the limiter is released.
    assert_eq!(bc_cycle(&mut r), 50);
    assert_eq!((r.stage(), r.rate_bps(), r.timer_deadline_ns()), (RpStage::Released, G, None));
    assert!(!r.on_sent(1500), "a released RP counts no cycles");
}

#[test]
fn active_then_hyper_active_increase_add_r_ai_and_i_times_r_hai() {
    // Four |Fb| = 63 cuts from 100 Gbit/s leave TR far below the line rate, so
    // CR (which chases TR) is not released during the test.
    let mut r = rp(100 * G, exact());
    for _ in 0..4 {
        r.on_cnm(0, 63);
    }
    let tr0 = r.vars.tr_bps;
    assert_eq!(tr0, 13_095_140_457); // 100 G * (65/128)^3, rounded at each step
    for _ in 0..5 {
        bc_cycle(&mut r); // Fast Recovery: TR stays
    }
    assert_eq!(r.vars.tr_bps, tr0);
    bc_cycle(&mut r); // byte counter at 6: Active Increase
    assert_eq!((r.vars.tr_bps - tr0, r.stage()), (5_000_000, RpStage::ActiveIncrease));
    // Timer cycles: 15 ms each for the first five, then 7.5 ms (halved past Fast Recovery).
    let mut deadlines = vec![];
    let mut tr = vec![];
    for _ in 0..6 {
        let t = r.timer_deadline_ns().unwrap();
        deadlines.push(t);
        assert!(r.on_timer(t));
        tr.push(r.vars.tr_bps - tr0);
    }
    assert_eq!(deadlines, vec![15 * MS, 30 * MS, 45 * MS, 60 * MS, 75 * MS, 82_500_000]);
    // Timer cycles 1-5: Active Increase (the byte counter is past 5); cycle 6: both
    // counters past 5, Hyper-Active Increase with i = min(6, 6) - 5 = 1.
    assert_eq!(tr, vec![10_000_000, 15_000_000, 20_000_000, 25_000_000, 30_000_000, 80_000_000]);
    assert_eq!(r.stage(), RpStage::HyperActiveIncrease);
    // Byte counter 7: i = min(7, 6) - 5 = 1; then timer 7: i = min(7, 7) - 5 = 2.
    bc_cycle(&mut r);
    assert_eq!(r.vars.tr_bps - tr0, 130_000_000);
    let t = r.timer_deadline_ns().unwrap();
    assert_eq!(t, 90 * MS);
    r.on_timer(t);
    assert_eq!(r.vars.tr_bps - tr0, 230_000_000);
    // A timer call before the deadline does nothing.
    assert!(!r.on_timer(t + 1));
}

#[test]
fn the_timer_alone_recovers_an_idle_limiter() {
    // No packets sent: every rate increase comes from the 15 ms timer.
    let mut r = rp(G, exact());
    r.on_cnm(0, 32); // CR 750 M, TR 1 G
    for (k, want) in [875_000_000, 937_500_000, 968_750_000, 984_375_000, 992_187_500].into_iter().enumerate() {
        let t = r.timer_deadline_ns().unwrap();
        assert_eq!(t, (k as u64 + 1) * 15 * MS);
        r.on_timer(t);
        assert_eq!(r.vars.cr_bps, want);
    }
    while r.stage() != RpStage::Released {
        let t = r.timer_deadline_ns().unwrap();
        r.on_timer(t);
    }
}

// ---------------------------------------------------------------------------
// Extra fast recovery (seed 003 "Other Features")

#[test]
fn extra_fast_recovery_keeps_tr_through_a_burst_of_cnms() {
    let mut r = rp(G, efr());
    // A burst: three CNMs with no byte-counter cycle between them. CR is cut
    // each time (750 M, then *96/128 twice), TR stays at the pre-burst 1 G.
    for t in 0..3 {
        r.on_cnm(t, 32);
    }
    assert_eq!((r.vars.cr_bps, r.vars.tr_bps), (421_875_000, G));
    // First cycle end: TR/CR = 2.37 < 10, so TR is kept and CR halves the gap.
    assert_eq!(bc_cycle(&mut r), 100);
    assert_eq!((r.vars.cr_bps, r.vars.tr_bps), (710_937_500, G));
    // A CNM after a completed cycle: TR = CR as usual.
    r.on_cnm(10, 32);
    assert_eq!((r.vars.cr_bps, r.vars.tr_bps), (533_203_125, 710_937_500));
    // The same burst without extra fast recovery: TR follows CR down.
    let mut p = rp(G, exact());
    for t in 0..3 {
        p.on_cnm(t, 32);
    }
    assert_eq!((p.vars.cr_bps, p.vars.tr_bps), (421_875_000, 562_500_000));
}

#[test]
fn extra_fast_recovery_shrinks_a_tr_ten_times_cr_at_the_first_cycle() {
    // Six |Fb| = 63 CNMs in a burst: CR = 10 G·(65/128)^6 = 170.9 Mbit/s, TR 10 G.
    let mut r = rp(10 * G, efr());
    for t in 0..6 {
        r.on_cnm(t, 63);
    }
    let cr0 = r.vars.cr_bps;
    assert!((170_000_000..172_000_000).contains(&cr0), "{cr0}");
    assert_eq!(r.vars.tr_bps, 10 * G);
    // TR > 10·CR: the first cycle's end divides TR by 8 (1.25 G), then CR = (CR + TR)/2.
    bc_cycle(&mut r);
    assert_eq!(r.vars.tr_bps, 1_250_000_000);
    assert_eq!(r.vars.cr_bps, (cr0 + 1_250_000_000).div_ceil(2));
    // Cycle 2: no more shrinking (only the first cycle's end), plain Fast Recovery.
    let tr = r.vars.tr_bps;
    bc_cycle(&mut r);
    assert_eq!(r.vars.tr_bps, tr);
    // The timer's first cycle is a first cycle too.
    let mut r = rp(10 * G, efr());
    for t in 0..6 {
        r.on_cnm(t, 63);
    }
    let t = r.timer_deadline_ns().unwrap();
    r.on_timer(t);
    assert_eq!(r.vars.tr_bps, 1_250_000_000);
    // Without extra fast recovery TR followed CR down and is not shrunk.
    let mut p = rp(10 * G, exact());
    for t in 0..6 {
        p.on_cnm(t, 63);
    }
    let tr = p.vars.tr_bps;
    bc_cycle(&mut p);
    assert_eq!(p.vars.tr_bps, tr);
}

// ---------------------------------------------------------------------------
// Drift: the timer raises a slow source relatively more than a fast one

#[test]
fn the_timer_drifts_low_rate_sources_preferentially() {
    // Seed 003: "Drift: timer-based, gentle rate increase ... improves fairness
    // by preferentially drifting low rate sources". One |Fb| = 63 CNM halves a
    // 10 Mbit/s and a 10 Gbit/s source. A byte counter alone would take the
    // slow one 1000 times as long to recover (150 KB at ~5 Mbit/s is 240 ms
    // per cycle); the timer recovers it in 5 x 15 ms of Fast Recovery plus
    // one 7.5 ms Active Increase cycle ((CR + TR + 5 Mbit/s)/2 > line rate).
    let release_ms = |line: u64| {
        let mut s = QcnSource::new(0, 1500, Ecn::NotEct, 0, None, rp(line, exact()));
        s.on_cnm(0, &cnm(63));
        let mut out = vec![];
        for us in (10..2_000_000).step_by(10) {
            run_until(&mut s, us * 1000, &mut out);
            if s.rp.stage() == RpStage::Released {
                return (us as f64 / 1000.0, s.rp.vars.bc_cycles);
            }
        }
        panic!("not released");
    };
    let (slow_ms, slow_bc) = release_ms(10_000_000);
    let (fast_ms, _) = release_ms(10 * G);
    assert_eq!(slow_bc, 0, "the slow source's byte counter never completed a cycle");
    assert!((82.4..82.6).contains(&slow_ms), "slow source released after {slow_ms} ms");
    assert!(fast_ms < 2.0, "fast source released after {fast_ms} ms");
    assert!(slow_ms / fast_ms < 1000.0 / 10.0, "ratio {}", slow_ms / fast_ms);
}

// ---------------------------------------------------------------------------
// Fb-hat (seed 003)

#[test]
fn fbhat_saturates_halves_every_50_packets_and_shortens_cycles_when_small() {
    let mut r = rp(G, QcnRpConfig { fbhat: true, ..exact() });
    r.on_cnm(0, 20);
    assert_eq!(r.vars.fbhat, 20);
    r.on_cnm(0, 20);
    assert_eq!(r.vars.fbhat, 31, "a 5-bit counter saturates at 31");
    assert_eq!(r.vars.bc_left, 150_000, "Fb-hat 31: a full 100-packet cycle");
    let mut seen = vec![];
    for _ in 0..4 {
        for _ in 0..50 {
            r.on_sent(1500);
        }
        seen.push(r.vars.fbhat);
    }
    assert_eq!(seen, vec![15, 7, 3, 1]);
    // Cycle ends at packets 100 (Fb-hat 7: next cycle 150 KB) and 200 (Fb-hat 1: 75 KB).
    assert_eq!((r.vars.bc_cycles, r.vars.bc_left), (2, 75_000));
    // A new CNM raises Fb-hat above the threshold: full cycles again.
    r.on_cnm(1, 5);
    assert_eq!((r.vars.fbhat, r.vars.bc_left), (6, 150_000));
}

#[test]
fn without_fbhat_the_estimate_stays_zero_and_cycles_keep_their_length() {
    let mut r = rp(G, exact());
    r.on_cnm(0, 20);
    for _ in 0..200 {
        r.on_sent(1500);
    }
    assert_eq!((r.vars.fbhat, r.vars.bc_cycles, r.vars.bc_left), (0, 2, 150_000));
}

#[test]
fn cycle_jitter_spreads_cycle_lengths_within_fifteen_percent() {
    let mut r = rp(G, QcnRpConfig::default());
    let mut lens = vec![];
    for t in 0..2000 {
        r.on_cnm(t, 1);
        lens.push(r.vars.bc_left as f64);
    }
    let (lo, hi) = lens.iter().fold((f64::MAX, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
    let mean = lens.iter().sum::<f64>() / lens.len() as f64;
    assert!(lo >= 127_500.0 && hi <= 172_500.0, "{lo}..{hi}");
    assert!(hi - lo > 40_000.0 && (mean - 150_000.0).abs() < 2_000.0, "{lo}..{hi} mean {mean}");
}

// ---------------------------------------------------------------------------
// The source

fn run_until(s: &mut QcnSource, until_ns: u64, out: &mut Vec<Packet>) {
    while let Some(t) = s.next_wakeup_ns().filter(|&t| t <= until_ns) {
        s.on_timer(t, out);
    }
}

fn cnm(fb: u32) -> Packet {
    let mut p = Packet::new(PacketKind::Cnm, 0, 64);
    p.aux = fb;
    p
}

#[test]
fn source_spacing_follows_the_reaction_point_rate() {
    let mut s = QcnSource::new(0, 1500, Ecn::NotEct, 0, None, rp(G, exact()));
    let mut out = vec![];
    run_until(&mut s, 100_000, &mut out);
    // 1 Gbit/s, 1500 B: one packet every 12 us, at 0, 12, ..., 96 us.
    assert_eq!(out.len(), 9);
    assert!(out.windows(2).all(|w| w[1].ts_ns - w[0].ts_ns == 12_000));
    // A CNM at 100 us: 750 Mbit/s, so the next packet leaves 16 us after the last (96 us).
    s.on_cnm(100_000, &cnm(32));
    out.clear();
    run_until(&mut s, 150_000, &mut out);
    let ts: Vec<u64> = out.iter().map(|p| p.ts_ns).collect();
    assert_eq!(ts, vec![112_000, 128_000, 144_000]);
    assert_eq!((s.pkts_sent, s.bytes_sent), (12, 18_000));
}

#[test]
fn a_low_rate_source_recovers_through_its_timer() {
    // Seven |Fb| = 63 CNMs take a 1 Gbit/s source to 8.7 Mbit/s (TR 17.2 Mbit/s).
    let mut s = QcnSource::new(0, 1500, Ecn::NotEct, 0, None, rp(G, exact()));
    for _ in 0..7 {
        s.on_cnm(0, &cnm(63));
    }
    let (cr0, tr0) = (s.rp.vars.cr_bps, s.rp.vars.tr_bps);
    assert!((8_000_000..9_000_000).contains(&cr0), "{cr0}");
    let mut out = vec![];
    // 75 ms: five 15 ms timer cycles, while 150 KB at ~10-17 Mbit/s takes longer than that.
    run_until(&mut s, 75 * MS, &mut out);
    assert_eq!((s.rp.vars.timer_cycles, s.rp.vars.bc_cycles), (5, 0));
    assert_eq!(s.rp.vars.cr_bps, tr0 - (tr0 - cr0) / 32);
    // Then Active Increase every 7.5 ms, and Hyper-Active once the byte counter is past 5
    // cycles: back to line rate (released) well within a second.
    let mut released_at = None;
    for ms in 76..1000 {
        run_until(&mut s, ms * MS, &mut out);
        if s.rp.stage() == RpStage::Released {
            released_at = Some(ms);
            break;
        }
    }
    let at = released_at.expect("released within 1 s");
    assert!((120..400).contains(&at), "released after {at} ms"); // 188 ms when written
}

/// The `stage` probe value (the last of `probe_names`).
fn stage_probe(s: &QcnSource) -> f64 {
    let mut out = [0.0; 4];
    s.probe(&mut out);
    assert_eq!(s.probe_names()[3], "stage");
    out[3]
}

#[test]
fn the_stage_probe_follows_released_fast_recovery_active_and_hyper_active_increase() {
    // Seed 003's "QCN: Distribution of flows in FR, AI" counts sources per stage;
    // the reproduction reads it from this probe. Allerton 2008 §II: a CNM puts
    // the RP in Fast Recovery; past 5 cycles of one counter it is in Active
    // Increase, past 5 of both in Hyper-Active Increase; a new CNM restarts
    // Fast Recovery; reaching line rate releases the limiter.
    let mut s = QcnSource::new(0, 1500, Ecn::NotEct, 0, None, rp(100 * G, exact()));
    assert_eq!(stage_probe(&s), 0.0); // no CNM yet: released
    for _ in 0..4 {
        s.on_cnm(0, &cnm(63));
    }
    assert_eq!(stage_probe(&s), 1.0);
    for _ in 0..5 {
        bc_cycle(&mut s.rp);
    }
    assert_eq!(stage_probe(&s), 1.0); // five completed cycles: still Fast Recovery
    bc_cycle(&mut s.rp);
    assert_eq!(stage_probe(&s), 2.0); // byte counter at 6: Active Increase
    for _ in 0..6 {
        let t = s.rp.timer_deadline_ns().unwrap();
        s.rp.on_timer(t);
    }
    assert_eq!(stage_probe(&s), 3.0); // both counters at 6: Hyper-Active Increase
    s.on_cnm(100 * MS, &cnm(1));
    assert_eq!(stage_probe(&s), 1.0); // a CNM restarts Fast Recovery
    // Small cuts from a line rate just above CR: Fast Recovery alone releases it.
    let mut s = QcnSource::new(0, 1500, Ecn::NotEct, 0, None, rp(G, exact()));
    s.on_cnm(0, &cnm(1));
    let mut cycles = 0;
    while stage_probe(&s) != 0.0 {
        bc_cycle(&mut s.rp);
        cycles += 1;
        assert!(cycles < 20, "never released");
    }
    assert_eq!(s.rp.rate_bps(), G);
}
