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
from collections.abc import Callable, Iterator, Mapping, Sequence
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
TABLES = ("flows", "queues", "sojourn_hist", "flow_ts", "queue_ts", "probes", "sojourn_samples", "probe_rtt")

Progress = Callable[[float], object]


def run(
    scenario: ScenarioLike,
    *,
    seed: int | None = None,
    progress: Progress | None = None,
    force: bool = False,
    max_memory_bytes: int | None = None,
    max_time_s: float | None = None,
) -> Result:
    """Validate and run a scenario; return its :class:`Result`.

    ``scenario`` is a :class:`~aqmlab.scenario.Scenario`, a TOML/JSON tree
    (dict) or a path to a TOML file. ``seed`` overrides the scenario's seed.
    ``progress(sim_seconds_done)`` is called now and then; raising from it
    aborts the run. Raises :class:`~aqmlab.ScenarioError` for an invalid
    scenario, :class:`~aqmlab.resources.ResourceError` (a ScenarioError)
    when the run's estimated memory exceeds ``max_memory_bytes`` (default:
    the machine's available memory) or its estimated time ``max_time_s``,
    unless ``force``; and ``RuntimeError`` if the engine fails.
    """
    from aqmlab.resources import check, estimate

    tree = to_dict(scenario)
    if seed is not None:
        tree["seed"] = seed
    normalized_text = _engine.validate(json.dumps(tree))
    if not force:
        check(estimate(json.loads(normalized_text)), max_memory_bytes=max_memory_bytes, max_time_s=max_time_s)
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


# The run path builds and writes the tables without pandas (~0.4 s to
# import): columns are numpy arrays (numpy comes with pyarrow anyway) and
# lists of str, turned into Arrow arrays from their buffers, because
# pa.array() and Array.to_numpy() import pandas whenever it is installed.
# pyarrow.compute is avoided too (~0.1 s).

#: A table as columns: numpy arrays (numbers) or lists of str/None (text).
Columns = dict[str, Any]

#: Integer columns where the engine writes -1 for "none"; null in the tables.
NULLABLE = {"flows": ("size_bytes", "fct_ns")}


def _engine_columns(cols: dict[str, Any]) -> Columns:
    """An engine table: numeric columns come as (dtype, little-endian
    bytes), read without copying; text columns as lists of str."""
    import numpy as np

    return {name: np.frombuffer(c[1], dtype=np.dtype(c[0])) if isinstance(c, tuple) else c for name, c in cols.items()}


def _table_columns(t: pa.Table) -> Columns:
    """An Arrow table as columns (nulls of numeric columns as NaN)."""
    import numpy as np
    import pyarrow as pa

    return {name: col.to_pylist() if pa.types.is_string(col.type) or pa.types.is_large_string(col.type)
            else np.asarray(col.to_numpy()) for name, col in zip(t.column_names, t.columns, strict=True)}  # fmt: skip


def _bitmap(valid: np.ndarray) -> pa.Buffer | None:
    import numpy as np
    import pyarrow as pa

    return None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))


