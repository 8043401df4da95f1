"""Multi-panel figures on shared axes (aqmlab.panels) for the reproduction
grids: the numbers each panel draws are the per-case numbers (and those of
the table beside the figure), at a paper size and in every format."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from aqmlab.reproduce import EXPERIMENTS  # noqa: E402
from aqmlab.reproduce.framework import Runs, reproduce  # noqa: E402
from conftest import cli  # noqa: E402


def synthetic_dualq() -> tuple[Any, Runs, dict[str, Any]]:
    """Every case of the full 10 x 10 grids with made-up summaries: a ratio
    and an L4S p99 that depend on the pairing and the mix, so any mix-up of
    panels, rows or columns shows."""
    from aqmlab.reproduce.dualq import RUNS, _pairing

    exp = EXPERIMENTS["dualq-coexistence"]
    idx = {_pairing(a, c): i for i, (a, c) in enumerate(RUNS)}
    truth: dict[str, Any] = {"ratio": {}, "p99": {}}
    by_label = {}
    for case in exp.cases(False):
        t = case.tags
        if "n_l4s" not in t:
            continue
        k = _pairing(t["aqm"], t["l4s_cc"])
        ratio = 0.2 * (1 + 3 * idx[k]) * t["n_l4s"] / t["n_classic"]
        p99 = 0.25 * t["n_l4s"] + 0.05 * t["n_classic"] + idx[k]
        truth["ratio"][(k, t["n_l4s"], t["n_classic"])] = ratio
        truth["p99"][(k, t["n_l4s"], t["n_classic"])] = p99
        sub = {"sojourn_ms": {"p50": p99 / 2, "p99": p99}, "marks": 0}
        by_label[case.label] = [{"fairness": {"l4s_classic_ratio": ratio},
                                 "queues": [{"name": "bottleneck", "subqueues": {"l4s": sub, "classic": sub}}]}]  # fmt: skip
    return exp, Runs(exp.cases(False), by_label, {k: [1] for k in by_label}), truth


def image_axes(fig: Any) -> list[Any]:
    return [ax for ax in fig.axes if ax.images]


def test_dualq_ratio_grid_panels_are_the_per_case_numbers_on_shared_axes() -> None:
    from aqmlab.reproduce.dualq import EQUAL, RUNS, UNEQUAL, _pairing

    exp, runs, truth = synthetic_dualq()
    figs = exp.figures(runs)
    try:
        fig = figs["ratio-grid"]
        axes = image_axes(fig)
        order = [_pairing(a, c) for a, c in RUNS]
        assert [ax.get_title() for ax in axes] == order  # one panel per pairing, in the claims' order
        for ax, k in zip(axes, order, strict=True):
            z = np.ma.filled(ax.images[0].get_array(), np.nan)
            want = np.array([[truth["ratio"][(k, nl, nc)] for nc in range(1, 11)] for nl in range(1, 11)])
            np.testing.assert_allclose(z, want)  # rows: L4S flows 1..10 up; columns: Classic flows 1..10
            # Shared axes and one colour scale: panels can be read against each other.
            assert axes[0].get_shared_x_axes().joined(axes[0], ax) and axes[0].get_shared_y_axes().joined(axes[0], ax)
            assert ax.images[0].norm.vmin == axes[0].images[0].norm.vmin and ax.images[0].norm.vmax == axes[0].images[0].norm.vmax
            # Cells outside the claim's band are outlined, and only those.
            band = UNEQUAL if k in ("red", "pie") else EQUAL
            outside = sum(not band.contains(v) for v in want.ravel())
            assert len([p for p in ax.patches if p.get_edgecolor()[:3] == (1.0, 0.0, 0.0)]) == outside
        assert sum(1 for ax in fig.axes if not ax.images and ax.get_visible()) == 1  # one colour bar for all panels
        p99 = image_axes(figs["l4s-p99-grid"])
        assert [ax.get_title() for ax in p99] == ["curvy_red", "dualpi2", "dualpi2 + prague"]
    finally:
        for f in figs.values():
            plt.close(f)
    # The table beside the figure carries the same numbers.
    md = exp.tables(runs)["ratio-grid"]
    for (k, nl, nc), v in truth["ratio"].items():
        row = next(r for r in md.splitlines() if r.startswith(f"| {k} | {nl} |"))
        assert float(row.strip("|").split("|")[2 + nc - 1]) == pytest.approx(v, rel=5e-3)


def test_aqm_kids_targets_by_loads_grid_draws_the_per_case_rtt() -> None:
    from aqmlab.reproduce.aqm_kids import AQMS, ROW_ORDER

    exp = EXPERIMENTS["aqm-kids"]
    cases = exp.cases(True)
    by_label, truth = {}, {}
    for c in cases:
        t = c.tags
        if "rtt_ms" not in t:
            continue
        med = 3.0 * t["target_ms"] ** 0.5 + t["flows"] / 8 + ROW_ORDER.index(t["aqm"])
        truth[(t["aqm"], t["target_ms"], t["flows"], t["rtt_ms"], t["ecn"])] = t["rtt_ms"] + med
        by_label[c.label] = [{"queues": [{"name": "bottleneck", "sojourn_ms": {"p10": med / 2, "p50": med, "p90": 2 * med}}],
                              "flows": [{"rtt_ms": t["rtt_ms"]}]}]  # fmt: skip
    runs = Runs(cases, by_label, {k: [1] for k in by_label})
    fig = exp.rtt_grid(runs, {})
    try:
        grid = np.array(fig.axes).reshape(2, 3)  # base RTT 100, 500 ms x loads 1, 4, 64 (quick)
        for i, rtt in enumerate((100, 500)):
            for j, n in enumerate((1, 4, 64)):
                ax = grid[i][j]
                lines = [ln for ln in ax.lines if ln.get_label() in AQMS]
                assert [ln.get_label() for ln in lines] == list(AQMS)
                for ln in lines:
                    want = [truth[(ln.get_label(), t, n, rtt, False)] for t in (5, 30)]
                    assert list(ln.get_ydata()) == pytest.approx(want)
        assert grid[0][0].get_shared_y_axes().joined(grid[0][0], grid[0][2])  # y shared along a base RTT
        assert not grid[0][0].get_shared_y_axes().joined(grid[0][0], grid[1][0])  # not across them
        assert grid[0][0].get_shared_x_axes().joined(grid[0][0], grid[1][2])
        assert [t.get_text() for t in grid[1][0].get_xticklabels()] == ["5", "30"]
    finally:
        plt.close(fig)


def test_panels_at_paper_size_in_every_format() -> None:
    import pandas as pd
    from aqmlab.panels import heatmap_panels
    from aqmlab.plots import PAPER_RC, figure_bytes

    df = pd.DataFrame([{"p": p, "x": x, "y": y, "value": 10 * p + x - y} for p in (1, 2) for x in (1, 2, 3) for y in (1, 2)])
    fig = heatmap_panels(df, x="x", y="y", panel="p", size_in=(3.5, 2.0))
    try:
        assert tuple(fig.get_size_inches()) == pytest.approx((3.5, 2.0))
        assert fig.axes[0].title.get_fontsize() == pytest.approx(PAPER_RC["axes.titlesize"])
        png = figure_bytes(fig, "png", dpi=100)
        from PIL import Image
        import io

        assert Image.open(io.BytesIO(png)).size == (350, 200)
        assert figure_bytes(fig, "pdf").startswith(b"%PDF") and b"<svg" in figure_bytes(fig, "svg")
        z = [np.ma.filled(ax.images[0].get_array(), np.nan) for ax in image_axes(fig)]
        np.testing.assert_allclose(z[1] - z[0], 10.0)  # panel 2 is panel 1 plus 10 everywhere
        np.testing.assert_allclose(z[0][:, 2] - z[0][:, 0], 2.0)  # x across, y up
    finally:
        plt.close(fig)


def test_reproduce_writes_figures_at_paper_size_and_checks_the_options(tmp_path: Path) -> None:
    from test_browser import PageToy

    reproduce(PageToy(), quick=True, out=tmp_path / "o", jobs=1, cache_dir=tmp_path / "c", plot_formats=("pdf", "svg"),
              plot_size_in=(3.5, 2.5), plot_dpi=100)  # fmt: skip
    plots = tmp_path / "o" / "plots"
    from PIL import Image

    assert Image.open(plots / "p99-grid.png").size == (350, 250)
    pdf = (plots / "p99-grid.pdf").read_bytes()
    assert re.search(rb"/MediaBox \[ ?0 0 252 180 ?\]", pdf)  # 3.5 x 2.5 in = 252 x 180 pt
    assert b'width="252pt"' in (plots / "p99-grid.svg").read_bytes()
    again = reproduce(PageToy(), quick=True, out=tmp_path / "o", jobs=1, cache_dir=tmp_path / "c")
    assert again.counts["ran"] <= 1 and not (plots / "p99-grid.pdf").exists()  # no stale copy of another run
    for bad, what in ((["--size", "3x"], "--size"), (["--format", "gif"], "--format"), (["--dpi", "5"], "--dpi")):
        proc = cli("reproduce", "abe", "--quick", "--out", str(tmp_path / "x"), "--cache", str(tmp_path / "c"), *bad)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and what in proc.stderr, proc.stderr
        assert not (tmp_path / "x").exists()  # refused before any run
