//! The edge packet marker: one per flow, writing a packet value into every
//! packet the flow's source emits (SYNs, segments, datagrams).
//!
//! Method: the *random rate* marker of the PPV papers (Nádas, Turányi, Rácz,
//! Globecom 2016; also the "randomly selected initial rate" of Ericsson's later
//! marker patents). The marker measures the flow's rate `r`, draws `U`
//! uniform in (0, 1] and writes `PV = V_w(U·r)`. A flow's packets then carry
//! the values `V_w(x)` for `x` spread uniformly over `(0, r]`, so a core node
//! that signals every packet with `PV <= CTV` signals a fraction
//! `max(0, 1 − x*/r)` of the flow's packets, where `x* = V_w⁻¹(CTV)` is the
//! throughput the policy grants at that CTV. This meets the PPV marking
//! requirement (ppv.elte.hu) on average, without the per-flow bank of token
//! buckets of the token-bucket variant (which aqmlab does not implement).
//!
//! Rate measurement (an aqmlab choice; the papers leave it open): an
//! exponentially decaying byte count with time constant `rate_window`,
//! `r ← r·e^(−Δt/τ) + 8·size/τ`, updated with each packet before it is marked.
//! For a flow at constant rate `R` it converges to `R`.
//!
//! Determinism: `U` comes from the flow's own stream `(seed, Marker, flow id)`,
//! so adding a flow or a marker never changes what another flow draws; time is
//! the source's own clock, so `engine.lookahead` cannot change a value.

use super::tvf;
use crate::packet::Packet;
use crate::sim::rng::SimRng;
use crate::sim::units::serde_duration;
use serde::{Deserialize, Serialize};

/// Named policies: TVF weights relative to `silver`. Gold = 2 × silver and
/// background = silver / 10 follow the slopes (5, 10, 100) of the Gold, Silver
/// and Background TVFs in the public ns-3 "pvpie" PPV marker.
pub const POLICIES: [(&str, f64); 3] = [("gold", 2.0), ("silver", 1.0), ("background", 0.1)];

/// The `marker` table of a `[[flows]]` group (strict keys).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct MarkerSpec {
    /// A named policy (input shortcut for `weight`; the normalised scenario
    /// keeps only `weight`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// TVF weight `w`: at a common CTV, throughput is proportional to `w`.
    /// Unset: the policy's weight, or 1 (silver). Always set once normalised.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
    /// Time constant of the rate estimator.
    #[serde(rename = "rate_window", with = "serde_duration")]
    pub rate_window_ns: u64,
}

impl Default for MarkerSpec {
    fn default() -> Self {
        MarkerSpec {
            policy: None,
            // None: the policy's weight, else 1 (the silver, reference TVF).
            weight: None,
            // 100 ms: 20 RTTs of the paper's 5 ms paths, 2.5 of its 40 ms paths,
            // ten CTV periods of VDQ-CSAQM, so a flow's values follow its
            // average rate rather than its sawtooth (docs/algorithms/ppv.md
            // has the measurements behind the choice). aqmlab choice.
            rate_window_ns: 100_000_000,
        }
    }
}

impl MarkerSpec {
    /// Check and normalise (`policy` becomes `weight`). `path` prefixes errors.
    pub fn validate(&mut self, path: &str) -> Result<(), String> {
        if let Some(p) = self.policy.take() {
            let names: Vec<&str> = POLICIES.iter().map(|(n, _)| *n).collect();
            let w = POLICIES.iter().find(|(n, _)| *n == p).map(|(_, w)| *w).ok_or_else(|| {
                format!("{path}.policy: {}", crate::params::unknown_choice("policy", &p, &names))
            })?;
            if self.weight.is_some() {
                return Err(format!("{path}: give either policy or weight, not both"));
            }
            self.weight = Some(w);
        }
        let w = *self.weight.get_or_insert(1.0);
        if !(w.is_finite() && w > 0.0 && w <= 1e6) {
            return Err(format!("{path}.weight: must be a positive number up to 1e6 (got {w})"));
        }
        if self.rate_window_ns == 0 {
            return Err(format!("{path}.rate_window: must be positive"));
        }
        Ok(())
    }
}

/// A flow's marker state.
#[derive(Debug, Clone)]
pub struct PvMarker {
    weight: f64,
    tau_ns: f64,
    /// Measured rate (bit/s) as of `last_ns`.
    rate_bps: f64,
    last_ns: u64,
    rng: SimRng,
}

impl PvMarker {
    pub fn new(spec: &MarkerSpec, rng: SimRng) -> Self {
        PvMarker { weight: spec.weight.unwrap_or(1.0), tau_ns: spec.rate_window_ns as f64, rate_bps: 0.0, last_ns: 0, rng }
    }

    /// The measured rate (bit/s) after the last marked packet.
    pub fn rate_bps(&self) -> f64 {
        self.rate_bps
    }

    /// Account `size` bytes sent at `now_ns` and return the packet's value.
    pub fn value(&mut self, now_ns: u64, size_bytes: u32) -> u32 {
        let dt = now_ns.saturating_sub(self.last_ns) as f64;
        self.last_ns = self.last_ns.max(now_ns);
        self.rate_bps = self.rate_bps * libm::exp(-dt / self.tau_ns) + size_bytes as f64 * 8e9 / self.tau_ns;
        // U in (0, 1]: 1 - uniform() never reaches 0.
        let u = 1.0 - self.rng.uniform();
        tvf(u * self.rate_bps, self.weight)
    }

