"""Before a run: how much memory and time it will take, and a refusal when
that exceeds the machine or the user's budget (one line, exit code 2), so a
mistyped ``count = 100000000`` never reaches an allocation that aborts the
process, and a 13-hour run is never started by accident.

The figures are estimates from costs measured on the reference machine
(docs/reliability.md, "Resource guard"); they aim to be right within a
factor of about two, which is what a refusal needs. Standard library only.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from aqmlab.scenario import ScenarioError

__all__ = ["Estimate", "ResourceError", "available_memory_bytes", "check", "estimate", "parse_bytes"]

#: Engine state per flow (sender, receiver, scoreboard, per-flow metrics),
#: measured as the peak-RSS slope of 10 ms runs with 10^4 and 10^5 CUBIC
#: flows: 4.9 KB per flow.
FLOW_BYTES = 5_000
#: A workload's short flow, once it has ended (its row of the flows table
#: in the engine and in the front; the flow retires from the engine's flow
#: table, and its time-series rows are counted apart): the peak-RSS slope
#: of `aqmlab run` over 32 s and 128 s of 2 000 web flows per second
#: (64 480 and 256 337 flows) without time series, 0.24 kB per flow with
#: and without huge pages, rounded up (stop 67, whose Parquet encoding no
#: longer raises the peak; with time series the slope is 0.41-0.44 kB,
#: below the 0.73 kB charged for this and the flow's 1.42 rows; at stop 65
#: it was 0.90-0.93 kB, and this 600 B).
WORKLOAD_FLOW_BYTES = 300
#: One flow's time-series rows per metrics interval, in the engine and as
#: DataFrames (flow_ts 122 B + two probe rows of 49 B, plus the engine's
#: columns they are converted from), measured on a 10-flow run: ~300 B.
FLOW_INTERVAL_BYTES = 300
#: A queue (its state and sojourn histograms; a fat tree's ports, a
#: graph's links each way): the peak-RSS slope of the D and D-1024
#: benchmarks (768 and 6 144 ports, 72.5 and 199.4 MB), less their hosts'
#: flows at FLOW_BYTES: 22.8 kB per queue.
QUEUE_BYTES = 23_000
#: A dumbbell's access queue (`access_rate`: one per long-lived flow; a
#: workload's finished flows hand theirs on, so a workload builds about as
#: many as it has flows alive): the peak-RSS slope with and without access
#: queues, 2.3-2.5 kB per flow for 10^4 and 3 x 10^4 CUBIC flows over
#: 200 ms (`aqmlab.run`); 3.0-5.5 kB on the engine alone (`runjson`), web
#: flows over 64 s and 16 s and 10^4 CUBIC flows, before queues were reused.
ACCESS_QUEUE_BYTES = 4_000
#: Access queues charged to a workload that drains: its flows hand them on,
#: and 2 000 web flows per second over 64 s (128 612 flows, about 110
#: alive at a time) build 307 (docs/performance.md). One that piles its
#: flows up is charged three times its flows alive on average, up to one
#: queue per flow.
WORKLOAD_ACCESS_QUEUES = 1_000
#: The interpreter, the package and the engine's fixed tables.
BASE_BYTES = 100_000_000
#: Queues on a fat tree's longest path (host to edge, edge to aggregation,
#: aggregation to core, and down again): what a packet between two pods
#: crosses.
FAT_TREE_PATH_QUEUES = 6
#: A queue's time-series row (`queue_ts`, one per sub-queue per metrics
#: interval): the peak-RSS slope of `aqmlab run` over 100 s and 400 s of a
#: k = 8 tree of tail-drop FIFOs carrying one latency probe (768 768 and
#: 3 072 768 rows, 258.5 and 821.9 MB without huge pages): 245 B a row
#: (stop 68).
QUEUE_INTERVAL_BYTES = 250
#: A queue discipline's probe row (`probes`: its internal values, each
#: once per metrics interval): the same tree with PIE (a queue row and 3
#: probe rows a queue and interval) over 100 s and 200 s, 564.8 and
#: 1 045.0 MB, 625 B a queue and interval, 127 B a probe row; with DualPI2
#: (2 queue rows and 3 probe rows) 689.5 and 1 233.8 MB, 709 B (stop 68).
PROBE_ROW_BYTES = 150
#: A queue's rows in each metrics interval by discipline: its sub-queues'
#: `queue_ts` rows and its `probes` rows (those not named have one sub-queue
#: and no probe). `tests/test_resources.py` runs every discipline of the
#: engine's registry against this table.
QUEUE_SUBQUEUES = {"curvy_red": 2, "dualpi2": 2, "vdq_csaqm": 2}
QUEUE_PROBES = {"ared": 3, "codel": 3, "curvy_red": 3, "dualpi2": 3, "fq_codel": 2, "pi2": 3, "pie": 3, "qcn": 4,
                "red": 3, "vdq_csaqm": 4}  # fmt: skip
#: Queue time-series and probe rows per wall-second: the FIFO runs above
#: took 1.44 and 3.56 s, a slope of 1.09 M rows a second beside almost no
#: packets; PIE's 3.14 and 5.61 s, 1.24 M; DualPI2's 3.82 and 7.28 s,
#: 1.11 M. Rounded down, as PACKETS_PER_WALL_S is, so that the estimate
#: errs long (the FIFO tree's 400 s: 3.9 s estimated).
QUEUE_ROWS_PER_WALL_S = 800_000
#: Simulated bottleneck packets per wall-second the estimate assumes: below
#: the benchmark's 16-23 M for DCTCP (docs/performance.md), because CUBIC,
#: many flows, AQMs and metrics cost more; an ETA, not a promise.
PACKETS_PER_WALL_S = 5_000_000


class ResourceError(ScenarioError):
    """The run would exceed the machine or the budget (exit code 2)."""


@dataclass(frozen=True)
class Estimate:
    #: Flows in all: the groups' and those the workloads are expected to start.
    flows: int
    #: Metric intervals in the run (0 without time series).
    intervals: int
    memory_bytes: int
    packets: float
    wall_s: float
    #: Per-flow time-series rows: a long-lived flow has one per interval, a
    #: workload's flow one per interval it lives, plus one.
    flow_rows: int
    #: Per-queue time-series and probe rows: each sub-queue's and each of
    #: its discipline's probes' per interval.
    queue_rows: int = 0

    def describe(self) -> str:
        return (f"about {_bytes_text(self.memory_bytes)} of memory ({self.flows:,} flows, "
                f"{self.flow_rows + self.queue_rows:,} time-series rows over {self.intervals:,} metric intervals) "
                f"and {_duration_text(self.wall_s)} ({self.packets:.3g} packets)")  # fmt: skip


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
    topology = normalized.get("topology") or {}
    fat_tree = topology.get("fat_tree") or {}
    # A k-ary fat tree: k³/4 hosts; its 3k³/4 links (host to edge, edge to
    # aggregation, aggregation to core) carry a queue each way.
    k = int(fat_tree.get("k", 0) or 0)
    hosts = k**3 // 4
    # A `pattern` (a permutation) gives every host `count` flows.
    long_lived = sum(int(f.get("count", 1) or 1) * (hosts if f.get("pattern") and hosts else 1)
                     for f in normalized.get("flows", []))  # fmt: skip
    metrics = normalized.get("metrics", {}) or {}
    interval_ns = _ns(metrics.get("interval", "100ms")) or 100_000_000
    interval_s = interval_ns / 1e9
    timeseries = bool(metrics.get("timeseries", True))
    # In integer nanoseconds: 300 ms of 100 ms intervals are 4 samples (0 to 300 ms), not int(2.999...) + 1.
    intervals = _ns(normalized.get("duration")) // interval_ns + 1 if timeseries else 0
    tcp = normalized.get("tcp") or {}
    mtu = int(tcp.get("mtu_bytes", 1500) or 1500)
    mss = max(1, mtu - int(tcp.get("header_bytes", 52) or 52))
    # Queue hops per packet the links carry, and whether every flow brings
    # an access queue of its own.
    hops, access = 1.0, False
    # A reverse queue carries an ACK per two data packets with delayed ACKs,
    # one per packet without.
    ack_share = 0.5 if tcp.get("delayed_ack", True) else 1.0
    offered_packets = math.inf
    if fat_tree:
        queues = 6 * hosts
        queue_aqms = {fat_tree.get("aqm") or "fifo": queues}
        link_bps = _bps(fat_tree.get("rate"))
        rate_bps = queues * link_bps
        # Every port busy is what the tree can carry; a few flows or
        # incasts carry far less (an incast's 64 000 flows of 16 KB over 8 s
        # of a k = 4 tree: 7.0 M packet-hops, where its 96 ports carry
        # 640 M), so what the traffic offers bounds the count too.
        offered_packets = _fat_tree_offered_packets(normalized, k, link_bps, duration_s, mtu, mss)
    elif topology:
        links = [link for link in topology.get("links", []) or [] if link.get("rate")]
        queues = sum(2 if link.get("duplex") else 1 for link in links)
        # A duplex link's reverse queue is a tail-drop FIFO.
        queue_aqms = Counter(link.get("aqm") or "fifo" for link in links)
        queue_aqms["fifo"] += sum(1 for link in links if link.get("duplex"))
        # A duplex link's reverse queue carries the ACKs of what it carries
        # forward (a chain of duplex links: 1.5 packet-hops per data
        # packet-hop with delayed ACKs, 2.0 without; it counted 1.0).
        rate_bps = sum(_bps(link.get("rate")) * (1 + ack_share if link.get("duplex") else 1) for link in links)
    else:
        bottleneck = normalized.get("bottleneck") or {}
        queues = 2 if bottleneck.get("reverse") else 1
        queue_aqms = Counter([bottleneck.get("aqm") or "fifo"])
        if bottleneck.get("reverse"):
            queue_aqms[bottleneck["reverse"].get("aqm") or "fifo"] += 1
        rate_bps = _bps(bottleneck.get("rate"))
        # A bottleneck packet crosses its flow's access queue first, and
        # the ACKs a reverse queue (one per two data packets with delayed ACKs).
        access = bool(bottleneck.get("access_rate"))
        if access:
            hops += 1.0
        if bottleneck.get("reverse"):
            hops += ack_share
    # A graph's or a fat tree's bottleneck is not one link: no load test.
    bottleneck_bps = None if topology else rate_bps
    short, short_rows, access_queues = 0.0, 0.0, long_lived
    for w in normalized.get("workloads", []) or []:
        count, rows, alive = _workload_flows(w, duration_s, interval_s, mss, bottleneck_bps)
        short += count
        short_rows += rows if timeseries else 0.0
        access_queues += int(min(count, max(WORKLOAD_ACCESS_QUEUES, 3 * alive)))
    flows = long_lived + int(short)
    flow_rows = long_lived * intervals + int(short_rows)
    subqueue_rows = intervals * sum(n * QUEUE_SUBQUEUES.get(aqm, 1) for aqm, n in queue_aqms.items())
    probe_rows = intervals * sum(n * QUEUE_PROBES.get(aqm, 0) for aqm, n in queue_aqms.items())
    queue_rows = subqueue_rows + probe_rows
    memory = (BASE_BYTES + queues * QUEUE_BYTES + long_lived * FLOW_BYTES + int(short * WORKLOAD_FLOW_BYTES)
              + flow_rows * FLOW_INTERVAL_BYTES + subqueue_rows * QUEUE_INTERVAL_BYTES + probe_rows * PROBE_ROW_BYTES
              + (access_queues * ACCESS_QUEUE_BYTES if access else 0))  # fmt: skip
    carried = min(rate_bps * duration_s / (8 * mtu) * hops, offered_packets)
    packets = max(carried, sum(_unresponsive_sends(f, duration_s, mtu, hosts) for f in normalized.get("flows", [])))
    wall_s = packets / PACKETS_PER_WALL_S + queue_rows / QUEUE_ROWS_PER_WALL_S
    return Estimate(flows, intervals, memory, packets, wall_s, flow_rows, queue_rows)


def _active_s(item: dict[str, Any], duration_s: float) -> float:
    """A flow group's or workload's active time in the run: from its
    `start` to its `stop` or the run's end."""
    start_s = _ns(item.get("start", "0ns")) / 1e9
    stop_s = _ns(item["stop"]) / 1e9 if item.get("stop") else duration_s
    return max(0.0, min(stop_s, duration_s) - start_s)


