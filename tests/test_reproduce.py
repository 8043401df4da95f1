"""`aqmlab reproduce`: the registry, clear messages for what cannot run yet,
the claim/verdict framework, and each seed experiment once its AQMs exist."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from aqmlab.reproduce import (
    EXPERIMENTS,
    Case,
    Claim,
    Experiment,
    Runs,
    missing_requirements,
    reproduce,
    status,
)
from aqmlab.judging import Band, Tolerance
from aqmlab.reproduce.framework import ExperimentUnavailable, check_available, total_goodput
from conftest import cli


def test_list_names_every_experiment_with_its_status(tmp_path: Path) -> None:
    proc = cli("reproduce", "--list", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for name in ("dualq-coexistence", "aqm-kids", "abe", "qcn-hotspot", "vdq-csaqm"):
        assert name in proc.stdout
    pending = [n for n, e in EXPERIMENTS.items() if e.pending]
    assert proc.stdout.count("not yet available") == len(pending)
    for n in pending:
        assert status(EXPERIMENTS[n]).startswith("not yet available")


def test_every_seed_experiment_is_available() -> None:
    assert {n: status(e) for n, e in EXPERIMENTS.items()} == {n: "available" for n in EXPERIMENTS}


def test_a_pending_experiment_is_refused_with_a_clear_message() -> None:
    class Later(Experiment):
        name = "later"
        title = "an experiment whose engine support is still missing"
        source = "none"
        pending = "the engine has no such AQM yet"

    assert status(Later()) == "not yet available (the engine has no such AQM yet)"
    with pytest.raises(ExperimentUnavailable, match=r"^later is not yet available: the engine has no such AQM yet$"):
        check_available(Later())


def test_unknown_experiment_suggests_the_name(tmp_path: Path) -> None:
    proc = cli("reproduce", "dualq", cwd=tmp_path)
    assert proc.returncode == 2 and "did you mean 'dualq-coexistence'?" in proc.stderr and "Traceback" not in proc.stderr


ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", ["dualq-coexistence", "aqm-kids", "abe", "qcn-hotspot", "vdq-csaqm"])
def test_quick_verdicts_are_the_ones_the_docs_report(name: str, tmp_path: Path) -> None:
    """Quick mode judges every claim on every case in its scope, measures
    every case, and gets exactly the verdicts docs/results/<name>.md records
    (an honest FAIL stays recorded as a FAIL; a change either way must
    update the docs)."""
    from aqmlab.reproduce.docgen import recorded_quick_verdicts

    exp = EXPERIMENTS[name]
    out = tmp_path / "out"
    proc = cli("reproduce", name, "--quick", "--out", str(out), "--cache", str(tmp_path / "c"), cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "claims.json").read_text())
    assert doc["experiment"] == name and doc["quick"] is True and doc["version"]
    assert len(doc["claims"]) == len(exp.claims())
    for c in doc["claims"]:
        assert all(cs["measured"] is not None for cs in c["cases"]), c  # every case measurable on this engine
        assert c["passed"] == sum(cs["verdict"] == "PASS" for cs in c["cases"]) and c["total"] == len(c["cases"])
        assert c["band"] and c["source"] and c["basis"] in ("seed", "theory", "qualitative")
    got = [c["verdict"] for c in doc["claims"]]
    recorded = recorded_quick_verdicts((ROOT / "docs" / "results" / f"{name}.md").read_text())
    assert got == recorded, f"quick verdicts {got} differ from docs/results/{name}.md {recorded}"
    assert exp.title in proc.stdout
    assert re.findall(r"│ (PASS|FAIL|DEVIATES-KNOWN|N/A) +│", proc.stdout) == got
    assert (out / "report.html").exists() and list((out / "plots").glob("*.png"))
    for label in exp.showcase(True):
        assert (out / "cases" / label.replace("/", "_") / "report.html").exists(), label


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_docs_tolerance_table_is_generated_from_the_code(name: str) -> None:
    """A tolerance cannot change in the code without the docs' table changing."""
    from aqmlab.reproduce.docgen import TOLERANCES, current, tolerance_block

    text = (ROOT / "docs" / "results" / f"{name}.md").read_text()
    assert current(text, TOLERANCES) == tolerance_block(EXPERIMENTS[name]), (
        f"docs/results/{name}.md is stale: run python -m aqmlab.reproduce.docgen {name} RUN_DIR"
    )


