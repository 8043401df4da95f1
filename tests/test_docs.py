"""The README's two commands, CI running the same test command, and docs that
match the engine (defaults, registry, table columns)."""

from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path
from typing import Any

import aqmlab
import pytest
from aqmlab import scenario as sc
from aqmlab._docgen import current_block, generated_block
from aqmlab.results import TABLES
from conftest import ROOT

README = (ROOT / "README.md").read_text()
SCENARIO_MD = (ROOT / "docs" / "scenario.md").read_text()
RESULTS_MD = (ROOT / "docs" / "results.md").read_text()


def readme_commands() -> list[str]:
    block = re.search(r"```sh\n(.*?)```", README, re.S)
    assert block, "README must start with a sh code block"
    assert README.index(block.group(0)) < README.index("\n## "), "the commands come first"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_readme_starts_with_exactly_two_commands() -> None:
    cmds = readme_commands()
    assert len(cmds) == 2
    assert cmds[0] == "pip install . && aqmlab reproduce dualq-coexistence --quick"
    assert "cargo test" in cmds[1] and "pytest" in cmds[1]


def test_ci_runs_exactly_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert ci.startswith("#!/usr/bin/env bash") and "set -euo pipefail" in ci
    last = [line for line in ci.splitlines() if line.strip() and not line.startswith("#")][-1]
    assert last == readme_commands()[1]


MIN_DUMBBELL = """
duration = "10s"
[bottleneck]
rate = "10Mbps"
[[flows]]
cc = "cubic"
rtt = "20ms"
[[workloads]]
kind = "web"
rate = "10/s"
cc = "reno"
rtt = "20ms"
size = { dist = "fixed", mean = "10KB" }
"""
MIN_TOPOLOGY = """
duration = "10s"
[topology]
links = [{ from = "a", to = "b", rate = "10Mbps" }]
[[flows]]
cc = "reno"
src = "a"
dst = "b"
"""


def _sections() -> dict[str, list[tuple[str, str]]]:
    """Heading -> [(key, default cell)] from the field tables."""
    out: dict[str, list[tuple[str, str]]] = {}
    heading = ""
    for line in SCENARIO_MD.splitlines():
        if line.startswith("## "):
            heading = line[3:]
            out[heading] = []
        m = re.match(r"\| `([a-z_]+)` \| [^|]* \| ([^|]+) \|", line)
        if m and heading:
            out[heading].append((m.group(1), m.group(2).strip()))
    return out


def test_documented_defaults_are_the_engines() -> None:
    d = aqmlab.validate(tomllib.loads(MIN_DUMBBELL))
    t = aqmlab.validate(tomllib.loads(MIN_TOPOLOGY))
    wlan = tomllib.loads(MIN_TOPOLOGY)
    wlan["topology"]["links"][0]["wlan"] = {}
    w = aqmlab.validate(wlan)
    where: dict[str, dict[str, Any]] = {
        "Top level": d,
        "`[bottleneck]`: the dumbbell": d["bottleneck"],
        "`[topology]`: a graph": t["topology"]["links"][0],
        "`[topology.links.wlan]`: a shared WLAN medium": w["topology"]["links"][0]["wlan"],
        "`[[flows]]`: flow groups": d["flows"][0],
        "`[[workloads]]`: flows arriving over time": d["workloads"][0],
        "`[tcp]`": d["tcp"],
        "`[metrics]`": d["metrics"],
        "`[engine]`": d["engine"],
    }
    sections = _sections()
    checked = 0
    for heading, tree in where.items():
        assert heading in sections, heading
        for key, cell in sections[heading]:
            m = re.fullmatch(r"`(.+)`", cell)
            if not m:
                continue  # required, none, or prose
            documented = tomllib.loads(f"v = {m.group(1)}")["v"]
            assert tree.get(key) == documented, f"docs/scenario.md {heading}: {key} default {cell}, engine {tree.get(key)!r}"
            checked += 1
    assert checked >= 25


def test_every_scenario_field_is_documented() -> None:
    for cls in (sc.Scenario, sc.Bottleneck, sc.Reverse, sc.Link, sc.FlowGroup, sc.Workload, sc.SizeDist, sc.Tcp, sc.Metrics, sc.Pcap,
                sc.Engine):  # fmt: skip
        for f in dataclasses.fields(cls):
            if f.name == "extra":
                continue
            key = f.metadata.get("key", f.name)
            forms = (f"`{key}`", f"`[{key}]`", f"`[[{key}]]`")
            assert any(x in SCENARIO_MD for x in forms), f"{cls.__name__}.{key} is not in docs/scenario.md"


def test_registry_tables_in_the_docs_are_current() -> None:
    assert current_block(SCENARIO_MD) == generated_block(), (
        "docs/scenario.md's AQM/CC tables are stale: run `python -m aqmlab._docgen docs/scenario.md`"
    )