def _fat_tree_offered_packets(normalized: dict[str, Any], k: int, link_bps: float, duration_s: float,
                              mtu: int, mss: int) -> float:  # fmt: skip
    """The packet-hops a k-ary fat tree's traffic can offer at most, each
    packet over its path's queues (`_fat_tree_path_queues`):
    - TCP flows what their host's link carries over their active time, or
      their `size` in segments (plus one for the last, partial one) if
      less; a host's groups share its link (a `pattern` gives every host
      one group); each segment with an ACK (a QCN source's without);
    - a workload's flow its mean size in segments, plus one, each with an
      ACK, and the SYN and SYN-ACK;
    - UDP flows and latency probes what they send (`_unresponsive_sends`),
      UDP's beyond its host's link only to the first queue, where it is
      dropped."""
    hosts = k**3 // 4
    total = 0.0
    # By sending host ("" for a pattern's every host): what its TCP groups
    # offer, capped at what its link carries from the first one's start to
    # the last one's stop.
    by_host: dict[str, _HostOffer] = {}
    for f in normalized.get("flows", []) or []:
        path = _fat_tree_path_queues(k, f)
        senders = hosts if f.get("pattern") else 1
        line_rate = senders * link_bps * _active_s(f, duration_s) / (8 * mtu)
        if f.get("cc") == "udp":
            sends = _unresponsive_sends(f, duration_s, mtu, hosts)
            carried = min(sends, line_rate * mtu / (_size_bytes(f.get("packet_size")) or mtu))
            total += carried * path + (sends - carried)
        elif f.get("cc") == "probe":
            total += _unresponsive_sends(f, duration_s, mtu, hosts) * path
        else:
            segments = line_rate
            if f.get("size"):  # finite flows, each with its SYN and SYN-ACK
                flows = senders * int(f.get("count", 1) or 1)
                segments = min(segments, flows * (_size_bytes(f["size"]) / mss + 1))
                total += flows * 2 * path
            start_s = _ns(f.get("start", "0ns")) / 1e9
            host = by_host.setdefault("" if f.get("pattern") else str(f.get("src")), _HostOffer(senders, start_s))
            host.segments += segments
            host.visits = max(host.visits, path * (1 if f.get("cc") == "qcn" else 2))
            host.start_s = min(host.start_s, start_s)
            host.stop_s = max(host.stop_s, start_s + _active_s(f, duration_s))
    for host in by_host.values():
        link_segments = host.senders * link_bps * max(0.0, host.stop_s - host.start_s) / (8 * mtu)
        total += min(host.segments, link_segments) * host.visits
    for w in normalized.get("workloads", []) or []:
        segments = _mean_size_bytes(w.get("size") or {}) / mss + 1
        total += _workload_count(w, duration_s) * (2 * segments + 2) * _fat_tree_path_queues(k, w)
    return total


