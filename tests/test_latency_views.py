"""Latency views (aqmlab.latency): the data behind each figure against the
path it shows, and the figures from `result.plot(name)` and `aqmlab report`."""

import numpy as np
import pytest

import aqmlab
from aqmlab import latency
from tests.conftest import cli

BASE_MS, RATE_BPS, BUFFER_MS = 40.0, 10e6, 50.0
SER_MS = 1500 * 8 / RATE_BPS * 1e3  # one full segment at the bottleneck: 1.2 ms


@pytest.fixture(scope="module")
def fifo():
    return aqmlab.run({
        "name": "one reno", "duration": "10s", "warmup": "2s",
        "bottleneck": {"rate": "10Mbps", "buffer": "50ms", "aqm": "fifo"},
        "flows": [{"cc": "reno", "rtt": "40ms"}],
    })  # fmt: skip


@pytest.fixture(scope="module")
def dualq():
    return aqmlab.run({
        "name": "dualq", "duration": "10s", "warmup": "3s",
        "bottleneck": {"rate": "10Mbps", "buffer": "200ms", "aqm": "dualpi2"},
        "flows": [{"cc": "prague", "rtt": "20ms", "count": 2}, {"cc": "cubic", "rtt": "20ms", "count": 2},
                  {"cc": "probe", "rtt": "20ms", "ecn": "l4s", "label": "ping-l4s"}],
    })  # fmt: skip


def test_single_flow_rtt_lies_between_base_and_base_plus_buffer(fifo) -> None:
    s = latency.rtt_series(fifo)
    assert set(s["source"]) == {"srtt"} and set(s["flow"]) == {0}
    after = s[s["t_s"] >= 2.0]["rtt_ms"]
    # Every RTT sample is the base, the segment's sojourn (at most the 50 ms
    # buffer), its serialisation and the ACK's wait for a second segment
    # (one more segment time): srtt, their average, lies in the same range.
    assert after.min() >= BASE_MS + SER_MS - 1e-9
    assert after.max() <= BASE_MS + BUFFER_MS + 2 * SER_MS
    # Reno fills the tail-drop buffer: the RTT swings over most of it.
    assert after.max() - after.min() > 0.5 * BUFFER_MS


def test_queue_delay_series_adds_up_to_the_summary(fifo) -> None:
    q = latency.queue_delay_series(fifo)
    assert set(zip(q["queue"], q["subqueue"], strict=True)) == {("bottleneck", "all")}
    assert q["mean_ms"].dropna().between(0, BUFFER_MS + SER_MS).all()
    assert (q["max_ms"].dropna() >= q["mean_ms"].dropna()).all()
    # Departure-weighted, the interval means after warm-up are the summary's exact mean.
    qt = fifo.queue_timeseries
    dep = qt["departed_pkts"].diff().to_numpy()
    keep = (qt["t_s"] > 2.0 + 1e-9).to_numpy()
    mean = np.nansum(q["mean_ms"].to_numpy()[keep] * dep[keep]) / np.nansum(dep[keep])
    assert mean == pytest.approx(fifo.queue()["sojourn_ms"]["mean"], rel=1e-9)
    assert q["max_ms"].max() == pytest.approx(fifo.queue()["sojourn_ms"]["max"], rel=0.01)


