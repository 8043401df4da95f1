"""ns-3 cross-runs: aqmlab against ns-3's figures for the AQM evaluation dumbbell (s1).

The reference figures (ns-3.48, three runs per scenario) are package data,
``data/ns3_s1.csv``, with their provenance in its header; the setup they come
from is described in docs/validation.md#ns3-setup. This module builds the
same network as an aqmlab ``[topology]`` (each flow on its own 100 Mbit/s
5 ms access links, a 10 Mbit/s 40 ms bottleneck, 1000-packet queues, the ACK
path through FIFO queues), with the TCP settings ns-3 used where aqmlab has
the knob, runs each scenario with three distinct seeds and judges every
scenario × metric case on its own: the figure is

    (mean over aqmlab's seeds − mean over ns-3's runs) / allowance

in the band [−1, 1], where the allowance (:func:`allowance`) is fixed per
metric in :data:`ALLOWANCES` from ns-3's own run-to-run spread and the model
differences listed in docs/validation.md#ns3-differences.

ns-3's LinuxReno counts acked segments, as aqmlab's Reno does by default;
ns-3's NewReno grows per ACK (half as fast with delayed ACKs), which aqmlab's
Reno does with ``ack_counting = "per_ack"`` (RFC 5681 §3.1).
"""

from __future__ import annotations

import csv
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from aqmlab.judging import Judgement, Replicates
from aqmlab.validation import suite
from aqmlab.validation.runner import run_summaries
from aqmlab.validation.suite import Progress

__all__ = ["ALLOWANCES", "SKIPPED_IN_QUICK", "Allowance", "allowance", "judgements", "reference", "scenario"]

SKIPPED_IN_QUICK = (
    "ns-3 NewReno: the 16-flow scenarios except CoDel with ECN and PIE rfc without, and PIE old at 4 and 64 flows; "
    "every LinuxReno scenario runs in quick mode too (3 seeds each)"
)

# --- the s1 setup (docs/validation.md#ns3-setup) -------------------------------

#: ns-3's point-to-point links carry a 2-byte PPP header: a 1500-byte IP packet
#: occupies 1502 bytes on the wire. aqmlab's links serialise IP bytes, so every
#: link rate is scaled by 1500/1502 to give data packets ns-3's serialisation
#: time (1.2016 ms at the bottleneck).
PPP_SCALE = 1500 / 1502
BOTTLENECK_RATE_BPS = 10e6
BOTTLENECK_DELAY = "40ms"
ACCESS_RATE_BPS = 100e6
ACCESS_DELAY = "5ms"
QUEUE_LIMIT = "1000pkt"
DURATION_S, WARMUP_S = 60.0, 10.0
START_JITTER = "1s"
#: Distinct seeds, as ns-3's RngRun 1..3 (not the same random numbers).
SEEDS = (1, 2, 3)

#: ns-3 TcpSocketBase settings that aqmlab's [tcp] can express
#: (MSS 1448 = 1500 − 52 is aqmlab's default; SACK is always on).
TCP = {
    "mtu_bytes": 1500,
    "header_bytes": 52,
    "delayed_ack": True,
    "delack_count": 2,
    "delack_timeout": "200ms",
    "rto_min": "1s",
    "rto_initial": "1s",
    "rto_max": "60s",
    "dupthresh": 3,
    "pacing": False,
    "rwnd": "4194304B",
}

#: The bottleneck's AQM per ns-3 queue disc name (README of the reference).
AQMS: dict[str, tuple[str, dict[str, Any]]] = {
    "codel": ("codel", {"target": "5ms", "interval": "100ms"}),
    "pie-old": ("pie", {"preset": "rfc8033", "target": "20ms", "tupdate": "30ms", "max_burst": "150ms",
                        "alpha": 0.125, "beta": 1.25, "estimator": "timestamp", "derandomize": False,
                        "mark_ecn_threshold": 0.1}),
    "pie-rfc": ("pie", {"preset": "rfc8033", "target": "15ms", "tupdate": "15ms", "max_burst": "150ms",
                        "alpha": 0.125, "beta": 1.25, "estimator": "timestamp", "derandomize": False,
                        "mark_ecn_threshold": 0.1}),
    "ared": ("ared", {"gentle": True, "wait": True, "hard_drop": True, "mean_pkt_size": "1500B",
                      "target_delay": "5ms", "interval": "500ms", "alpha": 0.01, "beta": 0.9,
                      "max_p": 0.02, "max_p_top": 0.5, "max_p_bottom": 0.00012}),
}  # fmt: skip


