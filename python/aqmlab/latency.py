"""Latency views of one run: RTT over time per flow, queue delay over time
per queue and sub-queue, and RTT distributions per flow and per group.

Each view has a data function (a DataFrame or arrays, what the tests check)
and a plot function drawing it; the plots are registered in
:data:`aqmlab.plots.PLOTS` (``result.plot("rtt_time")``, ``aqmlab report``).

RTT sources:

* a TCP flow's smoothed RTT (``srtt``, RFC 6298) as its sender held it at
  each ``metrics.interval`` sample (``flow_ts.srtt_ns``; 0 before the first
  sample, left out);
* a latency probe's (``cc = "probe"``) round-trip time of every echo reply
  (``probe_rtt`` table), the "latency under load" of Flent's RRUL test.

Distributions cover the measurement window (samples at or after warm-up).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from aqmlab.busiest import queue_rank

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from aqmlab.results import Result

__all__ = ["rtt_series", "queue_delay_series", "rtt_samples", "rtt_time", "queue_delay", "rtt_cdf", "rtt_box",
           "probe_summary", "PLOTS"]  # fmt: skip

#: Beyond this many flows, per-flow views show one line per flow group.
MAX_LINES = 12


def _flow_meta(r: Result) -> pd.DataFrame:
    f = r.flows
    if f.empty:
        return pd.DataFrame({"flow": pd.Series(dtype="uint64"), "label": pd.Series(dtype=str),
                             "cc": pd.Series(dtype=str)})  # fmt: skip
    f = f[f["from_workload"] == 0]
    return pd.DataFrame({"flow": f["id"].to_numpy(), "label": f["label"].astype(str).to_numpy(),
                         "cc": f["cc"].astype(str).to_numpy()})  # fmt: skip


def rtt_series(r: Result) -> pd.DataFrame:
    """RTT over time, long form: ``t_s``, ``flow``, ``label``, ``source``
    (``srtt``: a TCP sender's smoothed RTT per interval; ``probe``: a latency
    probe's reply), ``rtt_ms``. Workload flows are left out."""
    meta = _flow_meta(r)
    parts = []
    ts = r.timeseries
    if not ts.empty:
        s = ts[ts["srtt_ns"] > 0]
        parts.append(pd.DataFrame({"t_s": s["t_s"].to_numpy(), "flow": s["flow"].to_numpy(),
                                   "source": "srtt", "rtt_ms": s["srtt_ns"].to_numpy() / 1e6}))  # fmt: skip
    pr = r.probe_rtt
    if not pr.empty:
        parts.append(pd.DataFrame({"t_s": pr["t_ns"].to_numpy() / 1e9, "flow": pr["flow"].to_numpy(),
                                   "source": "probe", "rtt_ms": pr["rtt_ns"].to_numpy() / 1e6}))  # fmt: skip
    if not parts:
        return pd.DataFrame(columns=["t_s", "flow", "label", "source", "rtt_ms"])
    out = pd.concat(parts, ignore_index=True).merge(meta[["flow", "label"]], on="flow", how="inner")
    return out[["t_s", "flow", "label", "source", "rtt_ms"]].sort_values(["flow", "t_s"], kind="stable",
                                                                         ignore_index=True)  # fmt: skip


def queue_delay_series(r: Result) -> pd.DataFrame:
    """Queue delay over time per queue and sub-queue: ``t_s``, ``queue``,
    ``subqueue``, ``mean_ms`` (mean sojourn of the packets that started
    transmission in the interval ending at ``t_s``), ``max_ms`` (the largest
    one), ``backlog_pkts`` (at ``t_s``). NaN where nothing departed.
    Queues that never saw a packet are left out."""
    qt = r.queue_timeseries
    cols = ["t_s", "queue", "subqueue", "mean_ms", "max_ms", "backlog_pkts"]
    if qt.empty or "sojourn_mean_ms" not in qt:
        return pd.DataFrame(columns=cols)
    busy = qt.groupby(["queue", "subqueue"])["arrived_pkts"].transform("max") > 0
    q = qt[busy]
    return pd.DataFrame({"t_s": q["t_s"].to_numpy(), "queue": q["queue"].to_numpy(), "subqueue": q["subqueue"].to_numpy(),
                         "mean_ms": q["sojourn_mean_ms"].to_numpy(), "max_ms": q["sojourn_max_ms"].to_numpy(),
                         "backlog_pkts": q["backlog_pkts"].to_numpy()})  # fmt: skip


def busiest_queues(r: Result, pairs: list[tuple[str, str]], by: str = "delay") -> tuple[list[tuple[str, str]], str]:
    """The (queue, sub-queue) pairs a per-queue plot draws, in their order:
    all of ``pairs`` up to :data:`MAX_LINES`, else the :data:`MAX_LINES`
    that rank first by :func:`aqmlab.busiest.queue_rank` (the highest 99th-percentile
    sojourn, or with ``by="signals"`` the most marks and drops); and a note
    for the title when some are left out. A fat tree has thousands of
    queues: all of them made an unreadable plot that took a minute to draw.
    The tables keep every queue."""
    if len(pairs) <= MAX_LINES:
        return pairs, ""
    stats: dict[tuple[str, str], dict[str, Any]] = {}
    for q in r.summary.get("queues", []):
        stats[(q["name"], "all")] = q
        stats.update({(q["name"], sub): st for sub, st in (q.get("subqueues") or {}).items()})
    ranked = sorted(pairs, key=lambda k: (*queue_rank(stats.get(k, {}), by), k))
    keep = set(ranked[:MAX_LINES])
    what = "highest 99th-percentile delay" if by == "delay" else "most marks and drops"
    return [k for k in pairs if k in keep], f" ({MAX_LINES} of {len(pairs)} queues: {what})"


def busiest_groups(r: Result, df: pd.DataFrame, by: str = "delay") -> tuple[list[tuple[tuple[str, str], pd.DataFrame]], str]:
    """``df``'s rows per (queue, sub-queue), in order of first appearance,
    for the pairs :func:`busiest_queues` keeps; and its note. Only the kept
    pairs are grouped (a fat tree's thousands are not)."""
    keys = ["queue", "subqueue"]
    pairs, note = busiest_queues(r, list(df[keys].drop_duplicates().itertuples(index=False, name=None)), by)
    if note:
        df = df[pd.MultiIndex.from_frame(df[keys]).isin(pairs)]
    groups = dict(list(df.groupby(keys, sort=False)))
    return [(k, groups[k]) for k in pairs], note


def rtt_samples(r: Result, by: str = "flow", source: str | None = None) -> dict[str, np.ndarray]:
    """RTT samples (ms, sorted) in the measurement window, per ``by``:
    ``"flow"`` (key ``flow N (label)``) or ``"label"`` (the flow group's
    label); ``source`` ``"srtt"`` or ``"probe"`` keeps one kind (default:
    both; a probe flow only has probe samples, a TCP flow only srtt)."""
    if by not in ("flow", "label"):
        raise ValueError(f"by: {by!r} (allowed: flow, label)")
    s = rtt_series(r)
    warm = r.summary.get("warmup_s", 0) or 0
    s = s[s["t_s"] >= warm]
    if source is not None:
        s = s[s["source"] == source]
    out = {}
    if by == "flow":
        for (fid, lab), g in s.groupby(["flow", "label"], sort=True):
            out[f"flow {fid} ({lab})"] = np.sort(g["rtt_ms"].to_numpy())
    else:
        for lab, g in s.groupby("label", sort=True):
            out[str(lab)] = np.sort(g["rtt_ms"].to_numpy())
    return out


def probe_summary(r: Result) -> pd.DataFrame:
    """One row per latency probe: ``flow``, ``label``, ``ecn`` and its
    ``summary.json`` RTT statistics (``mean_ms``, ``min_ms``, ``p50_ms``,
    ``p90_ms``, ``p99_ms``, ``max_ms``, ``samples``)."""
    rows = []
    for f in r.summary.get("flows", []):
        st = f.get("probe_rtt_ms", False)
        if st is False:
            continue
        st = st or {}
        rows.append({"flow": f["id"], "label": f["label"], "ecn": f["ecn"],
                     **{f"{k}_ms": st.get(k) for k in ("mean", "min", "p50", "p90", "p99", "max")},
                     "samples": st.get("samples", 0)})  # fmt: skip
    return pd.DataFrame(rows)


# -- plots -------------------------------------------------------------------------
# Below aqmlab.plots in the layer order (tests/test_layers.py), so the three
# small figure helpers are this module's own, alike to plots'.


def _fig(ax: Any = None) -> tuple[Figure, Any]:
    """A new one-panel figure in the size of aqmlab.plots', or the caller's axes."""
    import matplotlib.pyplot as plt

    if ax is not None:
        return ax.figure, [ax]
    fig, axs = plt.subplots(1, 1, figsize=(8, 3.6), squeeze=False, layout="constrained")
    return fig, axs[:, 0]


def _palette(n: int) -> list[Any]:
    """Distinct colours for n lines (tab10, tab20 beyond 10)."""
    import matplotlib.pyplot as plt

    cmap = plt.get_cmap("tab10" if n <= 10 else "tab20")
    return [cmap(i % cmap.N) for i in range(max(n, 1))]


def _title(r: Result, what: str) -> str:
    name = r.summary.get("scenario", {}).get("name") or ""
    return f"{what} — {name}" if name else what


def _style(ax: Any, r: Result, title: str, xlabel: str, ylabel: str) -> None:
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(_title(r, title))
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small", ncols=2)
    ax.grid(alpha=0.3)


def rtt_time(r: Result, ax: Any = None) -> Figure | None:
    """RTT over time: each TCP flow's smoothed RTT per interval (lines) and
    each latency probe's replies (dots); the mean per group when there are
    more than :data:`MAX_LINES` flows."""
    s = rtt_series(r)
    if s.empty:
        return None
    fig, (ax,) = _fig(ax=ax)
    many = s["flow"].nunique() > MAX_LINES
    keys = ["label", "source"] if many else ["flow", "label", "source"]
    groups = list(s.groupby(keys, sort=True))
    colors = _palette(len(groups))
    for c, (key, g) in zip(colors, groups, strict=True):
        src = key[-1]
        name = f"{key[0]} (mean of {g['flow'].nunique()})" if many else f"flow {key[0]} ({key[1]})"
        if many:
            g = g.groupby("t_s", as_index=False)["rtt_ms"].mean()
        if src == "probe":
            ax.plot(g["t_s"], g["rtt_ms"], ".", ms=2, color=c, label=f"{name} probe")
        else:
            ax.plot(g["t_s"], g["rtt_ms"], lw=1.0, color=c, label=f"{name} srtt")
    warm = r.summary.get("warmup_s", 0) or 0
    if warm:
        ax.axvspan(0, warm, color="0.9", zorder=0)
    ax.set_ylim(bottom=0)
    _style(ax, r, "RTT over time", "time (s)", "RTT (ms)")
    return fig


def queue_delay(r: Result, ax: Any = None) -> Figure | None:
    """Queue delay over time per queue and sub-queue: the mean sojourn of
    the packets that left in each interval (line) and the largest (thin)."""
    q = queue_delay_series(r)
    if q.empty:
        return None
    fig, (ax,) = _fig(ax=ax)
    groups, note = busiest_groups(r, q)
    for c, ((name, sub), g) in zip(_palette(len(groups)), groups, strict=True):
        ax.plot(g["t_s"], g["mean_ms"], lw=1.2, color=c, label=f"{name} / {sub} mean")
        ax.plot(g["t_s"], g["max_ms"], lw=0.6, ls=":", color=c, label=f"{name} / {sub} max")
    ax.set_ylim(bottom=0)
    _style(ax, r, "Queue delay over time" + note, "time (s)", "queue delay (ms)")
    return fig


def rtt_cdf(r: Result, ax: Any = None) -> Figure | None:
    """CDF of the RTT samples in the measurement window, per flow (per
    group beyond :data:`MAX_LINES` flows)."""
    per_flow = rtt_samples(r, "flow")
    d = per_flow if len(per_flow) <= MAX_LINES else rtt_samples(r, "label")
    d = {k: v for k, v in d.items() if len(v)}
    if not d:
        return None
    fig, (ax,) = _fig(ax=ax)
    for c, (k, v) in zip(_palette(len(d)), d.items(), strict=True):
        ax.step(np.r_[v[0], v], np.r_[0.0, np.arange(1, len(v) + 1) / len(v)], where="post", color=c, label=k)
    ax.set_ylim(0, 1.02)
    _style(ax, r, "RTT CDF (srtt per interval; probe replies)", "RTT (ms)", "fraction of samples")
    return fig


def rtt_box(r: Result, ax: Any = None) -> Figure | None:
    """RTT distribution per flow group (label): box = quartiles, whiskers =
    5th and 95th percentiles, median line."""
    d = {k: v for k, v in rtt_samples(r, "label").items() if len(v)}
    if not d:
        return None
    fig, (ax,) = _fig(ax=ax)
    ax.boxplot(list(d.values()), tick_labels=list(d.keys()), whis=(5, 95), showfliers=False)
    ax.set_ylim(bottom=0)
    _style(ax, r, "RTT per group (box: quartiles, whiskers: p5-p95)", "group", "RTT (ms)")
    return fig


#: Plot name -> function (merged into aqmlab.plots.PLOTS).
PLOTS = {"rtt_time": rtt_time, "queue_delay": queue_delay, "rtt_cdf": rtt_cdf, "rtt_box": rtt_box}
