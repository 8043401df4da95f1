"""Read the raw outputs of compare.py's rounds back and summarise them:
rates (medians, ranges), ratios taken within each round (aqmlab / htsim, and
between scenarios), and issue 22's targets judged per round.

Pure standard library, no simulator needed: tests/test_htsim_compare.py runs
it on small fixtures. The files of round r in an output directory (the names
compare.py writes):

    aqA_r.json      aqmlab bench --only A-10 --only A-10-ack1 --only A-100 --only A-100-ack1 --json
    hA10_r.out      htsim_a 10 10 (stdout: htsim's messages, then one JSON line)
    hA100_r.out     htsim_a 100 10
    aqD_r.json      aqmlab bench --only D --json
    aqDack1_r.json  aqmlab bench --only D-ack1 --json
    hD_r.err        htsim_d 8 100 1 1 (stderr: unfinished incast flows, then one JSON line)
    aqD1024_r.json  aqmlab bench --only D-1024 --json
    aqD1024ack1_r.json  aqmlab bench --only D-1024-ack1 --json
    hD1024_r.err    htsim_d 16 20 1 1

The two ack1 runs (D and D-1024 with an ACK for every packet, the work
htsim's sink does) came later than the others: a directory written before
them has none, and its summary shows their ratios as not measured. A
directory that has them in round 1 must have them in every round.

Ratios are ratios of pairs: aqmlab's rate over htsim's in the same round,
then the median over rounds (not a ratio of the medians), so that drift of
the machine between rounds cancels.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The groups of runs, in the order of a round (that of the earlier rounds.sh).
GROUPS = ("A", "D", "D-1024")


@dataclass(frozen=True)
class Run:
    stem: str  # file name before "_<round>"
    group: str
    label: str  # as printed
    htsim: bool
    optional: bool = False  # absent from directories written before it was added


RUNS = (
    Run("aqA", "A", "aqmlab bench A-10, A-10-ack1, A-100, A-100-ack1", False),
    Run("hA10", "A", "htsim A, 10 flows", True),
    Run("hA100", "A", "htsim A, 100 flows", True),
    Run("aqD", "D", "aqmlab bench D", False),
    Run("aqDack1", "D", "aqmlab bench D-ack1", False, optional=True),
    Run("hD", "D", "htsim D (k = 8, 100 ms)", True),
    Run("aqD1024", "D-1024", "aqmlab bench D-1024", False),
    Run("aqD1024ack1", "D-1024", "aqmlab bench D-1024-ack1", False, optional=True),
    Run("hD1024", "D-1024", "htsim D-1024 (k = 16, 20 ms)", True),
)

#: The aqmlab benchmarks each aqmlab run must report.
BENCH_NAMES = {"aqA": ("A-10", "A-10-ack1", "A-100", "A-100-ack1"), "aqD": ("D",), "aqDack1": ("D-ack1",),
               "aqD1024": ("D-1024",), "aqD1024ack1": ("D-1024-ack1",)}  # fmt: skip


@dataclass(frozen=True)
class Rate:
    name: str
    group: str
    stem: str  # the run it is read from
    bench: str | None  # aqmlab benchmark name; None for htsim
    key: str  # the rate's key in the JSON
    count_key: str  # what was counted (packets or packet-hops)
    unit: str


#: Every rate compare.py reports. A is counted in bottleneck packets per
#: wall-second, D and D-1024 in packet-hops per wall-second (both simulators
#: count a data packet or ACK leaving any queue, host NICs included).
RATES = (
    Rate("A-10", "A", "aqA", "A-10", "pkts_per_s", "bottleneck_packets", "packets/s"),
    Rate("A-10-ack1", "A", "aqA", "A-10-ack1", "pkts_per_s", "bottleneck_packets", "packets/s"),
    Rate("A-100", "A", "aqA", "A-100", "pkts_per_s", "bottleneck_packets", "packets/s"),
    Rate("A-100-ack1", "A", "aqA", "A-100-ack1", "pkts_per_s", "bottleneck_packets", "packets/s"),
    Rate("htsim A-10", "A", "hA10", None, "pkts_per_s", "pkts", "packets/s"),
    Rate("htsim A-100", "A", "hA100", None, "pkts_per_s", "pkts", "packets/s"),
    Rate("D", "D", "aqD", "D", "hops_per_s", "packet_hops", "packet-hops/s"),
    Rate("D-ack1", "D", "aqDack1", "D-ack1", "hops_per_s", "packet_hops", "packet-hops/s"),
    Rate("htsim D", "D", "hD", None, "hops_per_s", "packet_hops", "packet-hops/s"),
    Rate("D-1024", "D-1024", "aqD1024", "D-1024", "hops_per_s", "packet_hops", "packet-hops/s"),
    Rate("D-1024-ack1", "D-1024", "aqD1024ack1", "D-1024-ack1", "hops_per_s", "packet_hops", "packet-hops/s"),
    Rate("htsim D-1024", "D-1024", "hD1024", None, "hops_per_s", "packet_hops", "packet-hops/s"),
)

#: aqmlab's peak RSS (the benchmark child's own peak, Python included).
MEMORY = (("D", "aqD", "D"), ("D-ack1", "aqDack1", "D-ack1"), ("D-1024", "aqD1024", "D-1024"),
          ("D-1024-ack1", "aqD1024ack1", "D-1024-ack1"))  # fmt: skip

#: Ratios within a round: (name, numerator rate, denominator rate). The
#: two "-ack1 / htsim" ratios of the fat trees are the equal-work
#: comparison there (both simulators ACK every packet); they are
#: measurements, not issue 22's targets.
RATIOS = (
    ("A-10 / htsim A-10", "A-10", "htsim A-10"),
    ("A-10-ack1 / htsim A-10", "A-10-ack1", "htsim A-10"),
    ("A-100 / htsim A-100", "A-100", "htsim A-100"),
    ("A-100-ack1 / htsim A-100", "A-100-ack1", "htsim A-100"),
    ("D / htsim D", "D", "htsim D"),
    ("D-ack1 / htsim D", "D-ack1", "htsim D"),
    ("D-1024 / htsim D-1024", "D-1024", "htsim D-1024"),
    ("D-1024-ack1 / htsim D-1024", "D-1024-ack1", "htsim D-1024"),
    ("A-10 / D", "A-10", "D"),
    ("D / D-1024", "D", "D-1024"),
)


@dataclass(frozen=True)
class Target:
    text: str
    ratio: str  # a name in RATIOS
    op: str  # ">=" or "<="
    threshold: float


#: Issue 22's targets (its "Targets" section): equal work (an ACK per packet)
#: at 2 x htsim, the default A-10 at 2.5 x, D's packet-hop rate within 1.5 x
#: of A's packet rate, D-1024 within 1.3 x of D.
TARGETS = (
    Target("A-10-ack1 ≥ 2 × htsim A-10", "A-10-ack1 / htsim A-10", ">=", 2.0),
    Target("A-100-ack1 ≥ 2 × htsim A-100", "A-100-ack1 / htsim A-100", ">=", 2.0),
    Target("A-10 ≥ 2.5 × htsim A-10", "A-10 / htsim A-10", ">=", 2.5),
    Target("A-10 / D ≤ 1.5", "A-10 / D", "<=", 1.5),
    Target("D / D-1024 ≤ 1.3", "D / D-1024", "<=", 1.3),
)


class SummaryError(Exception):
    """A missing or malformed raw output: the message is the one line printed."""


def last_json_line(path: Path) -> dict[str, Any]:
    """The last line of a file that is a JSON object (htsim's result line)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        raise SummaryError(f"{path}: missing") from None
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                raise SummaryError(f"{path}: the result line is not valid JSON: {line[:80]}") from None
            if isinstance(value, dict):
                return value
    raise SummaryError(f"{path}: no JSON line (the run printed no result)")


def read_bench(path: Path, names: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """``aqmlab bench --json``'s list of results, by benchmark name."""
    try:
        rows = json.loads(path.read_text())
    except OSError:
        raise SummaryError(f"{path}: missing") from None
    except json.JSONDecodeError as e:
        raise SummaryError(f"{path}: not the JSON of aqmlab bench --json ({e.msg}, line {e.lineno})") from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "name" in r for r in rows):
        raise SummaryError(f"{path}: not the JSON of aqmlab bench --json (expected a list of results)")
    by_name = {r["name"]: r for r in rows}
    for n in names:
        if n not in by_name:
            raise SummaryError(f"{path}: no result for benchmark {n} (has: {', '.join(by_name) or 'none'})")
    return by_name


def run_file(out: Path, run: Run, r: int) -> Path:
    """Where a run's result is: aqmlab's JSON, htsim_a's stdout, htsim_d's stderr."""
    ext = ".json" if not run.htsim else (".out" if run.group == "A" else ".err")
    return out / f"{run.stem}_{r}{ext}"


def _number(d: dict[str, Any], key: str, path: Path) -> float:
    v = d.get(key)
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise SummaryError(f"{path}: no number under '{key}' (given {v!r})")
    return float(v)


def read_round(out: Path, r: int, groups: tuple[str, ...], absent: frozenset[str] = frozenset()) -> dict[str, Any]:
    """One round's rates, counts and memory, from its raw files; the
    optional runs in ``absent`` (stems) are not read."""
    parsed: dict[str, Any] = {}
    for run in RUNS:
        if run.group in groups and run.stem not in absent:
            path = run_file(out, run, r)
            parsed[run.stem] = (last_json_line(path) if run.htsim else read_bench(path, BENCH_NAMES[run.stem]), path)
    rates, counts, memory = {}, {}, {}
    for rate in RATES:
        if rate.group not in groups or rate.stem in absent:
            continue
        data, path = parsed[rate.stem]
        row = data if rate.bench is None else data[rate.bench]
        rates[rate.name] = _number(row, rate.key, path)
        counts[rate.name] = int(_number(row, rate.count_key, path))
    for name, stem, bench in MEMORY:
        if stem in parsed:
            data, path = parsed[stem]
            memory[name] = _number(data[bench], "peak_rss_mb", path)
    build = sorted({str(row.get("build")) for stem, (d, _) in parsed.items() if stem in BENCH_NAMES for row in d.values()})
    return {"rates": rates, "counts": counts, "memory_mb": memory, "aqmlab_build": build}


def spread(values: list[float]) -> dict[str, Any]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "per_round": values}


