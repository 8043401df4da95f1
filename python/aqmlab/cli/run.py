"""``aqmlab validate`` and ``aqmlab run``: one scenario, checked or run with a
progress bar in simulated time, and its summary as terminal tables."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aqmlab.cli.common import EXIT_OK, _consoles, _duration_s, _fmt, _parse_set, _plot_options
from aqmlab.scenario import ScenarioError, check_writable_dir

if TYPE_CHECKING:
    from rich.console import Console

    from aqmlab.results import Result


# ---------------------------------------------------------------------------
# validate


def cmd_validate(args: argparse.Namespace) -> int:
    from aqmlab.scenario import dump_toml, set_path, to_dict, validate

    tree = to_dict(args.file)
    for path, value in _parse_set(args.set).items():
        set_path(tree, path, value)
    normalized = validate(tree)
    if not args.quiet and not args.json:
        from aqmlab.resources import estimate

        sys.stderr.write(f"this run needs {estimate(normalized).describe()}\n")
    if args.json:
        print(json.dumps(normalized, indent=2, sort_keys=True))
    elif args.show:
        sys.stdout.write(dump_toml(normalized))
    elif not args.quiet:
        print(f"{args.file}: ok")
    return EXIT_OK


# ---------------------------------------------------------------------------
# run


def _mbps(bps: float | None) -> str:
    return "–" if bps is None else f"{bps / 1e6:.3f}"


#: Beyond this many queues the terminal lists the busiest (a fat tree has thousands).
QUEUE_ROWS = 20


def print_summary(r: Result, console: Console, *, all_flows: bool = False, all_queues: bool = False) -> None:
    """Flows, queues and fairness as terminal tables."""
    from rich.table import Table

    from aqmlab.busiest import busiest_summary_queues

    s = r.summary
    flows = s.get("flows", [])
    finite = any(f.get("fct_s") is not None for f in flows)
    if flows and (all_flows or len(flows) <= 20):
        t = Table(title="Flows", title_justify="left")
        for h in ["flow", "label", "cc", "ecn", "RTT ms", "goodput Mbit/s", "retransmits"] + (["FCT s"] if finite else []):
            t.add_column(h, justify="left" if h in ("label", "cc", "ecn") else "right")
        for f in flows:
            row = [str(f["id"]), str(f.get("label", "")), f["cc"], f["ecn"], _fmt(f["rtt_ms"]),
                   _mbps(f["goodput_bps"]), str(f["retransmits"])]  # fmt: skip
            if finite:
                row.append(_fmt(f.get("fct_s")))
            t.add_row(*row)
        console.print(t)
    elif flows:
        t = Table(title=f"Flows ({len(flows)}, per group; --all-flows for each)", title_justify="left")
        for h in ["label", "cc", "flows", "RTT ms", "mean goodput Mbit/s", "min", "max", "retransmits"]:
            t.add_column(h, justify="left" if h in ("label", "cc") else "right")
        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for f in flows:
            groups.setdefault((str(f.get("label", "")), f["cc"]), []).append(f)
        for (label, cc), fs in groups.items():
            gp = [f["goodput_bps"] for f in fs if f["goodput_bps"] is not None]
            rtts = sorted({f["rtt_ms"] for f in fs})
            rtt = _fmt(rtts[0]) if len(rtts) == 1 else f"{_fmt(rtts[0])}–{_fmt(rtts[-1])}"
            t.add_row(label, cc, str(len(fs)), rtt, _mbps(sum(gp) / len(gp) if gp else None),
                      _mbps(min(gp) if gp else None), _mbps(max(gp) if gp else None),
                      str(sum(f["retransmits"] for f in fs)))  # fmt: skip
        console.print(t)
    wf = s.get("workload_flows") or {}
    if wf.get("started"):
        console.print(
            f"Workload flows: {wf['started']} started, {wf['completed']} completed, mean FCT {_fmt(wf.get('mean_fct_s'))} s"
        )
    queues = [q for q in s.get("queues", []) if q.get("arrivals") or not q["name"].endswith(":rev")]
    title = "Queues"
    if len(queues) > QUEUE_ROWS and not all_queues:
        title = f"Queues ({QUEUE_ROWS} of {len(queues)}: the highest p99 sojourn; --all-queues for each)"
        queues = busiest_summary_queues(queues, QUEUE_ROWS)
    t = Table(title=title, title_justify="left")
    for h in ["queue", "sub-queue", "aqm", "sojourn p50 ms", "p99 ms", "drop rate", "mark rate", "utilization"]:
        t.add_column(h, justify="left" if h in ("queue", "sub-queue", "aqm") else "right")
    for q in queues:
        for sub, st in [("all", q)] + sorted((q.get("subqueues") or {}).items()):
            soj = st.get("sojourn_ms") or {}
            t.add_row(q["name"], sub, q["aqm"], _fmt(soj.get("p50")), _fmt(soj.get("p99")), _fmt(st.get("drop_rate")),
                      _fmt(st.get("mark_rate")), _fmt(q.get("utilization")) if sub == "all" else "")  # fmt: skip
    console.print(t)
    fair = s.get("fairness", {})
    line = f"Jain's fairness index: {_fmt(fair.get('jain'))}"
    if fair.get("l4s_classic_ratio") is not None:
        line += f"   L4S:Classic throughput ratio: {_fmt(fair['l4s_classic_ratio'])}"
    console.print(line)


def _limits(args: argparse.Namespace) -> dict[str, Any]:
    """--max-memory/--max-time/--force in run()'s terms; bad values exit 2."""
    from aqmlab.resources import parse_bytes

    out: dict[str, Any] = {"force": bool(getattr(args, "force", False))}
    if getattr(args, "max_memory", None):
        try:
            out["max_memory_bytes"] = parse_bytes(args.max_memory)
        except ValueError as e:
            raise ScenarioError(f"--max-memory: {e}") from None
    if getattr(args, "max_time", None):
        seconds = _duration_s(args.max_time)
        if seconds is None or seconds <= 0:
            raise ScenarioError(f"--max-time: '{args.max_time}': give a duration such as '30min' or '90s'")
        out["max_time_s"] = seconds
    return out


