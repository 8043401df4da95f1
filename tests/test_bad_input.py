"""Bad input beyond validation (issue 23): deep nesting, huge values and
files, Python values no scenario can hold, bad command-line values. Each is
one line naming where, exit code 2 (ScenarioError from the API), never a
traceback, an abort or the machine's memory."""

from __future__ import annotations

import datetime
import math
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import aqmlab
import pytest
from aqmlab.cli import main
from aqmlab.scenario import ScenarioError
from conftest import EXAMPLES, cli, tiny

DEEP = 100_000


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return err.strip().splitlines()[-1]


def _scenario_text(extra: str = "") -> str:
    return f'duration = "1s"\n{extra}\n[bottleneck]\nrate = "10Mbps"\n[[flows]]\ncc = "reno"\nrtt = "10ms"\n'


@pytest.mark.parametrize(
    "body",
    [
        "x = " + "[" * DEEP + "]" * DEEP,  # used to be a RecursionError: "engine error", exit 1
        "x = " + "{a = " * DEEP + "1" + "}" * DEEP,
        "x = " + "[" * 100 + "]" * 100,  # deeper than a scenario, shallower than Python's limit
    ],
    ids=["arrays", "inline-tables", "100-levels"],
)
def test_deep_nesting_in_a_file_is_one_line_exit_2(body: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "deep.toml"
    f.write_text(_scenario_text(body))
    for cmd in ("validate", "run"):
        assert main([cmd, str(f)]) == 2
        line = _one_line(capsys)
        assert line.startswith("aqmlab: error: ") and "nested more than 64 levels deep" in line, line
    s = tmp_path / "sweep.toml"
    s.write_text(f'[sweep]\nname = "d"\n[grid]\n{body.replace("x =", chr(34) + "x" + chr(34) + " =")}\n')
    assert main(["sweep", str(s), "--cache", str(tmp_path / "c")]) == 2
    assert _one_line(capsys).startswith("aqmlab: error: ")


def _nested(n: int) -> Any:
    x: Any = []
    for _ in range(n):
        x = [x]
    return x


def _cycle() -> dict[str, Any]:
    c: dict[str, Any] = {}
    c["a"] = c
    return c


class Opaque:
    pass


# (id, edit of a valid tree, start of the message)
API_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("deep-list", {"flows": [{"cc": "reno", "rtt": "1ms", "params": _nested(DEEP)}]}, "flows[0].params[0][0]"),
    ("cycle", {"metrics": _cycle()}, "metrics.a.a.a"),
    ("set", {"seed": {1, 2}}, "seed: {1, 2} (set) is not a scenario value"),
    ("date", {"duration": datetime.date(2026, 1, 1)}, "duration: datetime.date(2026, 1, 1) (date) is not a scenario value"),
    ("bytes", {"duration": b"1s"}, "duration: b'1s' (bytes) is not a scenario value"),
    ("object", {"bottleneck": {"rate": "1Mbps", "aqm": Opaque()}}, "bottleneck.aqm: <"),
    ("nan", {"duration": math.nan}, "duration: nan is not a number a scenario can hold"),
    ("inf", {"bottleneck": {"rate": "1Mbps", "loss": math.inf}}, "bottleneck.loss: inf is not a number"),
    ("int-key", {"flows": [{1: "reno"}]}, "flows[0]: key 1 is not text"),
    ("huge-int", {"seed": 2**80}, "seed: "),
    ("huge-duration", {"duration": "18446744073709551615ns"}, "duration: '18446744073709551615ns' is too large"),
    ("flows-not-a-list", {"flows": "reno"}, "flows: 'reno' is not allowed here: expected a list"),
]


@pytest.mark.parametrize("case", API_CASES, ids=[c[0] for c in API_CASES])
def test_python_values_no_scenario_can_hold_are_scenario_errors(case: tuple[str, dict[str, Any], str]) -> None:
    _, edit, expected = case
    tree = {**tiny(duration="1s"), **edit}
    for fn in (aqmlab.validate, aqmlab.run):
        with pytest.raises(ScenarioError) as info:
            fn(tree)
        msg = str(info.value)
        assert msg.startswith(expected) and "\n" not in msg and len(msg) < 300, msg
    # A sweep grid value too (the seed is not a grid parameter).
    if "seed" in edit:
        return
    with pytest.raises(ScenarioError, match="is not a scenario value|nested more than|not a number|too large|not text|expected"):
        aqmlab.sweep(tiny(duration="1s"), {next(iter(edit)): [next(iter(edit.values()))]}, cache_dir=None, jobs=1)


def test_a_shared_subtree_is_not_a_cycle() -> None:
    g = {"cc": "reno", "rtt": "10ms"}
    assert [f["cc"] for f in aqmlab.validate({**tiny(), "flows": [g, g]})["flows"]] == ["reno", "reno"]