def judge(target: Target, per_round: list[float]) -> dict[str, Any]:
    """A target is met only if every round meets it; "k of n" rounds and the
    worst round are reported."""
    ok = [v >= target.threshold if target.op == ">=" else v <= target.threshold for v in per_round]
    k, n = sum(ok), len(ok)
    worst = min(per_round) if target.op == ">=" else max(per_round)
    met = n > 0 and k == n
    return {"target": target.text, "ratio": target.ratio, "op": target.op, "threshold": target.threshold,
            "per_round": per_round, "worst": worst, "rounds_met": k, "rounds": n, "met": met,
            "status": f"{'met' if met else 'not met'}, {k} of {n}"}  # fmt: skip


def _not_measured(num: str, den: str, groups: tuple[str, ...], absent: frozenset[str]) -> str:
    """Why a ratio is missing: a group left out, or an optional run this
    directory does not have."""
    by_name = {r.name: r for r in RATES}
    for name in (num, den):
        rate = by_name[name]
        if rate.group not in groups:
            return "not measured (its runs were left out by --only)"
        if rate.stem in absent:
            return f"not measured (no {rate.stem}_1.json)"
    return "not measured"


def summarize(rounds: list[dict[str, Any]], groups: tuple[str, ...] = GROUPS,
              absent: frozenset[str] = frozenset()) -> dict[str, Any]:  # fmt: skip
    """Medians and ranges of the rates, ratios of pairs, targets per round.
    ``rounds`` are read_round()'s results, all with the same groups
    (``groups``) and the same optional runs left out (``absent``): the
    ratios they leave out are listed in ``ratios_not_measured`` with why."""
    if not rounds:
        raise SummaryError("no rounds to summarise")
    names = [r.name for r in RATES if r.name in rounds[0]["rates"]]
    units = {r.name: r.unit for r in RATES}
    rates = {n: {"unit": units[n], **spread([x["rates"][n] for x in rounds])} for n in names}
    counts = {n: [x["counts"][n] for x in rounds] for n in names}
    memory = {n: spread([x["memory_mb"][n] for x in rounds]) for n in rounds[0]["memory_mb"]}
    ratios, not_measured = {}, {}
    for name, num, den in RATIOS:
        if num in rates and den in rates:
            ratios[name] = spread([x["rates"][num] / x["rates"][den] for x in rounds])
        else:
            not_measured[name] = _not_measured(num, den, groups, absent)
    targets = []
    for t in TARGETS:
        if t.ratio in ratios:
            targets.append(judge(t, ratios[t.ratio]["per_round"]))
        else:
            targets.append({"target": t.text, "ratio": t.ratio, "op": t.op, "threshold": t.threshold,
                            "met": None, "status": "not measured (its runs were left out by --only)"})  # fmt: skip
    build = sorted({b for x in rounds for b in x["aqmlab_build"]})
    return {"rounds": len(rounds), "rates": rates, "counts": counts, "memory_mb": memory, "ratios": ratios,
            "ratios_not_measured": not_measured, "targets": targets, "aqmlab_build": build}  # fmt: skip