def _rate(bps: float) -> str:
    return f"{round(bps * PPP_SCALE)}bps"


#: aqmlab Reno parameters for each ns-3 TCP: LinuxReno counts acked segments
#: (aqmlab's default); NewReno grows per ACK (RFC 5681 §3.1, ``ack_counting``).
RENO_PARAMS = {
    "linuxreno": {"initial_window": 10, "beta": 0.5},
    "newreno": {"initial_window": 10, "beta": 0.5, "ack_counting": "per_ack"},
}


def scenario(qdisc: str, n_flows: int, ecn: bool, seed: int, tcp: str = "linuxreno") -> dict[str, Any]:
    """The s1 dumbbell as an aqmlab ``[topology]``: S_i → L → R → D_i, every
    link duplex (the reverse directions are tail-drop FIFOs, as ns-3's other
    egresses), each flow on its own access links, ``tcp`` the ns-3 variant
    matched (:data:`RENO_PARAMS`)."""
    aqm, params = AQMS[qdisc]
    params = dict(params, ecn=ecn)
    links: list[dict[str, Any]] = [
        {"from": "L", "to": "R", "name": "bottleneck", "rate": _rate(BOTTLENECK_RATE_BPS), "delay": BOTTLENECK_DELAY,
         "buffer": QUEUE_LIMIT, "aqm": aqm, "params": params},
    ]  # fmt: skip
    flows = []
    for i in range(n_flows):
        links.append({"from": f"s{i}", "to": "L", "rate": _rate(ACCESS_RATE_BPS), "delay": ACCESS_DELAY, "buffer": QUEUE_LIMIT})
        links.append({"from": "R", "to": f"d{i}", "rate": _rate(ACCESS_RATE_BPS), "delay": ACCESS_DELAY, "buffer": QUEUE_LIMIT})
        flows.append({"cc": "reno", "src": f"s{i}", "dst": f"d{i}", "start_jitter": START_JITTER,
                      "ecn": "classic" if ecn else "off", "params": dict(RENO_PARAMS[tcp])})  # fmt: skip
    return {
        "name": f"ns3-s1 {tcp} {qdisc} n={n_flows} ecn={int(ecn)} seed={seed}",
        "duration": f"{DURATION_S:g}s",
        "warmup": f"{WARMUP_S:g}s",
        "seed": seed,
        "topology": {"links": links},
        "flows": flows,
        "tcp": dict(TCP),
        "metrics": {"timeseries": False, "rtt_histogram": True},
    }


# --- the reference ----------------------------------------------------------------

@dataclass(frozen=True)
class RefCase:
    tcp: str
    n_flows: int
    qdisc: str
    ecn: bool
    runs: tuple[dict[str, float], ...]

    def mean(self, metric: str) -> float:
        return statistics.fmean(r[metric] for r in self.runs)

    def sd(self, metric: str) -> float:
        return statistics.stdev(r[metric] for r in self.runs)


_NUMERIC = ("goodput_Mbps", "util_ip", "jain", "sojourn_ms_mean", "sojourn_ms_p50", "sojourn_ms_p99", "qd_drops",
            "qd_marks", "tcp_retx", "tcp_rto", "rtt_ms_p50", "rtt_ms_p99", "qlen_pkts_tavg")  # fmt: skip


def reference() -> dict[tuple[str, int, str, bool], RefCase]:
    """ns-3's runs keyed by (tcp, flows, qdisc, ecn), from the package data."""
    text = resources.files("aqmlab.validation").joinpath("data/ns3_s1.csv").read_text()
    rows = csv.DictReader(line for line in text.splitlines() if line and not line.startswith("#"))
    grouped: dict[tuple[str, int, str, bool], list[dict[str, float]]] = {}
    for r in rows:
        key = (r["tcp"], int(r["n_flows"]), r["qdisc"], r["ecn"] == "1")
        run = {k: float(r[k]) for k in _NUMERIC}
        run["signals"] = run["qd_drops"] + run["qd_marks"]
        grouped.setdefault(key, []).append(run)
    return {k: RefCase(*k, runs=tuple(v)) for k, v in grouped.items()}


