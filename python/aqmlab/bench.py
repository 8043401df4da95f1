"""``aqmlab bench``: the performance benchmark (simulated packets per wall-second).

Fixed scenarios:

* A-10, A-100: dumbbell, 10 Gbit/s bottleneck, base RTT 100 µs, 1500-byte
  packets, DCTCP, step marking at 65 packets, 250-packet buffer, flows
  starting within the first 1 ms, 10 simulated seconds; 10 / 100 flows.
* B: 1 Gbit/s, 100 CUBIC + 100 DCTCP flows with base RTTs spread evenly
  over 5-100 ms, DualPI2, 30 simulated seconds (skipped, with a message,
  when the engine has no DualPI2).
* A-10-ack1, A-100-ack1: scenario A with an ACK for every data packet
  (``tcp.delayed_ack = false``), the work htsim's sink does: the
  equal-work comparison with htsim (docs/performance.md).
* C-10, C-1000, C-10000: scenario A's link with 10, 1,000, 10,000 flows.
* D, D-1024: a k = 8 (128 hosts, 80 switches) and a k = 16 (1,024 hosts,
  320 switches) fat tree, 10 Gbit/s links, 1 µs per hop, scenario A's queue
  (step marking at 65 packets, 250-packet buffer) on every port, host NICs
  included; DCTCP; a random permutation of long flows (each host sends to
  one other host) plus an incast of 32 senders x 64 KB to a random host
  every 10 ms from 10 ms on; 100 ms (D) and 20 ms (D-1024) simulated.
  Their work is counted in packet-hops (``packet_hops``: data packets and
  ACKs leaving any queue; ``bottleneck_packets`` counts data packet-hops),
  so their headline is ``hops_per_s`` (``headline`` in each result), also
  in the progress lines ("D run 1/3: 9.274 M hops/s") and the table's range.
* D-ack1, D-1024-ack1: D and D-1024 with an ACK for every data packet
  (``tcp.delayed_ack = false``), as htsim's sink: the equal-work comparison
  with htsim's fat tree (docs/performance.md, "htsim's fat tree").
* D-codel: D with CoDel (RFC 8289) marking ECN on every port instead of step
  marking, 50 ms simulated: the cost of a hop through a queue that decides
  at dequeue, as every AQM but step marking does. Target 20 µs, interval
  200 µs are our choice, scaled down from RFC 8289's Internet defaults
  (interval about a worst-case RTT, §4.3: a 12-hop round trip of about 20 µs
  plus the queues; target 10 % of the interval, §4.4).

On request only (``--only NAME``; ``--list`` shows them), not in the default
set: D-codel's tree with another discipline on every port, 50 ms simulated
(:data:`ON_REQUEST`; docs/performance.md, "Fat trees with an AQM"):

* D-pie, D-pi2: PIE (RFC 8033) and PI2 (De Schepper et al. 2016; ``l4s``
  on, which marks ECT(1) with k·p′: DCTCP's ECT(0) packets get the Classic
  p′²), ECN, target 20 µs and update every 200 µs (our choice, as
  D-codel's: at their 15 ms defaults neither signals in a fat tree); PIE
  without its burst allowance (RFC 8033's 150 ms outlasts the 50 ms run).
* D-red: RED (Floyd and Jacobson 1993) marking ECN, its defaults.
* D-dualpi2: DualPI2 (RFC 9332) with every ECT packet classified L4S
  (``l4s_ect = "any"``, as DCTCP's ECT(0) would otherwise be Classic) and
  the L queue's step at 78 µs (our choice: 65 packets of 1 500 bytes at
  10 Gbit/s, D's marking threshold).
* D-curvy_red: the DualQ Curvy RED of the 2015 seed, its defaults.
* D-vdq_csaqm: VDQ-CSAQM (the PPV seed) with its defaults, the long flows
  TCP Prague with a packet-value marker (which VDQ-CSAQM needs); the
  incasts stay DCTCP, unmarked.

Also on request (:data:`CHAINS`; docs/performance.md, "Scaling with path
length"): chain-1, chain-4, chain-16, chain-64, a path of 1, 4, 16 or 64
links of 10 Gbit/s in a row with scenario A's queue, and as many links
back for the ACKs (tail-drop FIFOs, as a topology's reverse links have),
10 DCTCP flows from one end to the other: the cost of a packet-hop as
the path grows, counted in packet-hops like the fat trees. Every link has
a delay of its own (forward link i 1 000 + i ns, back link i
1 000 + N + i ns): they were defined when only a fat tree gave each queue
delay lines of its own, and a graph's links of equal delay shared lines
that two queues with departure lookahead fill out of order (since stop 55
`net::route::compile` gives every queue its own). The simulated time is
6.4 s / N, so that every length moves about 8 M packet-hops.

Also on request (:data:`ACCESS`; docs/performance.md, "Per-flow access
links"): A-10-access and C-10000-access, scenario A with 10 and 10,000
flows, each sending through an access link of its own
(``bottleneck.access_rate``, :data:`ACCESS_RATE`, a tail-drop FIFO of
100 ms): the cost of a second queue per flow, made with each flow.

Also on request (:data:`WORKLOADS`; docs/performance.md, "Workload flows
over long runs"): W, 2 000 web flows per second (Poisson arrivals, CUBIC,
base RTT 20 ms, bounded-Pareto sizes of 2 kB to 1 MB, shape 1.2) on a
1 Gbit/s dumbbell with a FIFO of 100 ms, 16 simulated seconds (32 200
flows), time series on at the default 100 ms: what a workload costs as
its flows accumulate (each sample, each flow started). W-access: the same
with an access link per flow (:data:`ACCESS_RATE`), which later flows take
over from finished ones. ``--duration`` lengthens them (docs/performance.md
measures 64 s and 128 s).

Metrics as in a normal run (per-queue sojourn histograms, per-flow and
per-queue counters, the summary) except time series, which are off but
in W and W-access.

Each run is a fresh subprocess, so the peak resident set size (the child's
own ``VmHWM``, read by the child: the Python interpreter, the engine and the
scenario) is per scenario; the parent's ``ru_maxrss`` of the child is not
used on Linux because it starts from the parent's own peak across exec. Wall time is the engine's own
measure of its event loop (``perf.wall_s``: no start-up, no result
conversion). With ``--repeat N`` the median of N runs is reported; the work
counts (events, bottleneck packets) must be identical across repeats, and a
difference is reported as an error (the engine is deterministic).

Repeats are interleaved (round 1 runs every scenario once, then round 2,
...), so a slow spell of a shared machine hits every scenario alike and
ratios between scenarios stay meaningful. Each result also gives the range
of its runs (``pkts_per_s_min``, ``pkts_per_s_max``, ``hops_per_s_min``,
``hops_per_s_max``) and, on Linux, the share
of CPU time the hypervisor took from this machine while they ran
(``steal_pct``, from ``/proc/stat``): a high share says the wall times are
disturbed, not the engine slower.

The overrides (``--duration``, ``--rate``, ``--repeat``) are checked against
every selected scenario before anything runs, and a bad one is refused in
the user's terms (option, value, what is allowed). A scenario that moved no
packet (``--duration 1ns``) is kept, with a warning line.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
from typing import Any

from aqmlab.bench_table import rate_text, table

__all__ = ["METRICS", "SCENARIOS", "ON_REQUEST", "CHAINS", "ACCESS", "WORKLOADS", "ALL_SCENARIOS", "scenario", "headline", "describe", "run_child", "bench", "cli_bench"]

SCENARIOS = ("A-10", "A-100", "A-10-ack1", "A-100-ack1", "B", "C-10", "C-1000", "C-10000", "D", "D-1024", "D-ack1",
             "D-1024-ack1", "D-codel")  # fmt: skip

#: Benchmarks run only when named (``--only``): D-codel's tree with another
#: discipline on every port (the module's docs).
ON_REQUEST = ("D-pie", "D-pi2", "D-red", "D-dualpi2", "D-curvy_red", "D-vdq_csaqm")

#: Benchmarks run only when named: chains of 1 to 64 links (the module's docs).
CHAINS = ("chain-1", "chain-4", "chain-16", "chain-64")

#: Benchmarks run only when named: dumbbells whose flows each have an access
#: link of their own (the module's docs).
ACCESS = ("A-10-access", "C-10000-access")

#: A sender's access link in :data:`ACCESS`: twice the bottleneck's rate, so
#: the bottleneck stays the bottleneck (our choice).
ACCESS_RATE = "20Gbps"

#: Benchmarks run only when named: a web workload over a long run, without
#: and with access links (the module's docs).
WORKLOADS = ("W", "W-access")

#: Every benchmark name, the default set first.
ALL_SCENARIOS = SCENARIOS + ON_REQUEST + CHAINS + ACCESS + WORKLOADS


#: Metric sets a benchmark can run with (``--metrics``): ``default`` is what a
#: normal run records except time series; ``off`` records only counters;
#: ``samples`` adds a raw sojourn sample of every packet.
METRICS = ("default", "off", "samples")


def _metrics(metrics: str = "default") -> dict[str, Any]:
    if metrics not in METRICS:
        raise ValueError(f"unknown metric set '{metrics}' (allowed: {', '.join(METRICS)})")
    return {
        "timeseries": False,
        "sojourn_histograms": metrics != "off",
        "sojourn_samples_every": 1 if metrics == "samples" else 0,
    }


def _dumbbell_a(flows: int) -> dict[str, Any]:
    return {
        "name": f"bench-a-{flows}",
        "duration": "10s",
        "bottleneck": {"rate": "10Gbps", "buffer": "250pkt", "aqm": "step", "params": {"threshold": "65pkt"}},
        "flows": [{"cc": "dctcp", "count": flows, "rtt": "100us", "start_jitter": "1ms"}],
        "tcp": {"mtu_bytes": 1500},
    }


def _web() -> dict[str, Any]:
    return {
        "name": "bench-w",
        "duration": "16s",
        "bottleneck": {"rate": "1Gbps", "buffer": "100ms", "aqm": "fifo"},
        "flows": [],
        "workloads": [{"kind": "web", "rate": "2000/s", "cc": "cubic", "rtt": "20ms",
                       "size": {"dist": "pareto", "min": "2KB", "max": "1MB", "shape": 1.2}}],
    }  # fmt: skip


def _b() -> dict[str, Any]:
    groups = []
    n = 100
    for cc in ("cubic", "dctcp"):
        for i in range(n):
            rtt_us = 5_000 + round(i * 95_000 / (n - 1))
            groups.append({"cc": cc, "label": cc, "rtt": f"{rtt_us}us", "start_jitter": "1s"})
    return {
        "name": "bench-b",
        "duration": "30s",
        "bottleneck": {"rate": "1Gbps", "aqm": "dualpi2"},
        "flows": groups,
    }


#: The queue on every port of D and D-1024 (scenario A's), of D-codel and of
#: the fat trees on request (the module's docs say why these parameters).
_STEP = ("step", {"threshold": "65pkt"})
_CODEL = ("codel", {"target": "20us", "interval": "200us", "ecn": True})
_OTHER_AQMS = {
    "D-pie": ("pie", {"target": "20us", "tupdate": "200us", "max_burst": "0s", "ecn": True}),
    "D-pi2": ("pi2", {"target": "20us", "tupdate": "200us", "l4s": True, "ecn": True}),
    "D-red": ("red", {"ecn": True}),
    "D-dualpi2": ("dualpi2", {"l4s_ect": "any", "step_thresh": "78us"}),
    "D-curvy_red": ("curvy_red", {}),
    "D-vdq_csaqm": ("vdq_csaqm", {}),
}


def _fat_tree(k: int, duration: str, aqm: tuple[str, dict[str, Any]] = _STEP) -> dict[str, Any]:
    return {
        "name": f"bench-fat-tree-{k}" + ("" if aqm == _STEP else f"-{aqm[0]}"),
        "duration": duration,
        "topology": {"fat_tree": {"k": k, "rate": "10Gbps", "delay": "1us", "buffer": "250pkt",
                                  "aqm": aqm[0], "params": dict(aqm[1])}},  # fmt: skip
        "flows": [{"cc": "dctcp", "pattern": "permutation", "start_jitter": "1ms"}],
        "workloads": [{"kind": "incast", "cc": "dctcp", "every": "10ms", "start": "10ms", "senders": 32,
                       "size": {"dist": "fixed", "mean": "64KB"}}],  # fmt: skip
        "tcp": {"mtu_bytes": 1500},
    }


def _chain(links: int) -> dict[str, Any]:
    nodes = ["src", *(f"r{i}" for i in range(1, links)), "dst"]
    forward = [{"from": nodes[i], "to": nodes[i + 1], "rate": "10Gbps", "delay": f"{1_000 + i}ns", "buffer": "250pkt",
                "aqm": _STEP[0], "params": dict(_STEP[1]), "duplex": False} for i in range(links)]  # fmt: skip
    back = [{"from": nodes[i + 1], "to": nodes[i], "rate": "10Gbps", "delay": f"{1_000 + links + i}ns",
             "buffer": "250pkt", "duplex": False} for i in range(links)]  # fmt: skip
    return {
        "name": f"bench-chain-{links}",
        "duration": f"{6_400_000 // links}us",
        "topology": {"links": forward + back},
        "flows": [{"cc": "dctcp", "count": 10, "src": "src", "dst": "dst", "start_jitter": "1ms"}],
        "tcp": {"mtu_bytes": 1500},
    }


def _queues(s: dict[str, Any]) -> list[dict[str, Any]]:
    """The tables that set a benchmark's queues: its bottleneck, its fat
    tree, or each link of its chain."""
    if "bottleneck" in s:
        return [s["bottleneck"]]
    topology = s["topology"]
    return [topology["fat_tree"]] if "fat_tree" in topology else topology["links"]


def scenario(name: str, duration: str | None = None, metrics: str = "default", rate: str | None = None) -> dict[str, Any]:
    """The scenario tree of a benchmark; ``duration`` overrides the length,
    ``metrics`` picks one of :data:`METRICS`, ``rate`` overrides the
    bottleneck rate (every link's rate in a fat tree; for scaling studies)."""
    if name not in ALL_SCENARIOS:
        raise ValueError(f"unknown benchmark '{name}' (allowed: {', '.join(ALL_SCENARIOS)})")
    # An "-ack1" or "-access" scenario is its base scenario's tree with one
    # change, so the two cannot drift apart.
    base = name.removesuffix("-ack1").removesuffix("-access")
    if base in ("A-10", "A-100", "C-10", "C-1000", "C-10000"):
        s = _dumbbell_a(int(base.split("-")[1]))
        s["name"] = f"bench-{base}"
    elif base == "B":
        s = _b()
    elif base == "W":
        s = _web()
    elif base == "D":
        s = _fat_tree(8, "100ms")
    elif base == "D-codel":
        s = _fat_tree(8, "50ms", _CODEL)
    elif base in CHAINS:
        s = _chain(int(base.split("-")[1]))
    elif base in _OTHER_AQMS:
        s = _fat_tree(8, "50ms", _OTHER_AQMS[base])
        if base == "D-vdq_csaqm":  # its packet values come from a marker at each source
            s["flows"][0].update(cc="prague", marker={})
    else:  # D-1024
        s = _fat_tree(16, "20ms")
    if name.endswith("-ack1"):
        # An ACK for every data packet (RFC 5681 delayed ACKs off), as htsim's TcpSink.
        s["tcp"]["delayed_ack"] = False
        s["name"] += "-ack1"
    if name.endswith("-access"):
        s["bottleneck"]["access_rate"] = ACCESS_RATE
        s["name"] += "-access"
    # `is not None`: an empty override is the engine's to refuse, not a
    # silent "no override" (`--duration ""` used to run the full 10 s).
    if duration is not None:
        s["duration"] = duration
    if rate is not None:
        for q in _queues(s):
            q["rate"] = rate
    s["metrics"] = _metrics(metrics)
    # A workload's cost as its flows accumulate is in its samples.
    s["metrics"]["timeseries"] = base == "W"
    return s


def headline(name: str) -> str:
    """The work a benchmark's headline rate counts: ``"hops"`` (packet-hops,
    ``hops_per_s``) for a topology (the fat trees, where one packet crosses
    up to six queues, and the chains); ``"pkts"`` (bottleneck packets,
    ``pkts_per_s``) for a dumbbell."""
    return "hops" if "topology" in scenario(name) else "pkts"


def _time_text(text: str) -> str:
    """'100000us' -> '100 ms': the definitions' durations, read by a person."""
    from aqmlab.scenario import duration_s  # here: the CLI imports this module at start-up

    seconds = duration_s(text)
    if seconds is None:
        return text
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:g} {unit}"
    return f"{seconds * 1e9:g} ns"