def groups_in(out: Path) -> tuple[str, ...]:
    """The groups an output directory has results of (from round 1's files)."""
    return tuple(g for g in GROUPS if run_file(out, next(run for run in RUNS if run.group == g), 1).exists())


def groups_required(out: Path) -> tuple[str, ...]:
    """``groups_in``, refusing a directory that has none."""
    groups = groups_in(out)
    if not groups:
        raise SummaryError(f"{out}: holds no results of compare.py (no aqA_1.json, aqD_1.json, aqD1024_1.json)")
    return groups


def _absent(out: Path, groups: tuple[str, ...]) -> frozenset[str]:
    """The optional runs of ``groups`` that ``out`` lacks in round 1 (a
    directory written before they were added)."""
    return frozenset(run.stem for run in RUNS
                     if run.optional and run.group in groups and not run_file(out, run, 1).exists())  # fmt: skip


def _read_rounds(out: Path, groups: tuple[str, ...], absent: frozenset[str]) -> list[dict[str, Any]]:
    """Every complete round in ``out`` (rounds 1, 2, ... while their first
    file exists)."""
    first = next(run for run in RUNS if run.group in groups)
    rounds = []
    r = 1
    while run_file(out, first, r).exists():
        rounds.append(read_round(out, r, groups, absent))
        r += 1
    if not rounds:
        raise SummaryError(f"{out}: no rounds (no {run_file(out, first, 1).name})")
    return rounds


