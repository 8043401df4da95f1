"""Running one scenario, and what a run returns.

``run(scenario) -> Result``. A :class:`Result` holds the summary document
(the ``summary.json`` contract, docs/results.md) and the engine's tables,
offered as pandas DataFrames; ``result.save(dir)`` writes all of it, plus
plots and a self-contained HTML report.

Everything here reshapes what the engine computed (unit conversions,
per-interval differences of cumulative counters); no statistic of the
simulation itself is recomputed in Python.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aqmlab import _engine
from aqmlab.scenario import (
    Scenario,
    ScenarioLike,
    atomic_write_bytes,
    atomic_write_text,
    dump_toml,
    to_dict,
)

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    import pyarrow as pa

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


def _engine_table(cols: dict[str, Any]) -> pa.Table:
    """An engine table (numeric columns as little-endian bytes, text columns
    as lists of str) as an Arrow table, without copying the numbers."""
    import numpy as np  # already loaded by pyarrow itself
    import pyarrow as pa

    arrays = {}
    for name, c in cols.items():
        if isinstance(c, tuple):
            dtype, data = c
            arrays[name] = pa.array(np.frombuffer(data, dtype=np.dtype(dtype)))
        else:  # large_string: what pandas wrote before, so the files keep their types
            arrays[name] = pa.array(c, type=pa.large_string())
    return pa.table(arrays)


# The enrichment below uses numpy, not pyarrow.compute (whose import costs
# ~0.1 s) and not pandas (~0.4 s): the run path writes Parquet without either.


def _nullable_meta(nullable: list[str]) -> dict[bytes, bytes]:
    """Schema metadata in pandas' documented Parquet format declaring
    ``nullable`` integer columns as pandas ``Int64``, so ``pd.read_parquet``
    and :class:`Result` give ``Int64`` (not float64) for them, as when pandas
    wrote the files. Other columns take pandas' defaults."""
    cols = [{"name": c, "field_name": c, "pandas_type": "int64", "numpy_type": "Int64", "metadata": None} for c in nullable]
    doc = {"index_columns": [], "column_indexes": [], "columns": cols}
    return {b"pandas": json.dumps(doc).encode()}


def _values(t: pa.Table, col: str) -> np.ndarray:
    """A numeric column as float64 (nulls as NaN)."""
    import numpy as np

    return np.asarray(t.column(col).to_numpy(), dtype=np.float64)


def _per_interval_diff(keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values[i]`` minus the value of the previous row with the same key;
    NaN for each key's first row (pandas' ``groupby(keys).diff()``)."""
    import numpy as np

    order = np.argsort(keys, kind="stable")
    v, k = values[order], keys[order]
    d = np.full(len(v), np.nan)
    if len(v) > 1:
        d[1:] = np.where(k[1:] == k[:-1], v[1:] - v[:-1], np.nan)
    out = np.empty_like(d)
    out[order] = d
    return out


def _group_codes(*cols: list[Any]) -> np.ndarray:
    """One integer per distinct combination of the key columns' values."""
    import numpy as np

    codes: dict[tuple[Any, ...], int] = {}
    return np.fromiter((codes.setdefault(k, len(codes)) for k in zip(*cols, strict=True)), dtype=np.int64, count=len(cols[0]))


def _with(t: pa.Table, new: dict[str, Any], metadata: dict[bytes, bytes] | None = None) -> pa.Table:
    """``t`` with columns added or replaced in place (same order as before)."""
    import pyarrow as pa

    cols = dict(zip(t.column_names, t.columns, strict=True))
    cols.update({k: v if isinstance(v, (pa.Array, pa.ChunkedArray)) else pa.array(v) for k, v in new.items()})
    return pa.table(cols, metadata=metadata if metadata is not None else t.schema.metadata)