# --- allowances (docs/validation.md#ns3-allowances) ---------------------------------

@dataclass(frozen=True)
class Allowance:
    """allowance = noise·sd(ns-3's runs) + rel·|ns-3 mean − offset| + abs_."""

    rel: float
    abs_: float
    unit: str
    #: Subtracted before the relative term: the part both simulators share (the base RTT).
    offset: float = 0.0
    #: Multiple of ns-3's run-to-run sd: 3σ of the difference of two 3-run
    #: means with aqmlab's seed spread taken equal to ns-3's, 3·√(2/3) = 2.45.
    noise: float = 3 * math.sqrt(2 / 3)


#: Per metric; fixed before aqmlab's figures were measured (see the docs).
ALLOWANCES: dict[str, Allowance] = {
    "goodput": Allowance(rel=0.02, abs_=0.0, unit="Mbit/s"),
    "sojourn_mean": Allowance(rel=0.20, abs_=1.2, unit="ms"),
    "sojourn_p50": Allowance(rel=0.20, abs_=1.2, unit="ms"),
    "sojourn_p99": Allowance(rel=0.20, abs_=1.2, unit="ms"),
    "signals": Allowance(rel=0.20, abs_=0.0, unit="packets"),
    "jain": Allowance(rel=0.0, abs_=0.02, unit=""),
    # 100 ms base RTT shared; 1.2 ms serialisation + 1 ms ns-3 timestamp clock.
    "rtt_p50": Allowance(rel=0.20, abs_=2.2, unit="ms", offset=100.0),
    "rtt_p99": Allowance(rel=0.20, abs_=2.2, unit="ms", offset=100.0),
}

#: The reference's column for each judged metric.
REF_COLUMN = {"goodput": "goodput_Mbps", "sojourn_mean": "sojourn_ms_mean", "sojourn_p50": "sojourn_ms_p50",
              "sojourn_p99": "sojourn_ms_p99", "signals": "signals", "jain": "jain",
              "rtt_p50": "rtt_ms_p50", "rtt_p99": "rtt_ms_p99"}  # fmt: skip


def allowance(metric: str, ref: RefCase) -> float:
    a = ALLOWANCES[metric]
    col = REF_COLUMN[metric]
    return a.noise * ref.sd(col) + a.rel * abs(ref.mean(col) - a.offset) + a.abs_


# --- aqmlab's figures ------------------------------------------------------------

def figures(s: Mapping[str, Any]) -> dict[str, float | None]:
    """One run's figures in the reference's units."""
    q = next(q for q in s["queues"] if q["name"] == "bottleneck")
    gp = [f["goodput_bps"] for f in s["flows"]]
    soj = q.get("sojourn_ms") or {}
    ok = all(g is not None for g in gp) and gp
    total = sum(gp) if ok else None
    jain = (total * total / (len(gp) * sum(g * g for g in gp))) if ok and total else None
    return {
        "goodput": None if total is None else total / 1e6,
        "jain": jain,
        "sojourn_mean": soj.get("mean"),
        "sojourn_p50": soj.get("p50"),
        "sojourn_p99": soj.get("p99"),
        "signals": float(q["drops"] + q["marks"]),
        "rtt_p50": (s.get("rtt_ms") or {}).get("p50"),
        "rtt_p99": (s.get("rtt_ms") or {}).get("p99"),
        # Shown, not judged: ns-3's util_ip counts IP bytes against the
        # nominal 10 Mbit/s; aqmlab's link runs at 10 Mbit/s × 1500/1502.
        "util_ip": q["utilization"] * PPP_SCALE,
        "drops": float(q["drops"]),
        "marks": float(q["marks"]),
        "rtos": float(sum(f.get("rtos") or 0 for f in s["flows"])),
        "retransmits": float(sum(f.get("retransmits") or 0 for f in s["flows"])),
    }


