"""The ``aqmlab`` command.

    aqmlab run SCENARIO.toml [--out DIR]      run one scenario
    aqmlab report DIR                         plots and report.html of a saved run
    aqmlab compare DIR1 DIR2 [...]            saved runs side by side
    aqmlab validate SCENARIO.toml             check it, run nothing
    aqmlab sweep SWEEP.toml [--jobs N]        grids × seeds, cached, resumable
    aqmlab reproduce NAME | --list            the seed papers' experiments
    aqmlab bench [--json]                     performance benchmark
    aqmlab registry                           AQMs and CCs with their defaults
    aqmlab validation [--quick] [--out DIR]   models against laws, themselves, ns-3

Invalid input (scenario, TOML syntax, sweep grid) prints one line,
``aqmlab: error: <message>``, on stderr and exits with code 2. Ctrl-C exits
with 130; finished sweep runs stay cached. Set AQMLAB_DEBUG=1 for tracebacks.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import traceback
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aqmlab import _engine
from aqmlab.scenario import OutputError, ScenarioError, check_writable_dir

if TYPE_CHECKING:
    from rich.console import Console

    from aqmlab.results import Result

__all__ = ["main", "build_parser"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def _consoles() -> tuple[Console, Console]:
    from aqmlab.console import consoles

    return consoles()


def _duration_s(text: str) -> float | None:
    """Display only (the progress bar's length): the engine's normalised
    duration text, e.g. "30s" or "1500ms", in seconds. Parsing for the
    simulation is the engine's; None when the text is not in that form."""
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|min)", text.strip())
    if not m:
        return None
    scale = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0}[m.group(2)]
    return float(m.group(1)) * scale


