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


@pytest.mark.parametrize("name", ["dualq-coexistence", "aqm-kids", "abe", "qcn-hotspot"])
def test_seed_experiment_runs_quick_or_says_what_is_missing(name: str, tmp_path: Path) -> None:
    """Runs the --quick reproduction once the engine registers the AQMs it
    needs; until then it must exit 2 naming them."""
    exp = EXPERIMENTS[name]
    missing = missing_requirements(exp)
    out = tmp_path / "out"
    proc = cli("reproduce", name, "--quick", "--out", str(out), "--cache", str(tmp_path / "c"), cwd=tmp_path, timeout=600)
    if missing:
        assert proc.returncode == 2
        line = proc.stderr.strip().splitlines()
        assert len(line) == 1 and line[0].startswith(f"aqmlab: error: {name} needs ")
        assert all(m in line[0] for m in missing)
        return
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "claims.json").read_text())
    assert doc["experiment"] == name and doc["quick"] is True
    assert len(doc["claims"]) == len(exp.claims())
    for c in doc["claims"]:
        assert c["verdict"] in ("pass", "differs") and c["measured"] is not None, c  # measurable on this engine
        assert c["paper"] and c["tolerance"]
    # The terminal table: the paper's claim next to the measured figure and a verdict per claim.
    assert exp.title in proc.stdout
    verdicts = re.findall(r"│ (pass|differs|n/a) +│", proc.stdout)
    assert verdicts == [c["verdict"] for c in doc["claims"]]
    assert (out / "report.html").exists() and list((out / "plots").glob("*.png"))
    for label in exp.showcase(True):
        assert (out / "cases" / label.replace("/", "_") / "report.html").exists(), label


class Toy(Experiment):
    """A two-case experiment on AQMs that exist today (fifo vs step)."""

    name = "toy"
    title = "Toy: step marking keeps the queue shorter than a FIFO"
    source = "this test"
    description = "DCTCP through a FIFO or a step marker."
    requires_aqm = ("fifo", "step")
    requires_cc = ("dctcp",)

    def cases(self, quick: bool) -> list[Case]:
        def sc(aqm: str) -> dict[str, Any]:
            return {"duration": "2s", "warmup": "500ms", "bottleneck": {"rate": "10Mbps", "aqm": aqm, "buffer": "50ms",
                                                                       "params": {"threshold": "5pkt"} if aqm == "step" else {}},
                    "flows": [{"cc": "dctcp", "rtt": "10ms", "count": 2, "start_jitter": "10ms"}]}  # fmt: skip

        return [Case("fifo", sc("fifo"), {"aqm": "fifo"}), Case("step", sc("step"), {"aqm": "step"})]

    def seeds(self, quick: bool) -> list[int]:
        return [1, 2]

    def showcase(self, quick: bool) -> list[str]:
        return ["step"]

    def claims(self) -> list[Claim]:
        def p99(aqm: str) -> Any:
            return lambda runs: runs.mean_over(runs.select(aqm=aqm), lambda s: s["queues"][0]["sojourn_ms"]["p99"])

        return [
            Claim("step queue p99 below 10 ms", "< 10 ms", "test", p99("step"), lambda x: x < 10, "pass if < 10 ms", "ms"),
            Claim("fifo queue p99 below 1 ms (false)", "< 1 ms", "test", p99("fifo"), lambda x: x < 1, "pass if < 1 ms", "ms"),
            Claim("a figure that cannot be measured", "?", "test", lambda runs: None, lambda x: True, "n/a"),
            Claim("goodput per case", "> 0", "test", lambda r: r.mean_over(r.select(), total_goodput), lambda x: x > 0, "> 0"),
        ]


