"""Side by side: the headline metrics of several runs (typically one scenario
under different AQMs), their differences from the first, overlaid plots and
an HTML page. ``aqmlab compare DIR1 DIR2 ...`` and :func:`compare`.
"""

from __future__ import annotations

import html
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from aqmlab.results import Result

__all__ = ["Comparison", "compare", "METRICS"]

#: Headline metrics: (row name, unit, function of a Result). The same the
#: run summary prints, for the bottleneck queue (or the first queue).
METRICS: list[tuple[str, str]] = [
    ("total goodput", "Mbit/s"),
    ("utilisation", ""),
    ("queue delay p50", "ms"),
    ("queue delay p99", "ms"),
    ("RTT p50 (flows' srtt samples)", "ms"),
    ("RTT p99 (flows' srtt samples)", "ms"),
    ("drop rate", ""),
    ("mark rate", ""),
    ("retransmits", ""),
    ("RTOs", ""),
    ("Jain's index", ""),
]


def _queue(r: Result) -> dict[str, Any]:
    qs = r.summary.get("queues", [])
    named = [q for q in qs if q.get("name") == "bottleneck"]
    return (named or qs or [{}])[0]


def _rtt_ms(r: Result) -> Any:
    import numpy as np

    ts = r.timeseries
    if ts.empty or "srtt_ms" not in ts:
        return np.array([])
    x = ts["srtt_ms"].to_numpy(dtype=float)
    return x[np.isfinite(x) & (x > 0)]


def headline(r: Result) -> list[float | None]:
    """The :data:`METRICS` of one run, in order (None where not applicable)."""
    import numpy as np

    q = _queue(r)
    soj = q.get("sojourn_ms") or {}
    flows = r.summary.get("flows", [])
    rtt = _rtt_ms(r)

    def pct(p: float) -> float | None:
        return float(np.percentile(rtt, p)) if len(rtt) else None

    goodput = [f["goodput_bps"] for f in flows if f.get("goodput_bps") is not None]
    arrivals = q.get("arrivals") or 0
    return [
        sum(goodput) / 1e6 if goodput else None,
        q.get("utilization"),
        soj.get("p50"),
        soj.get("p99"),
        pct(50),
        pct(99),
        (q.get("drops", 0) / arrivals) if arrivals else None,
        (q.get("marks", 0) / arrivals) if arrivals else None,
        float(sum(f.get("retransmits", 0) or 0 for f in flows)),
        float(sum(f.get("rtos", 0) or 0 for f in flows)),
        (r.summary.get("fairness") or {}).get("jain"),
    ]