def _parse_set(items: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ScenarioError(f"--set {item}: write PATH=VALUE, e.g. --set bottleneck.aqm=step")
        path, raw = item.split("=", 1)
        try:
            value = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw
        out[path.strip()] = value
    return out


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


def _fmt(v: Any, digits: int = 3) -> str:
    from aqmlab.report import fmt

    return fmt(v, digits)


def _mbps(bps: float | None) -> str:
    return "–" if bps is None else f"{bps / 1e6:.3f}"


def print_summary(r: Result, console: Console, *, all_flows: bool = False) -> None:
    """Flows, queues and fairness as terminal tables."""
    from rich.table import Table

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
    t = Table(title="Queues", title_justify="left")
    for h in ["queue", "sub-queue", "aqm", "sojourn p50 ms", "p99 ms", "drop rate", "mark rate", "utilization"]:
        t.add_column(h, justify="left" if h in ("queue", "sub-queue", "aqm") else "right")
    for q in s.get("queues", []):
        if not q.get("arrivals") and q["name"].endswith(":rev"):
            continue
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
        print_summary(r, out_c, all_flows=args.all_flows)
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


# ---------------------------------------------------------------------------
# report


def cmd_report(args: argparse.Namespace) -> int:
    from aqmlab.results import Result

    out = Path(args.dir)
    if not (out / "summary.json").is_file() and (out / "sweep.json").is_file():
        from aqmlab.sweep_report import write_sweep_report

        files = write_sweep_report(out)
        _, err_c = _consoles()
        err_c.print(f"wrote {out}/: {len(files['plots'])} plots, sweep_report.html", markup=False)
        return EXIT_OK
    if not (out / "summary.json").is_file():
        sys.stderr.write(f"aqmlab: error: {out}: no summary.json or sweep.json here "
                         "(give a directory written by aqmlab run or aqmlab sweep)\n")  # fmt: skip
        return EXIT_USAGE
    files = Result.load(out).save_plots(out, report=True, **_plot_options(args))
    _, err_c = _consoles()
    err_c.print(f"wrote {out}/: {len(files['plots'])} plots, report.html", markup=False)
    return EXIT_OK


# ---------------------------------------------------------------------------
# compare


def cmd_compare(args: argparse.Namespace) -> int:
    from rich.table import Table

    from aqmlab.compare import compare

    out_c, err_c = _consoles()
    out = Path(args.out) if args.out else Path("out") / "compare"
    cmp = compare(*args.dirs, out=out)
    if args.json:
        print(cmp.table.to_json(orient="index", indent=2))
        return EXIT_OK
    if not args.quiet:
        t = Table(title="Headline metrics (Δ: difference from the first run)")
        t.add_column("metric")
        for c in cmp.table.columns:
            t.add_column(str(c), justify="right")
        for idx, row in cmp.table.iterrows():
            t.add_row(str(idx), *[_fmt(v) for v in row.tolist()])
        out_c.print(t)
        err_c.print(f"wrote {out}/: compare.csv, compare.html, plots/ (goodput, sojourn_cdf, rtt_cdf)", markup=False)
    return EXIT_OK


# ---------------------------------------------------------------------------
# sweep


def print_sweep_stats(res: Any, console: Console) -> None:
    """A few headline metrics per grid point as mean ± 95% CI."""
    from rich.table import Table

    st = res.stats
    if st.empty:
        return
    headline = {
        "fairness.jain": ("Jain", 1.0),
        "fairness.l4s_classic_ratio": ("L4S:Classic", 1.0),
        "flows.all.goodput_bps.sum": ("goodput Mbit/s", 1e-6),
        "queues.bottleneck.utilization": ("utilization", 1.0),
        "queues.bottleneck.sojourn_ms.p99": ("sojourn p99 ms", 1.0),
    }
    present = set(st["metric"])
    metrics = [m for m in headline if m in present and st.loc[st["metric"] == m, "mean"].notna().any()]
    params = list(res.spec.grid)
    t = Table(title=f"{res.spec.name}: mean ± 95% CI over {len(res.spec.seeds)} seed(s)", title_justify="left")
    for p in params:
        t.add_column(p)
    for m in metrics:
        t.add_column(headline[m][0], justify="right")
    sub = st[st["metric"].isin(metrics)]
    keyed = sub.groupby(params, sort=False, dropna=False) if params else [((), sub)]
    for key, g in keyed:
        key_t = key if isinstance(key, tuple) else (key,)
        row = [str(k) for k in key_t]
        by_m = {r["metric"]: r for _, r in g.iterrows()}
        for m in metrics:
            r = by_m.get(m)
            k = headline[m][1]
            if r is None or r["mean"] != r["mean"]:
                row.append("–")
            elif r["ci95"] == r["ci95"]:
                row.append(f"{_fmt(r['mean'] * k)} ± {_fmt(r['ci95'] * k, 1)}")
            else:
                row.append(_fmt(r["mean"] * k))
        t.add_row(*row)
    console.print(t)


def sweep_with_progress(spec: Any, err: Console, *, jobs: int | None, cache_dir: str | None, backend: str,
                        scheduler: str | None, label: str = "sweep", quiet: bool = False) -> Any:  # fmt: skip
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from aqmlab.sweep import (
        SweepResult,
        flows_table,
        run_points,
        runs_table,
        stats_table,
    )

    points = spec.points()
    counts = {"cached": 0, "ran": 0, "failed": 0}
    cols = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[detail]}"), TimeElapsedColumn()]  # fmt: skip
    with Progress(*cols, console=err, transient=False, disable=quiet) as bar:
        task = bar.add_task(label, total=len(points), detail="")

        def progress(done: int, total: int, point: Any, status: str) -> None:
            counts[status] += 1
            detail = f"{counts['cached']} cached, {counts['ran']} ran" + (f", {counts['failed']} failed" if counts["failed"] else "")
            bar.update(task, completed=done, detail=detail)

        outcomes = run_points(points, jobs=jobs, cache_dir=cache_dir, backend=backend, scheduler=scheduler, progress=progress)
    names = list(spec.grid)
    runs = runs_table(outcomes, names)
    return SweepResult(spec, outcomes, runs, flows_table(outcomes, names), stats_table(runs, names))


def cmd_sweep(args: argparse.Namespace) -> int:
    from aqmlab.sweep import SweepSpec, _seeds

    out_c, err_c = _consoles()
    spec = SweepSpec.load(args.file)
    if args.seeds is not None:
        spec.seeds = _seeds(args.seeds, spec.base)
    cache_dir = None if args.no_cache else args.cache
    res = sweep_with_progress(spec, err_c, jobs=args.jobs, cache_dir=cache_dir, backend=args.backend,
                              scheduler=args.scheduler, label=spec.name, quiet=args.quiet or args.json)  # fmt: skip
    out = Path(args.out) if args.out else Path("out") / spec.name
    res.save(out)
    if args.json:
        doc = {"name": spec.name, "out": str(out), "total": res.total, "cached": res.cached, "ran": res.ran,
               "failed": res.failed, "errors": [{"point": p, "error": e} for p, e in res.errors],
               "stats": json.loads(res.stats.to_json(orient="records"))}  # fmt: skip
        print(json.dumps(doc, indent=2, sort_keys=True))
    elif not args.quiet:
        print_sweep_stats(res, out_c)
        err_c.print(
            f"{res.total} runs: {res.cached} cached, {res.ran} simulated, {res.failed} failed; "
            f"wrote {out}/runs.parquet, flows.parquet, stats.parquet, sweep.json"
        )
    for point, error in res.errors:
        err_c.print(f"failed: {point}: {error}", markup=False)
    return EXIT_FAILED if res.failed else EXIT_OK


