"""Running the suite and reporting it: JSON, Markdown, HTML with plots."""

from __future__ import annotations

import base64
import html
import io
import json
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aqmlab.judging import Judgement, Verdict
from aqmlab.validation import suite
from aqmlab.validation.suite import Progress

__all__ = ["Report", "run_suite", "commit_of_tree"]


def commit_of_tree() -> str:
    """The git commit of the source tree aqmlab runs from ("+dirty" when it
    has uncommitted changes); "unknown" outside a checkout."""
    here = Path(__file__).resolve().parent
    try:
        sha = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=here, capture_output=True, text=True,
                             check=True, timeout=10).stdout.strip()  # fmt: skip
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here, capture_output=True,
                               text=True, check=True, timeout=10).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return sha + ("+dirty" if dirty else "")


@dataclass
class Report:
    quick: bool
    rows: list[tuple[str, Judgement]] = field(default_factory=list)  # (group, judgement)
    skipped_groups: list[str] = field(default_factory=list)
    #: What quick mode leaves out, per group (each group's SKIPPED_IN_QUICK).
    skipped_in_quick: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    commit: str = "unknown"
    version: str = ""

    @property
    def failed(self) -> list[Judgement]:
        return [j for _, j in self.rows if j.verdict is Verdict.FAIL]

    def row_of(self, j: Judgement) -> suite.Row | None:
        return next((r for r in suite.ROWS.values() if r.claim == j.claim), None)

    def as_dict(self) -> dict[str, Any]:
        rows = []
        for group, j in self.rows:
            r = self.row_of(j)
            d = j.as_dict()
            d.update({"group": group, "id": r.id if r else None, "reference": r.reference if r else None,
                      "figure": r.figure if r else None})  # fmt: skip
            rows.append(d)
        return {
            "schema": "aqmlab.validation/1",
            "quick": self.quick,
            "commit": self.commit,
            "version": self.version,
            "wall_s": self.wall_s,
            "skipped_groups": self.skipped_groups,
            "skipped_in_quick": self.skipped_in_quick,
            "verdicts": {v.value: sum(j.verdict is v for _, j in self.rows) for v in Verdict},
            "rows": rows,
        }

    # --- tables ---------------------------------------------------------------

    def table_rows(self) -> list[dict[str, str]]:
        """One dict per row: what the terminal, Markdown and HTML tables show."""
        out = []
        for group, j in self.rows:
            r = self.row_of(j)
            w = j.worst
            measured = "–" if w is None or w.measured is None else f"{w.measured:.3g} ({w.label})"
            out.append({
                "group": group, "row": r.id if r else j.claim, "claim": j.claim,
                "reference": r.reference if r else "", "figure": r.figure if r else "", "measured": measured,
                "band": j.tolerance.band.describe(j.unit), "source": j.tolerance.source, "verdict": j.verdict.value,
                "k of n": f"{j.passed} of {j.total}",
            })  # fmt: skip
        return out

    def markdown(self) -> str:
        head = ["row", "reference", "judged figure", "worst case (measured)", "band", "verdict", "k of n"]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for t in self.table_rows():
            cells = [f"[{t['row']}](#{t['row']})", t["reference"], t["figure"], t["measured"], t["band"], f"**{t['verdict']}**", t["k of n"]]
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        mode = "quick" if self.quick else "full"
        lines += ["", f"{mode} suite, commit `{self.commit}`, aqmlab {self.version}, {self.wall_s:.0f} s wall."]
        if self.skipped_groups:
            lines.append(f"Groups not in this build: {', '.join(self.skipped_groups)}.")
        for note in self.skipped_in_quick:
            lines.append(f"Quick mode skips, {note}.")
        return "\n".join(lines) + "\n"

    # --- files ----------------------------------------------------------------

    def write(self, out: str | Path) -> dict[str, Path]:
        from aqmlab.scenario import atomic_write_text

        d = Path(out)
        d.mkdir(parents=True, exist_ok=True)
        files = {"json": d / "validation.json", "html": d / "report.html", "markdown": d / "validation.md"}
        atomic_write_text(files["json"], json.dumps(self.as_dict(), indent=2, default=float) + "\n")
        atomic_write_text(files["markdown"], self.markdown())
        atomic_write_text(files["html"], self.html(d))
        return files

    def html(self, page_dir: Path | None = None) -> str:
        """report.html: the rows, then per row its figure and cases; the page
        frame and style are aqmlab.htmlpage's (shared by every page), with
        links to validation.json and validation.md when ``page_dir`` is given."""
        from aqmlab.htmlpage import data_links, page, table

        mode = "quick" if self.quick else "full"
        parts = [
            f"<h1>aqmlab model validation ({mode})</h1>",
            f"<p>commit <code>{html.escape(self.commit)}</code>, aqmlab {html.escape(self.version)}, {self.wall_s:.0f} s wall. "
            "Each row is judged case by case: PASS only if every case is inside the band (docs/validation.md argues each band).</p>",
        ]  # fmt: skip
        head = ["row", "reference", "judged figure", "worst case", "band", "source", "verdict", "k of n"]
        rows = [[*(t[k] for k in ["row", "reference", "figure", "measured", "band", "source"]),
                 f'<span class="{_css(t["verdict"])}">{html.escape(t["verdict"])}</span>', t["k of n"]]
                for t in self.table_rows()]  # fmt: skip
        parts.append(table(head, rows, left=6, raw_cols=(6,)))
        if self.skipped_groups:
            parts.append(f"<p>Groups not in this build: {html.escape(', '.join(self.skipped_groups))}.</p>")
        for note in self.skipped_in_quick:
            parts.append(f"<p>Quick mode skips, {html.escape(note)}.</p>")
        for _, j in self.rows:
            r = self.row_of(j)
            parts.append(f"<h2 id='{html.escape(r.id if r else j.claim)}'>{html.escape(j.claim)}: {j.verdict.value}</h2>")
            png = _plot(j, r)
            if png:
                parts.append(f"<img alt='{html.escape(j.claim)}' src='data:image/png;base64,{png}'>")
            parts.append(_cases_table(j))
            for n in j.notes:
                parts.append(f"<p>{html.escape(n)}</p>")
        if page_dir is not None:
            parts.append(data_links(page_dir, [page_dir / "validation.json", page_dir / "validation.md"]))
        return page("aqmlab validation", "\n".join(parts))