def _params_text(params: dict[str, Any]) -> str:
    """An AQM's parameters, read by a person: 'marks at 65pkt';
    'target 20 µs, interval 200 µs, ECN' (a flag by its name when on)."""
    words = []
    for key, value in params.items():
        if key == "threshold":
            words.append(f"marks at {value}")
        elif isinstance(value, bool):
            words += [key.upper()] if value else []
        else:
            words.append(f"{key} {_time_text(value) if isinstance(value, str) else value}")
    return ", ".join(words)


def describe(name: str) -> str:
    """One line on a benchmark (topology, flows, CC, AQM, simulated time),
    read from its scenario tree, so `--list` cannot drift from the
    definitions."""
    from aqmlab.scenario import duration_s

    s = scenario(name)
    ccs: dict[str, int] = {}
    if "bottleneck" in s:
        q = s["bottleneck"]
        for f in s["flows"]:
            ccs[f["cc"]] = ccs.get(f["cc"], 0) + f.get("count", 1)
        rtts = sorted({f["rtt"] for f in s["flows"] + s.get("workloads", [])}, key=lambda t: duration_s(t) or 0.0)
        rtt = _time_text(rtts[0]) if len(rtts) == 1 else f"{_time_text(rtts[0])} to {_time_text(rtts[-1])}"
        total = sum(ccs.values())
        mix = " + ".join(f"{n} {cc.upper()}" for cc, n in ccs.items())
        parts = [f"dumbbell {q['rate']}"]
        if ccs:
            parts.append(f"{total} flows ({mix})" if len(ccs) > 1 else f"{mix} flows")
        for w in s.get("workloads", []):
            z = w["size"]
            parts.append(f"{w['kind']} flows at {w['rate']} ({w['cc'].upper()}, {z['dist']} sizes {z['min']} to {z['max']})")
        parts.append(f"base RTT {rtt}")
        if "access_rate" in q:
            parts.append(f"each flow through its own {q['access_rate']} access link")
    elif "links" in s["topology"]:
        links = s["topology"]["links"]
        q = links[0]
        n = len(links) // 2  # the chain's links forward, then as many back for the ACKs
        (f,) = s["flows"]
        delays = _time_text(q["delay"]) + ("" if n == 1 else f" to {_time_text(links[n - 1]['delay'])}")
        parts = [f"chain of {n} link{'s' if n > 1 else ''} and {n} back, {q['rate']}, {delays} each",
                 f"{f['count']} {f['cc'].upper()} flows end to end"]  # fmt: skip
    else:
        q = s["topology"]["fat_tree"]
        k = q["k"]
        parts = [f"fat tree k={k} ({k**3 // 4} hosts, {5 * k * k // 4} switches), {q['rate']} links, "
                 f"{_time_text(q['delay'])} per hop"]  # fmt: skip
        for f in s["flows"]:
            marked = ", packet values marked at each source" if "marker" in f else ""
            parts.append(f"{f['cc'].upper()} {f['pattern']} (every host sends to one other{marked})")
        for w in s.get("workloads", []):
            parts.append(f"{w['kind']} of {w['senders']} x {w['size']['mean']} ({w['cc'].upper()}) every "
                         f"{_time_text(w['every'])}")  # fmt: skip
    aqm = f"AQM {q['aqm']}" + (f" ({_params_text(q['params'])})" if q.get("params") else "")
    per_port = " per port" if "fat_tree" in s.get("topology", {}) else " per link" if "topology" in s else ""
    parts.append(aqm + (f", {q['buffer']} buffer{per_port}" if "buffer" in q else ""))
    if s.get("tcp", {}).get("delayed_ack") is False:
        parts.append("an ACK for every packet")
    if s["metrics"]["timeseries"]:
        parts.append("time series on")
    return f"{', '.join(parts)}; {_time_text(s['duration'])} simulated"


