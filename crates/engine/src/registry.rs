//! The registries as one listing, and the look-ups validation and the world
//! share: which names a flow's `cc` may take, which are rate-based sources,
//! and each one's default ECN setting.

use crate::params::unknown_choice;
use crate::transport::{rate_source, EcnSetting};
use crate::{aqm, cc};
use serde_json::Value;

/// Sources that send at a set rate rather than under a congestion window
/// (see [`rate_source`]).
pub fn is_rate_based(cc_name: &str) -> bool {
    rate_source::lookup(cc_name).is_some()
}

/// Everything a scenario can name, with its summary and default parameters:
/// `{"aqm": {name: {summary, defaults}}, "cc": {name: {summary, defaults,
/// default_ecn}}, "ecn": [...]}`. The `cc` table lists the congestion
/// controls, then the rate-based sources (`udp`, `qcn`). AQM defaults
/// that depend on the link are shown for 100 Mbit/s and 1500-byte packets.
pub fn registry() -> Result<Value, String> {
    let env = aqm::QdiscEnv { link_rate_bps: 100_000_000, mtu_bytes: 1500, limit: aqm::QueueLimit { pkts: Some(1000), bytes: None } };
    let mut aqms = serde_json::Map::new();
    for e in aqm::REGISTRY {
        let (_, defaults) = (e.build)(&Value::Null, &env)?;
        aqms.insert(e.name.into(), serde_json::json!({"summary": e.summary, "defaults": defaults}));
    }
    let mut ccs = serde_json::Map::new();
    for e in cc::REGISTRY {
        let (_, defaults) = (e.build)(&Value::Null)?;
        ccs.insert(e.name.into(), serde_json::json!({"summary": e.summary, "defaults": defaults, "default_ecn": e.default_ecn}));
    }
    for e in rate_source::REGISTRY {
        let defaults = (e.normalize)(&Value::Null)?;
        ccs.insert(e.name.into(), serde_json::json!({"summary": e.summary, "defaults": defaults, "default_ecn": e.default_ecn}));
    }
    Ok(serde_json::json!({"aqm": aqms, "cc": ccs, "ecn": EcnSetting::NAMES}))
}

/// Names a flow's `cc` may take.
pub fn flow_cc_names() -> Vec<&'static str> {
    let mut v = cc::cc_names();
    v.extend(rate_source::names());
    v
}

/// Resolve a flow's ECN setting: the explicit one, or the controller's default.
pub fn resolve_ecn(path: &str, cc_name: &str, ecn: Option<&str>) -> Result<EcnSetting, String> {
    let name = match ecn {
        Some(e) => e,
        None => match rate_source::lookup(cc_name) {
            Some(e) => e.default_ecn,
            None => cc::lookup(cc_name).map_or("off", |e| e.default_ecn),
        },
    };
    EcnSetting::parse(name).ok_or_else(|| format!("{path}.ecn: {}", unknown_choice("ECN setting", name, &EcnSetting::NAMES)))
}
