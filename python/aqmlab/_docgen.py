"""Refresh the generated parts of the docs from the engine.

    python -m aqmlab._docgen docs/scenario.md

Rewrites the block between ``<!-- BEGIN GENERATED: aqmlab registry
--markdown -->`` and ``<!-- END GENERATED -->`` with the registry's current
AQMs, congestion controls and default parameters (tests/test_docs.py fails
when the block is stale).
"""

from __future__ import annotations

import sys
from pathlib import Path

BEGIN = "<!-- BEGIN GENERATED: aqmlab registry --markdown -->"
END = "<!-- END GENERATED -->"


def generated_block() -> str:
    import aqmlab
    from aqmlab.cli.registry import registry_markdown

    return registry_markdown(aqmlab.registry())


def current_block(text: str) -> str:
    start = text.index(BEGIN) + len(BEGIN) + 1
    return text[start : text.index(END)]


def refresh(path: str | Path) -> bool:
    """Rewrite the generated block; returns True when it changed."""
    p = Path(path)
    text = p.read_text()
    new = text.replace(current_block(text), generated_block())
    if new != text:
        from aqmlab.scenario import atomic_write_text

        atomic_write_text(p, new)
    return new != text


if __name__ == "__main__":
    for arg in sys.argv[1:] or ["docs/scenario.md"]:
        print(f"{arg}: {'updated' if refresh(arg) else 'up to date'}")
