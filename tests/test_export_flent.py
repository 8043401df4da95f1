"""`aqmlab export flent`: the data file against Flent's format (its
resultset module, file format 4) and, when the `flent` package is
installed, loaded by Flent itself; the values against the run's own tables."""

import gzip
import json

import numpy as np
import pytest

import aqmlab
from aqmlab.export import FLENT_T0_UNIX, export_flent, flent_data
from tests.conftest import cli


@pytest.fixture(scope="module")
def run():
    return aqmlab.run({
        "name": "fifo two cubic", "duration": "4s", "warmup": "1s",
        "bottleneck": {"rate": "10Mbps", "buffer": "50ms"},
        "flows": [{"cc": "cubic", "rtt": "20ms", "count": 2}, {"cc": "probe", "rtt": "20ms"}],
    })  # fmt: skip


def test_layout_and_values_follow_the_run(run) -> None:
    d = flent_data(run)
    assert set(d) == {"metadata", "version", "x_values", "results", "raw_values"}
    assert d["version"] == 4
    m = d["metadata"]
    assert m["NAME"] == "tcp_nup" and m["TEST_PARAMETERS"] == {"upload_streams": "2"}
    assert m["STEP_SIZE"] == pytest.approx(0.1) and m["LENGTH"] == 4.0
    assert d["x_values"] == pytest.approx(np.arange(41) * 0.1)
    assert set(d["results"]) == {"TCP upload::1", "TCP upload::2", "TCP upload sum", "TCP upload avg",
                                 "TCP upload fairness", "Ping (ms) ICMP"}  # fmt: skip
    for series in d["results"].values():
        assert len(series) == len(d["x_values"])
    ts = run.timeseries
    for k, fid in ((1, 0), (2, 1)):
        want = ts[ts["flow"] == fid]["goodput_bps"].to_numpy()[1:] / 1e6
        got = np.array(d["results"][f"TCP upload::{k}"][1:], dtype=float)
        assert np.allclose(got, want)
    s = np.array(d["results"]["TCP upload sum"][1:], dtype=float)
    assert np.allclose(s, np.array(d["results"]["TCP upload::1"][1:], dtype=float)
                       + np.array(d["results"]["TCP upload::2"][1:], dtype=float))  # fmt: skip
    # Ping: raw values are every probe reply; each x value the mean of the replies in (x - 0.1, x].
    pr = run.probe_rtt
    raw = d["raw_values"]["Ping (ms) ICMP"]
    assert [x["val"] for x in raw] == pytest.approx((pr["rtt_ns"] / 1e6).tolist())
    assert raw[0]["t"] == pytest.approx(FLENT_T0_UNIX + pr["t_ns"].iloc[0] / 1e9)
    at2 = pr[(pr["t_ns"] > 1_900_000_000) & (pr["t_ns"] <= 2_000_000_000)]["rtt_ns"].mean() / 1e6
    assert d["results"]["Ping (ms) ICMP"][20] == pytest.approx(at2)


def test_cli_writes_the_same_gzip_for_the_same_run(run, tmp_path) -> None:
    run.save(tmp_path / "r", plots=False, report=False)
    p = cli("export", "flent", str(tmp_path / "r"))
    assert p.returncode == 0, p.stderr
    f = tmp_path / "r" / "fifo_two_cubic.flent.gz"
    assert f.read_bytes() == export_flent(run, tmp_path / "again.flent.gz").read_bytes()
    assert json.loads(gzip.decompress(f.read_bytes()))["metadata"]["TITLE"] == "fifo two cubic"
    bad = cli("export", "flent", str(tmp_path / "missing"))
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "no summary.json" in bad.stderr


def test_flent_loads_it(run, tmp_path) -> None:
    resultset = pytest.importorskip("flent.resultset")
    f = export_flent(run, tmp_path / "run.flent.gz")
    rs = resultset.load(str(f))
    assert rs.meta("NAME") == "tcp_nup"
    assert "TCP upload::1" in rs.series_names and "Ping (ms) ICMP" in rs.series_names
    assert len(rs.x_values) == 41
    # Flent's own time axis (t - T0) gives back the simulated reply times.
    ping = list(rs.raw_series("Ping (ms) ICMP"))
    assert len(ping) == len(run.probe_rtt)
    assert [t for t, _ in ping] == pytest.approx((run.probe_rtt["t_ns"] / 1e9).tolist(), abs=1e-6)
    assert [v for _, v in ping] == pytest.approx((run.probe_rtt["rtt_ns"] / 1e6).tolist())
