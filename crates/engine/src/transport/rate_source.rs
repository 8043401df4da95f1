//! The registry of rate-based sources: flows that send at a set rate rather
//! than under a congestion window. A `[[flows]]` group names one in `cc`,
//! gives its `rate` and optionally its `packet_size`, and it runs from start
//! to stop. One entry per source, as in the AQM and congestion-control
//! registries, so that validation, the registry listing and the world's
//! builder never test a source by name.

use super::endpoint::Source;
use super::probe::{self, ProbeSource};
use super::qcn_rp::{self, QcnSource};
use super::udp::CbrSource;
use crate::packet::Ecn;
use serde_json::Value;

/// What every rate-based source of a flow is built from.
#[derive(Debug, Clone, Copy)]
pub struct RateSourceSpec {
    pub flow: u32,
    /// The group's `rate`: the constant rate, or a QCN source's line rate.
    pub rate_bps: u64,
    pub packet_size_bytes: u32,
    pub ecn: Ecn,
    pub start_ns: u64,
    pub stop_ns: Option<u64>,
    /// The scenario's seed (sources with randomness derive their own stream).
    pub seed: u64,
}

pub struct RateSourceEntry {
    pub name: &'static str,
    pub summary: &'static str,
    /// ECN setting when the group leaves `ecn` unset.
    pub default_ecn: &'static str,
    /// The group must give `rate` (false: it must not; the source sets its own pace).
    pub needs_rate: bool,
    /// `packet_size` when the group leaves it unset (None: the MTU).
    pub default_packet_bytes: Option<u32>,
    /// The receiver answers every datagram (an echo server).
    pub echoes: bool,
    /// Validate a group's `params`; return them with every default filled in.
    pub normalize: fn(&Value) -> Result<Value, String>,
    /// Build the source from its spec and normalised params.
    pub build: fn(&RateSourceSpec, &Value) -> Result<Source, String>,
}

/// Every rate-based source.
pub const REGISTRY: &[RateSourceEntry] = &[
    RateSourceEntry {
        name: "udp",
        summary: "Unresponsive constant bit rate datagrams",
        default_ecn: "off",
        needs_rate: true,
        default_packet_bytes: None,
        echoes: false,
        normalize: no_params,
        build: |s, _| Ok(Source::Cbr(CbrSource::new(s.flow, s.rate_bps, s.packet_size_bytes, s.ecn, s.start_ns, s.stop_ns))),
    },
    RateSourceEntry {
        name: "qcn",
        summary: "QCN rate-limited source, IEEE 802.1Qau reaction point (+ Fb-hat)",
        default_ecn: "off",
        needs_rate: true,
        default_packet_bytes: None,
        echoes: false,
        normalize: qcn_rp::normalize_params,
        build: |s, params| Ok(Source::Qcn(QcnSource::build(s, params)?)),
    },
    RateSourceEntry {
        name: "probe",
        summary: "Latency probe: ping-like echo requests every params.interval, RTT per reply (Flent RRUL's latency under load)",
        default_ecn: "off",
        needs_rate: false,
        default_packet_bytes: Some(probe::DEFAULT_PACKET_BYTES),
        echoes: true,
        normalize: probe::normalize_params,
        build: |s, params| {
            let cfg = probe::config(params)?;
            Ok(Source::Probe(ProbeSource::new(s.flow, cfg.interval_ns, s.packet_size_bytes, s.ecn, s.start_ns, s.stop_ns)))
        },
    },
];

pub fn lookup(name: &str) -> Option<&'static RateSourceEntry> {
    REGISTRY.iter().find(|e| e.name == name)
}

pub fn names() -> impl Iterator<Item = &'static str> {
    REGISTRY.iter().map(|e| e.name)
}

fn no_params(params: &Value) -> Result<Value, String> {
    match params.as_object() {
        Some(o) if !o.is_empty() => Err("takes no parameters".into()),
        _ => Ok(Value::Object(Default::default())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_refuses_parameters_and_qcn_refuses_unknown_ones() {
        let udp = lookup("udp").unwrap();
        assert_eq!((udp.normalize)(&Value::Null).unwrap(), serde_json::json!({}));
        assert_eq!((udp.normalize)(&serde_json::json!({"rate": 1})).unwrap_err(), "takes no parameters");
        let qcn = lookup("qcn").unwrap();
        let err = (qcn.normalize)(&serde_json::json!({"fbaht": true})).unwrap_err();
        assert!(err.starts_with("unknown key 'fbaht' (did you mean 'fbhat'?"), "{err}");
        assert_eq!((qcn.normalize)(&serde_json::json!({"fbhat": true})).unwrap()["fbhat"], true);
        assert!(lookup("tcp").is_none());
    }
}