def test_reproduce_json_and_quiet(tmp_path: Path) -> None:
    args = ["reproduce", "abe", "--quick", "--cache", str(tmp_path / "c")]
    j = cli(*args, "--json", "--out", str(tmp_path / "j"), cwd=tmp_path)
    assert j.returncode == 0 and json.loads(j.stdout) == json.loads((tmp_path / "j" / "claims.json").read_text())
    q = cli(*args, "-q", "--out", str(tmp_path / "q"), cwd=tmp_path)
    assert q.returncode == 0 and q.stdout == "" and q.stderr == "" and (tmp_path / "q" / "claims.json").exists()


def test_quick_mode_covers_the_corners_of_the_dualq_grid_and_says_what_it_skips() -> None:
    exp = EXPERIMENTS["dualq-coexistence"]
    mixes = {(c.tags["n_l4s"], c.tags["n_classic"]) for c in exp.cases(True) if "n_l4s" in c.tags}
    assert mixes == {(1, 1), (1, 10), (10, 1), (10, 10)}
    assert exp.quick_skips() == [exp.quick_skips()[0]] and exp.quick_skips()[0].startswith("576 of 601")


class Toy(Experiment):
    """Three cases on AQMs that exist today: FIFO, a 5-packet and a 3-packet step."""

    name = "toy"
    title = "Toy: step marking keeps the queue shorter than a FIFO"
    source = "this test"
    description = "DCTCP through a FIFO or a step marker."
    requires_aqm = ("fifo", "step")
    requires_cc = ("dctcp",)

    def cases(self, quick: bool) -> list[Case]:
        def sc(aqm: str, k: str = "5pkt") -> dict[str, Any]:
            return {"duration": "2s", "warmup": "500ms", "bottleneck": {"rate": "10Mbps", "aqm": aqm, "buffer": "50ms",
                                                                       "params": {"threshold": k} if aqm == "step" else {}},
                    "flows": [{"cc": "dctcp", "rtt": "10ms", "count": 2, "start_jitter": "10ms"}]}  # fmt: skip

        return [Case("fifo", sc("fifo"), {"aqm": "fifo"}), Case("step", sc("step"), {"aqm": "step", "k": 5}),
                Case("step3", sc("step", "3pkt"), {"aqm": "step", "k": 3})]  # fmt: skip

    def seeds(self, quick: bool) -> list[int]:
        return [1, 2]

    def showcase(self, quick: bool) -> list[str]:
        return ["step"]

    def claims(self) -> list[Claim]:
        p99 = lambda s: s["queues"][0]["sojourn_ms"]["p99"]  # noqa: E731
        t = lambda band: Tolerance(band, "theory", "this test")  # noqa: E731
        return [
            Claim("5-packet step: p99 below 10 ms", "< 10 ms", t(Band.at_most(10)), lambda r: r.per_case(p99, k=5), "ms"),
            # Over three cases, one (the FIFO, ~50 ms) fails: the claim fails.
            Claim("every queue's p99 below 10 ms", "< 10 ms", t(Band.at_most(10)), lambda r: r.per_case(p99), "ms"),
            Claim("a figure that cannot be measured", "?", t(Band.at_most(1)), lambda r: [({"x": 1}, None)]),
            Claim("goodput per case", "> 0", t(Band.at_least(1.0)), lambda r: r.per_case(total_goodput), "bit/s"),
        ]  # fmt: skip


