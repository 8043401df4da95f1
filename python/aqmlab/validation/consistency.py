"""Self-consistency: the engine against itself.

* Determinism: the same scenario and seed give the identical summary
  straight through the engine, through the sweep runner with one job and
  with two workers (and on dask when it is installed).
* A dumbbell and the same network written as ``[topology]`` (the dumbbell's
  per-flow access delays as pure-delay links, its uncongested ACK path as a
  pure-delay reverse link) give identical results.
* Time scaling: every rate ×10 and every time ÷10 (delays, buffer, AQM and
  TCP timers, run length) keeps the packet dynamics the same in units of
  the RTT, so the dimensionless figures (utilisation, drop rate, sojourn/RTT)
  agree. Only Reno is used: CUBIC's growth and HyStart++'s delay thresholds
  are set in absolute seconds and are not scale-invariant by design.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from aqmlab.judging import Judgement
from aqmlab.validation import suite
from aqmlab.validation.runner import dumbbell, run_summaries
from aqmlab.validation.suite import Progress

__all__ = ["judgements", "differing_fields", "topology_of", "SKIPPED_IN_QUICK"]

SKIPPED_IN_QUICK = "dumbbell vs topology: the PIE and DualPI2 networks; determinism and time scaling run 10 s and 20 s instead of 30 s and 60 s"

#: Summary fields that describe how a run went, not what it computed.
VOLATILE = ("perf",)


def _leaves(prefix: str, v: Any, out: dict[str, Any]) -> None:
    if isinstance(v, Mapping):
        for k, x in v.items():
            _leaves(f"{prefix}.{k}" if prefix else str(k), x, out)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            _leaves(f"{prefix}[{i}]", x, out)
    else:
        out[prefix] = v


def differing_fields(a: Mapping[str, Any], b: Mapping[str, Any], ignore: tuple[str, ...] = VOLATILE) -> list[str]:
    """Leaf paths whose values differ (bitwise for floats), ``ignore`` excluded."""
    la: dict[str, Any] = {}
    lb: dict[str, Any] = {}
    _leaves("", {k: v for k, v in a.items() if k not in ignore}, la)
    _leaves("", {k: v for k, v in b.items() if k not in ignore}, lb)
    return sorted(k for k in la.keys() | lb.keys() if json.dumps(la.get(k)) != json.dumps(lb.get(k)))


def _base(seed: int, quick: bool) -> dict[str, Any]:
    return dumbbell(
        name="consistency", rate_bps=20e6, aqm="codel", params={}, seed=seed,
        flows=[{"cc": "reno", "rtt": "40ms", "count": 2, "start_jitter": "200ms"},
               {"cc": "cubic", "rtt": "80ms", "start_jitter": "200ms"}],
        duration_s=10.0 if quick else 30.0, warmup_s=2.0)  # fmt: skip


def _bit_identical(quick: bool, progress: Progress | None) -> Judgement:
    from aqmlab import _engine
    from aqmlab.results import build_summary
    from aqmlab.scenario import validate

    trees = [_base(seed, quick) for seed in (3, 4)]
    # The reference: straight through the engine in this process, with the
    # summary builder the pool's workers use.
    reference = []
    for t in trees:
        n = validate(t)
        raw = _engine.run(json.dumps(n))
        reference.append(build_summary(json.loads(raw["summary"]), n))
    if progress is not None:
        progress(len(trees), suite.IDENTICAL_JOBS.id)
    backends: list[tuple[str, Any]] = [
        (f"sweep runner, {n} job{'s' if n > 1 else ''}", run_summaries(trees, progress, suite.IDENTICAL_JOBS.id, n_jobs=n))
        for n in (1, 2)
    ]
    notes = []
    try:
        import dask.distributed  # noqa: F401

        from aqmlab.sweep import make_point, run_points

        points = [make_point(t, {}) for t in trees]
        by_key = {o.point.key: o.summary for o in run_points(points, jobs=2, cache_dir=None, backend="dask")}
        backends.append(("dask, 2 workers", [by_key.get(p.key) for p in points]))
    except ImportError:
        notes.append("dask is not installed: the dask backend was not compared (pip install 'aqmlab[dask]' to include it)")
    cases = []
    for name, summaries in backends:
        for seed, ref, s in zip((3, 4), reference, summaries, strict=True):
            diff = differing_fields(ref, s) if s is not None else None
            cases.append(({"backend": name, "seed": seed}, None if diff is None else float(len(diff)),
                          {"first_differences": ", ".join(diff[:5]) if diff else ""}))  # fmt: skip
    return suite.IDENTICAL_JOBS.judge(cases, notes=notes)


def topology_of(tree: Mapping[str, Any]) -> dict[str, Any]:
    """The dumbbell ``tree`` written as an explicit ``[topology]``: per flow
    group, a sender s<i> and receiver d<i> joined to the bottleneck's ends by
    pure-delay links that split the RTT as the dumbbell does (a quarter of
    the access part each way on the sender's side, the rest on the
    receiver's), and the ACK path's middle a pure delay of the bottleneck's
    delay (the dumbbell's ACKs cross no queue)."""
    from aqmlab.scenario import validate

    n = validate(dict(tree))
    b = n["bottleneck"]
    links: list[dict[str, Any]] = [
        {"from": "r1", "to": "r2", "name": "bottleneck", "rate": b["rate"], "delay": b["delay"], "buffer": b["buffer"],
         "aqm": b["aqm"], "params": b["params"], "duplex": False},
        {"from": "r2", "to": "r1", "name": "ack-path", "delay": b["delay"], "duplex": False},
    ]  # fmt: skip
    delay_ns = _ns(b["delay"])
    flows = []
    for i, f in enumerate(n["flows"]):
        rtt_ns = _ns(f["rtt"])
        one_way_access = rtt_ns // 2 - delay_ns
        a_send = one_way_access // 2
        a_recv = one_way_access - a_send
        links.append({"from": f"s{i}", "to": "r1", "delay": f"{a_send}ns"})
        links.append({"from": "r2", "to": f"d{i}", "delay": f"{a_recv}ns"})
        g = {k: v for k, v in f.items() if k != "rtt"}
        g.update({"src": f"s{i}", "dst": f"d{i}"})
        flows.append(g)
    out = {k: v for k, v in n.items() if k not in ("bottleneck", "flows")}
    out["topology"] = {"links": links}
    out["flows"] = flows
    return out


def _ns(text: str) -> int:
    units = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "min": 60_000_000_000}
    for u in sorted(units, key=len, reverse=True):
        if text.endswith(u):
            return round(float(text[: -len(u)]) * units[u])
    raise ValueError(f"not a duration: {text!r}")


def _topology(quick: bool, progress: Progress | None) -> Judgement:
    cases_in = [("codel", {}), ("fifo", {}), ("bernoulli", {"p": 0.01, "ecn": False})]
    if not quick:
        cases_in += [("pie", {}), ("dualpi2", {})]
    trees = []
    for aqm, params in cases_in:
        t = _base(5, quick)
        t["bottleneck"].update({"aqm": aqm, "params": params, "delay": "3ms"})
        if aqm == "dualpi2":
            t["flows"].append({"cc": "dctcp", "rtt": "20ms", "ecn": "l4s"})
        trees += [t, topology_of(t)]
    summaries = run_summaries(trees, progress, suite.TOPOLOGY.id)
    cases = []
    for (aqm, _), i in zip(cases_in, range(0, len(summaries), 2), strict=True):
        a, b = summaries[i], summaries[i + 1]
        figs = _headline(a) , _headline(b)
        worst, where = 0.0, ""
        for k in figs[0].keys() | figs[1].keys():
            x, y = figs[0].get(k), figs[1].get(k)
            if x is None or y is None:
                worst, where = math.inf, k
                break
            d = abs(x - y) / max(abs(x), abs(y), 1e-300) if x != y else 0.0
            if d > worst:
                worst, where = d, k
        cases.append(({"aqm": aqm}, None if math.isinf(worst) else worst, {"largest_difference_at": where or "none"}))
    return suite.TOPOLOGY.judge(cases)


def _headline(s: Mapping[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for f in s["flows"]:
        for k in ("goodput_bps", "bytes", "retransmits", "rtos", "drops", "marks"):
            if f.get(k) is not None:
                out[f"flow{f['id']}.{k}"] = float(f[k])
    q = next(q for q in s["queues"] if q["name"] == "bottleneck")
    for k in ("arrivals", "departures", "drops", "marks"):
        out[f"bottleneck.{k}"] = float(q[k])
    out["bottleneck.sojourn_mean_ms"] = float((q.get("sojourn_ms") or {}).get("mean") or 0.0)
    return out


def _scaled(aqm: str, factor: float, quick: bool) -> dict[str, Any]:
    """The base time-scaling scenario with rates ×factor and times ÷factor."""
    s = 1 / factor
    params: dict[str, Any] = {}
    if aqm == "codel":
        params = {"target": f"{5000 * s:g}us", "interval": f"{100_000 * s:g}us"}
    rtt_us = 40_000 * s
    t = dumbbell(
        name=f"time-scaling {aqm} x{factor:g}", rate_bps=20e6 * factor, aqm=aqm, params=params, seed=7,
        flows=[{"cc": "reno", "rtt": f"{rtt_us:g}us", "count": 4, "start_jitter": f"{100_000 * s:g}us"}],
        duration_s=(20.0 if quick else 60.0) * s, warmup_s=5.0 * s, buffer=f"{100_000 * s:g}us",
        tcp={"rto_min": f"{200_000 * s:g}us", "rto_initial": f"{1_000_000 * s:g}us", "delack_timeout": f"{40_000 * s:g}us"})  # fmt: skip
    t["bottleneck"]["delay"] = f"{5000 * s:g}us"
    return t


def _time_scaling(quick: bool, progress: Progress | None) -> Judgement:
    aqms = ["fifo", "codel"]
    trees = [_scaled(a, f, quick) for a in aqms for f in (1.0, 10.0)]
    summaries = run_summaries(trees, progress, suite.TIME_SCALING.id)
    cases = []
    for i, aqm in enumerate(aqms):
        base, scaled = summaries[2 * i], summaries[2 * i + 1]
        for metric in ("utilization", "drop_rate", "sojourn/RTT"):
            x, y = _dimensionless(base, 0.040, metric), _dimensionless(scaled, 0.004, metric)
            fig = None if x is None or y is None else (abs(x - y) / max(abs(x), abs(y)) if x != y else 0.0)
            cases.append(({"aqm": aqm, "metric": metric}, fig, {"x1": x, "x10": y}))
    return suite.TIME_SCALING.judge(cases)


def _dimensionless(s: Mapping[str, Any], rtt_s: float, metric: str) -> float | None:
    q = next(q for q in s["queues"] if q["name"] == "bottleneck")
    if metric == "sojourn/RTT":
        m = (q.get("sojourn_ms") or {}).get("mean")
        return None if m is None else m / 1e3 / rtt_s
    v = q.get(metric)
    return None if v is None else float(v)


def judgements(quick: bool, progress: Progress | None = None) -> list[Judgement]:
    return [_bit_identical(quick, progress), _topology(quick, progress), _time_scaling(quick, progress)]