def requirement(name: str) -> str | None:
    """Why a benchmark cannot run on this engine, or None."""
    import aqmlab

    s = scenario(name)
    aqm = _queues(s)[0]["aqm"]
    if aqm not in aqmlab.registry()["aqm"]:
        return f"needs AQM '{aqm}', which this engine does not have yet"
    return None


def run_child(name: str, duration: str | None, metrics: str = "default", rate: str | None = None) -> dict[str, Any]:
    """Run one benchmark in this process (the child side)."""
    from aqmlab import _engine

    text = _engine.validate(json.dumps(scenario(name, duration, metrics, rate)))
    raw = _engine.run(text)
    perf = json.loads(raw["summary"])["perf"]
    return {"name": name, **perf}


def _cpu_ticks() -> tuple[int, int] | None:
    """(steal, total) CPU ticks of the whole machine so far (Linux), else None."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal [guest guest_nice]: guest
    # time is already counted in user and nice.
    return (fields[7], sum(fields[:8])) if len(fields) >= 8 else None


def _run_once(name: str, duration: str | None, metrics: str = "default", rate: str | None = None) -> dict[str, Any]:
    import subprocess  # here, not at the top: the CLI imports this module at start-up (METRICS)

    cmd = [sys.executable, "-m", "aqmlab.bench", "--child", name, "--metrics", metrics]
    if duration:
        cmd += ["--duration", duration]
    if rate:
        cmd += ["--rate", rate]
    before = _cpu_ticks()
    # SIGINT is held while the child starts: an interrupt arriving inside
    # Popen (after the fork, before Popen returns) would leave a child nobody
    # ends. Restored first thing in the try below, where a pending SIGINT
    # then raises and ends the child. The child unblocks it for itself.
    hold = hasattr(signal, "pthread_sigmask")
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if hold else None
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except BaseException:
        if hold:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # type: ignore[arg-type]
        raise
    try:
        if hold:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # type: ignore[arg-type]
        out, err = proc.stdout.read(), proc.stderr.read()  # type: ignore[union-attr]
        _, status, usage = os.wait4(proc.pid, 0)
    except BaseException:
        # Ctrl-C (or any error) here: end the child too, or it would run on
        # alone after `aqmlab bench` has exited (a SIGINT sent to this
        # process only, not its whole process group, never reached it).
        proc.kill()
        proc.wait()
        raise
    after = _cpu_ticks()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark {name} failed (exit {proc.returncode}): {err.decode().strip()[-2000:]}")
    doc = json.loads(out)
    if doc.get("peak_rss_mb") is None:  # no /proc: the child's ru_maxrss (KiB on Linux, bytes on macOS)
        scale = 1 if sys.platform == "darwin" else 1024
        doc["peak_rss_mb"] = usage.ru_maxrss * scale / 1e6
    doc["steal_pct"] = None
    if before and after and after[1] > before[1]:
        doc["steal_pct"] = 100 * (after[0] - before[0]) / (after[1] - before[1])
    return doc


def bench(names: list[str] | None = None, repeat: int = 1, duration: str | None = None,
          log: Any = None, metrics: str = "default", rate: str | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """Run the benchmarks; one result per scenario (median over ``repeat``,
    the repeats interleaved across scenarios). ``duration`` and ``rate``
    override every scenario's length and bottleneck rate. A name given twice
    runs ``repeat`` times and gives one result, like a name given once."""
    import statistics

    from aqmlab import _engine  # the children import this same build

    todo = []
    for name in dict.fromkeys(names or SCENARIOS):  # duplicates dropped, order kept
        why = requirement(name)
        if why:
            if log:
                log(f"{name}: skipped ({why})")
        else:
            todo.append(name)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in todo}
    work = {name: headline(name) for name in todo}
    rounds = max(1, repeat)
    for i in range(rounds):
        for name in todo:
            r = _run_once(name, duration, metrics, rate)
            runs[name].append(r)
            if log:
                # The headline's own rate: packet-hops for a fat tree (its
                # bottleneck_packets are data packet-hops only).
                count = r["packet_hops"] if work[name] == "hops" else r["bottleneck_packets"]
                per_s = count / r["wall_s"] if r["wall_s"] > 0 and count is not None else None
                log(f"{name} run {i + 1}/{rounds}: {rate_text(per_s)} {work[name]}/s")
    results = []
    for name in todo:
        rs = runs[name]
        counts = {(r["events"], r["bottleneck_packets"], r.get("packet_hops")) for r in rs}
        if len(counts) != 1:
            raise RuntimeError(f"benchmark {name}: work counts differ across repeats {sorted(counts)} (non-determinism)")
        wall = statistics.median(r["wall_s"] for r in rs)
        slowest, fastest = max(r["wall_s"] for r in rs), min(r["wall_s"] for r in rs)
        r0 = rs[0]
        pkts, hops = r0["bottleneck_packets"], r0.get("packet_hops")

        def per_s(count: int | None, wall_s: float) -> float | None:
            return count / wall_s if count is not None and wall_s > 0 else None

        steal = [r["steal_pct"] for r in rs if r["steal_pct"] is not None]
        results.append({
            "name": name,
            "sim_s": r0["sim_s"],
            "bottleneck_packets": pkts,
            "events": r0["events"],
            "wall_s": wall,
            "pkts_per_s": per_s(pkts, wall),
            "events_per_s": per_s(r0["events"], wall),
            "packet_hops": hops,
            "hops_per_s": per_s(hops, wall),
            "events_per_hop": r0["events"] / hops if hops else None,
            "peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in rs),
            "pkts_per_s_min": per_s(pkts, slowest),
            "pkts_per_s_max": per_s(pkts, fastest),
            "hops_per_s_min": per_s(hops, slowest),
            "hops_per_s_max": per_s(hops, fastest),
            "headline": f"{work[name]}_per_s",
            "steal_pct": statistics.median(steal) if steal else None,
            "repeat": len(rs),
            "metrics": metrics,
            "build": _engine.BUILD,
            "source_digest": getattr(_engine, "SOURCE_DIGEST", None),
        })  # fmt: skip
    return results


#: Units the engine reads, for the "allowed" part of an override's error
#: when the engine's own message does not list them (e.g. "must be positive").
_UNITS = {"--duration": "ns, us, µs, ms, s, min", "--rate": "bps, kbps, Kbps, Mbps, Gbps, Tbps"}
_EXAMPLE = {"--duration": ("simulated time", "2ms"), "--rate": ("rate", "100Gbps")}


def _override_error(option: str, value: str, engine_msg: str) -> str:
    """The engine's "topology.fat_tree.rate: '-5Gbps': a rate cannot be
    negative" in the user's terms: "--rate: '-5Gbps': a rate cannot be
    negative (allowed: a positive rate in bps, ..., e.g. 100Gbps)"."""
    rest = engine_msg.split(": ", 1)[1] if ": " in engine_msg else engine_msg  # drop the engine's key path
    units = _UNITS[option]
    m = re.search(r"\s*\((?:allowed|units): ([^)]*)\)\s*$", rest)
    if m:
        units, rest = m.group(1), rest[: m.start()]
    rest = re.sub(r",\s*e\.g\. '[^']*'$", "", rest)  # the example comes with "allowed"
    # "'5' needs a unit" reads on after the value; "must be positive" after a colon.
    sep = ": "
    for given, after in ((f"'{value}': ", ": "), (f"'{value}' ", " ")):
        if rest.startswith(given):
            rest, sep = rest[len(given) :], after
            break
    what, example = _EXAMPLE[option]
    return f"{option}: '{value}'{sep}{rest} (allowed: a positive {what} in {units}, e.g. {example})"