@dataclass
class Comparison:
    """``table``: one row per metric, one column per run, plus ``Δ <run>``
    columns (difference from the first run); ``names``: the runs' names."""

    names: list[str]
    results: list[Result]
    table: pd.DataFrame
    #: The runs' directories (None for a Result given as an object): the
    #: page links to their summaries and reports.
    dirs: list[Path | None] = field(default_factory=list)

    def __repr__(self) -> str:
        return f"<aqmlab.Comparison of {len(self.names)} runs: {', '.join(self.names)}>"

    def _repr_html_(self) -> str:
        return self.table.to_html(float_format=lambda x: f"{x:.4g}")

    def figures(self) -> dict[str, Figure]:
        """Overlaid plots: total goodput over time, queue-delay CDF, RTT CDF."""
        import matplotlib.pyplot as plt
        import numpy as np

        figs: dict[str, Figure] = {}
        fig, ax = plt.subplots(figsize=(8, 3.6), layout="constrained")
        for name, r in zip(self.names, self.results, strict=True):
            ts = r.timeseries
            if not ts.empty:
                tot = ts.groupby("t_s")["goodput_bps"].sum() / 1e6
                ax.plot(tot.index, tot.to_numpy(), label=name, lw=1.2)
        ax.set(xlabel="time (s)", ylabel="total goodput (Mbit/s)", title="Total goodput")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize="small")
        ax.grid(alpha=0.3)
        figs["goodput"] = fig

        fig, ax = plt.subplots(figsize=(8, 3.6), layout="constrained")
        for name, r in zip(self.names, self.results, strict=True):
            h = r.sojourn_hist
            qname = _queue(r).get("name")
            h = h[(h["queue"] == qname) & (h["count"] > 0)] if not h.empty else h
            if h.empty:
                continue
            g = h.groupby("hi_ms")["count"].sum().sort_index()
            c = g.to_numpy(dtype=float)
            ax.step(g.index, np.cumsum(c) / c.sum(), where="post", label=name)
        ax.set(xlabel="queue delay (ms)", ylabel="CDF", title="Queue delay at the bottleneck (all sub-queues)")
        ax.set_ylim(0, 1.02)
        ax.legend(fontsize="small")
        ax.grid(alpha=0.3)
        figs["sojourn_cdf"] = fig

        fig, ax = plt.subplots(figsize=(8, 3.6), layout="constrained")
        for name, r in zip(self.names, self.results, strict=True):
            x = np.sort(_rtt_ms(r))
            if len(x):
                ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", label=name)
        ax.set(xlabel="RTT (ms), senders' smoothed samples", ylabel="CDF", title="RTT")
        ax.set_ylim(0, 1.02)
        ax.legend(fontsize="small")
        ax.grid(alpha=0.3)
        figs["rtt_cdf"] = fig
        return figs

    def save(self, out_dir: str | os.PathLike[str]) -> dict[str, Path]:
        """``compare.csv``, ``plots/*.png`` and ``compare.html`` (each written atomically)."""
        import matplotlib.pyplot as plt

        from aqmlab.htmlpage import data_links, image, page, table
        from aqmlab.plots import png_bytes
        from aqmlab.scenario import atomic_write_bytes, atomic_write_text

        out = Path(out_dir)
        files = {"csv": atomic_write_text(out / "compare.csv", self.table.to_csv())}
        parts = [f"<h1>Comparison of {len(self.names)} runs</h1>"]
        rows = [[idx, *row] for idx, row in zip(self.table.index, self.table.itertuples(index=False), strict=True)]
        parts.append(table(["metric", *self.table.columns], rows))
        parts.append("<h2>Plots</h2>")
        for name, fig in self.figures().items():
            try:
                png = png_bytes(fig)
            finally:
                plt.close(fig)
            files[name] = atomic_write_bytes(out / "plots" / f"{name}.png", png)
            parts.append(image(png, name))
        parts.append(data_links(out, list(files.values())))  # compare.csv and the plots
        parts.append(self._runs_html(out))
        files["html"] = atomic_write_text(out / "compare.html", page("aqmlab compare", "\n".join(parts)))
        return files

    def _runs_html(self, out: Path) -> str:
        """The runs compared, each with links to its files when it came from a directory."""
        from aqmlab.htmlpage import link

        items = []
        for i, name in enumerate(self.names):
            d = self.dirs[i] if i < len(self.dirs) else None
            links = [link(out, d / f, f) for f in ("summary.json", "report.html") if d is not None and (d / f).is_file()]
            items.append(f"<li>{html.escape(name)}" + (": " + ", ".join(links) if links else "") + "</li>")
        return "<h2>Runs</h2><ul class=\"files\">" + "".join(items) + "</ul>"


def _name_of(r: Result, fallback: str) -> str:
    s = r.summary.get("scenario", {})
    aqm = (s.get("bottleneck") or {}).get("aqm")
    return f"{fallback} ({aqm})" if aqm and aqm not in fallback else fallback


def compare(*runs: Result | str | os.PathLike[str], names: Sequence[str] | None = None,
            out: str | os.PathLike[str] | None = None) -> Comparison:  # fmt: skip
    """Compare runs given as :class:`Result` objects or directories written
    by ``aqmlab run``/``Result.save``. With ``out``, write the table, plots
    and HTML there."""
    import pandas as pd

    from aqmlab.results import Result
    from aqmlab.scenario import ScenarioError

    if len(runs) < 2:
        raise ScenarioError(f"compare needs at least two runs, got {len(runs)}")
    results, labels, dirs = [], [], []
    for i, r in enumerate(runs):
        if isinstance(r, Result):
            results.append(r)
            dirs.append(None)
            labels.append(str(r.summary.get("scenario", {}).get("name") or f"run {i + 1}"))
            continue
        d = Path(r)
        if not (d / "summary.json").is_file():
            raise ScenarioError(f"{d}: no summary.json here (give directories written by aqmlab run)")
        results.append(Result.load(d))
        dirs.append(d)
        labels.append(d.name or str(d))
    if names is not None:
        if len(names) != len(results):
            raise ScenarioError(f"names: {len(names)} given for {len(results)} runs")
        labels = list(names)
    else:
        labels = [_name_of(r, lab) for r, lab in zip(results, labels, strict=True)]
    seen: dict[str, int] = {}
    for i, lab in enumerate(labels):  # unique column names
        seen[lab] = seen.get(lab, 0) + 1
        if seen[lab] > 1:
            labels[i] = f"{lab} #{seen[lab]}"
    index = [f"{m} ({u})" if u else m for m, u in METRICS]
    cols = {lab: headline(r) for lab, r in zip(labels, results, strict=True)}
    df = pd.DataFrame(cols, index=index, dtype=float)
    base = df[labels[0]]
    for lab in labels[1:]:
        df[f"Δ {lab}"] = df[lab] - base
    cmp = Comparison(labels, results, df, dirs)
    if out is not None:
        cmp.save(out)
    return cmp
