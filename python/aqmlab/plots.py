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
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from aqmlab._plot_options import FORMATS, parse_size_in  # re-exported: light, for the CLI
from aqmlab.scenario import atomic_write_bytes
from aqmlab.latency import busiest_groups

if TYPE_CHECKING:
    from aqmlab.results import Result

__all__ = ["FORMATS", "PAPER_RC", "PlotAccessor", "figure_bytes", "parse_size_in", "goodput", "sojourn_cdf", "cwnd", "rate", "probabilities", "fct", "PLOTS"]

#: Beyond this many flows, per-flow plots show one line per flow group.
MAX_LINES = 12


def _fig(rows: int = 1, height: float = 3.6, ax: Any = None) -> tuple[Figure, Any]:
    """A new figure with ``rows`` panels, or the caller's axes (``ax=``) for
    a one-panel plot."""
    if ax is not None:
        if rows != 1:
            raise ValueError(f"this plot draws {rows} panels; call it without ax= and use the Figure it returns")
        return ax.figure, [ax]
    fig, axs = plt.subplots(rows, 1, figsize=(8, height * rows), squeeze=False, layout="constrained")
    return fig, axs[:, 0]


def _palette(n: int) -> list[Any]:
    """Distinct colours for n lines: matplotlib's 10-colour cycle repeats
    from the 11th line, tab20 keeps up to 20 apart."""
    cmap = plt.get_cmap("tab10" if n <= 10 else "tab20")
    return [cmap(i % cmap.N) for i in range(max(n, 1))]


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


def goodput(r: Result, ax: Any = None) -> Figure | None:
    """Per-flow goodput over time (Mbit/s), from the per-interval delivered bytes."""
    ts = r.timeseries
    if ts.empty:
        return None
    fig, (ax,) = _fig(ax=ax)
    lines = _per_flow_or_group(r, ts, "goodput_bps", 1e-6)
    ax.set_prop_cycle(color=_palette(len(lines)))
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


def sojourn_cdf(r: Result, ax: Any = None) -> Figure | None:
    """CDF of queueing delay (sojourn time) per queue and sub-queue.

    A log delay axis is used when the delays span more than two decades; it
    starts at 1 µs, so packets that did not wait show as the CDF's level at
    the left edge."""
    h = r.sojourn_hist
    if h.empty or h["count"].sum() == 0:
        return None
    reported = {q["name"] for q in r.summary.get("queues", []) if (q.get("arrivals") or 0) > 0}
    h = h[(h["count"] > 0) & (h["queue"].isin(reported) if reported else True)]
    groups, note = busiest_groups(r, h)
    series = []
    for (q, sub), g in groups:
        g = g.sort_values("hi_ns")
        c = g["count"].to_numpy(dtype=float)
        series.append((f"{q} / {sub}", g["hi_ns"].to_numpy(dtype=float) / 1e6, np.cumsum(c) / c.sum()))
    if not series:
        return None
    fig, (ax,) = _fig(ax=ax)
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
    ax.set_title(_title(r, "Queue delay CDF" + note))
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    return fig


def _time_lines(r: Result, ts: pd.DataFrame, col: str, scale: float, ylabel: str, what: str, ax: Any = None) -> Figure:
    """One line per flow (or flow group) of ``ts[col] * scale`` over time."""
    fig, (ax,) = _fig(ax=ax)
    lines = _per_flow_or_group(r, ts, col, scale)
    ax.set_prop_cycle(color=_palette(len(lines)))
    for label, x, y in lines:
        ax.plot(x, y, label=label, lw=1.0)
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.set_title(_title(r, what))
    ax.set_ylim(bottom=0)
    ax.legend(fontsize="small", ncols=2)
    ax.grid(alpha=0.3)
    return fig


def cwnd(r: Result, ax: Any = None) -> Figure | None:
    """Congestion window over time (segments), per TCP flow."""
    ts = r.timeseries
    if ts.empty:
        return None
    ts = ts[ts["cwnd_segs"] > 0]
    if ts.empty:
        return None
    return _time_lines(r, ts, "cwnd_segs", 1.0, "cwnd (segments)", "Congestion window", ax=ax)


def rate(r: Result, ax: Any = None) -> Figure | None:
    """Sending rate over time (Mbit/s) of rate-based flows: a UDP flow's rate,
    a QCN source's current rate (its line rate while not rate-limited)."""
    ts = r.timeseries
    if ts.empty or "rate_bps" not in ts:
        return None
    ts = ts[ts["rate_bps"] > 0]
    if ts.empty:
        return None
    return _time_lines(r, ts, "rate_bps", 1e-6, "sending rate (Mbit/s)", "Sending rate (rate-based flows)", ax=ax)