def _repeat(text: str) -> int:
    allowed = "(allowed: a whole number of runs per scenario, at least 1)"
    try:
        n = int(text)
    except ValueError:
        raise ValueError(f"--repeat: '{text}' is not a whole number {allowed}") from None
    if n < 1:
        raise ValueError(f"--repeat: '{text}' is too few {allowed}")
    return n


def check_options(names: list[str], duration: str | None, rate: str | None) -> None:
    """Every override checked against every selected scenario before anything
    runs (a fat tree's --rate is its links' rate, a dumbbell's its
    bottleneck's): ValueError with one line in the options' terms."""
    from aqmlab import _engine

    for name in names:
        for option, value, tree in (("--duration", duration, scenario(name, duration=duration)),
                                    ("--rate", rate, scenario(name, rate=rate))):  # fmt: skip
            if value is None:
                continue
            try:
                _engine.validate(json.dumps(tree))
            except ValueError as e:
                raise ValueError(_override_error(option, value, str(e))) from None
        if duration is None or rate is None:
            continue
        try:  # both together (no check of the engine's couples them today)
            _engine.validate(json.dumps(scenario(name, duration, rate=rate)))
        except ValueError as e:
            raise ValueError(f"benchmark {name} with --duration {duration} --rate {rate}: {e}") from None


