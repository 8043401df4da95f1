"""aqmlab compare: one scenario under two AQMs, side by side."""

from __future__ import annotations

import json
from pathlib import Path

import aqmlab
import pytest
from conftest import cli, tiny


def test_compare_two_aqms_table_plots_and_page(tmp_path: Path) -> None:
    import tomli_w

    f = tmp_path / "s.toml"
    f.write_text(tomli_w.dumps(tiny(duration="3s")))
    for aqm in ("fifo", "codel"):
        assert cli("run", str(f), "--set", f"bottleneck.aqm={aqm}", "--out", str(tmp_path / aqm), "-q").returncode == 0
    proc = cli("compare", str(tmp_path / "fifo"), str(tmp_path / "codel"), "--out", str(tmp_path / "cmp"), "--json")
    assert proc.returncode == 0, proc.stderr
    table = json.loads(proc.stdout)
    # Written as read: no escaped slash or Δ.
    assert '"total goodput (Mbit/s)"' in proc.stdout and '"Δ codel"' in proc.stdout
    fifo = aqmlab.Result.load(tmp_path / "fifo")
    codel = aqmlab.Result.load(tmp_path / "codel")
    p99 = table["queue delay p99 (ms)"]
    # The table carries each run's own summary figures and their difference.
    assert p99["fifo"] == pytest.approx(fifo.queue()["sojourn_ms"]["p99"])
    assert p99["codel"] == pytest.approx(codel.queue()["sojourn_ms"]["p99"])
    assert p99["Δ codel"] == pytest.approx(p99["codel"] - p99["fifo"])
    # CoDel (5 ms target) keeps the queue far below a 30 ms FIFO buffer.
    assert p99["codel"] < p99["fifo"]
    for name in ("compare.csv", "compare.html", "plots/goodput.png", "plots/sojourn_cdf.png", "plots/rtt_cdf.png"):
        assert (tmp_path / "cmp" / name).stat().st_size > 0
    one = cli("compare", str(tmp_path / "fifo"))
    assert one.returncode == 2 and "at least two runs" in one.stderr
