//! The scenario: what to simulate, validated before anything runs.
//!
//! The Python front reads TOML and hands the engine the same tree as JSON.
//! Deserialisation is strict (unknown keys are errors, with "did you mean");
//! [`Scenario::validate`] then checks meaning (known AQM/CC names, positive
//! rates, warm-up shorter than the run, ...) and fills every default, so the
//! normalised scenario written to `summary.json` says exactly what ran.
//! Errors are one line: `path: what is wrong (allowed: ...)`.
//!
//! `spec.rs` holds the serde form, `validate.rs` the checks; the registry
//! listing is `crate::registry`.

mod spec;
mod validate;

pub use spec::*;
pub use validate::{join_path, parse, SIZE_DISTS};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{flow_cc_names, registry};
    use crate::aqm;
    use serde_json::Value;

    fn base() -> Value {
        serde_json::json!({
            "duration": "2s",
            "bottleneck": {"rate": "10Mbps", "aqm": "fifo"},
            "flows": [{"cc": "reno", "rtt": "20ms"}]
        })
    }

    #[test]
    fn the_registry_lists_every_name_a_scenario_accepts_with_defaults_that_validate() {
        let reg = registry().unwrap();
        let listed: Vec<&str> = reg["cc"].as_object().unwrap().keys().map(String::as_str).collect();
        let mut accepted = flow_cc_names();
        accepted.sort_unstable();
        let mut listed_sorted = listed.clone();
        listed_sorted.sort_unstable();
        assert_eq!(listed_sorted, accepted);
        let aqms: Vec<&str> = reg["aqm"].as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(aqms.len(), aqm::REGISTRY.len());
        // Each source's listed defaults, given back as its params, are accepted.
        let mut v = base();
        v["flows"] = serde_json::json!([{"cc": "qcn", "rtt": "20ms", "rate": "5Mbps", "params": reg["cc"]["qcn"]["defaults"].clone()}]);
        parse(&v.to_string()).unwrap();
    }

    fn err(v: Value) -> String {
        parse(&v.to_string()).unwrap_err()
    }

    #[test]
    fn minimal_scenario_fills_defaults() {
        let s = parse(&base().to_string()).unwrap();
        assert_eq!(s.seed, 1);
        assert_eq!(s.flows[0].ecn.as_deref(), Some("off"));
        let j = s.to_json();
        assert_eq!(j["bottleneck"]["buffer"], "100ms");
        assert_eq!(j["tcp"]["delack_timeout"], "40ms");
        assert_eq!(j["flows"][0]["params"]["beta"], 0.5);
    }

    #[test]
    fn typos_get_did_you_mean_with_the_path() {
        let mut v = base();
        v["bottleneck"]["aqm"] = "fifp".into();
        assert!(err(v).starts_with("bottleneck.aqm: unknown AQM 'fifp' (did you mean 'fifo'? allowed: fifo, step"));
        let mut v = base();
        v["flows"][0]["cc"] = "rneo".into();
        assert!(err(v).starts_with("flows[0].cc: unknown congestion control 'rneo' (did you mean 'reno'?"));
        let mut v = base();
        v["bottleneck"]["rtae"] = "1Mbps".into();
        let e = err(v);
        assert!(e.starts_with("bottleneck: unknown key 'rtae' (did you mean 'rate'?"), "{e}");
        let mut v = base();
        v["flows"][0]["params"] = serde_json::json!({"betta": 0.7});
        let e = err(v);
        assert!(e.starts_with("flows[0].params: unknown key 'betta' (did you mean 'beta'?"), "{e}");
    }

    #[test]
    fn bad_values_name_the_field() {
        let mut v = base();
        v["bottleneck"]["rate"] = "-10Mbps".into();
        assert!(err(v).starts_with("bottleneck.rate: '-10Mbps': a rate cannot be negative"));
        let mut v = base();
        v["warmup"] = "3s".into();
        assert_eq!(err(v), "warmup: 3s must be shorter than duration 2s");
        let mut v = base();
        v["flows"][0]["rtt"] = serde_json::Value::Null;
        assert!(err(v).starts_with("flows[0].rtt: required"));
        let mut v = base();
        v["flows"][0]["ecn"] = "l4".into();
        assert!(err(v).contains("did you mean 'l4s'"));
        let mut v = base();
        v["bottleneck"]["loss"] = 1.5.into();
        assert!(err(v).starts_with("bottleneck.loss: must be a probability"));
    }

    #[test]
    fn qcn_flows_take_a_rate_and_strict_reaction_point_params() {
        let mut v = base();
        v["bottleneck"]["aqm"] = "qcn".into();
        v["bottleneck"]["params"] = serde_json::json!({"q_eq": "22pkt"});
        v["flows"] = serde_json::json!([{"cc": "qcn", "rtt": "40us", "rate": "1Gbps", "params": {"fbhat": true}}]);
        let s = parse(&v.to_string()).unwrap();
        let j = s.to_json();
        assert_eq!(j["bottleneck"]["params"]["q_eq"], "22pkt");
        assert_eq!(j["bottleneck"]["params"]["sample_base"], "150KB");
        assert_eq!(j["flows"][0]["params"]["fbhat"], true);
        assert_eq!(j["flows"][0]["params"]["r_ai"], "5Mbps");
        assert_eq!(j["flows"][0]["params"]["timer"], "15ms");
        let mut w = v.clone();
        w["flows"][0]["params"] = serde_json::json!({"fbaht": true});
        let e = err(w);
        assert!(e.starts_with("flows[0].params: unknown key 'fbaht' (did you mean 'fbhat'?"), "{e}");
        let mut w = v.clone();
        w["flows"][0]["rate"] = serde_json::Value::Null;
        assert_eq!(err(w), "flows[0].rate: required for a qcn flow (e.g. '10Mbps')");
        let mut w = v.clone();
        w["flows"][0]["params"] = serde_json::json!({"gd": 0.5});
        assert!(err(w).starts_with("flows[0].params.gd: must lie in (0, 1/63)"));
        let mut w = v;
        w["bottleneck"]["params"] = serde_json::json!({"q_eq": "1ms"});
        assert!(err(w).starts_with("bottleneck.params.q_eq: must be packets or bytes"));
    }
}
