"""`workload_flows` in summary.json: per-label completion times, size classes
and SYN timeouts, checked against the per-flow table and RFC 6298's initial RTO."""

import numpy as np
import pytest

import aqmlab

SCENARIO = {
    "name": "syn-losses",
    "duration": "12s",
    # A 4-packet drop-tail buffer under a busy Poisson load loses SYNs.
    "bottleneck": {"rate": "10Mbps", "buffer": "4pkt", "aqm": "fifo"},
    "flows": [{"cc": "cubic", "label": "bulk", "rtt": "20ms"}],
    "workloads": [
        {"kind": "web", "rate": "40/s", "cc": "cubic", "rtt": "20ms", "label": "web", "stop": "8s",
         "size": {"dist": "pareto", "min": "1KB", "max": "1MB", "shape": 1.2}},
        {"kind": "web", "rate": "10/s", "cc": "reno", "rtt": "20ms", "label": "web-reno", "stop": "8s",
         "size": {"dist": "fixed", "mean": "5KB"}},
    ],
}


@pytest.fixture(scope="module")
def run():
    return aqmlab.run(SCENARIO)


def _nearest_rank(v: np.ndarray, q: float) -> float:
    v = np.sort(v)
    return float(v[max(1, int(np.ceil(q * len(v)))) - 1])


def test_per_label_counts_and_quantiles_match_the_flow_table(run) -> None:
    flows = run.tables["flows"]
    wl = flows[flows.from_workload == 1]
    summary = run.summary["workload_flows"]
    assert set(summary["by_label"]) == {"web", "web-reno"}
    for label, g in summary["by_label"].items():
        rows = wl[wl.label == label]
        done = rows[rows.fct_ns.notna() & (rows.fct_ns >= 0)]
        assert g["started"] == len(rows) and g["completed"] == len(done)
        assert g["syn_timeouts"] == int((rows.syn_retries > 0).sum())
        assert g["timeout_flows"] == int(((rows.syn_retries > 0) | (rows.rtos > 0)).sum())
        assert g["rtos"] == int(rows.rtos.sum())
        fct = done.fct_ns.to_numpy(dtype=float) / 1e9
        assert g["fct_s"]["p50"] == pytest.approx(_nearest_rank(fct, 0.5))
        assert g["fct_s"]["p99"] == pytest.approx(_nearest_rank(fct, 0.99))
        assert g["fct_s"]["max"] == pytest.approx(fct.max())
        # Size classes partition the completed flows.
        assert sum(c["completed"] for c in g["by_size"]) == g["completed"]
        for c in g["by_size"]:
            lo, hi = c["min_bytes"], c["max_bytes"] or np.inf
            assert c["completed"] == int(((done.size_bytes >= lo) & (done.size_bytes < hi)).sum())
    assert summary["syn_timeouts"] == sum(g["syn_timeouts"] for g in summary["by_label"].values())
    # Fixed 5 kB flows all fall in the first class.
    assert summary["by_label"]["web-reno"]["by_size"][0]["completed"] == summary["by_label"]["web-reno"]["completed"]


def test_a_lost_syn_costs_the_initial_rto(run) -> None:
    """RFC 6298 §2.1: before an RTT sample the RTO is 1 s, so a flow whose SYN
    was lost cannot complete in under a second (the seed-000 'No ECN on SYN
    → 1s timeout' mechanism)."""
    flows = run.tables["flows"]
    lost = flows[(flows.from_workload == 1) & (flows.syn_retries > 0) & (flows.fct_ns >= 0)]
    assert len(lost) >= 3, "the scenario must lose some SYNs for this test to mean anything"
    assert (lost.fct_ns >= 1_000_000_000).all()
    clean = flows[(flows.from_workload == 1) & (flows.syn_retries == 0) & (flows.fct_ns >= 0) & (flows.size_bytes < 10_000)]
    assert (clean.fct_ns < 1_000_000_000).mean() > 0.5
