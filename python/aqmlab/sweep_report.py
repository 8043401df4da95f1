"""Views of a sweep: a metric against a swept parameter, one line per value
of another, with 95 % intervals over the replications (distinct seeds), a
heatmap for two-dimensional grids, and the table behind every plot.

``SweepResult.plot(x=..., y=..., hue=...)`` draws one; ``aqmlab report
SWEEPDIR`` (or :func:`write_sweep_report`) writes ``sweep_report.html`` with
the headline metrics and ``plots/*.png`` for a saved sweep.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["HEADLINE", "plot_metric", "heatmap", "write_sweep_report"]

#: Metrics a sweep report shows first (when the sweep has them).
HEADLINE = (
    "queues.bottleneck.sojourn_ms.p99",
    "queues.bottleneck.sojourn_ms.p50",
    "queues.bottleneck.utilization",
    "flows.all.goodput_bps.sum",
    "fairness.jain",
    "fairness.l4s_classic_ratio",
)


def _order(values: Sequence[Any], grid_values: Sequence[Any] | None) -> list[Any]:
    """Grid order when known (e.g. "5pkt" < "20pkt"), else sorted."""
    if grid_values is not None:
        return [v for v in grid_values if v in set(values)]
    return sorted(set(values), key=lambda v: (str(type(v)), v))


def plot_metric(stats: pd.DataFrame, y: str, x: str, hue: str | None = None, *,
                grid: dict[str, list[Any]] | None = None, ax: Any = None) -> Figure:  # fmt: skip
    """``y`` (a metric name) against the swept parameter ``x``, one line per
    value of ``hue``, with the 95 % interval as error bars (none where a
    point has fewer than two distinct replications)."""
    import matplotlib.pyplot as plt
    import numpy as np

    d = stats[stats["metric"] == y]
    if d.empty:
        known = sorted(set(stats["metric"]))[:8]
        raise ValueError(f"metric '{y}' is not in this sweep's statistics (e.g. {', '.join(known)})")
    for name in (x, hue):
        if name is not None and name not in d.columns:
            raise ValueError(f"'{name}' is not a swept parameter (swept: {', '.join(grid or [])})")
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.5, 3.6), layout="constrained")
    else:
        fig = ax.figure
    xs = _order(list(d[x]), (grid or {}).get(x))
    hues = _order(list(d[hue]), (grid or {}).get(hue)) if hue else [None]
    pos = np.arange(len(xs))
    for h in hues:
        sub = d if h is None else d[d[hue] == h]
        rows = [sub[sub[x] == v] for v in xs]
        mean = np.array([r["mean"].iloc[0] if len(r) else np.nan for r in rows], dtype=float)
        lo = np.array([r["ci95_lo"].iloc[0] if len(r) else np.nan for r in rows], dtype=float)
        hi = np.array([r["ci95_hi"].iloc[0] if len(r) else np.nan for r in rows], dtype=float)
        # A bounded metric's interval is the logit interval mapped back and
        # clipped inside (0, 1): with a run at exactly 1 (Jain's index) the
        # mean can lie just outside it. matplotlib refuses negative error
        # bars; that side is drawn with none (the table has the numbers).
        err = np.clip(np.vstack([np.nan_to_num(mean - lo), np.nan_to_num(hi - mean)]), 0.0, None)
        ax.errorbar(pos, mean, yerr=err, marker="o", capsize=3, label=None if h is None else f"{hue} = {h}")
    ax.set_xticks(pos, [str(v) for v in xs])
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(f"{y} (mean, 95 % interval over seeds)", fontsize="medium")
    if hue:
        ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    return fig


def heatmap(stats: pd.DataFrame, y: str, x: str, row: str, *, grid: dict[str, list[Any]] | None = None) -> Figure:
    """The mean of ``y`` over a two-dimensional grid, values written in the cells."""
    import matplotlib.pyplot as plt
    import numpy as np

    d = stats[stats["metric"] == y]
    xs = _order(list(d[x]), (grid or {}).get(x))
    rs = _order(list(d[row]), (grid or {}).get(row))
    z = np.full((len(rs), len(xs)), np.nan)
    for i, r in enumerate(rs):
        for j, v in enumerate(xs):
            m = d[(d[row] == r) & (d[x] == v)]["mean"]
            if len(m):
                z[i, j] = float(m.iloc[0])
    fig, ax = plt.subplots(figsize=(1.2 * len(xs) + 2.5, 0.6 * len(rs) + 1.8), layout="constrained")
    im = ax.imshow(z, aspect="auto", cmap="viridis")
    ax.set_xticks(range(len(xs)), [str(v) for v in xs])
    ax.set_yticks(range(len(rs)), [str(v) for v in rs])
    ax.set_xlabel(x)
    ax.set_ylabel(row)
    for i in range(len(rs)):
        for j in range(len(xs)):
            if np.isfinite(z[i, j]):
                ax.text(j, i, f"{z[i, j]:.3g}", ha="center", va="center", color="w", fontsize="small")
    fig.colorbar(im, ax=ax, label=y)
    ax.set_title(f"{y} (mean over seeds)", fontsize="medium")
    return fig


def write_sweep_report(sweep_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """``sweep_report.html`` and ``plots/*.png`` for a directory written by
    ``aqmlab sweep`` (``stats.parquet`` and ``sweep.json``)."""
    import matplotlib.pyplot as plt
    import pandas as pd

    from aqmlab.htmlpage import data_files_in, data_links, image, page, table
    from aqmlab.plots import png_bytes
    from aqmlab.scenario import atomic_write_bytes, atomic_write_text

    out = Path(sweep_dir)
    meta = json.loads((out / "sweep.json").read_text())
    stats = pd.read_parquet(out / "stats.parquet")
    grid: dict[str, list[Any]] = meta.get("grid") or {}
    params = list(grid)
    metrics = [m for m in HEADLINE if m in set(stats["metric"])]
    parts = [f"<h1>Sweep {html.escape(str(meta.get('name', '')))}</h1>",
             f"<p>{html.escape(str(meta.get('description') or ''))}</p>",
             f"<p class=\"muted\">{meta.get('total')} runs ({meta.get('failed')} failed); grid: "
             + html.escape(", ".join(f"{k} = {v}" for k, v in grid.items())) + f"; seeds {meta.get('seeds')}.</p>"]  # fmt: skip
    plots: list[Path] = []
    for m in metrics:
        parts.append(f"<h2>{html.escape(m)}</h2>")
        figs: list[tuple[str, Figure]] = []
        if params:
            figs.append(("line", plot_metric(stats, m, params[0], params[1] if len(params) > 1 else None, grid=grid)))
        if len(params) == 2:
            figs.append(("heatmap", heatmap(stats, m, params[0], params[1], grid=grid)))
        for kind, fig in figs:
            try:
                png = png_bytes(fig)
            finally:
                plt.close(fig)
            name = f"{m.replace('.', '_').replace('[', '').replace(']', '')}_{kind}.png"
            plots.append(atomic_write_bytes(out / "plots" / name, png))
            parts.append(image(png, f"{m} {kind}"))
        d = stats[stats["metric"] == m]
        cols = [*params, "n", "n_distinct", "mean", "ci95_lo", "ci95_hi"]
        parts.append(table(cols, d[cols].itertuples(index=False), left=len(params)))
    parts.append(data_links(out, [*data_files_in(out), *plots], "Data files and plots"))
    path = atomic_write_text(out / "sweep_report.html", page(f"aqmlab sweep {meta.get('name', '')}", "\n".join(parts)))
    return {"report": path, "plots": plots}
