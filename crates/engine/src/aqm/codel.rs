//! CoDel: Controlled Delay active queue management.
//!
//! Normative references (read §5 first; it is the whole algorithm):
//! - RFC 8289, "Controlled Delay Active Queue Management", §5 (annotated
//!   pseudocode: `dodequeue`, `dequeue`, `control_law`) and §4 (the
//!   TARGET / INTERVAL rationale). <https://www.rfc-editor.org/rfc/rfc8289#section-5>
//! - Linux `include/net/codel_impl.h` (`codel_should_drop`, `codel_dequeue`),
//!   which RFC 8289 adopted for the count-reuse rule; `ce_threshold` is a
//!   Linux extension.
//!
//! The core ([`codel_dequeue`]) is generic over [`CodelQueue`], so FQ-CoDel
//! runs one [`CodelVars`] per flow over the same code (as Linux does with
//! callbacks). Time is u64 nanoseconds throughout.
//!
//! DEVIATION (Linux codel.h): 1/√count is computed in f64, not with the
//! kernel's 16-bit Newton iteration (one step per count change). The kernel
//! value is within ~0.5 % of the exact one after a few steps; exact values
//! make drop instants checkable by hand (see the tests).

use super::fifo::{initial_capacity, PacketQueue};
use super::{DropReason, MarkReason, Qdisc, QdiscCtx, QdiscEnv, QueueLimit};
use crate::packet::{Ecn, Packet};
use serde::{Deserialize, Serialize};

