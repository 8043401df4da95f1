"""BBRv2 on its own: what google/bbr v2alpha's rules imply for whole runs.

Rows (argued in docs/validation.md, "BBRv2 on its own"; the rules and
parameters against tcp_bbr2.c in docs/algorithms/bbr2.md): one flow fills a
1 Gbit/s link (``bbr2-fill``) with a small queue (``bbr2-queue``), two flows
converge (``bbr2-convergence``), and the ECN response at a step-marked queue
sets inflight_hi where a rate sample's CE fraction reaches ecn_thresh
(``bbr2-ecn-step``). Both of the seed's modes run: *no-ECN* (a Classic-queue
flow) and *L4S* (ECT(1), accurate ECN, ``params.ecn = true``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aqmlab.judging import Judgement, KnownDeviation, Verdict, replicate_mean
from aqmlab.validation import suite
from aqmlab.validation.runner import dumbbell, ms, run_summaries, run_with_tables
from aqmlab.validation.suite import Progress

__all__ = ["judgements", "SKIPPED_IN_QUICK", "bdp_packets", "ecn_step_inflight_hi_bounds"]

SKIPPED_IN_QUICK = (
    "fill/queue: RTT 40 ms (no-ECN); convergence: 30 s runs with 10 s warm-up instead of 60/20 s, "
    "RTT 40 ms for the shallow-FIFO and step cases; ECN step: K = 40 at 5 ms and 100 Mbit/s at 20 ms with K = 10"
)

LINK_BPS = 1e9
#: Packets on the wire (docs/scenario.md: 1500-byte MTU).
WIRE_BITS = 1500 * 8
#: tcp_bbr2.c v2alpha: bbr_ecn_thresh (1/2) and the PROBE_UP pacing gain (5/4).
ECN_THRESH = 0.5
PROBE_UP_GAIN = 1.25
#: The step queue's threshold must stay below B/8 for UP to end on CE
#: rather than on its queue test (docs/validation.md#bbr2-ecn-step).
K_MAX_FRACTION_OF_BDP = 1 / 8

L4S_ANY_RTT = {"ecn": True, "ecn_max_rtt": "0s"}
L4S_DEFAULT = {"ecn": True}


def bdp_packets(rate_bps: float, rtt_s: float) -> float:
    return rate_bps * rtt_s / WIRE_BITS


def ecn_step_inflight_hi_bounds(bdp: float, k: float) -> tuple[float, float]:
    """The v2alpha rules' range for inflight_hi at a step queue: B + K when
    UP grows inflight slowly (cwnd-limited after a too-high probe), and
    (B + K)/(1 − e·(1 − 1/g)) when it grows at the pacing gain g of UP."""
    return bdp + k, (bdp + k) / (1 - ECN_THRESH * (1 - 1 / PROBE_UP_GAIN))


def _flow(mode: str, rtt_s: float, params: Mapping[str, Any] | None, **extra: Any) -> dict[str, Any]:
    f: dict[str, Any] = {"cc": "bbr2", "rtt": ms(rtt_s), "label": f"bbr2-{mode}"}
    if mode == "l4s":
        f["ecn"] = "l4s"
        f["params"] = dict(params or L4S_ANY_RTT)
    return f | extra


def _queue(s: Mapping[str, Any]) -> dict[str, Any]:
    return next(q for q in s["queues"] if q["name"] == "bottleneck")


def _sojourn_p99_ms(q: Mapping[str, Any]) -> float | None:
    """The p99 of the sub-queue that carried the traffic (DualPI2: L4S or
    Classic), else of the queue."""
    subs = q.get("subqueues") or {}
    busiest = max(subs.values(), key=lambda s: s.get("departures") or 0, default=None)
    src = busiest if busiest and busiest.get("departures") else q
    return (src.get("sojourn_ms") or {}).get("p99")


def _eligible(s: Mapping[str, Any]) -> list[float | None]:
    return [(f.get("cc_state") or {}).get("ecn_eligible") for f in s["flows"]]


# --- one flow: utilisation and queue -------------------------------------------

def _fill_cases(quick: bool) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(tags, scenario) for one flow, 12 s (two PROBE_RTTs) after 2 s."""
    grid: list[tuple[str, float, str, str, Mapping[str, Any] | None]] = [
        ("no-ECN", 0.005, "fifo", "100ms", None),
        ("l4s", 0.005, "dualpi2", "100ms", L4S_ANY_RTT),
        ("l4s", 0.005, "dualpi2", "100ms", L4S_DEFAULT),
    ]
    if not quick:
        grid.append(("no-ECN", 0.04, "fifo", "400ms", None))
    out = []
    for mode, rtt, aqm, buf, params in grid:
        m = "l4s" if mode == "l4s" else "off"
        tags = {"mode": mode, "rtt": f"{rtt * 1e3:g}ms", "aqm": aqm, "buffer": buf,
                "ecn_max_rtt": "" if m == "off" else (params or {}).get("ecn_max_rtt", "5ms (default)")}  # fmt: skip
        tree = dumbbell(name=f"bbr2-fill {mode} {aqm} rtt={rtt * 1e3:g}ms", rate_bps=LINK_BPS, aqm=aqm, params={},
                        flows=[_flow(m, rtt, params)], duration_s=14.0, warmup_s=2.0, buffer=buf)  # fmt: skip
        out.append((tags, tree))
    return out


