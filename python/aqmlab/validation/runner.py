"""Running a validation group's scenarios: in parallel, uncached, in order.

Validation never reads the sweep cache: a cached summary from an older
engine would validate the older engine.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from aqmlab.validation.suite import Progress

__all__ = ["MSS_BYTES", "dumbbell", "jobs", "run_summaries", "run_with_tables", "LINK_RATES_BPS"]

#: The engine's default segment: 1500-byte MTU minus 52 bytes of IP + TCP
#: headers with timestamps (docs/scenario.md, [tcp]).
MSS_BYTES = 1448

#: The operating points' link rates, 10 Mbit/s to 10 Gbit/s.
LINK_RATES_BPS = (10e6, 100e6, 1e9, 10e9)


def jobs() -> int:
    """Worker processes: AQMLAB_VALIDATION_JOBS, else all cores."""
    env = os.environ.get("AQMLAB_VALIDATION_JOBS")
    return int(env) if env else (os.cpu_count() or 1)


def ms(seconds: float) -> str:
    """A duration string the engine parses exactly (microsecond resolution)."""
    return f"{round(seconds * 1e6)}us"


def rate(bps: float) -> str:
    return f"{round(bps)}bps"


def dumbbell(
    *,
    name: str,
    rate_bps: float,
    aqm: str,
    params: Mapping[str, Any] | None,
    flows: Sequence[Mapping[str, Any]],
    duration_s: float,
    warmup_s: float,
    seed: int = 1,
    buffer: str = "100ms",
    tcp: Mapping[str, Any] | None = None,
    metrics: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    tree: dict[str, Any] = {
        "name": name,
        "duration": ms(duration_s),
        "warmup": ms(warmup_s),
        "seed": seed,
        "bottleneck": {"rate": rate(rate_bps), "buffer": buffer, "aqm": aqm, "params": dict(params or {})},
        "flows": [dict(f) for f in flows],
        "metrics": dict(metrics or {"timeseries": False}),
    }
    if tcp:
        tree["tcp"] = dict(tcp)
    return tree


def run_summaries(trees: Sequence[Mapping[str, Any]], progress: Progress | None = None, label: str = "",
                  n_jobs: int | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """Run scenario trees on the process pool (``n_jobs`` workers, default
    :func:`jobs`); their summaries, in order. A failed run raises (a
    validation run that did not run is not N/A)."""
    from aqmlab.sweep import make_point, run_points

    points = [make_point(t, {}) for t in trees]

    def step(done: int, total: int, point: Any, status: str) -> None:
        if progress is not None:
            progress(1, label)

    outcomes = run_points(points, jobs=min(n_jobs or jobs(), max(1, len(points))), cache_dir=None, progress=step)
    by_key = {o.point.key: o for o in outcomes}
    out = []
    for p in points:
        o = by_key[p.key]
        if o.summary is None:
            raise RuntimeError(f"validation run {p.label or p.key} failed: {o.error}")
        out.append(o.summary)
    return out


def run_with_tables(tree: Mapping[str, Any]) -> Any:
    """One run in this process, with its tables (time series, probes)."""
    from aqmlab.results import run

    return run(dict(tree))


_TIME_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0}
_SIZE_B = {"B": 1, "KB": 1e3, "kB": 1e3, "MB": 1e6, "GB": 1e9, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}


def buffer_packets(text: str, rate_bps: float, smallest_bytes: int = 52) -> float:
    """A normalised buffer ("250pkt", "1MB", "100ms") as an upper bound on
    the packets it can hold (sizes and times divided by the smallest packet)."""
    import re

    m = re.fullmatch(r"([0-9.eE+]+)\s*([A-Za-zµ]+)", text.strip())
    if not m:
        raise ValueError(f"not a buffer: {text!r}")
    value, unit = float(m.group(1)), m.group(2)
    if unit == "pkt":
        return value
    if unit in _SIZE_B:
        return value * _SIZE_B[unit] / smallest_bytes
    return value * _TIME_S[unit] * rate_bps / 8 / smallest_bytes
