"""Plots of one run (matplotlib).

The library never picks a matplotlib backend (that would break inline
figures in notebooks); the CLI chooses Agg for itself.

Each function takes a :class:`~aqmlab.results.Result` and returns a
matplotlib Figure (or None when the run has no data for it, e.g. no finite
flows for the FCT plot). ``result.plot.<name>()`` calls them;
``result.plot.save_all(dir)`` writes every applicable one as PNG.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from aqmlab.scenario import atomic_write_bytes

if TYPE_CHECKING:
    from aqmlab.results import Result

__all__ = ["PlotAccessor", "goodput", "sojourn_cdf", "cwnd", "rate", "probabilities", "fct", "PLOTS"]

#: Beyond this many flows, per-flow plots show one line per flow group.
MAX_LINES = 12


def _fig(rows: int = 1, height: float = 3.6) -> tuple[Figure, Any]:
    fig, ax = plt.subplots(rows, 1, figsize=(8, height * rows), squeeze=False, layout="constrained")
    return fig, ax[:, 0]


def _title(r: Result, what: str) -> str:
    name = r.summary.get("scenario", {}).get("name") or ""
    return f"{what} — {name}" if name else what


def _per_flow_or_group(r: Result, ts: pd.DataFrame, col: str, scale: float) -> list[tuple[str, pd.Series, pd.Series]]:
    """Lines to draw: one per flow, or the mean per group when there are many."""
    lines = []
    flows = r.flows
    long_flows = set(flows.loc[flows["from_workload"] == 0, "id"]) if len(flows) else set(ts["flow"])
    ts = ts[ts["flow"].isin(long_flows)]
    if ts["flow"].nunique() <= MAX_LINES:
        for fid, g in ts.groupby("flow", sort=True):
            label = g["label"].iloc[0] if "label" in g else ""
            lines.append((f"flow {fid} ({label})", g["t_s"], g[col] * scale))
    else:
        key = "label" if "label" in ts else "flow"
        for lab, g in ts.groupby(key, sort=True):
            m = g.groupby("t_s")[col].mean() * scale
            n = g["flow"].nunique()
            lines.append((f"{lab} (mean of {n})", pd.Series(m.index), pd.Series(m.to_numpy())))
    return lines


def goodput(r: Result) -> Figure | None:
    """Per-flow goodput over time (Mbit/s), from the per-interval delivered bytes."""
    ts = r.timeseries
    if ts.empty:
        return None
    fig, (ax,) = _fig()
    lines = _per_flow_or_group(r, ts, "goodput_bps", 1e-6)
    for label, x, y in lines:
        ax.plot(x, y, label=label, lw=1.2)
    warm = r.summary.get("warmup_s", 0) or 0
    if warm:
        ax.axvspan(0, warm, color="0.9", zorder=0, label="warm-up")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("goodput (Mbit/s)")
    title = "Goodput per flow"
    # A hole filled after a loss releases buffered data in one interval; keep
    # such spikes from flattening the plot (the data is unchanged).
    rates = [q.get("rate_bps") or 0 for q in r.summary.get("queues", [])]
    cap = 1.25 * max(rates) / 1e6 if rates and max(rates) > 0 else None
    top = max((float(np.nanmax(y)) for _, _, y in lines if len(y) and np.isfinite(y).any()), default=0.0)
    if cap is not None and top > cap:
        ax.set_ylim(0, cap)
        title += " (one-interval spikes clipped)"
    else:
        ax.set_ylim(bottom=0)
    ax.set_title(_title(r, title))
    ax.legend(fontsize="small", ncols=2)
    ax.grid(alpha=0.3)
    return fig


def sojourn_cdf(r: Result) -> Figure | None:
    """CDF of queueing delay (sojourn time) per queue and sub-queue.

    A log delay axis is used when the delays span more than two decades; it
    starts at 1 µs, so packets that did not wait show as the CDF's level at
    the left edge."""
    h = r.sojourn_hist
    if h.empty or h["count"].sum() == 0:
        return None
    reported = {q["name"] for q in r.summary.get("queues", []) if (q.get("arrivals") or 0) > 0}
    series = []
    for (q, sub), g in h.groupby(["queue", "subqueue"], sort=False):
        if reported and q not in reported:
            continue
        g = g[g["count"] > 0].sort_values("hi_ns")
        if g.empty:
            continue
        c = g["count"].to_numpy(dtype=float)
        series.append((f"{q} / {sub}", g["hi_ns"].to_numpy(dtype=float) / 1e6, np.cumsum(c) / c.sum()))
    if not series:
        return None
    fig, (ax,) = _fig()
    positive = [float(x[x >= 1e-3].min()) for _, x, _ in series if (x >= 1e-3).any()]
    hi_max = max(float(x[-1]) for _, x, _ in series)
    log = bool(positive) and hi_max / min(positive) > 100
    left = min(positive) / 1.5 if log else 0.0
    for label, x, y in series:
        if log:
            keep = x >= left
            x0 = [left] if keep.any() and not keep.all() else []
            y0 = [float(y[~keep][-1])] if x0 else []
            ax.step(np.r_[x0, x[keep]], np.r_[y0, y[keep]], where="post", label=label)
        else:
            ax.step(np.r_[0.0, x], np.r_[0.0, y], where="post", label=label)
    if log:
        ax.set_xscale("log")
        ax.set_xlim(left=left)
    else:
        ax.set_xlim(left=0)
    ax.set_xlabel("queueing delay (ms)")
    ax.set_ylabel("fraction of packets")
    ax.set_ylim(0, 1.02)
    ax.set_title(_title(r, "Queue delay CDF"))
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    return fig


def _time_lines(r: Result, ts: pd.DataFrame, col: str, scale: float, ylabel: str, what: str) -> Figure:
    """One line per flow (or flow group) of ``ts[col] * scale`` over time."""
    fig, (ax,) = _fig()
    for label, x, y in _per_flow_or_group(r, ts, col, scale):
        ax.plot(x, y, label=label, lw=1.0)
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.set_title(_title(r, what))
    ax.set_ylim(bottom=0)
    ax.legend(fontsize="small", ncols=2)
    ax.grid(alpha=0.3)
    return fig


def cwnd(r: Result) -> Figure | None:
    """Congestion window over time (segments), per TCP flow."""
    ts = r.timeseries
    if ts.empty:
        return None
    ts = ts[ts["cwnd_segs"] > 0]
    if ts.empty:
        return None
    return _time_lines(r, ts, "cwnd_segs", 1.0, "cwnd (segments)", "Congestion window")


def rate(r: Result) -> Figure | None:
    """Sending rate over time (Mbit/s) of rate-based flows: a UDP flow's rate,
    a QCN source's current rate (its line rate while not rate-limited)."""
    ts = r.timeseries
    if ts.empty or "rate_bps" not in ts:
        return None
    ts = ts[ts["rate_bps"] > 0]
    if ts.empty:
        return None
    return _time_lines(r, ts, "rate_bps", 1e-6, "sending rate (Mbit/s)", "Sending rate (rate-based flows)")