def _fill_and_queue(quick: bool, progress: Progress | None) -> list[Judgement]:
    cases = _fill_cases(quick)
    summaries = run_summaries([t for _, t in cases], progress, suite.BBR2_FILL.id)
    fill, queue = [], []
    for (tags, tree), s in zip(cases, summaries, strict=True):
        q = _queue(s)
        rtt_s = float(tags["rtt"].removesuffix("ms")) / 1e3
        p99 = _sojourn_p99_ms(q)
        extra = {"utilization": q.get("utilization"), "p99_sojourn_ms": p99, "goodput_bps": s["flows"][0].get("goodput_bps"),
                 "ecn_eligible": _eligible(s)[0], "marks": q.get("marks"), "drops": q.get("drops"),
                 "bdp_pkts": bdp_packets(LINK_BPS, rtt_s)}  # fmt: skip
        fill.append((tags, q.get("utilization"), extra))
        queue.append((tags, None if p99 is None else p99 / 1e3 / rtt_s, extra))
    return [suite.BBR2_FILL.judge(fill), suite.BBR2_QUEUE.judge(queue)]


# --- two flows: convergence -------------------------------------------------------

def _convergence(quick: bool, progress: Progress | None) -> Judgement:
    duration, warmup = (30.0, 10.0) if quick else (60.0, 20.0)
    # The split two flows end at depends on when each one probes (random
    # probe waits), so each case is judged on its mean over seeds.
    seeds = (1, 2, 3, 4) if quick else (1, 2, 3, 4, 5, 6, 7, 8)
    grid: list[tuple[str, float, str, str, Mapping[str, Any]]] = [
        ("no-ECN", 0.005, "fifo", "1bdp", {}),
        ("no-ECN", 0.005, "fifo", "20bdp", {}),
        ("l4s", 0.005, "step", "100ms", {"threshold": "20pkt"}),
        ("l4s", 0.005, "dualpi2", "100ms", {}),
    ]
    if not quick:
        grid += [("no-ECN", 0.04, "fifo", "1bdp", {}), ("l4s", 0.04, "step", "400ms", {"threshold": "20pkt"})]
    trees, tags_list = [], []
    for mode, rtt, aqm, buf, qparams in grid:
        m = "l4s" if mode == "l4s" else "off"
        buffer = ms(rtt * float(buf.removesuffix("bdp"))) if buf.endswith("bdp") else buf
        flows = [_flow(m, rtt, None), _flow(m, rtt, None, start="2s")]
        for seed in seeds:
            trees.append(dumbbell(name=f"bbr2-convergence {mode} {aqm} {buf} rtt={rtt * 1e3:g}ms seed={seed}",
                                  rate_bps=LINK_BPS, aqm=aqm, params=qparams, flows=flows, duration_s=duration,
                                  warmup_s=warmup, buffer=buffer, seed=seed))  # fmt: skip
        tags_list.append({"mode": mode, "rtt": f"{rtt * 1e3:g}ms", "aqm": aqm + (f" K={qparams['threshold']}" if qparams else ""),
                          "buffer": buf})  # fmt: skip
    summaries = run_summaries(trees, progress, suite.BBR2_CONVERGENCE.id)
    out = []
    for i, tags in enumerate(tags_list):
        per_seed = summaries[i * len(seeds):(i + 1) * len(seeds)]
        jains = [(s.get("fairness") or {}).get("jain") for s in per_seed]
        extra = {"jain_per_seed": jains, "worst_seed_jain": min((j for j in jains if j is not None), default=None),
                 "goodputs_bps_per_seed": [[f.get("goodput_bps") for f in s["flows"]] for s in per_seed],
                 "utilization_per_seed": [_queue(s).get("utilization") for s in per_seed],
                 "drops_per_seed": [_queue(s).get("drops") for s in per_seed],
                 "ecn_eligible": _eligible(per_seed[0])}  # fmt: skip
        out.append((tags, replicate_mean(jains, list(seeds)), extra))
    j = suite.BBR2_CONVERGENCE.judge(out)
    failing = [c for c in j.cases if c.verdict is Verdict.FAIL]
    # Argued before measuring (docs/validation.md#bbr2-convergence): a deep
    # FIFO without ECN gives the v2alpha no signal that equalises flows.
    if failing and all(c.tags.get("mode") == "no-ECN" and c.tags.get("buffer") == "20bdp" for c in failing):
        j = suite.BBR2_CONVERGENCE.judge(out, known_deviation=KnownDeviation(
            "deep FIFO, no loss and no ECN: any split is an equilibrium of the v2alpha's rules",
            "docs/validation.md#bbr2-convergence"))  # fmt: skip
    return j


