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


def plot_options(format_text: str, size_text: str | None, dpi: int) -> dict[str, object]:
    """The CLI's ``--format``, ``--size`` and ``--dpi`` checked, as the
    keyword arguments of the save functions (``formats``, ``size_in``,
    ``dpi``); a ValueError names the option, what was given and what is
    allowed."""
    formats = tuple(f.strip().lower() for f in format_text.split(",") if f.strip())
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise ValueError(f"--format: '{format_text}': allowed {', '.join(FORMATS)} (comma-separated)")
    if not 30 <= dpi <= 1200:
        raise ValueError(f"--dpi: {dpi}: allowed 30 to 1200")
    try:
        size = parse_size_in(size_text) if size_text else None
    except ValueError as e:
        raise ValueError(f"--size: {e}") from None
    return {"formats": formats, "size_in": size, "dpi": dpi}
