"""`metrics.rtt_histogram`: the summary's `rtt_ms`, every TCP RTT sample
after warm-up, against the path it measured."""

import pytest

import aqmlab


def _run(**metrics):
    return aqmlab.run({
        "duration": "20s", "warmup": "5s",
        "bottleneck": {"rate": "10Mbps", "buffer": "100pkt", "aqm": "fifo"},
        "flows": [{"cc": "reno", "rtt": "40ms", "count": 2}],
        "metrics": metrics,
    })  # fmt: skip


def test_rtt_samples_are_the_base_rtt_plus_the_queue() -> None:
    s = _run(rtt_histogram=True).summary
    rtt, q = s["rtt_ms"], s["queues"][0]
    # Every sample covers the 40 ms path plus the data packet's and the ACK's
    # serialisation; none can be shorter.
    serial_ms = 1500 * 8 / 10e6 * 1e3
    assert rtt["p10"] >= 40.0 + serial_ms - 0.1
    # Each RTT is the base, the bottleneck sojourn of the timed segment and at
    # most one delayed-ACK wait (an ACK per 2 segments: one more segment time
    # at this rate) plus serialisation: the means agree within that.
    lo = 40.0 + q["sojourn_ms"]["mean"]
    assert lo - 0.5 <= rtt["mean"] <= lo + 3 * serial_ms + 0.5
    # One sample per window-advancing ACK after warm-up: about one per 2 segments.
    pkts = q["departures"]
    assert 0.3 * pkts <= rtt["samples"] <= 0.7 * pkts


def test_rtt_histogram_is_off_by_default() -> None:
    assert "rtt_ms" not in _run().summary


def test_bad_value_is_one_line_in_the_users_terms(tmp_path) -> None:
    with pytest.raises(aqmlab.ScenarioError) as e:
        _run(rtt_histogram="yes")
    assert "metrics.rtt_histogram" in str(e.value) and "\n" not in str(e.value)
