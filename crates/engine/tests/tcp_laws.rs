//! System tests of the TCP models against analytic laws and theory.
mod common;
use common::*;
use serde_json::json;

/// (time, cwnd before, cwnd after) where a flow's cwnd fell below `ratio` × the previous sample.
fn reductions(r: &aqmlab_engine::Results, flow: u64, from_ns: u64, ratio: f64) -> Vec<(f64, f64, f64)> {
    let t = r.table("flow_ts");
    let (ts, fl, cw) = (t.f64s("t_ns"), t.f64s("flow"), t.f64s("cwnd_segs"));
    let idx: Vec<usize> = (0..ts.len()).filter(|&i| fl[i] as u64 == flow && ts[i] as u64 >= from_ns).collect();
    idx.windows(2)
        .filter(|w| cw[w[1]] < ratio * cw[w[0]])
        .map(|w| (ts[w[1]], cw[w[0]], cw[w[1]]))
        .collect()
}

#[test]
fn reno_with_a_one_bdp_fifo_saturates_the_link_with_the_textbook_sawtooth() {
    // 10 Mbit/s, 20 ms: BDP = 25 kB = 16.7 packets of 1500 B; buffer = 17 packets.
    let r = run(json!({
        "duration": "40s", "warmup": "10s",
        "bottleneck": {"rate": "10Mbps", "buffer": "17pkt"},
        "flows": [{"cc": "reno", "rtt": "20ms"}],
        "metrics": {"interval": "5ms"}
    }));
    let util = queue(&r, "bottleneck")["utilization"].as_f64().unwrap();
    assert!(util >= 0.95, "utilization {util}");
    let red = reductions(&r, 0, 10_000_000_000, 0.7);
    assert!(red.len() >= 20, "only {} reductions", red.len());
    // Amplitude: the window peaks at BDP + buffer (+1 to overflow) and halves.
    let w_max = 16.7 + 17.0 + 1.0;
    for &(_, before, after) in &red {
        assert!((before - w_max).abs() <= 2.0, "peak {before} vs {w_max}");
        assert!((after - before / 2.0).abs() <= 1.0, "after {after} vs half of {before}");
    }
    // Period: from W/2 to W at one segment per RTT, with RTT = w/C once the
    // pipe is full: T = (W² − (W/2)²) / (2C), C = 833.3 packets/s.
    let c = 10e6 / (1500.0 * 8.0);
    let expect = (w_max * w_max - (w_max / 2.0) * (w_max / 2.0)) / (2.0 * c);
    let gaps: Vec<f64> = red.windows(2).map(|w| (w[1].0 - w[0].0) / 1e9).collect();
    let period = mean(&gaps);
    eprintln!("Reno sawtooth: utilization {util:.4}, period {period:.3} s vs theory {expect:.3} s, {} cycles", red.len());
    assert!((period - expect).abs() / expect < 0.15, "period {period:.3}s vs theory {expect:.3}s");
}

/// Mathis et al. 1997: rate = 1.22·MSS / (RTT·√p) for periodic loss, one
/// segment of growth per RTT (appropriate byte counting makes delayed ACKs irrelevant).
fn mathis_check(p: f64, duration: &str) {
    let r = run(json!({
        "duration": duration, "warmup": "20s", "seed": 7,
        "bottleneck": {"rate": "200Mbps", "buffer": "5000pkt", "loss": p},
        "flows": [{"cc": "reno", "rtt": "50ms"}],
        "metrics": {"timeseries": false}
    }));
    let mss_bits = 1448.0 * 8.0;
    let law = 1.22 * mss_bits / (0.05 * p.sqrt());
    let g = goodput(&r, 0);
    eprintln!("Mathis p={p}: goodput {:.3} Mbit/s, law {:.3} Mbit/s, ratio {:.3}", g / 1e6, law / 1e6, g / law);
    assert!((g - law).abs() / law < 0.25, "p={p}: goodput {:.2} Mbit/s vs Mathis {:.2} Mbit/s", g / 1e6, law / 1e6);
}

#[test]
fn reno_follows_the_mathis_law_at_loss_0_1_percent() {
    mathis_check(0.001, "600s");
}

#[test]
fn reno_follows_the_mathis_law_at_loss_1_percent() {
    mathis_check(0.01, "300s");
}

