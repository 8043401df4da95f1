"""A run's self-contained HTML report: the tables, PNGs embedded as base64,
the scenario inline and links to the run's data files (the page frame and
style are aqmlab.htmlpage's, shared with every other page)."""

from __future__ import annotations

import html
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aqmlab.htmlpage import data_files_in, data_links, fmt, image, page, table
from aqmlab.busiest import busiest_summary_queues
from aqmlab.scenario import atomic_write_text, dump_toml

if TYPE_CHECKING:
    from aqmlab.results import Result

__all__ = ["write_report", "render_report", "page", "table", "image", "fmt"]

def _flow_rows(r: Result) -> tuple[list[str], list[list[Any]]]:
    flows = r.summary.get("flows", [])
    headers = ["flow", "label", "cc", "ecn", "RTT (ms)", "goodput (Mbit/s)", "retransmits", "marks", "FCT (s)"]
    rows = [
        [
            f["id"],
            f.get("label"),
            f["cc"],
            f["ecn"],
            f["rtt_ms"],
            None if f["goodput_bps"] is None else f["goodput_bps"] / 1e6,
            f["retransmits"],
            f.get("marks"),
            f["fct_s"],
        ]
        for f in flows[:200]
    ]
    return headers, rows


#: Beyond this many queues the report lists the busiest (as flows, the first 200).
QUEUE_ROWS = 200


def _queue_rows(r: Result) -> tuple[list[str], list[list[Any]]]:
    headers = ["queue", "sub-queue", "aqm", "p50 (ms)", "p99 (ms)", "mean (ms)", "drop rate", "mark rate", "utilization"]
    rows = []
    for q in busiest_summary_queues(r.summary.get("queues", []), QUEUE_ROWS):
        entries = [("all", q)] + sorted(q.get("subqueues", {}).items())
        for sub, s in entries:
            soj = s.get("sojourn_ms") or {}
            rows.append(
                [
                    q["name"],
                    sub,
                    q["aqm"],
                    soj.get("p50"),
                    soj.get("p99"),
                    soj.get("mean"),
                    s.get("drop_rate"),
                    s.get("mark_rate"),
                    q.get("utilization") if sub == "all" else None,
                ]
            )
    return headers, rows


def render_report(r: Result, figures: Mapping[str, bytes | str | os.PathLike[str]],
                  page_dir: str | os.PathLike[str] | None = None) -> str:  # fmt: skip
    """The HTML text of a run's report; with ``page_dir`` (where the page
    goes), links to the data files there (summary.json, scenario.toml, the
    Parquet tables) and to the plots."""
    sc = r.summary.get("scenario", {})
    name = sc.get("name") or "scenario"
    parts = [f"<h1>{html.escape(name)}</h1>"]
    if sc.get("description"):
        parts.append(f"<p>{html.escape(sc['description'])}</p>")
    perf = r.summary.get("perf", {})
    parts.append(
        f'<p class="muted">duration {fmt(r.summary.get("duration_s"))} s, warm-up {fmt(r.summary.get("warmup_s"))} s, '
        f"seed {r.summary.get('seed')}; {fmt(perf.get('events'))} events, "
        f"{fmt(perf.get('bottleneck_packets'))} bottleneck packets in {fmt(perf.get('wall_s'))} s wall time.</p>"
    )
    fair = r.summary.get("fairness", {})
    parts.append("<h2>Fairness</h2>")
    parts.append(
        table(
            ["Jain's index", "L4S : Classic throughput ratio"],
            [[fair.get("jain"), fair.get("l4s_classic_ratio")]],
            left=0,
        )
    )
    parts.append("<h2>Flows</h2>")
    h, rows = _flow_rows(r)
    parts.append(table(h, rows, left=4))
    n = len(r.summary.get("flows", []))
    if n > 200:
        parts.append(f'<p class="muted">First 200 of {n} flows; all are in flows.parquet.</p>')
    wf = r.summary.get("workload_flows") or {}
    if wf.get("started"):
        parts.append(
            f"<p>Workload flows: {wf['started']} started, {wf['completed']} completed, "
            f"mean FCT {fmt(wf.get('mean_fct_s'))} s.</p>"
        )
    parts.append("<h2>Queues</h2>")
    h, rows = _queue_rows(r)
    parts.append(table(h, rows, left=3))
    n = len(r.summary.get("queues", []))
    if n > QUEUE_ROWS:
        parts.append(f'<p class="muted">The {QUEUE_ROWS} of {n} queues with the highest 99th-percentile sojourn; '
                     "all are in queues.parquet.</p>")  # fmt: skip
    if figures:
        parts.append("<h2>Plots</h2>")
        for fig_name, png in figures.items():
            parts.append(image(png, fig_name))
    if page_dir is not None:
        plot_files = [p for p in figures.values() if not isinstance(p, bytes)]
        parts.append(data_links(page_dir, [*data_files_in(page_dir), *plot_files], "Data files and plots"))
    parts.append("<h2>Scenario (normalised, every default filled in)</h2>")
    parts.append(f"<pre>{html.escape(dump_toml(sc))}</pre>")
    return page(f"aqmlab: {name}", "\n".join(parts))


def write_report(r: Result, path: str | os.PathLike[str], figures: Mapping[str, bytes | str | os.PathLike[str]]) -> Path:
    return atomic_write_text(path, render_report(r, figures, Path(path).parent))