def test_every_table_column_and_summary_key_is_documented(tmp_path: Path) -> None:
    r = aqmlab.run(
        {"duration": "1s", "bottleneck": {"rate": "10Mbps", "aqm": "fifo"}, "flows": [{"cc": "reno", "rtt": "10ms"}],
         "metrics": {"sojourn_samples_every": 10}}  # fmt: skip
    )
    for name in TABLES:
        for col in r.tables[name].columns:
            assert f"`{col}`" in RESULTS_MD, f"column {name}.{col} is not in docs/results.md"
    keys = set(r.summary) | set(r.summary["perf"]) | set(r.summary["flows"][0]) | set(r.summary["queues"][0])
    keys |= set(r.summary["queues"][0]["sojourn_ms"]) | set(r.summary["workload_flows"]) | set(r.summary["fairness"])
    keys |= set(r.summary["queues"][0]["drops_by_reason"]) | set(r.summary["queues"][0]["marks_by_reason"])
    for k in keys:
        assert f"`{k}`" in RESULTS_MD, f"summary key {k} is not in docs/results.md"


@pytest.mark.parametrize("doc", ["scenario.md", "results.md", "cli.md"])
def test_docs_exist_and_link_to_existing_files(doc: str) -> None:
    text = (ROOT / "docs" / doc).read_text()
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
        assert (ROOT / "docs" / target).exists(), f"{doc} links to missing {target}"


# ---------------------------------------------------------------------------
# Every command shown in the docs still exists with the options shown.

DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
#: Commands cheap enough to run for real (the rest are parsed only).
RUN_FOR_REAL = {"run", "report", "validate", "registry"}


def doc_commands() -> list[tuple[str, str]]:
    """(doc, command) for each `aqmlab ...` line in a fenced block that is a
    command, not a synopsis (synopses use placeholders: FILE, [--x], a | b)."""
    out = []
    for doc in DOC_FILES:
        for block in re.findall(r"```[a-z]*\n(.*?)```", doc.read_text(), re.S):
            for line in block.splitlines():
                cmd = line.split("  #")[0].strip()
                if not cmd.startswith("aqmlab ") or re.search(r"[\[\]|…]|\.\.\.|\b[A-Z][A-Z_]+\b", cmd):
                    continue
                out.append((str(doc.relative_to(ROOT)), cmd))
    return out


@pytest.mark.parametrize(("doc", "cmd"), doc_commands(), ids=[c for _, c in doc_commands()])
def test_documented_command_parses_and_its_files_exist(doc: str, cmd: str) -> None:
    import shlex

    from aqmlab.cli import build_parser

    argv = shlex.split(cmd)[1:]
    try:
        build_parser().parse_args(argv)
    except SystemExit as e:
        raise AssertionError(f"{doc}: `{cmd}` no longer parses") from e
    for a in argv:
        if a.startswith("examples/"):
            assert (ROOT / a).exists(), f"{doc}: `{cmd}` names a missing file {a}"


def test_documented_cheap_commands_run(tmp_path: Path) -> None:
    """The run/report/validate/registry lines, run as shown (in order: a
    report follows its run) from a directory where examples/ resolves."""
    import shlex

    from conftest import cli

    (tmp_path / "examples").symlink_to(ROOT / "examples")
    ran = 0
    for doc, cmd in doc_commands():
        argv = shlex.split(cmd)[1:]
        if argv[0] not in RUN_FOR_REAL:
            continue
        proc = cli(*argv, cwd=tmp_path)
        assert proc.returncode == 0, f"{doc}: `{cmd}` exited {proc.returncode}: {proc.stderr[-500:]}"
        ran += 1
    assert ran >= 3


def test_readme_python_example_runs_as_a_plain_script(tmp_path: Path) -> None:
    """The README's Python block, saved as a script without a __main__
    guard and run as a user would (its sweep uses 4 worker processes)."""
    import subprocess
    import sys

    code = re.search(r"```python\n(.*?)```", README, re.S)
    assert code, "README has a Python example"
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    (tmp_path / "example.py").write_text(code.group(1) + "\nprint('failed runs:', s.failed)\n")
    proc = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "failed runs: 0" in proc.stdout


def test_documented_normalisation_and_files_match_behaviour(tmp_path: Path) -> None:
    """The examples docs/scenario.md gives of normalised units, and the files
    docs/results.md says a run writes."""
    for given, normal in (("1.5MB", "1500KB"), ("1KiB", "1024B")):
        assert f'`"{given}"` → `"{normal}"`' in SCENARIO_MD
        tree = {"duration": "1s", "bottleneck": {"rate": "10Mbps", "buffer": given}, "flows": [{"cc": "reno", "rtt": "10ms"}]}
        assert aqmlab.validate(tree)["bottleneck"]["buffer"] == normal
    r = aqmlab.run({"duration": "1s", "bottleneck": {"rate": "10Mbps"}, "flows": [{"cc": "reno", "rtt": "10ms"}]})
    r.save(tmp_path, plots=False, report=False)
    written = {p.name for p in tmp_path.iterdir()}
    for name in written:
        assert f"`{name}`" in RESULTS_MD, f"{name} is written but not in docs/results.md"
    assert "sojourn_samples.parquet" in written and "always written; empty unless" in RESULTS_MD