# ---------------------------------------------------------------------------
# registry


def cmd_registry(args: argparse.Namespace) -> int:
    import aqmlab

    reg = aqmlab.registry()
    if args.json:
        print(json.dumps(reg, indent=2, sort_keys=True))
    elif args.quiet:
        sys.stdout.write("".join(f"{kind} {name}\n" for kind in ("aqm", "cc") for name in reg[kind]))
    elif args.markdown:
        sys.stdout.write(registry_markdown(reg))
    else:
        out_c, _ = _consoles()
        from rich.table import Table

        for kind, title in (("aqm", "AQMs (\\[bottleneck] aqm, params)"), ("cc", "Congestion controls and rate-based sources (\\[\\[flows]] cc, params)")):
            t = Table(title=title, title_justify="left")
            t.add_column("name")
            t.add_column("summary")
            t.add_column("default params")
            for name, e in reg[kind].items():
                d = ", ".join(f"{k}={json.dumps(v)}" for k, v in e["defaults"].items()) or "(none)"
                if kind == "cc":
                    d += f"; default ecn={e['default_ecn']}"
                t.add_row(name, e["summary"], d)
            out_c.print(t)
        out_c.print(f"ECN settings: {', '.join(reg['ecn'])}")
    return EXIT_OK


def registry_markdown(reg: dict[str, Any]) -> str:
    """The defaults tables of docs/scenario.md, generated from the engine."""
    lines = ["### AQMs (`aqm`, `params`)", "", "| aqm | summary | parameter | default |", "|---|---|---|---|"]
    for name, e in reg["aqm"].items():
        items = list(e["defaults"].items()) or [("–", None)]
        for i, (k, v) in enumerate(items):
            first = i == 0
            shown = "–" if k == "–" else f"`{json.dumps(v)}`"
            lines.append(f"| {'`' + name + '`' if first else ''} | {e['summary'] if first else ''} | "
                         f"{'`' + k + '`' if k != '–' else '–'} | {shown} |")  # fmt: skip
    lines += ["", "### Congestion controls and rate-based sources (`cc`, `params`)", "", "| cc | summary | default `ecn` | parameter | default |",
              "|---|---|---|---|---|"]  # fmt: skip
    for name, e in reg["cc"].items():
        items = [(f"`{k}`", f"`{json.dumps(v)}`") for k, v in e["defaults"].items()] or [("–", "–")]
        for i, (k, v) in enumerate(items):
            first = i == 0
            lines.append(f"| {'`' + name + '`' if first else ''} | {e['summary'] if first else ''} | "
                         f"{'`' + e['default_ecn'] + '`' if first else ''} | {k} | {v} |")  # fmt: skip
    lines += ["", f"ECN settings (`ecn`): {', '.join('`' + x + '`' for x in reg['ecn'])}.", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# reproduce and bench live in their own modules.


def cmd_reproduce(args: argparse.Namespace) -> int:
    from aqmlab.reproduce import cli_reproduce

    return cli_reproduce(args)


def cmd_bench(args: argparse.Namespace) -> int:
    from aqmlab.bench import cli_bench

    return cli_bench(args)


# ---------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line plus usage, exit 2 (argparse's convention)
        self.print_usage(sys.stderr)
        sys.stderr.write(f"aqmlab: error: {message}\n")
        raise SystemExit(EXIT_USAGE)


def _jobs(text: str) -> int:
    """--jobs: a whole number of worker processes, at least 1 (checked before anything runs)."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"'{text}': give a whole number of parallel runs, at least 1 (leave it out for every core)")
    return n


def _add_plot_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", default="png", metavar="FMT[,FMT]",
                   help="plot formats besides the PNGs the report embeds: pdf, svg (e.g. --format pdf,svg)")  # fmt: skip
    p.add_argument("--size", metavar="WxH(in|cm)", help="figure size, e.g. 3.5x2.5in: redrawn in the paper style")
    p.add_argument("--dpi", type=int, default=110, help="PNG resolution (default: 110)")


def _plot_options(args: argparse.Namespace) -> dict[str, Any]:
    """--format/--size/--dpi checked, in save()'s terms; bad values exit 2."""
    from aqmlab._plot_options import FORMATS, parse_size_in

    formats = tuple(f.strip().lower() for f in args.format.split(",") if f.strip())
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise ScenarioError(f"--format: '{args.format}': allowed {', '.join(FORMATS)} (comma-separated)")
    if not 30 <= args.dpi <= 1200:
        raise ScenarioError(f"--dpi: {args.dpi}: allowed 30 to 1200")
    try:
        size = parse_size_in(args.size) if args.size else None
    except ValueError as e:
        raise ScenarioError(f"--size: {e}") from None
    return {"formats": formats, "size_in": size, "dpi": args.dpi}


def build_parser() -> argparse.ArgumentParser:
    from aqmlab.bench import METRICS  # standard library only: cheap at start-up

    p = _Parser(prog="aqmlab", description="Packet-level AQM and congestion-control experiments.")
    p.add_argument("--version", action="version", version=f"aqmlab {_engine.__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    r = sub.add_parser("run", help="run one scenario",
                       description="Run one scenario; write the summary and tables (and on request plots and a report).")  # fmt: skip
    r.add_argument("file", help="scenario TOML file")
    r.add_argument("--out", help="output directory (default: out/<file stem>)")
    r.add_argument("--seed", type=int, help="override the scenario's seed")
    r.add_argument("--set", action="append", default=[], metavar="PATH=VALUE",
                   help="override a value, e.g. --set bottleneck.aqm=step --set 'flows[0].count=4'")  # fmt: skip
    r.add_argument("--plots", action=argparse.BooleanOptionalAction, default=False,
                   help="also write PNG plots in DIR/plots (default: no)")  # fmt: skip
    r.add_argument("--report", action=argparse.BooleanOptionalAction, default=False,
                   help="also write the plots and a self-contained DIR/report.html (default: no)")  # fmt: skip
    r.add_argument("--all-flows", action="store_true", help="print every flow, not per-group rows")
    _add_plot_options(r)
    r.add_argument("-q", "--quiet", action="store_true", help="no progress bar or tables")
    r.add_argument("--json", action="store_true", help="print summary.json on stdout instead of the tables")
    r.add_argument("--max-memory", metavar="SIZE", help="refuse a run estimated to need more, e.g. 8GB "
                   "(default: the memory available on this machine)")  # fmt: skip
    r.add_argument("--max-time", metavar="DURATION", help="refuse a run estimated to take longer, e.g. 30min")
    r.add_argument("--force", action="store_true", help="run even when the estimate exceeds the limits")
    r.set_defaults(func=cmd_run)

    rep = sub.add_parser("report", help="write the plots and report.html of a saved run (or sweep)",
                         description="Render the PNG plots and report.html from a directory written by aqmlab run.")  # fmt: skip
    rep.add_argument("dir", metavar="DIR", help="output directory of aqmlab run (with summary.json)")
    _add_plot_options(rep)
    rep.set_defaults(func=cmd_report)

    c = sub.add_parser("compare", help="compare saved runs side by side (table, overlaid plots, HTML)")
    c.add_argument("dirs", nargs="+", metavar="DIR", help="directories written by aqmlab run (two or more)")
    c.add_argument("--out", help="output directory (default: out/compare)")
    c.add_argument("-q", "--quiet", action="store_true", help="write the files, print nothing")
    c.add_argument("--json", action="store_true", help="print the table as JSON (metric -> run -> value)")
    c.set_defaults(func=cmd_compare)

    v = sub.add_parser("validate", help="check a scenario (runs nothing)")
    v.add_argument("file", help="scenario TOML file")
    v.add_argument("--show", action="store_true", help="print the normalised scenario (all defaults) as TOML")
    v.add_argument("--set", action="append", default=[], metavar="PATH=VALUE", help="override a value first")
    v.add_argument("-q", "--quiet", action="store_true", help="print nothing; the exit code says it (0 ok, 2 invalid)")
    v.add_argument("--json", action="store_true", help="print the normalised scenario as JSON")
    v.set_defaults(func=cmd_validate)

    s = sub.add_parser("sweep", help="run a parameter sweep (cached, resumable)")
    s.add_argument("file", help="sweep TOML file")
    s.add_argument("--jobs", "-j", type=_jobs, default=None, help="parallel runs (default: all cores)")
    s.add_argument("--backend", choices=["local", "dask"], default="local", help="local process pool or dask")
    s.add_argument("--scheduler", help="dask scheduler address (default: a local dask cluster)")
    s.add_argument("--cache", default=".aqmlab-cache", help="cache directory (default: .aqmlab-cache)")
    s.add_argument("--no-cache", action="store_true", help="simulate everything, cache nothing")
    s.add_argument("--seeds", type=int, help="override the number of seeds (1..N)")
    s.add_argument("--out", help="output directory (default: out/<sweep name>)")
    s.add_argument("-q", "--quiet", action="store_true", help="no progress bar or tables (failures are still printed)")
    s.add_argument("--json", action="store_true", help="print sweep.json's counts and the statistics as JSON")
    s.set_defaults(func=cmd_sweep)

    rp = sub.add_parser("reproduce", help="re-run a seed paper's experiment and compare with its claims")
    rp.add_argument("name", nargs="?", help="experiment name (see --list)")
    rp.add_argument("--list", action="store_true", help="list the experiments")
    mode = rp.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="the decisive cases, short (seconds to a minute)")
    mode.add_argument("--full", action="store_true", help="the whole grid at the paper's durations, 3 seeds (the default; "
                      "may take hours on 2 cores, resumable from the cache)")  # fmt: skip
    rp.add_argument("--out", help="output directory (default: out/reproduce/<name>)")
    rp.add_argument("--jobs", "-j", type=_jobs, default=None, help="parallel runs (default: all cores)")
    rp.add_argument("--cache", default=".aqmlab-cache", help="cache directory (default: .aqmlab-cache)")
    rp.add_argument("--no-cache", action="store_true", help="simulate everything, cache nothing")
    rp.add_argument("--strict", action="store_true", help="exit with code 1 unless every claim passes")
    rp.add_argument("-q", "--quiet", action="store_true", help="no progress bar or table (the files are written)")
    rp.add_argument("--json", action="store_true", help="print claims.json on stdout instead of the table")
    rp.set_defaults(func=cmd_reproduce)

    b = sub.add_parser("bench", help="performance benchmark (packets per wall-second)")
    b.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    b.add_argument("--only", action="append", metavar="NAME", help="run only this scenario (repeatable)")
    b.add_argument("--repeat", type=int, default=1, help="runs per scenario; the median is reported")
    b.add_argument("--duration", help="override the simulated duration (smoke tests; not comparable)")
    b.add_argument("--rate", help="override the bottleneck rate, e.g. 100Gbps (scaling studies; not comparable)")
    b.add_argument("--metrics", default="default", choices=METRICS,
                   help="metric set: default (histograms, counters), off (counters only), samples (+ every sojourn)")  # fmt: skip
    b.add_argument("--list", action="store_true", help="list the scenarios")
    b.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr (the table or JSON only)")
    b.set_defaults(func=cmd_bench)

    g = sub.add_parser("registry", help="list AQMs and congestion controls with default parameters")
    g.add_argument("--json", action="store_true", help="the engine's registry as JSON")
    g.add_argument("--markdown", action="store_true", help="Markdown tables (as in docs/scenario.md)")
    g.add_argument("-q", "--quiet", action="store_true", help="names only: 'aqm NAME' and 'cc NAME' lines, for scripts")
    g.set_defaults(func=cmd_registry)

    from aqmlab.validation.command import add_parser as add_validation

    add_validation(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    # The CLI only writes image files: no display backend. Set for this
    # process only, and never by the library (notebooks keep inline figures).
    os.environ.setdefault("MPLBACKEND", "Agg")
    args = build_parser().parse_args(argv)
    debug = bool(os.environ.get("AQMLAB_DEBUG"))
    try:
        return int(args.func(args))
    except ScenarioError as e:  # includes SweepError and unavailable experiments
        if debug:  # the traceback as well, never a different exit code
            traceback.print_exc()
        sys.stderr.write(f"aqmlab: error: {e}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        if debug:  # the traceback as well, never a different exit code
            traceback.print_exc()
        note = "; finished runs are cached, re-run to resume" if args.command in ("sweep", "reproduce") else ""
        sys.stderr.write(f"aqmlab: interrupted{note}\n")
        return EXIT_INTERRUPTED
    except RuntimeError as e:  # the engine failed (panic, broken invariant)
        if debug:  # the traceback as well, never a different exit code
            traceback.print_exc()
        sys.stderr.write(f"aqmlab: engine error: {e}\n")
        return EXIT_FAILED
    except OutputError as e:  # read-only or full disk: one line, nothing half-written (issue 23)
        if debug:  # the traceback as well, never a different exit code
            traceback.print_exc()
        sys.stderr.write(f"aqmlab: error: {e}\n")
        return EXIT_USAGE
    except BrokenPipeError:
        # The reader went away (`aqmlab run X | head`): not an error. Point
        # stdout at /dev/null so the interpreter's final flush stays quiet.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except OSError as e:
        if debug:  # the traceback as well, never a different exit code
            traceback.print_exc()
        sys.stderr.write(f"aqmlab: error: {e}\n")
        return EXIT_FAILED
