"""Figures and tables of the qcn-hotspot reproduction (seed 003).

Everything drawn here is also written as a table (``grid_tables``), from the
same showcased runs (first seed, full time series): the hotspot's total rate
and queue around the capacity changes; per grid point (N, RTT) the queue,
the sources' rates and the share of sources in each reaction-point stage
(the RP's ``stage`` probe: 0 released, 1 Fast Recovery, 2 Active Increase,
3 Hyper-Active Increase; seed 003's "QCN: Distribution of flows in FR, AI").
"""

from __future__ import annotations

import math
from typing import Any

from aqmlab.reproduce.framework import Runs

Q_EQ = 22
LINK_GBPS = 10.0
#: Bins (seconds) of the grid timeline table: the start-up transient in
#: detail (every source starts at 100/N G, ten times the link), then the
#: steady state in coarse steps.
GRID_BINS_S = (0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0)
HOTSPOT_BINS_S = (1.0, 2.0, 2.01, 2.05, 2.1, 3.0, 4.0, 4.01, 4.05, 4.1, 4.2, 5.0, 6.0)
#: Window (seconds) over which per-source rates are averaged for the
#: short-time-scale fairness shown next to the judged one.
SHORT_FAIR_S = 0.1
STAGES = {0: "released", 1: "FR", 2: "AI", 3: "HAI"}


def _grid_shown(runs: Runs) -> list[tuple[dict[str, Any], Any]]:
    """(tags, result) of each showcased grid run, ordered by w, N, RTT."""
    out = []
    for c in runs.cases:
        if c.tags.get("part") in ("grid", "grid-w") and c.label in runs.showcased:
            out.append((c.tags, runs.showcased[c.label]))
    return sorted(out, key=lambda x: (x[0]["w"], x[0]["n"], x[0]["rtt_us"]))


def _queue(r: Any) -> Any:
    qt = r.queue_timeseries
    return qt[qt["queue"] == "bottleneck"].set_index("t_s")["backlog_pkts"]


def _stage_shares(r: Any) -> Any:
    """Share of sources in each stage at every probe sample (columns released/FR/AI/HAI)."""
    import pandas as pd

    pr = r.probes
    st = pr[pr["probe"] == "stage"]
    counts = st.groupby(["t_s", "value"]).size().unstack(fill_value=0)
    counts = counts.reindex(columns=[float(k) for k in STAGES], fill_value=0)
    shares = counts.div(counts.sum(axis=1), axis=0)
    shares.columns = list(STAGES.values())
    return pd.DataFrame(shares)


def _rates(r: Any) -> Any:
    """Per-source RP rate (Gbit/s) at each sample: rows t_s, columns flow."""
    ts = r.timeseries
    return ts.pivot_table(index="t_s", columns="flow", values="rate_bps") / 1e9