def probabilities(r: Result, ax: Any = None) -> Figure | None:
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
    fig, axes = _fig(rows, ax=ax)
    ax = axes[0]
    by_queue = qt.groupby(["queue", "subqueue"])
    signalled = (by_queue["marked_pkts"].transform("max") > 0) | (by_queue["dropped_pkts"].transform("max") > 0)
    groups, note = busiest_groups(r, qt[signalled], by="signals")
    for (q, sub), g in groups:
        if g["marked_pkts"].max() > 0:
            ax.plot(g["t_s"], g["mark_prob"], label=f"mark {q} / {sub}", lw=1.0)
        if g["dropped_pkts"].max() > 0:
            ax.plot(g["t_s"], g["drop_prob"], label=f"drop {q} / {sub}", lw=1.0, ls="--")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("fraction per interval")
    ax.set_title(_title(r, "Mark / drop probability" + note))
    ax.set_ylim(bottom=0)
    if ax.lines:
        ax.legend(fontsize="small")
    else:
        ax.text(0.5, 0.5, "no marks or drops", ha="center", va="center", transform=ax.transAxes)
    ax.grid(alpha=0.3)
    if rows == 2:
        ax2 = axes[1]
        series = list(aqm_p.groupby(["owner", "probe"], sort=False))
        if len(series) > MAX_LINES:  # thousands in a fat tree: the highest on average
            ax2.set_title(f"{MAX_LINES} of {len(series)} AQM probabilities: highest mean", fontsize="small")
            series = sorted(series, key=lambda s: -s[1]["value"].mean())[:MAX_LINES]
        for (owner, probe), g in series:
            ax2.plot(g["t_s"], g["value"], label=f"{owner}: {probe}", lw=1.0)
        ax2.set_xlabel("time (s)")
        ax2.set_ylabel("AQM probability")
        ax2.set_ylim(bottom=0)
        ax2.legend(fontsize="small")
        ax2.grid(alpha=0.3)
    return fig


def fct(r: Result, ax: Any = None) -> Figure | None:
    """Flow completion time against flow size (finite flows only)."""
    f = r.flows
    if f.empty:
        return None
    done = f[f["fct_ns"].notna() & f["size_bytes"].notna()]
    if done.empty:
        return None
    fig, (ax,) = _fig(ax=ax)
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


def _register_latency_views() -> None:
    """The latency views (aqmlab.latency) join the registry: one module per
    family of views keeps this file short."""
    from aqmlab import latency

    PLOTS.update(latency.PLOTS)


_register_latency_views()



#: Matplotlib settings for figures sized for a paper's column (--size):
#: 8 pt text, thinner lines, no wasted margins.
PAPER_RC: dict[str, Any] = {
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "legend.fontsize": 6.5,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "lines.linewidth": 1.0,
    "axes.linewidth": 0.6,
    "figure.constrained_layout.use": True,
}


def figure_bytes(fig: Figure, fmt: str = "png", dpi: int = 110) -> bytes:
    """The figure as PNG, PDF or SVG bytes, without a creation date or
    software tag, so the same run gives the same files."""
    buf = io.BytesIO()
    meta: dict[str, Any] = {"png": {"Software": None}, "pdf": {"CreationDate": None, "Producer": None},
                            "svg": {"Date": None}}[fmt]  # fmt: skip
    kwargs: dict[str, Any] = {"dpi": dpi} if fmt == "png" else {}
    if fmt == "svg":
        with plt.rc_context({"svg.hashsalt": "aqmlab"}):
            fig.savefig(buf, format=fmt, metadata=meta, **kwargs)
    else:
        fig.savefig(buf, format=fmt, metadata=meta, **kwargs)
    return buf.getvalue()


def png_bytes(fig: Figure, dpi: int = 110) -> bytes:
    return figure_bytes(fig, "png", dpi)


class PlotAccessor:
    """``result.plot``: one method per plot, plus :meth:`save_all`."""

    def __init__(self, result: Result):
        self._r = result

    def __call__(self, name: str, ax: Any = None) -> Figure | None:
        """The plot ``name`` (a key of :data:`PLOTS`, e.g. ``"rtt_time"``)."""
        fn = PLOTS.get(name)
        if fn is None:
            raise ValueError(f"plot {name!r}: allowed {', '.join(PLOTS)}")
        return fn(self._r, ax=ax)

    def __getattr__(self, name: str) -> Any:
        fn = PLOTS.get(name)
        if fn is None:
            raise AttributeError(name)
        return lambda ax=None: fn(self._r, ax=ax)

    def goodput(self, ax: Any = None) -> Figure | None:
        return goodput(self._r, ax=ax)

    def sojourn_cdf(self, ax: Any = None) -> Figure | None:
        return sojourn_cdf(self._r, ax=ax)

    def cwnd(self, ax: Any = None) -> Figure | None:
        return cwnd(self._r, ax=ax)

    def rate(self, ax: Any = None) -> Figure | None:
        return rate(self._r, ax=ax)

    def probabilities(self, ax: Any = None) -> Figure | None:
        return probabilities(self._r, ax=ax)

    def fct(self, ax: Any = None) -> Figure | None:
        return fct(self._r, ax=ax)

    def save_all(
        self,
        out_dir: str | os.PathLike[str],
        *,
        formats: Sequence[str] = ("png",),
        size_in: tuple[float, float] | None = None,
        dpi: int = 110,
    ) -> dict[str, Path]:
        """Write every plot that has data as ``<name>.<format>`` for each of
        ``formats`` (png, pdf, svg); returns name -> path of the first format.

        ``size_in`` (width, height in inches) redraws each figure at that
        size in the paper style (:data:`PAPER_RC`: fonts readable at column
        width); ``dpi`` applies to PNG."""
        bad = [f for f in formats if f not in FORMATS]
        if bad or not formats:
            raise ValueError(f"plot format {', '.join(bad) or '(none)'}: allowed {', '.join(FORMATS)}")
        out = Path(out_dir)
        written = {}
        style = PAPER_RC if size_in is not None else {}
        for name, fn in PLOTS.items():
            with plt.rc_context(style):
                fig = fn(self._r)
                if fig is None:
                    continue
                try:
                    if size_in is not None:
                        fig.set_size_inches(*size_in)
                    for i, fmt in enumerate(formats):
                        path = atomic_write_bytes(out / f"{name}.{fmt}", figure_bytes(fig, fmt, dpi=dpi))
                        if i == 0:
                            written[name] = path
                finally:
                    plt.close(fig)
        return written
