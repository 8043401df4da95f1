//! A latency probe: small echo requests at a fixed interval, answered by the
//! receiver, whose round-trip times are the "latency under load" that
//! Flent's RRUL test reports from its ping flows (Flent docs, "rrul" test:
//! ICMP and UDP round-trip latency measured while TCP flows load the link).
//!
//! The request is a datagram of `packet_size` bytes carrying the send time;
//! the receiver answers at once with a reply of the same size in the same
//! ECN class (so a DualQ classifies both ways alike, RFC 9332 §2.5); the
//! source records `now - send time` for every reply. Lost requests or
//! replies give no sample (as ping). The probe is unresponsive: it never
//! changes its interval.

use super::udp::DatagramClock;
use crate::packet::{Ecn, Packet, PacketKind};
use crate::sim::units::serde_duration;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `params.interval` when not given: 10 ms (our choice: 100 samples per
/// second resolve a 100 ms sampling interval's queue swings; `ping` and
/// Flent use 200 ms by default, which is coarse for 10 s runs).
pub const DEFAULT_INTERVAL_NS: u64 = 10_000_000;
/// `packet_size` when not given: a default `ping` echo request (56 B of data
/// + 8 B ICMP header + 20 B IPv4 header).
pub const DEFAULT_PACKET_BYTES: u32 = 84;

#[derive(Debug, Clone)]
pub struct ProbeSource {
    clock: DatagramClock,
    interval_ns: u64,
    /// (reply arrival, request sequence, RTT) in ns, in arrival order; the
    /// arrival time is the source's own clock, which is simulated time (see
    /// `World::add_flow`).
    pub samples: Vec<(u64, u64, u64)>,
}

impl ProbeSource {
    pub fn new(flow: u32, interval_ns: u64, size_bytes: u32, ecn: Ecn, start_ns: u64, stop_ns: Option<u64>) -> Self {
        ProbeSource { clock: DatagramClock::new(flow, size_bytes, ecn, start_ns, stop_ns), interval_ns, samples: vec![] }
    }

    pub fn interval_ns(&self) -> u64 {
        self.interval_ns
    }

    /// The rate the probe sends at (for the time series' `rate_bps`).
    pub fn rate_bps(&self) -> u64 {
        self.clock.size_bytes() as u64 * 8 * 1_000_000_000 / self.interval_ns
    }

    pub fn pkts_sent(&self) -> u64 {
        self.clock.pkts_sent()
    }

    pub fn next_wakeup_ns(&self) -> Option<u64> {
        self.clock.next_wakeup_ns()
    }

    /// Requests carry their scheduled send time (`ts_ns`): the RTT counts from it.
    pub fn on_timer(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        let interval_ns = self.interval_ns;
        self.clock.send_due(now_ns, out, || interval_ns);
    }

    /// An echo reply reached the source at `now_ns` (its clock).
    pub fn on_reply(&mut self, now_ns: u64, pkt: &Packet) {
        debug_assert_eq!(pkt.kind, PacketKind::EchoReply);
        self.samples.push((now_ns, pkt.seq, now_ns - pkt.ts_ns));
    }
}

/// The reply a probe's receiver sends back for request `req`, leaving at
/// `now_ns`: same size, sequence and timestamp; the probe's own ECN
/// codepoint (a CE mark on the request is not echoed: ping has no feedback).
pub fn echo_reply(req: &Packet, now_ns: u64, ecn: Ecn) -> Packet {
    let mut p = Packet::new(PacketKind::EchoReply, req.flow, req.size_bytes);
    p.seq = req.seq;
    p.ts_ns = req.ts_ns;
    p.enq_ns = now_ns;
    p.ecn = ecn;
    p
}

/// A probe group's `params`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProbeConfig {
    /// Time between echo requests.
    #[serde(rename = "interval", with = "serde_duration")]
    pub interval_ns: u64,
}

impl Default for ProbeConfig {
    fn default() -> Self {
        ProbeConfig { interval_ns: DEFAULT_INTERVAL_NS }
    }
}

/// Validate and normalise a `cc = "probe"` group's `params`.
pub fn normalize_params(params: &Value) -> Result<Value, String> {
    let cfg = config(params)?;
    Ok(crate::params::to_value(&cfg))
}

/// The parsed, checked config of a probe group's `params`.
pub fn config(params: &Value) -> Result<ProbeConfig, String> {
    let cfg: ProbeConfig = crate::params::parse_params(params)?;
    if cfg.interval_ns == 0 {
        return Err("interval: must be positive".into());
    }
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_one_request_per_interval_and_measures_the_echo() {
        let mut s = ProbeSource::new(3, 10_000_000, 84, Ecn::Ect1, 5, Some(50_000_005));
        let mut out = vec![];
        while let Some(t) = s.next_wakeup_ns() {
            s.on_timer(t, &mut out);
        }
        assert_eq!(out.len(), 5); // 5, 10.000005, ... 40.000005 ms; stop at 50.000005 excluded
        assert!(out.iter().all(|p| p.ecn == Ecn::Ect1 && p.size_bytes == 84 && p.kind == PacketKind::Datagram));
        let r = echo_reply(&out[2], 30_000_000, Ecn::Ect1);
        s.on_reply(20_000_005 + 7_000_000, &r);
        assert_eq!(s.samples, vec![(27_000_005, 2, 7_000_000)]);
    }

    #[test]
    fn interval_defaults_and_must_be_positive() {
        assert_eq!(normalize_params(&Value::Null).unwrap()["interval"], "10ms");
        assert_eq!(config(&serde_json::json!({"interval": "200ms"})).unwrap().interval_ns, 200_000_000);
        assert!(normalize_params(&serde_json::json!({"interval": "0s"})).is_err());
        assert!(normalize_params(&serde_json::json!({"intervall": "1s"})).unwrap_err().contains("interval"));
    }
}
