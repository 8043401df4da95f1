"""`aqmlab bench` as a user meets it: bad option values, several names in
one --only, duplicates, tables in narrow and non-terminal consoles, the
headline of fat trees, --list, and runs that move no packet. Runs are 2 ms
or shorter; option errors go through `main` in this process (nothing runs)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from aqmlab.bench import ACCESS, ALL_SCENARIOS, CHAINS, ON_REQUEST, SCENARIOS, WORKLOADS, describe, scenario
from aqmlab.bench_table import rate_text, table
from aqmlab.cli import build_parser, main
from conftest import cli

DURATION = "(allowed: a positive simulated time in ns, us, µs, ms, s, min, e.g. 2ms)"
RATE = "(allowed: a positive rate in bps, kbps, Kbps, Mbps, Gbps, Tbps, e.g. 100Gbps)"
REPEAT = "(allowed: a whole number of runs per scenario, at least 1)"


def _error_line(capsys: pytest.CaptureFixture[str], args: list[str]) -> str:
    """The one stderr line of a refused `aqmlab bench ARGS` (exit 2, nothing run)."""
    try:
        rc = main(["bench", *args])
    except SystemExit as e:  # argparse's own errors
        rc = e.code  # type: ignore[assignment]
    captured = capsys.readouterr()
    assert rc == 2, captured
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, lines  # no usage, no traceback, no progress line
    assert captured.out == ""
    return lines[0]


# Defect 1: the option (not the engine's key), the value given, what is allowed.
@pytest.mark.parametrize(("args", "expected"), [
    (["--repeat", "0"], f"--repeat: '0' is too few {REPEAT}"),
    (["--repeat", "-3"], f"--repeat: '-3' is too few {REPEAT}"),
    (["--repeat", "abc"], f"--repeat: 'abc' is not a whole number {REPEAT}"),  # defect 2: no usage lines either
    (["--duration", "0s"], f"--duration: '0s': must be positive {DURATION}"),
    (["--duration", "1parsec"], f"--duration: '1parsec': unknown duration unit 'parsec' {DURATION}"),
    (["--only", "A-10", "--duration", ""], f"--duration: '' needs a unit {DURATION}"),  # used to run the full 10 s
    (["--rate", "0bps"], f"--rate: '0bps': must be positive {RATE}"),
    # D's --rate is its links' rate (topology.fat_tree.rate), checked for D itself.
    (["--only", "D", "--rate", "0bps"], f"--rate: '0bps': must be positive {RATE}"),
    (["--only", "D", "--rate", "10Gbs"], f"--rate: '10Gbs': unknown rate unit 'Gbs' {RATE}"),
    (["--only", "D-1024-ack1", "--rate", "0bps"], f"--rate: '0bps': must be positive {RATE}"),
    (["--only", "D-ack1", "--duration", "0s"], f"--duration: '0s': must be positive {DURATION}"),
])  # fmt: skip
def test_a_bad_value_is_one_line_with_option_value_and_allowed(args: list[str], expected: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    assert _error_line(capsys, args) == f"aqmlab: error: {expected}"


# Defect 2: a value starting with '-' is the option's value, refused as such.
@pytest.mark.parametrize(("args", "expected"), [
    (["--duration", "-1s"], f"--duration: '-1s': a duration cannot be negative {DURATION}"),
    (["--rate", "-5Gbps"], f"--rate: '-5Gbps': a rate cannot be negative {RATE}"),
    (["--only", "D", "--rate", "-5Gbps"], f"--rate: '-5Gbps': a rate cannot be negative {RATE}"),
])  # fmt: skip
def test_a_negative_value_is_taken_as_the_value_and_refused(args: list[str], expected: str,
                                                            capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    assert _error_line(capsys, args) == f"aqmlab: error: {expected}"


def test_an_option_after_a_value_option_is_still_an_option() -> None:
    """Only a number-like '-1s' is joined to its option: `--rate --json` is a missing value."""
    with pytest.raises(SystemExit):
        main(["bench", "--rate", "--json"])


# Defect 3: --only NAME ... as documented, and repeatable.
def test_only_takes_several_names_and_repeats() -> None:
    a = build_parser().parse_args(["bench", "--only", "A-10", "A-100", "--only", "D", "--json"])
    assert a.only == ["A-10", "A-100", "D"] and a.json


# Defect 4: a name given twice runs --repeat times and gives one row.
def test_a_name_given_twice_runs_once_per_repeat(tmp_path: Path) -> None:
    proc = cli("bench", "--json", "--only", "A-10", "A-10", "--only", "A-10", "--repeat", "2", "--duration", "2ms",
               cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert [(r["name"], r["repeat"]) for r in rows] == [("A-10", 2)]
    assert [line.split(":")[0] for line in proc.stderr.splitlines()] == ["A-10 run 1/2", "A-10 run 2/2"]


# Defect 5: no figure is cut, in a file (120 columns) or a narrow terminal.
def _result(name: str, pkts_per_s: float, hops_per_s: float, repeat: int = 3) -> dict:
    wall = 0.5
    return {"name": name, "sim_s": 10.0, "bottleneck_packets": round(pkts_per_s * wall), "events": 123_456_789,
            "wall_s": wall, "pkts_per_s": pkts_per_s, "events_per_s": 246_913_578.0, "packet_hops": round(hops_per_s * wall),
            "hops_per_s": hops_per_s, "events_per_hop": 1.0, "peak_rss_mb": 1234.5, "pkts_per_s_min": pkts_per_s * 0.9,
            "pkts_per_s_max": pkts_per_s * 1.1, "hops_per_s_min": hops_per_s * 0.8, "hops_per_s_max": hops_per_s * 1.2,
            "headline": "hops_per_s" if name.startswith("D") else "pkts_per_s", "steal_pct": 12.5, "repeat": repeat,
            "metrics": "default", "build": "pgo"}  # fmt: skip


@pytest.mark.parametrize("width", [120, 80, 50])
@pytest.mark.parametrize("repeat", [1, 3])
def test_the_table_never_cuts_a_rate(width: int, repeat: int) -> None:
    """18,549,234 pkts/s came out as "18,549,2…" at 120 columns."""
    from rich.console import Console

    results = [_result("A-100-ack1", 18_549_234.0, 18_700_000.0, repeat), _result("D-1024", 6_574_440.0, 9_824_669.0, repeat)]
    console = Console(width=width, force_terminal=False, record=True)
    console.print(table(results, "aqmlab bench", width))
    text = console.export_text()
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= width, text
    for r in results:
        row = next(line for line in text.splitlines() if line.startswith(f"│ {r['name']} "))
        assert rate_text(r["pkts_per_s"]) in row and rate_text(r["hops_per_s"]) in row, row
    assert "18.55 M" in text and "9.825 M" in text
    if width == 120:  # every column fits; the range is the headline's: hops for D-1024
        assert "left out" not in text
        if repeat > 1:
            assert "7.860-11.79 M" in text and "16.69-20.40 M" in text


def test_a_table_written_to_a_file_has_every_rate_whole(tmp_path: Path) -> None:
    proc = cli("bench", "--only", "A-10", "--only", "D", "--duration", "2ms", cwd=tmp_path, env={"COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    assert "…" not in proc.stdout
    rows = [line for line in proc.stdout.splitlines() if line.startswith(("│ A-10 ", "│ D "))]
    assert len(rows) == 2
    for row in rows:  # pkts/s, hops/s and events/s: "3.445 M", whole
        assert len(re.findall(r" \d+\.\d+ [kMG] ", row)) == 3, row


# Defect 6: the fat tree's headline is packet-hops, with their range.
def test_fat_tree_reports_its_hops_range_and_says_hops_per_s(tmp_path: Path) -> None:
    proc = cli("bench", "--json", "--only", "D", "--duration", "1ms", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (r,) = json.loads(proc.stdout)
    assert r["headline"] == "hops_per_s"
    assert r["hops_per_s_min"] <= r["hops_per_s"] <= r["hops_per_s_max"]
    assert r["hops_per_s_min"] == r["packet_hops"] / r["wall_s"]  # one run: min = max = the rate
    assert {"pkts_per_s", "pkts_per_s_min", "pkts_per_s_max", "peak_rss_mb", "build"} <= set(r)
    (line,) = proc.stderr.splitlines()
    assert line.startswith("D run 1/1: ") and line.endswith(" hops/s"), line


# Defect 7: --list describes each scenario from its definition; --help names them.
def test_list_describes_every_scenario_from_its_definition(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(ALL_SCENARIOS)
    # Only the trees with other disciplines, the chains, the access links and the workloads are on request, and they say so.
    assert [line.split()[0] for line in lines if line.endswith("(on request: --only)")] == list(ON_REQUEST + CHAINS + ACCESS + WORKLOADS)
    by_name = {line.split()[0]: line for line in lines}
    assert "dumbbell 10Gbps, 100 DCTCP flows, base RTT 100 µs, AQM step (marks at 65pkt)" in by_name["A-100"]
    assert by_name["A-100"].rstrip().endswith("10 s simulated")
    assert "200 flows (100 CUBIC + 100 DCTCP), base RTT 5 ms to 100 ms, AQM dualpi2; 30 s simulated" in by_name["B"]
    assert "an ACK for every packet" in by_name["A-10-ack1"] and "ACK" not in by_name["A-10"]
    assert "fat tree k=16 (1024 hosts, 320 switches), 10Gbps links" in by_name["D-1024"]
    assert "20 ms simulated" in by_name["D-1024"]
    for name in ("D-ack1", "D-1024-ack1"):  # the fat trees' equal-work pair, after D-1024
        assert by_name[name].endswith(by_name[name.removesuffix("-ack1")].split("; ")[-1])
        assert describe(name) == describe(name.removesuffix("-ack1")).replace("; ", ", an ACK for every packet; ")
        assert "ACK" not in by_name[name.removesuffix("-ack1")]
    assert list(SCENARIOS[SCENARIOS.index("D-1024"):]) == ["D-1024", "D-ack1", "D-1024-ack1", "D-codel"]
    assert "AQM codel (target 20 µs, interval 200 µs, ECN), 250pkt buffer per port; 50 ms simulated" in by_name["D-codel"]
    assert "AQM dualpi2 (l4s_ect any, step_thresh 78 µs), 250pkt buffer per port; 50 ms simulated" in by_name["D-dualpi2"]
    assert "PRAGUE permutation (every host sends to one other, packet values marked at each source)" in by_name["D-vdq_csaqm"]
    assert by_name["chain-64"].split(maxsplit=1)[1].startswith("chain of 64 links and 64 back, 10Gbps, 1 µs to 1.063 µs each, 10 DCTCP")
    assert "AQM step (marks at 65pkt), 250pkt buffer per link; 100 ms simulated" in by_name["chain-64"]
    assert "chain of 1 link and 1 back, 10Gbps, 1 µs each" in by_name["chain-1"] and "6.4 s simulated" in by_name["chain-1"]
    assert "10000 DCTCP flows, base RTT 100 µs, each flow through its own 20Gbps access link, AQM step" in by_name["C-10000-access"]
    assert describe("A-10-access") == describe("A-10").replace(", AQM", ", each flow through its own 20Gbps access link, AQM")
    assert by_name["W"].split(maxsplit=1)[1].startswith("dumbbell 1Gbps, web flows at 2000/s (CUBIC, pareto sizes 2KB to 1MB), base RTT 20 ms")
    assert "time series on; 16 s simulated" in by_name["W"] and "time series" not in by_name["A-10"]
    assert describe("W-access") == describe("W").replace(", AQM", ", each flow through its own 20Gbps access link, AQM")
    for name in ALL_SCENARIOS:  # read from the tree, not a second list
        s = scenario(name)
        queue = s.get("bottleneck") or s["topology"].get("fat_tree") or s["topology"]["links"][0]
        assert f"AQM {queue['aqm']}" in describe(name)


def test_help_names_the_scenarios_and_list(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert all(name in text for name in SCENARIOS) and "aqmlab bench --list" in text


# Defect 8: a scenario that moved nothing is kept, with one warning line.
def test_a_run_that_moves_no_packet_warns_once(tmp_path: Path) -> None:
    proc = cli("bench", "--json", "-q", "--only", "A-10", "--duration", "1ns", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (r,) = json.loads(proc.stdout)
    assert r["bottleneck_packets"] == 0 and r["pkts_per_s"] == 0
    assert proc.stderr.splitlines() == ["aqmlab: warning: A-10: no packet crossed the bottleneck in 1e-09 s simulated, "
                                        "so its rates are 0 (give a longer --duration or a higher --rate)"]  # fmt: skip
