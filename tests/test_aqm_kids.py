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
    full = exp.cases(False)
    for c in full:
        p = c.scenario["bottleneck"]["params"]
        assert (p.get("target") or p.get("target_delay")) == f"{c.tags['target_ms']}ms", c.label
        assert c.scenario["duration"] == {100: "60s", 500: "300s"}[c.tags["rtt_ms"]]
        if c.tags["aqm"] == "pie":
            assert p["preset"] == "linux-3.14"
    axes = lambda cs, k: {c.tags[k] for c in cs}  # noqa: E731
    assert axes(full, "target_ms") == {5, 10, 20, 30} and axes(full, "rtt_ms") == {100, 500}
    assert axes([c for c in full if c.tags["ecn"]], "flows") == {4, 16, 32, 64}
    quick = exp.cases(True)
    assert axes(quick, "target_ms") == {5, 30} and axes(quick, "rtt_ms") == {100, 500}
    assert axes(quick, "flows") == {1, 4, 64} and axes([c for c in quick if c.tags["ecn"]], "flows") == {4, 64}
    assert len(exp.seeds(False)) == 10 and exp.quick_skips()
    # The floor: without it 5 ms maps to 2.08/6.25 packets; with it, 5 and 10 ms are one queue.
    assert ared_thresholds_pkts(5, 0.0) == pytest.approx((0.005 * 1e7 / 12000 / 2, 3 * 0.005 * 1e7 / 12000 / 2))
    assert ared_thresholds_pkts(5, 5.0) == ared_thresholds_pkts(10, 5.0) == (5.0, 15.0)
