"""aqm-kids (seed 002): the grid as the seed ran it."""

from __future__ import annotations

import pytest
from aqmlab.reproduce import EXPERIMENTS


def test_aqm_kids_runs_every_aqm_at_the_same_target_and_quick_keeps_the_extremes() -> None:
    """Seed 002 compares the AQMs at equal target delays; ARED's target is
    mapped to its thresholds (FGS01 §5), PIE runs the seed's parameter set;
    quick mode keeps the extremes of every axis at the seed's run lengths."""
    from aqmlab.reproduce.aqm_kids import ared_thresholds_pkts

    exp = EXPERIMENTS["aqm-kids"]
    full = [c for c in exp.cases(False) if "medium" not in c.tags]
    for c in full:
        p = c.scenario["bottleneck"]["params"]
        assert (p.get("target") or p.get("target_delay")) == f"{c.tags['target_ms']}ms", c.label
        assert c.scenario["duration"] == {100: "60s", 500: "300s"}[c.tags["rtt_ms"]]
        if c.tags["aqm"] == "pie":
            assert p["preset"] == "linux-3.14"
    axes = lambda cs, k: {c.tags[k] for c in cs}  # noqa: E731
    assert axes(full, "target_ms") == {5, 10, 20, 30} and axes(full, "rtt_ms") == {100, 500}
    assert axes([c for c in full if c.tags["ecn"]], "flows") == {4, 16, 32, 64}
    quick = [c for c in exp.cases(True) if "medium" not in c.tags]
    assert axes(quick, "target_ms") == {5, 30} and axes(quick, "rtt_ms") == {100, 500}
    assert axes(quick, "flows") == {1, 4, 64} and axes([c for c in quick if c.tags["ecn"]], "flows") == {4, 64}
    assert len(exp.seeds(False)) == 10 and exp.quick_skips()
    # The floor: without it 5 ms maps to 2.08/6.25 packets; with it, 5 and 10 ms are one queue.
    assert ared_thresholds_pkts(5, 0.0) == pytest.approx((0.005 * 1e7 / 12000 / 2, 3 * 0.005 * 1e7 / 12000 / 2))
    assert ared_thresholds_pkts(5, 5.0) == ared_thresholds_pkts(10, 5.0) == (5.0, 15.0)


def test_aqm_kids_wlan_cases_are_the_seeds_80211_setup() -> None:
    """Slides 12-14: AQM on the AP's wlan queue of an 802.11g medium, told
    27 Mbit/s, target 5 ms, 4 senders with 1/4/8/16 flows each, downlink and
    mixed traffic, 180 s; quick keeps 1 and 16 per sender for the downlink
    and every count for mixed traffic (4 and 8 are the ACK-loss claim's)."""
    exp = EXPERIMENTS["aqm-kids"]
    wlan = [c for c in exp.cases(False) if "medium" in c.tags]
    assert {c.tags["aqm"] for c in wlan} == {"codel", "pie", "ared"}
    assert {c.tags["medium"] for c in wlan} == {"down", "mixed"}
    assert {c.tags["per_sender"] for c in wlan} == {1, 4, 8, 16}
    for c in wlan:
        s = c.scenario
        link = s["topology"]["links"][1]
        assert link["wlan"]["aqm_rate"] == "27Mbps" and link["rate"] == "54Mbps" and s["duration"] == "180s"
        p = link["params"]
        assert (p.get("target") or p.get("target_delay")) == "5ms", c.label
        flows = sum(g["count"] for g in s["flows"])
        assert flows == 4 * c.tags["per_sender"], c.label
        ups = [g for g in s["flows"] if g["src"] == "sta"]
        assert bool(ups) == (c.tags["medium"] == "mixed"), c.label
    quick = [c for c in exp.cases(True) if "medium" in c.tags]
    assert {c.tags["per_sender"] for c in quick if c.tags["medium"] == "down"} == {1, 16}
    assert {c.tags["per_sender"] for c in quick if c.tags["medium"] == "mixed"} == {1, 4, 8, 16}
