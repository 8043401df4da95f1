"""Reproductions of the seed papers' experiments, by name.

    aqmlab reproduce --list
    aqmlab reproduce dualq-coexistence --quick

Each experiment judges every claim case by case (PASS only if every case in
its scope passes; FAIL; DEVIATES-KNOWN with a written analysis; N/A when a
case could not be measured), prints per claim the band, "k of n" cases and
the worst case, and writes runs, plots, claims.json and a report. Adding one: subclass :class:`Experiment` in a module here and add
an instance to ``EXPERIMENTS``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from aqmlab._plot_options import plot_options
from aqmlab.reproduce.abe import Abe
from aqmlab.reproduce.aqm_kids import AqmKids
from aqmlab.reproduce.dualq import DualqCoexistence
from aqmlab.reproduce.dualq_dynamic import DualqDynamic
from aqmlab.reproduce.framework import (
    Case,
    Claim,
    Experiment,
    ExperimentUnavailable,
    ReproduceResult,
    Runs,
    Verdict,
    check_available,
    missing_requirements,
    reproduce,
)
from aqmlab.reproduce.qcn import QcnHotspot
from aqmlab.reproduce.vdq_csaqm import VdqCsaqm
from aqmlab.scenario import ScenarioError

__all__ = [
    "EXPERIMENTS",
    "Case",
    "Claim",
    "Experiment",
    "ExperimentUnavailable",
    "ReproduceResult",
    "Runs",
    "Verdict",
    "get",
    "missing_requirements",
    "reproduce",
    "status",
]


EXPERIMENTS: dict[str, Experiment] = {
    e.name: e for e in (DualqCoexistence(), DualqDynamic(), AqmKids(), Abe(), QcnHotspot(), VdqCsaqm())
}


def get(name: str) -> Experiment:
    try:
        return EXPERIMENTS[name]
    except KeyError:
        from difflib import get_close_matches

        close = [n for n in EXPERIMENTS if n.startswith(name)] or get_close_matches(name, list(EXPERIMENTS), n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise ExperimentUnavailable(
            f"unknown experiment '{name}' ({hint}allowed: {', '.join(EXPERIMENTS)}; see aqmlab reproduce --list)"
        ) from None


def status(exp: Experiment) -> str:
    """'available', 'not yet available: ...' or 'needs ...'."""
    if exp.pending:
        return f"not yet available ({exp.pending})"
    miss = missing_requirements(exp)
    return f"needs {', '.join(miss)} (not in this engine yet)" if miss else "available"


def cli_reproduce(args: argparse.Namespace) -> int:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.table import Table

    from aqmlab.console import consoles as _consoles

    out_c, err_c = _consoles()
    if args.list or not args.name:
        t = Table(title="Experiments (aqmlab reproduce NAME [--quick])", title_justify="left")
        for h in ("name", "title", "status"):
            t.add_column(h)
        for e in EXPERIMENTS.values():
            t.add_row(e.name, e.title, status(e))
        out_c.print(t)
        return 0
    exp = get(args.name)
    check_available(exp)
    try:  # checked before the runs, not after them
        opts = plot_options(getattr(args, "format", "png"), getattr(args, "size", None), getattr(args, "dpi", 110))
    except ValueError as e:
        raise ScenarioError(str(e)) from None
    out = Path(args.out) if args.out else Path("out") / "reproduce" / (exp.name + ("-quick" if args.quick else ""))
    cols = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("ETA"), TimeRemainingColumn()]  # fmt: skip
    quiet = bool(getattr(args, "quiet", False) or getattr(args, "json", False))
    with Progress(*cols, console=err_c, transient=False, disable=quiet) as bar:
        task = bar.add_task(f"{exp.name}{' (quick)' if args.quick else ''}", total=None)

        def progress(done: int, total: int, point: Any, status_: str) -> None:
            bar.update(task, completed=done, total=total)

        def on_case(label: str) -> None:
            bar.update(task, description=f"{exp.name}: {label}")

        res = reproduce(exp, quick=args.quick, out=out, jobs=args.jobs, cache_dir=None if args.no_cache else args.cache,
                        progress=progress, on_case=on_case, plot_formats=opts["formats"], plot_size_in=opts["size_in"],
                        plot_dpi=opts["dpi"])  # fmt: skip
        bar.update(task, description=exp.name)
    c = res.counts
    if getattr(args, "json", False):
        print((out / "claims.json").read_text(), end="")
    elif not quiet:
        print_verdicts(res, out_c)
        err_c.print(f"{sum(c.values())} runs: {c['cached']} cached, {c['ran']} simulated, {c['failed']} failed; wrote {out}/")
    if c["failed"]:
        return 1
    return 1 if (args.strict and not res.all_pass) else 0


def print_verdicts(res: ReproduceResult, console: Any) -> None:
    """Per claim: the seed's figure, the band and its basis, how many cases
    passed and the worst one, and the verdict."""
    from rich.table import Table

    t = Table(title=res.experiment.title, title_justify="left")
    for h, j in (("claim", "left"), ("seed", "left"), ("band", "left"), ("cases", "right"), ("worst case", "left"),
                 ("verdict", "left")):  # fmt: skip
        t.add_column(h, justify=j)  # type: ignore[arg-type]
    style = {"PASS": "green", "FAIL": "red", "DEVIATES-KNOWN": "magenta", "N/A": "yellow"}
    for c, j in zip(res.experiment.claims(), res.judgements, strict=True):
        band = f"{j.tolerance.band.describe(j.unit)} ({j.tolerance.basis})"
        t.add_row(c.text, c.paper, band, f"{j.passed}/{j.total}", j.worst_text(), f"[{style[j.verdict.value]}]{j.verdict.value}[/]")
    console.print(t)
    if res.quick:
        for line in res.experiment.quick_skips():
            console.print(f"quick mode skipped {line}", markup=False, highlight=False)
