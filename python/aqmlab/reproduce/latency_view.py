"""Latency under load as a shown (never judged) view of a reproduction.

An experiment names cases in :meth:`Experiment.probe_views`; each is run
once more (first seed) with two latency probes added (``cc = "probe"``,
every 10 ms: one ECT(1), one Not-ECT, at the first flow group's path), so
the report shows the RTT a new small flow sees in each class, as Flent's
RRUL test shows ping under load. The judged runs are untouched: the probes
would add traffic and change the cache keys of the cases the claims are
judged on.
"""

from __future__ import annotations

import copy
import html
from pathlib import Path
from typing import Any

__all__ = ["with_probes", "run_probe_views", "probe_view_html"]

#: The probes' interval (the probe's default, docs/scenario.md).
PROBE_INTERVAL = "10ms"


def with_probes(scenario: dict[str, Any]) -> dict[str, Any]:
    """``scenario`` with an ECT(1) and a Not-ECT latency probe on the path of
    its first flow group."""
    s = copy.deepcopy(scenario)
    first = s["flows"][0]
    where = {k: first[k] for k in ("rtt", "src", "dst") if k in first}
    s["flows"] += [{"cc": "probe", "label": f"probe-{name}", "ecn": ecn, "params": {"interval": PROBE_INTERVAL}, **where}
                   for name, ecn in (("l4s", "l4s"), ("classic", "off"))]  # fmt: skip
    s["name"] = f"{s.get('name', 'case')}+probes"
    return s


def run_probe_views(cases: list[Any], labels: list[str], seed: int) -> dict[str, Any]:
    """Run each labelled case with probes added: label -> Result."""
    from aqmlab.results import run as run_one

    by_label = {c.label: c for c in cases}
    return {label: run_one(with_probes(by_label[label].scenario), seed=seed) for label in labels if label in by_label}


def probe_view_html(out: Path, views: dict[str, Any], slug: Any) -> str:
    """Save each view's full result under ``cases/<slug>-probes/`` and return
    the report section: per view, the probes' RTT statistics and a link."""
    from aqmlab.latency import probe_summary
    from aqmlab.report import table

    if not views:
        return ""
    parts = ["<h2>Latency under load (probes added; shown, not judged)</h2>",
             "<p class=\"muted\">Each case below ran once more with two latency probes (every "
             f"{PROBE_INTERVAL}: ECT(1) and Not-ECT) beside its flows; RTT of their replies after warm-up, ms.</p>"]  # fmt: skip
    for label, r in views.items():
        d = f"{slug(label)}-probes"
        r.save(out / "cases" / d)
        ps = probe_summary(r)
        rows = [[row["label"], row["ecn"], *(f"{row[k]:.3g}" if row[k] is not None else "" for k in
                 ("min_ms", "p50_ms", "p90_ms", "p99_ms", "max_ms")), str(row["samples"])] for _, row in ps.iterrows()]  # fmt: skip
        parts.append(f'<h3><a href="cases/{d}/report.html">{html.escape(label)}</a></h3>')
        parts.append(table(["probe", "ecn", "min", "p50", "p90", "p99", "max", "samples"], rows, left=2))
    return "\n".join(parts)