METRICS = ("goodput", "sojourn_mean", "sojourn_p50", "sojourn_p99", "signals", "jain", "rtt_p50", "rtt_p99")

#: (qdisc, flows, ecn) per row; quick mode keeps the marked ones.
LINUXRENO = {
    suite.NS3_LINUXRENO_CODEL.id: [("codel", 4, False), ("codel", 64, False)],
    suite.NS3_LINUXRENO_PIE.id: [("pie-old", 4, False), ("pie-old", 64, False), ("pie-rfc", 4, False), ("pie-rfc", 64, False)],
    suite.NS3_LINUXRENO_ARED.id: [("ared", 4, False), ("ared", 64, False)],
}
#: The flow-count extremes, plus the 16-flow cases that decide the row: CoDel
#: with ECN and PIE rfc without (where the full run's drop counts fail).
NEWRENO_QUICK = [("codel", 4, False), ("codel", 64, False), ("pie-rfc", 4, False), ("pie-rfc", 64, False),
                 ("ared", 4, False), ("ared", 64, False), ("codel", 16, True), ("pie-rfc", 16, False)]  # fmt: skip

def _cases(tcp: str, grid: Sequence[tuple[str, int, bool]], ref: Mapping[tuple[str, int, str, bool], RefCase],
           summaries: Mapping[tuple[str, int, bool], Sequence[Mapping[str, Any]]]) -> list[Any]:  # fmt: skip
    out = []
    for qdisc, n, ecn in grid:
        rc = ref[(tcp, n, qdisc, ecn)]
        runs = [figures(s) for s in summaries[(qdisc, n, ecn)]]
        for metric in METRICS:
            col = REF_COLUMN[metric]
            ref_mean, allow = rc.mean(col), allowance(metric, rc)
            vals = [r[metric] for r in runs]
            tags = {"aqm": qdisc, "flows": n, "ecn": int(ecn), "metric": metric}
            if any(v is None for v in vals):
                out.append((tags, None, {"ns3": ref_mean}))
                continue
            errs = [(v - ref_mean) / allow for v in vals]  # type: ignore[operator]
            extra = {"aqmlab": statistics.fmean(vals), "ns3": ref_mean, "ns3_sd": rc.sd(col), "allowance": allow,
                     "aqmlab_runs": vals, "ns3_runs": [r[col] for r in rc.runs],
                     "aqmlab_util_ip": statistics.fmean(r["util_ip"] for r in runs), "ns3_util_ip": rc.mean("util_ip"),
                     "aqmlab_rtos": statistics.fmean(r["rtos"] for r in runs), "ns3_rtos": rc.mean("tcp_rto"),
                     "unit": ALLOWANCES[metric].unit}  # fmt: skip
            out.append((tags, Replicates(tuple(errs), SEEDS), extra))
    return out


def _run(grid: Sequence[tuple[str, int, bool]], progress: Progress | None, label: str,
         tcp: str = "linuxreno") -> dict[tuple[str, int, bool], list[dict[str, Any]]]:  # fmt: skip
    trees = [scenario(q, n, e, seed, tcp) for q, n, e in grid for seed in SEEDS]
    summaries = run_summaries(trees, progress, label)
    k = len(SEEDS)
    return {g: summaries[i * k:(i + 1) * k] for i, g in enumerate(grid)}


def judgements(quick: bool, progress: Progress | None = None) -> list[Judgement]:
    ref = reference()
    out = []
    for row_id, grid in LINUXRENO.items():
        row = suite.ROWS[row_id]
        out.append(row.judge(_cases("linuxreno", grid, ref, _run(grid, progress, row_id))))
    grid = NEWRENO_QUICK if quick else sorted(((q, n, e) for t, n, q, e in ref if t == "newreno"),
                                              key=lambda g: (g[1], g[2], g[0]))  # fmt: skip
    row = suite.NS3_NEWRENO
    out.append(row.judge(_cases("newreno", grid, ref, _run(grid, progress, row.id, "newreno"))))
    return out
