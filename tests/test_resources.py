"""The resource guard: a run whose memory or time estimate exceeds the
machine or the budget is refused before it starts (one line, exit 2)."""

from __future__ import annotations

from pathlib import Path

import aqmlab
import pytest
from aqmlab.resources import FLOW_BYTES, ResourceError, check, estimate, parse_bytes
from conftest import cli

HUGE = '''duration = "10s"
[bottleneck]
rate = "10Mbps"
[[flows]]
cc = "cubic"
rtt = "20ms"
count = 100000000
'''


def test_a_flow_count_beyond_memory_is_refused_not_aborted(tmp_path: Path) -> None:
    f = tmp_path / "huge.toml"
    f.write_text(HUGE)
    proc = cli("run", str(f), "--out", str(tmp_path / "o"))
    # Before the guard: "memory allocation of 96000000000 bytes failed", SIGABRT (134).
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("aqmlab: error: this run needs about") and "100,000,000 flows" in line and "--force" in line
    assert not (tmp_path / "o").exists()
    v = cli("validate", str(f))
    assert v.returncode == 0 and "this run needs about" in v.stderr


def test_budgets_from_the_command_line(tmp_path: Path) -> None:
    f = tmp_path / "s.toml"
    f.write_text(HUGE.replace("count = 100000000", "count = 2"))
    small = cli("run", str(f), "--out", str(tmp_path / "o"), "--max-memory", "1MB")
    assert small.returncode == 2 and "the budget --max-memory" in small.stderr
    forced = cli("run", str(f), "--out", str(tmp_path / "o"), "--max-memory", "1MB", "--force", "-q")
    assert forced.returncode == 0, forced.stderr
    slow = cli("run", str(f), "--out", str(tmp_path / "p"), "--max-time", "1ms")
    assert slow.returncode == 2 and "--max-time" in slow.stderr
    bad = cli("run", str(f), "--max-memory", "lots")
    assert bad.returncode == 2 and "--max-memory: 'lots'" in bad.stderr


def test_estimate_scales_with_flows_and_intervals() -> None:
    base = aqmlab.validate({"duration": "10s", "bottleneck": {"rate": "100Mbps"}, "flows": [{"cc": "reno", "rtt": "10ms"}]})
    many = aqmlab.validate({**base, "flows": [{"cc": "reno", "rtt": "10ms", "count": 1000}]})
    e1, e2 = estimate(base), estimate(many)
    assert e1.intervals == 101 and e2.flows == 1000
    assert e2.memory_bytes - e1.memory_bytes >= 999 * FLOW_BYTES
    # 100 Mbit/s for 10 s at 1500-byte packets: 83,333 packets.
    assert e1.packets == pytest.approx(100e6 * 10 / 12_000)
    with pytest.raises(ResourceError):
        check(e2, max_memory_bytes=e2.memory_bytes - 1)
    check(e2, max_memory_bytes=e2.memory_bytes)
    assert parse_bytes("2GiB") == 2 * 2**30 and parse_bytes("1.5GB") == 1_500_000_000
