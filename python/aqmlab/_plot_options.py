"""Plot options the CLI checks before a run, without importing matplotlib
(`aqmlab run` stays light: tests/test_cli_run.py checks its imports)."""

from __future__ import annotations

#: File formats plots can be written in.
FORMATS = ("png", "pdf", "svg")


def parse_size_in(text: str) -> tuple[float, float]:
    """``"3.5x2.5in"`` or ``"9x6cm"`` -> (width, height) in inches."""
    import re

    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*x\s*([0-9]*\.?[0-9]+)\s*(in|cm)\s*", text)
    if not m:
        raise ValueError(f"size '{text}': give WIDTHxHEIGHT with a unit, e.g. '3.5x2.5in' or '9x6cm'")
    w, h = float(m.group(1)), float(m.group(2))
    if m.group(3) == "cm":
        w, h = w / 2.54, h / 2.54
    if not (0.5 <= w <= 50 and 0.5 <= h <= 50):
        raise ValueError(f"size '{text}': each side must lie between 0.5 and 50 inches")
    return w, h
