"""The Python API mirrors the CLI: run -> Result with DataFrames and plots;
engine errors surface as Python exceptions."""

from __future__ import annotations

import ast
import io
import os
import subprocess
import sys
from pathlib import Path

import aqmlab
import matplotlib.figure
import pandas as pd
import pytest
from aqmlab import Result, ScenarioError, _engine
from aqmlab import cli as cli_mod
from conftest import EXAMPLES, ROOT, tiny


def test_all_is_explicit_and_resolves() -> None:
    assert "run" in aqmlab.__all__ and "sweep" in aqmlab.__all__ and "Scenario" in aqmlab.__all__
    for name in aqmlab.__all__:
        assert getattr(aqmlab, name) is not None
    assert callable(aqmlab.sweep) and callable(aqmlab.run)


def test_import_is_light() -> None:
    code = "import sys, aqmlab; print(sorted(m for m in ('pandas', 'matplotlib', 'rich') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_run_returns_dataframes() -> None:
    r = aqmlab.run(tiny())
    assert isinstance(r, Result)
    assert isinstance(r.flows, pd.DataFrame) and len(r.flows) == 3
    assert {"id", "cc", "ecn", "goodput_bps", "retransmits", "base_rtt_ms", "fct_s"} <= set(r.flows.columns)
    assert isinstance(r.queues, pd.DataFrame)
    assert {"queue", "subqueue", "utilization", "drop_rate", "mark_rate", "sojourn_p99_ms"} <= set(r.queues.columns)
    ts = r.timeseries
    assert isinstance(ts, pd.DataFrame) and {"t_s", "flow", "goodput_bps", "cwnd_segs", "label"} <= set(ts.columns)
    assert ts["flow"].nunique() == 3
    assert set(r.queue_timeseries["queue"]) == {"bottleneck"}
    # The DataFrames agree with the summary (they are the same engine numbers).
    for f in r.summary["flows"]:
        row = r.flows.set_index("id").loc[f["id"]]
        assert row["goodput_bps"] == pytest.approx(f["goodput_bps"])
        assert row["retransmits"] == f["retransmits"]
    assert r.queues.iloc[0]["utilization"] == r.queue()["utilization"]
    assert r.summary["scenario"]["seed"] == 1 and r.perf["events"] > 0 and 0 < r.fairness["jain"] <= 1


def test_text_columns_come_coded_and_read_back_row_by_row() -> None:
    """The engine sends a text column as codes into its distinct values; the
    front's rows are those values, each row sharing its value's str."""
    import json

    import numpy as np
    from aqmlab.columns import _engine_columns

    raw = _engine.run(_engine.validate(json.dumps(tiny())))
    kind, codes, values = raw["tables"]["sojourn_hist"]["queue"]
    assert kind == "text" and values == ["bottleneck"]
    rows = np.frombuffer(raw["tables"]["sojourn_hist"]["count"][1], dtype="<u8")
    assert len(codes) == 4 * len(rows) > 4 * 10, "one u32 code a row"
    cols = _engine_columns(raw["tables"]["flows"])
    assert cols["cc"] == ["cubic", "cubic", "dctcp"] and cols["cc"][0] is cols["cc"][1]
    hist = _engine_columns(raw["tables"]["sojourn_hist"])
    assert set(hist["queue"]) == {"bottleneck"} and len(hist["queue"]) == len(rows)


@pytest.mark.parametrize("codes", [[], [0], [2, 2, 2, 0, 0, 1, 2], [1, 0, 1, 0, 3, 3, 1]])
def test_coded_text_becomes_the_arrow_strings_of_its_rows(codes: list[int]) -> None:
    """The Arrow array built from a text column's codes (runs of one value
    repeated whole) is the one built from its rows, empty and non-ASCII
    values included."""
    import numpy as np
    import pyarrow as pa
    from aqmlab.columns import _arrow_array, _engine_columns

    col = _engine_columns({"q": ("text", np.array(codes, dtype="<u4").tobytes(), ["a->b", "", "é:rev", "x"])})["q"]
    assert list(col) == [["a->b", "", "é:rev", "x"][c] for c in codes]
    assert _arrow_array(col).equals(_arrow_array(list(col)))
    assert _arrow_array(col).type == pa.large_string() and _arrow_array(col).to_pylist() == list(col)