    /// Mark every packet a source sends in `out` (SYNs, TCP segments,
    /// datagrams), sent at `now_ns`. SYNs count: an unmarked SYN would rank
    /// below all marked traffic and be the first packet a core node drops.
    #[inline]
    pub fn mark_all(&mut self, now_ns: u64, out: &mut [Packet]) {
        for p in out.iter_mut().filter(|p| p.from_source()) {
            p.aux = self.value(now_ns, p.size_bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::PacketKind;
    use crate::ppv::{tvf_inverse, PV_MAX};
    use crate::sim::rng::Domain;

    fn marker(weight: f64) -> PvMarker {
        let spec = MarkerSpec { weight: Some(weight), ..MarkerSpec::default() };
        PvMarker::new(&spec, SimRng::derive(3, Domain::Marker, 0))
    }

    /// Feed `n` 1500-byte packets at `rate` bit/s; return their values.
    fn run(m: &mut PvMarker, rate: f64, n: usize) -> Vec<u32> {
        let gap = 12_000.0 * 1e9 / rate;
        (0..n).map(|i| m.value((i as f64 * gap) as u64, 1500)).collect()
    }

    #[test]
    fn rate_estimate_converges_to_the_sending_rate() {
        let mut m = marker(1.0);
        run(&mut m, 100e6, 20_000); // 2.4 s, 24 time constants
        assert!((m.rate_bps() / 100e6 - 1.0).abs() < 0.01, "{}", m.rate_bps());
    }

    #[test]
    fn fraction_below_a_ctv_is_one_minus_fair_rate_over_rate() {
        // At 100 Mbit/s, packets with PV <= V(50 Mbit/s) are those with U·r >= 50M: half of them.
        let mut m = marker(1.0);
        let pvs = run(&mut m, 100e6, 60_000);
        let ctv = tvf(50e6, 1.0);
        let tail = &pvs[20_000..];
        let frac = tail.iter().filter(|&&v| v <= ctv).count() as f64 / tail.len() as f64;
        assert!((frac - 0.5).abs() < 0.02, "{frac}");
        // Nothing is ever signalled for a CTV whose fair rate exceeds the flow's rate.
        let ctv_high = tvf(120e6, 1.0);
        assert!(tail.iter().all(|&v| v > ctv_high));
    }

    #[test]
    fn weight_scales_the_throughput_kept_at_a_common_ctv() {
        // Weights 7 and 3 sending 7:3: the same share of each is below any CTV.
        let (mut a, mut b) = (marker(7.0), marker(3.0));
        let (pa, pb) = (run(&mut a, 70e6, 60_000), run(&mut b, 30e6, 60_000));
        let ctv = tvf(35e6, 7.0); // fair rate 35M for weight 7 = 15M for weight 3
        assert!((tvf_inverse(ctv, 3.0) / 15e6 - 1.0).abs() < 0.01);
        let f = |v: &[u32]| v[20_000..].iter().filter(|&&x| x <= ctv).count() as f64 / 40_000.0;
        assert!((f(&pa) - 0.5).abs() < 0.02 && (f(&pb) - 0.5).abs() < 0.02, "{} {}", f(&pa), f(&pb));
    }

    #[test]
    fn same_stream_gives_the_same_values_and_acks_are_not_marked() {
        let (mut a, mut b) = (marker(1.0), marker(1.0));
        assert_eq!(run(&mut a, 1e9, 100), run(&mut b, 1e9, 100));
        let kinds = [PacketKind::Syn, PacketKind::Data, PacketKind::Datagram, PacketKind::Ack];
        let mut out: Vec<Packet> = kinds.iter().map(|&k| Packet::new(k, 0, 1500)).collect();
        out[3].aux = 7;
        a.mark_all(1_000_000, &mut out);
        assert!(out[..3].iter().all(|p| (1..=PV_MAX).contains(&p.aux)));
        assert_eq!(out[3].aux, 7, "ACKs keep their CE counter");
    }

    #[test]
    fn spec_normalises_policy_to_weight_and_rejects_nonsense() {
        let mut s = MarkerSpec { policy: Some("gold".into()), ..MarkerSpec::default() };
        s.validate("flows[0].marker").unwrap();
        assert_eq!((s.policy.as_deref(), s.weight), (None, Some(2.0)));
        s.validate("again").unwrap(); // normalising twice changes nothing
        assert_eq!(s.weight, Some(2.0));
        let mut s = MarkerSpec { policy: Some("gld".into()), ..MarkerSpec::default() };
        let e = s.validate("flows[0].marker").unwrap_err();
        assert!(e.starts_with("flows[0].marker.policy: unknown policy 'gld' (did you mean 'gold'?"), "{e}");
        let mut s = MarkerSpec { policy: Some("gold".into()), weight: Some(3.0), ..MarkerSpec::default() };
        assert_eq!(s.validate("m").unwrap_err(), "m: give either policy or weight, not both");
        let mut s = MarkerSpec { weight: Some(-1.0), ..MarkerSpec::default() };
        assert!(s.validate("m").unwrap_err().starts_with("m.weight: must be a positive number"));
    }
}