def summarize_dir(out: Path, groups: tuple[str, ...]) -> dict[str, Any]:
    """Summarise every complete round in ``out``. An optional run missing
    from round 1 is left out of every round (a directory written before it
    was added); one present in round 1 is required in every round."""
    absent = _absent(out, groups)
    return summarize(_read_rounds(out, groups, absent), groups, absent)


def _cpu_of(out: Path) -> str | None:
    """The CPU compare.py recorded in the set's meta.json (None if it has none)."""
    try:
        cpu = json.loads((out / "meta.json").read_text()).get("cpu")
    except (OSError, json.JSONDecodeError, AttributeError):
        return None
    return cpu if isinstance(cpu, str) else None


def summarize_dirs(outs: list[Path]) -> dict[str, Any]:
    """Pool the rounds of several output directories (sets of rounds, as
    docs/performance.md's Summary does) and judge the targets on every round
    of every set: a target is met only if each of them meets it. The groups
    are those every set has; an optional run one set lacks is left out of
    all. ``sets`` gives each set's own rounds, medians and verdicts, so a
    host or a day that differs shows."""
    if not outs:
        raise SummaryError("no directories to summarise")
    have = {out: groups_required(out) for out in outs}
    groups = tuple(g for g in GROUPS if all(g in gs for gs in have.values()))
    if not groups:
        raise SummaryError("no group of runs is in every directory: "
                           + "; ".join(f"{out.name}: {', '.join(gs)}" for out, gs in have.items()))  # fmt: skip
    absent = frozenset().union(*(_absent(out, groups) for out in outs))
    per_set = [(out, _read_rounds(out, groups, absent)) for out in outs]
    pooled = summarize([r for _, rounds in per_set for r in rounds], groups, absent)
    pooled["groups"] = list(groups)
    pooled["sets"] = []
    for out, rounds in per_set:
        own = summarize(rounds, groups, absent)
        pooled["sets"].append({"dir": str(out), "rounds": own["rounds"], "aqmlab_build": own["aqmlab_build"],
                               "cpu": _cpu_of(out),
                               "ratio_medians": {n: v["median"] for n, v in own["ratios"].items()},
                               "targets": {t["ratio"]: t["status"] for t in own["targets"]}})  # fmt: skip
    return pooled
