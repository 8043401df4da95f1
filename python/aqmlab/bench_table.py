"""The table of ``aqmlab bench`` and its number formats: rates in four
significant figures with a prefix ("18.55 M"), and a table that fits its
console by leaving columns out, never by cutting a figure (rich would make
"18,549,2…" of a rate in a narrow console). Imports no other aqmlab module;
rich only when a table is made."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["rate_text", "range_text", "count_text", "wall_text", "table"]


def rate_text(v: float | None, unit: tuple[float, str] | None = None) -> str:
    """A rate (per second) in four significant figures with an SI prefix,
    "18.55 M": short enough that a table never cuts it. ``unit`` forces a
    (scale, prefix), so both ends of a range share one."""
    if v is None or not math.isfinite(v):
        return "-"
    if v == 0:
        return "0"
    scale, prefix = unit or _unit(v)
    x = v / scale
    digits = 3 if abs(x) < 10 else 2 if abs(x) < 100 else 1 if abs(x) < 1000 else 0
    return f"{x:.{digits}f} {prefix}".rstrip()


def _unit(v: float) -> tuple[float, str]:
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= scale * 0.99995:  # 999,996 is "1.000 M", not "1000.0 k"
            return scale, prefix
    return 1.0, ""


def wall_text(wall_s: float) -> str:
    """Seconds to the millisecond, three figures below a second (a 2 ms smoke
    run is "0.00056", not "0.000")."""
    return f"{wall_s:.3f}" if wall_s >= 1 else f"{wall_s:.3g}"


def range_text(lo: float | None, hi: float | None) -> str:
    """'18.10-19.00 M': the two ends in the larger one's unit."""
    if lo is None or hi is None:
        return "-"
    unit = _unit(hi)
    return f"{rate_text(lo, unit).split(' ')[0]}-{rate_text(hi, unit)}"


def count_text(n: int | None, compact: bool = False) -> str:
    """A count: exact with thousands separators, or "17.23 M" where a
    narrow table needs the room."""
    if n is None:
        return "-"
    return rate_text(n) if compact and n >= 1000 else f"{n:,}"


#: The table's columns, their cells and, last to first, the order in which a
#: console too narrow for all of them leaves them out (the headline rates and
#: the scenario's name go last). Every cell is a field of ``--json``.
_COLUMNS: tuple[tuple[str, Any], ...] = (
    ("scenario", lambda r, c: r["name"]),
    ("sim s", lambda r, c: f"{r['sim_s']:g}"),
    ("bottleneck\npkts", lambda r, c: count_text(r["bottleneck_packets"], c)),
    ("events", lambda r, c: count_text(r["events"], c)),
    ("wall s", lambda r, c: wall_text(r["wall_s"])),
    ("pkts/s", lambda r, c: rate_text(r["pkts_per_s"])),
    ("hops/s", lambda r, c: rate_text(r["hops_per_s"])),
    ("events/s", lambda r, c: rate_text(r["events_per_s"])),
    ("range/s", lambda r, c: range_text(*((r["hops_per_s_min"], r["hops_per_s_max"]) if r["headline"] == "hops_per_s"
                                          else (r["pkts_per_s_min"], r["pkts_per_s_max"])))),  # fmt: skip
    ("peak RSS\nMB", lambda r, c: f"{r['peak_rss_mb']:.1f}"),
    ("steal\n%", lambda r, c: "-" if r["steal_pct"] is None else f"{r['steal_pct']:.1f}"),
)
_LEAVE_OUT = ("steal\n%", "sim s", "peak RSS\nMB", "events", "wall s", "bottleneck\npkts", "range/s", "events/s")


def table(results: list[dict[str, Any]], title: str, width: int) -> Any:
    """The results as a rich table at most ``width`` columns wide. No cell
    wraps or is cut (rich would make "18,549,2…" of a rate in a narrow
    console): where the whole table does not fit, counts turn compact
    ("17.23 M"), then columns are left out, least telling first, and the
    caption names them (``--json`` has every field)."""
    from rich import box
    from rich.console import Console
    from rich.measure import Measurement
    from rich.table import Table

    ranges = any(r["repeat"] > 1 for r in results)  # one run has no range
    cols = [c for c in _COLUMNS if ranges or c[0] != "range/s"]
    probe = Console(width=10_000)
    # Exact counts; compact counts; then one column fewer at a time.
    tries = [(False, ()), *((True, _LEAVE_OUT[:i]) for i in range(len(_LEAVE_OUT) + 1))]
    for compact, drops in tries:
        shown = [c for c in cols if c[0] not in drops]
        left_out = [c[0].replace("\n", " ") for c in cols if c not in shown]
        notes = []
        if ranges and any(c[0] == "range/s" for c in shown):
            notes.append("range/s: slowest and fastest run of the headline rate (hops/s for fat trees, else pkts/s)")
        if left_out:
            notes.append(f"left out for width: {', '.join(left_out)} (--json has every field)")
        t = Table(title=title, title_justify="left", caption="; ".join(notes) or None, caption_justify="left",
                  box=box.HEAVY_HEAD)  # fmt: skip
        for i, (head, _) in enumerate(shown):
            t.add_column(head, justify="left" if i == 0 else "right", no_wrap=True)
        for r in results:
            t.add_row(*(cell(r, compact) for _, cell in shown))
        if Measurement.get(probe, probe.options, t).maximum <= width:
            return t
    return t  # the scenario and its two rates alone: as narrow as it gets