#[test]
fn dctcp_with_step_marking_at_10g_keeps_the_queue_near_k_without_drops() {
    let r = run(json!({
        "duration": "2s", "warmup": "500ms",
        "bottleneck": {"rate": "10Gbps", "buffer": "250pkt", "aqm": "step", "params": {"threshold": "65pkt"}},
        "flows": [{"cc": "dctcp", "rtt": "100us", "count": 2, "start_jitter": "100us"}],
        "metrics": {"interval": "100us"}
    }));
    let q = queue(&r, "bottleneck");
    let util = q["utilization"].as_f64().unwrap();
    assert!(util >= 0.95, "utilization {util}");
    assert_eq!(q["drops"].as_u64().unwrap(), 0, "drops after warm-up");
    assert!(q["marks"].as_u64().unwrap() > 0);
    // Queue length samples oscillate around K = 65.
    let t = r.table("queue_ts");
    let (ts, backlog) = (t.f64s("t_ns"), t.f64s("backlog_pkts"));
    let v: Vec<f64> = (0..ts.len()).filter(|&i| ts[i] >= 5e8).map(|i| backlog[i]).collect();
    let m = mean(&v);
    eprintln!("DCTCP step: utilization {util:.4}, mean backlog {m:.1} pkts (K = 65)");
    assert!((45.0..=85.0).contains(&m), "mean backlog {m} packets vs K = 65");
    let above = v.iter().filter(|&&b| b > 65.0).count() as f64 / v.len() as f64;
    assert!((0.1..0.9).contains(&above), "fraction of samples above K: {above}");
}

#[test]
fn dctcp_rate_follows_two_over_p_rtt_under_random_marking() {
    // DCTCP with marking probability p: W = 2/p segments (De Schepper et al., PI2 paper).
    for p in [0.01, 0.04] {
        let r = run(json!({
            "duration": "60s", "warmup": "10s", "seed": 3,
            "bottleneck": {"rate": "1Gbps", "buffer": "10000pkt", "mark": p},
            "flows": [{"cc": "dctcp", "rtt": "10ms"}],
            "metrics": {"timeseries": false}
        }));
        let law = 2.0 / (p * 0.010) * 1448.0 * 8.0;
        let g = goodput(&r, 0);
        eprintln!("DCTCP p={p}: goodput {:.2} Mbit/s, 2/(p·RTT) {:.2} Mbit/s, ratio {:.3}", g / 1e6, law / 1e6, g / law);
        assert!((g - law).abs() / law < 0.30, "p={p}: {:.1} Mbit/s vs 2/(p·RTT) = {:.1} Mbit/s", g / 1e6, law / 1e6);
    }
}

#[test]
fn cubic_window_after_a_loss_follows_the_cubic_curve_with_beta_0_7() {
    // Large BDP so the cubic region dominates: 100 Mbit/s, 100 ms (BDP 833 packets).
    let r = run(json!({
        "duration": "250s", "warmup": "30s",
        "bottleneck": {"rate": "100Mbps", "buffer": "833pkt"},
        "flows": [{"cc": "cubic", "rtt": "100ms"}],
        "metrics": {"interval": "50ms"}
    }));
    let t = r.table("flow_ts");
    let (ts, fl, cw) = (t.f64s("t_ns"), t.f64s("flow"), t.f64s("cwnd_segs"));
    let red = reductions(&r, 0, 30_000_000_000, 0.8);
    assert!(red.len() >= 3, "{} reductions", red.len());
    let mut checked = 0;
    let mut w_max_prev = red[0].1;
    for w in red.windows(2).skip(1) {
        let (t0, before, after) = w[0];
        // β = 0.7 (RFC 9438 §4.6), from FlightSize capped at cwnd.
        assert!((after / before - 0.7).abs() < 0.03, "reduction {before} -> {after}");
        // §4.7 fast convergence: a peak below the previous W_max lowers the plateau.
        let w_max = if before < w_max_prev { before * 1.7 / 2.0 } else { before };
        w_max_prev = w_max;
        // §4.2: K = cbrt((W_max − cwnd_epoch)/C); the epoch starts when recovery
        // ends, about one (queue-inflated) RTT after the loss is detected.
        let k = ((w_max - after) / 0.4).cbrt();
        let epoch = t0 + 0.15e9;
        for i in 0..ts.len() {
            let dt = (ts[i] - epoch) / 1e9;
            if fl[i] != 0.0 || dt < 0.5 || ts[i] >= w[1].0 - 1e8 {
                continue;
            }
            let model = 0.4 * (dt - k).powi(3) + w_max;
            assert!(
                (cw[i] - model).abs() / model < 0.05,
                "t+{dt:.2}s: cwnd {} vs W_cubic {model:.0} (K {k:.2}s, W_max {w_max:.0})",
                cw[i]
            );
            checked += 1;
        }
    }
    eprintln!("CUBIC curve: {checked} samples within 5 % of W_cubic over {} epochs", red.len() - 2);
    assert!(checked > 20);
}

