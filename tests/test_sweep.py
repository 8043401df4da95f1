"""Sweeps: grid expansion, content-hash cache, resume after interruption,
failures kept apart from cached successes, mean ± 95% CI."""

from __future__ import annotations

import json
import math
import os
import signal
import time
from pathlib import Path
from typing import Any

import aqmlab
import pandas as pd
import pytest
from aqmlab import sweep as sweep_fn
from aqmlab.sweep import Cache, SweepError, SweepSpec, stats_table, t_quantile_975
from conftest import EXAMPLES, cli, default_sigint, tiny

GRID = {"bottleneck.buffer": ["20ms", "60ms"], "flows[0].count": [1, 2]}


def spec(seeds: int = 2) -> SweepSpec:
    return SweepSpec(base=tiny(duration="1s", warmup="200ms"), grid=dict(GRID), seeds=list(range(1, seeds + 1)), name="t")


def _rows(df: pd.DataFrame) -> set[tuple[Any, ...]]:
    return set(zip(df["bottleneck.buffer"], df["flows[0].count"], df["seed"], strict=True))


def test_grid_expands_to_every_combination_and_seed() -> None:
    points = spec(seeds=3).points()
    assert len(points) == 2 * 2 * 3
    assert len({p.key for p in points}) == len(points)
    assert {(p.params["bottleneck.buffer"], p.params["flows[0].count"], p.seed) for p in points} == {
        (b, c, s) for b in GRID["bottleneck.buffer"] for c in GRID["flows[0].count"] for s in (1, 2, 3)
    }
    assert all(p.normalized["seed"] == p.seed for p in points)