def test_busiest_summary_queues_rank_by_p99_then_arrivals_and_keep_the_order() -> None:
    from aqmlab.busiest import busiest_summary_queues

    def q(name: str, p99: float | None, arrivals: int) -> dict[str, object]:
        return {"name": name, "sojourn_ms": None if p99 is None else {"p99": p99}, "arrivals": arrivals}

    qs = [q("a", 1.0, 5), q("b", None, 99), q("c", 3.0, 1), q("d", 1.0, 7), q("e", 2.0, 0)]
    assert [x["name"] for x in busiest_summary_queues(qs, 3)] == ["c", "d", "e"]
    assert [x["name"] for x in busiest_summary_queues(qs, 4)] == ["a", "c", "d", "e"]
    assert busiest_summary_queues(qs, 5) == qs


def test_run_accepts_scenario_objects_paths_and_seed() -> None:
    path = EXAMPLES / "dumbbell.toml"
    a = aqmlab.run(path)
    b = aqmlab.run(aqmlab.load(path))
    c = aqmlab.run(str(path), seed=5)
    assert a.summary["flows"] == b.summary["flows"]
    assert c.summary["seed"] == 5 and c.summary["flows"] != a.summary["flows"]


def test_plots_return_figures_with_data() -> None:
    r = aqmlab.run(tiny())
    for name in ("goodput", "sojourn_cdf", "cwnd", "probabilities"):
        fig = getattr(r.plot, name)()
        assert isinstance(fig, matplotlib.figure.Figure), name
        assert any(ax.lines for ax in fig.axes), name
    assert r.plot.fct() is None  # no finite flows
    cw = r.plot.cwnd()
    assert len(cw.axes[0].lines) == 3
    cdf = r.plot.sojourn_cdf()
    y = cdf.axes[0].lines[0].get_ydata()
    assert y[0] == 0 and abs(y[-1] - 1) < 1e-12 and all(y[i] <= y[i + 1] for i in range(len(y) - 1))


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    r = aqmlab.run(tiny())
    files = r.save(tmp_path / "o")
    # goodput, sojourn_cdf, cwnd, probabilities and the latency views rtt_time, queue_delay, rtt_cdf, rtt_box
    assert files["report"].exists() and len(files["plots"]) == 8
    back = Result.load(tmp_path / "o")
    assert back.summary == r.summary
    pd.testing.assert_frame_equal(back.flows, r.flows, check_dtype=False)
    assert len(back.timeseries) == len(r.timeseries)


def test_progress_callback_is_called_and_can_abort() -> None:
    long = tiny(duration="20s", bottleneck={"rate": "100Mbps"})
    seen: list[float] = []
    aqmlab.run(long, progress=seen.append)
    assert seen and seen[-1] == pytest.approx(20.0) and seen == sorted(seen)

    class Stop(Exception):
        pass

    def stop(t: float) -> None:
        raise Stop()

    with pytest.raises(Stop):
        aqmlab.run(long, progress=stop)


def test_invalid_scenario_raises_scenario_error() -> None:
    with pytest.raises(ScenarioError, match=r"^bottleneck\.aqm: unknown AQM 'fifp' \(did you mean 'fifo'\?"):
        aqmlab.run(tiny(bottleneck={"rate": "1Mbps", "aqm": "fifp"}))
    assert issubclass(ScenarioError, ValueError)


def test_rust_panic_surfaces_as_python_exception() -> None:
    with pytest.raises(RuntimeError, match="engine panic: deliberate test panic"):
        _engine._panic_for_test()
    # The engine is still usable afterwards.
    assert aqmlab.run(tiny()).perf["events"] > 0