def _arrow_array(values: Any, nullable: bool = False) -> pa.Array:
    """A column as an Arrow array, from its buffers (Arrow's columnar
    layout). Text is large_string, as pandas wrote it; a nullable integer
    column is null where the value is negative (or NaN)."""
    import numpy as np
    import pyarrow as pa

    if isinstance(values, list):
        encoded = [b"" if v is None else v.encode() for v in values]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
        valid = np.fromiter((v is not None for v in values), dtype=bool, count=len(values))
        buffers = [_bitmap(valid), pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
        return pa.Array.from_buffers(pa.large_string(), len(values), buffers)
    a = np.ascontiguousarray(values)
    validity = None
    if nullable:
        valid = a >= 0  # False for NaN
        validity = _bitmap(valid)
        a = np.where(valid, a, -1).astype(np.int64)
    return pa.Array.from_buffers(pa.from_numpy_dtype(a.dtype), len(a), [validity, pa.py_buffer(a)])


def _nullable_meta(nullable: Sequence[str]) -> dict[bytes, bytes]:
    """Schema metadata in pandas' documented Parquet format declaring
    ``nullable`` integer columns as pandas ``Int64``, so ``pd.read_parquet``
    and :class:`Result` give ``Int64`` (not float64) for them, as when pandas
    wrote the files. Other columns take pandas' defaults."""
    cols = [{"name": c, "field_name": c, "pandas_type": "int64", "numpy_type": "Int64", "metadata": None} for c in nullable]
    doc = {"index_columns": [], "column_indexes": [], "columns": cols}
    return {b"pandas": json.dumps(doc).encode()}


def _arrow_table(name: str, cols: Columns) -> pa.Table:
    import pyarrow as pa

    nullable = NULLABLE.get(name, ())
    arrays = [_arrow_array(v, c in nullable) for c, v in cols.items()]
    return pa.Table.from_arrays(arrays, names=list(cols), metadata=_nullable_meta(nullable) if nullable else None)


def _f64(values: np.ndarray) -> np.ndarray:
    import numpy as np

    return np.asarray(values, dtype=np.float64)


def _per_interval_diff(keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values[i]`` minus the value of the previous row with the same key;
    NaN for each key's first row (pandas' ``groupby(keys).diff()``)."""
    import numpy as np

    values = _f64(values)
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


def _enrich(tables: dict[str, Columns], summary: dict[str, Any]) -> dict[str, Columns]:
    """Add convenience columns (seconds, milliseconds, per-interval rates)."""
    import numpy as np

    nan = float("nan")
    t = {name: dict(cols) for name, cols in tables.items()}
    f = t.get("flows")
    if f is not None:
        f["base_rtt_ms"] = _f64(f["base_rtt_ns"]) / 1e6
        f["srtt_ms"] = _f64(f["srtt_ns"]) / 1e6
        fct = _f64(f["fct_ns"])
        f["fct_s"] = np.where(fct >= 0, fct / 1e9, nan)  # -1: unbounded or unfinished
    q = t.get("queues")
    if q is not None:
        by_name = {x["name"]: x for x in summary.get("queues", [])}
        util, drop_rate, mark_rate = [], [], []
        for name, sub in zip(q["queue"], q["subqueue"], strict=True):
            qs = by_name.get(name, {})
            stats = qs.get("subqueues", {}).get(sub, qs) if sub != "all" else qs
            util.append(qs.get("utilization", nan))
            drop_rate.append(stats.get("drop_rate", nan))
            mark_rate.append(stats.get("mark_rate", nan))
        q["utilization"] = _f64(util)
        q["drop_rate"] = _f64(drop_rate)
        q["mark_rate"] = _f64(mark_rate)
        for p in ("mean", "p50", "p90", "p99"):
            q[f"sojourn_{p}_ms"] = _f64(q[f"sojourn_{p}_ns"]) / 1e6
    ts = t.get("flow_ts")
    if ts is not None:
        flow = ts["flow"]
        ts["t_s"] = _f64(ts["t_ns"]) / 1e9
        dt = _per_interval_diff(flow, ts["t_ns"]) / 1e9
        ts["goodput_bps"] = _per_interval_diff(flow, ts["delivered_bytes"]) * 8 / dt
        ts["srtt_ms"] = _f64(ts["srtt_ns"]) / 1e6
        if f is not None and len(f["id"]):
            row_of = {fid: i for i, fid in enumerate(f["id"].tolist())}
            rows = [row_of.get(fid) for fid in flow.tolist()]
            for col in ("label", "cc"):  # the flow's, by id; null for an unknown id
                ts[col] = [None if i is None else f[col][i] for i in rows]
    qt = t.get("queue_ts")
    if qt is not None:
        keys = _group_codes(qt["queue"], qt["subqueue"])
        d = {c: _per_interval_diff(keys, qt[c]) for c in ("arrived_pkts", "departed_pkts", "dropped_pkts", "marked_pkts")}
        qt["t_s"] = _f64(qt["t_ns"]) / 1e9
        with np.errstate(divide="ignore", invalid="ignore"):  # no arrivals / departures in an interval: NaN
            qt["drop_prob"] = d["dropped_pkts"] / np.where(d["arrived_pkts"] > 0, d["arrived_pkts"], nan)
            qt["mark_prob"] = d["marked_pkts"] / np.where(d["departed_pkts"] > 0, d["departed_pkts"], nan)
            if "sojourn_sum_ns" in qt:  # mean queue delay of the packets that departed in the interval
                soj = _per_interval_diff(keys, qt["sojourn_sum_ns"])
                qt["sojourn_mean_ms"] = soj / np.where(d["departed_pkts"] > 0, d["departed_pkts"], nan) / 1e6
                qt["sojourn_max_ms"] = np.where(d["departed_pkts"] > 0, _f64(qt["sojourn_max_ns"]) / 1e6, nan)
    pr = t.get("probes")
    if pr is not None:
        pr["t_s"] = _f64(pr["t_ns"]) / 1e9
    pp = t.get("probe_rtt")
    if pp is not None:
        pp["t_s"] = _f64(pp["t_ns"]) / 1e9
        pp["rtt_ms"] = _f64(pp["rtt_ns"]) / 1e6
    sh = t.get("sojourn_hist")
    if sh is not None:
        sh["lo_ms"] = _f64(sh["lo_ns"]) / 1e6
        sh["hi_ms"] = _f64(sh["hi_ns"]) / 1e6
    return t


#: A column each table gets from :func:`_enrich`: present means enriched
#: (a table read back from Parquet, or given as a saved DataFrame). Other
#: tables (sojourn_samples) get nothing.
_ENRICHED_BY = {"flows": "base_rtt_ms", "queues": "utilization", "flow_ts": "t_s", "queue_ts": "t_s",
                "probes": "t_s", "sojourn_hist": "hi_ms", "probe_rtt": "t_s"}  # fmt: skip


class Result:
    """One run: ``summary`` (dict, the summary.json contract) and tables.

    DataFrames: ``flows`` (one row per flow), ``queues`` (one row per queue
    and sub-queue), ``timeseries`` (per flow per sampling interval),
    ``queue_timeseries``, ``probes`` (AQM/CC internal values over time),
    ``sojourn_hist`` and ``sojourn_samples``. Columns: docs/results.md.

    The tables are held as Arrow tables; each DataFrame (and pandas itself)
    is built on first access, so running and saving never import pandas.
    """

    def __init__(self, summary: dict[str, Any], tables: Mapping[str, pa.Table | pd.DataFrame | Columns],
                 files: Mapping[str, bytes] | None = None):  # fmt: skip
        """``tables``: name -> Arrow table, DataFrame or columns, as the
        engine gives them or with the added columns (as saved). ``files``:
        name -> bytes written as they are (``capture.pcap``)."""
        import pyarrow as pa

        self.summary = summary
        #: Files besides the tables, written by :meth:`save` as they are:
        #: ``capture.pcap`` with ``[metrics] pcap`` (aqmlab.capture).
        self.files: dict[str, bytes] = dict(files or {})
        self._arrow: dict[str, pa.Table] = {}
        raw: dict[str, Columns] = {}
        for name, t in tables.items():
            if not isinstance(t, (pa.Table, dict)):  # a DataFrame
                t = pa.Table.from_pandas(t, preserve_index=False)
            added = _ENRICHED_BY.get(name)
            if added is None or added in (t if isinstance(t, dict) else t.column_names):  # nothing to add
                self._arrow[name] = t if isinstance(t, pa.Table) else _arrow_table(name, t)
            else:
                raw[name] = t if isinstance(t, dict) else _table_columns(t)
        if raw:
            self._arrow.update({name: _arrow_table(name, cols) for name, cols in _enrich(raw, summary).items()})
        self._frames: dict[str, pd.DataFrame] = {}

    @classmethod
    def _from_engine(cls, raw: dict[str, Any], normalized: dict[str, Any]) -> Result:
        engine_summary = json.loads(raw["summary"])
        tables = {name: _engine_columns(cols) for name, cols in raw["tables"].items()}
        return cls(build_summary(engine_summary, normalized), tables, raw.get("files"))

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
    def probe_rtt(self) -> pd.DataFrame:
        """Every latency-probe RTT sample (``cc = "probe"`` flows)."""
        return self._table("probe_rtt")

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
                written.append(atomic_write_bytes(out / f"{name}.parquet", _parquet_bytes(self._arrow[name])))
        return written

    def save(
        self,
        out_dir: str | os.PathLike[str],
        *,
        plots: bool = True,
        report: bool = True,
        plot_formats: Sequence[str] = ("png",),
        plot_size_in: tuple[float, float] | None = None,
        plot_dpi: int = 110,
    ) -> dict[str, Any]:
        """Write ``summary.json``, ``scenario.toml``, the tables as Parquet,
        PNG plots in ``plots/`` and ``report.html`` (a report implies the
        plots). Each file is written to a temporary name and renamed, so an
        earlier result is only ever replaced by a complete new file; plots
        and a report of an earlier save that this one does not write are
        removed, so the directory never mixes two runs. Returns the paths
        written. ``plot_formats``, ``plot_size_in`` and ``plot_dpi`` go to
        :meth:`save_plots`."""
        out = Path(out_dir)
        files: dict[str, Any] = {}
        files["summary"] = atomic_write_text(out / "summary.json", self.summary_json())
        files["scenario"] = atomic_write_text(out / "scenario.toml", dump_toml(self.summary["scenario"]))
        files["tables"] = self.to_parquet(out)
        files.update(self._save_extra_files(out))
        if plots or report:
            files.update(self.save_plots(out, report=report, formats=plot_formats, size_in=plot_size_in,
                                         dpi=plot_dpi))  # fmt: skip
        else:
            _remove_plots(out, keep=set())
        if not report:
            (out / "report.html").unlink(missing_ok=True)
        return files

    def save_plots(
        self,
        out_dir: str | os.PathLike[str],
        *,
        report: bool = False,
        formats: Sequence[str] = ("png",),
        size_in: tuple[float, float] | None = None,
        dpi: int = 110,
    ) -> dict[str, Any]:
        """Write the plots in ``out_dir/plots`` (PNG, plus any other of
        ``formats``: pdf, svg; at ``size_in`` inches in the paper style when
        given) and, with ``report``, ``out_dir/report.html``; ``aqmlab report
        DIR`` does this for a saved run. Returns ``{"plots": [paths of the
        PNGs], "report": path}``."""
        out = Path(out_dir)
        formats = ("png", *[f for f in formats if f != "png"])  # the report embeds the PNGs
        figures = self.plot.save_all(out / "plots", formats=formats, size_in=size_in, dpi=dpi)
        files: dict[str, Any] = {"plots": list(figures.values())}
        if report:
            from aqmlab.report import write_report

            files["report"] = write_report(self, out / "report.html", figures)
        _remove_plots(out, keep=set(figures))
        for name in figures:  # other formats of an earlier save would show another run
            for fmt in ("pdf", "svg"):
                if fmt not in formats:
                    (out / "plots" / f"{name}.{fmt}").unlink(missing_ok=True)
        return files

    def _save_extra_files(self, out: Path) -> dict[str, Path]:
        """The engine's files (``capture.pcap``) and the capture's drops as
        ``capture_drops.csv``; a capture of an earlier save is removed."""
        written = {}
        for name in ("capture.pcap", "capture_drops.csv"):
            if name not in self.files and not (name.endswith(".csv") and "pcap_drops" in self._arrow):
                (out / name).unlink(missing_ok=True)
        for name, data in sorted(self.files.items()):
            written[name] = atomic_write_bytes(out / name, data)
        if "pcap_drops" in self._arrow:
            written["capture_drops.csv"] = atomic_write_text(out / "capture_drops.csv", _csv_text(self._arrow["pcap_drops"]))
        return written

    @property
    def pcap_drops(self) -> pd.DataFrame:
        """The captured queue's drops (``[metrics] pcap``): empty without a capture."""
        return self._table("pcap_drops")

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
        if (out / "capture_drops.csv").exists():
            import pyarrow.csv as pcsv

            tables["pcap_drops"] = pcsv.read_csv(out / "capture_drops.csv")
        files = {name: (out / name).read_bytes() for name in ("capture.pcap",) if (out / name).exists()}
        return cls(summary, tables, files)

    def __repr__(self) -> str:
        name = self.summary.get("scenario", {}).get("name") or "scenario"
        return (
            f"<aqmlab.Result {name!r}: {len(self.summary.get('flows', []))} flows, "
            f"{len(self.summary.get('queues', []))} queues, {self.summary.get('duration_s')} s>"
        )

    def _repr_html_(self) -> str:
        """In a notebook: the headline tables (per flow, per queue)."""
        import html

        flow_cols = [c for c in ("id", "label", "cc", "ecn", "goodput_bps", "retransmits", "marks", "srtt_p50_ms")
                     if c in self.flows.columns]  # fmt: skip
        queue_cols = [c for c in ("queue", "subqueue", "aqm", "sojourn_p50_ms", "sojourn_p99_ms", "drop_rate",
                                  "mark_rate", "utilization") if c in self.queues.columns]  # fmt: skip
        fmt = {"float_format": lambda x: f"{x:.4g}", "index": False}
        flows = self.flows[flow_cols].head(30).to_html(**fmt)
        more = f"<p>… {len(self.flows) - 30} more flows in <code>.flows</code></p>" if len(self.flows) > 30 else ""
        plot = ""
        try:  # the key plot: goodput per flow over time
            import matplotlib.pyplot as plt

            from aqmlab.plots import goodput, png_bytes
            from aqmlab.report import image

            fig = goodput(self)
            if fig is not None:
                plot = image(png_bytes(fig, dpi=80), "goodput per flow")
                plt.close(fig)
        except ImportError:
            pass
        return (f"<p><code>{html.escape(repr(self))}</code></p>{flows}{more}"
                f"{self.queues[queue_cols].to_html(**fmt)}{plot}")  # fmt: skip


#: Names of the PNGs in ``plots/`` (aqmlab.plots.PLOTS, which imports matplotlib).
PLOT_NAMES = ("goodput", "sojourn_cdf", "cwnd", "rate", "probabilities", "fct", "rtt_time", "queue_delay", "rtt_cdf",
              "rtt_box")  # fmt: skip


def _remove_plots(out: Path, keep: set[str]) -> None:
    """Remove plots of an earlier save in ``out`` except ``keep``: they would
    show another run (e.g. an fct.png after a run without finite flows)."""
    for name in PLOT_NAMES:
        if name not in keep:
            for fmt in ("png", "pdf", "svg"):
                (out / "plots" / f"{name}.{fmt}").unlink(missing_ok=True)


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


def _csv_text(table: pa.Table) -> str:
    """A small table as CSV text (header row; text unquoted unless needed)."""
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(table.column_names)
    w.writerows(zip(*(c.to_pylist() for c in table.columns), strict=True))
    return buf.getvalue()


def _parquet_bytes(table: pa.Table | pd.DataFrame) -> bytes:
    """A table as Parquet: an Arrow table (a run's tables), or a DataFrame
    (sweeps and reproductions), converted as ``DataFrame.to_parquet`` does."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not isinstance(table, pa.Table):
        table = pa.Table.from_pandas(table, preserve_index=False)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return bytes(sink.getvalue())
