"""scripts/htsim: the summary of the rounds against htsim (ratios of pairs,
targets judged per round), compare.py's runner and failures, and the patcher
of htsim's fat tree. No htsim needed: the runs are fixtures in the formats
the drivers and ``aqmlab bench --json`` write, or small stand-in scripts."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from conftest import ROOT, cli, load_script

HTSIM = ROOT / "scripts" / "htsim"


def _load(name: str, as_name: str) -> ModuleType:
    return load_script(HTSIM / f"{name}.py", as_name)


# compare.py imports compare_summary by that name: one module for both.
S = _load("compare_summary", "compare_summary")
compare = _load("compare", "htsim_compare")
patcher = _load("patch_fat_tree", "htsim_patch_fat_tree")
build = _load("build", "htsim_build")


# --- fixtures in the drivers' and aqmlab bench's formats -------------------


def bench_row(name: str, rate: float, count: int = 8_333_063, rss: float = 30.0) -> dict[str, Any]:
    """One result of ``aqmlab bench --json`` (every field it writes)."""
    wall = count / rate
    hop = name.startswith("D")
    return {"name": name, "sim_s": 0.1 if hop else 10.0, "bottleneck_packets": count, "events": count,
            "wall_s": wall, "pkts_per_s": rate, "events_per_s": rate, "packet_hops": count,
            "hops_per_s": rate, "events_per_hop": 1.0, "peak_rss_mb": rss, "pkts_per_s_min": rate,
            "pkts_per_s_max": rate, "steal_pct": 0.0, "repeat": 1, "metrics": "default", "build": "pgo"}  # fmt: skip


def htsim_a_stdout(flows: int, rate: float, pkts: int = 8_332_992) -> str:
    """htsim_a's stdout: htsim's own messages, then the result line."""
    chatter = "At 260 RTO 250 MDEV 0 RTT 0 SEQ 0 HSENT 15001 CWND 10 FAST RECOVERY? 0 Flow ID tcp\n" * 3
    return chatter + json.dumps({"flows": flows, "pkts": pkts, "wall_s": pkts / rate, "pkts_per_s": rate}) + "\n"


def htsim_d_stderr(k: int, rate: float, hops: int = 57_742_839) -> str:
    """htsim_d's stderr: unfinished incast flows, then the result line."""
    line = {"k": k, "hosts": k**3 // 4, "queues": 768, "sim_ms": 100.0, "seed": 1, "counted": 1,
            "packet_hops": hops, "data_hops": hops // 2, "ack_hops": hops - hops // 2, "other_hops": 0,
            "events": 2 * hops, "events_per_hop": 2.0, "drops": 585, "wall_s": hops / rate,
            "hops_per_s": rate, "events_per_s": 2 * rate}  # fmt: skip
    return "unfinished incast flow: round 1, 36->104, acked 61501, sent 66001, rto_ms 250.0\n" + json.dumps(line) + "\n"


#: Per round: aqmlab's and htsim's rates (M per wall-second).
ROUND = {"A-10": 20.0, "A-10-ack1": 16.0, "A-100": 18.0, "A-100-ack1": 15.0, "htsim A-10": 8.0,
         "htsim A-100": 7.5, "D": 10.0, "D-ack1": 8.0, "htsim D": 4.0, "D-1024": 7.0, "D-1024-ack1": 5.0,
         "htsim D-1024": 1.5}  # fmt: skip


def write_round(out: Path, r: int, rates: dict[str, float], groups: tuple[str, ...] = ("A", "D", "D-1024"),
                ack1: bool = True) -> None:  # fmt: skip
    """One round's files; ``ack1=False``: as compare.py wrote them before it
    ran D-ack1 and D-1024-ack1."""
    M = 1e6
    out.mkdir(parents=True, exist_ok=True)
    if "A" in groups:
        rows = [bench_row(n, rates[n] * M) for n in ("A-10", "A-10-ack1", "A-100", "A-100-ack1")]
        (out / f"aqA_{r}.json").write_text(json.dumps(rows, indent=2))
        (out / f"hA10_{r}.out").write_text(htsim_a_stdout(10, rates["htsim A-10"] * M))
        (out / f"hA100_{r}.out").write_text(htsim_a_stdout(100, rates["htsim A-100"] * M, 8_333_347))
    if "D" in groups:
        (out / f"aqD_{r}.json").write_text(json.dumps([bench_row("D", rates["D"] * M, 45_080_118, 71.3)]))
        (out / f"hD_{r}.err").write_text(htsim_d_stderr(8, rates["htsim D"] * M))
        if ack1:
            (out / f"aqDack1_{r}.json").write_text(json.dumps([bench_row("D-ack1", rates["D-ack1"] * M, 61_000_000, 75.0)]))
    if "D-1024" in groups:
        (out / f"aqD1024_{r}.json").write_text(json.dumps([bench_row("D-1024", rates["D-1024"] * M, 64_667_084, 224.0)]))
        (out / f"hD1024_{r}.err").write_text(htsim_d_stderr(16, rates["htsim D-1024"] * M, 84_136_435))
        if ack1:
            rows = [bench_row("D-1024-ack1", rates["D-1024-ack1"] * M, 85_000_000, 230.0)]
            (out / f"aqD1024ack1_{r}.json").write_text(json.dumps(rows))