def test_framework_judges_each_case_and_writes_outputs(tmp_path: Path) -> None:
    res = reproduce(Toy(), quick=True, out=tmp_path / "o", jobs=1, cache_dir=tmp_path / "c")
    assert [j.verdict.value for j in res.judgements] == ["PASS", "FAIL", "N/A", "PASS"]
    every = res.judgements[1]
    assert (every.passed, every.total) == (2, 3) and every.worst is not None and every.worst.tags == {"aqm": "fifo"}
    # Two distinct seeds per case: each figure carries its replications'
    # interval, unless both seeds gave the same figure (a saturated link's
    # goodput can be): then no interval and a note saying so.
    for c in res.judgements[3].cases:
        assert c.seeds == (1, 2)
        assert (c.interval is None) == ("identical" in c.extra.get("note", "")), c
    assert res.counts == {"cached": 0, "ran": 6, "failed": 0}  # the showcase run is reused, not repeated
    assert isinstance(res.runs, Runs) and len(res.runs.summaries("fifo")) == 2
    doc = json.loads((tmp_path / "o" / "claims.json").read_text())
    assert [c["verdict"] for c in doc["claims"]] == ["PASS", "FAIL", "N/A", "PASS"]
    assert doc["claims"][1]["worst"]["tags"] == {"aqm": "fifo"} and len(doc["claims"][1]["cases"]) == 3
    runs = pd.read_parquet(tmp_path / "o" / "runs.parquet")
    assert len(runs) == 6 and set(runs["case"]) == {"fifo", "step", "step3"}
    report = (tmp_path / "o" / "report.html").read_text()
    assert "every queue&#x27;s p99 below 10 ms" in report and "2 of 3 cases" in report and "FAIL" in report
    assert (tmp_path / "o" / "cases" / "step" / "report.html").exists()
    again = reproduce(Toy(), quick=True, out=tmp_path / "o", jobs=1, cache_dir=tmp_path / "c")
    assert again.counts == {"cached": 5, "ran": 1, "failed": 0}  # only the showcase re-runs (for its tables)


def test_copies_are_not_replications() -> None:
    class Copies(Toy):
        def seeds(self, quick: bool) -> list[int]:
            return [1, 1, 1]

    with pytest.raises(ValueError, match="distinct seeds"):
        reproduce(Copies(), quick=True, cache_dir=None)


def test_missing_aqm_is_a_clear_error() -> None:
    class Needs(Toy):
        name = "needs"
        requires_aqm = ("fifo", "no-such-aqm")

    with pytest.raises(ExperimentUnavailable, match="needs AQM 'no-such-aqm', which this engine does not have yet"):
        reproduce(Needs(), quick=True)


def test_every_available_experiment_builds_valid_scenarios() -> None:
    """Scenario builders are checked by the engine for every available experiment, quick and full."""
    from aqmlab.scenario import validate

    for exp in EXPERIMENTS.values():
        if exp.pending or missing_requirements(exp):
            continue
        for quick in (True, False):
            cases = exp.cases(quick)
            assert len({c.label for c in cases}) == len(cases)
            for c in cases:
                validate(c.scenario)