def test_a_rebuilt_engine_does_not_read_the_old_builds_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Same scenario and version, another engine binary: another cache key."""
    from aqmlab import runner

    normalized = spec().points()[0].normalized
    before = runner.content_hash(normalized)
    assert runner.content_hash(normalized) == before  # stable within a build
    monkeypatch.setattr(runner, "engine_build_id", lambda: "another build")
    assert runner.content_hash(normalized) != before


def test_second_run_is_all_cache_hits(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = sweep_fn(spec(), jobs=1, cache_dir=cache)
    assert (first.ran, first.cached, first.failed) == (8, 0, 0)
    assert len(Cache(cache)) == 8
    second = sweep_fn(spec(), jobs=1, cache_dir=cache)
    assert (second.ran, second.cached) == (0, 8)  # zero simulations
    pd.testing.assert_frame_equal(first.runs, second.runs)
    # The key covers the seed: a new seed is a miss.
    third = sweep_fn(spec(seeds=3), jobs=1, cache_dir=cache)
    assert (third.ran, third.cached) == (4, 8)


def test_interrupted_sweep_resumes_and_loses_nothing(tmp_path: Path) -> None:
    reference = sweep_fn(spec(), jobs=1, cache_dir=tmp_path / "ref")
    cache = tmp_path / "cache"
    calls: list[str] = []

    def stop_after_three(done: int, total: int, point: Any, status: str) -> None:
        calls.append(status)
        if done == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sweep_fn(spec(), jobs=1, cache_dir=cache, progress=stop_after_three)
    assert calls == ["ran"] * 3 and len(Cache(cache)) == 3
    resumed = sweep_fn(spec(), jobs=1, cache_dir=cache)
    assert (resumed.cached, resumed.ran, resumed.failed) == (3, 5, 0)
    assert len(resumed.runs) == 8 and _rows(resumed.runs) == _rows(reference.runs)
    assert not resumed.runs.duplicated(["bottleneck.buffer", "flows[0].count", "seed"]).any()
    cols = [c for c in reference.runs.columns if c != "perf.wall_s"]
    pd.testing.assert_frame_equal(resumed.runs[cols], reference.runs[cols])


def test_interrupted_parallel_sweep_resumes(tmp_path: Path) -> None:
    cache = tmp_path / "cache"

    def stop_after_two(done: int, total: int, point: Any, status: str) -> None:
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sweep_fn(spec(), jobs=2, cache_dir=cache, progress=stop_after_two)
    k = len(Cache(cache))
    assert 2 <= k < 8
    resumed = sweep_fn(spec(), jobs=2, cache_dir=cache)
    assert resumed.cached == k and resumed.ran == 8 - k and len(resumed.runs) == 8
    assert not resumed.runs.duplicated(["bottleneck.buffer", "flows[0].count", "seed"]).any()


def test_ctrl_c_while_the_pool_starts_a_worker_is_an_interrupt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """loky turns a KeyboardInterrupt inside a worker's launch into an
    UnboundLocalError (seen in CI, tests/test_faults.py): the sweep must still
    end as interrupted, with the pool shut down and its workers killed."""
    import loky

    shutdowns: list[dict[str, Any]] = []

    class LaunchInterrupted:
        def submit(self, *args: Any) -> None:
            try:
                raise KeyboardInterrupt  # the Ctrl-C, inside loky's os.pipe()
            except KeyboardInterrupt:
                raise UnboundLocalError("cannot access local variable 'parent_r'")

        def shutdown(self, **kw: Any) -> None:
            shutdowns.append(kw)

    monkeypatch.setattr(loky, "get_reusable_executor", lambda **kw: LaunchInterrupted())
    with pytest.raises(KeyboardInterrupt):
        sweep_fn(spec(), jobs=2, cache_dir=tmp_path / "cache")
    assert shutdowns == [{"wait": False, "kill_workers": True}]


def test_failed_run_is_reported_and_never_removes_cached_successes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import aqmlab.runner as sw  # where the runs happen (run_points calls sw._simulate)
    from aqmlab.sweep import SweepFailed

    cache = tmp_path / "cache"
    sweep_fn(spec(seeds=1), jobs=1, cache_dir=cache)
    assert len(Cache(cache)) == 4
    real = sw._simulate

    def flaky(text: str) -> tuple[str, Any]:
        if json.loads(text)["seed"] == 2:
            return ("failed", "RuntimeError: engine panic: injected")
        return real(text)

    monkeypatch.setattr(sw, "_simulate", flaky)
    # Failures are impossible to miss: the API raises, with what did run.
    with pytest.raises(SweepFailed, match="4 of 8 runs failed") as info:
        sweep_fn(spec(seeds=2), jobs=1, cache_dir=cache, out=tmp_path / "o")
    assert info.value.result.failed == 4 and (tmp_path / "o" / "runs.parquet").exists()
    res = sweep_fn(spec(seeds=2), jobs=1, cache_dir=cache, allow_failures=True)
    assert (res.cached, res.ran, res.failed) == (4, 0, 4)
    assert len(Cache(cache)) == 4  # successes kept, failures not cached
    failed = res.runs[res.runs["status"] == "failed"]
    assert len(failed) == 4 and (failed["error"] == "RuntimeError: engine panic: injected").all()
    assert res.runs.loc[res.runs["status"] == "ok", "fairness.jain"].notna().all()
    monkeypatch.setattr(sw, "_simulate", real)
    again = sweep_fn(spec(seeds=2), jobs=1, cache_dir=cache)
    assert (again.cached, again.ran, again.failed) == (4, 4, 0)


def test_stats_are_mean_and_student_t_interval() -> None:
    runs = pd.DataFrame({"p": ["a", "a", "a", "b"], "seed": [1, 2, 3, 1], "status": "ok", "m": [1.0, 2.0, 3.0, 5.0]})
    st = stats_table(runs, ["p"]).set_index("p")
    a = st.loc["a"]
    assert a["n"] == 3 and a["mean"] == 2.0 and a["std"] == 1.0
    assert a["ci95"] == pytest.approx(4.302652730 / math.sqrt(3))
    assert a["ci95_lo"] == pytest.approx(2.0 - a["ci95"]) and a["ci95_hi"] == pytest.approx(2.0 + a["ci95"])
    b = st.loc["b"]
    assert b["n"] == 1 and b["mean"] == 5.0 and math.isnan(b["ci95"])


def test_no_interval_from_copies_and_fractions_stay_in_0_1() -> None:
    # Three identical replications (one seed repeated): n = 3, but 1 distinct.
    runs = pd.DataFrame({"p": ["a"] * 3, "seed": [1, 1, 1], "status": "ok", "m": [2.0, 2.0, 2.0]})
    a = stats_table(runs, ["p"]).set_index("p").loc["a"]
    assert a["n"] == 3 and a["n_distinct"] == 1 and math.isnan(a["ci95"])
    # Jain's index near 1: a plain t-interval would cross 1 (mean 0.99,
    # sd 0.01, n 3: upper end 1.015); the interval stays inside (0, 1).
    runs = pd.DataFrame({"p": ["a"] * 3, "seed": [1, 2, 3], "status": "ok", "fairness.jain": [0.98, 0.99, 1.0]})
    j = stats_table(runs, ["p"]).set_index("p").loc["a"]
    assert 0.0 < j["ci95_lo"] < 0.99 < j["ci95_hi"] < 1.0


def _t_cdf_upper(t: float, df: int) -> float:
    """P(0 < T < t) by Simpson's rule on the Student-t density."""
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    n = 20000
    h = t / n
    f = [c * (1 + (i * h) ** 2 / df) ** (-(df + 1) / 2) for i in range(n + 1)]
    return h / 3 * (f[0] + f[-1] + 4 * sum(f[1:-1:2]) + 2 * sum(f[2:-1:2]))


