"""Which of many queues a view shows: a fat tree has thousands, and the
terminal's table, the report and the per-queue plots show the busiest
(the tables and summary.json keep all). One rule for all of them, on the
summary's entries; no pandas, so that the command line's run path stays
light."""

from __future__ import annotations

from typing import Any


def queue_rank(stats: dict[str, Any], by: str = "delay") -> tuple[float, float]:
    """Sort key of a queue's (or sub-queue's) summary entry for views that
    show the busiest of many: the highest 99th-percentile sojourn first
    (``by="delay"``) or the most marks and drops (``"signals"``), more
    arrivals first among equals. A fat tree has thousands of queues; the
    terminal, the report and the per-queue plots rank them alike."""
    if by == "delay":
        p99 = (stats.get("sojourn_ms") or {}).get("p99")
        first = p99 if p99 is not None else -1.0
    else:
        first = float((stats.get("marks") or 0) + (stats.get("drops") or 0))
    return (-first, -float(stats.get("arrivals") or 0))


def busiest_summary_queues(queues: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """The ``n`` queues of a summary's ``queues`` list that rank first by
    :func:`queue_rank` (names break ties), in the list's order."""
    if len(queues) <= n:
        return queues
    keep = {q["name"] for q in sorted(queues, key=lambda q: (*queue_rank(q), q["name"]))[:n]}
    return [q for q in queues if q["name"] in keep]
