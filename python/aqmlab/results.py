"""Running one scenario, and what a run returns.

``run(scenario) -> Result``. A :class:`Result` holds the summary document
(the ``summary.json`` contract, docs/results.md) and the engine's tables as
pandas DataFrames; ``result.save(dir)`` writes all of it, plus plots and a
self-contained HTML report.

Everything here reshapes what the engine computed (unit conversions,
per-interval differences of cumulative counters); no statistic of the
simulation itself is recomputed in Python.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from aqmlab import _engine
from aqmlab.scenario import (
    Scenario,
    ScenarioLike,
    atomic_write_bytes,
    atomic_write_text,
    dump_toml,
    to_dict,
)

__all__ = ["Result", "run", "SUMMARY_SCHEMA", "TABLES", "summary_json", "build_summary"]

#: Version of the summary.json layout; bumped on any incompatible change.
SUMMARY_SCHEMA = 1

#: The engine's tables, in the order they are written.
TABLES = ("flows", "queues", "sojourn_hist", "flow_ts", "queue_ts", "probes", "sojourn_samples")

Progress = Callable[[float], object]


def run(scenario: ScenarioLike, *, seed: int | None = None, progress: Progress | None = None) -> Result:
    """Validate and run a scenario; return its :class:`Result`.

    ``scenario`` is a :class:`~aqmlab.scenario.Scenario`, a TOML/JSON tree
    (dict) or a path to a TOML file. ``seed`` overrides the scenario's seed.
    ``progress(sim_seconds_done)`` is called now and then; raising from it
    aborts the run. Raises :class:`~aqmlab.ScenarioError` for an invalid
    scenario and ``RuntimeError`` if the engine fails.
    """
    tree = to_dict(scenario)
    if seed is not None:
        tree["seed"] = seed
    normalized_text = _engine.validate(json.dumps(tree))
    raw = _engine.run(normalized_text, progress)
    return Result._from_engine(raw, json.loads(normalized_text))


def build_summary(engine_summary: dict[str, Any], normalized: dict[str, Any]) -> dict[str, Any]:
    """The summary contract: the engine's summary plus ``version``,
    ``schema`` and the normalised ``scenario``."""
    s = dict(engine_summary)
    s["version"] = _engine.__version__
    s["schema"] = SUMMARY_SCHEMA
    s["scenario"] = normalized
    return s


def summary_json(summary: dict[str, Any]) -> str:
    """Canonical text of a summary: sorted keys, two-space indent. Two runs of
    the same scenario and seed give identical text except ``perf.wall_s``."""
    return json.dumps(summary, sort_keys=True, indent=2, allow_nan=False) + "\n"


def _column(c: Any) -> Any:
    if isinstance(c, tuple):
        dtype, data = c
        return np.frombuffer(data, dtype=np.dtype(dtype)).copy()
    return list(c)


def _frame(cols: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame({k: _column(v) for k, v in cols.items()})


def _nullable(s: pd.Series) -> pd.Series:
    """Engine sentinel -1 ("none") to a nullable integer column."""
    out = s.astype("Int64")
    return out.mask(out < 0)


def _per_interval_diff(df: pd.DataFrame, keys: list[str], col: str) -> pd.Series:
    return df.groupby(keys, sort=False)[col].diff()


def _enrich(tables: dict[str, pd.DataFrame], summary: dict[str, Any]) -> dict[str, pd.DataFrame]:
    """Add convenience columns (seconds, milliseconds, per-interval rates)."""
    t = dict(tables)
    f = t.get("flows")
    if f is not None and "base_rtt_ms" not in f:
        f = f.copy()
        f["base_rtt_ms"] = f["base_rtt_ns"] / 1e6
        f["srtt_ms"] = f["srtt_ns"] / 1e6
        f["size_bytes"] = _nullable(f["size_bytes"])
        f["fct_ns"] = _nullable(f["fct_ns"])
        f["fct_s"] = f["fct_ns"].astype("Float64") / 1e9
        f["fct_s"] = f["fct_s"].astype(float)
        t["flows"] = f
    q = t.get("queues")
    if q is not None and "utilization" not in q:
        q = q.copy()
        by_name = {x["name"]: x for x in summary.get("queues", [])}
        util, drop_rate, mark_rate = [], [], []
        for name, sub in zip(q["queue"], q["subqueue"], strict=True):
            qs = by_name.get(name, {})
            stats = qs.get("subqueues", {}).get(sub, qs) if sub != "all" else qs
            util.append(qs.get("utilization", np.nan))
            drop_rate.append(stats.get("drop_rate", np.nan))
            mark_rate.append(stats.get("mark_rate", np.nan))
        q["utilization"] = np.asarray(util, dtype=float)
        q["drop_rate"] = np.asarray(drop_rate, dtype=float)
        q["mark_rate"] = np.asarray(mark_rate, dtype=float)
        for p in ("mean", "p50", "p90", "p99"):
            q[f"sojourn_{p}_ms"] = q[f"sojourn_{p}_ns"] / 1e6
        t["queues"] = q
    ts = t.get("flow_ts")
    if ts is not None and "t_s" not in ts:
        ts = ts.copy()
        ts["t_s"] = ts["t_ns"] / 1e9
        dt = _per_interval_diff(ts, ["flow"], "t_ns") / 1e9
        ts["goodput_bps"] = _per_interval_diff(ts, ["flow"], "delivered_bytes") * 8 / dt
        ts["srtt_ms"] = ts["srtt_ns"] / 1e6
        if f is not None and len(f):
            meta = f.set_index("id")[["label", "cc"]]
            ts["label"] = meta["label"].reindex(ts["flow"].to_numpy()).to_numpy()
            ts["cc"] = meta["cc"].reindex(ts["flow"].to_numpy()).to_numpy()
        t["flow_ts"] = ts
    qt = t.get("queue_ts")
    if qt is not None and "t_s" not in qt:
        qt = qt.copy()
        qt["t_s"] = qt["t_ns"] / 1e9
        keys = ["queue", "subqueue"]
        d_arr = _per_interval_diff(qt, keys, "arrived_pkts")
        d_dep = _per_interval_diff(qt, keys, "departed_pkts")
        with np.errstate(divide="ignore", invalid="ignore"):
            qt["drop_prob"] = (_per_interval_diff(qt, keys, "dropped_pkts") / d_arr.where(d_arr > 0)).astype(float)
            qt["mark_prob"] = (_per_interval_diff(qt, keys, "marked_pkts") / d_dep.where(d_dep > 0)).astype(float)
        t["queue_ts"] = qt
    pr = t.get("probes")
    if pr is not None and "t_s" not in pr:
        pr = pr.copy()
        pr["t_s"] = pr["t_ns"] / 1e9
        t["probes"] = pr
    sh = t.get("sojourn_hist")
    if sh is not None and "hi_ms" not in sh:
        sh = sh.copy()
        sh["lo_ms"] = sh["lo_ns"] / 1e6
        sh["hi_ms"] = sh["hi_ns"] / 1e6
        t["sojourn_hist"] = sh
    return t


class Result:
    """One run: ``summary`` (dict, the summary.json contract) and tables.

    DataFrames: ``flows`` (one row per flow), ``queues`` (one row per queue
    and sub-queue), ``timeseries`` (per flow per sampling interval),
    ``queue_timeseries``, ``probes`` (AQM/CC internal values over time),
    ``sojourn_hist`` and ``sojourn_samples``. Columns: docs/results.md.
    """

    def __init__(self, summary: dict[str, Any], tables: dict[str, pd.DataFrame]):
        self.summary = summary
        self.tables = _enrich(tables, summary)

    @classmethod
    def _from_engine(cls, raw: dict[str, Any], normalized: dict[str, Any]) -> Result:
        engine_summary = json.loads(raw["summary"])
        tables = {name: _frame(cols) for name, cols in raw["tables"].items()}
        return cls(build_summary(engine_summary, normalized), tables)

    # -- summary views -------------------------------------------------------

    @property
    def scenario(self) -> Scenario:
        """The normalised scenario that ran (every default filled in)."""
        return Scenario.from_dict(self.summary["scenario"])

    @property
    def perf(self) -> dict[str, Any]:
        return self.summary["perf"]

    @property
    def fairness(self) -> dict[str, Any]:
        return self.summary["fairness"]

    def queue(self, name: str = "bottleneck") -> dict[str, Any]:
        """The summary entry of queue ``name``."""
        for q in self.summary["queues"]:
            if q["name"] == name:
                return q
        names = ", ".join(q["name"] for q in self.summary["queues"])
        raise KeyError(f"no queue '{name}' (queues: {names})")

    # -- tables ----------------------------------------------------------------

    def _table(self, name: str) -> pd.DataFrame:
        return self.tables.get(name, pd.DataFrame())

    @property
    def flows(self) -> pd.DataFrame:
        return self._table("flows")

    @property
    def queues(self) -> pd.DataFrame:
        return self._table("queues")

    @property
    def timeseries(self) -> pd.DataFrame:
        """Per-flow time series: goodput, cwnd, srtt, ... per interval."""
        return self._table("flow_ts")

    @property
    def queue_timeseries(self) -> pd.DataFrame:
        return self._table("queue_ts")

    @property
    def probes(self) -> pd.DataFrame:
        return self._table("probes")

    @property
    def sojourn_hist(self) -> pd.DataFrame:
        return self._table("sojourn_hist")

    @property
    def sojourn_samples(self) -> pd.DataFrame:
        return self._table("sojourn_samples")

    @property
    def plot(self) -> Any:
        """Plots of this run: ``result.plot.goodput()`` etc. (matplotlib Figures)."""
        from aqmlab.plots import PlotAccessor

        return PlotAccessor(self)

    # -- files -----------------------------------------------------------------

    def summary_json(self) -> str:
        return summary_json(self.summary)

    def to_parquet(self, out_dir: str | os.PathLike[str]) -> list[Path]:
        """Write every table as ``<table>.parquet`` in ``out_dir``."""
        out = Path(out_dir)
        written = []
        for name in TABLES:
            if name in self.tables:
                path = out / f"{name}.parquet"
                buf = _parquet_bytes(self.tables[name])
                written.append(atomic_write_bytes(path, buf))
        return written

    def save(self, out_dir: str | os.PathLike[str], *, plots: bool = True, report: bool = True) -> dict[str, Any]:
        """Write ``summary.json``, ``scenario.toml``, the tables as Parquet,
        PNG plots in ``plots/`` and ``report.html``. Each file is written to a
        temporary name and renamed, so an earlier result is only ever
        replaced by a complete new file. Returns the paths written."""
        out = Path(out_dir)
        files: dict[str, Any] = {}
        files["summary"] = atomic_write_text(out / "summary.json", self.summary_json())
        files["scenario"] = atomic_write_text(out / "scenario.toml", dump_toml(self.summary["scenario"]))
        files["tables"] = self.to_parquet(out)
        figures: dict[str, Path] = {}
        if plots or report:
            figures = self.plot.save_all(out / "plots")
            files["plots"] = list(figures.values())
        if report:
            from aqmlab.report import write_report

            files["report"] = write_report(self, out / "report.html", figures)
        return files

    @classmethod
    def load(cls, out_dir: str | os.PathLike[str]) -> Result:
        """Read a result written by :meth:`save`."""
        out = Path(out_dir)
        summary = json.loads((out / "summary.json").read_text())
        tables = {}
        for name in TABLES:
            p = out / f"{name}.parquet"
            if p.exists():
                tables[name] = pd.read_parquet(p)
        return cls(summary, tables)

    def __repr__(self) -> str:
        name = self.summary.get("scenario", {}).get("name") or "scenario"
        return (
            f"<aqmlab.Result {name!r}: {len(self.summary.get('flows', []))} flows, "
            f"{len(self.summary.get('queues', []))} queues, {self.summary.get('duration_s')} s>"
        )


def _parquet_bytes(df: pd.DataFrame) -> bytes:
    import io

    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return buf.getvalue()
