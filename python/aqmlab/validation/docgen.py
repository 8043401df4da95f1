"""Refresh docs/validation.md's generated blocks.

    python -m aqmlab.validation.docgen docs/validation.md [RUN_DIR]

The tolerance table is generated from :data:`aqmlab.validation.suite.ROWS`
(tests/test_validation.py fails when the page is stale); with RUN_DIR (the
``--out`` of a full ``aqmlab validation`` run) the results table is replaced
by that run's ``validation.md``, which names its commit.
"""

from __future__ import annotations

import sys
from pathlib import Path

from aqmlab.validation import suite

TOLERANCES = ("<!-- BEGIN GENERATED: tolerances -->", "<!-- END GENERATED: tolerances -->")
RESULTS = ("<!-- BEGIN GENERATED: last full run -->", "<!-- END GENERATED: last full run -->")


def tolerance_table() -> str:
    lines = ["| row | claim | reference | judged figure | band | basis |", "|---|---|---|---|---|---|"]
    for r in suite.ROWS.values():
        cells = [f"[{r.id}](#{r.id})", r.claim, r.reference, r.figure, r.tolerance.band.describe(r.unit), r.tolerance.basis]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def _span(text: str, marks: tuple[str, str]) -> tuple[int, int]:
    start = text.index(marks[0]) + len(marks[0]) + 1
    return start, text.index(marks[1], start - 1)


def block(text: str, marks: tuple[str, str]) -> str:
    start, end = _span(text, marks)
    return text[start:end]


def splice(text: str, marks: tuple[str, str], content: str) -> str:
    """``text`` with the block between ``marks`` replaced by ``content``."""
    start, end = _span(text, marks)
    return text[:start] + content + text[end:]


def refresh(path: str | Path, run_dir: str | Path | None = None) -> bool:
    from aqmlab.scenario import atomic_write_text

    p = Path(path)
    text = p.read_text()
    new = splice(text, TOLERANCES, tolerance_table())
    if run_dir is not None:
        new = splice(new, RESULTS, (Path(run_dir) / "validation.md").read_text())
    if new != text:
        atomic_write_text(p, new)
        return True
    return False


if __name__ == "__main__":
    changed = refresh(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
    print(f"{sys.argv[1]}: {'updated' if changed else 'up to date'}")