def test_a_toml_date_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "d.toml"
    f.write_text(_scenario_text().replace('duration = "1s"', "duration = 1979-05-27"))
    assert main(["run", str(f), "--out", str(tmp_path / "o")]) == 2  # was a TypeError traceback, exit 1
    assert _one_line(capsys) == (
        "aqmlab: error: duration: datetime.date(1979, 5, 27) (date) is not a scenario value: "
        "text, numbers, true/false, lists and tables are"
    )
    s = tmp_path / "s.toml"
    s.write_text(f'[sweep]\nbase = "{f.name}"\n[grid]\n"duration" = [1979-05-27]\n')
    f.write_text(_scenario_text())
    assert main(["sweep", str(s), "--cache", str(tmp_path / "c")]) == 2
    assert _one_line(capsys).startswith("aqmlab: error: grid 'duration' = ")


def test_a_huge_file_is_refused_unread(tmp_path: Path) -> None:
    big = tmp_path / "big.toml"
    big.write_bytes(b"# " + b"x" * (17 * 2**20) + b"\n")
    proc = cli("validate", str(big))
    assert proc.returncode == 2 and proc.stderr.strip() == f"aqmlab: error: {big}: larger than 16 MiB: not a scenario file (they are a few kB of TOML)"

    # /dev/zero never ends: it used to be read until the kernel's OOM killer
    # ended the process at 23 GB. Under a 2 GB address-space limit, so that a
    # regression fails here rather than taking the machine's memory.
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    for cmd in ("run", "sweep"):
        proc = subprocess.run([sys.executable, "-m", "aqmlab", cmd, "/dev/zero"], capture_output=True, text=True,
                              timeout=120, preexec_fn=limit)  # fmt: skip
        assert proc.returncode == 2, proc.stderr[-500:]
        assert proc.stderr.strip().endswith("/dev/zero: larger than 16 MiB: not a " + ("scenario" if cmd == "run" else "sweep")
                                            + " file (they are a few kB of TOML)"), proc.stderr[-500:]  # fmt: skip


def test_more_flows_than_memory_with_force_is_one_line_exit_2(tmp_path: Path) -> None:
    """--force skips the estimate; the engine's allocation then fails, and
    that is an error line, not "memory allocation of ... failed" and SIGABRT."""
    if Path("/proc/sys/vm/overcommit_memory").read_text().strip() == "1":
        pytest.skip("the kernel overcommits without limit: the reservation would succeed")
    f = tmp_path / "many.toml"
    f.write_text(_scenario_text().replace('rtt = "10ms"', 'rtt = "10ms"\ncount = 4294967295'))
    proc = cli("run", str(f), "--force", "-q", "--out", str(tmp_path / "o"))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().startswith("aqmlab: error: flows: 4294967295 flows need") and "Traceback" not in proc.stderr


SCEN = str(EXAMPLES / "dumbbell.toml")
SWEEP = str(EXAMPLES / "sweep.toml")
# (args, the message after "aqmlab: error: ")
OPTION_CASES = [
    (["run", SCEN, "--seed", "-1"], "seed: '-1' is not allowed here: expected a whole number, 0 or more"),
    (["run", SCEN, "--seed", "x"], "argument --seed: invalid int value: 'x'"),
    (["run", SCEN, "--set", "x"], "--set x: write PATH=VALUE"),
    (["run", SCEN, "--set", "flows[99].count=1"], "'flows[99].count': flows has 2 entries, so [99] is out of range"),
    (["run", SCEN, "--set", "duration=99999999999999999999s"], "duration: '99999999999999999999s' is too large"),
    (["run", SCEN, "--max-memory", "lots"], "--max-memory: 'lots'"),
    (["run", SCEN, "--max-time", "abc"], "--max-time: 'abc'"),
    (["run", SCEN, "--dpi", "0", "--plots"], "--dpi: 0: allowed 30 to 1200"),
    (["run", SCEN, "--format", "gif"], "--format: 'gif': allowed png, pdf, svg"),
    (["run", SCEN, "--size", "big"], "--size: size 'big'"),
    (["sweep", SWEEP, "--jobs", "0"], "argument --jobs/-j: '0': give a whole number of parallel runs, at least 1"),
    (["sweep", SWEEP, "--jobs", "-3"], "argument --jobs/-j: '-3'"),  # was taken as "every core"
    (["reproduce", "abe", "--jobs", "x"], "argument --jobs/-j: 'x'"),
    (["sweep", SWEEP, "--backend", "ray"], "argument --backend: invalid choice: 'ray'"),
    (["bench", "--repeat", "0"], "--repeat: '0' is too few (allowed: a whole number of runs per scenario, at least 1)"),
    (["bench", "--duration", "forever"], "--duration: 'forever': unknown duration unit 'forever' (allowed: a positive"),
    (["bench", "--only", "Z"], "--only: unknown benchmark 'Z'"),
    (["reproduce", "nosuch"], "unknown experiment 'nosuch'"),
]