def test_framework_runs_claims_and_writes_outputs(tmp_path: Path) -> None:
    res = reproduce(Toy(), quick=True, out=tmp_path / "o", jobs=1, cache_dir=tmp_path / "c")
    assert [v.verdict for v in res.verdicts] == ["pass", "differs", "n/a", "pass"]
    assert res.counts == {"cached": 0, "ran": 4, "failed": 0}  # the showcase run is reused, not repeated
    assert isinstance(res.runs, Runs) and len(res.runs.summaries("fifo")) == 2
    doc = json.loads((tmp_path / "o" / "claims.json").read_text())
    assert [c["verdict"] for c in doc["claims"]] == ["pass", "differs", "n/a", "pass"]
    runs = pd.read_parquet(tmp_path / "o" / "runs.parquet")
    assert len(runs) == 4 and set(runs["case"]) == {"fifo", "step"}
    report = (tmp_path / "o" / "report.html").read_text()
    assert "step queue p99 below 10 ms" in report and "differs" in report
    assert (tmp_path / "o" / "cases" / "step" / "report.html").exists()
    again = reproduce(Toy(), quick=True, out=tmp_path / "o", jobs=1, cache_dir=tmp_path / "c")
    assert again.counts == {"cached": 3, "ran": 1, "failed": 0}  # only the showcase re-runs (for its tables)


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


def test_vdq_csaqm_quick_runs_dctcp_and_bbrv2_cases_with_a_verdict_for_every_claim(tmp_path: Path) -> None:
    exp = EXPERIMENTS["vdq-csaqm"]
    assert status(exp) == "available"
    out = tmp_path / "out"
    proc = cli("reproduce", "vdq-csaqm", "--quick", "--out", str(out), "--cache", str(tmp_path / "c"), cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "claims.json").read_text())
    assert len(doc["claims"]) == len(exp.claims())
    for c in doc["claims"]:
        assert c["verdict"] in ("pass", "differs") and c["measured"] is not None, c
    assert "BBRv2" in proc.stdout
    # The slides' qualitative BBRv2 result: under DualPI2, BBRv2 (L4S) flows dominate CUBIC.
    dom = next(c for c in doc["claims"] if c["claim"].startswith("BBRv2 (L4S) vs CUBIC, DualPI2"))
    assert dom["measured"] > 1.5, dom
    assert (out / "report.html").exists() and (out / "plots" / "vdq-csaqm.png").exists()
    runs = pd.read_parquet(out / "runs.parquet")
    assert set(runs["aqm"]) == {"vdq_csaqm", "dualpi2"} and (runs["status"] != "failed").all()


def test_qcn_hotspot_quick_reproduces_every_claim(tmp_path: Path) -> None:
    """The seed 003 hotspot (10 QCN sources, 10 -> 0.5 -> 10 Gbit/s): every
    claim passes in quick mode, each phase measured in its own window, and
    the rate/queue figures come from the showcased full-timeline runs."""
    exp = EXPERIMENTS["qcn-hotspot"]
    res = reproduce(exp, quick=True, out=tmp_path / "o", jobs=1, cache_dir=tmp_path / "c")
    got = {v.claim.text: (v.verdict, v.measured) for v in res.verdicts}
    assert all(v == "pass" for v, _ in got.values()), got
    assert 15 <= got["10 Gbit/s: the queue is held near Q_eq"][1] <= 30  # Q_eq = 22 packets
    assert got["0.5 Gbit/s: no buffer overflow once past the transition"][1] == 0
    assert got["Fb-hat recovers the bandwidth quicker"][1] < 1.0
    assert {p.name for p in (tmp_path / "o" / "plots").glob("*.png")} == {"rate.png", "zoom.png", "queue.png"}
    r = res.runs.showcased["0.5g/fbhat/timeline"]
    ts = r.timeseries
    assert ts["cc"].eq("qcn").all() and ts["rate_bps"].max() <= 1.05e9
    low = ts[(ts["t_s"] > 2.5) & (ts["t_s"] <= 4.0)].groupby("t_s")["rate_bps"].sum().mean()
    assert abs(low / 0.5e9 - 1) < 0.1, low
    assert set(r.probes["probe"]) >= {"fb", "q", "fb_quantized", "cnms", "target_rate_bps", "fbhat"}