def cli_bench(args: argparse.Namespace) -> int:
    from aqmlab.console import consoles as _consoles
    from aqmlab.scenario import ScenarioError

    out_c, err_c = _consoles()
    if args.list:
        width = max(len(n) for n in ALL_SCENARIOS)
        for n in ALL_SCENARIOS:
            why = requirement(n)
            when = "  (on request: --only)" if n not in SCENARIOS else ""
            print(f"{n:<{width}}  {describe(n)}{when}{'' if why is None else f'  (skipped: {why})'}")
        return 0
    names = list(dict.fromkeys(args.only or SCENARIOS))  # --only A-10 --only A-10 runs A-10 once
    for n in names:
        if n not in ALL_SCENARIOS:
            raise ScenarioError(f"--only: unknown benchmark '{n}' (allowed: {', '.join(ALL_SCENARIOS)}; "
                                "--list describes them)")  # fmt: skip
    try:
        repeat = _repeat(str(args.repeat))
        check_options([n for n in names if requirement(n) is None], args.duration, args.rate)
    except ValueError as e:
        raise ScenarioError(str(e)) from None

    def log(msg: str) -> None:
        if not getattr(args, "quiet", False):
            err_c.print(msg, markup=False)

    results = bench(names, repeat, args.duration, log, args.metrics, args.rate)
    for r in results:
        # Rates of 0 are true but tell nothing: say why, even under -q.
        moved = r["packet_hops"] if r["headline"] == "hops_per_s" else r["bottleneck_packets"]
        if not moved:
            what = "no packet left any queue" if r["headline"] == "hops_per_s" else "no packet crossed the bottleneck"
            sys.stderr.write(f"aqmlab: warning: {r['name']}: {what} in {r['sim_s']:g} s simulated, so its rates are 0 "
                             "(give a longer --duration or a higher --rate)\n")  # fmt: skip
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    rate = f", bottleneck {args.rate}" if args.rate else ""
    build = "profile-guided build" if results and results[0]["build"] == "pgo" else "build without PGO"
    hops = ", fat trees: hops/s is the headline" if any(r["headline"] == "hops_per_s" for r in results) else ""
    out_c.print(table(results, f"aqmlab bench (median of {repeat}, metrics {args.metrics}{rate}, {build}{hops})", out_c.width))
    return 0


def _child_main(argv: list[str]) -> int:
    if hasattr(signal, "pthread_sigmask"):  # the parent held SIGINT while starting us
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    p = argparse.ArgumentParser(prog="python -m aqmlab.bench")
    p.add_argument("--child", required=True)
    p.add_argument("--duration")
    p.add_argument("--metrics", default="default", choices=METRICS)
    p.add_argument("--rate")
    a = p.parse_args(argv)
    doc = run_child(a.child, a.duration, a.metrics, a.rate)
    doc["peak_rss_mb"] = _own_peak_rss_mb()
    print(json.dumps(doc))
    return 0


def _own_peak_rss_mb() -> float | None:
    """This process's own peak resident set (VmHWM), in MB; None where
    /proc is missing. Not the parent's ``ru_maxrss`` of the child: on Linux
    that starts from the parent's peak across exec (a parent holding 111 MB
    reports 111 MB even for /bin/true)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024 / 1e6
    except OSError:
        pass
    return None


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1:]))