def run_with_progress(tree: dict[str, Any], err: Console, *, label: str = "run", quiet: bool = False,
                      **limits: Any) -> Result:  # fmt: skip
    """Validate and run a scenario tree with a progress bar in simulated
    time: the simulated-time rate and an ETA."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from aqmlab.results import run
    from aqmlab.scenario import validate

    normalized = validate(tree)
    if not limits.get("force"):  # refuse before any progress bar appears
        from aqmlab.resources import check, estimate

        check(estimate(normalized), max_memory_bytes=limits.get("max_memory_bytes"), max_time_s=limits.get("max_time_s"))
        limits = {"force": True}
    total = _duration_s(str(normalized.get("duration", "")))
    if quiet:
        return run(normalized, **limits)
    cols = [TextColumn("{task.description}"), BarColumn(),
            TextColumn("{task.completed:.2f}/{task.total:.2f} s simulated"),
            TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn()]  # fmt: skip
    import time

    with Progress(*cols, console=err, transient=False) as bar:
        task = bar.add_task(label, total=total, rate="")
        start = time.monotonic()

        def progress(sim_s: float) -> None:
            wall = time.monotonic() - start
            rate = f"{sim_s / wall:.3g} sim-s/s" if wall > 0.5 and sim_s > 0 else ""
            bar.update(task, completed=sim_s, rate=rate)

        return run(normalized, progress=progress, **limits)


def cmd_run(args: argparse.Namespace) -> int:
    from aqmlab.scenario import set_path, to_dict

    out_c, err_c = _consoles()
    tree = to_dict(args.file)
    for path, value in _parse_set(args.set).items():
        set_path(tree, path, value)
    if args.seed is not None:
        tree["seed"] = args.seed
    opts = _plot_options(args)  # checked before the run, not after it
    limits = _limits(args)
    out = Path(args.out) if args.out else Path("out") / Path(args.file).stem
    check_writable_dir(out)  # a read-only or full disk must not cost the run
    r = run_with_progress(tree, err_c, label=Path(args.file).stem, quiet=args.quiet or args.json, **limits)
    # Save before printing: a reader that closes the pipe early (`| head`)
    # must not cost the run. Plots and the report cost more than a small
    # run (matplotlib, pandas): only on request, or later with `aqmlab report`.
    files = r.save(out, plots=args.plots, report=args.report, plot_formats=opts["formats"],
                   plot_size_in=opts["size_in"], plot_dpi=opts["dpi"])  # fmt: skip
    if args.json:
        print(json.dumps(r.summary, indent=2, sort_keys=True))
        return EXIT_OK
    if not args.quiet:
        print_summary(r, out_c, all_flows=args.all_flows, all_queues=args.all_queues)
    written = f"wrote {out}/: summary.json, scenario.toml, {len(files['tables'])} Parquet tables"
    later = f"aqmlab report {shlex.quote(str(out))}"
    if args.quiet:
        return EXIT_OK
    if "report" in files:
        err_c.print(f"{written}, {len(files['plots'])} plots, report.html", markup=False)
    elif "plots" in files:
        err_c.print(f"{written}, {len(files['plots'])} plots; for report.html, run: {later}", markup=False)
    else:
        err_c.print(f"{written}; for plots and report.html, run: {later}", markup=False)
    return EXIT_OK
