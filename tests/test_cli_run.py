"""`aqmlab run` end to end on every bundled example: files, summary.json
contract, sane figures, plots and a self-contained report; determinism; the
light default (no plots, no pandas) and `aqmlab report` on a saved run."""

from __future__ import annotations

import html
import json
import re
import struct
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from aqmlab.results import TABLES, Result
from conftest import EXAMPLES, SCENARIO_EXAMPLES, cli

NUM = (int, float)


def check_summary_contract(s: dict[str, Any]) -> None:
    """The documented summary.json contract (docs/results.md)."""
    assert isinstance(s["version"], str) and s["version"]
    assert s["schema"] == 1
    sc = s["scenario"]
    assert isinstance(sc, dict) and "duration" in sc and "tcp" in sc and "metrics" in sc  # normalised
    for k in ("wall_s", "events", "bottleneck_packets"):
        assert isinstance(s["perf"][k], NUM) and s["perf"][k] >= 0
    assert isinstance(s["flows"], list) and s["flows"]
    for f in s["flows"]:
        assert isinstance(f["id"], int)
        assert isinstance(f["cc"], str) and f["ecn"] in ("off", "classic", "l4s", "dctcp")
        assert isinstance(f["rtt_ms"], NUM) and f["rtt_ms"] > 0
        assert f["goodput_bps"] is None or isinstance(f["goodput_bps"], NUM)
        assert isinstance(f["bytes"], int) and isinstance(f["retransmits"], int)
        assert f["fct_s"] is None or isinstance(f["fct_s"], NUM)
    assert isinstance(s["queues"], list) and s["queues"]
    for q in s["queues"]:
        assert isinstance(q["name"], str) and isinstance(q["aqm"], str)
        for stats in [q, *q["subqueues"].values()]:
            soj = stats["sojourn_ms"]
            if soj is not None:
                for p in ("mean", "p50", "p90", "p99"):
                    assert isinstance(soj[p], NUM) and soj[p] >= 0
            assert isinstance(stats["drops"], int) and isinstance(stats["marks"], int)
        assert isinstance(q["utilization"], NUM)
        assert isinstance(q["subqueues"], dict)
    check_fairness_contract(s)


def check_fairness_contract(s: dict[str, Any]) -> None:
    """`fairness` (docs/results.md; engine: metrics/summary.rs): `jain` always
    (null when no unbounded TCP flow was active in the window);
    `l4s_classic_ratio`, the mean goodput of L4S flows over that of the
    others, only when both kinds exist (and the others' mean is positive)."""
    fair = s["fairness"]
    groups = s["scenario"].get("flows", [])
    # Unbounded TCP flows of [[flows]] active in the window (an unbounded
    # flow's goodput is null exactly when it was not active in it).
    long = [
        f for f in s["flows"]
        if f["cc"] not in ("udp", "qcn", "probe") and "size" not in groups[f["group"]] and f["goodput_bps"] is not None
    ]
    assert "jain" in fair
    if long and any(f["goodput_bps"] > 0 for f in long):
        assert isinstance(fair["jain"], NUM) and 0 < fair["jain"] <= 1 + 1e-12
    else:
        assert fair["jain"] is None
    l4s = [f["goodput_bps"] for f in long if f["ecn"] == "l4s"]
    other = [f["goodput_bps"] for f in long if f["ecn"] != "l4s"]
    if l4s and other and sum(other) > 0:
        ratio = fair.get("l4s_classic_ratio")
        assert isinstance(ratio, NUM) and ratio >= 0, fair
        assert ratio == pytest.approx((sum(l4s) / len(l4s)) / (sum(other) / len(other)), rel=1e-9)
    else:
        assert "l4s_classic_ratio" not in fair, fair


def check_sane(s: dict[str, Any]) -> None:
    sc = s["scenario"]
    rates = [_bps(sc["bottleneck"]["rate"])] if "bottleneck" in sc else [_bps(link["rate"]) for link in sc["topology"]["links"] if "rate" in link]
    top = max(rates)
    for q in s["queues"]:
        if q["arrivals"] > 0:
            assert 0 < q["utilization"] <= 1, q
        soj = q["sojourn_ms"]
        if soj:
            assert soj["p10"] <= soj["p50"] <= soj["p90"] <= soj["p99"] <= soj["max"] + 1e-9
        assert 0 <= q["drop_rate"] <= 1 and 0 <= q["mark_rate"] <= 1
    for f in s["flows"]:
        if f["goodput_bps"] is not None:
            assert 0 < f["goodput_bps"] <= top, f
    total = sum(f["goodput_bps"] or 0 for f in s["flows"] if f["fct_s"] is None)
    assert total <= top * 1.001
    if s["fairness"]["jain"] is not None:
        assert 0 < s["fairness"]["jain"] <= 1 + 1e-12