def test_dualq_sub_queues_and_groups(dualq) -> None:
    q = latency.queue_delay_series(dualq)
    after = q[q["t_s"] > 3.0]
    by_sub = after.groupby("subqueue")["mean_ms"].median()
    subs = dualq.queue()["subqueues"]
    # Each sub-queue's series agrees with its own summary (within the spread of interval medians)
    # and the two are apart: L below the 1 ms step threshold, C near the 15 ms PI2 target.
    assert by_sub["l4s"] < 1.0 <= by_sub["classic"]
    assert by_sub["classic"] == pytest.approx(subs["classic"]["sojourn_ms"]["mean"], rel=0.5)
    groups = latency.rtt_samples(dualq, "label")
    assert set(groups) == {"prague", "cubic", "ping-l4s"}
    # The L4S probe's samples are its replies after warm-up; its median is the
    # base RTT plus the L queue's delay.
    probe = groups["ping-l4s"]
    assert len(probe) == len(dualq.probe_rtt[dualq.probe_rtt["t_ns"] >= 3e9])
    assert np.median(probe) - 20.0 < 1.0
    assert np.median(groups["cubic"]) > np.median(groups["prague"])
    per_flow = latency.rtt_samples(dualq, "flow")
    assert sorted(per_flow) == [f"flow {i} ({lab})" for i, lab in
                                enumerate(["prague", "prague", "cubic", "cubic", "ping-l4s"])]  # fmt: skip
    ps = latency.probe_summary(dualq)
    assert ps["p50_ms"].iloc[0] == pytest.approx(float(np.sort(probe)[(len(probe) + 1) // 2 - 1]))


def test_figures_draw_that_data(dualq) -> None:
    fig = dualq.plot("rtt_time")
    ax = fig.axes[0]
    assert len(ax.lines) == 5  # 4 TCP srtt lines + the probe's dots
    fig = dualq.plot("queue_delay")
    assert len(fig.axes[0].lines) == 4  # mean and max per sub-queue
    fig = dualq.plot.rtt_cdf()
    assert len(fig.axes[0].lines) == 5
    fig = dualq.plot("rtt_box")
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["cubic", "ping-l4s", "prague"]
    with pytest.raises(ValueError, match="allowed"):
        dualq.plot("nope")


def test_report_writes_the_latency_views(dualq, tmp_path) -> None:
    dualq.save(tmp_path, plots=False, report=False)
    p = cli("report", str(tmp_path))
    assert p.returncode == 0, p.stderr
    for name in ("rtt_time", "queue_delay", "rtt_cdf", "rtt_box"):
        assert (tmp_path / "plots" / f"{name}.png").stat().st_size > 5000
    assert "rtt_time" in (tmp_path / "report.html").read_text()


def test_per_queue_plots_of_a_fat_tree_draw_the_busiest_queues_and_say_so() -> None:
    """A k = 4 tree has 96 queues: the per-queue plots draw MAX_LINES of
    them, those with the highest 99th-percentile delay (the delay plots) or
    the most marks and drops, and their titles say how many are shown."""
    import matplotlib.pyplot as plt

    r = aqmlab.run({
        "name": "tree", "duration": "6ms", "warmup": "1ms",
        "topology": {"fat_tree": {"k": 4, "rate": "1Gbps", "delay": "1us", "aqm": "step", "params": {"threshold": "5pkt"}}},
        "flows": [{"cc": "dctcp", "pattern": "permutation"}],
        "metrics": {"interval": "500us"},
    })  # fmt: skip
    q = r.queues[r.queues["arrivals"] > 0]
    assert len(q) > 2 * latency.MAX_LINES
    worst = q.sort_values(["sojourn_p99_ms", "arrivals"], ascending=False).head(latency.MAX_LINES)
    fig = r.plot("sojourn_cdf")
    title, labels = fig.axes[0].get_title(), [ln.get_label() for ln in fig.axes[0].lines]
    assert f"({latency.MAX_LINES} of {len(q)} queues: highest 99th-percentile delay)" in title
    assert sorted(labels) == sorted(f"{a} / {b}" for a, b in zip(worst["queue"], worst["subqueue"], strict=True))
    fig = r.plot("probabilities")
    assert f"{latency.MAX_LINES} of " in fig.axes[0].get_title() and "most marks and drops" in fig.axes[0].get_title()
    marked = q.sort_values(["marks", "arrivals"], ascending=False).head(latency.MAX_LINES)
    shown = {ln.get_label().removeprefix("mark ") for ln in fig.axes[0].lines}
    assert shown == {f"{a} / {b}" for a, b in zip(marked["queue"], marked["subqueue"], strict=True)}
    fig = r.plot("queue_delay")
    assert len(fig.axes[0].lines) == 2 * latency.MAX_LINES
    plt.close("all")
