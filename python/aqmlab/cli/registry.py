"""``aqmlab registry``: the engine's AQMs and congestion controls with their
defaults, as tables, JSON or the Markdown of docs/scenario.md."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from aqmlab.cli.common import EXIT_OK, _consoles


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
