"""Multi-panel figures with shared axes, for grids of cases (e.g. one panel
per AQM, each a 10 × 10 grid of L4S × Classic flow mixes; or one panel per
load, each a metric against the target delay).

The data comes in long form (a pandas DataFrame: one row per case, a column
per grid coordinate and one for the value), so the same frame gives the
figure and its table (:func:`grid_markdown`): every number drawn is also in
the table. Panels share their axes (tick labels on the outer panels only)
and, for heatmaps, one colour scale with one colour bar, so a panel can be
read against its neighbours. ``size_in`` draws at a paper size in the
paper style (:data:`aqmlab.plots.PAPER_RC`); a reproduction's
``--size``/``--format`` does the same for all its figures.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["panel_grid", "heatmap_panels", "line_panels", "grid_markdown", "ordered"]

#: Default size of one panel (inches) when no overall size is given.
PANEL_IN = (2.6, 2.2)

F = TypeVar("F", bound=Callable[..., Any])


def _paper_style(fn: F) -> F:
    """Draw in the paper style (:data:`aqmlab.plots.PAPER_RC`) when the call
    gives ``size_in``: text sizes are fixed as text is drawn, so the whole
    figure is drawn inside the style."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        import matplotlib.pyplot as plt

        from aqmlab.plots import PAPER_RC

        with plt.rc_context(PAPER_RC if kwargs.get("size_in") else {}):
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def ordered(values: Sequence[Any]) -> list[Any]:
    """Distinct values in grid order: numbers ascending, then text ascending."""
    distinct = list(dict.fromkeys(v for v in values if not (isinstance(v, float) and math.isnan(v))))
    return sorted(distinct, key=lambda v: (isinstance(v, str), v if not isinstance(v, str) else 0, str(v)))


@_paper_style
def panel_grid(nrows: int, ncols: int, *, sharex: bool | str = True, sharey: bool | str = True,
               xlabel: str | None = None, ylabel: str | None = None, col_titles: Sequence[str] | None = None,
               row_titles: Sequence[str] | None = None, size_in: tuple[float, float] | None = None,
               panel_in: tuple[float, float] = PANEL_IN) -> tuple[Figure, Any]:  # fmt: skip
    """A figure of ``nrows`` × ``ncols`` panels sharing their x and y axes
    (``"row"``: within a row only): tick labels only on the outer panels, one
    x label under the grid and one y label beside it, column titles on top
    and row titles on the right. Returns the figure and a 2-D array of axes.
    ``size_in`` (width, height) draws at that size in the paper style; else
    each panel gets ``panel_in``."""
    import matplotlib.pyplot as plt

    size = size_in or (panel_in[0] * ncols + 1.2, panel_in[1] * nrows + 0.8)
    fig, axes = plt.subplots(nrows, ncols, figsize=size, sharex=sharex, sharey=sharey, squeeze=False,
                             layout="constrained")  # fmt: skip
    for ax in axes.flat:
        ax.label_outer()  # shared axes: the inner panels' tick labels would repeat the outer ones
    if xlabel:
        fig.supxlabel(xlabel, fontsize="medium")
    if ylabel:
        fig.supylabel(ylabel, fontsize="medium")
    for j, t in enumerate(col_titles or []):
        axes[0][j].set_title(t, fontsize="medium")
    for i, t in enumerate(row_titles or []):
        axes[i][-1].annotate(t, xy=(1.04, 0.5), xycoords="axes fraction", rotation=-90, va="center", ha="left",
                             fontsize="medium")  # fmt: skip
    return fig, axes


def _panel_keys(data: pd.DataFrame, panel: str | None, order: Sequence[Any] | None) -> list[Any]:
    if panel is None:
        return [None]
    present = set(data[panel])
    return [k for k in order if k in present] if order is not None else ordered(list(data[panel]))


def _matrix(d: pd.DataFrame, x: str, y: str, value: str, xs: list[Any], ys: list[Any]) -> Any:
    """``value`` on the (ys × xs) grid; NaN where no row has a value."""
    import numpy as np

    z = np.full((len(ys), len(xs)), np.nan)
    for xv, yv, v in zip(d[x], d[y], d[value], strict=True):
        if v is not None and not (isinstance(v, float) and math.isnan(v)):
            z[ys.index(yv), xs.index(xv)] = float(v)
    return z


