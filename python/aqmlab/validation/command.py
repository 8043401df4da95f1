"""``aqmlab validation [--quick] [--out DIR] [--json]``.

Runs the suite with a progress bar, prints the table (or the JSON report
with ``--json``), and writes validation.json, validation.md and report.html
(with the plots) into DIR (default ``out/validation``). Exit code 0 when no
row FAILs, 1 when any does (N/A rows, unmeasurable in this build, do not
fail the command but are shown), 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

__all__ = ["add_parser", "cli_validation"]

EXIT_OK, EXIT_FAILED = 0, 1


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    v = sub.add_parser("validation", help="check the models against analytic laws, themselves and ns-3",
                       description="Run the model-validation suite (docs/validation.md) and write its report. "
                                   "Exit code 1 if any row FAILs.")  # fmt: skip
    v.add_argument("--quick", action="store_true", help="the decisive cases only (under 3 minutes on 2 cores)")
    v.add_argument("--out", help="output directory (default: out/validation)")
    v.add_argument("--json", action="store_true", help="print validation.json on stdout instead of the table")
    v.add_argument("--group", action="append", metavar="NAME", help="run only this group (repeatable): laws, bbr2, consistency, ns3")
    v.set_defaults(func=cli_validation)
    return v


def cli_validation(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from aqmlab.scenario import ScenarioError
    from aqmlab.validation import suite
    from aqmlab.validation.report import run_suite

    if args.group:
        unknown = [g for g in args.group if g not in suite.GROUPS]
        if unknown:
            raise ScenarioError(f"--group: unknown group '{unknown[0]}' (allowed: {', '.join(suite.GROUPS)})")
    err = Console(stderr=True, width=None if sys.stderr.isatty() else 120, highlight=False)
    out = Console(width=None if sys.stdout.isatty() else 160, highlight=False)
    cols = [TextColumn("validation"), BarColumn(), TextColumn("{task.completed:.0f} runs"), TextColumn("{task.fields[row]}"),
            TimeElapsedColumn()]  # fmt: skip
    with Progress(*cols, console=err, transient=True) as bar:
        task = bar.add_task("validation", total=None, row="")

        def progress(runs: int, label: str) -> None:
            bar.update(task, advance=runs, row=label)

        report = run_suite(args.quick, progress=progress, groups=args.group)
    dest = Path(args.out) if args.out else Path("out") / "validation"
    files = report.write(dest)
    if args.json:
        sys.stdout.write(json.dumps(report.as_dict(), indent=2, default=float) + "\n")
    else:
        t = Table(title=f"Model validation ({'quick' if args.quick else 'full'}), commit {report.commit}", title_justify="left")
        for h in ["row", "reference", "measured (worst case)", "band", "source", "verdict", "k of n"]:
            t.add_column(h, overflow="fold")
        style = {"PASS": "green", "FAIL": "bold red", "N/A": "yellow", "DEVIATES-KNOWN": "magenta"}
        for r in report.table_rows():
            t.add_row(r["row"], r["reference"], r["measured"], r["band"], r["source"],
                      f"[{style[r['verdict']]}]{r['verdict']}[/]", r["k of n"])  # fmt: skip
        out.print(t)
        for g in report.skipped_groups:
            out.print(f"group '{g}' is not in this build: skipped", markup=False)
        for note in report.skipped_in_quick:
            out.print(f"quick mode skips, {note}", markup=False)
    err.print(f"{len(report.rows)} rows in {report.wall_s:.0f} s: {len(report.failed)} FAIL; wrote {files['json']}, "
              f"{files['markdown'].name}, {files['html'].name}", markup=False)  # fmt: skip
    return EXIT_FAILED if report.failed else EXIT_OK
