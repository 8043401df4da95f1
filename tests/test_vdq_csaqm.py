"""vdq-csaqm's dynamic traffic: phases built from flow groups with start/stop
times, and per-window statistics (aqmlab.windows) from a run's time series."""

from __future__ import annotations

from pathlib import Path

import aqmlab
import pytest
from aqmlab.reproduce import EXPERIMENTS
from aqmlab.reproduce.vdq_csaqm import PHASES, VdqCsaqm, intervals, phase_groups, phase_name
from aqmlab.sweep import make_point, run_points
from aqmlab.windows import result_window_stats


def test_phase_groups_run_the_seed_phase_counts() -> None:
    """Flow k of a class runs in every phase with at least k flows: the
    groups' start/stop times give exactly the seed's counts per phase, and a
    flow that stays from one phase to the next keeps running."""
    for idx in (0, 1):
        counts = [p[idx] for p in PHASES]
        groups = phase_groups(counts, 10.0, {"cc": "cubic", "rtt": "5ms"})
        for i, n in enumerate(counts):
            t = i * 10.0 + 5
            active = sum(g["count"] for g in groups
                         if float(g["start"][:-1]) <= t < float(g.get("stop", "1e9s")[:-1]))  # fmt: skip
            assert active == n, (idx, i)
    # The lone L4S flow runs from 1-0 through 1-10 without a restart.
    assert intervals([1, 1, 10, 50, 50, 10, 1, 0, 10])[0] == [(0, 7), (8, 9)]


def test_each_window_sees_the_phase_flow_counts_and_a_bounded_link() -> None:
    """One engine run of the phased scenario (short phases): in every phase
    window the flows marked active are the phase's counts, their goodput is
    positive, and the class sums never exceed the link."""
    exp = VdqCsaqm(phase_s=1.0, settle_s=0.5)
    case = exp.phased("vdq_csaqm", "dctcp", "1g")
    r = aqmlab.run(case.scenario)
    ws = {w["name"]: w for w in result_window_stats(r, case.windows)}
    for nl, nc in PHASES:
        w = ws[phase_name((nl, nc))]
        act = [f for f in w["flows"] if f["active"]]
        assert sum(f["label"] == "dctcp" for f in act) == nl and sum(f["label"] == "cubic" for f in act) == nc
        assert all(f["goodput_bps"] > 0 for f in act)
        assert sum(f["goodput_bps"] for f in w["flows"]) <= 1e9
        u = w["queues"]["bottleneck"]["utilization"]
        assert 0 < u <= 1.005
        subs = w["queues"]["bottleneck"]["subqueues"]
        assert (subs["l4s"]["sojourn_ms"] is not None) == (nl > 0)


def test_window_goodput_of_a_constant_rate_flow() -> None:
    """A 300 Mbit/s UDP flow from 1 s to 3 s through a 1 Gbit/s FIFO: 300
    Mbit/s (within 1 %) and active in [1.5 s, 3 s), nothing in [3.5 s, 4 s);
    utilisation 0.3 (within 2 %: packet headers are in the rate)."""
    s = {"duration": "4s", "bottleneck": {"rate": "1Gbps", "aqm": "fifo"},
         "flows": [{"cc": "udp", "rate": "300Mbps", "rtt": "2ms", "start": "1s", "stop": "3s"}],
         "metrics": {"interval": "100ms", "sojourn_samples_every": 10}}  # fmt: skip
    r = aqmlab.run(s)
    on, off = result_window_stats(r, [("on", 1.5, 3.0), ("off", 3.5, 4.0)])
    f = on["flows"][0]
    assert f["active"] and f["goodput_bps"] == pytest.approx(300e6, rel=0.01)
    assert not off["flows"][0]["active"] and off["flows"][0]["goodput_bps"] == 0
    assert on["queues"]["bottleneck"]["utilization"] == pytest.approx(0.3, rel=0.02)


def test_windows_ride_in_the_cached_summary(tmp_path: Path) -> None:
    """A point with windows has its own cache key and its summary (also when
    read back from the cache) carries the window statistics."""
    s = {"duration": "2s", "bottleneck": {"rate": "100Mbps"}, "flows": [{"cc": "cubic", "rtt": "10ms"}]}
    plain, windowed = make_point(s, {}, 1), make_point(s, {}, 1, [("late", 1.0, 2.0)])
    assert plain.key != windowed.key
    for _ in range(2):  # ran, then cached
        (o,) = run_points([windowed], jobs=1, cache_dir=tmp_path)
        (w,) = o.summary["windows"]
        assert w["name"] == "late" and w["flows"][0]["goodput_bps"] > 50e6
    assert o.status == "cached"
    (o,) = run_points([plain], jobs=1, cache_dir=tmp_path)
    assert "windows" not in o.summary


def test_quick_mode_keeps_every_cc_through_both_aqms_in_all_phases() -> None:
    exp = EXPERIMENTS["vdq-csaqm"]
    quick = exp.cases(True)
    phased = {(c.tags["aqm"], c.tags["cc"]) for c in quick if c.tags["kind"] == "phased"}
    assert phased == {(a, cc) for a in ("vdq_csaqm", "dualpi2") for cc in ("dctcp", "prague", "bbr2-l4s", "bbr2-classic")}
    for c in quick:
        if c.tags["kind"] == "phased":
            judged = [w[0] for w in c.windows if "@" not in w[0]]
            assert judged == [phase_name(p) for p in PHASES] and c.tags["rate"] == "1g"
    assert any("10 Gbit/s" in s for s in exp.quick_skips())
    assert {c.tags["rate"] for c in exp.cases(False)} == {"1g", "10g"}
