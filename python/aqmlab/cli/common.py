"""What every command shares: exit codes, the consoles, the text parsers of
--set/--max-time and the plot options. Imports nothing of the CLI (the
commands and the parser in ``aqmlab.cli`` import it)."""

from __future__ import annotations

import argparse
import tomllib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from aqmlab.scenario import ScenarioError
from aqmlab.scenario import duration_s as _duration_s  # noqa: F401 (the commands' name for it)

if TYPE_CHECKING:
    from rich.console import Console

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def _consoles() -> tuple[Console, Console]:
    from aqmlab.console import consoles

    return consoles()


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


def _fmt(v: Any, digits: int = 3) -> str:
    from aqmlab.report import fmt

    return fmt(v, digits)


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
    from aqmlab._plot_options import plot_options

    try:
        return plot_options(args.format, args.size, args.dpi)
    except ValueError as e:
        raise ScenarioError(str(e)) from None