@pytest.mark.parametrize("case", OPTION_CASES, ids=[" ".join(c[0][:1] + c[0][2:]) for c in OPTION_CASES])
def test_bad_option_values_are_one_line_exit_2(case: tuple[list[str], str], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    args, expected = case
    try:
        rc = main([*args, *(["--out", str(tmp_path / "o")] if args[0] in ("run", "sweep") else [])])
    except SystemExit as e:  # argparse's own errors: usage, then the one error line
        rc = e.code  # type: ignore[assignment]
    assert rc == 2
    line = _one_line(capsys)
    assert line.startswith("aqmlab: error: " + expected), line
    assert not (tmp_path / "o").exists()


def test_a_sweep_too_large_to_build_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """seeds = 10^9 used to build a list of 10^9 seeds: MemoryError, or the
    whole machine's memory without a limit."""
    f = tmp_path / "s.toml"
    f.write_text(f'[sweep]\nbase = "{EXAMPLES / "dumbbell.toml"}"\nseeds = 1000000000\n')
    assert main(["sweep", str(f), "--cache", str(tmp_path / "c")]) == 2
    assert _one_line(capsys) == "aqmlab: error: sweep.seeds: 1,000,000,000 seeds is more than a sweep may run (100,000 runs)"
    f.write_text(f'[sweep]\nbase = "{EXAMPLES / "dumbbell.toml"}"\nseeds = 10\n[grid]\n'
                 f'"seed_a" = {list(range(100))}\n"seed_b" = {list(range(101))}\n')  # fmt: skip
    assert main(["sweep", str(f), "--cache", str(tmp_path / "c")]) == 2
    assert _one_line(capsys) == "aqmlab: error: grid: 100 × 101 × 10 seeds = 101,000 runs, more than a sweep may run (100,000): split it"


# The graph of /work/notes/perf30/lr_500ms.json: only r1 -> r2 (and its reverse) has a rate.
_GRAPH = """duration = "500ms"
seed = 5
[topology]
links = [
  { from = "a", to = "r1", delay = "3ms", loss = 0.01 },
  { from = "b", to = "r1", delay = "5ms" },
  { from = "r1", to = "r2", rate = "10Mbps", delay = "4ms", aqm = "codel", buffer = "100pkt" },
  { from = "r2", to = "c", delay = "2ms" },
]
[[flows]]
cc = "cubic"
src = "c"
dst = "a"
"""
_NO_RATE = ("no link on the path from 'b' to 'a' (b->r1, a->r1:rev) has a rate; a TCP flow needs at least one "
            "rate-limited link on its data path to bound its window (give one of these links a rate)")  # fmt: skip


def test_a_tcp_flow_crossing_no_rated_link_is_one_line_exit_2(tmp_path: Path) -> None:
    """Its window grew without bound: the run aborted with "memory allocation
    of 2147483648 bytes failed" (SIGABRT) after half a second of simulated
    time. Now validate and run both refuse it up front. Under a 2 GB
    address-space limit, so that a regression fails here rather than taking
    the machine's memory."""
    f = tmp_path / "norate.toml"
    f.write_text(_GRAPH + '[[flows]]\ncc = "reno"\nsrc = "b"\ndst = "a"\nstart_jitter = "9ms"\n')

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    out = tmp_path / "o"
    for args in (["validate", str(f)], ["run", str(f), "-q", "--out", str(out)]):
        proc = subprocess.run([sys.executable, "-m", "aqmlab", *args], capture_output=True, text=True, timeout=120,
                              preexec_fn=limit)  # fmt: skip
        assert proc.returncode == 2, proc.stderr[-500:]
        assert proc.stderr.strip() == f"aqmlab: error: flows[1]: {_NO_RATE}", proc.stderr[-500:]
    assert not out.exists()
    # A constant-rate source paces itself and needs no rated link.
    f.write_text(_GRAPH + '[[flows]]\ncc = "udp"\nsrc = "b"\ndst = "a"\nrate = "5Mbps"\n')
    assert cli("validate", str(f), "-q").returncode == 0


def test_a_workload_crossing_no_rated_link_is_refused_before_anything_runs(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """A workload's flows are built mid-run: its routes are checked up front,
    in validation, so a sweep point with such a workload stops the sweep
    before any point runs."""
    base = tmp_path / "wl.toml"
    base.write_text(_GRAPH + '[[workloads]]\nkind = "web"\nrate = "50/s"\ncc = "reno"\nsrc = "c"\ndst = "a"\n'
                    'size = { dist = "fixed", mean = "20KB" }\n')  # fmt: skip
    assert main(["validate", str(base), "-q"]) == 0  # c -> a crosses r2 -> r1's reverse queue
    assert main(["validate", str(base), "-q", "--set", "workloads[0].src=b"]) == 2
    assert _one_line(capsys) == f"aqmlab: error: workloads[0]: {_NO_RATE}"
    sweep = tmp_path / "s.toml"
    sweep.write_text(f'[sweep]\nbase = "{base}"\n[grid]\n"workloads[0].src" = ["c", "b"]\n')
    assert main(["sweep", str(sweep), "--cache", str(tmp_path / "c"), "--out", str(tmp_path / "o")]) == 2
    line = _one_line(capsys)
    assert line.startswith("aqmlab: error: ") and f"workloads[0]: {_NO_RATE}" in line, line
    assert not (tmp_path / "c").exists() and not (tmp_path / "o").exists()
