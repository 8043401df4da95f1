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

import errno
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aqmlab import _engine
from aqmlab._io import OutputError, remove_temporary, replace_with_temporary, write_temporary
from aqmlab.columns import (  # the tables' plumbing, imported from here by the runner, sweeps and windows
    _ENRICHED_BY,
    Columns,
    _arrow_table,
    _csv_text,
    _engine_columns,
    _enrich,
    _table_columns,
    _write_parquet,
)
from aqmlab.scenario import (
    Scenario,
    ScenarioLike,
    dump_toml,
    to_dict,
)

if TYPE_CHECKING:
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


def _atomic_write_parquet(path: str | os.PathLike[str], table: pa.Table | pd.DataFrame) -> Path:
    """Write a table as a Parquet file, as it encodes, atomically: a
    sweep's tables, a reproduction's runs (a run's tables are renamed
    together, :meth:`Result.to_parquet`)."""
    return replace_with_temporary(write_temporary(path, lambda f: _write_parquet(table, f)), path)


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
        """Write every table as ``<table>.parquet`` in ``out_dir``.

        Each table is encoded into a temporary file beside its own; only
        once all are complete are they renamed over the files, in order: a
        table that fails to encode leaves every file of an earlier save as
        it was."""
        return list(self._write_together(Path(out_dir), {}).values())

    def _write_together(self, out: Path, others: Mapping[str, bytes]) -> dict[str, Path]:
        """Every table as ``<table>.parquet`` and each of ``others`` (file
        name -> bytes) in ``out``, each into a temporary file beside its own,
        renamed over the files only once all are complete: the tables in
        order, then the others in theirs. Whatever stops it before the
        renames (a table that fails to encode, a full disk, Ctrl-C) leaves
        every file of an earlier save as it was, and no temporary file.
        Returns the paths written by file name, in that order."""
        import threading
        from concurrent.futures import ThreadPoolExecutor

        names = [name for name in TABLES if name in self._arrow]
        cells = {name: self._arrow[name].num_rows * self._arrow[name].num_columns for name in names}
        by_size = sorted(names, key=cells.__getitem__, reverse=True)
        # The largest table is encoded here while a thread encodes the others
        # (Arrow's writer releases the GIL while it encodes, and takes it back
        # to hand each page to the file). 128 s of 2 000 web flows a second,
        # on two cores: 0.17-0.23 s so, 0.22-0.36 s one after the other
        # (stop 68, 20 calls each); its `aqmlab run` peaks 3 MB higher. A
        # k = 16 fat tree's run, whose other tables are small beside its 2
        # million histogram rows, peaks the same either way (282.1 MB). Until
        # stop 67's writer, which encodes into the file, the thread's
        # allocator had cost that run 10 MB, and small tables stayed here.
        # (Sized by values, not `Table.nbytes`: reading that raised the same
        # peak by 14 MB then, for reasons not established.)
        here, beside = by_size[:1], by_size[1:]
        files = [f"{name}.parquet" for name in names] + list(others)
        # Each temporary file is recorded as soon as it is complete, by the
        # thread that wrote it, so that whatever stops the writing (a table
        # that fails, Ctrl-C) leaves none behind; one completed after the
        # clean-up below (a second Ctrl-C while the pool waits for it) is
        # removed by its own thread.
        temporary: dict[str, Path] = {}
        stopped = threading.Event()

        def encode(name: str) -> None:
            file = f"{name}.parquet"
            temporary[file] = write_temporary(out / file, lambda f: _write_parquet(self._arrow[name], f))
            if stopped.is_set():
                remove_temporary(temporary[file])

        try:
            with ThreadPoolExecutor(max_workers=1) as pool:
                tables = [pool.submit(encode, name) for name in beside]
                try:
                    for name in here:
                        encode(name)
                    for file, data in others.items():
                        temporary[file] = write_temporary(out / file, lambda f, data=data: f.write(data))
                    for table in tables:
                        table.result()  # its failure, if any
                except BaseException:
                    pool.shutdown(cancel_futures=True)  # those not started; the pool's exit waits for the one running
                    raise
            # A directory in a file's place fails before anything is renamed
            # (a rename that fails later still leaves the files before it new).
            for file in files:
                if (out / file).is_dir():
                    raise OutputError(errno.EISDIR, f"cannot write {out / file}: a directory is in its place")
            written = {}
            for file in files:
                written[file] = replace_with_temporary(temporary[file], out / file)
                del temporary[file]
            return written
        finally:
            stopped.set()
            for tmp in list(temporary.values()):  # not renamed: a table, a rename or the user stopped it
                remove_temporary(tmp)

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
        earlier result is only ever replaced by a complete new file. The
        run's own files (summary, scenario, tables, capture) are renamed
        only once all are written, so one that fails to be written leaves
        the earlier save whole (a rename that fails partway does not).
        Plots and a report of an earlier save that this one does not write
        are removed, so the directory never mixes two runs. Returns the
        paths written. ``plot_formats``, ``plot_size_in`` and ``plot_dpi``
        go to :meth:`save_plots`."""
        out = Path(out_dir)
        # The run's own files are written together: a table that fails to
        # encode, or a full disk, leaves the summary of an earlier save
        # beside its tables, never this run's summary beside them.
        others = {"scenario.toml": dump_toml(self.summary["scenario"]).encode(), **self._extra_files(),
                  "summary.json": self.summary_json().encode()}  # fmt: skip
        written = self._write_together(out, others)
        for name in ("capture.pcap", "capture_drops.csv"):  # a capture of an earlier save
            if name not in others:
                (out / name).unlink(missing_ok=True)
        files: dict[str, Any] = {"summary": written.pop("summary.json"), "scenario": written.pop("scenario.toml")}
        files["tables"] = [written.pop(name) for name in list(written) if name.endswith(".parquet")]
        files.update(written)  # the capture's files
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

    def _extra_files(self) -> dict[str, bytes]:
        """The engine's files (``capture.pcap``) and the capture's drops as
        ``capture_drops.csv``, by file name."""
        extra = dict(sorted(self.files.items()))
        if "pcap_drops" in self._arrow:
            extra["capture_drops.csv"] = _csv_text(self._arrow["pcap_drops"]).encode()
        return extra

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