def target(summary: dict[str, Any], ratio: str) -> dict[str, Any]:
    return next(t for t in summary["targets"] if t["ratio"] == ratio)


# --- the summary ------------------------------------------------------------


def test_ratios_are_medians_of_pairs_not_ratios_of_medians(tmp_path: Path) -> None:
    # aqmlab 10, 20, 30 M against htsim 10, 5, 20 M: the pairs are 1, 4, 1.5
    # (median 1.5); the medians' ratio would be 20 / 10 = 2.
    for r, (aq, h) in enumerate([(10.0, 10.0), (20.0, 5.0), (30.0, 20.0)], start=1):
        write_round(tmp_path, r, {**ROUND, "A-10": aq, "htsim A-10": h}, ("A",))
    s = S.summarize_dir(tmp_path, ("A",))
    ratio = s["ratios"]["A-10 / htsim A-10"]
    assert ratio["per_round"] == pytest.approx([1.0, 4.0, 1.5])
    assert ratio["median"] == pytest.approx(1.5)
    assert s["rates"]["A-10"]["median"] / s["rates"]["htsim A-10"]["median"] == pytest.approx(2.0)
    assert (ratio["min"], ratio["max"]) == pytest.approx((1.0, 4.0))


def test_a_target_met_in_two_of_three_rounds_is_not_met(tmp_path: Path) -> None:
    # A-10-ack1 / htsim A-10: 2.1, 1.9, 2.2 against the target of 2.
    for r, ack1 in enumerate([16.8, 15.2, 17.6], start=1):
        write_round(tmp_path, r, {**ROUND, "A-10-ack1": ack1}, ("A",))
    t = target(S.summarize_dir(tmp_path, ("A",)), "A-10-ack1 / htsim A-10")
    assert (t["met"], t["rounds_met"], t["rounds"]) == (False, 2, 3)
    assert t["status"] == "not met, 2 of 3"
    assert t["worst"] == pytest.approx(1.9)
    # The median (2.1) alone would pass: the judgement is per round.
    assert sorted(t["per_round"])[1] >= t["threshold"]


def test_every_round_meeting_a_target_is_met_and_an_upper_bound_counts_its_limit() -> None:
    ge = S.Target("x ≥ 2", "x", ">=", 2.0)
    assert S.judge(ge, [2.0, 2.3, 2.1])["status"] == "met, 3 of 3"
    le = S.Target("D / D-1024 ≤ 1.3", "D / D-1024", "<=", 1.3)
    j = S.judge(le, [1.2, 1.3, 1.31])
    assert (j["met"], j["status"], j["worst"]) == (False, "not met, 2 of 3", 1.31)
    assert S.judge(le, [1.2, 1.3])["status"] == "met, 2 of 2"