def test_cli_turns_an_engine_failure_into_one_line_exit_1(monkeypatch, capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    def boom(*a, **k):  # type: ignore[no-untyped-def]
        _engine._panic_for_test()

    monkeypatch.setattr(_engine, "run", boom)
    code = cli_mod.main(["run", str(EXAMPLES / "dumbbell.toml"), "--out", str(tmp_path / "o"), "-q"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.strip().splitlines() == ["aqmlab: engine error: engine panic: deliberate test panic"]
    assert not (tmp_path / "o").exists()


def test_stub_file_matches_the_extension() -> None:
    tree = ast.parse((ROOT / "python" / "aqmlab" / "_engine.pyi").read_text())
    stubbed = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    stubbed |= {t.target.id for t in tree.body if isinstance(t, ast.AnnAssign) and isinstance(t.target, ast.Name)}
    public = {n for n in dir(_engine) if not n.startswith("__") or n == "__version__"}
    assert stubbed - {"Column"} == public


def test_api_example_runs(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(EXAMPLES / "api.py"), str(tmp_path / "o")], capture_output=True,
                          text=True, cwd=tmp_path, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "o" / "report.html").exists()
    assert "Jain's index" in proc.stdout


def test_added_columns_match_a_pandas_computation() -> None:
    """The per-interval and unit columns (computed without pandas) are what
    pandas' groupby-diff computes from the engine's cumulative counters."""
    # DualPI2: rows per sub-queue, with drops and marks.
    r = aqmlab.run(tiny(bottleneck={"rate": "10Mbps", "buffer": "30ms", "aqm": "dualpi2"},
                        flows=[{"cc": "cubic", "rtt": "20ms", "count": 2}, {"cc": "dctcp", "rtt": "20ms", "ecn": "l4s"}]))  # fmt: skip
    ts = r.timeseries
    g = ts.groupby("flow", sort=False)
    goodput = g["delivered_bytes"].diff() * 8 / (g["t_ns"].diff() / 1e9)
    pd.testing.assert_series_equal(ts["goodput_bps"], goodput, check_names=False)
    labels = r.flows.set_index("id")["label"]
    assert (ts["label"] == labels.loc[ts["flow"]].to_numpy()).all()
    qt = r.queue_timeseries
    assert qt["subqueue"].nunique() > 1
    g = qt.groupby(["queue", "subqueue"], sort=False)
    arrived, departed = g["arrived_pkts"].diff(), g["departed_pkts"].diff()
    drop = (g["dropped_pkts"].diff() / arrived.where(arrived > 0)).astype(float)
    mark = (g["marked_pkts"].diff() / departed.where(departed > 0)).astype(float)
    pd.testing.assert_series_equal(qt["drop_prob"], drop, check_names=False)
    pd.testing.assert_series_equal(qt["mark_prob"], mark, check_names=False)
    assert qt["mark_prob"].gt(0).any() and qt["drop_prob"].gt(0).any()
    pd.testing.assert_series_equal(r.flows["srtt_ms"], r.flows["srtt_ns"] / 1e6, check_names=False)
    pd.testing.assert_series_equal(r.queues["sojourn_p99_ms"], r.queues["sojourn_p99_ns"] / 1e6, check_names=False)


@pytest.mark.parametrize("coded", [True, False])
def test_time_series_rows_take_their_flows_label_and_cc_by_id(coded: bool) -> None:
    """Each time-series row's label and cc are those of the flows-table row
    with its id (the last of an id given twice), null for an id the table
    lacks: from the engine's coded columns and from plain lists (a table
    read back from Parquet) alike, as the definition by dictionary reads."""
    import numpy as np
    from aqmlab.columns import _arrow_array, _CodedText, _enrich

    ids = np.array([7, 3, 9, 3, 0], dtype=np.uint64)
    labels, ccs = ["web", "bulk", "web", "late", "x"], ["cubic", "reno", "cubic", "dctcp", "prague"]

    def text(rows: list[str]) -> list[str]:
        if not coded:
            return rows
        values = sorted(set(rows))
        return _CodedText(np.array([values.index(v) for v in rows], dtype="<u4"), values)

    flows = {"id": ids, "label": text(labels), "cc": text(ccs), "base_rtt_ns": ids, "srtt_ns": ids, "fct_ns": ids.astype(np.int64)}
    flow = np.array([3, 5, 0, 7, 9, 3, 11, 0], dtype=np.uint64)
    ts = {"t_ns": np.arange(len(flow), dtype=np.uint64), "flow": flow, "delivered_bytes": flow, "srtt_ns": flow}
    out = _enrich({"flows": flows, "flow_ts": ts}, {})["flow_ts"]
    row_of = {fid: i for i, fid in enumerate(ids.tolist())}
    for col, values in (("label", labels), ("cc", ccs)):
        want = [None if row_of.get(f) is None else values[row_of[f]] for f in flow.tolist()]
        assert list(out[col]) == want
        assert _arrow_array(out[col]).equals(_arrow_array(want)) and _arrow_array(out[col]).null_count == 2


@pytest.mark.parametrize("failing", ["largest", "smallest"])
def test_tables_are_encoded_before_any_file_is_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        failing: str) -> None:  # fmt: skip
    """The tables are encoded (the smaller ones on a thread) into
    temporary files, then renamed in order: each file is what encoding it
    alone gives, and a table that fails to encode (the largest, encoded by
    the caller while the thread writes the others, or the smallest) leaves
    every file of an earlier save as it was, and no temporary file."""
    import aqmlab.results as results
    from aqmlab._io import OutputError
    from aqmlab.columns import _write_parquet

    def encoded(table: object) -> bytes:
        buf = io.BytesIO()
        _write_parquet(table, buf)
        return buf.getvalue()

    r = aqmlab.run(tiny())
    paths = r.to_parquet(tmp_path)
    assert [p.name for p in paths] == [f"{t}.parquet" for t in results.TABLES if t in r._arrow]
    assert all(p.read_bytes() == encoded(r._arrow[p.stem]) for p in paths)
    before = {p.name: p.read_bytes() for p in paths}
    other = aqmlab.run(tiny(), seed=9)
    by_size = sorted(other._arrow, key=lambda n: (other._arrow[n].num_rows * other._arrow[n].num_columns, n))
    name = by_size[-1] if failing == "largest" else by_size[0]

    def fail_one(table: object, file: object) -> None:
        if table is other._arrow[name]:
            raise OSError(28, "No space left on device")
        _write_parquet(table, file)

    monkeypatch.setattr(results, "_write_parquet", fail_one)
    with pytest.raises(OutputError, match=f"cannot write .*/{name}.parquet: No space left on device"):
        other.to_parquet(tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_a_save_that_fails_leaves_the_earlier_save_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`save` writes a run's summary, scenario, tables and capture together:
    a table that fails to encode leaves every file of the earlier save as
    it was, its summary.json included (it used to be replaced first, and
    sat beside the earlier run's tables)."""
    import aqmlab.results as results
    from aqmlab._io import OutputError
    from aqmlab.columns import _write_parquet

    aqmlab.run(tiny()).save(tmp_path, plots=False, report=False)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert {"summary.json", "scenario.toml", "flows.parquet"} <= set(before)
    other = aqmlab.run(tiny(), seed=9)
    assert other.summary_json().encode() != before["summary.json"]

    def fail_flows(table: object, file: object) -> None:
        if table is other._arrow["flows"]:
            raise OSError(28, "No space left on device")
        _write_parquet(table, file)

    monkeypatch.setattr(results, "_write_parquet", fail_flows)
    with pytest.raises(OutputError, match="cannot write .*/flows.parquet: No space left on device"):
        other.save(tmp_path, plots=False, report=False)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_a_directory_in_a_file_s_place_fails_before_any_rename(tmp_path: Path) -> None:
    """A file that cannot be replaced (a directory in its place) is one
    OutputError naming it, raised before any file is renamed: an earlier
    save stays whole, and no temporary file is left."""
    from aqmlab._io import OutputError

    aqmlab.run(tiny()).save(tmp_path, plots=False, report=False)
    (tmp_path / "queue_ts.parquet").unlink()
    (tmp_path / "queue_ts.parquet").mkdir()
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    with pytest.raises(OutputError, match="cannot write .*/queue_ts.parquet: a directory is in its place"):
        aqmlab.run(tiny(), seed=9).save(tmp_path, plots=False, report=False)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before


def test_a_rename_that_fails_leaves_no_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rename that fails partway is one OutputError naming its file; the
    temporary files of those not yet renamed are all removed."""
    import aqmlab._io as io_module
    from aqmlab._io import OutputError

    r = aqmlab.run(tiny())
    real_replace = os.replace

    def replace(src: object, dst: object) -> None:
        if str(dst).endswith("queue_ts.parquet"):
            raise OSError(5, "Input/output error")
        real_replace(src, dst)

    monkeypatch.setattr(io_module.os, "replace", replace)
    with pytest.raises(OutputError, match="cannot write .*/queue_ts.parquet: Input/output error"):
        r.to_parquet(tmp_path)
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert (tmp_path / "flows.parquet").is_file()  # renamed before it


def test_parquet_files_dictionary_encode_text_only_and_compress_with_zstd(tmp_path: Path) -> None:
    """The writer's settings (``columns._parquet_options``): text columns
    dictionary-encoded, numbers plain, every column zstd; the files read
    back as the tables."""
    import pyarrow.parquet as pq

    r = aqmlab.run(tiny())
    for p in r.to_parquet(tmp_path):
        meta = pq.ParquetFile(p).metadata
        table = r._arrow[p.stem]
        for i, field in enumerate(table.schema):
            for g in range(meta.num_row_groups):
                col = meta.row_group(g).column(i)
                assert col.compression == "ZSTD", (p.name, field.name)
                dictionary = any("DICT" in e for e in col.encodings)
                if table.num_rows:  # an empty column writes no dictionary
                    assert dictionary == ("string" in str(field.type)), (p.name, field.name, col.encodings)
        pd.testing.assert_frame_equal(pq.read_table(p).to_pandas(), table.to_pandas())  # NaN equal to NaN


def test_load_reads_tables_written_by_pandas(tmp_path: Path) -> None:
    """Results saved before the Arrow writer (DataFrame.to_parquet) load the same."""
    r = aqmlab.run(tiny())
    r.save(tmp_path / "o", plots=False, report=False)
    for name, df in r.tables.items():
        df.to_parquet(tmp_path / "o" / f"{name}.parquet", index=False)
    back = Result.load(tmp_path / "o")
    for name, df in r.tables.items():
        pd.testing.assert_frame_equal(back.tables[name], df)


def test_plot_names_known_without_matplotlib_are_the_plots() -> None:
    from aqmlab.plots import PLOTS
    from aqmlab.results import PLOT_NAMES

    assert tuple(PLOTS) == PLOT_NAMES


def test_importing_plots_leaves_the_callers_matplotlib_backend_alone() -> None:
    """Notebooks choose their backend (inline); only the CLI picks Agg."""
    import subprocess
    import sys

    code = ("import matplotlib; matplotlib.use('svg'); import aqmlab.plots, aqmlab.validation.report; "
            "print(matplotlib.get_backend())")  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "svg"


def test_goodput_intervals_add_up_to_the_goodput_and_follow_the_flow_series() -> None:
    """metrics.goodput_interval: whole intervals from the end of warm-up; with
    flows active all the window, their mean is the flows' summed goodput, and
    each one is the flow table's delivered bytes differenced (the same time
    series the plots use)."""
    r = aqmlab.run({"duration": "12s", "warmup": "2s", "bottleneck": {"rate": "10Mbps", "aqm": "codel"},
                    "flows": [{"cc": "reno", "count": 2, "rtt": "40ms"}],
                    "metrics": {"interval": "500ms", "goodput_interval": "5s"}})  # fmt: skip
    gi = r.summary["goodput_intervals"]
    assert gi["interval_s"] == 5.0 and len(gi["total_bps"]) == 2
    total = sum(f["goodput_bps"] for f in r.summary["flows"])
    assert sum(gi["total_bps"]) / 2 == pytest.approx(total, rel=1e-9)
    ts = r.timeseries

    def at(t_s: int) -> int:
        return int(ts[ts["t_ns"] == t_s * 1_000_000_000]["delivered_bytes"].sum())

    assert gi["total_bps"][1] == pytest.approx((at(12) - at(7)) * 8 / 5, rel=1e-9)
    assert "goodput_intervals" not in aqmlab.run(tiny()).summary