def test_qcn_hotspot_quick_judges_the_hotspot_depths_and_the_grid_corners(tmp_path: Path) -> None:
    """Seed 003: the hotspot claims per depth (quick keeps 0.5 and 2 Gbit/s,
    the extremes), the scalability claims per (N, RTT) on the grid's corners,
    fairness only at 50-100 sources; the figures and their tables come from
    the showcased runs, and the RP stage shares are shares."""
    from aqmlab.reproduce.qcn import GRID_N, GRID_RTT_US, Q_EQ

    exp = EXPERIMENTS["qcn-hotspot"]
    quick, full = {c.label for c in exp.cases(True)}, {c.label for c in exp.cases(False)}
    assert quick < full
    corners = {f"grid/n{n}/rtt{r}us" for n in (GRID_N[0], GRID_N[-1]) for r in (GRID_RTT_US[0], GRID_RTT_US[-1])}
    assert corners <= quick and not any("/n50/" in lbl or "1.0g/" in lbl for lbl in quick)
    skips = " ".join(exp.quick_skips())
    assert "1 Gbit/s" in skips and "N=50/40 µs" in skips and "11 of 15 grid points" in skips
    res = reproduce(exp, quick=True, out=tmp_path / "o", jobs=1, cache_dir=tmp_path / "c")
    by = {j.claim: j for j in res.judgements}
    for text, j in by.items():
        assert all(c.measured is not None for c in j.cases), text
        if text.startswith("Hotspot"):
            assert {c.tags["drop_gbps"] for c in j.cases} == {0.5, 2.0}, text
        elif text.startswith("Scalability") and "fairly" not in text:
            assert {(c.tags["n"], c.tags["rtt_us"]) for c in j.cases} == {(10, 40), (10, 400), (100, 40), (100, 400)}
    assert {c.tags["n"] for c in by["Scalability: 50-100 sources share the link fairly"].cases} == {100}
    # The queue is judged against Q_eq +- Q_eq/2 (the fluid model's fixed point, argued in docs).
    band = by["Scalability: the queue is held near Q_eq at every N and RTT"].tolerance.band
    assert (band.low, band.high) == (Q_EQ / 2, 1.5 * Q_EQ)
    plots = {p.name for p in (tmp_path / "o" / "plots").glob("*.png")}
    assert plots == {"rate.png", "zoom.png", "queue.png", "grid_queue.png", "grid_rate.png", "grid_stages.png", "grid_w.png"}
    tables = {p.stem: p.read_text() for p in (tmp_path / "o" / "tables").glob("*.md")}
    assert set(tables) == {"grid_summary", "grid_timeline", "hotspot_timeline"}
    assert len([ln for ln in tables["grid_summary"].splitlines() if ln.startswith("| 1")]) == 5  # 4 corners + w = 4
    r = res.runs.showcased["0.5g/fbhat/timeline"]
    ts = r.timeseries
    assert ts["cc"].eq("qcn").all() and ts["rate_bps"].max() <= 1.05e9
    low = ts[(ts["t_s"] > 2.5) & (ts["t_s"] <= 4.0)].groupby("t_s")["rate_bps"].sum().mean()
    assert abs(low / 0.5e9 - 1) < 0.1, low
    assert set(r.probes["probe"]) >= {"fb", "q", "fb_quantized", "cnms", "target_rate_bps", "fbhat", "stage"}
    g = res.runs.showcased["grid/n100/rtt400us"]
    st = g.probes[g.probes["probe"] == "stage"]
    assert set(st["value"].unique()) <= {0.0, 1.0, 2.0, 3.0}
    assert (st.groupby("t_s").size() == 100).all()  # every source reports its stage at every sample
    # Conservation at full utilisation: the 100 sources' mean rate is 10 G / N over 1-3 s.
    gts = g.timeseries
    mean_rate = gts[(gts["t_s"] > 1.0) & (gts["t_s"] <= 3.0)]["goodput_bps"].mean()
    assert abs(mean_rate / 1e8 - 1) < 0.05, mean_rate


def test_two_dimensional_claims_are_drawn_on_their_grid() -> None:
    """The 10 x 10 flow-mix layout of seed 000's panels: each case's value in
    its cell, failing cells outlined; one-dimensional claims get no grid."""
    import matplotlib.pyplot as plt
    from aqmlab.judging import judge
    from aqmlab.reproduce.framework import verdict_grid

    tol = Tolerance(Band.between(0.5, 2.0), "qualitative", "test")
    cases = [({"aqm": "dualpi2", "n_l4s": a, "n_classic": b}, 1.0 if (a, b) != (10, 1) else 0.44)
             for a in (1, 10) for b in (1, 10)]  # fmt: skip
    fig = verdict_grid(judge("ratio", tol, cases))
    ax = fig.axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("n_l4s", "n_classic")
    red = [p for p in ax.patches if p.get_edgecolor()[:3] == (1.0, 0.0, 0.0)]
    assert len(red) == 1 and red[0].get_xy() == (1 - 0.5, 0 - 0.5)  # n_l4s = 10 (x 1), n_classic = 1 (y 0)
    assert sorted(t.get_text() for t in ax.texts) == ["0.44", "1", "1", "1"]
    plt.close(fig)
    assert verdict_grid(judge("one-d", tol, [({"flows": n}, 1.0) for n in (1, 4)])) is None