# --- ECN response at a step queue ------------------------------------------------

def _ecn_step(quick: bool, progress: Progress | None) -> Judgement:
    import numpy as np

    grid: list[tuple[float, float, int, Mapping[str, Any]]] = [
        (LINK_BPS, 0.005, 20, L4S_ANY_RTT),
        (LINK_BPS, 0.004, 20, L4S_DEFAULT),
    ]
    if not quick:
        grid += [(LINK_BPS, 0.005, 40, L4S_ANY_RTT), (100e6, 0.02, 10, L4S_ANY_RTT)]
    out = []
    warmup = 3.0
    for rate_bps, rtt, k, params in grid:
        bdp = bdp_packets(rate_bps, rtt)
        if k >= K_MAX_FRACTION_OF_BDP * bdp:
            raise ValueError(f"bbr2-ecn-step: K = {k} is not below B/8 = {bdp / 8:.1f}")
        tree = dumbbell(name=f"bbr2-ecn-step {rate_bps / 1e6:g}Mbps rtt={rtt * 1e3:g}ms K={k}", rate_bps=rate_bps,
                        aqm="step", params={"threshold": f"{k}pkt"}, flows=[_flow("l4s", rtt, params)],
                        duration_s=warmup + 10.0, warmup_s=warmup, buffer="100ms",
                        metrics={"timeseries": True, "interval": "10ms"})  # fmt: skip
        r = run_with_tables(tree)
        if progress is not None:
            progress(1, suite.BBR2_ECN_STEP.id)
        pr = r.tables["probes"]
        pr = pr[(pr["probe"] == "inflight_hi") & (pr["t_s"] >= warmup)]
        values = pr["value"].to_numpy(dtype=float)
        values = values[np.isfinite(values)]
        lo, hi = ecn_step_inflight_hi_bounds(bdp, k)
        q = _queue(r.summary)
        median = float(np.median(values)) if len(values) else None
        tags = {"link": f"{rate_bps / 1e6:g}Mbps", "rtt": f"{rtt * 1e3:g}ms", "K": k,
                "ecn_max_rtt": params.get("ecn_max_rtt", "5ms (default)")}  # fmt: skip
        extra = {"inflight_hi_median": median, "inflight_hi_p5_p95": [float(np.percentile(values, 5)), float(np.percentile(values, 95))] if len(values) else None,
                 "b_plus_k": lo, "upper_bound": hi, "ecn_eligible": _eligible(r.summary)[0],
                 "utilization": q.get("utilization"), "mark_rate": q.get("mark_rate"),
                 "cruise_utilization_bound": None if median is None else min(1.0, 0.85 * median / bdp)}  # fmt: skip
        out.append((tags, None if median is None else median / lo, extra))
    return suite.BBR2_ECN_STEP.judge(out)


def judgements(quick: bool, progress: Progress | None = None) -> list[Judgement]:
    import aqmlab

    rows = [suite.BBR2_FILL, suite.BBR2_QUEUE, suite.BBR2_CONVERGENCE, suite.BBR2_ECN_STEP]
    if "bbr2" not in aqmlab.registry()["cc"]:
        return [r.not_applicable("no 'bbr2' congestion control in this build's registry") for r in rows]
    return [*_fill_and_queue(quick, progress), _convergence(quick, progress), _ecn_step(quick, progress)]