def probabilities(r: Result) -> Figure | None:
    """Mark and drop probability over time per queue and sub-queue (the
    fraction of packets marked or dropped in each interval), plus the AQM's
    own probabilities (probes named p*) when it reports them."""
    qt = r.queue_timeseries
    if qt.empty:
        return None
    busy = qt.groupby(["queue", "subqueue"])["arrived_pkts"].transform("max") > 0
    qt = qt[busy]
    pr = r.probes
    aqm_p = pr[pr["probe"].str.startswith("p") & ~pr["owner"].str.startswith("flow")] if not pr.empty else pr
    rows = 2 if not aqm_p.empty else 1
    fig, axes = _fig(rows)
    ax = axes[0]
    for (q, sub), g in qt.groupby(["queue", "subqueue"], sort=False):
        if g["marked_pkts"].max() > 0:
            ax.plot(g["t_s"], g["mark_prob"], label=f"mark {q} / {sub}", lw=1.0)
        if g["dropped_pkts"].max() > 0:
            ax.plot(g["t_s"], g["drop_prob"], label=f"drop {q} / {sub}", lw=1.0, ls="--")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("fraction per interval")
    ax.set_title(_title(r, "Mark / drop probability"))
    ax.set_ylim(bottom=0)
    if ax.lines:
        ax.legend(fontsize="small")
    else:
        ax.text(0.5, 0.5, "no marks or drops", ha="center", va="center", transform=ax.transAxes)
    ax.grid(alpha=0.3)
    if rows == 2:
        ax2 = axes[1]
        for (owner, probe), g in aqm_p.groupby(["owner", "probe"], sort=False):
            ax2.plot(g["t_s"], g["value"], label=f"{owner}: {probe}", lw=1.0)
        ax2.set_xlabel("time (s)")
        ax2.set_ylabel("AQM probability")
        ax2.set_ylim(bottom=0)
        ax2.legend(fontsize="small")
        ax2.grid(alpha=0.3)
    return fig


def fct(r: Result) -> Figure | None:
    """Flow completion time against flow size (finite flows only)."""
    f = r.flows
    if f.empty:
        return None
    done = f[f["fct_ns"].notna() & f["size_bytes"].notna()]
    if done.empty:
        return None
    fig, (ax,) = _fig()
    for cc, g in done.groupby("label" if "label" in done else "cc", sort=True):
        ax.scatter(g["size_bytes"].astype(float), g["fct_ns"].astype(float) / 1e9, s=10, alpha=0.7, label=str(cc))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("flow size (bytes)")
    ax.set_ylabel("flow completion time (s)")
    unfinished = int(((f["size_bytes"].notna()) & f["fct_ns"].isna()).sum())
    extra = f" ({unfinished} unfinished)" if unfinished else ""
    ax.set_title(_title(r, f"FCT vs size{extra}"))
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3, which="both")
    return fig


#: Plot name -> function; also the PNG file names.
PLOTS = {
    "goodput": goodput,
    "sojourn_cdf": sojourn_cdf,
    "cwnd": cwnd,
    "rate": rate,
    "probabilities": probabilities,
    "fct": fct,
}


def png_bytes(fig: Figure, dpi: int = 110) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


class PlotAccessor:
    """``result.plot``: one method per plot, plus :meth:`save_all`."""

    def __init__(self, result: Result):
        self._r = result

    def goodput(self) -> Figure | None:
        return goodput(self._r)

    def sojourn_cdf(self) -> Figure | None:
        return sojourn_cdf(self._r)

    def cwnd(self) -> Figure | None:
        return cwnd(self._r)

    def rate(self) -> Figure | None:
        return rate(self._r)

    def probabilities(self) -> Figure | None:
        return probabilities(self._r)

    def fct(self) -> Figure | None:
        return fct(self._r)

    def save_all(self, out_dir: str | os.PathLike[str]) -> dict[str, Path]:
        """Write every plot that has data as ``<name>.png``; returns name -> path."""
        out = Path(out_dir)
        written = {}
        for name, fn in PLOTS.items():
            fig = fn(self._r)
            if fig is None:
                continue
            try:
                written[name] = atomic_write_bytes(out / f"{name}.png", png_bytes(fig))
            finally:
                plt.close(fig)
        return written