def test_a_full_run_block_lists_every_case_as_a_grid_with_failures_marked() -> None:
    from aqmlab.reproduce.docgen import full_block

    def case(nl: int, nc: int, m: float, verdict: str) -> dict:
        return {"tags": {"aqm": "x", "n_l4s": nl, "n_classic": nc}, "measured": m, "interval95": [m - 0.1, m + 0.1],
                "seeds": [1, 2, 3], "verdict": verdict}

    cases = [case(1, 1, 1.0, "PASS"), case(1, 10, 0.4, "FAIL"), case(10, 1, 1.2, "PASS"), case(10, 10, 0.9, "PASS")]
    other = [{"tags": {"kind": "single"}, "measured": 41.6, "interval95": None, "seeds": [1], "verdict": "PASS"}]
    doc = {"experiment": "toy", "version": "0", "seeds": [1, 2, 3], "quick": False, "claims": [
        {"claim": "ratio", "verdict": "FAIL", "passed": 3, "total": 4, "unit": "×", "cases": cases,
         "worst": {"tags": cases[1]["tags"], "measured": 0.4}},
        {"claim": "single", "verdict": "PASS", "passed": 1, "total": 1, "unit": "RTTs", "cases": other,
         "worst": {"tags": other[0]["tags"], "measured": 41.6}}]}  # fmt: skip
    text = full_block(doc)
    assert text.startswith("Full run (`aqmlab reproduce toy --full`")
    assert "| 1 | 1 [0.9, 1.1] | 0.4 [0.3, 0.5] **FAIL** |" in text
    assert "| 10 | 1.2 [1.1, 1.3] | 0.9 [0.8, 1] |" in text
    assert "| kind=single | 41.6 | PASS |" in text


def test_dualq_writes_the_seed_style_figures_with_their_tables(tmp_path: Path) -> None:
    """The QSIZE CDF and PIE drop-probability slides as figures, each with the
    table of its numbers (everything a plot shows is also in a table)."""
    exp = EXPERIMENTS["dualq-coexistence"]
    assert "pie/10d10c" in exp.showcase(True)
    res = reproduce(exp, quick=True, out=tmp_path / "o", jobs=1, cache_dir=tmp_path / "c")
    out = tmp_path / "o"
    # The per-mix grid (a panel per AQM, shared axes): its table holds the
    # numbers each claim judged, and the outlined cells are the failed cases.
    grid = (out / "tables" / "ratio-grid.md").read_text()
    claims = json.loads((out / "claims.json").read_text())["claims"]
    fig = exp.figures(res.runs)["ratio-grid"]
    panels = {ax.get_title(): ax for ax in fig.axes if ax.images}
    for claim, panel in (("Curvy RED DualQ: per-flow", "curvy_red"), ("DualPI2: per-flow throughput DCTCP", "dualpi2"),
                         ("Single-queue PIE", "pie"), ("per-flow throughput Prague", "dualpi2 + prague")):  # fmt: skip
        judged = next(c for c in claims if claim in c["claim"])
        for cs in judged["cases"]:
            row = next(r for r in grid.splitlines() if r.startswith(f"| {panel} | {cs['tags']['n_l4s']} |"))
            col = [1, 10].index(cs["tags"]["n_classic"])
            assert float(row.strip("|").split("|")[2 + col]) == pytest.approx(cs["measured"], rel=5e-3)
        outlined = [p for p in panels[panel].patches if p.get_edgecolor()[:3] == (1.0, 0.0, 0.0)]
        assert len(outlined) == sum(cs["verdict"] == "FAIL" for cs in judged["cases"]), panel
    import matplotlib.pyplot as plt

    plt.close("all")
    assert {"qsize-cdf.png", "pie-probability.png"} <= {p.name for p in (out / "plots").glob("*.png")}
    cdf = (out / "tables" / "qsize-cdf.md").read_text()
    # One row per sub-queue of each 1+1 case: two for the DualQs, one for the single queues.
    assert cdf.count("| dualpi2/1d1c |") == 2 and cdf.count("| pie/1d1c |") == 1
    pie = (out / "tables" / "pie-probability.md").read_text()
    assert "| pie/10d10c |" in pie and "| pie/1d1c |" in pie
