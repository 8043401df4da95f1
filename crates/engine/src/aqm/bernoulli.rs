//! Bernoulli drop/mark: every arrival is signalled independently with a
//! fixed probability. Not a real AQM but a measuring instrument: the
//! response functions of TCP congestion controls (Reno's square-root law,
//! CUBIC's, DCTCP's 2/p) are stated for a path that drops or marks each
//! packet independently with probability p, whatever the queue holds. The
//! model validation (docs/validation.md) runs every CC against this queue.
//!
//! Each arrival draws one uniform variate from the queue's own random
//! stream (derived from the run's seed), so a run is deterministic and the
//! signalled packets are an i.i.d. Bernoulli(p) thinning of the arrivals. A
//! chosen packet is CE-marked if `ecn` is on and it is ECN-capable
//! (RFC 3168 §5: ECT(0), ECT(1) or already CE), else dropped. ECT(1) and CE
//! packets (the L4S identifier, RFC 9331 §4) may have their own probability
//! `p_l4s`, so one queue can signal classic and L4S flows differently, as
//! the coupled-AQM laws need. Overflow (the buffer limit) is checked first
//! and is not part of the Bernoulli process.

use super::fifo::{initial_capacity, PacketQueue};
use super::{DropReason, MarkReason, Qdisc, QdiscCtx, QdiscEnv, QueueLimit};
use crate::packet::Packet;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct BernoulliConfig {
    /// Probability that an arrival is signalled (dropped or CE-marked), 0..1.
    pub p: f64,
    /// Signal ECN-capable packets by CE-marking instead of dropping them.
    pub ecn: bool,
    /// Probability for ECT(1)/CE arrivals (the L4S identifier); `None`: `p`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_l4s: Option<f64>,
}

impl Default for BernoulliConfig {
    fn default() -> Self {
        // Our choice (no source fixes one): 1 %, mid-range of the response
        // functions' usual operating points; ECN on, as an AQM with ECN would.
        BernoulliConfig { p: 0.01, ecn: true, p_l4s: None }
    }
}

#[derive(Debug, Clone)]
pub struct Bernoulli {
    q: PacketQueue,
    limit: QueueLimit,
    cfg: BernoulliConfig,
}

fn check_probability(name: &str, p: f64) -> Result<(), String> {
    if !(0.0..=1.0).contains(&p) {
        return Err(format!("{name}: must be a probability between 0 and 1, got {p}"));
    }
    Ok(())
}

impl Bernoulli {
    pub fn new(cfg: BernoulliConfig, env: &QdiscEnv) -> Result<Self, String> {
        check_probability("p", cfg.p)?;
        if let Some(p) = cfg.p_l4s {
            check_probability("p_l4s", p)?;
        }
        Ok(Bernoulli { q: PacketQueue::with_capacity(initial_capacity(&env.limit)), limit: env.limit, cfg })
    }

    /// The probability that applies to `pkt`.
    #[inline]
    fn probability(&self, pkt: &Packet) -> f64 {
        match self.cfg.p_l4s {
            Some(p) if pkt.ecn.is_l4s_id() => p,
            _ => self.cfg.p,
        }
    }
}

impl Qdisc for Bernoulli {
    fn enqueue(&mut self, mut pkt: Packet, ctx: &mut QdiscCtx) {
        if self.limit.would_overflow(self.q.len(), self.q.bytes(), pkt.size_bytes) {
            ctx.drop(pkt, DropReason::Overflow);
            return;
        }
        // One draw per arrival whatever its codepoint, so the random stream
        // (and with it every other packet's fate) does not depend on ECN.
        let signal = ctx.rng.uniform() < self.probability(&pkt);
        if signal {
            if self.cfg.ecn {
                if !ctx.mark_or_drop(&mut pkt, MarkReason::Aqm, DropReason::Aqm) {
                    return;
                }
            } else {
                ctx.drop(pkt, DropReason::Aqm);
                return;
            }
        }
        self.q.push(pkt);
    }

