#!/usr/bin/env python3
"""aqmlab against htsim on the same machine, in interleaved rounds on one core.

    python scripts/htsim/build.py                  # once: htsim and the drivers
    python scripts/htsim/compare.py --rounds 3     # about 2½ minutes a round

Each round runs, one after the other on one core (``taskset -c CPU`` when
taskset is there, else the process's CPU affinity): ``aqmlab bench`` on A-10,
A-10-ack1, A-100, A-100-ack1; htsim's A with 10 and 100 flows; ``aqmlab bench
--only D``, ``--only D-ack1``; htsim's D; ``aqmlab bench --only D-1024``,
``--only D-1024-ack1``; htsim's D-1024. (The ack1 runs ACK every packet, as
htsim's sink: ``D-ack1 / htsim D`` and ``D-1024-ack1 / htsim D-1024`` are
the equal-work ratios on the fat trees, reported but not among the targets.)
``--only A`` (or D, D-1024; repeatable) runs a part. Every raw output stays in
the output directory (log.txt has each run's command line, times and load);
summary.json there holds the medians, ranges, ratios of pairs within a round
and issue 22's targets judged per round; the same is printed as tables.
``--summarize DIR`` prints and rewrites the summary of an earlier output
directory without running anything; ``--summarize DIR DIR ...`` pools the
rounds of several (the sets docs/performance.md's Summary judges on), judges
the targets on every round of every set, adds a table of each set's own
medians and verdicts, and writes nothing.

Any failure (htsim not built, a run failing, no result line) is one line on
stderr and exit code 2. scripts/htsim/README.md says what is measured.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import compare_summary as S  # noqa: E402  (the module next to this script)

REPO = HERE.parents[1]
DEFAULT_BUILD = REPO / "target" / "htsim"

#: htsim's arguments per run (htsim_a: flows, simulated seconds; htsim_d: k,
#: simulated ms, seed, count): the lengths of aqmlab's A (10 s), D (100 ms)
#: and D-1024 (20 ms).
HTSIM_ARGS = {"hA10": ("htsim_a", "10", "10"), "hA100": ("htsim_a", "100", "10"),
              "hD": ("htsim_d", "8", "100", "1", "1"), "hD1024": ("htsim_d", "16", "20", "1", "1")}  # fmt: skip


class CompareError(Exception):
    """The one line printed before exiting with 2."""


def _utc() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def _cpu_model(cpuinfo: str | None = None) -> str:
    """The CPU the runs share, with its family, model and cache as the
    kernel reports them: hosts that name themselves alike ("Intel(R) Xeon(R)
    Processor") differ in all three, and rates depend on them
    (docs/performance.md, Hardware)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return platform.processor() or "?"
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            if fields:
                break  # the first processor's block is enough
            continue
        fields.setdefault(key.strip(), value.strip())
    name = fields.get("model name") or platform.processor() or "?"
    detail = [f"{k} {fields[key]}" for k, key in (("family", "cpu family"), ("model", "model"), ("cache", "cache size")) if key in fields]
    return f"{name} ({', '.join(detail)})" if detail else name


def _pinning(cpu: int | None) -> tuple[list[str], str]:
    """The prefix that puts a run on one core, and a description for the log.
    Without taskset, this process's affinity is set (the runs inherit it)."""
    if cpu is None:
        return [], "not pinned (--no-pin)"
    if shutil.which("taskset"):
        return ["taskset", "-c", str(cpu)], f"taskset -c {cpu}"
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {cpu})
        return [], f"CPU affinity {{{cpu}}} (no taskset)"
    return [], "not pinned (no taskset, no CPU affinity on this system)"


def _command(run: S.Run, bin_dir: Path) -> list[str]:
    if run.htsim:
        name, *args = HTSIM_ARGS[run.stem]
        return [str(bin_dir / name), *args]
    only = [a for n in S.BENCH_NAMES[run.stem] for a in ("--only", n)]
    return [sys.executable, "-m", "aqmlab", "bench", *only, "--json", "-q"]


