"""``aqmlab report`` and ``aqmlab compare``: views of saved runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from aqmlab.cli.common import EXIT_OK, EXIT_USAGE, _consoles, _fmt, _plot_options


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
        import json

        # Through pandas' JSON (NaN as null), then written as people read it:
        # "Mbit/s" and "Δ", not "Mbit\/s" and "\u0394".
        print(json.dumps(json.loads(cmp.table.to_json(orient="index")), indent=2, ensure_ascii=False))
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
