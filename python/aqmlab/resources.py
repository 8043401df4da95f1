"""Before a run: how much memory and time it will take, and a refusal when
that exceeds the machine or the user's budget (one line, exit code 2), so a
mistyped ``count = 100000000`` never reaches an allocation that aborts the
process, and a 13-hour run is never started by accident.

The figures are estimates from costs measured on the reference machine
(docs/reliability.md, "Resource guard"); they aim to be right within a
factor of about two, which is what a refusal needs. Standard library only.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from aqmlab.scenario import ScenarioError

__all__ = ["Estimate", "ResourceError", "available_memory_bytes", "check", "estimate", "parse_bytes"]

#: Engine state per flow (sender, receiver, scoreboard, per-flow metrics),
#: measured as the peak-RSS slope of 10 ms runs with 10^4 and 10^5 CUBIC
#: flows: 4.9 KB per flow.
FLOW_BYTES = 5_000
#: One flow's time-series rows per metrics interval, in the engine and as
#: DataFrames (flow_ts 122 B + two probe rows of 49 B, plus the engine's
#: columns they are converted from), measured on a 10-flow run: ~300 B.
FLOW_INTERVAL_BYTES = 300
#: The interpreter, the package and the engine's fixed tables.
BASE_BYTES = 100_000_000
#: Simulated bottleneck packets per wall-second the estimate assumes: below
#: the benchmark's 16-23 M for DCTCP (docs/performance.md), because CUBIC,
#: many flows, AQMs and metrics cost more; an ETA, not a promise.
PACKETS_PER_WALL_S = 5_000_000


class ResourceError(ScenarioError):
    """The run would exceed the machine or the budget (exit code 2)."""


@dataclass(frozen=True)
class Estimate:
    flows: int
    intervals: int
    memory_bytes: int
    packets: float
    wall_s: float

    def describe(self) -> str:
        return (f"about {_bytes_text(self.memory_bytes)} of memory ({self.flows:,} flows × {self.intervals:,} "
                f"metric intervals) and {_duration_text(self.wall_s)} ({self.packets:.3g} packets)")  # fmt: skip


def _ns(text: Any) -> int:
    """A normalised duration ("10s", "100ms") in ns; the engine has checked it."""
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|min)", str(text).strip())
    if not m:
        return 0
    scale = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "min": 60_000_000_000}
    return int(float(m.group(1)) * scale[m.group(2)])


def _bps(text: Any) -> float:
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(bps|Kbps|kbps|Mbps|Gbps|Tbps)", str(text).strip())
    if not m:
        return 0.0
    return float(m.group(1)) * {"bps": 1, "Kbps": 1e3, "kbps": 1e3, "Mbps": 1e6, "Gbps": 1e9, "Tbps": 1e12}[m.group(2)]


def estimate(normalized: dict[str, Any]) -> Estimate:
    """Memory and time of a run of a *normalised* scenario (aqmlab.validate's output)."""
    duration_s = _ns(normalized.get("duration")) / 1e9
    flows = sum(int(f.get("count", 1) or 1) for f in normalized.get("flows", []))
    for w in normalized.get("workloads", []) or []:
        rate = re.fullmatch(r"([0-9.]+)/s", str(w.get("rate", "")).strip())
        if rate:
            flows += int(float(rate.group(1)) * duration_s)
    metrics = normalized.get("metrics", {}) or {}
    interval_s = _ns(metrics.get("interval", "100ms")) / 1e9 or 0.1
    intervals = int(duration_s / interval_s) + 1 if metrics.get("timeseries", True) else 0
    memory = BASE_BYTES + flows * FLOW_BYTES + flows * intervals * FLOW_INTERVAL_BYTES
    if "topology" in normalized and normalized["topology"]:
        links = normalized["topology"].get("links", []) or []
        rate_bps = sum(_bps(link.get("rate")) for link in links)
    else:
        rate_bps = _bps((normalized.get("bottleneck") or {}).get("rate"))
    mtu = int((normalized.get("tcp") or {}).get("mtu_bytes", 1500) or 1500)
    packets = max(rate_bps * duration_s / (8 * mtu), _unresponsive_packets(normalized, duration_s, mtu))
    return Estimate(flows, intervals, memory, packets, packets / PACKETS_PER_WALL_S)


def _unresponsive_packets(normalized: dict[str, Any], duration_s: float, mtu: int) -> float:
    """Packets that UDP flows and latency probes send whatever the links carry:
    each costs an event at the source and an arrival at a queue even when it is
    dropped, so 1 Tbit/s of UDP into a 10 Mbit/s link costs what its offered
    load does, not what the link carries. (A QCN source's `rate` is only its
    line rate: it slows down on congestion notifications, so it is left out.)"""
    total = 0.0
    for f in normalized.get("flows", []) or []:
        start_s = _ns(f.get("start", "0ns")) / 1e9
        stop_s = _ns(f["stop"]) / 1e9 if f.get("stop") else duration_s
        active_s = max(0.0, min(stop_s, duration_s) - start_s)
        count = int(f.get("count", 1) or 1)
        if f.get("cc") == "udp":
            size = _size_bytes(f.get("packet_size")) or mtu
            total += count * _bps(f.get("rate")) * active_s / (8 * size)
        elif f.get("cc") == "probe":
            interval_s = _ns((f.get("params") or {}).get("interval", "10ms")) / 1e9
            if interval_s > 0:
                total += count * 2 * active_s / interval_s  # a request and its reply
    return total


def _size_bytes(text: Any) -> int:
    """A normalised size ("1500B"), or 0 where none is given."""
    try:
        return parse_bytes(str(text))
    except ValueError:
        return 0


def available_memory_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (Linux), else physical memory, else None."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def parse_bytes(text: str) -> int:
    """``"8GB"``, ``"512MB"``, ``"2GiB"`` -> bytes."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(B|kB|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*", text)
    if not m:
        raise ValueError(f"'{text}': give a size such as '8GB' or '512MiB'")
    scale = {"B": 1, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
             "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}[m.group(2)]  # fmt: skip
    return int(float(m.group(1)) * scale)


def check(est: Estimate, *, max_memory_bytes: int | None = None, max_time_s: float | None = None) -> None:
    """Raise :class:`ResourceError` (one line) if the estimate exceeds the
    budget; without an explicit memory budget, the machine's available memory."""
    limit = max_memory_bytes if max_memory_bytes is not None else available_memory_bytes()
    fix = "fewer flows, a shorter duration or a longer [metrics] interval (or timeseries = false)"
    if limit is not None and est.memory_bytes > limit:
        source = "the budget --max-memory" if max_memory_bytes is not None else "available on this machine"
        raise ResourceError(
            f"this run needs {est.describe()}; {_bytes_text(limit)} is {source}: use {fix}, "
            "or --force to run anyway"
        )
    if max_time_s is not None and est.wall_s > max_time_s:
        raise ResourceError(
            f"this run needs {est.describe()}, over the budget --max-time {_duration_text(max_time_s)}: "
            "shorten it, or --force to run anyway"
        )


def _bytes_text(n: float) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n / 1e3:.3g} kB"


def _duration_text(s: float) -> str:
    if s >= 3600:
        return f"{s / 3600:.3g} h"
    if s >= 60:
        return f"{s / 60:.3g} min"
    return f"{s:.2g} s" if s >= 1 else "under a second"
