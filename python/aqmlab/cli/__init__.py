"""The ``aqmlab`` command.

    aqmlab run SCENARIO.toml [--out DIR]      run one scenario
    aqmlab report DIR                         plots and report.html of a saved run
    aqmlab compare DIR1 DIR2 [...]            saved runs side by side
    aqmlab export flent DIR                   a saved run as a Flent data file
    aqmlab validate SCENARIO.toml             check it, run nothing
    aqmlab sweep SWEEP.toml [--jobs N]        grids × seeds, cached, resumable
    aqmlab reproduce NAME | --list            the seed papers' experiments
    aqmlab bench [--json] [--only NAME ...]   performance benchmark (--list: the scenarios)
    aqmlab registry                           AQMs and CCs with their defaults
    aqmlab validation [--quick] [--out DIR]   models against laws, themselves, ns-3

Invalid input (scenario, TOML syntax, sweep grid) prints one line,
``aqmlab: error: <message>``, on stderr and exits with code 2. Ctrl-C exits
with 130; finished sweep runs stay cached. Set AQMLAB_DEBUG=1 for tracebacks.

The parser and ``main`` are here; each command is in its own module
(``aqmlab.cli.run``: validate and run, ``.report``: report and compare,
``.sweep``, ``.registry``); reproduce, bench and validation are library code
with their own ``cli_*`` entry points; ``.common`` holds what they share.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import traceback
from collections.abc import Sequence
from typing import Any

from aqmlab import _engine
from aqmlab.cli.common import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, _add_plot_options, _jobs
from aqmlab.cli.registry import cmd_registry
from aqmlab.cli.report import cmd_compare, cmd_report
from aqmlab.cli.run import cmd_run, cmd_validate
from aqmlab.cli.sweep import cmd_sweep
from aqmlab.scenario import OutputError, ScenarioError

__all__ = ["main", "build_parser"]


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


#: Options of `aqmlab bench` whose value may start with '-' (a negative
#: duration, rate or count): argparse would take "-1s" for an option and say
#: only "expected one argument".
_DASH_VALUE_OPTIONS = {"bench": ("--duration", "--rate", "--repeat")}


def _dash_values(argv: list[str]) -> list[str]:
    """`aqmlab bench --duration -1s` as `--duration=-1s`, so the value reaches
    the check that says what is allowed. Only a value that looks like a
    number ('-' then a digit or '.') is joined: `--rate --json` stays an
    error about the missing value."""
    command = next((a for a in argv if not a.startswith("-")), None)
    options = _DASH_VALUE_OPTIONS.get(command or "", ())
    out: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            out += argv[i:]
            break
        if a in options and i + 1 < len(argv) and re.match(r"-[0-9.]", argv[i + 1]):
            out.append(f"{a}={argv[i + 1]}")
            i += 2
            continue
        out.append(a)
        i += 1
    return out


def build_parser() -> argparse.ArgumentParser:
    from aqmlab.bench import ACCESS, CHAINS, METRICS, ON_REQUEST, SCENARIOS, WORKLOADS  # standard library only: cheap at start-up

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
    r.add_argument("--all-queues", action="store_true", help="print every queue, not the 20 with the highest p99 sojourn")
    _add_plot_options(r)
    out_mode = r.add_mutually_exclusive_group()  # docs/cli.md: [-q | --json]
    out_mode.add_argument("-q", "--quiet", action="store_true", help="no progress bar or tables")
    out_mode.add_argument("--json", action="store_true", help="print summary.json on stdout instead of the tables")
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

    from aqmlab.export import add_cli as add_export_cli  # standard library only at import

    add_export_cli(sub)

    c = sub.add_parser("compare", help="compare saved runs side by side (table, overlaid plots, HTML)")
    c.add_argument("dirs", nargs="+", metavar="DIR", help="directories written by aqmlab run (two or more)")
    c.add_argument("--out", help="output directory (default: out/compare)")
    out_mode = c.add_mutually_exclusive_group()
    out_mode.add_argument("-q", "--quiet", action="store_true", help="write the files, print nothing")
    out_mode.add_argument("--json", action="store_true", help="print the table as JSON (metric -> run -> value)")
    c.set_defaults(func=cmd_compare)

    v = sub.add_parser("validate", help="check a scenario (runs nothing)")
    v.add_argument("file", help="scenario TOML file")
    out_mode = v.add_mutually_exclusive_group()  # docs/cli.md: [--show | --json | -q]
    out_mode.add_argument("--show", action="store_true", help="print the normalised scenario (all defaults) as TOML")
    v.add_argument("--set", action="append", default=[], metavar="PATH=VALUE", help="override a value first")
    out_mode.add_argument("-q", "--quiet", action="store_true", help="print nothing; the exit code says it (0 ok, 2 invalid)")
    out_mode.add_argument("--json", action="store_true", help="print the normalised scenario as JSON")
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
    out_mode = s.add_mutually_exclusive_group()
    out_mode.add_argument("-q", "--quiet", action="store_true", help="no progress bar or tables (failures are still printed)")
    out_mode.add_argument("--json", action="store_true", help="print sweep.json's counts and the statistics as JSON")
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
    out_mode = rp.add_mutually_exclusive_group()
    out_mode.add_argument("-q", "--quiet", action="store_true", help="no progress bar or table (the files are written)")
    out_mode.add_argument("--json", action="store_true", help="print claims.json on stdout instead of the table")
    _add_plot_options(rp)
    rp.set_defaults(func=cmd_reproduce)

    b = sub.add_parser("bench", help="performance benchmark (packets per wall-second)",
                       description=f"Run fixed benchmark scenarios ({', '.join(SCENARIOS)}), each in a fresh "
                       "process, and print simulated packets (packet-hops for the fat trees D, D-1024) per "
                       "wall-second; on request (--only) also the fat tree with another discipline on every "
                       f"port ({', '.join(ON_REQUEST)}), chains of 1 to 64 links ({', '.join(CHAINS)}), "
                       f"dumbbells with an access link per flow ({', '.join(ACCESS)}) and a long web workload "
                       f"({', '.join(WORKLOADS)}). "
                       "'aqmlab bench --list' describes each scenario.")  # fmt: skip
    b.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    b.add_argument("--only", action="extend", nargs="+", metavar="NAME",
                   help="run only these scenarios (one or more names; repeatable; see --list)")  # fmt: skip
    b.add_argument("--repeat", default="1", metavar="N", help="runs per scenario, at least 1; the median is reported")
    b.add_argument("--duration", metavar="D", help="override the simulated duration, e.g. 2ms (figures then not comparable with the standard lengths)")
    b.add_argument("--rate", metavar="R", help="override the bottleneck rate (a fat tree's link rate), e.g. 100Gbps "
                   "(scaling studies; not comparable)")  # fmt: skip
    b.add_argument("--metrics", default="default", choices=METRICS,
                   help="metric set: default (histograms, counters), off (counters only), samples (+ every sojourn)")  # fmt: skip
    b.add_argument("--list", action="store_true", help="list the scenarios, one line each (topology, flows, AQM, time)")
    b.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr (the table or JSON only)")
    b.set_defaults(func=cmd_bench)

    g = sub.add_parser("registry", help="list AQMs and congestion controls with default parameters")
    fmt = g.add_mutually_exclusive_group()  # one output format (--json --markdown printed JSON only)
    fmt.add_argument("--json", action="store_true", help="the engine's registry as JSON")
    fmt.add_argument("--markdown", action="store_true", help="Markdown tables (as in docs/scenario.md)")
    fmt.add_argument("-q", "--quiet", action="store_true", help="names only: 'aqm NAME' and 'cc NAME' lines, for scripts")
    g.set_defaults(func=cmd_registry)

    from aqmlab.validation.command import add_parser as add_validation

    add_validation(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    # The CLI only writes image files: no display backend. Set for this
    # process only, and never by the library (notebooks keep inline figures).
    os.environ.setdefault("MPLBACKEND", "Agg")
    args = build_parser().parse_args(_dash_values(list(sys.argv[1:] if argv is None else argv)))
    debug = bool(os.environ.get("AQMLAB_DEBUG"))
    # An editable install is not rebuilt when the Rust changes: say so before
    # a command runs an engine older than the checkout (aqmlab._provenance).
    from aqmlab._provenance import engine_mismatch

    stale = engine_mismatch()
    if stale:
        sys.stderr.write(f"aqmlab: warning: {stale}\n")
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