/// Defines a config struct that ends with CoDel's four parameters, so that
/// CoDel and FQ-CoDel (RFC 8290 §4: "the same parameters as CoDel") declare
/// them once: the same keys, units, checks and error texts. The fields stay
/// flat (`cfg.target_ns`) and inside serde's strict key list; a nested struct
/// behind `#[serde(flatten)]` would be read as a map, and its errors would
/// lose their key path and the list of allowed keys. Each config keeps its
/// own `Default` (FQ-CoDel turns ECN on).
macro_rules! codel_config {
    ($(#[$attr:meta])* pub struct $name:ident { $($(#[$fattr:meta])* pub $field:ident: $ty:ty,)* }) => {
        $(#[$attr])*
        pub struct $name {
            $($(#[$fattr])* pub $field: $ty,)*
            /// Acceptable minimum standing sojourn time (RFC 8289 §4 TARGET).
            #[serde(rename = "target", with = "crate::sim::units::serde_duration")]
            pub target_ns: u64,
            /// Window over which the minimum sojourn must stay above target before
            /// dropping starts; on the order of a worst-case RTT (RFC 8289 §4 INTERVAL).
            #[serde(rename = "interval", with = "crate::sim::units::serde_duration")]
            pub interval_ns: u64,
            /// CE-mark ECN-capable packets instead of dropping them.
            pub ecn: bool,
            /// Linux extension: CE-mark every ECT packet whose sojourn exceeds this.
            #[serde(rename = "ce_threshold", with = "crate::sim::units::serde_opt_duration", skip_serializing_if = "Option::is_none")]
            pub ce_threshold_ns: Option<u64>,
        }

        impl $name {
            /// Check CoDel's parameters and build them for a link with `mtu` bytes.
            pub fn codel_params(&self, mtu: u32) -> Result<$crate::aqm::codel::CodelParams, String> {
                if self.target_ns == 0 {
                    return Err("target: must be positive".into());
                }
                if self.interval_ns == 0 {
                    return Err("interval: must be positive".into());
                }
                if self.ce_threshold_ns == Some(0) {
                    return Err("ce_threshold: must be positive (omit it to disable)".into());
                }
                Ok($crate::aqm::codel::CodelParams {
                    target_ns: self.target_ns,
                    interval_ns: self.interval_ns,
                    mtu_bytes: mtu as u64,
                    ecn: self.ecn,
                    ce_threshold_ns: self.ce_threshold_ns,
                })
            }
        }
    };
}
pub(crate) use codel_config;

codel_config! {
    #[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
    #[serde(default, deny_unknown_fields)]
    pub struct CodelConfig {}
}

impl Default for CodelConfig {
    fn default() -> Self {
        CodelConfig {
            // 5 ms; RFC 8289 §4 (5-10 % of interval) and Linux codel_params_init.
            target_ns: 5_000_000,
            // 100 ms; RFC 8289 §4 (a worst-case RTT for the Internet), Linux default.
            interval_ns: 100_000_000,
            // off; Linux sch_codel default (fq_codel turns it on).
            ecn: false,
            // disabled; Linux default (no CE threshold marking).
            ce_threshold_ns: None,
        }
    }
}

/// Immutable CoDel parameters (Linux `codel_params`).
#[derive(Debug, Clone, PartialEq)]
pub struct CodelParams {
    pub target_ns: u64,
    pub interval_ns: u64,
    /// MAXPACKET: never drop while the backlog is at most this (bytes).
    pub mtu_bytes: u64,
    pub ecn: bool,
    pub ce_threshold_ns: Option<u64>,
}

/// Per-queue CoDel state (RFC 8289 §5; Linux `codel_vars`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CodelVars {
    /// Drops (or marks) in the current dropping episode; selects the control-law spacing.
    pub count: u32,
    /// `count` when the last dropping episode began (for the reuse rule).
    pub lastcount: u32,
    /// In the dropping state.
    pub dropping: bool,
    /// When the sojourn will have been above target for a whole interval (0 = not above).
    pub first_above_ns: u64,
    /// Next scheduled drop in the dropping state.
    pub drop_next_ns: u64,
    /// Sojourn time of the last packet examined (ns).
    pub ldelay_ns: u64,
}

/// The storage CoDel runs over: pop the head, and report the backlog used
/// by the "never drop below one MTU" check (the qdisc total in FQ-CoDel).
pub trait CodelQueue {
    fn pop(&mut self) -> Option<Packet>;
    /// Bytes resident after the last pop.
    fn backlog_bytes(&self) -> u64;
}

impl CodelQueue for PacketQueue {
    fn pop(&mut self) -> Option<Packet> {
        PacketQueue::pop(self)
    }
    fn backlog_bytes(&self) -> u64 {
        self.bytes()
    }
}

/// RFC 8289 §5 `control_law`: t + interval/√count (floored to a nanosecond).
#[inline]
pub fn control_law(t_ns: u64, interval_ns: u64, count: u32) -> u64 {
    t_ns + (interval_ns as f64 / (count.max(1) as f64).sqrt()) as u64
}

/// RFC 8289 §5 `dodequeue` (the `ok_to_drop` test), given the packet just
/// popped and the backlog left behind.
fn should_drop(p: &CodelParams, v: &mut CodelVars, pkt: Option<&Packet>, backlog: u64, now: u64) -> bool {
    let Some(pkt) = pkt else {
        // RFC 8289 §5: an empty queue cannot be above target.
        v.first_above_ns = 0;
        return false;
    };
    v.ldelay_ns = now.saturating_sub(pkt.enq_ns);
    // RFC 8289 §5: below target, or at most one MTU left: stay below for an interval.
    if v.ldelay_ns < p.target_ns || backlog <= p.mtu_bytes {
        v.first_above_ns = 0;
        return false;
    }
    if v.first_above_ns == 0 {
        v.first_above_ns = now + p.interval_ns;
        false
    } else {
        // DEVIATION (Linux codel_impl.h uses strictly-after): RFC 8289's `now >= first_above_time`.
        now >= v.first_above_ns
    }
}

/// RFC 8289 §5 for a packet dequeued the instant it arrived at an empty
/// queue (`Qdisc::pass_through`): its sojourn is 0, below TARGET, so
/// `dodequeue` clears `first_above_time` and `dequeue` leaves the dropping
/// state (or stays out of it); no CE threshold is 0.
pub(super) fn pass_through_vars(v: &mut CodelVars) {
    v.ldelay_ns = 0;
    v.first_above_ns = 0;
    v.dropping = false;
}

/// Signal congestion on `pkt`: CE-mark it when ECN is on and it is ECT
/// (returns it), otherwise drop it (returns None).
fn codel_signal(p: &CodelParams, mut pkt: Packet, ctx: &mut QdiscCtx) -> Option<Packet> {
    if p.ecn && ctx.mark(&mut pkt, MarkReason::Aqm) {
        Some(pkt)
    } else {
        ctx.drop(pkt, DropReason::Aqm);
        None
    }
}

/// RFC 8289 §5 `dequeue`: pop from `q`, dropping (or marking) per the
/// control law; returns the packet to send, if any.
pub fn codel_dequeue<Q: CodelQueue>(
    p: &CodelParams,
    v: &mut CodelVars,
    q: &mut Q,
    ctx: &mut QdiscCtx,
) -> Option<Packet> {
    let now = ctx.now_ns;
    let mut pkt = q.pop();
    let drop = should_drop(p, v, pkt.as_ref(), q.backlog_bytes(), now);
    if pkt.is_none() {
        v.dropping = false;
        return None;
    }
    if v.dropping {
        if !drop {
            // RFC 8289 §5: sojourn went below target; leave the dropping state.
            v.dropping = false;
        } else {
            // RFC 8289 §5: possibly several drops per dequeue; each next drop
            // time is scheduled from the previous drop_next, not from now.
            while v.dropping && now >= v.drop_next_ns {
                v.count += 1;
                let cur = pkt.take().expect("dropping implies a packet");
                if let Some(marked) = codel_signal(p, cur, ctx) {
                    // A mark does not shrink the queue: reschedule and send it.
                    v.drop_next_ns = control_law(v.drop_next_ns, p.interval_ns, v.count);
                    pkt = Some(marked);
                    break;
                }
                pkt = q.pop();
                if should_drop(p, v, pkt.as_ref(), q.backlog_bytes(), now) {
                    v.drop_next_ns = control_law(v.drop_next_ns, p.interval_ns, v.count);
                } else {
                    v.dropping = false;
                }
            }
        }
    } else if drop {
        let cur = pkt.take().expect("drop implies a packet");
        pkt = codel_signal(p, cur, ctx);
        if pkt.is_none() {
            pkt = q.pop();
            // Re-evaluated for its side effects (ldelay, first_above); Linux ignores the result.
            should_drop(p, v, pkt.as_ref(), q.backlog_bytes(), now);
        }
        v.dropping = true;
        // RFC 8289 §5 (the Linux rule): if we re-enter dropping soon after the
        // last episode, resume from the drop rate that controlled the queue then.
        let delta = v.count.saturating_sub(v.lastcount);
        let since_ns = now as i128 - v.drop_next_ns as i128;
        v.count = if delta > 1 && since_ns < 16 * p.interval_ns as i128 { delta } else { 1 };
        v.lastcount = v.count;
        v.drop_next_ns = control_law(now, p.interval_ns, v.count);
    }
    if let (Some(pkt), Some(th)) = (pkt.as_mut(), p.ce_threshold_ns) {
        // Linux ce_threshold: CE on ECT packets whose sojourn exceeds it (not re-marking CE).
        if v.ldelay_ns > th && matches!(pkt.ecn, Ecn::Ect0 | Ecn::Ect1) {
            ctx.mark(pkt, MarkReason::Step);
        }
    }
    pkt
}

/// Single-queue CoDel (Linux `sch_codel`).
#[derive(Debug, Clone)]
pub struct Codel {
    q: PacketQueue,
    limit: QueueLimit,
    params: CodelParams,
    vars: CodelVars,
}

impl Codel {
    pub fn new(cfg: CodelConfig, env: &QdiscEnv) -> Result<Self, String> {
        Ok(Codel {
            q: PacketQueue::with_capacity(initial_capacity(&env.limit)),
            limit: env.limit,
            params: cfg.codel_params(env.mtu_bytes)?,
            vars: CodelVars::default(),
        })
    }
}

impl Qdisc for Codel {
    fn enqueue(&mut self, pkt: Packet, ctx: &mut QdiscCtx) {
        if self.limit.would_overflow(self.q.len(), self.q.bytes(), pkt.size_bytes) {
            ctx.drop(pkt, DropReason::Overflow);
        } else {
            self.q.push(pkt);
        }
    }
    fn dequeue(&mut self, ctx: &mut QdiscCtx) -> Option<Packet> {
        codel_dequeue(&self.params, &mut self.vars, &mut self.q, ctx)
    }
    /// The packet never enters the ring ([`pass_through_vars`]), unless
    /// alone it overflows the queue.
    fn pass_through(&mut self, pkt: Packet, ctx: &mut QdiscCtx) -> Option<Packet> {
        debug_assert!(self.q.is_empty() && pkt.enq_ns == ctx.now_ns);
        if self.limit.would_overflow(0, 0, pkt.size_bytes) {
            self.enqueue(pkt, ctx);
            return self.dequeue(ctx);
        }
        pass_through_vars(&mut self.vars);
        Some(pkt)
    }
    fn len_pkts(&self) -> usize {
        self.q.len()
    }
    fn backlog_bytes(&self) -> u64 {
        self.q.bytes()
    }
    fn probe_names(&self) -> &'static [&'static str] {
        &["count", "dropping", "sojourn_ms"]
    }
    fn probe(&self, out: &mut [f64]) {
        out[0] = self.vars.count as f64;
        out[1] = if self.vars.dropping { 1.0 } else { 0.0 };
        out[2] = self.vars.ldelay_ns as f64 * 1e-6;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aqm::testing::{compare_pass_through, data, env, random_trace, Harness};

    const MS: u64 = 1_000_000;

    fn codel(ecn: bool) -> Harness<Codel> {
        let cfg = CodelConfig { ecn, ..CodelConfig::default() };
        Harness::new(Codel::new(cfg, &env(10_000_000, 10_000)).unwrap())
    }

    /// Standing queue: 50 packets at t=0, then one arrival and one dequeue
    /// per ms from t=20 ms. Returns the ms instants at which a signal (drop
    /// or mark) happened.
    fn standing_queue_signal_times(h: &mut Harness<Codel>, ecn: Ecn, until_ms: u64) -> Vec<u64> {
        for _ in 0..50 {
            h.enqueue(0, data(1, ecn));
        }
        let mut times = vec![];
        for t in 1..=until_ms {
            h.enqueue(t * MS, data(1, ecn));
            if t >= 20 {
                let before = h.drops() + h.marks();
                assert!(h.dequeue(t * MS).is_some());
                if h.drops() + h.marks() > before {
                    times.push(t);
                }
            }
        }
        times
    }

    // ---- persistent standing queue ----

    #[test]
    fn standing_queue_drops_follow_interval_over_sqrt_count() {
        let mut h = codel(false);
        let times = standing_queue_signal_times(&mut h, Ecn::NotEct, 500);
        // First dequeue above target at 20 ms arms first_above = 120 ms; then
        // drop_next = 120+100, +100/√2 (290.71), +100/√3 (348.45), +100/√4
        // (398.45), +100/√5 (443.17), +100/√6 (483.99): each drop happens at
        // the first 1-ms dequeue at or after drop_next.
        assert_eq!(&times[..7], &[120, 220, 291, 349, 399, 444, 484]);
        assert_eq!(h.q.vars.count as usize, times.len());
        assert_eq!(h.marks(), 0);
        h.assert_conservation();
    }

    #[test]
    fn dropping_state_schedules_from_drop_next_not_now() {
        let mut h = codel(false);
        standing_queue_signal_times(&mut h, Ecn::NotEct, 300);
        // After the 3rd drop (at 291 ms): drop_next = 120 + 100 + 100/√2 + 100/√3 ms.
        let expect = 220.0 + 100.0 / 2f64.sqrt() + 100.0 / 3f64.sqrt();
        let got = h.q.vars.drop_next_ns as f64 / MS as f64;
        assert!((got - expect).abs() < 1e-5, "drop_next {got} ms, expected {expect}");
        assert_eq!(h.q.vars.count, 3);
    }

    #[test]
    fn standing_queue_with_ecn_marks_ect_at_the_same_instants_and_never_drops() {
        let mut h = codel(true);
        let times = standing_queue_signal_times(&mut h, Ecn::Ect0, 500);
        assert_eq!(&times[..7], &[120, 220, 291, 349, 399, 444, 484]);
        assert_eq!(h.drops(), 0);
        assert!(h.q.vars.dropping, "marks must not end the dropping state");
        h.assert_conservation();
    }

    #[test]
    fn ecn_codel_still_drops_not_ect_packets() {
        let mut h = codel(true);
        let times = standing_queue_signal_times(&mut h, Ecn::NotEct, 300);
        assert_eq!(&times[..3], &[120, 220, 291]);
        assert_eq!(h.marks(), 0);
    }

    // ---- count reuse on re-entry (RFC 8289 §5, Linux rule) ----

    /// A queue of 3 packets with sojourn 50 ms at `now`, with first_above
    /// already passed, so the next dequeue enters the dropping state.
    fn about_to_enter(count: u32, lastcount: u32, drop_next_ns: u64, now: u64) -> Harness<Codel> {
        let mut h = codel(false);
        for _ in 0..3 {
            h.enqueue(now - 50 * MS, data(1, Ecn::NotEct));
        }
        h.q.vars = CodelVars { count, lastcount, dropping: false, first_above_ns: now - 1, drop_next_ns, ldelay_ns: 0 };
        h
    }

    #[test]
    fn reentry_within_16_intervals_reuses_count_minus_lastcount() {
        let now = 5_000 * MS;
        let mut h = about_to_enter(10, 3, now - 1_500 * MS, now); // 15 intervals ago
        h.dequeue(now);
        assert_eq!(h.drops(), 1);
        assert_eq!((h.q.vars.count, h.q.vars.lastcount), (7, 7));
        assert_eq!(h.q.vars.drop_next_ns, now + (100.0 * MS as f64 / 7f64.sqrt()) as u64);
    }

    /// The same rule reached by a real trace rather than injected state: an
    /// episode that ends when the queue drains, then a new standing queue.
    #[test]
    fn drained_episode_then_new_standing_queue_reuses_the_old_count() {
        let mut h = codel(false);
        let first = standing_queue_signal_times(&mut h, Ecn::NotEct, 500);
        assert_eq!(first, [120, 220, 291, 349, 399, 444, 484]);
        let (count, drop_next) = (h.q.vars.count, h.q.vars.drop_next_ns);
        assert_eq!((count, h.q.vars.lastcount), (7, 1));
        // Drain everything at 501 ms: no drop is due (drop_next ≈ 521.8 ms), and
        // the last packets leave with backlog ≤ MTU, which ends the episode.
        while h.dequeue(501 * MS).is_some() {}
        assert!(!h.q.vars.dropping);
        assert_eq!(h.drops() as usize, first.len());
        // A new standing queue from 600 ms: above target from 620 ms, so the
        // dropping state is entered at 720 ms, 198 ms (< 16 intervals) after
        // drop_next: count = count − lastcount = 6, then the control law resumes
        // from √6, not from 1 (720 + 100/√6 = 760.8, + 100/√7 = 798.6 ms).
        for _ in 0..50 {
            h.enqueue(600 * MS, data(1, Ecn::NotEct));
        }
        let mut second = vec![];
        for t in 601..=800 {
            h.enqueue(t * MS, data(1, Ecn::NotEct));
            if t >= 620 {
                let before = h.drops();
                h.dequeue(t * MS);
                if h.drops() > before {
                    second.push(t);
                }
            }
        }
        assert!(720 * MS - drop_next < 16 * 100 * MS);
        assert_eq!(second, [720, 761, 799]);
        assert_eq!((h.q.vars.count, h.q.vars.lastcount), (8, 6));
        h.assert_conservation();
    }

    #[test]
    fn reentry_after_16_intervals_restarts_count_at_one() {
        let now = 5_000 * MS;
        let mut h = about_to_enter(10, 3, now - 1_600 * MS, now);
        h.dequeue(now);
        assert_eq!((h.q.vars.count, h.q.vars.lastcount), (1, 1));
        assert_eq!(h.q.vars.drop_next_ns, now + 100 * MS);
    }

    #[test]
    fn reentry_with_delta_one_restarts_count_at_one() {
        let now = 5_000 * MS;
        let mut h = about_to_enter(4, 3, now - 10 * MS, now);
        h.dequeue(now);
        assert_eq!(h.q.vars.count, 1);
    }

    // ---- MTU floor ----

    #[test]
    fn backlog_of_one_mtu_is_never_dropped_however_old() {
        let mut h = codel(false);
        h.enqueue(0, data(1, Ecn::NotEct));
        // One resident packet, plus one arrival per 10 ms served 5 ms later:
        // each popped packet has a 15 ms sojourn (far above target) and
        // leaves exactly one MTU behind.
        for t in 1..=2_000u64 {
            h.enqueue(t * 10 * MS, data(1, Ecn::NotEct));
            assert!(h.dequeue(t * 10 * MS + 5 * MS).is_some());
        }
        assert_eq!(h.drops(), 0);
        // Control: with two resident (two MTUs left after a pop), the same trace drops.
        let mut h = codel(false);
        for _ in 0..2 {
            h.enqueue(0, data(1, Ecn::NotEct));
        }
        for t in 1..=2_000u64 {
            h.enqueue(t * 10 * MS, data(1, Ecn::NotEct));
            h.dequeue(t * 10 * MS + 5 * MS);
        }
        assert!(h.drops() > 0);
    }

    #[test]
    fn ce_threshold_marks_ect_above_threshold_without_codel_drops() {
        let cfg = CodelConfig { ce_threshold_ns: Some(MS), ..CodelConfig::default() };
        let mut h = Harness::new(Codel::new(cfg, &env(10_000_000, 100)).unwrap());
        h.enqueue(0, data(1, Ecn::Ect1));
        h.enqueue(0, data(1, Ecn::Ect1));
        assert_eq!(h.dequeue(MS / 2).unwrap().ecn, Ecn::Ect1);
        assert_eq!(h.dequeue(2 * MS).unwrap().ecn, Ecn::Ce);
    }

    #[test]
    fn config_rejects_zero_target_naming_the_field() {
        let cfg = CodelConfig { target_ns: 0, ..CodelConfig::default() };
        let e = Codel::new(cfg, &env(1, 1)).unwrap_err();
        assert!(e.starts_with("target:"), "{e}");
    }

    #[test]
    fn random_trace_conserves_packets() {
        let mut h = codel(true);
        random_trace(&mut h, 20_000);
        h.assert_conservation();
    }

    /// The engine's early hand-off relies on `pass_through` leaving CoDel
    /// exactly as `enqueue` then `dequeue` would (`compare_pass_through`:
    /// packets, counters and CoDel's variables after every step of a trace
    /// of overload and drain), with ECN on and off, a CE threshold and a
    /// byte limit below a packet. The trace must reach arrivals that change
    /// the variables: a no-op would fail.
    #[test]
    fn pass_through_equals_enqueue_then_dequeue() {
        // (ECN, CE threshold, packet limit; 0: a byte limit below a packet)
        for (ecn, ce_threshold_ns, limit) in [(false, None, 40), (true, None, 40), (true, Some(MS), 40), (false, None, 0)] {
            let cfg = CodelConfig { ecn, ce_threshold_ns, ..CodelConfig::default() };
            let mut e = env(10_000_000, limit);
            if limit == 0 {
                e.limit = QueueLimit { pkts: None, bytes: Some(1000) };
            }
            let mut a = Harness::new(Codel::new(cfg.clone(), &e).unwrap());
            let mut b = Harness::new(Codel::new(cfg, &e).unwrap());
            let (passed, changed) = compare_pass_through(&mut a, &mut b, |q| format!("{:?}", q.vars));
            assert!(passed > 1000, "{passed} arrivals at an empty queue");
            if limit > 0 {
                assert!(changed > 100, "{changed} arrivals at an empty queue changed CoDel's variables");
                assert!(a.drops() + a.marks() > 100, "{} signals", a.drops() + a.marks());
            }
            // An empty queue in the dropping state (the engine never passes
            // a packet through one: the end of the last transmission dequeued
            // the empty queue, which leaves that state), set by hand.
            let now = 100_000 * MS;
            let dropping = CodelVars { count: 3, lastcount: 2, dropping: true, first_above_ns: now, drop_next_ns: now, ldelay_ns: 7 * MS };
            (a.q.vars, b.q.vars) = (dropping.clone(), dropping);
            let p = data(1, Ecn::Ect0);
            let got = a.pass(now, p);
            b.enqueue(now, p);
            assert_eq!(got, b.dequeue(now));
            assert_eq!(a.q.vars, b.q.vars);
            a.assert_conservation();
        }
    }
}