def _css(verdict: str) -> str:
    return {"PASS": "pass", "FAIL": "differs"}.get(verdict, "na")


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return "–" if v is None else str(v)


def _cases_table(j: Judgement) -> str:
    from aqmlab.htmlpage import table

    tag_keys = list(dict.fromkeys(k for c in j.cases for k in c.tags))
    extra_keys = list(dict.fromkeys(k for c in j.cases for k in c.extra))
    head = tag_keys + ["judged", "verdict"] + extra_keys
    rows = [[_fmt(c.tags.get(k)) for k in tag_keys] + [_fmt(c.measured), c.verdict.value] + [_fmt(c.extra.get(k)) for k in extra_keys]
            for c in j.cases]  # fmt: skip
    return table(head, rows, left=len(tag_keys))


def _plot(j: Judgement, r: suite.Row | None) -> str | None:
    """Measured against the law at each operating point (where the row has a
    law in bit/s or a predicted fraction), else the judged figure per case
    against the band. A base64 PNG, or None when nothing was measured."""
    import matplotlib.pyplot as plt

    measured = [c for c in j.cases if c.measured is not None]
    if not measured:
        return None
    pairs = [(k_law, k_meas) for k_law, k_meas in (("law_bps", "measured_bps"), ("law_mark_fraction", "measured_mark_fraction"),
                                                     ("law_drops", "measured_drops"))
             if all(c.extra.get(k_law) and c.extra.get(k_meas) for c in measured)]  # fmt: skip
    band = j.tolerance.band
    colours = ["tab:green" if c.verdict is Verdict.PASS else "tab:red" for c in measured]
    if pairs:
        fig, (law_ax, ax) = plt.subplots(1, 2, figsize=(11, 4.4), gridspec_kw={"width_ratios": [1, 1.4]})
        k_law, k_meas = pairs[0]
        xs = [c.extra[k_law] for c in measured]
        ys = [c.extra[k_meas] for c in measured]
        lo, hi = min(xs + ys) / 1.5, max(xs + ys) * 1.5
        law_ax.plot([lo, hi], [lo, hi], color="k", lw=1, label="law")
        for edge in (band.low, band.high):
            if edge is not None:
                law_ax.plot([lo, hi], [lo * edge, hi * edge], color="grey", ls="--", lw=1)
        law_ax.scatter(xs, ys, c=colours, zorder=3)
        law_ax.set_xscale("log")
        law_ax.set_yscale("log")
        unit = {"law_bps": "bit/s", "law_mark_fraction": "fraction", "law_drops": "drops"}[k_law]
        law_ax.set_xlabel(f"law ({unit})")
        law_ax.set_ylabel(f"measured ({unit})")
        law_ax.legend(fontsize=7)
        law_ax.set_title("measured against law, each operating point", fontsize=8)
    else:
        fig, ax = plt.subplots(figsize=(7, 4.4))
    # The judged figure per case, with the band: every case labelled.
    ax.scatter(range(len(measured)), [c.measured for c in measured], c=colours, zorder=3)
    for edge in (band.low, band.high):
        if edge is not None:
            ax.axhline(edge, color="grey", ls="--", lw=1)
    ax.set_xticks(range(len(measured)))
    ax.set_xticklabels([c.label for c in measured], rotation=60, ha="right", fontsize=6)
    ax.set_ylabel(r.figure if r else "judged figure", fontsize=8)
    fig.suptitle(f"{j.claim}: {j.verdict.value}", fontsize=9)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def run_suite(quick: bool, progress: Progress | None = None, groups: list[str] | None = None) -> Report:
    """Run every group (or those named) and collect their judgements."""
    from aqmlab import __version__

    t0 = time.perf_counter()
    loaded, skipped = suite.load_groups(groups or suite.GROUPS)
    rep = Report(quick=quick, skipped_groups=skipped, commit=commit_of_tree(), version=__version__)
    for name, mod in loaded:
        if quick and getattr(mod, "SKIPPED_IN_QUICK", None):
            rep.skipped_in_quick.append(f"{name}: {mod.SKIPPED_IN_QUICK}")
        for j in mod.judgements(quick, progress):
            rep.rows.append((name, j))
    rep.wall_s = time.perf_counter() - t0
    return rep