    fn dequeue(&mut self, _ctx: &mut QdiscCtx) -> Option<Packet> {
        self.q.pop()
    }
    fn len_pkts(&self) -> usize {
        self.q.len()
    }
    fn backlog_bytes(&self) -> u64 {
        self.q.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aqm::testing::{data, env, Harness};
    use crate::packet::Ecn;

    /// Offer `n` packets of codepoint `ecn`, dequeueing each at once; return (drops, marks).
    fn offer(cfg: BernoulliConfig, ecn: Ecn, n: u64) -> (u64, u64) {
        let mut h = Harness::new(Bernoulli::new(cfg, &env(1_000_000_000, 10)).unwrap());
        for i in 0..n {
            h.enqueue(i, data(0, ecn));
            h.dequeue(i);
        }
        h.assert_conservation();
        (h.drops(), h.marks())
    }

    /// The signalled fraction of 200 000 arrivals is within 4.5 binomial
    /// standard deviations of p (a false alarm once in ~150 000 seeds; the
    /// seed is fixed, so the test is deterministic).
    #[track_caller]
    fn assert_rate(count: u64, n: u64, p: f64) {
        let sd = (n as f64 * p * (1.0 - p)).sqrt();
        let dev = (count as f64 - n as f64 * p).abs();
        assert!(dev <= 4.5 * sd, "{count} of {n} signalled, expected {} ± {:.0}", n as f64 * p, 4.5 * sd);
    }

    #[test]
    fn drops_and_marks_at_the_set_rate() {
        let n = 200_000;
        for p in [0.001, 0.01, 0.1] {
            let (d, m) = offer(BernoulliConfig { p, ecn: false, p_l4s: None }, Ecn::Ect0, n);
            assert_eq!(m, 0);
            assert_rate(d, n, p);
            let (d, m) = offer(BernoulliConfig { p, ecn: true, p_l4s: None }, Ecn::Ect0, n);
            assert_eq!(d, 0);
            assert_rate(m, n, p);
            // Not-ECT packets are dropped even with ECN on.
            let (d, m) = offer(BernoulliConfig { p, ecn: true, p_l4s: None }, Ecn::NotEct, n);
            assert_eq!(m, 0);
            assert_rate(d, n, p);
        }
    }

    #[test]
    fn l4s_packets_get_their_own_probability() {
        let n = 200_000;
        let cfg = BernoulliConfig { p: 0.001, ecn: true, p_l4s: Some(0.2) };
        let (_, m) = offer(cfg.clone(), Ecn::Ect1, n);
        assert_rate(m, n, 0.2);
        let (_, m) = offer(cfg, Ecn::Ect0, n);
        assert_rate(m, n, 0.001);
    }

    #[test]
    fn successive_signals_are_independent() {
        // Bernoulli thinning: the gap between signals is geometric, so
        // P(gap = 1) = p. A correlated stream (e.g. a deterministic pattern)
        // would miss this by far.
        let p = 0.1;
        let mut h = Harness::new(Bernoulli::new(BernoulliConfig { p, ecn: false, p_l4s: None }, &env(1_000_000_000, 10)).unwrap());
        let (mut last_drop, mut adjacent, mut gaps) = (None::<u64>, 0u64, 0u64);
        for i in 0..200_000u64 {
            let before = h.drops();
            h.enqueue(i, data(0, Ecn::NotEct));
            h.dequeue(i);
            if h.drops() > before {
                if let Some(j) = last_drop {
                    gaps += 1;
                    adjacent += u64::from(i - j == 1);
                }
                last_drop = Some(i);
            }
        }
        assert_rate(adjacent, gaps, p);
    }

    #[test]
    fn bad_probabilities_are_one_line_errors() {
        let e = env(1_000_000, 10);
        let err = Bernoulli::new(BernoulliConfig { p: 1.5, ..Default::default() }, &e).unwrap_err();
        assert_eq!(err, "p: must be a probability between 0 and 1, got 1.5");
        assert!(Bernoulli::new(BernoulliConfig { p_l4s: Some(-0.1), ..Default::default() }, &e).is_err());
    }

    #[test]
    fn the_buffer_limit_still_holds() {
        let mut h = Harness::new(Bernoulli::new(BernoulliConfig { p: 0.0, ecn: false, p_l4s: None }, &env(1_000_000, 3)).unwrap());
        for _ in 0..5 {
            h.enqueue(0, data(0, Ecn::NotEct));
        }
        assert_eq!((h.q.len_pkts(), h.drops()), (3, 2));
        h.assert_conservation();
    }
}