def _short_jain(r: Any, t0: float, t1: float, width: float = SHORT_FAIR_S) -> float:
    """Mean over consecutive windows of `width` of Jain's index of the sources' goodput."""
    ts = r.timeseries
    ts = ts[(ts["t_s"] > t0) & (ts["t_s"] <= t1)]
    if ts.empty:
        return math.nan
    win = ((ts["t_s"] - t0 - 1e-9) // width).astype(int)
    # goodput_bps is per sampling interval (delivered_bytes is cumulative).
    per = ts.groupby([win, "flow"])["goodput_bps"].mean().unstack(fill_value=0)
    vals = []
    for _, row in per.iterrows():
        x = row.to_numpy(dtype=float)
        sq = (x * x).sum()
        if sq > 0:
            vals.append(x.sum() ** 2 / (len(x) * sq))
    return sum(vals) / len(vals) if vals else math.nan


def _bin_rows(q: Any, total: Any, stages: Any | None, bins: tuple[float, ...]) -> list[list[str]]:
    rows = []
    for a, b in zip(bins[:-1], bins[1:], strict=True):
        qs = q[(q.index > a) & (q.index <= b)]
        tr = total[(total.index > a) & (total.index <= b)]
        row = [f"{a * 1e3:g}-{b * 1e3:g}", f"{qs.mean():.1f}", f"{qs.max():.0f}", f"{tr.mean():.3f}"]
        if stages is not None:
            sh = stages[(stages.index > a) & (stages.index <= b)].mean()
            row += [f"{sh['FR']:.2f}", f"{sh['AI']:.2f}", f"{sh['HAI']:.2f}", f"{sh['released']:.2f}"]
        rows.append(row)
    return rows


def _md(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def grid_tables(runs: Runs) -> dict[str, str]:
    """Markdown tables with every figure's numbers (first seed's showcased runs,
    plus the judged summaries over all seeds)."""
    from aqmlab.reproduce.qcn import GRID_END_S, GRID_WARMUP_S, mean_queue_pkts, queue_spread_pkts, source_jain
    from aqmlab.reproduce.framework import queue_of

    out: dict[str, str] = {}
    shown = _grid_shown(runs)
    if shown:
        rows = []
        for tags, r in shown:
            label = next(c.label for c in runs.cases if c.tags == tags)
            q = _queue(r)
            qw = q[(q.index > GRID_WARMUP_S) & (q.index <= GRID_END_S)]
            st = _stage_shares(r)
            sw = st[(st.index > GRID_WARMUP_S) & (st.index <= GRID_END_S)].mean()
            rows.append([
                str(tags["n"]), f"{tags['rtt_us']:g}", f"{tags['w']:g}",
                f"{runs.mean(label, lambda s: mean_queue_pkts(s, LINK_GBPS * 1e9)):.1f}",
                f"{qw.std():.1f}", f"{qw.max():.0f}",
                f"{runs.mean(label, queue_spread_pkts):.1f}",
                f"{runs.mean(label, lambda s: queue_of(s)['utilization']):.4f}",
                f"{runs.mean(label, lambda s: queue_of(s)['drops']):.0f}",
                f"{runs.mean(label, source_jain):.3f}",
                f"{_short_jain(r, GRID_WARMUP_S, GRID_END_S):.3f}",
                f"{sw['FR']:.2f}", f"{sw['AI']:.2f}", f"{sw['HAI']:.2f}", f"{sw['released']:.2f}",
            ])  # fmt: skip
        out["grid_summary"] = _md(
            ["N", "RTT µs", "w", "queue mean (pkt)", "queue sd", "queue max", "p99−p50 (pkt)", "util", "drops",
             "Jain 1-3 s", f"Jain {SHORT_FAIR_S * 1e3:g} ms", "FR", "AI", "HAI", "released"], rows)  # fmt: skip
        rows = []
        for tags, r in shown:
            q = _queue(r)
            total = _rates(r).sum(axis=1)
            for b in _bin_rows(q, total, _stage_shares(r), GRID_BINS_S):
                rows.append([str(tags["n"]), f"{tags['rtt_us']:g}", f"{tags['w']:g}", *b])
        out["grid_timeline"] = _md(["N", "RTT µs", "w", "t (ms)", "queue mean", "queue max", "total rate (Gbit/s)",
                                    "FR", "AI", "HAI", "released"], rows)  # fmt: skip
    hot = [(c.tags, runs.showcased[c.label]) for c in runs.cases
           if c.tags.get("part") == "hotspot" and c.tags.get("window") == "timeline" and c.label in runs.showcased]  # fmt: skip
    if hot:
        rows = []
        for tags, r in sorted(hot, key=lambda x: (x[0]["drop_gbps"], not x[0]["fbhat"])):
            total = _rates(r).sum(axis=1)
            for b in _bin_rows(_queue(r), total, None, HOTSPOT_BINS_S):
                rows.append([f"{tags['drop_gbps']:g}", "on" if tags["fbhat"] else "off", *b])
        out["hotspot_timeline"] = _md(["hotspot Gbit/s", "Fb-hat", "t (ms)", "queue mean", "queue max",
                                       "total rate (Gbit/s)"], rows)  # fmt: skip
    return out


def _panels(shown: list[tuple[dict[str, Any], Any]], title: str) -> tuple[Any, dict[tuple[int, float], Any]]:
    import matplotlib.pyplot as plt

    ns = sorted({t["n"] for t, _ in shown})
    rtts = sorted({t["rtt_us"] for t, _ in shown})
    fig, axes = plt.subplots(len(ns), len(rtts), figsize=(2.6 * len(rtts) + 1, 2.0 * len(ns) + 0.8),
                             layout="constrained", squeeze=False, sharex=True)  # fmt: skip
    fig.suptitle(title)
    ax_of = {}
    for i, n in enumerate(ns):
        for j, rtt in enumerate(rtts):
            ax = axes[i, j]
            ax.set_title(f"N = {n}, RTT {rtt:g} µs", fontsize="small")
            ax_of[(n, rtt)] = ax
        axes[i, 0].set_ylabel(f"N = {n}")
    for j in range(len(rtts)):
        axes[-1, j].set_xlabel("time (s)")
    return fig, ax_of


def grid_figures(runs: Runs) -> dict[str, Any]:
    import matplotlib.pyplot as plt

    shown = _grid_shown(runs)
    base = [(t, r) for t, r in shown if t["part"] == "grid"]
    if not base:
        return {}
    figs: dict[str, Any] = {}
    fig, ax_of = _panels(base, "Scalability grid: bottleneck queue (packets, 1 ms samples)")
    for t, r in base:
        ax = ax_of[(t["n"], t["rtt_us"])]
        q = _queue(r)
        ax.plot(q.index, q.values, lw=0.4, color="#36c")
        ax.axhline(Q_EQ, color="k", lw=0.8, ls="--")
        ax.axhline(100, color="grey", lw=0.8, ls="-.")
        ax.set_ylim(0, 105)
    figs["grid_queue"] = fig

    fig, ax_of = _panels(base, "Scalability grid: rates of three sources and the mean (Gbit/s); dashed: 10 G / N")
    for t, r in base:
        ax = ax_of[(t["n"], t["rtt_us"])]
        rates = _rates(r)
        for k, f in enumerate(rates.columns[:3]):
            ax.plot(rates.index, rates[f].values, lw=0.4, color=("#c33", "#2a7", "#84c")[k])
        ax.plot(rates.index, rates.mean(axis=1).values, lw=0.8, color="k")
        ax.axhline(LINK_GBPS / t["n"], color="k", lw=0.8, ls="--")
        ax.set_ylim(0, 3 * LINK_GBPS / t["n"])
    figs["grid_rate"] = fig

    fig, ax_of = _panels(base, "Scalability grid: share of sources per RP stage (10 ms means)")
    colors = {"FR": "#36c", "AI": "#2a7", "HAI": "#c33", "released": "#999"}
    for t, r in base:
        ax = ax_of[(t["n"], t["rtt_us"])]
        st = _stage_shares(r).rolling(10, min_periods=1).mean()
        ax.stackplot(st.index, *[st[k].values for k in colors], colors=list(colors.values()), labels=list(colors))
        ax.set_ylim(0, 1)
    next(iter(ax_of.values())).legend(fontsize="x-small", loc="lower right")
    figs["grid_stages"] = fig

    pair = [(t, r) for t, r in shown if t["n"] == max(x["n"] for x, _ in shown) and
            t["rtt_us"] == max(x["rtt_us"] for x, _ in shown)]  # fmt: skip
    if len(pair) > 1:
        fig, ax = plt.subplots(figsize=(9, 3.2), layout="constrained")
        for (t, r), color in zip(pair, ("#36c", "#c33"), strict=False):
            q = _queue(r)
            ax.plot(q.index, q.values, lw=0.5, color=color, alpha=0.8, label=f"w = {t['w']:g}")
        ax.axhline(Q_EQ, color="k", lw=0.8, ls="--", label="Q_eq")
        t0 = pair[0][0]
        ax.set(title=f"{t0['n']} sources, RTT {t0['rtt_us']:g} µs: w = 2 vs w = 4", xlabel="time (s)",
               ylabel="queue (packets)")  # fmt: skip
        ax.legend(fontsize="small")
        figs["grid_w"] = fig
    return figs


def hotspot_figures(runs: Runs) -> dict[str, Any]:
    import matplotlib.pyplot as plt

    shown = runs.showcased
    drops = sorted({c.tags["drop_gbps"] for c in runs.cases if c.tags.get("part") == "hotspot"})
    if not any(f"{d}g/fbhat/timeline" in shown for d in drops):
        return {}
    style = {"fbhat": ("#c33", "with Fb-hat"), "base": ("#36c", "without Fb-hat")}
    figs: dict[str, Any] = {}

    def series(label: str) -> tuple[Any, Any]:
        r = shown[label]
        return _rates(r).sum(axis=1), _queue(r)

    fig, axes = plt.subplots(len(drops), 1, figsize=(9, 2.8 * len(drops)), layout="constrained", squeeze=False)
    for ax, d in zip(axes[:, 0], drops, strict=True):
        for key in ("fbhat", "base"):
            label = f"{d}g/{key}/timeline"
            if label in shown:
                total, _ = series(label)
                ax.plot(total.index, total.values, color=style[key][0], lw=0.8, label=style[key][1])
        ax.step([0, 2, 4, 6], [10, d, 10, 10], where="post", color="k", lw=0.8, ls="--", label="capacity")
        ax.set_ylabel("total rate (Gbit/s)")
        ax.set_title(f"{d} Gbit/s hotspot: sum of the 10 sources' rates")
        ax.legend(fontsize="small", loc="lower left")
    axes[-1, 0].set_xlabel("time (s)")
    figs["rate"] = fig

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6), layout="constrained")
    colors = ("#c33", "#2a7", "#84c")
    for d, color in zip(drops, colors, strict=False):
        for key in ("fbhat", "base"):
            label = f"{d}g/{key}/timeline"
            if label not in shown:
                continue
            total, q = series(label)
            ls = "-" if key == "fbhat" else ":"
            z = total[(total.index >= 3.98) & (total.index <= 4.3)]
            axes[0].plot(z.index, z.values, ls=ls, lw=1, color=color, label=f"{d}G, {style[key][1]}")
            zq = q[(q.index >= 1.99) & (q.index <= 2.1)]
            axes[1].plot(zq.index, zq.values, ls=ls, lw=1, color=color, label=f"{d}G, {style[key][1]}")
    axes[0].set(title="Recovery after 4 s (rate, zoomed in)", ylabel="total rate (Gbit/s)", xlabel="time (s)")
    axes[0].legend(fontsize="x-small")
    axes[1].axhline(Q_EQ, color="k", lw=0.8, ls="--", label="Q_eq")
    axes[1].axhline(100, color="grey", lw=0.8, ls="-.", label="buffer")
    axes[1].set(title="Capacity drop at 2 s (queue, zoomed in)", ylabel="queue (packets)", xlabel="time (s)")
    axes[1].legend(fontsize="x-small")
    figs["zoom"] = fig

    fig, ax = plt.subplots(figsize=(9, 3.2), layout="constrained")
    d = drops[0]
    for key in ("fbhat", "base"):
        label = f"{d}g/{key}/timeline"
        if label in shown:
            _, q = series(label)
            ax.plot(q.index, q.values, color=style[key][0], lw=0.6, alpha=0.8, label=style[key][1])
    ax.axhline(Q_EQ, color="k", lw=0.8, ls="--", label="Q_eq")
    ax.set(title=f"{d} Gbit/s hotspot: bottleneck queue (1 ms samples)", xlabel="time (s)", ylabel="queue (packets)")
    ax.legend(fontsize="small")
    figs["queue"] = fig
    return figs
