"""docs/performance.md's Summary states issue 22's targets from a committed
set of rounds against htsim (docs/perf-sets/<set>/: the raw outputs of
``scripts/htsim/compare.py``). Summarising that set again from its raw
files must give the figures, the "k of n" and the verdict the Summary
prints, so the page cannot drift from its data or judge more kindly than
the rule it states (met only if every round meets the target)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

from conftest import ROOT

DOC = ROOT / "docs" / "performance.md"

# The Summary's row of each target, by the ratio compare_summary judges it on.
ROWS = {
    "A-10-ack1 / htsim A-10": "| A-10-ack1 ≥ 2 × htsim",
    "A-100-ack1 / htsim A-100": "| A-100-ack1 ≥ 2 × htsim",
    "A-10 / htsim A-10": "| A-10 ≥ 2.5 × htsim",
    "A-10 / D": "| D's packet-hop rate within 1.5 × of A's packet rate",
    "D / D-1024": "| D-1024 within 1.3 × of D",
}


def _summary_module():
    spec = importlib.util.spec_from_file_location("compare_summary", ROOT / "scripts" / "htsim" / "compare_summary.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("compare_summary", mod)
    spec.loader.exec_module(mod)
    return mod


def _summary_section() -> str:
    text = DOC.read_text()
    return text[text.index("## Summary") : text.index("## Method")]


def _latest_set() -> Path:
    m = re.search(r"docs/perf-sets/([0-9A-Za-z._-]+)", _summary_section())
    assert m, "the Summary names the committed set its issue-22 table comes from (docs/perf-sets/...)"
    path = ROOT / "docs" / "perf-sets" / m.group(1)
    assert path.is_dir(), f"{path} is named in the Summary but not committed"
    return path


def test_summary_table_matches_its_committed_set_of_rounds():
    S = _summary_module()
    out = _latest_set()
    summary = S.summarize_dir(out, S.groups_in(out))
    rows = [line for line in _summary_section().splitlines() if line.startswith("| ")]
    by_ratio = {t["ratio"]: t for t in summary["targets"]}
    assert set(ROWS) <= set(by_ratio), f"the set lacks targets: {set(ROWS) - set(by_ratio)}"
    for ratio, prefix in ROWS.items():
        (row,) = [line for line in rows if line.startswith(prefix)]
        t, r = by_ratio[ratio], summary["ratios"][ratio]
        unit = " ×" if t["op"] == ">=" else ""
        figure = f"{r['median']:.2f}{unit} ({r['min']:.2f}–{r['max']:.2f})"
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[1] == figure, f"{prefix}: the Summary says {cells[1]!r}, the set gives {figure!r}"
        assert cells[2] == f"{t['rounds_met']} of {t['rounds']}", f"{prefix}: {cells[2]!r} against {t['status']!r}"
        assert cells[3] == ("met" if t["met"] else "not met"), f"{prefix}: verdict {cells[3]!r}, rule gives {t['status']!r}"
