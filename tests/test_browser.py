"""The HTML pages (a run's report.html, compare.html, a sweep's
sweep_report.html, a reproduction's and the model validation's report.html)
in a real browser: Debian's
chromium, headless, at a 390 px phone width and a 1440 px desktop width.

Each page must load without console errors or failed loads, lay out at the
phone's own width (the viewport meta in effect) without sideways overflow
(wide tables scroll inside their box), show every figure (the screenshot has
drawn pixels where each image sits), link to data files that exist, and show
names with HTML in them as text. Skips, saying why, when no chromium is
installed (.ci/run installs it where apt-get works).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import aqmlab
import pytest
from aqmlab import htmlpage
from aqmlab.judging import Band, Tolerance
from aqmlab.reproduce.framework import Case, Claim, Experiment, Runs, reproduce
from chromium import Chromium, PageView, find_chromium
from conftest import tiny

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine (Debian: apt-get install "
                                "chromium; .ci/run installs it when apt-get is available)")  # fmt: skip

#: The widths checked: a phone (iPhone 12-15 class, CSS pixels) and a desktop.
PHONE_W, DESKTOP_W = 390, 1440

#: A name that breaks a page that does not escape it (and a long word to wrap).
NASTY = 'A&B <script>console.error("not escaped")</script> "q" ' + "x" * 80


class PageToy(Experiment):
    """A 2 × 2 grid (step threshold × base RTT) so the page has a verdict grid
    and a multi-panel figure, named with HTML in it."""

    name = "page-toy"
    title = NASTY
    source = "tests/test_browser.py"
    description = "DCTCP through a step marker: threshold 3 or 20 packets, base RTT 5 or 20 ms."
    requires_aqm = ("step",)
    requires_cc = ("dctcp",)

    def cases(self, quick: bool) -> list[Case]:
        def sc(k: int, rtt: int) -> dict[str, Any]:
            return {"duration": "1500ms", "warmup": "500ms",
                    "bottleneck": {"rate": "10Mbps", "aqm": "step", "buffer": "50ms", "params": {"threshold": f"{k}pkt"}},
                    "flows": [{"cc": "dctcp", "rtt": f"{rtt}ms", "count": 2, "start_jitter": "10ms"}]}  # fmt: skip

        return [Case(f"k{k}-rtt{rtt}", sc(k, rtt), {"k": k, "rtt_ms": rtt}) for k in (3, 20) for rtt in (5, 20)]

    def seeds(self, quick: bool) -> list[int]:
        return [1]

    def showcase(self, quick: bool) -> list[str]:
        return ["k3-rtt5"]

    def claims(self) -> list[Claim]:
        p99 = lambda s: s["queues"][0]["sojourn_ms"]["p99"]  # noqa: E731
        return [Claim("queue delay p99 below 5 ms", "< 5 ms", Tolerance(Band.at_most(5), "theory", "this test"),
                      lambda r: r.per_case(p99), "ms")]  # fmt: skip

    def figures(self, runs: Runs) -> dict[str, Any]:
        from aqmlab.panels import heatmap_panels

        df = runs.frame(lambda s: s["queues"][0]["sojourn_ms"]["p99"], "k", "rtt_ms")
        return {"p99-grid": heatmap_panels(df, x="rtt_ms", y="k", label="p99 (ms)", band=(None, 5.0))}


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, list[str]]]:
    """Each page, with the data files it must link to."""
    d = tmp_path_factory.mktemp("pages")
    for aqm in ("fifo", "codel"):
        aqmlab.run(tiny(name=NASTY if aqm == "fifo" else "plain", duration="2s",
                        bottleneck={"rate": "10Mbps", "buffer": "30ms", "aqm": aqm})).save(d / aqm)  # fmt: skip
    aqmlab.compare(d / "fifo", d / "codel", out=d / "cmp")
    from aqmlab.sweep import SweepSpec, sweep
    from aqmlab.sweep_report import write_sweep_report

    grid = {"bottleneck.buffer": ["20ms", "60ms"], "flows[0].count": [1, 2]}
    sweep(SweepSpec(base=tiny(duration="1s", warmup="200ms"), grid=grid, seeds=[1, 2], name=NASTY), jobs=1,
          cache_dir=d / "cache", out=d / "sweep")  # fmt: skip
    write_sweep_report(d / "sweep")
    reproduce(PageToy(), quick=True, out=d / "repro", jobs=1, cache_dir=d / "cache")
    validation_report(d / "validation")
    return {
        "run": (d / "fifo" / "report.html", ["summary.json", "scenario.toml", "flows.parquet", "queues.parquet"]),
        "compare": (d / "cmp" / "compare.html", ["compare.csv", "../fifo/summary.json", "../codel/report.html"]),
        "sweep": (d / "sweep" / "sweep_report.html", ["runs.parquet", "stats.parquet", "sweep.json"]),
        "reproduction": (d / "repro" / "report.html", ["claims.json", "runs.parquet", "plots/p99-grid.png"]),
        "validation": (d / "validation" / "report.html", ["validation.json", "validation.md"]),
    }


def validation_report(out: Path) -> None:
    """`aqmlab validation`'s page, from one made-up judgement of a real row
    (the suite itself takes minutes)."""
    from aqmlab.judging import judge
    from aqmlab.validation import suite
    from aqmlab.validation.report import Report

    row = suite.ROWS["reno-sqrt"]
    j = judge(row.claim, Tolerance(Band.between(0.8, 1.2), "theory", "docs/validation.md#reno-sqrt"),
              [({"loss": 0.001, "rtt_ms": 20}, 1.02), ({"loss": 0.01, "rtt_ms": 20}, 1.5)], unit="×")  # fmt: skip
    Report(quick=True, rows=[("laws", j)], commit="0123abcd", version="test").write(out)


@pytest.fixture(scope="module")
def browser() -> Any:
    assert CHROMIUM is not None
    with Chromium(CHROMIUM) as b:
        yield b


def drawn_fraction(png: bytes, box: tuple[float, float, float, float]) -> float:
    """Share of the pixels in ``box`` (x, y, w, h) of the screenshot that are not near-white."""
    import numpy as np
    from PIL import Image

    img = np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=float)
    x, y, w, h = (int(round(v)) for v in box)
    crop = img[max(y, 0) : y + h, max(x, 0) : x + w]
    return float((crop < 200).mean()) if crop.size else 0.0


def check_view(v: PageView, page: Path, links: list[str]) -> None:
    info = v.info
    assert not v.errors, f"{page.name} at {v.width} px: {v.errors}"
    assert info["viewport_meta"], f"{page.name}: no viewport meta"
    # Nothing sticks out (a phone would zoom the whole page out to show it),
    # and the layout is the device's own width (without the viewport meta a
    # phone lays a page out 980 px wide and shrinks everything).
    assert info["scroll_w"] <= v.width and not info["too_wide"], (
        f"{page.name} overflows at {v.width} px (laid out {info['scroll_w']} px wide): {info['too_wide']}")
    assert info["inner_w"] == v.width, f"{page.name}: laid out at {info['inner_w']} px on a {v.width} px screen"
    assert info["tables"] and all(t["in_scroll_box"] and t["box_w"] <= v.width for t in info["tables"])
    assert info["images"], f"{page.name}: no figure"
    for im in info["images"]:
        assert im["complete"] and im["natural_w"] > 0, im["alt"]
        assert im["w"] <= v.width and im["w"] > 0.5 * min(v.width, im["natural_w"]) - 40, im  # shrunk to fit, not away
        assert drawn_fraction(v.screenshot_png, (im["x"], im["y"], im["w"], im["h"])) > 0.01, f"blank: {im['alt']}"
    local = {Path(unquote(urlparse(u).path)) for u in info["links"] if u.startswith("file:")}
    missing = [u for u in local if not u.exists()]
    assert not missing, f"{page.name} links to missing files: {missing}"
    for rel in links:
        assert (page.parent / rel).resolve() in {p.resolve() for p in local}, f"{page.name} lacks a link to {rel}"


@pytest.mark.parametrize("kind", ["run", "compare", "sweep", "reproduction", "validation"])
@pytest.mark.parametrize("width", [PHONE_W, DESKTOP_W])
def test_page_in_chromium(kind: str, width: int, pages: dict[str, tuple[Path, list[str]]], browser: Any) -> None:
    page, links = pages[kind]
    v = browser.view(page, width)
    check_view(v, page, links)
    if kind in ("run", "sweep", "reproduction"):  # shown as text, never run as markup
        assert v.info["h1"] == {"run": NASTY, "sweep": f"Sweep {NASTY}", "reproduction": NASTY}[kind]
        assert "<script>" not in page.read_text()


def test_the_checks_catch_a_broken_page(tmp_path: Path, browser: Any) -> None:
    """The same checks on a page without the viewport meta, with a too wide
    element, a console error and a missing image: each is reported."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><head><title>bad</title></head><body><div style="width:900px">wide</div>'
                   '<img alt="gone" src="gone.png"><script>console.error("boom")</script></body></html>')  # fmt: skip
    v = browser.view(bad, PHONE_W)
    assert any("boom" in e for e in v.errors) and any("gone.png" in e for e in v.errors)
    assert not v.info["viewport_meta"] and v.info["inner_w"] != PHONE_W
    with pytest.raises(AssertionError):
        check_view(v, bad, [])
    good = tmp_path / "good.html"
    good.write_text(htmlpage.page("ok", '<div style="width:900px">wide</div>'))
    v = browser.view(good, PHONE_W)  # a phone zooms out to show the overflow: the layout is wider than the screen
    assert v.info["viewport_meta"] and not v.errors and v.info["too_wide"] == ["div"]
    with pytest.raises(AssertionError, match="overflows"):
        check_view(v, good, [])