def _colour_norm(mats: list[Any], log: bool, center: float | None) -> Any:
    """One colour scale for every panel: their common range, symmetric about
    ``center`` when given (in log space for a log scale)."""
    import matplotlib.colors as mcolors
    import numpy as np

    finite = np.concatenate([m[np.isfinite(m)] for m in mats]) if mats else np.array([])
    if log:
        finite = finite[finite > 0]
    lo, hi = (float(finite.min()), float(finite.max())) if len(finite) else (1.0, 2.0)
    if center is not None:
        span = max(abs(math.log(hi / center)), abs(math.log(lo / center))) if log else max(hi - center, center - lo)
        lo, hi = (center / math.exp(span), center * math.exp(span)) if log else (center - span, center + span)
    if hi <= lo:
        hi = lo * 1.01 + 1e-12 if lo > 0 else lo + 1.0
    return mcolors.LogNorm(lo, hi) if log and lo > 0 else mcolors.Normalize(lo, hi)


def _outline_outside(ax: Axes, z: Any, band: tuple[float | None, float | None]) -> None:
    """Red outlines on the cells outside ``band`` (lo, hi; None: open)."""
    import matplotlib.pyplot as plt
    import numpy as np

    outside = np.zeros(z.shape, dtype=bool)
    with np.errstate(invalid="ignore"):
        if band[0] is not None:
            outside |= z < band[0]
        if band[1] is not None:
            outside |= z > band[1]
    for i, j in zip(*np.nonzero(outside), strict=True):  # inset: neighbours' outlines stay apart
        ax.add_patch(plt.Rectangle((j - 0.44, i - 0.44), 0.88, 0.88, fill=False, ec="red", lw=1.5))


@_paper_style
def heatmap_panels(data: pd.DataFrame, *, x: str, y: str, value: str = "value", panel: str | None = None,
                   order: Sequence[Any] | None = None, ncols: int | None = None, label: str | None = None,
                   log: bool = False, center: float | None = None, band: Any = None, annotate: bool = True,
                   digits: int = 2, titles: Callable[[Any], str] | None = None, xlabel: str | None = None,
                   ylabel: str | None = None, size_in: tuple[float, float] | None = None) -> Figure:  # fmt: skip
    """One heatmap of ``value`` over ``x`` × ``y`` per value of ``panel``
    (``ncols`` per row), on shared axes and one colour scale with one colour
    bar.

    ``order``: the panels' order (default: grid order); ``log``: a
    logarithmic colour scale (ratios); ``center``: a diverging colour map
    symmetric about that value (e.g. 1 for a ratio); ``band`` (lo, hi), or a
    dict of them by panel: cells outside it outlined in red (a claim's
    tolerance; None: an open side); ``annotate``: the value written in each
    cell. Empty cells (no case, or no value) stay blank. The drawn arrays
    are ``ax.images[0].get_array()`` (rows: ``y`` ascending)."""
    import matplotlib.pyplot as plt
    import numpy as np

    xs, ys = ordered(list(data[x])), ordered(list(data[y]))
    keys = _panel_keys(data, panel, order)
    ncols = ncols or min(len(keys), 3)
    mats = [_matrix(data if k is None else data[data[panel] == k], x, y, value, xs, ys) for k in keys]
    norm = _colour_norm(mats, log, center)
    fig, axes = panel_grid(math.ceil(len(keys) / ncols), ncols, xlabel=xlabel or x, ylabel=ylabel or y, size_in=size_in,
                           panel_in=(max(1.6, 0.28 * len(xs) + 0.6), max(1.4, 0.24 * len(ys) + 0.6)))  # fmt: skip
    fontsize = plt.rcParams["font.size"] * (0.55 if max(len(xs), len(ys)) > 6 else 0.8)
    im = None
    for ax, k, z in zip(axes.flat, keys, mats, strict=False):
        im = ax.imshow(np.ma.masked_invalid(z), origin="lower", aspect="auto", norm=norm,
                       cmap="RdBu_r" if center is not None else "viridis")  # fmt: skip
        for i, j in zip(*np.nonzero(np.isfinite(z)), strict=True) if annotate else ():
            ax.text(j, i, f"{z[i, j]:.{digits}g}", ha="center", va="center", fontsize=fontsize,
                    color="k" if center is not None else "w")  # fmt: skip
        b = band.get(k) if isinstance(band, dict) else band
        if b is not None:
            _outline_outside(ax, z, b)
        ax.set_xticks(range(len(xs)), [str(v) for v in xs])
        ax.set_yticks(range(len(ys)), [str(v) for v in ys])
        if k is not None:
            ax.set_title(titles(k) if titles else str(k), fontsize="medium")
    for ax in list(axes.flat)[len(keys):]:
        ax.set_visible(False)
    if im is not None:
        fig.colorbar(im, ax=axes.ravel().tolist(), label=label or value, shrink=0.9)
    return fig