def _enrich(tables: dict[str, pa.Table], summary: dict[str, Any]) -> dict[str, pa.Table]:
    """Add convenience columns (seconds, milliseconds, per-interval rates)."""
    import numpy as np
    import pyarrow as pa

    nan = float("nan")
    t = dict(tables)
    f = t.get("flows")
    if f is not None and "base_rtt_ms" not in f.column_names:
        new: dict[str, Any] = {"base_rtt_ms": _values(f, "base_rtt_ns") / 1e6, "srtt_ms": _values(f, "srtt_ns") / 1e6}
        for col in ("size_bytes", "fct_ns"):  # engine sentinel -1 means "none": null
            raw = f.column(col).to_numpy()
            new[col] = pa.array(raw, mask=raw < 0)
        new["fct_s"] = np.where(new["fct_ns"].is_null().to_numpy(zero_copy_only=False), nan, _values(f, "fct_ns") / 1e9)
        f = _with(f, new, _nullable_meta(["size_bytes", "fct_ns"]))
        t["flows"] = f
    q = t.get("queues")
    if q is not None and "utilization" not in q.column_names:
        by_name = {x["name"]: x for x in summary.get("queues", [])}
        util, drop_rate, mark_rate = [], [], []
        for name, sub in zip(q.column("queue").to_pylist(), q.column("subqueue").to_pylist(), strict=True):
            qs = by_name.get(name, {})
            stats = qs.get("subqueues", {}).get(sub, qs) if sub != "all" else qs
            util.append(qs.get("utilization", nan))
            drop_rate.append(stats.get("drop_rate", nan))
            mark_rate.append(stats.get("mark_rate", nan))
        new = {"utilization": np.asarray(util, dtype=float), "drop_rate": np.asarray(drop_rate, dtype=float),
               "mark_rate": np.asarray(mark_rate, dtype=float)}  # fmt: skip
        for p in ("mean", "p50", "p90", "p99"):
            new[f"sojourn_{p}_ms"] = _values(q, f"sojourn_{p}_ns") / 1e6
        t["queues"] = _with(q, new)
    ts = t.get("flow_ts")
    if ts is not None and "t_s" not in ts.column_names:
        flow = ts.column("flow").to_numpy()
        t_ns = _values(ts, "t_ns")
        dt = _per_interval_diff(flow, t_ns) / 1e9
        new = {"t_s": t_ns / 1e9, "goodput_bps": _per_interval_diff(flow, _values(ts, "delivered_bytes")) * 8 / dt,
               "srtt_ms": _values(ts, "srtt_ns") / 1e6}  # fmt: skip
        if f is not None and f.num_rows:
            row_of = {fid: i for i, fid in enumerate(f.column("id").to_pylist())}
            rows = [row_of.get(fid) for fid in flow.tolist()]
            for col in ("label", "cc"):  # the flow's, by id; null for an unknown id
                values = f.column(col).to_pylist()
                new[col] = pa.array([None if i is None else values[i] for i in rows], type=pa.large_string())
        t["flow_ts"] = _with(ts, new)
    qt = t.get("queue_ts")
    if qt is not None and "t_s" not in qt.column_names:
        keys = _group_codes(qt.column("queue").to_pylist(), qt.column("subqueue").to_pylist())
        d = {c: _per_interval_diff(keys, _values(qt, c)) for c in ("arrived_pkts", "departed_pkts", "dropped_pkts", "marked_pkts")}
        with np.errstate(divide="ignore", invalid="ignore"):  # no arrivals / departures in an interval: NaN
            new = {"t_s": _values(qt, "t_ns") / 1e9,
                   "drop_prob": d["dropped_pkts"] / np.where(d["arrived_pkts"] > 0, d["arrived_pkts"], nan),
                   "mark_prob": d["marked_pkts"] / np.where(d["departed_pkts"] > 0, d["departed_pkts"], nan)}  # fmt: skip
        t["queue_ts"] = _with(qt, new)
    pr = t.get("probes")
    if pr is not None and "t_s" not in pr.column_names:
        t["probes"] = _with(pr, {"t_s": _values(pr, "t_ns") / 1e9})
    sh = t.get("sojourn_hist")
    if sh is not None and "hi_ms" not in sh.column_names:
        t["sojourn_hist"] = _with(sh, {"lo_ms": _values(sh, "lo_ns") / 1e6, "hi_ms": _values(sh, "hi_ns") / 1e6})
    return t


class Result:
    """One run: ``summary`` (dict, the summary.json contract) and tables.

    DataFrames: ``flows`` (one row per flow), ``queues`` (one row per queue
    and sub-queue), ``timeseries`` (per flow per sampling interval),
    ``queue_timeseries``, ``probes`` (AQM/CC internal values over time),
    ``sojourn_hist`` and ``sojourn_samples``. Columns: docs/results.md.

    The tables are held as Arrow tables; each DataFrame (and pandas itself)
    is built on first access, so running and saving never import pandas.
    """

    def __init__(self, summary: dict[str, Any], tables: Mapping[str, pa.Table | pd.DataFrame]):
        import pyarrow as pa

        self.summary = summary
        arrow = {name: t if isinstance(t, pa.Table) else pa.Table.from_pandas(t, preserve_index=False)
                 for name, t in tables.items()}  # fmt: skip
        self._arrow = _enrich(arrow, summary)
        self._frames: dict[str, pd.DataFrame] = {}

    @classmethod
    def _from_engine(cls, raw: dict[str, Any], normalized: dict[str, Any]) -> Result:
        engine_summary = json.loads(raw["summary"])
        tables = {name: _engine_table(cols) for name, cols in raw["tables"].items()}
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
        df = self._frames.get(name)
        if df is None:
            t = self._arrow.get(name)
            if t is None:
                import pandas as pd

                return pd.DataFrame()
            df = self._frames[name] = t.to_pandas()
        return df

    @property
    def tables(self) -> Mapping[str, pd.DataFrame]:
        """Every table the run has, by name (see :data:`TABLES`), as DataFrames."""
        return _Frames(self)

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
            if name in self._arrow:
                written.append(atomic_write_bytes(out / f"{name}.parquet", _arrow_parquet_bytes(self._arrow[name])))
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
        import pyarrow.parquet as pq

        out = Path(out_dir)
        summary = json.loads((out / "summary.json").read_text())
        tables = {}
        for name in TABLES:
            p = out / f"{name}.parquet"
            if p.exists():
                tables[name] = pq.read_table(p)
        return cls(summary, tables)

    def __repr__(self) -> str:
        name = self.summary.get("scenario", {}).get("name") or "scenario"
        return (
            f"<aqmlab.Result {name!r}: {len(self.summary.get('flows', []))} flows, "
            f"{len(self.summary.get('queues', []))} queues, {self.summary.get('duration_s')} s>"
        )


class _Frames(Mapping[str, "pd.DataFrame"]):
    """``Result.tables``: name -> DataFrame, each converted on first access."""

    def __init__(self, result: Result):
        self._r = result

    def __getitem__(self, name: str) -> pd.DataFrame:
        if name not in self._r._arrow:
            raise KeyError(name)
        return self._r._table(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._r._arrow)

    def __len__(self) -> int:
        return len(self._r._arrow)


def _arrow_parquet_bytes(t: pa.Table) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(t, sink)
    return bytes(sink.getvalue())


def _parquet_bytes(df: pd.DataFrame) -> bytes:
    """A DataFrame as Parquet (sweeps and reproductions)."""
    import io

    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return buf.getvalue()
