"""docs/performance.md's Summary judges issue 22's targets on committed sets
of rounds against htsim (docs/perf-sets/<set>/: the raw outputs of
``scripts/htsim/compare.py``), pooling every round of the sets it names.
Summarising those sets again from their raw files must give the figures,
the "k of n", the verdict and each set's median that the Summary prints,
so the page cannot drift from its data or judge more kindly than the rule
it states (met only if every round of every set meets the target)."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

from conftest import ROOT, load_script

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
    # compare.py imports it by this name: the module test_htsim_compare loads too.
    return load_script(ROOT / "scripts" / "htsim" / "compare_summary.py", "compare_summary")


def _summary_section() -> str:
    text = DOC.read_text()
    return text[text.index("## Summary") : text.index("## Method")]


def _sets() -> list[Path]:
    names = sorted(set(re.findall(r"docs/perf-sets/([0-9]{4}-[0-9]{2}-[0-9]{2}-[0-9]{4})", _summary_section())))
    assert names, "the Summary names the committed sets its issue-22 table comes from (docs/perf-sets/...)"
    paths = [ROOT / "docs" / "perf-sets" / n for n in names]
    missing = [p for p in paths if not p.is_dir()]
    assert not missing, f"named in the Summary but not committed: {missing}"
    return paths


def test_summary_table_matches_its_committed_sets_of_rounds():
    S = _summary_module()
    # What `compare.py --summarize SET SET ...` prints: the script's own pooling and rule.
    pooled = S.summarize_dirs(_sets())
    rows = [line for line in _summary_section().splitlines() if line.startswith("| ")]
    for ratio, prefix in ROWS.items():
        (row,) = [line for line in rows if line.startswith(prefix)]
        (judged,) = [t for t in pooled["targets"] if t["ratio"] == ratio]
        per_round, k, n = judged["per_round"], judged["rounds_met"], judged["rounds"]
        unit = " ×" if judged["op"] == ">=" else ""
        figure = f"{statistics.median(per_round):.2f}{unit} ({min(per_round):.2f}–{max(per_round):.2f})"
        medians = ", ".join(f"{one['ratio_medians'][ratio]:.2f}" for one in pooled["sets"])
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[1] == figure, f"{prefix}: the Summary says {cells[1]!r}, the sets give {figure!r}"
        assert cells[2] == f"{k} of {n}", f"{prefix}: {cells[2]!r}, the sets give {k} of {n}"
        assert cells[3] == ("met" if judged["met"] else "not met"), f"{prefix}: verdict {cells[3]!r}, {judged['status']}"
        assert cells[4] == medians, f"{prefix}: the sets' medians are {medians!r}, the Summary says {cells[4]!r}"


def test_the_fat_trees_with_other_aqms_are_d_with_only_the_discipline_changed() -> None:
    """The benchmarks on request (``bench.ON_REQUEST``): the trees
    docs/performance.md measures the other disciplines' pass-through on
    (stop 46). Each must be a valid scenario and be bench scenario D's tree
    and traffic (at 10 ms, its instruction-count length) with only the
    discipline, its parameters and the name changed (and for VDQ-CSAQM,
    Prague flows with a packet-value marker, which it needs), so that the
    figures compare like with like."""
    import aqmlab

    bench = load_script(ROOT / "python" / "aqmlab" / "bench.py", "_bench_for_perf_docs")
    assert set(bench.ON_REQUEST) == {"D-dualpi2", "D-curvy_red", "D-vdq_csaqm", "D-pie", "D-red", "D-pi2"}
    assert not set(bench.ON_REQUEST) & set(bench.SCENARIOS), "the default set runs none of them"
    for name in bench.ON_REQUEST:
        tree = bench.scenario(name, "10ms")
        aqmlab.validate(tree)
        d = bench.scenario("D", "10ms")
        assert tree["topology"]["fat_tree"]["aqm"] == name.removeprefix("D-"), name
        for t in (tree, d):
            t["topology"]["fat_tree"].pop("aqm"), t["topology"]["fat_tree"].pop("params"), t.pop("name")
        if name == "D-vdq_csaqm":
            assert tree["flows"][0].pop("marker") == {} and tree["flows"][0]["cc"] == "prague"
            tree["flows"][0]["cc"] = "dctcp"
        assert tree == d, name