def _check_ready(bin_dir: Path, groups: tuple[str, ...]) -> None:
    for run in S.RUNS:
        if run.htsim and run.group in groups:
            exe = bin_dir / HTSIM_ARGS[run.stem][0]
            if not os.access(exe, os.X_OK):
                raise CompareError(f"htsim not built (no {exe}): run python scripts/htsim/build.py first")
    if importlib.util.find_spec("aqmlab") is None:
        raise CompareError(f"aqmlab is not importable by {sys.executable} (pip install aqmlab, or set PYTHONPATH)")


#: Run by the interpreter the benchmarks run under: the engine they will load.
_ENGINE_INFO = ("import json, aqmlab._engine as e, aqmlab._provenance as p; print(json.dumps({'version': e.__version__, "
                "'build': e.BUILD, 'source_digest': getattr(e, 'SOURCE_DIGEST', None), 'mismatch': p.engine_mismatch()}))")  # fmt: skip


def _aqmlab_engine() -> dict[str, Any]:
    """The engine the rounds' ``aqmlab bench`` runs load: its version, build
    and the digest of the sources it was built from, for meta.json. Refused
    when it was built from other sources than the checkout it is imported
    from (a stale editable install), whose figures would be credited to the
    wrong engine."""
    p = subprocess.run([sys.executable, "-c", _ENGINE_INFO], capture_output=True, text=True)
    if p.returncode != 0:
        lines = p.stderr.strip().splitlines()
        raise CompareError(f"aqmlab's engine cannot be loaded by {sys.executable}: {lines[-1] if lines else 'no message'}")
    info = json.loads(p.stdout)
    mismatch = info.pop("mismatch")
    if mismatch:
        raise CompareError(mismatch)
    return info


def _run_one(cmd: list[str], out: Path, run: S.Run, r: int, log) -> float:
    """Run one command with its stdout and stderr in files; fail on a
    non-zero exit with the last line of its stderr."""
    stdout = S.run_file(out, run, r) if not run.htsim or run.group == "A" else out / f"{run.stem}_{r}.out"
    stderr = out / f"{run.stem}_{r}.err"
    log.write(f"  {_utc()} {shlex.join(cmd)} > {stdout.name} 2> {stderr.name}\n")
    log.flush()
    t0 = time.monotonic()
    try:
        with stdout.open("w") as fo, stderr.open("w") as fe:
            p = subprocess.run(cmd, stdout=fo, stderr=fe, cwd=out)
    except OSError as e:
        raise CompareError(f"round {r}: {run.label}: cannot start {cmd[0]}: {e.strerror}") from None
    took = time.monotonic() - t0
    if p.returncode != 0:
        lines = stderr.read_text(errors="replace").strip().splitlines()
        why = lines[-1] if lines else "no message"
        raise CompareError(f"round {r}: {run.label} failed (exit {p.returncode}, {stderr}): {why}")
    return took


def run_rounds(args: argparse.Namespace, out: Path, groups: tuple[str, ...]) -> dict[str, Any]:
    bin_dir = Path(args.htsim_bin).expanduser().resolve()
    _check_ready(bin_dir, groups)
    engine = _aqmlab_engine()
    if out.exists() and any(out.iterdir()):
        raise CompareError(f"--out: {out} exists and is not empty (give a new directory, or --summarize it)")
    out.mkdir(parents=True, exist_ok=True)
    cpu = None if args.no_pin else args.cpu
    prefix, pinned = _pinning(cpu)
    build_info = bin_dir.parent / "build-info.json"
    meta = {"started_utc": _utc(), "rounds": args.rounds, "groups": list(groups), "pinning": pinned,
            "niceness": os.nice(0), "load_at_start": _load(), "host": platform.node(), "machine": platform.machine(), "cpu": _cpu_model(),
            "python": sys.executable, "aqmlab_engine": engine,
            "htsim_build": json.loads(build_info.read_text()) if build_info.is_file() else None}  # fmt: skip
    runs = [run for run in S.RUNS if run.group in groups]
    with (out / "log.txt").open("a") as log:
        log.write(f"pinning: {pinned}\n")
        for r in range(1, args.rounds + 1):
            log.write(f"round {r} start {_utc()} load {_load()}\n")
            for run in runs:
                print(f"round {r}/{args.rounds}: {run.label}", file=sys.stderr, flush=True)
                took = _run_one(prefix + _command(run, bin_dir), out, run, r, log)
                log.write(f"  done in {took:.2f} s\n")
                # A run without its result line stops the rounds here, not at the end.
                if run.htsim:
                    S.last_json_line(S.run_file(out, run, r))
                else:
                    S.read_bench(S.run_file(out, run, r), S.BENCH_NAMES[run.stem])
            log.write(f"round {r} end {_utc()} load {_load()}\n")
    meta["finished_utc"] = _utc()
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def _m(x: float) -> str:
    return f"{x / 1e6:.2f} M"