@dataclass
class _HostOffer:
    """What a fat tree's sending host (or a pattern's every host, `senders`)
    offers through its link: segments, the most queue visits a segment of
    one of its groups costs (with its ACK), and the span its groups are
    active in."""

    senders: int
    start_s: float
    stop_s: float = 0.0
    segments: float = 0.0
    visits: int = 0


def _fat_tree_path_queues(k: int, flow: dict[str, Any]) -> int:
    """Queues between a flow's two hosts, one way: 2 under one edge switch,
    4 within a pod, 6 between pods (hosts are numbered edge by edge and pod
    by pod: `h3` is host 1 of edge switch 1 of pod 0 when k = 4); the
    longest path where the hosts are not named (a `pattern`, an incast's
    random senders)."""
    ends = [re.fullmatch(r"h([0-9]+)", str(flow.get(key, ""))) for key in ("src", "dst")]
    if k < 2 or not all(ends):
        return FAT_TREE_PATH_QUEUES
    src, dst = (int(m.group(1)) for m in ends if m)
    if src // (k // 2) == dst // (k // 2):
        return 2
    return 4 if src // (k * k // 4) == dst // (k * k // 4) else FAT_TREE_PATH_QUEUES


def _workload_count(w: dict[str, Any], duration_s: float) -> float:
    """A workload's expected flow count: an incast's senders at each of its
    periods, a Poisson workload's rate times its active time."""
    active_s = _active_s(w, duration_s)
    every_s = _ns(w.get("every")) / 1e9 if w.get("every") else 0.0
    if every_s > 0:
        return float(int(w.get("senders", 0) or 0) * math.ceil(active_s / every_s))
    rate = re.fullmatch(r"([0-9.]+)/s", str(w.get("rate", "")).strip())
    return float(rate.group(1)) * active_s if rate else 0.0


