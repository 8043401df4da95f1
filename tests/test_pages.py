"""The shared HTML parts (aqmlab.htmlpage) without a browser: escaping,
tables in scrolling boxes, links to data files that exist, and the sweep
plot's error bars when a mean lies outside its clipped interval.
tests/test_browser.py checks the whole pages in chromium."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest
from aqmlab.htmlpage import data_files_in, data_links, link, page, table


def test_page_has_the_viewport_meta_and_escapes_its_title() -> None:
    text = page('<b>"x"</b>', "<p>body</p>")
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in text
    assert "<title>&lt;b&gt;&quot;x&quot;&lt;/b&gt;</title>" in text and "<p>body</p>" in text


def test_table_is_in_a_scrolling_box_and_escapes_all_but_raw_columns() -> None:
    t = table(["name <h>", "n"], [["<script>", 1234567.0], ["ok", float("nan")]], raw_cols=())
    assert t.startswith('<div class="scroll"><table>') and t.endswith("</table></div>")
    assert "&lt;script&gt;" in t and "<script>" not in t and "&lt;h&gt;" in t
    assert "1,234,567" in t and "–" in t  # numbers shortened, NaN as a dash
    raw = table(["v"], [['<span class="pass">PASS</span>']], left=0, raw_cols=(0,))
    assert '<span class="pass">PASS</span>' in raw


def test_data_links_list_existing_files_with_relative_quoted_hrefs(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text("{}")
    (tmp_path / "odd name #1 <x>.csv").write_text("a\n")
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "t.md").write_text("| a |\n")
    (tmp_path / "report.html").write_text("")  # not data
    files = data_files_in(tmp_path, "tables")
    assert [p.name for p in files] == ["odd name #1 <x>.csv", "summary.json", "t.md"]
    # A capture and a Flent export are data too (aqmlab.capture, aqmlab.export).
    (tmp_path / "capture.pcap").write_bytes(b"")
    (tmp_path / "run.flent.gz").write_bytes(b"")
    assert {"capture.pcap", "run.flent.gz"} <= {p.name for p in data_files_in(tmp_path)}
    for extra in ("capture.pcap", "run.flent.gz"):
        (tmp_path / extra).unlink()
    html = data_links(tmp_path, [*files, tmp_path / "missing.parquet"])
    hrefs = re.findall(r'href="([^"]+)"', html)
    assert [unquote(h.replace("&amp;", "&")) for h in hrefs] == ["odd name #1 <x>.csv", "summary.json", "tables/t.md"]
    assert "%23" in hrefs[0] and "<x>" not in html  # '#' would cut the URL; '<' must not open a tag
    assert "missing" not in html and data_links(tmp_path, [tmp_path / "nope.csv"]) == ""
    other = tmp_path / "runs" / "a"
    other.mkdir(parents=True)
    (other / "summary.json").write_text("{}")
    assert link(tmp_path / "cmp", other / "summary.json", "s") == '<a href="../runs/a/summary.json">s</a>'


def test_sweep_plot_draws_a_mean_just_outside_its_clipped_interval() -> None:
    """Jain's index of exactly 1 in one seed: the logit interval, clipped
    inside (0, 1), ends just below the mean. The plot draws it (no negative
    error bar) and the point is the mean."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd
    from aqmlab.sweep_report import plot_metric

    stats = pd.DataFrame([{"metric": "fairness.jain", "k": k, "n": 3, "n_distinct": 2, "mean": m, "ci95_lo": lo,
                           "ci95_hi": hi} for k, m, lo, hi in ((1, 1.0, 0.999999, 0.999999), (2, 0.9, 0.8, 0.95))])  # fmt: skip
    fig = plot_metric(stats, "fairness.jain", "k")
    try:
        line = fig.axes[0].lines[0]
        assert list(line.get_ydata()) == pytest.approx([1.0, 0.9])
    finally:
        plt.close(fig)