def _x(x: float) -> str:
    return f"{x:.2f} ×"


def print_summary(summary: dict[str, Any], where: str) -> None:
    from rich.table import Table

    from aqmlab.console import consoles  # the CLI's: 120 columns when not a terminal

    con, _ = consoles()
    n = summary["rounds"]
    build = ", ".join(summary.get("aqmlab_build") or []) or "?"
    rates = Table(title=f"Rates, median of {n} round{'s' if n > 1 else ''} (aqmlab build: {build}; {where})",
                  title_justify="left")  # fmt: skip
    for h in ("run", "unit", "median", "range", "per round", "count per run"):
        rates.add_column(h, justify="left" if h in ("run", "unit") else "right")
    for name, v in summary["rates"].items():
        counts = summary["counts"][name]
        count = f"{counts[0]:,}" if len(set(counts)) == 1 else "varies: " + ", ".join(f"{c:,}" for c in counts)
        rates.add_row(name, v["unit"], _m(v["median"]), f"{_m(v['min'])}–{_m(v['max'])}",
                      ", ".join(_m(x) for x in v["per_round"]), count)  # fmt: skip
    for name, v in summary["memory_mb"].items():
        rates.add_row(f"{name} peak RSS", "MB", f"{v['median']:.1f}", f"{v['min']:.1f}–{v['max']:.1f}",
                      ", ".join(f"{x:.1f}" for x in v["per_round"]), "")  # fmt: skip
    con.print(rates)
    ratios = Table(title="Ratios within a round (median of the rounds' ratios)", title_justify="left")
    for h in ("ratio", "median", "range", "per round"):
        ratios.add_column(h, justify="left" if h == "ratio" else "right")
    for name, v in summary["ratios"].items():
        ratios.add_row(name, _x(v["median"]), f"{_x(v['min'])}–{_x(v['max'])}", ", ".join(_x(x) for x in v["per_round"]))
    for name, why in summary.get("ratios_not_measured", {}).items():
        ratios.add_row(name, "", "", why)
    con.print(ratios)
    targets = Table(title="Issue 22's targets, judged per round (met only if every round meets it)",
                    title_justify="left")  # fmt: skip
    for h in ("target", "per round", "worst round", "status"):
        targets.add_column(h, justify="left" if h in ("target", "status") else "right")
    for t in summary["targets"]:
        if t["met"] is None:
            targets.add_row(t["target"], "", "", t["status"])
        else:
            targets.add_row(t["target"], ", ".join(_x(x) for x in t["per_round"]), _x(t["worst"]), t["status"])
    con.print(targets)
    if "sets" in summary:
        # One column per set (a set's name is its directory's), one row per target: median, "k of n".
        sets = Table(title=f"Each set's own rounds: median, rounds meeting the target ({len(summary['sets'])} sets, "
                     "pooled above)", title_justify="left")  # fmt: skip
        # The targets' names whole; a set's name may fold onto two lines.
        sets.add_column("target", justify="left", no_wrap=True)
        for one in summary["sets"]:
            sets.add_column(Path(one["dir"]).name, justify="right", overflow="fold", min_width=12)
        sets.add_row("rounds", *(str(one["rounds"]) for one in summary["sets"]))
        sets.add_row("aqmlab build", *(", ".join(one["aqmlab_build"]) or "?" for one in summary["sets"]))
        sets.add_row("CPU model", *(_model(one["cpu"]) for one in summary["sets"]))
        for t in summary["targets"]:
            cells = []
            for one in summary["sets"]:
                median = one["ratio_medians"].get(t["ratio"])
                status = one["targets"][t["ratio"]]
                cells.append(status if median is None else f"{median:.2f}, {status.split(', ', 1)[-1]}")
            sets.add_row(t["target"], *cells)
        con.print(sets)