def test_issue_22_targets_and_ratios_from_a_full_round(tmp_path: Path) -> None:
    write_round(tmp_path, 1, ROUND)
    s = S.summarize_dir(tmp_path, S.GROUPS)
    assert s["rounds"] == 1
    by = {t["ratio"]: t for t in s["targets"]}
    assert by["A-10-ack1 / htsim A-10"]["per_round"] == pytest.approx([2.0])  # 16 / 8: met at the limit
    assert by["A-10-ack1 / htsim A-10"]["status"] == "met, 1 of 1"
    assert by["A-100-ack1 / htsim A-100"]["per_round"] == pytest.approx([2.0])
    assert by["A-10 / htsim A-10"]["per_round"] == pytest.approx([2.5])
    assert by["A-10 / D"]["per_round"] == pytest.approx([2.0])  # A-10's packets over D's packet-hops
    assert by["A-10 / D"]["status"] == "not met, 0 of 1"
    assert by["D / D-1024"]["per_round"] == pytest.approx([10 / 7])
    assert s["ratios"]["D-1024 / htsim D-1024"]["median"] == pytest.approx(7 / 1.5)
    assert s["counts"]["htsim D"] == [57_742_839] and s["counts"]["htsim A-100"] == [8_333_347]
    assert s["memory_mb"]["D-1024"]["median"] == 224.0
    assert s["aqmlab_build"] == ["pgo"]
    # The fat trees at equal work (an ACK per packet in both): measured, not targets.
    assert s["ratios"]["D-ack1 / htsim D"]["per_round"] == pytest.approx([8 / 4])
    assert s["ratios"]["D-1024-ack1 / htsim D-1024"]["per_round"] == pytest.approx([5 / 1.5])
    assert not {t["ratio"] for t in s["targets"]} & {"D-ack1 / htsim D", "D-1024-ack1 / htsim D-1024"}
    assert s["memory_mb"]["D-1024-ack1"]["median"] == 230.0 and s["counts"]["D-ack1"] == [61_000_000]
    assert s["ratios_not_measured"] == {}


