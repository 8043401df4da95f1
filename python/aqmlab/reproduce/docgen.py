"""The generated parts of docs/results/<experiment>.md.

    python -m aqmlab.reproduce.docgen NAME [RUN_DIR]

Blocks, each between ``<!-- BEGIN GENERATED: ... -->`` and ``<!-- END
GENERATED -->`` markers:

* ``tolerances``: every claim's band, basis and source, from the code (so a
  tolerance cannot change without the docs changing: tests/test_reproduce.py
  fails when the block is stale);
* ``quick verdicts``: each claim's quick-mode verdict, "k of n" and worst
  case, from RUN_DIR/claims.json of ``aqmlab reproduce NAME --quick`` (the
  test suite runs quick mode and asserts it gets these verdicts);
* ``quick tables``: RUN_DIR/tables.md (the experiment's tables), when the
  experiment writes one.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from aqmlab.reproduce.framework import Experiment

TOLERANCES = "tolerances"
QUICK = "quick verdicts"
TABLES = "quick tables"


def _markers(kind: str) -> tuple[str, str]:
    return f"<!-- BEGIN GENERATED: {kind} -->", f"<!-- END GENERATED: {kind} -->"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def tolerance_block(exp: Experiment) -> str:
    rows = ["| claim | seed | band | basis | source of the band |", "|---|---|---|---|---|"]
    for c in exp.claims():
        t = c.tolerance
        dev = f" Known deviation: {c.known_deviation.reason} ({c.known_deviation.analysis})." if c.known_deviation else ""
        rows.append(f"| {_cell(c.text)} | {_cell(c.paper)} | {_cell(t.band.describe(c.unit))} | {t.basis} | "
                    f"{_cell(t.source)}{_cell(dev)} |")  # fmt: skip
    return "\n".join(rows) + "\n"


def quick_block(doc: dict[str, Any]) -> str:
    rows = [f"Quick mode (`aqmlab reproduce {doc['experiment']} --quick`, aqmlab {doc.get('version', '?')}, "
            f"seeds {doc['seeds']}):", "", "| claim | verdict | cases passed | worst case |", "|---|---|---|---|"]  # fmt: skip
    for c in doc["claims"]:
        w = c.get("worst") or {}
        worst = ", ".join(f"{k}={v}" for k, v in (w.get("tags") or {}).items())
        if w.get("measured") is not None:
            worst += f": {w['measured']:.3g} {c.get('unit', '')}".rstrip()
        rows.append(f"| {_cell(c['claim'])} | {c['verdict']} | {c['passed']} of {c['total']} | {_cell(worst) or '–'} |")
    return "\n".join(rows) + "\n"


def current(text: str, kind: str) -> str | None:
    begin, end = _markers(kind)
    if begin not in text or end not in text:
        return None
    start = text.index(begin) + len(begin) + 1
    return text[start : text.index(end)]


def recorded_quick_verdicts(text: str) -> list[str]:
    """The verdict column of the quick-verdicts block, in claim order."""
    block = current(text, QUICK) or ""
    return [line.split("|")[2].strip() for line in block.splitlines()
            if line.startswith("| ") and not line.startswith("| claim")]  # fmt: skip


def refresh(path: Path, exp: Experiment, run_dir: Path | None) -> None:
    from aqmlab.scenario import atomic_write_text

    text = path.read_text() if path.exists() else f"# {exp.title}\n"
    blocks = {TOLERANCES: tolerance_block(exp)}
    if run_dir is not None:
        blocks[QUICK] = quick_block(json.loads((run_dir / "claims.json").read_text()))
        if (run_dir / "tables.md").exists():  # the experiment's tables (Experiment.tables), if it has any
            blocks[TABLES] = (run_dir / "tables.md").read_text()
    for kind, body in blocks.items():
        begin, end = _markers(kind)
        old = current(text, kind)
        if old is None:
            text = text.rstrip("\n") + f"\n\n{begin}\n{body}{end}\n"
        else:
            text = text.replace(f"{begin}\n{old}{end}", f"{begin}\n{body}{end}")
    atomic_write_text(path, text)


def main(argv: list[str]) -> int:
    from aqmlab.reproduce import get

    if not argv or len(argv) > 2:
        sys.stderr.write("usage: python -m aqmlab.reproduce.docgen NAME [RUN_DIR]\n")
        return 2
    exp = get(argv[0])
    root = Path(__file__).resolve().parents[3]
    refresh(root / "docs" / "results" / f"{exp.name}.md", exp, Path(argv[1]) if len(argv) > 1 else None)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