def _model(cpu: str | None) -> str:
    """The model number in _cpu_model()'s text: hosts that name themselves
    alike differ there (sets written before it was recorded say so)."""
    found = re.search(r"model (\d+)", cpu or "")
    return found.group(1) if found else "not recorded"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    p.add_argument("--out", help="output directory, new or empty (default: target/htsim/runs/<UTC time>)")
    p.add_argument("--only", action="append", metavar="GROUP",
                   help=f"run only these groups, repeatable: {', '.join(S.GROUPS)} (default: all)")  # fmt: skip
    p.add_argument("--cpu", type=int, help="the core to run on (default: the last this process may use)")
    p.add_argument("--no-pin", action="store_true", help="do not pin the runs to one core")
    p.add_argument("--htsim-bin", default=str(DEFAULT_BUILD / "bin"), help="where build.py put htsim_a, htsim_d")
    p.add_argument("--summarize", metavar="DIR", nargs="+",
                   help="summarise an earlier output directory, or pool several; run nothing")  # fmt: skip
    args = p.parse_args(argv)
    pooled = args.summarize is not None and len(args.summarize) > 1
    try:
        if pooled:
            outs = _distinct_dirs(args.summarize)
            summary = S.summarize_dirs(outs)
            where = "pooled: " + ", ".join(d.name for d in outs)
        else:
            if args.summarize:
                out = Path(args.summarize[0]).expanduser().resolve()
                groups = S.groups_required(out)
            else:
                groups = _groups(args.only)
                out = _prepare_run(args)
                run_rounds(args, out, groups)
            summary = S.summarize_dir(out, groups)
            summary["groups"] = list(groups)
            meta = out / "meta.json"
            if meta.is_file():
                summary["meta"] = json.loads(meta.read_text())
            (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
            where = str(out)
    except (CompareError, S.SummaryError) as e:
        print(f"compare: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("compare: interrupted; the raw outputs so far are kept", file=sys.stderr)
        return 130
    try:
        print_summary(summary, where)
        if not pooled:
            print(f"raw outputs and summary.json in {where}")
    except BrokenPipeError:  # a reader that stops early (`| head`) is not an error
        pass
    return 0


def _distinct_dirs(given: list[str]) -> list[Path]:
    """The sets to pool: each a directory, none twice (its rounds would count twice)."""
    outs = [Path(d).expanduser().resolve() for d in given]
    for i, d in enumerate(outs):
        if not d.is_dir():
            raise CompareError(f"--summarize: {d} is not a directory")
        if d in outs[:i]:
            raise CompareError(f"--summarize: {d} is given twice (its rounds would count twice)")
    return outs


def _prepare_run(args: argparse.Namespace) -> Path:
    """Check --rounds and --cpu, choose the core; the output directory."""
    if args.rounds < 1:
        raise CompareError(f"--rounds: given {args.rounds}, allowed: 1 or more")
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    if args.cpu is None and allowed:
        args.cpu = allowed[-1]
    if args.cpu is not None and allowed and args.cpu not in allowed:
        raise CompareError(f"--cpu: given {args.cpu}, allowed: {', '.join(map(str, allowed))}")
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return Path(args.out).expanduser().resolve() if args.out else DEFAULT_BUILD / "runs" / stamp


def _groups(only: list[str] | None) -> tuple[str, ...]:
    if not only:
        return S.GROUPS
    for g in only:
        if g not in S.GROUPS:
            raise CompareError(f"--only: given '{g}', allowed: {', '.join(S.GROUPS)}")
    return tuple(g for g in S.GROUPS if g in only)


if __name__ == "__main__":
    sys.exit(main())