def test_an_older_directory_without_the_ack1_runs_shows_them_not_measured(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """A directory written before compare.py ran D-ack1 and D-1024-ack1 is
    still summarised: their ratios are not measured, the rest as before."""
    for r in (1, 2):
        write_round(tmp_path, r, ROUND, ack1=False)
    assert compare.main(["--summarize", str(tmp_path)]) == 0
    s = json.loads((tmp_path / "summary.json").read_text())
    assert "D-ack1" not in s["rates"] and "D-1024-ack1" not in s["memory_mb"]
    assert set(s["ratios_not_measured"]) == {"D-ack1 / htsim D", "D-1024-ack1 / htsim D-1024"}
    assert s["ratios_not_measured"]["D-ack1 / htsim D"].startswith("not measured (no aqDack1_1.json")
    assert s["ratios"]["D / htsim D"]["per_round"] == pytest.approx([2.5, 2.5])
    assert target(s, "D / D-1024")["status"] == "not met, 0 of 2"
    printed = " ".join(capsys.readouterr().out.split())
    assert "D-1024-ack1 / htsim D-1024" in printed and "not measured" in printed


def test_ack1_runs_in_round_1_are_required_in_every_round(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_round(tmp_path, 1, ROUND)
    write_round(tmp_path, 2, ROUND, ack1=False)
    assert compare.main(["--summarize", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"compare: {tmp_path / 'aqDack1_2.json'}: missing\n"


def test_a_part_leaves_the_other_targets_not_measured(tmp_path: Path) -> None:
    write_round(tmp_path, 1, ROUND, ("D", "D-1024"))
    assert S.groups_in(tmp_path) == ("D", "D-1024")
    s = S.summarize_dir(tmp_path, ("D", "D-1024"))
    assert "A-10" not in s["rates"]
    assert target(s, "A-10 / D")["met"] is None and "not measured" in target(s, "A-10 / D")["status"]
    assert target(s, "D / D-1024")["status"] == "not met, 0 of 1"


def test_the_rates_read_from_real_aqmlab_bench_json(tmp_path: Path) -> None:
    # The keys the summary reads are those `aqmlab bench --json` writes.
    p = cli("bench", "--only", "A-10", "--only", "D", "--duration", "2ms", "--json", "-q", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    (tmp_path / "aqD_1.json").write_text(p.stdout)
    rows = S.read_bench(tmp_path / "aqD_1.json", ("A-10", "D"))
    for rate in S.RATES:
        if rate.bench in rows:
            assert rows[rate.bench][rate.key] > 0 and rows[rate.bench][rate.count_key] > 0
    assert rows["D"]["peak_rss_mb"] > 0


def test_pooled_sets_are_judged_on_every_round_of_every_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two sets of rounds: one (A and D, no ack1 fat-tree run) where
    A-10-ack1 meets 2 x htsim in both rounds, one (every group) where it
    misses in one of three. Pooled, the target is not met, 4 of 5 rounds,
    worst the miss; the groups are those both sets have, and each set keeps
    its own median and verdict."""
    good, mixed = tmp_path / "good", tmp_path / "mixed"
    for r in (1, 2):
        write_round(good, r, {**ROUND, "A-10-ack1": 17.0}, ("A", "D"), ack1=False)  # 17 / 8 = 2.125
    write_round(mixed, 1, {**ROUND, "A-10-ack1": 18.0})  # 2.25
    write_round(mixed, 2, {**ROUND, "A-10-ack1": 14.0})  # 1.75: the one round that misses
    write_round(mixed, 3, {**ROUND, "A-10-ack1": 16.4})  # 2.05
    s = S.summarize_dirs([good, mixed])
    assert s["groups"] == ["A", "D"] and s["rounds"] == 5
    t = target(s, "A-10-ack1 / htsim A-10")
    assert t["per_round"] == pytest.approx([2.125, 2.125, 2.25, 1.75, 2.05])
    assert t["status"] == "not met, 4 of 5" and t["worst"] == pytest.approx(1.75)
    assert "D-ack1 / htsim D" in s["ratios_not_measured"]  # the first set has no aqDack1: left out of all
    assert target(s, "D / D-1024")["met"] is None  # D-1024 is not in every set
    assert [x["rounds"] for x in s["sets"]] == [2, 3]
    assert s["sets"][0]["targets"]["A-10-ack1 / htsim A-10"] == "met, 2 of 2"
    assert s["sets"][1]["targets"]["A-10-ack1 / htsim A-10"] == "not met, 2 of 3"
    assert s["sets"][1]["ratio_medians"]["A-10-ack1 / htsim A-10"] == pytest.approx(2.05)
    # The command prints the pooled tables and each set's column, and writes nothing into the sets.
    assert compare.main(["--summarize", str(good), str(mixed)]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "not met, 4 of 5" in printed and "2.05, 2 of 3" in printed and "2.12, 2 of 2" in printed
    assert not (good / "summary.json").exists() and not (mixed / "summary.json").exists()


@pytest.mark.parametrize(
    ("dirs", "message"),
    [
        (lambda d: [d, d], "is given twice (its rounds would count twice)"),
        (lambda d: [d, d / "absent"], "absent is not a directory"),
        (lambda d: [d, d.parent], "holds no results of compare.py"),
        (lambda d: [d.parent], "holds no results of compare.py"),  # one set, as before
    ],
)
def test_pooling_rejects_a_set_given_twice_or_without_rounds(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            dirs: Any, message: str) -> None:  # fmt: skip
    one = tmp_path / "set"
    write_round(one, 1, ROUND)
    assert compare.main(["--summarize", *map(str, dirs(one))]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("compare: ") and message in err


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: (d / "hA100_1.out").write_text("At 260 RTO 250\n"), "hA100_1.out: no JSON line"),
        (lambda d: (d / "hD_1.err").unlink(), "hD_1.err: missing"),
        (lambda d: (d / "aqA_1.json").write_text(json.dumps([bench_row("A-10", 1e7)])), "no result for benchmark A-10-ack1"),
        (lambda d: (d / "aqD_1.json").write_text("Traceback (most recent call last):"), "aqD_1.json: not the JSON of aqmlab bench"),
    ],
)
def test_a_broken_output_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: Any, message: str) -> None:
    write_round(tmp_path, 1, ROUND)
    damage(tmp_path)
    assert compare.main(["--summarize", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("compare: ") and message in err
    assert not (tmp_path / "summary.json").exists()


# --- compare.py's runner, with stand-ins for htsim and aqmlab ---------------


def _script(path: Path, body: str) -> None:
    path.write_text(f"#!{sys.executable}\nimport sys, json\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def stand_ins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A bin directory whose htsim_a and htsim_d print results in the
    drivers' formats, and aqmlab bench replaced by a script printing its
    JSON: compare.py's rounds in milliseconds."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    a_out = {10: htsim_a_stdout(10, 8e6), 100: htsim_a_stdout(100, 7.5e6, 8_333_347)}
    _script(bin_dir / "htsim_a", f"sys.stdout.write({a_out!r}[int(sys.argv[1])])")
    d_err = {8: htsim_d_stderr(8, 4e6), 16: htsim_d_stderr(16, 1.5e6, 84_136_435)}
    _script(bin_dir / "htsim_d", f"sys.stderr.write({d_err!r}[int(sys.argv[1])])")
    names = ("A-10", "A-10-ack1", "A-100", "A-100-ack1", "D", "D-ack1", "D-1024", "D-1024-ack1")
    rows = {n: bench_row(n, ROUND[n] * 1e6) for n in names}
    fake_bench = tmp_path / "fake_bench.py"
    _script(fake_bench, f"rows = {rows!r}\nprint(json.dumps([rows[n] for n in sys.argv[1:]]))")
    real = compare._command

    def command(run: Any, b: Path) -> list[str]:
        return real(run, b) if run.htsim else [sys.executable, str(fake_bench), *S.BENCH_NAMES[run.stem]]

    monkeypatch.setattr(compare, "_command", command)
    return bin_dir


def test_compare_runs_the_rounds_in_order_and_keeps_every_output(tmp_path: Path, stand_ins: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert compare.main(["--rounds", "2", "--no-pin", "--htsim-bin", str(stand_ins), "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["rounds"] == 2 and summary["groups"] == ["A", "D", "D-1024"]
    assert target(summary, "A-10 / htsim A-10")["status"] == "met, 2 of 2"
    assert target(summary, "D / D-1024")["status"] == "not met, 0 of 2"
    for r in (1, 2):
        for name in ("aqA", "hA10", "hA100", "aqD", "aqDack1", "hD", "aqD1024", "aqD1024ack1", "hD1024"):
            assert list(out.glob(f"{name}_{r}.*")), f"{name}_{r} kept"
    log = (out / "log.txt").read_text()
    stdouts = [line.split()[-3] for line in log.splitlines() if " 2> " in line]
    runs = (("aqA", "json"), ("hA10", "out"), ("hA100", "out"), ("aqD", "json"), ("aqDack1", "json"), ("hD", "out"),
            ("aqD1024", "json"), ("aqD1024ack1", "json"), ("hD1024", "out"))  # fmt: skip
    assert stdouts == [f"{stem}_{r}.{ext}" for r in (1, 2) for stem, ext in runs]
    assert "round 2 end" in log
    printed = capsys.readouterr().out
    assert "not met, 0 of 2" in printed and "A-10-ack1 ≥ 2 × htsim A-10" in printed
    assert "D-ack1 / htsim D" in printed and "D-1024-ack1 / htsim D-1024" in printed
    assert summary["ratios"]["D-ack1 / htsim D"]["per_round"] == pytest.approx([2.0, 2.0])


def test_each_ack1_run_is_its_own_aqmlab_bench_right_after_its_base(tmp_path: Path) -> None:
    order = [r.stem for r in S.RUNS]
    assert order.index("aqDack1") == order.index("aqD") + 1
    assert order.index("aqD1024ack1") == order.index("aqD1024") + 1
    run = {r.stem: r for r in S.RUNS}
    for stem, name in (("aqDack1", "D-ack1"), ("aqD1024ack1", "D-1024-ack1")):
        assert compare._command(run[stem], tmp_path)[-6:] == ["aqmlab", "bench", "--only", name, "--json", "-q"]


def test_compare_stops_at_a_failing_run_with_one_line(tmp_path: Path, stand_ins: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _script(stand_ins / "htsim_d", "sys.stderr.write('htsim_d: k must be even and at least 4\\n'); sys.exit(3)")
    out = tmp_path / "out"
    assert compare.main(["--only", "D", "--no-pin", "--htsim-bin", str(stand_ins), "--out", str(out)]) == 2
    err = capsys.readouterr().err.splitlines()
    last = err[-1]
    assert last.startswith("compare: round 1: htsim D") and "exit 3" in last and "k must be even" in last
    assert not any("Traceback" in line for line in err)
    assert (out / "aqD_1.json").exists() and not (out / "aqD1024_1.json").exists()


def test_compare_stops_at_a_run_without_its_result_line(tmp_path: Path, stand_ins: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _script(stand_ins / "htsim_a", "print('At 260 RTO 250 MDEV 0')")
    assert compare.main(["--only", "A", "--no-pin", "--htsim-bin", str(stand_ins), "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith("hA10_1.out: no JSON line (the run printed no result)")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--only", "B"], "--only: given 'B', allowed: A, D, D-1024"),
        (["--rounds", "0"], "--rounds: given 0, allowed: 1 or more"),
        (["--htsim-bin", "/nonexistent/bin"], "htsim not built (no /nonexistent/bin/htsim_a): run python scripts/htsim/build.py first"),
    ],
)
def test_compare_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    assert compare.main([*args, "--out", str(tmp_path / "o"), "--no-pin"]) == 2
    err = capsys.readouterr().err
    assert err == f"compare: {message}\n"
    assert not (tmp_path / "o").exists()


# --- the patcher of htsim's fat_tree_topology.cpp ---------------------------

#: The lines of htsim's fat_tree_topology.cpp the patcher anchors on (only
#: those, around stand-in code).
ANCHORED = """\
uint32_t FatTreeTopology::_tiers = 3;
int other_global = 0;

BaseQueue* FatTreeTopology::alloc_src_queue(QueueLogger* queueLogger){
    switch (_sender_qt) {
    case FAIR_PRIO:
        return make_fair_prio();
    default:
        abort();
    }
}

BaseQueue* FatTreeTopology::alloc_queue(QueueLogger* queueLogger, linkspeed_bps speed, mem_b queuesize){
    switch (_qt) {
    case ECN:
        return new ECNQueue(speed, queuesize, *_eventlist, queueLogger, memFromPkt(15));
    default:
        abort();
    }
}
"""


def test_the_patcher_makes_both_changes() -> None:
    out = patcher.patch(ANCHORED)
    assert out.count("mem_b fat_tree_ecn_k = 15 * 1500;") == 1  # defined, the stock K by default
    assert out.count("queueLogger, fat_tree_ecn_k);") == 2  # used: the switch ports' K, the host NIC's
    assert "queueLogger, memFromPkt(15));" not in out
    src_queue = out.split("alloc_src_queue")[1].split("\n}\n")[0]
    assert "case ECN:" in src_queue and "_queue_up[TOR_TIER]" in src_queue
    # alloc_queue's own default is left alone: one abort() per function.
    assert out.count("abort();") == 2


def test_the_patcher_fails_cleanly_without_its_anchor(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "fat_tree_topology.cpp"
    src.write_text(ANCHORED.replace("memFromPkt(15)", "memFromPkt(20)"))
    dest = tmp_path / "patched.cpp"
    assert patcher.main([str(src), str(dest)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "anchor for alloc_queue's case ECN with memFromPkt(15) found 0 times" in err
    assert not dest.exists()
    assert src.read_text() == ANCHORED.replace("memFromPkt(15)", "memFromPkt(20)")


def test_the_patcher_refuses_an_ambiguous_anchor_or_a_patched_file(tmp_path: Path) -> None:
    with pytest.raises(patcher.PatchError, match="found 2 times"):
        patcher.patch(ANCHORED + "uint32_t FatTreeTopology::_tiers = 3;\n")
    with pytest.raises(patcher.PatchError, match="already patched"):
        patcher.patch(patcher.patch(ANCHORED))


# --- build.py's checks before it writes anything ----------------------------


def test_build_refuses_a_source_that_is_not_htsim(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTSIM_SRC", str(tmp_path))
    assert build.main(["--build-dir", str(tmp_path / "b")]) == 2
    assert capsys.readouterr().err == f"build: HTSIM_SRC: {tmp_path} is not a csg-htsim checkout (no sim/Makefile)\n"
    assert not (tmp_path / "b").exists()


def test_build_never_writes_into_htsims_checkout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "sim").mkdir()
    (tmp_path / "sim" / "Makefile").write_text("all:\n")
    inside = tmp_path / "sim" / "build"
    assert build.main(["--src", str(tmp_path), "--build-dir", str(inside)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is inside htsim's checkout" in err
    assert not inside.exists()


def test_the_cpu_is_named_with_its_family_model_and_cache() -> None:
    # Two hosts of this machine type both call themselves "Intel(R) Xeon(R)
    # Processor"; their model numbers and caches tell them apart.
    two_cpus = "".join(
        f"processor\t: {i}\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: {m}\n"
        f"model name\t: Intel(R) Xeon(R) Processor\ncache size\t: {c} KB\n\n"
        for i, (m, c) in enumerate([(207, 307200), (167, 491520)]))
    assert compare._cpu_model(two_cpus) == "Intel(R) Xeon(R) Processor (family 6, model 207, cache 307200 KB)"
    assert compare._cpu_model("model name\t: Some CPU\n") == "Some CPU"