@pytest.mark.parametrize("df", [1, 2, 3, 5, 10, 29, 30, 31, 45, 100, 1000])
def test_t_quantile_is_the_975_quantile(df: int) -> None:
    assert _t_cdf_upper(t_quantile_975(df), df) == pytest.approx(0.475, abs=2e-6)


def test_sweep_file_errors_are_one_line_exit_2(tmp_path: Path) -> None:
    base = tmp_path / "base.toml"
    base.write_text((EXAMPLES / "dumbbell.toml").read_text())
    cases = [
        ('[grid]\n"bottleneck.rtae" = ["1Mbps"]', "grid 'bottleneck.rtae' = 1Mbps: bottleneck: unknown key 'rtae' (did you mean 'rate'?"),
        ('[grid]\n"botleneck.aqm" = ["fifo"]', "grid 'botleneck.aqm' = fifo: unknown key 'botleneck' (did you mean 'bottleneck'?"),
        ('[grid]\n"bottleneck.aqm" = ["fifo", "codle"]', "grid 'bottleneck.aqm' = codle: bottleneck.aqm: unknown AQM 'codle'"),
        ('[grid]\n"flows[5].count" = [1]', "grid 'flows[5].count' = 1: 'flows[5].count': flows has 2 entries, so [5] is out of range"),
        ('[grid]\n"bottleneck.aqm" = "fifo"', "grid.'bottleneck.aqm': must be a non-empty list of values"),
        ("seed = 3", "sweep: unknown key 'seed' (did you mean 'seeds'?"),
    ]
    for body, expected in cases:
        f = tmp_path / "s.toml"
        f.write_text(f'[sweep]\nbase = "base.toml"\n{body}\n')
        proc = cli("sweep", str(f), "--cache", str(tmp_path / "c"), "--out", str(tmp_path / "o"), cwd=tmp_path)
        assert proc.returncode == 2, (body, proc.stderr)
        assert "Traceback" not in proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("aqmlab: error: " + expected), (body, lines)
        assert not (tmp_path / "c").exists() and not (tmp_path / "o").exists()


