"""Statistics over time windows of one run, computed from its time series.

The summary covers one measurement window (``warmup`` to ``duration``). A
scenario whose flow mix changes over time (flow groups with ``start`` and
``stop``, e.g. the VDQ-CSAQM seed's traffic phases) needs the same figures
per phase. They follow from the per-interval tables the engine already
writes, so no engine change is needed:

* a flow's goodput in a window: the difference of its cumulative in-order
  ``delivered_bytes`` (``flow_ts``) at the window's ends, over its length;
* a queue's (sub-queue's) arrivals, departures, drops and marks: differences
  of the cumulative counters of ``queue_ts``; the link's utilisation is the
  departed data packets × the MTU over rate × length (every data packet is
  full-sized except the few SYN/FIN segments, so this is the link's busy
  fraction to within them);
* queueing delay percentiles: the sojourn samples (``sojourn_samples``, one
  per ``metrics.sojourn_samples_every`` dequeued packets) whose dequeue time
  falls in the window (null when sampling is off or none fell in it);
* a controller's probes (``probes``, one row per metrics interval, e.g.
  PIE's ``p`` and ``burst_ms``): per owner and probe, the mean of the
  samples in the window and the share of them above zero.

Window ends are rounded to the time-series samples (``metrics.interval``):
give ends that are multiples of it. A flow is ``active`` in a window when its
start (with its jitter) is at or before the window's start and its group's
``stop`` (if any) at or after the window's end.

:func:`window_stats` returns plain JSON-able dicts, so they can ride in a run's
summary (``summary["windows"]``) through the sweep cache.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["Window", "window_stats", "result_window_stats", "binned_goodput_mbps"]

#: (name, start_s, end_s)
Window = tuple[str, float, float]


def _percentile(xs: Any, q: float) -> float:
    import numpy as np

    return float(np.percentile(xs, q, method="linear"))


def binned_goodput_mbps(t_s: Any, delivered_bytes: Any, bin_s: float) -> tuple[Any, Any]:
    """A flow's goodput in consecutive bins of ``bin_s`` from its cumulative
    in-order delivered bytes sampled at ``t_s`` (zero before the first
    sample): (bin end times in s, Mbit/s per bin), up to the last sample."""
    import numpy as np

    t = np.asarray(t_s, dtype=float)
    b = np.asarray(delivered_bytes, dtype=float)
    ends = np.arange(bin_s, t.max() + 1e-9, bin_s)
    cum = np.interp(ends, t, b, left=0.0)
    return ends, np.diff(np.concatenate([[0.0], cum])) * 8 / bin_s / 1e6


def _at(t_ns: Any, values: Any, t: int) -> float:
    """The cumulative value at the last sample at or before ``t``."""
    import numpy as np

    i = int(np.searchsorted(t_ns, t, side="right")) - 1
    return float(values[i]) if i >= 0 else 0.0


def window_stats(tables: Mapping[str, Mapping[str, Any]], summary: Mapping[str, Any],
                 windows: Sequence[Window]) -> list[dict[str, Any]]:  # fmt: skip
    """Per-window statistics of one run (see the module docstring); NaN
    samples of a probe are left out of its statistics.

    ``tables``: the engine's tables as columns (name -> column -> numpy
    array or list of str); ``summary``: the run's summary (with its
    normalised ``scenario``)."""
    import numpy as np

    from aqmlab.resources import _ns

    scen = summary["scenario"]
    groups = scen.get("flows", [])
    mtu = int((scen.get("tcp") or {}).get("mtu_bytes", 1500))
    rate_of = {q["name"]: float(q.get("rate_bps") or 0) for q in summary.get("queues", [])}

    fl = tables["flows"]
    ids = np.asarray(fl["id"], dtype=np.int64)
    grp = np.asarray(fl["group"], dtype=np.int64)
    start = np.asarray(fl["start_ns"], dtype=np.int64)
    labels = list(fl["label"])
    from_wl = np.asarray(fl.get("from_workload", np.zeros(len(ids))), dtype=np.int64)

    fts = tables["flow_ts"]
    f_t = np.asarray(fts["t_ns"], dtype=np.int64)
    f_id = np.asarray(fts["flow"], dtype=np.int64)
    f_b = np.asarray(fts["delivered_bytes"], dtype=np.float64)
    by_flow = {}
    order = np.argsort(f_id, kind="stable")
    f_id_s, f_t_s, f_b_s = f_id[order], f_t[order], f_b[order]
    bounds = np.searchsorted(f_id_s, ids, side="left"), np.searchsorted(f_id_s, ids, side="right")
    for k, fid in enumerate(ids):
        a, b = bounds[0][k], bounds[1][k]
        by_flow[int(fid)] = (f_t_s[a:b], f_b_s[a:b])

    qts = tables["queue_ts"]
    q_name, q_sub = list(qts["queue"]), list(qts["subqueue"])
    keys = sorted({(q, s) for q, s in zip(q_name, q_sub, strict=True)})
    q_rows = {k: np.array([i for i, kk in enumerate(zip(q_name, q_sub, strict=True)) if kk == k], dtype=np.int64)
              for k in keys}  # fmt: skip
    q_cols = {k: {n: np.asarray(qts[n])[rows] for n in ("t_ns", "arrived_pkts", "departed_pkts", "dropped_pkts",
                                                        "marked_pkts")} for k, rows in q_rows.items()}  # fmt: skip
    counters = ("arrived_pkts", "departed_pkts", "dropped_pkts", "marked_pkts")

    ss = tables.get("sojourn_samples") or {}
    s_t_all = np.asarray(ss.get("t_ns", []), dtype=np.int64)
    s_v_all = np.asarray(ss.get("sojourn_ns", []), dtype=np.float64)
    s_key = list(zip(ss.get("queue", []), ss.get("subqueue", []), strict=True))
    samples = {}  # (queue, subqueue) -> (dequeue times, sorted; sojourns)
    for k in keys:
        idx = np.array([i for i, kk in enumerate(s_key) if kk == k], dtype=np.int64)
        o = np.argsort(s_t_all[idx], kind="stable")
        samples[k] = (s_t_all[idx][o], s_v_all[idx][o])

    probe_rows = _probe_rows(tables)
    out = []
    for name, t0_s, t1_s in windows:
        t0, t1 = int(round(t0_s * 1e9)), int(round(t1_s * 1e9))
        length_s = (t1 - t0) / 1e9
        flows = []
        for k, fid in enumerate(ids):
            if from_wl[k]:
                continue
            g = groups[grp[k]] if 0 <= grp[k] < len(groups) else {}
            stop = _ns(g["stop"]) if g.get("stop") else None
            active = bool(start[k] <= t0 and (stop is None or stop >= t1))
            ts, bs = by_flow[int(fid)]
            got = (_at(ts, bs, t1) - _at(ts, bs, t0)) * 8 / length_s if length_s > 0 else None
            flows.append({"id": int(fid), "label": labels[k], "group": int(grp[k]), "active": active,
                          "goodput_bps": got})  # fmt: skip
        queues: dict[str, Any] = {}
        for q, s in keys:
            qc = q_cols[(q, s)]
            c = {n: _at(qc["t_ns"], qc[n], t1) - _at(qc["t_ns"], qc[n], t0) for n in counters}
            st, sv = samples[(q, s)]
            v = sv[np.searchsorted(st, t0, side="left") : np.searchsorted(st, t1, side="left")] / 1e6
            sojourn = None if len(v) == 0 else {"p50": _percentile(v, 50), "p99": _percentile(v, 99),
                                                "mean": float(v.mean()), "samples": int(len(v))}  # fmt: skip
            queues.setdefault(q, {"subqueues": {}})["subqueues"][s] = {
                "arrivals": int(c["arrived_pkts"]), "departures": int(c["departed_pkts"]),
                "drops": int(c["dropped_pkts"]), "marks": int(c["marked_pkts"]), "sojourn_ms": sojourn}  # fmt: skip
        for q, d in queues.items():
            subs = d["subqueues"]
            # A multi-queue discipline may also report its total as "all".
            dep = subs["all"]["departures"] if "all" in subs else sum(x["departures"] for x in subs.values())
            rate = rate_of.get(q, 0.0)
            d["departures"] = dep
            d["utilization"] = dep * mtu * 8 / (rate * length_s) if rate > 0 and length_s > 0 else None
        w = {"name": name, "start_s": t0 / 1e9, "end_s": t1 / 1e9, "flows": flows, "queues": queues}
        if probe_rows:
            w["probes"] = _probe_stats(probe_rows, t0, t1)
        out.append(w)
    return out


def _probe_rows(tables: Mapping[str, Mapping[str, Any]]) -> dict[tuple[str, str], tuple[Any, Any]]:
    """(owner, probe) -> (sample times, values), from the ``probes`` table."""
    import numpy as np

    pr = tables.get("probes") or {}
    t = np.asarray(pr.get("t_ns", []), dtype=np.int64)
    v = np.asarray(pr.get("value", []), dtype=np.float64)
    keys = list(zip(pr.get("owner", []), pr.get("probe", []), strict=True))
    rows: dict[tuple[str, str], list[int]] = {}
    for i, k in enumerate(keys):
        rows.setdefault(k, []).append(i)
    return {k: (t[idx], v[idx]) for k, idx in rows.items()}


def _probe_stats(rows: dict[tuple[str, str], tuple[Any, Any]], t0: int, t1: int) -> dict[str, Any]:
    import numpy as np

    out: dict[str, Any] = {}
    for (owner, probe), (t, v) in rows.items():
        x = v[(t >= t0) & (t < t1)]
        x = x[np.isfinite(x)]  # a probe may be undefined (NaN) at times
        out.setdefault(owner, {})[probe] = (None if len(x) == 0 else
                                            {"mean": float(x.mean()), "positive_share": float((x > 0).mean()),
                                             "samples": int(len(x))})  # fmt: skip
    return out


def result_window_stats(result: Any, windows: Sequence[Window]) -> list[dict[str, Any]]:
    """:func:`window_stats` of a :class:`~aqmlab.results.Result`."""
    from aqmlab.results import _table_columns

    tables = {n: _table_columns(result._arrow[n]) for n in ("flows", "flow_ts", "queue_ts", "sojourn_samples", "probes")
              if n in result._arrow}  # fmt: skip
    return window_stats(tables, result.summary, windows)