def _bps(text: str) -> float:
    m = re.fullmatch(r"([0-9.]+)(bps|kbps|Kbps|Mbps|Gbps)", text)
    assert m, text
    return float(m.group(1)) * {"bps": 1, "kbps": 1e3, "Kbps": 1e3, "Mbps": 1e6, "Gbps": 1e9}[m.group(2)]


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    w, h = struct.unpack(">II", data[16:24])
    return w, h


@pytest.mark.parametrize("example", SCENARIO_EXAMPLES, ids=lambda p: p.stem)
def test_run_example_end_to_end(example: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = cli("run", str(example), "--out", str(out), "--report", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    # Terminal summary: flows, queues, Jain's index.
    assert "Flows" in proc.stdout and "Queues" in proc.stdout and "Jain's fairness index" in proc.stdout
    assert "simulated" in proc.stderr  # the progress bar, in simulated seconds

    s = json.loads((out / "summary.json").read_text())
    check_summary_contract(s)
    check_sane(s)
    if example.stem == "coexistence":  # DCTCP (L4S) next to CUBIC: the ratio must be there
        assert s["fairness"]["l4s_classic_ratio"] > 0
    name = tomllib.loads(example.read_text()).get("name")
    assert s["scenario"]["name"] == name
    assert tomllib.loads((out / "scenario.toml").read_text())["name"] == name

    for t in TABLES:
        df = pd.read_parquet(out / f"{t}.parquet")
        assert isinstance(df, pd.DataFrame)
    flows = pd.read_parquet(out / "flows.parquet")
    assert len(flows) >= len(s["flows"])
    ts = pd.read_parquet(out / "flow_ts.parquet")
    assert {"t_s", "flow", "goodput_bps", "cwnd_segs", "srtt_ms"} <= set(ts.columns) and len(ts) > 0

    plots = {p.stem for p in (out / "plots").glob("*.png")}
    assert {"goodput", "sojourn_cdf", "probabilities"} <= plots
    # cwnd for window-based (TCP) flows, rate for rate-based ones (UDP, QCN).
    assert ("cwnd" in plots) == (ts["cwnd_segs"] > 0).any()
    assert ("rate" in plots) == (ts["rate_bps"] > 0).any()
    finite = any(f["fct_s"] is not None for f in s["flows"]) or s["workload_flows"]["completed"] > 0
    assert ("fct" in plots) == finite
    for p in (out / "plots").glob("*.png"):
        w, h = png_size(p)
        assert w >= 600 and h >= 300 and p.stat().st_size > 5_000, p

    report = (out / "report.html").read_text()
    assert report.count("data:image/png;base64,") == len(plots)
    assert not re.search(r"""(src|href)=["']https?:""", report), "report must be self-contained"
    assert "<pre>" in report and f'name = "{name}"' in html.unescape(report)  # the scenario, inline
    assert "Jain" in report


def test_web_workload_has_an_fct_plot(tmp_path: Path) -> None:
    out = tmp_path / "o"
    proc = cli("run", str(EXAMPLES / "web-workload.toml"), "--out", str(out), "--plots")
    assert proc.returncode == 0, proc.stderr
    assert (out / "plots" / "fct.png").exists() and not (out / "report.html").exists()
    s = json.loads((out / "summary.json").read_text())
    assert s["workload_flows"]["completed"] > 10
    assert sum(f["fct_s"] is not None for f in s["flows"]) == 3


def test_same_seed_gives_identical_summary_except_wall_time(tmp_path: Path) -> None:
    ex = SCENARIO_EXAMPLES[0]
    texts = []
    for i in range(2):
        proc = cli("run", str(ex), "--out", str(tmp_path / f"o{i}"), "-q")
        assert proc.returncode == 0, proc.stderr
        texts.append((tmp_path / f"o{i}" / "summary.json").read_text())
    a, b = (re.sub(r'"wall_s": [0-9.e+-]+', '"wall_s": 0', t) for t in texts)
    assert a == b  # byte-identical but for perf.wall_s
    assert json.loads(texts[0])["perf"]["wall_s"] > 0
    # Another seed changes the run (the example has random start jitter).
    proc = cli("run", str(ex), "--out", str(tmp_path / "o2"), "--seed", "7", "-q")
    c = re.sub(r'"wall_s": [0-9.e+-]+', '"wall_s": 0', (tmp_path / "o2" / "summary.json").read_text())
    assert proc.returncode == 0 and c != a and json.loads(c)["seed"] == 7


def test_rerun_replaces_results_atomically(tmp_path: Path) -> None:
    ex = SCENARIO_EXAMPLES[0]
    out = tmp_path / "o"
    for _ in range(2):
        assert cli("run", str(ex), "--out", str(out), "-q").returncode == 0
    leftovers = [p.name for p in out.rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []


def test_default_run_writes_no_plots_and_says_how_to_get_them(tmp_path: Path) -> None:
    out = tmp_path / "o"
    proc = cli("run", str(EXAMPLES / "dumbbell.toml"), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert {p.name for p in out.iterdir()} == {"summary.json", "scenario.toml"} | {f"{t}.parquet" for t in TABLES}
    assert f"aqmlab report {out}" in proc.stderr.splitlines()[-1]


def test_run_path_imports_neither_pandas_nor_matplotlib(tmp_path: Path) -> None:
    """The heavy modules stay off `aqmlab run` (plots and DataFrames are on request)."""
    code = (
        "import sys\n"
        "from aqmlab.cli import main\n"
        f"assert main(['run', {str(EXAMPLES / 'dumbbell.toml')!r}, '--out', {str(tmp_path / 'o')!r}]) == 0\n"
        # aqmlab.sweep itself loads with the package (aqmlab.sweep is a function);
        # its heavy parts, pandas and the process pool (loky), must stay off.
        "heavy = ('pandas', 'matplotlib', 'pyarrow.compute', 'loky', 'aqmlab.plots')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"
    assert (tmp_path / "o" / "flows.parquet").exists()


def test_report_renders_plots_and_report_of_a_saved_run(tmp_path: Path) -> None:
    out = tmp_path / "o"
    assert cli("run", str(EXAMPLES / "dumbbell.toml"), "--out", str(out), "-q").returncode == 0
    assert not (out / "plots").exists() and not (out / "report.html").exists()
    proc = cli("report", str(out))
    assert proc.returncode == 0, proc.stderr
    plots = {p.stem for p in (out / "plots").glob("*.png")}
    assert plots == {"goodput", "sojourn_cdf", "cwnd", "probabilities", "rtt_time", "queue_delay", "rtt_cdf", "rtt_box"}
    report = (out / "report.html").read_text()
    assert report.count("data:image/png;base64,") == len(plots) and "Jain" in report
    assert 'name = "dumbbell"' in html.unescape(report)
    # The same bytes as a report written by `run --report` (the run is deterministic),
    # but for the engine's wall time, which the report shows, and the listed file
    # sizes (summary.json holds the wall time, so its size can differ by a digit).
    direct = tmp_path / "direct"
    assert cli("run", str(EXAMPLES / "dumbbell.toml"), "--out", str(direct), "--report", "-q").returncode == 0
    varying = re.compile(r"in [0-9.,e+-]+ s wall time|\([0-9.]+ (?:B|kB|MB)\)")
    assert varying.sub("", report) == varying.sub("", (direct / "report.html").read_text())


def test_report_of_a_directory_without_a_run_is_one_line_exit_2(tmp_path: Path) -> None:
    proc = cli("report", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"aqmlab: error: {tmp_path}: no summary.json or sweep.json here (give a directory written by aqmlab run or aqmlab sweep)"]


def test_a_run_without_plots_removes_those_of_an_earlier_run(tmp_path: Path) -> None:
    out = tmp_path / "o"
    assert cli("run", str(EXAMPLES / "web-workload.toml"), "--out", str(out), "--report", "-q").returncode == 0
    assert (out / "report.html").exists() and (out / "plots" / "fct.png").exists()
    assert cli("run", str(EXAMPLES / "dumbbell.toml"), "--out", str(out), "--plots", "-q").returncode == 0
    assert not (out / "report.html").exists() and not (out / "plots" / "fct.png").exists()  # would show the other run
    assert (out / "plots" / "goodput.png").exists()
    assert cli("run", str(EXAMPLES / "dumbbell.toml"), "--out", str(out), "-q").returncode == 0
    assert list((out / "plots").glob("*.png")) == []


def test_parquet_tables_equal_the_result_tables(tmp_path: Path) -> None:
    """The Arrow writer's files give exactly the DataFrames of the Result
    (columns, dtypes, values), and read back by Result.load the same."""
    import aqmlab
    from aqmlab.scenario import to_dict

    tree = to_dict(EXAMPLES / "web-workload.toml")  # finite flows: null size_bytes / fct_ns for the others
    tree["metrics"] = {"sojourn_samples_every": 20}
    tree["flows"].append({"cc": "probe", "rtt": "40ms"})  # a latency probe: rows in probe_rtt
    r = aqmlab.run(tree)
    r.save(tmp_path / "o", plots=False, report=False)
    back = Result.load(tmp_path / "o")
    assert set(r.tables) == set(TABLES)
    for name in TABLES:
        df = r.tables[name]
        assert len(df) > 0, name
        pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "o" / f"{name}.parquet"), df)
        pd.testing.assert_frame_equal(back.tables[name], df)
    assert str(r.flows["fct_ns"].dtype) == "Int64" and r.flows["fct_ns"].isna().any() and r.flows["fct_ns"].notna().any()


def _tiny_toml(tmp_path: Path) -> Path:
    import tomli_w
    from conftest import tiny

    f = tmp_path / "tiny.toml"
    f.write_text(tomli_w.dumps(tiny()))
    return f


def test_run_into_a_closed_pipe_saves_and_exits_0(tmp_path: Path) -> None:
    """`aqmlab run X | head`: the reader is gone before anything is printed.
    The run is saved first, and a closed stdout is not an error."""
    import os

    f = _tiny_toml(tmp_path)
    read_end, write_end = os.pipe()
    os.close(read_end)  # every write to stdout now fails with EPIPE
    proc = subprocess.run([sys.executable, "-m", "aqmlab", "run", str(f), "--out", str(tmp_path / "o")],
                          stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120)  # fmt: skip
    os.close(write_end)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["flows"]


def test_piped_output_does_not_hard_wrap_the_suggested_command(tmp_path: Path) -> None:
    out = tmp_path / ("a-rather-long-output-directory-name-" * 4 + "end")
    proc = cli("run", str(_tiny_toml(tmp_path)), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert f"run: aqmlab report {out}" in proc.stderr.replace("'", "")


def test_debug_mode_keeps_the_exit_code(tmp_path: Path) -> None:
    f = tmp_path / "bad.toml"
    f.write_text('duration = "1s"\n[bottleneck]\nrate = "fast"\n')
    plain = cli("validate", str(f))
    debug = cli("validate", str(f), env={"AQMLAB_DEBUG": "1"})
    assert plain.returncode == 2 and debug.returncode == 2
    assert "Traceback" in debug.stderr and "Traceback" not in plain.stderr


def test_quiet_and_json_on_run_validate_and_sweep(tmp_path: Path) -> None:
    f = _tiny_toml(tmp_path)
    q = cli("run", str(f), "--out", str(tmp_path / "q"), "-q")
    assert q.returncode == 0 and q.stdout == "" and q.stderr == ""
    j = cli("run", str(f), "--out", str(tmp_path / "j"), "--json")
    assert j.returncode == 0
    assert json.loads(j.stdout) == json.loads((tmp_path / "j" / "summary.json").read_text())
    v = cli("validate", str(f), "-q")
    assert v.returncode == 0 and v.stdout == ""
    vj = json.loads(cli("validate", str(f), "--json").stdout)
    assert vj["bottleneck"]["aqm"] == "fifo" and vj["duration"] == "2s"
    sw = tmp_path / "s.toml"
    sw.write_text(f'[sweep]\nname = "s"\nbase = "{f.name}"\nseeds = 2\n[grid]\n"bottleneck.buffer" = ["20ms", "60ms"]\n')
    sq = cli("sweep", str(sw), "-q", "--jobs", "1", "--out", str(tmp_path / "sq"), cwd=tmp_path)
    assert sq.returncode == 0 and sq.stdout == "" and sq.stderr == ""
    sj = cli("sweep", str(sw), "--json", "--jobs", "1", "--out", str(tmp_path / "sj"), cwd=tmp_path)
    doc = json.loads(sj.stdout)
    assert (doc["total"], doc["failed"]) == (4, 0) and {"metric", "mean", "ci95_lo"} <= set(doc["stats"][0])


def test_publication_formats_sizes_and_readable_colours(tmp_path: Path) -> None:
    import aqmlab
    import matplotlib.pyplot as plt
    from aqmlab.plots import goodput, parse_size_in
    from conftest import tiny

    f = _tiny_toml(tmp_path)
    out = tmp_path / "o"
    proc = cli("run", str(f), "--out", str(out), "--plots", "--format", "pdf,svg", "--size", "3.5x2.5in", "--dpi", "200")
    assert proc.returncode == 0, proc.stderr
    plots = out / "plots"
    assert (plots / "goodput.pdf").read_bytes().startswith(b"%PDF")
    assert b"<svg" in (plots / "goodput.svg").read_bytes()
    from PIL import Image

    with Image.open(plots / "goodput.png") as im:  # 3.5 x 2.5 in at 200 dpi
        assert abs(im.size[0] - 700) <= 2 and abs(im.size[1] - 500) <= 2
    # A later save without those formats removes them (never two runs mixed).
    assert cli("report", str(out)).returncode == 0
    assert not (plots / "goodput.pdf").exists() and (plots / "goodput.png").exists()
    # Bad values: one line, exit 2, and nothing simulated.
    bad = cli("run", str(f), "--out", str(tmp_path / "b"), "--format", "jpeg")
    assert bad.returncode == 2 and "--format: 'jpeg': allowed png, pdf, svg" in bad.stderr
    assert not (tmp_path / "b").exists()
    assert parse_size_in("9x6cm") == pytest.approx((9 / 2.54, 6 / 2.54))
    # 12 flows: 12 distinct colours (the default cycle repeats after 10),
    # and the plot draws into the caller's axes.
    r = aqmlab.run(tiny(flows=[{"cc": "cubic", "rtt": "20ms", "count": 12}]))
    fig, ax = plt.subplots()
    assert goodput(r, ax=ax) is fig
    colours = {tuple(line.get_color()) for line in ax.get_lines()}
    assert len(ax.get_lines()) == 12 and len(colours) == 12
    plt.close(fig)


def test_registry_quiet_lists_names_for_scripts(tmp_path: Path) -> None:
    import aqmlab

    proc = cli("registry", "-q", cwd=tmp_path)
    assert proc.returncode == 0
    reg = aqmlab.registry()
    want = [f"aqm {n}" for n in reg["aqm"]] + [f"cc {n}" for n in reg["cc"]]
    assert proc.stdout.splitlines() == want


TREE = """
name = "tree"
duration = "6ms"
warmup = "1ms"
[topology]
fat_tree = { k = 4, rate = "1Gbps", delay = "1us", aqm = "step", params = { threshold = "5pkt" } }
[[flows]]
cc = "dctcp"
pattern = "permutation"
"""


def test_a_fat_tree_lists_the_twenty_queues_with_the_highest_p99_unless_asked_for_all(tmp_path: Path) -> None:
    f = tmp_path / "tree.toml"
    f.write_text(TREE)
    p = cli("run", str(f), "--out", str(tmp_path / "o"))
    assert p.returncode == 0, p.stderr
    assert "Queues (20 of 96: the highest p99 sojourn; --all-queues for each)" in p.stdout
    shown = [ln.split("│")[1].strip() for ln in p.stdout.splitlines() if ln.startswith("│ ") and "step" in ln]
    queues = json.loads((tmp_path / "o" / "summary.json").read_text())["queues"]
    p99 = {q["name"]: (q["sojourn_ms"] or {}).get("p99") or -1.0 for q in queues}
    assert len(shown) == 20 and min(p99[n] for n in shown) >= sorted(p99.values())[-20]
    p = cli("run", str(f), "--out", str(tmp_path / "o"), "--all-queues")
    assert p.returncode == 0 and "Queues\n" in p.stdout
    assert sum(1 for ln in p.stdout.splitlines() if ln.startswith("│ ") and "step" in ln) == 96