def test_cli_sweep_writes_tables_and_hits_cache(tmp_path: Path) -> None:
    f = tmp_path / "s.toml"
    f.write_text(
        '[sweep]\nname = "k"\nseeds = 2\n[base]\nduration = "1s"\n[base.bottleneck]\nrate = "10Mbps"\n'
        '[[base.flows]]\ncc = "reno"\nrtt = "20ms"\ncount = 2\nstart_jitter = "20ms"\n'
        '[grid]\n"bottleneck.buffer" = ["10ms", "50ms"]\n'
    )
    args = ("sweep", str(f), "--jobs", "2", "--cache", str(tmp_path / "c"), "--out", str(tmp_path / "o"))
    first = cli(*args, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "4 runs: 0 cached, 4 simulated, 0 failed" in first.stderr
    second = cli(*args, cwd=tmp_path)
    assert "4 runs: 4 cached, 0 simulated, 0 failed" in second.stderr
    runs = pd.read_parquet(tmp_path / "o" / "runs.parquet")
    assert len(runs) == 4 and {"bottleneck.buffer", "seed", "fairness.jain", "queues.bottleneck.utilization"} <= set(runs.columns)
    stats = pd.read_parquet(tmp_path / "o" / "stats.parquet")
    assert set(stats["n"]) <= {2} and {"mean", "ci95", "ci95_lo", "ci95_hi", "metric"} <= set(stats.columns)
    flows = pd.read_parquet(tmp_path / "o" / "flows.parquet")
    assert len(flows) == 4 * 2
    meta = json.loads((tmp_path / "o" / "sweep.json").read_text())
    assert (meta["total"], meta["cached"], meta["ran"]) == (4, 4, 0)
    assert "± " in second.stdout  # mean ± 95% CI in the terminal table


def test_sweep_from_an_unguarded_script(tmp_path: Path) -> None:
    """The README's example as a plain script, without an
    ``if __name__ == "__main__":`` guard, in parallel: every run succeeds and
    the script's top level runs once (workers do not re-import it)."""
    import subprocess
    import sys

    script = tmp_path / "plain.py"
    script.write_text(
        "import aqmlab\n"
        "print('top level ran', flush=True)\n"
        f"base = {tiny(duration='1s', warmup='200ms')!r}\n"
        "s = aqmlab.sweep(base, {'bottleneck.buffer': ['20ms', '60ms']}, seeds=2, jobs=2, cache_dir=None)\n"
        "print('runs', s.ran, 'failed', s.failed)\n"
    )
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("top level ran") == 1
    assert "runs 4 failed 0" in proc.stdout


def test_cli_sweep_interrupted_by_ctrl_c_resumes(tmp_path: Path) -> None:
    """SIGINT (Ctrl-C) mid-sweep: exit 130, finished runs cached, the re-run
    simulates only the rest. Deterministic: the third point simulates 10,000
    s (minutes of wall time), so once the two short points are in the cache
    the interrupt lands while it runs, however loaded the machine is."""
    import subprocess
    import sys

    def sweep_file(name: str, last: str) -> Path:
        f = tmp_path / name
        f.write_text(
            f'[sweep]\nname = "slow"\nseeds = 1\n[grid]\nduration = ["1s", "2s", "{last}"]\n'
            '[base]\nduration = "1s"\n[base.bottleneck]\nrate = "1Gbps"\n'
            '[[base.flows]]\ncc = "cubic"\nrtt = "10ms"\ncount = 4\nstart_jitter = "10ms"\n'
        )
        return f

    cache = tmp_path / "c"
    common = ["--jobs", "1", "--cache", str(cache), "--out", str(tmp_path / "o")]
    proc = subprocess.Popen([sys.executable, "-m", "aqmlab", "sweep", str(sweep_file("long.toml", "10000s")), *common],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_sigint)  # fmt: skip
    deadline = time.monotonic() + 300
    while len(Cache(cache)) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)  # polling the cache, the event we wait for; not a timing assumption
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert len(Cache(cache)) == 2
    again = cli("sweep", str(sweep_file("short.toml", "3s")), *common, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "3 runs: 2 cached, 1 simulated, 0 failed" in again.stderr
    runs = pd.read_parquet(tmp_path / "o" / "runs.parquet")
    assert sorted(runs["duration"]) == ["1s", "2s", "3s"]


def test_api_sweep_with_a_scenario_and_grid(tmp_path: Path) -> None:
    res = aqmlab.sweep(tiny(duration="1s"), {"bottleneck.aqm": ["fifo", "step"]}, seeds=2, jobs=1,
                       cache_dir=None, out=tmp_path / "o")  # fmt: skip
    assert res.total == 4 and res.ran == 4
    assert set(res.runs["bottleneck.aqm"]) == {"fifo", "step"}
    assert (tmp_path / "o" / "stats.parquet").exists()


def test_dask_backend(tmp_path: Path) -> None:
    try:
        import dask.distributed  # noqa: F401
    except ImportError:
        with pytest.raises(SweepError, match=r"pip install 'aqmlab\[dask\]'"):
            sweep_fn(spec(seeds=1), backend="dask", cache_dir=tmp_path / "c")
        proc = cli("sweep", str(EXAMPLES / "sweep.toml"), "--backend", "dask", "--cache", str(tmp_path / "c"), cwd=tmp_path)
        assert proc.returncode == 2 and "aqmlab: error: backend 'dask' needs the optional dependency" in proc.stderr
        return
    res = sweep_fn(spec(seeds=1), backend="dask", jobs=2, cache_dir=tmp_path / "c")
    assert res.ran == 4 and res.failed == 0


def test_sweep_result_repr_is_short_whatever_the_size(tmp_path: Path) -> None:
    res = sweep_fn(spec(seeds=2), jobs=1, cache_dir=tmp_path / "c")
    text = repr(res)
    assert len(text) < 300 and "8 runs" in text and "bottleneck.buffer (2)" in text
    assert "<table" in res._repr_html_()


def test_sweep_report_and_plot(tmp_path: Path) -> None:
    """`aqmlab report SWEEPDIR`: metric against the swept parameters with
    intervals over seeds, a heatmap for the 2-D grid, and the tables; and
    SweepResult.plot draws the same numbers as .stats."""
    res = sweep_fn(spec(seeds=2), jobs=1, cache_dir=tmp_path / "c", out=tmp_path / "s")
    fig = res.plot(x="bottleneck.buffer", y="queues.bottleneck.sojourn_ms.p99", hue="flows[0].count")
    ax = fig.axes[0]
    assert len(ax.lines) >= 2 and [t.get_text() for t in ax.get_xticklabels()] == ["20ms", "60ms"]
    want = res.stats[(res.stats["metric"] == "queues.bottleneck.sojourn_ms.p99") & (res.stats["flows[0].count"] == 1)]
    drawn = list(ax.lines[0].get_ydata())
    assert drawn == pytest.approx(list(want.set_index("bottleneck.buffer").loc[["20ms", "60ms"], "mean"]))
    with pytest.raises(ValueError, match="not in this sweep"):
        res.plot(x="bottleneck.buffer", y="no.such.metric")
    proc = cli("report", str(tmp_path / "s"))
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "s" / "sweep_report.html").read_text()
    assert "queues.bottleneck.sojourn_ms.p99" in page and "ci95_lo" in page and "data:image/png" in page
    assert list((tmp_path / "s" / "plots").glob("*heatmap.png"))


def test_bounded_interval_holds_its_mean_at_the_bound():
    # Jain's index of exactly 1 in two seeds of three: the logit interval is
    # clipped 1e-6 inside (0, 1); the reported interval still holds the mean.
    import numpy as np

    from aqmlab.tables import _interval95

    x = np.array([1.0, 0.99, 1.0])
    lo, hi = _interval95(x, bounded=True)
    assert lo <= x.mean() <= hi <= 1.0
