"""``aqmlab sweep``: a sweep file run with a progress bar over its points, and
its headline statistics as a terminal table."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aqmlab.cli.common import EXIT_FAILED, EXIT_OK, _consoles, _fmt

if TYPE_CHECKING:
    from rich.console import Console


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

    if args.scheduler is not None and args.backend != "dask":
        from aqmlab.sweep import SweepError

        # A scheduler address with the local pool used to be ignored without a word.
        raise SweepError(f"--scheduler {args.scheduler}: a scheduler address needs --backend dask")
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