def _workload_flows(w: dict[str, Any], duration_s: float, interval_s: float, mss: int,
                    bottleneck_bps: float | None) -> tuple[float, float, float]:  # fmt: skip
    """A workload's expected flow count, their time-series rows, and its
    flows alive at a time on average (count × life / active time).

    A flow is sampled at every interval it is alive, and once more when it
    has ended. Its life is taken as a handshake and the slow-start rounds
    its mean size needs, `rtt × (2 + log2(1 + mean / (IW × MSS)))`, plus
    that size at the bottleneck's rate (docs/reliability.md, "Resource
    guard"). A workload that offers its dumbbell's bottleneck at least its
    rate never drains: each of its flows is charged as alive from its start
    to the workload's end, half its active time on average."""
    active_s = _active_s(w, duration_s)
    count = _workload_count(w, duration_s)
    mean_bytes = _mean_size_bytes(w.get("size") or {})
    initial_window = float((w.get("params") or {}).get("initial_window", 10) or 10)
    life_s = _ns(w.get("rtt", "0ns")) / 1e9 * (2 + math.log2(1 + mean_bytes / (initial_window * mss)))
    if bottleneck_bps:
        life_s += mean_bytes * 8 / bottleneck_bps
        offered_bps = count * mean_bytes * 8 / active_s if active_s > 0 else 0.0
        if offered_bps >= bottleneck_bps:
            life_s = max(life_s, active_s / 2)
    alive = count * min(1.0, life_s / active_s) if active_s > 0 else 0.0
    return count, count * (1 + life_s / interval_s), alive