#[test]
fn abe_keeps_a_larger_window_than_classic_ecn_without_retransmissions() {
    let mean_cwnd = |beta_ecn: f64| {
        let r = run(json!({
            "duration": "60s", "warmup": "10s",
            "bottleneck": {"rate": "10Mbps", "buffer": "1000pkt", "aqm": "step", "params": {"threshold": "5ms"}},
            "flows": [{"cc": "reno", "rtt": "100ms", "ecn": "classic", "params": {"beta_ecn": beta_ecn}}],
            "metrics": {"interval": "10ms"}
        }));
        assert_eq!(flow(&r, 0)["retransmits"].as_u64().unwrap(), 0, "beta_ecn {beta_ecn}");
        assert_eq!(flow(&r, 0)["ecn_negotiated"], "classic");
        (mean(&flow_series(&r, 0, "cwnd_segs", 10_000_000_000)), goodput(&r, 0))
    };
    let (w50, g50) = mean_cwnd(0.5);
    let (w80, g80) = mean_cwnd(0.8);
    eprintln!("ABE: mean cwnd {w50:.1} -> {w80:.1}, goodput {:.2} -> {:.2} Mbit/s", g50 / 1e6, g80 / 1e6);
    assert!(w80 > 1.15 * w50, "mean cwnd {w80:.1} (β_ecn 0.8) vs {w50:.1} (0.5)");
    assert!(g80 > g50, "goodput {g80} vs {g50}");
}

#[test]
fn two_reno_flows_with_equal_rtt_share_fairly() {
    let r = run(json!({
        "duration": "120s", "warmup": "20s", "seed": 5,
        "bottleneck": {"rate": "20Mbps", "buffer": "50pkt"},
        "flows": [{"cc": "reno", "rtt": "20ms", "count": 2, "start_jitter": "50ms"}],
        "metrics": {"timeseries": false}
    }));
    let j = r.summary()["fairness"]["jain"].as_f64().unwrap();
    eprintln!("two Reno flows: Jain {j:.4}");
    assert!(j >= 0.98, "Jain {j}");
}

#[test]
fn the_shorter_rtt_reno_flow_gets_more() {
    let r = run(json!({
        "duration": "120s", "warmup": "20s",
        "bottleneck": {"rate": "20Mbps", "buffer": "100pkt"},
        "flows": [{"cc": "reno", "rtt": "10ms"}, {"cc": "reno", "rtt": "100ms"}],
        "metrics": {"timeseries": false}
    }));
    let (short, long) = (goodput(&r, 0), goodput(&r, 1));
    eprintln!("RTT unfairness: 10 ms {:.2} Mbit/s, 100 ms {:.2} Mbit/s", short / 1e6, long / 1e6);
    // Reno's rate scales as 1/RTT^a with 1 ≤ a ≤ 2 under drop-tail; at least 2× here.
    assert!(short > 2.0 * long, "10 ms flow {short} vs 100 ms flow {long}");
}

#[test]
fn same_seed_gives_identical_results_and_another_seed_differs() {
    let s = |seed: u64| {
        json!({
            "duration": "5s", "seed": seed,
            "bottleneck": {"rate": "20Mbps", "buffer": "30pkt", "loss": 0.001},
            "flows": [{"cc": "cubic", "rtt": "20ms", "count": 3, "start_jitter": "10ms"}]
        })
    };
    let (a, b, c) = (run(s(1)), run(s(1)), run(s(2)));
    assert_eq!(a.tables, b.tables);
    let strip = |v: &serde_json::Value| {
        let mut v = v.clone();
        v["perf"]["wall_s"] = json!(0);
        v
    };
    assert_eq!(strip(&a.summary()), strip(&b.summary()));
    assert_ne!(a.table("flows"), c.table("flows"));
}

#[test]
fn classic_ecn_flow_recovers_its_window_after_a_timeout() {
    // Regression: after an RTO the receiver's ECE latch was never cleared (no
    // CWR followed a loss reduction), every ACK carried ECE, and the window
    // stayed at one segment. RFC 3168 §6.1.2 sets CWR after a reduction for
    // any reason; classic ECE only pauses growth for the window after a reduction.
    let r = run(json!({
        "duration": "30s", "warmup": "10s",
        "bottleneck": {"rate": "10Mbps", "buffer": "1000pkt", "aqm": "red", "params": {"ecn": true}},
        "flows": [{"cc": "reno", "rtt": "100ms", "ecn": "classic"}],
        "metrics": {"timeseries": false}
    }));
    assert!(flow(&r, 0)["rtos"].as_u64().unwrap() >= 1, "the scenario must exercise an RTO");
    let g = goodput(&r, 0);
    assert!(g > 7e6, "goodput {g} after the timeout");
}