@_paper_style
def line_panels(data: pd.DataFrame, *, x: str, y: str = "value", hue: str, col: str, row: str | None = None,
                lo: str | None = None, hi: str | None = None, xlabel: str | None = None, ylabel: str | None = None,
                hue_order: Sequence[Any] | None = None, colors: dict[Any, str] | None = None,
                titles: Callable[[str, Any], str] | None = None, sharey: bool | str = True, logy: bool = False,
                shaded: Sequence[Any] | None = None, size_in: tuple[float, float] | None = None) -> Figure:  # fmt: skip
    """``y`` against ``x``, one line per ``hue``, one panel per value of
    ``col`` (and a row per value of ``row``), on shared axes (``sharey="row"``:
    y shared within each row only); with ``lo`` and ``hi`` columns, the
    interval between them shaded (e.g. p10 to p90) for the hues in
    ``shaded`` (default all; the others dashed, so a few intervals stay
    readable among many lines). The x axis is
    categorical (the grid's values, evenly spaced). The drawn values are
    ``ax.lines[i].get_ydata()``, one line per hue present, in hue order."""
    xs = ordered(list(data[x]))
    cols = ordered(list(data[col]))
    rows = ordered(list(data[row])) if row else [None]
    name = titles or (lambda key, v: f"{key} = {v}")
    fig, axes = panel_grid(len(rows), len(cols), xlabel=xlabel or x, ylabel=ylabel or y, size_in=size_in,
                           sharey=sharey, col_titles=[name(col, c) for c in cols],
                           row_titles=[name(row, r) for r in rows] if row else None)  # fmt: skip
    for i, rv in enumerate(rows):
        for j, cv in enumerate(cols):
            ax = axes[i][j]
            d = data[data[col] == cv] if row is None else data[(data[col] == cv) & (data[row] == rv)]
            for h in _panel_keys(data, hue, hue_order):
                g = d[d[hue] == h].set_index(x)
                if g.empty:
                    continue
                pos = [k for k, v in enumerate(xs) if v in g.index]
                kw: dict[str, Any] = {"color": colors[h]} if colors and h in colors else {}
                shade = bool(lo and hi) and (shaded is None or h in shaded)
                (line,) = ax.plot(pos, [g.loc[xs[k], y] for k in pos], marker="o", ms=3, label=str(h),
                                  ls="-" if shade or not (lo and hi) else "--", **kw)  # fmt: skip
                if shade:
                    ax.fill_between(pos, [g.loc[xs[k], lo] for k in pos], [g.loc[xs[k], hi] for k in pos],
                                    color=line.get_color(), alpha=0.15, lw=0)  # fmt: skip
            ax.set_xticks(range(len(xs)), [str(v) for v in xs])
            if logy:
                ax.set_yscale("log")
            ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    if handles:
        axes[0][-1].legend(handles, labels, fontsize="small")
    return fig


def grid_markdown(data: pd.DataFrame, *, x: str, y: str, value: str = "value", panel: str | None = None,
                  order: Sequence[Any] | None = None, digits: int = 3, unit: str = "") -> str:  # fmt: skip
    """The numbers of :func:`heatmap_panels` as a Markdown table: a row per
    panel and ``y`` value, a column per ``x`` value (empty: no value)."""
    xs, ys = ordered(list(data[x])), ordered(list(data[y]))
    keys = _panel_keys(data, panel, order)
    head = ([panel] if panel else []) + [f"{y} \\ {x}"] + [str(v) for v in xs]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for k in keys:
        z = _matrix(data if k is None else data[data[panel] == k], x, y, value, xs, ys)
        for i, yv in enumerate(ys):
            cells = ["" if math.isnan(v) else f"{v:.{digits}g}" for v in z[i]]
            out.append("| " + " | ".join(([str(k)] if panel else []) + [str(yv)] + cells) + " |")
    note = f"\nValues in {unit}.\n" if unit else ""
    return "\n".join(out) + "\n" + note