def _mean_size_bytes(size: dict[str, Any]) -> float:
    """The mean of a workload's flow-size distribution (the engine's four)."""
    dist = size.get("dist")
    lo, hi = (_size_bytes(size.get(k)) for k in ("min", "max"))
    if dist == "uniform":
        return (lo + hi) / 2
    if dist == "pareto" and 0 < lo < hi:
        a = float(size.get("shape", 1.2))
        if a == 1.0:
            return hi * lo / (hi - lo) * math.log(hi / lo)
        # The Pareto of shape a truncated to [lo, hi] (sim/rng.rs, `bounded_pareto`).
        return lo**a / (1 - (lo / hi) ** a) * a / (a - 1) * (lo ** (1 - a) - hi ** (1 - a))
    return float(_size_bytes(size.get("mean")))


def _unresponsive_sends(f: dict[str, Any], duration_s: float, mtu: int, hosts: int) -> float:
    """Packets a UDP flow group or latency probe sends whatever the links
    carry (0 for other flows): each costs an event at the source and an
    arrival at a queue even when it is dropped, so 1 Tbit/s of UDP into a
    10 Mbit/s link costs what its offered load does, not what the link
    carries. A `pattern` gives every one of a fat tree's `hosts` the group.
    (A QCN source's `rate` is only its line rate: it slows down on
    congestion notifications, so it is left out.)"""
    copies = int(f.get("count", 1) or 1) * (hosts if f.get("pattern") and hosts else 1)
    if f.get("cc") == "udp":
        size = _size_bytes(f.get("packet_size")) or mtu
        return copies * _bps(f.get("rate")) * _active_s(f, duration_s) / (8 * size)
    if f.get("cc") == "probe":
        interval_s = _ns((f.get("params") or {}).get("interval", "10ms")) / 1e9
        if interval_s > 0:
            return copies * 2 * _active_s(f, duration_s) / interval_s  # a request and its reply
    return 0.0


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
