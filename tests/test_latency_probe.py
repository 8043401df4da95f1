"""Latency probe (`cc = "probe"`): its RTT samples against the path they
measured: the base RTT on an idle path, base + the bottleneck sojourn of
the request under load, and the sub-queue its ECN class selects in DualPI2."""

import numpy as np
import pytest

import aqmlab

BASE_MS = 20.0
RATE_BPS = 10e6
PROBE_BYTES = 84  # the default: a ping echo request
SER_NS = PROBE_BYTES * 8 * 1e9 / RATE_BPS  # serialisation of a request at the bottleneck (67.2 µs)


def _scenario(flows, aqm="fifo", buffer="50ms", **metrics):
    return {
        "duration": "4s", "warmup": "1s",
        "bottleneck": {"rate": "10Mbps", "buffer": buffer, "aqm": aqm},
        "flows": flows, "metrics": metrics,
    }  # fmt: skip


def test_idle_path_rtt_is_the_base_rtt_plus_serialisation_exactly() -> None:
    r = aqmlab.run(_scenario([{"cc": "probe", "rtt": "20ms"}]))
    p = r.probe_rtt
    # 10 ms interval over 4 s: 400 requests, the last ones' replies still in flight at the end.
    assert 395 <= len(p) <= 400
    # The reply crosses a pure-delay path: only the request is serialised (84 B at 10 Mbit/s).
    assert set(p["rtt_ns"]) == {int(BASE_MS * 1e6 + SER_NS)}
    st = r.summary["flows"][0]["probe_rtt_ms"]
    assert st["min"] == st["max"] == pytest.approx(BASE_MS + SER_NS / 1e6, abs=1e-9)
    assert r.summary["flows"][0]["cc"] == "probe"


def test_loaded_fifo_rtt_is_base_plus_the_requests_queue_delay() -> None:
    """Under two CUBIC flows the probe's RTT is the base RTT, the request's
    serialisation and its own sojourn at the bottleneck, matched request by
    request through the raw sojourn samples. Tolerance: 1 ns (the link
    carries the remainder of bits/rate, so a serialisation time varies by
    at most 1 ns)."""
    r = aqmlab.run(_scenario([{"cc": "cubic", "rtt": "20ms", "count": 2}, {"cc": "probe", "rtt": "20ms"}],
                             sojourn_samples_every=1))  # fmt: skip
    probe = 2
    soj = r.sojourn_samples
    soj = soj[soj["flow"] == probe]
    # The request's arrival at the queue: dequeue time - sojourn; request k is
    # sent at k * 10 ms and reaches the queue a fixed forward delay later.
    enq = (soj["t_ns"] - soj["sojourn_ns"]).to_numpy()
    fwd = int(enq.min())  # request 0 finds an empty queue
    k = (enq - fwd) // 10_000_000
    assert np.all((enq - fwd) % 10_000_000 == 0)
    by_seq = dict(zip(k.tolist(), soj["sojourn_ns"].tolist(), strict=True))
    p = r.probe_rtt
    matched = [(rtt, by_seq[s]) for s, rtt in zip(p["seq"], p["rtt_ns"], strict=True) if s in by_seq]
    assert len(matched) >= 0.9 * len(p)
    excess = np.array([rtt - (BASE_MS * 1e6 + SER_NS + q) for rtt, q in matched])
    assert np.abs(excess).max() <= 1.0
    # And the queue was loaded: the median probe sees most of the 50 ms buffer.
    assert r.summary["flows"][probe]["probe_rtt_ms"]["p50"] > BASE_MS + 25


