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
* ``full run``: the same summary from a ``--full`` run, followed by every
  claim's cases (mean over seeds, 95 % interval when the seeds differ, case
  verdict), as a grid when the cases are flow mixes (n_l4s × n_classic);
* ``quick tables``: RUN_DIR/tables.md of a quick run (the experiment's
  tables), only in a page that already has this block.

RUN_DIR's claims.json says whether it was a quick or a full run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from aqmlab.reproduce.framework import Experiment

TOLERANCES = "tolerances"
QUICK = "quick verdicts"
FULL = "full run"
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
    mode = "--quick" if doc.get("quick", True) else "--full"
    what = "Quick mode" if doc.get("quick", True) else "Full run"
    rows = [f"{what} (`aqmlab reproduce {doc['experiment']} {mode}`, aqmlab {doc.get('version', '?')}, "
            f"seeds {doc['seeds']}):", "", "| claim | verdict | cases passed | worst case |", "|---|---|---|---|"]  # fmt: skip
    for c in doc["claims"]:
        w = c.get("worst") or {}
        worst = ", ".join(f"{k}={v}" for k, v in (w.get("tags") or {}).items())
        if w.get("measured") is not None:
            worst += f": {w['measured']:.3g} {c.get('unit', '')}".rstrip()
        rows.append(f"| {_cell(c['claim'])} | {c['verdict']} | {c['passed']} of {c['total']} | {_cell(worst) or '–'} |")
    return "\n".join(rows) + "\n"


def _value(case: dict[str, Any], digits: int = 3) -> str:
    m = case.get("measured")
    if m is None:
        return "–"
    iv = case.get("interval95")
    text = f"{m:.{digits}g}"
    if iv:
        text += f" [{iv[0]:.{digits}g}, {iv[1]:.{digits}g}]"
    elif "identical" in str((case.get("extra") or {}).get("note", "")):
        text += " (same in every seed)"
    return text + ("" if case.get("verdict") == "PASS" else f" **{case.get('verdict')}**")


def _grid(cases: list[dict[str, Any]]) -> list[str] | None:
    """Cases of one claim as an n_l4s (rows) × n_classic (columns) table, when
    every case is a flow mix and the other tags are shared."""
    if not cases or not all({"n_l4s", "n_classic"} <= set(c["tags"]) for c in cases):
        return None
    rest = {tuple(sorted((k, v) for k, v in c["tags"].items() if k not in ("n_l4s", "n_classic"))) for c in cases}
    if len(rest) != 1:
        return None
    ls = sorted({c["tags"]["n_l4s"] for c in cases})
    cs = sorted({c["tags"]["n_classic"] for c in cases})
    at = {(c["tags"]["n_l4s"], c["tags"]["n_classic"]): c for c in cases}
    out = ["| L4S \\ Classic | " + " | ".join(str(n) for n in cs) + " |", "|---" * (len(cs) + 1) + "|"]
    for nl in ls:
        out.append(f"| {nl} | " + " | ".join(_value(at[(nl, nc)]) if (nl, nc) in at else "" for nc in cs) + " |")
    return out


def full_block(doc: dict[str, Any]) -> str:
    rows = [quick_block(doc).rstrip("\n"), "", "Every case (mean over seeds [95 % interval]; failing cases in bold):"]
    for c in doc["claims"]:
        rows += ["", f"**{_cell(c['claim'])}** ({c['verdict']}, {c['passed']} of {c['total']}; unit: {c.get('unit') or '–'})", ""]
        grid = _grid(c.get("cases") or [])
        if grid is not None:
            rows += grid
            continue
        rows += ["| case | measured | verdict |", "|---|---|---|"]
        for case in c.get("cases") or []:
            tags = ", ".join(f"{k}={v}" for k, v in case["tags"].items())
            rows.append(f"| {_cell(tags)} | {_value(case).replace(' **' + str(case.get('verdict')) + '**', '')} | "
                        f"{case.get('verdict')} |")  # fmt: skip
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
        doc = json.loads((run_dir / "claims.json").read_text())
        if doc.get("quick", True):
            blocks[QUICK] = quick_block(doc)
            # The experiment's tables, where the page asked for them (a TABLES block).
            if (run_dir / "tables.md").exists() and current(text, TABLES) is not None:
                blocks[TABLES] = (run_dir / "tables.md").read_text()
        else:
            blocks[FULL] = full_block(doc)
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