def test_dualpi2_l4s_probe_sees_the_l_queue_and_a_classic_probe_the_c_queue() -> None:
    """One Prague and one CUBIC flow through DualPI2 (RFC 9332 defaults:
    classic target 15 ms, L step threshold 1 ms). An ECT(1) probe is
    classified into the L queue and sees its delay: below 1 ms at the median
    (the step marking threshold, RFC 9332 §A.1). A not-ECT probe and an
    ECT(0) probe go to the C queue and see its delay: the PI controller
    holds the mean at the 15 ms target; the band [7.5, 30] ms on the median
    (a factor of 2) is our choice for the sawtooth of one CUBIC flow."""
    flows = [
        {"cc": "prague", "rtt": "20ms"},
        {"cc": "cubic", "rtt": "20ms"},
        {"cc": "probe", "rtt": "20ms", "ecn": "l4s", "label": "probe-l4s"},
        {"cc": "probe", "rtt": "20ms", "ecn": "off", "label": "probe-notect"},
        {"cc": "probe", "rtt": "20ms", "ecn": "classic", "label": "probe-ect0"},
    ]
    s = _scenario(flows, aqm="dualpi2", buffer="200ms")
    s["duration"], s["warmup"] = "12s", "4s"
    r = aqmlab.run(s)
    st = {f["label"]: f["probe_rtt_ms"] for f in r.summary["flows"] if f["cc"] == "probe"}
    base = BASE_MS + SER_NS / 1e6
    assert st["probe-l4s"]["p50"] - base < 1.0
    for lab in ("probe-notect", "probe-ect0"):
        assert 7.5 <= st[lab]["p50"] - base <= 30.0, (lab, st[lab])
    # The probes agree with the queue's own sojourn statistics per sub-queue.
    subs = r.queue()["subqueues"]
    assert st["probe-notect"]["mean"] - base == pytest.approx(subs["classic"]["sojourn_ms"]["mean"], abs=3.0)
    assert st["probe-l4s"]["mean"] - base == pytest.approx(subs["l4s"]["sojourn_ms"]["mean"], abs=0.5)


def test_probe_keys_are_checked() -> None:
    bad = _scenario([{"cc": "probe", "rtt": "20ms", "rate": "1Mbps"}])
    with pytest.raises(aqmlab.ScenarioError, match=r"flows\[0\]\.rate: a probe flow sets its own pace"):
        aqmlab.run(bad)
    bad = _scenario([{"cc": "probe", "rtt": "20ms", "params": {"intervall": "1s"}}])
    with pytest.raises(aqmlab.ScenarioError, match=r"flows\[0\]\.params: unknown key 'intervall'"):
        aqmlab.run(bad)
    n = aqmlab.validate(_scenario([{"cc": "probe", "rtt": "20ms", "params": {"interval": "0.2s"}}]))
    assert n["flows"][0]["params"] == {"interval": "200ms"}


def test_same_seed_same_probe_samples() -> None:
    s = _scenario([{"cc": "cubic", "rtt": "20ms"}, {"cc": "probe", "rtt": "20ms", "ecn": "l4s"}])
    a, b = aqmlab.run(s), aqmlab.run(s)
    assert a.probe_rtt.equals(b.probe_rtt)


def test_a_reproduction_shows_probe_views_without_changing_its_judged_runs(tmp_path) -> None:
    """Experiment.probe_views: the named case runs once more with two probes
    (ECT(1), Not-ECT); the judged runs and verdicts are those without."""
    from aqmlab.reproduce.framework import reproduce
    from tests.test_reproduce import Toy

    class ToyWithProbes(Toy):
        def probe_views(self, quick: bool) -> list[str]:
            return ["fifo"]

    plain = reproduce(Toy(), quick=True, out=tmp_path / "a", jobs=1, cache_dir=None)
    probed = reproduce(ToyWithProbes(), quick=True, out=tmp_path / "b", jobs=1, cache_dir=None)
    assert [j.as_dict() for j in probed.judgements] == [j.as_dict() for j in plain.judgements]
    view = probed.runs.probe_views["fifo"]
    st = {f["label"]: f["probe_rtt_ms"] for f in view.summary["flows"] if f["cc"] == "probe"}
    assert set(st) == {"probe-l4s", "probe-classic"}
    # Through the FIFO both classes see the same queue: base 10 ms + queueing, alike within 1 ms at the median.
    assert st["probe-l4s"]["p50"] == pytest.approx(st["probe-classic"]["p50"], abs=1.0)
    assert st["probe-l4s"]["min"] >= 10.0
    report = (tmp_path / "b" / "report.html").read_text()
    assert "Latency under load (probes added; shown, not judged)" in report
    assert (tmp_path / "b" / "cases" / "fifo-probes" / "report.html").exists()
    assert "Latency under load" not in (tmp_path / "a" / "report.html").read_text()
