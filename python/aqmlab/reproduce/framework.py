"""The machinery shared by every reproduction.

An :class:`Experiment` builds scenarios (:class:`Case`) and states the
paper's claims (:class:`Claim`). A claim is judged **per case** by
:func:`aqmlab.judging.judge`: ``Claim.evaluate(runs)`` returns one figure per
case in the claim's scope (``[(tags, figure)]``, a figure being a plain value,
a :class:`~aqmlab.judging.Replicates` over distinct seeds, or None), and the
claim passes only if every case is inside its :class:`~aqmlab.judging.Tolerance`
(a band with the seed's quote or the docs' argument behind it). Helpers:
:meth:`Runs.per_case` (a function of one run's summary, averaged over seeds
per case) and :meth:`Runs.per_group` (a figure from several cases at once,
e.g. one AQM against another under the same condition).

:func:`reproduce` runs the cases through the sweep machinery (parallel,
cached by content hash), judges each claim and writes results, plots and a
report; quick mode runs each experiment's decisive cases and the report
names the cases it skipped.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aqmlab.judging import Band, Judgement, KnownDeviation, Replicates, Tolerance, Verdict, judge, replicate_mean
from aqmlab.scenario import ScenarioError, atomic_write_text
from aqmlab.sweep import (
    DEFAULT_CACHE_DIR,
    Cache,
    Outcome,
    Point,
    SweepProgress,
    make_point,
    run_points,
)

__all__ = [
    "Case",
    "Claim",
    "Experiment",
    "ExperimentUnavailable",
    "ReproduceResult",
    "Runs",
    "Judgement",
    "Verdict",
    "missing_requirements",
    "whole_run_claim",
    "reproduce",
]


class ExperimentUnavailable(ScenarioError):
    """The experiment cannot run on this engine (one line; CLI exit code 2)."""


@dataclass
class Case:
    """One scenario of an experiment; ``tags`` say what varies (aqm, flows, ...)."""

    label: str
    scenario: dict[str, Any]
    tags: dict[str, Any] = field(default_factory=dict)
    #: (name, start_s, end_s) time windows (e.g. traffic phases) whose
    #: statistics each run adds to its summary as ``windows`` (aqmlab.windows).
    windows: tuple[tuple[str, float, float], ...] = ()
    #: Run only these of the experiment's seeds (unjudged sensitivity rows,
    #: where one seed per variant is what the time allows; say so in docs).
    seeds: tuple[int, ...] | None = None


class Runs:
    """The summaries of an experiment's cases, one per seed."""

    def __init__(self, cases: Sequence[Case], summaries: dict[str, list[dict[str, Any]]],
                 seeds: dict[str, list[int]] | None = None):  # fmt: skip
        self.cases = list(cases)
        self._by_label = summaries
        self._seeds = seeds or {k: list(range(1, len(v) + 1)) for k, v in summaries.items()}
        #: Full results (every table) of the showcase cases, first seed, by label.
        self.showcased: dict[str, Any] = {}
        #: The same with latency probes added (Experiment.probe_views), by label.
        self.probe_views: dict[str, Any] = {}

    def select(self, **tags: Any) -> list[Case]:
        """Cases whose tags match every given value (a list/tuple/set matches any of its values)."""

        def ok(c: Case) -> bool:
            for k, v in tags.items():
                if isinstance(v, (list, tuple, set)):
                    if c.tags.get(k) not in v:
                        return False
                elif c.tags.get(k) != v:
                    return False
            return True

        return [c for c in self.cases if ok(c)]

    def summaries(self, label: str) -> list[dict[str, Any]]:
        return self._by_label.get(label, [])

    def value(self, label: str, fn: Callable[[dict[str, Any]], float | None]) -> Replicates | None:
        """``fn`` of each seed's summary of one case, as replications (None
        when no seed gives a value)."""
        vals = []
        for s in self.summaries(label):
            try:
                v = fn(s)
            except (KeyError, IndexError, TypeError, ZeroDivisionError, StopIteration):
                v = None
            vals.append(None if v is None else float(v))
        if not vals:
            return None
        return replicate_mean(vals, self._seeds.get(label, list(range(1, len(vals) + 1)))[: len(vals)])

    def mean(self, label: str, fn: Callable[[dict[str, Any]], float | None]) -> float:
        """Mean over seeds of ``fn(summary)``; NaN when no seed has a value."""
        r = self.value(label, fn)
        return math.nan if r is None else r.mean

    def per_case(self, fn: Callable[[dict[str, Any]], float | None], **scope: Any) -> list[tuple[dict[str, Any], Replicates | None]]:
        """One figure per case in ``scope`` (tags): ``fn`` of each run's summary, over seeds."""
        return [(dict(c.tags), self.value(c.label, fn)) for c in self.select(**scope)]

    def per_group(self, by: Sequence[str], fn: Callable[[dict[str, Case]], float | None],
                  key: str, **scope: Any) -> list[tuple[dict[str, Any], float | None]]:  # fmt: skip
        """One figure per group of cases that share the tags ``by``: ``fn``
        gets the group's cases keyed by their ``key`` tag (e.g. the AQM) and
        returns a figure comparing them (e.g. ARED's delay minus the best of
        CoDel and PIE at the same flow count)."""
        groups: dict[tuple[Any, ...], dict[str, Case]] = {}
        for c in self.select(**scope):
            groups.setdefault(tuple(c.tags.get(b) for b in by), {})[str(c.tags.get(key))] = c
        out = []
        for g, members in groups.items():
            try:
                v = fn(members)
            except (KeyError, IndexError, TypeError, ZeroDivisionError, StopIteration):
                v = None
            out.append((dict(zip(by, g, strict=True)), None if v is None or (isinstance(v, float) and math.isnan(v)) else v))
        return out

    def frame(self, fn: Callable[[dict[str, Any]], float | None] | dict[str, Callable[[dict[str, Any]], float | None]],
              *tags: str, **scope: Any) -> Any:  # fmt: skip
        """A pandas DataFrame, one row per case in ``scope``: the case's
        ``tags`` (the grid coordinates), ``case`` (its label) and ``value``,
        the mean over seeds of ``fn`` (NaN: no value); with a dict of
        functions, a column per name instead. The input of
        :mod:`aqmlab.panels` figures and of their tables."""
        import pandas as pd

        fns = fn if isinstance(fn, dict) else {"value": fn}
        rows = [{**{t: c.tags.get(t) for t in tags}, "case": c.label, **{k: self.mean(c.label, f) for k, f in fns.items()}}
                for c in self.select(**scope)]  # fmt: skip
        return pd.DataFrame(rows, columns=[*tags, "case", *fns])

    def mean_over(self, cases: Sequence[Case], fn: Callable[[dict[str, Any]], float | None]) -> float:
        """Mean over cases of each case's mean over seeds (for figures only: never judged)."""
        vals = [self.mean(c.label, fn) for c in cases]
        vals = [v for v in vals if not math.isnan(v)]
        return sum(vals) / len(vals) if vals else math.nan


CaseFigure = tuple[dict[str, Any], "float | Replicates | None"]


@dataclass
class Claim:
    """A statement from the seed and how aqmlab checks it, case by case."""

    text: str
    #: What the seed shows or says, in a few words (e.g. "≈ 1", "40x less").
    paper: str
    tolerance: Tolerance
    #: One figure per case in the claim's scope.
    evaluate: Callable[[Runs], list[CaseFigure]]
    unit: str = ""
    known_deviation: KnownDeviation | None = None
    digits: int = 3

    @property
    def source(self) -> str:
        return self.tolerance.source

    def judge(self, runs: Runs) -> Judgement:
        try:
            cases = self.evaluate(runs)
        except (KeyError, IndexError, TypeError, ZeroDivisionError, StopIteration):
            cases = []
        if not cases:
            cases = [({"scope": "no case measured"}, None)]
        return judge(self.text, self.tolerance, cases, unit=self.unit, known_deviation=self.known_deviation)


def whole_run_claim(text: str, paper: str, source: str, measure: Callable[[Runs], float | None], band: Band,
                    rule: str, unit: str = "", digits: int = 3, *, basis: str = "qualitative",
                    tags: dict[str, Any] | None = None) -> Claim:  # fmt: skip
    """A claim about a single scenario, or one comparison of two (e.g. the
    hotspot with and without Fb-hat): one case, named by ``tags``. Use it
    only where the seed's claim is about that one setup; a claim over a grid
    is judged per case with :meth:`Runs.per_case` / :meth:`Runs.per_group`."""
    scope = tags or {"scope": "the experiment's single setup"}
    return Claim(text, paper, Tolerance(band, basis, f"{source}; {rule}"),  # type: ignore[arg-type]
                 lambda runs: [(dict(scope), measure(runs))], unit, digits=digits)  # fmt: skip


class Experiment:
    """Subclass and fill in: name, title, source, requirements, cases, claims."""

    name: str = ""
    title: str = ""
    #: Where the claims come from (the seed document and what it cites).
    source: str = ""
    #: What the experiment does, in a sentence or two (shown in the report).
    description: str = ""
    requires_aqm: tuple[str, ...] = ()
    requires_cc: tuple[str, ...] = ()
    #: Set for experiments whose engine support does not exist yet.
    pending: str | None = None

    def cases(self, quick: bool) -> list[Case]:
        raise NotImplementedError

    def claims(self) -> list[Claim]:
        raise NotImplementedError

    def seeds(self, quick: bool) -> list[int]:
        """Distinct seeds: replications, never copies (≥ 3 in full mode)."""
        return [1] if quick else [1, 2, 3]

    def quick_skips(self) -> list[str]:
        """What quick mode leaves out, in words (shown in the report)."""
        full = {c.label for c in self.cases(False)}
        quick = {c.label for c in self.cases(True)}
        skipped = sorted(full - quick)
        if not skipped:
            return []
        head = ", ".join(skipped[:12]) + (f", … ({len(skipped)} in all)" if len(skipped) > 12 else "")
        return [f"{len(skipped)} of {len(full)} full-mode cases: {head}"]

    def showcase(self, quick: bool) -> list[str]:
        """Labels of cases whose full results (time series, plots, report) are written."""
        return []

    def probe_views(self, quick: bool) -> list[str]:
        """Labels of cases shown once more with latency probes added (first
        seed; shown, never judged: reproduce/latency_view.py)."""
        return []

    def figures(self, runs: Runs) -> dict[str, Any]:
        """Experiment-level figures (name -> matplotlib Figure)."""
        return {}

    def tables(self, runs: Runs) -> dict[str, str]:
        """Experiment-level tables (name or title -> Markdown table), e.g. the
        numbers behind each figure; written to ``tables/<name>.md`` and, all
        together, to ``tables.md`` (docgen copies that into the docs'
        ``quick tables`` block), and shown in the report."""
        return {}


def missing_requirements(exp: Experiment) -> list[str]:
    """AQMs/CCs the experiment needs that this engine does not have."""
    import aqmlab

    reg = aqmlab.registry()
    miss = [f"AQM '{a}'" for a in exp.requires_aqm if a not in reg["aqm"]]
    miss += [f"CC '{c}'" for c in exp.requires_cc if c not in reg["cc"]]
    return miss


def check_available(exp: Experiment) -> None:
    if exp.pending:
        raise ExperimentUnavailable(f"{exp.name} is not yet available: {exp.pending}")
    miss = missing_requirements(exp)
    if miss:
        import aqmlab

        have = ", ".join(aqmlab.registry()["aqm"])
        raise ExperimentUnavailable(
            f"{exp.name} needs {', '.join(miss)}, which this engine does not have yet (AQMs here: {have}); "
            "it runs as soon as they are registered"
        )


@dataclass
class ReproduceResult:
    experiment: Experiment
    quick: bool
    runs: Runs
    judgements: list[Judgement]
    out_dir: Path | None
    counts: dict[str, int]

    @property
    def all_pass(self) -> bool:
        return all(j.verdict is Verdict.PASS for j in self.judgements)


def reproduce(
    exp: Experiment,
    *,
    quick: bool = False,
    out: str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    cache_dir: str | os.PathLike[str] | None = DEFAULT_CACHE_DIR,
    progress: SweepProgress | None = None,
    on_case: Callable[[str], object] | None = None,
    plot_formats: Sequence[str] = ("png",),
    plot_size_in: tuple[float, float] | None = None,
    plot_dpi: int = 110,
) -> ReproduceResult:
    """Run an experiment, check its claims, write outputs to ``out``: the
    figures as ``plots/NAME.png`` (embedded in the report) and in any other
    of ``plot_formats`` (pdf, svg), at ``plot_size_in`` inches in the paper
    style when given (the CLI's ``--format``, ``--size``, ``--dpi``)."""
    from aqmlab.results import run as run_one

    check_available(exp)
    cases = exp.cases(quick)
    labels = [c.label for c in cases]
    if len(set(labels)) != len(labels):
        raise ValueError(f"{exp.name}: case labels must be unique")
    seeds = exp.seeds(quick)
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"{exp.name}: replications must use distinct seeds, got {seeds}")
    points: list[Point] = []
    owner: dict[int, str] = {}
    for c in cases:
        for seed in c.seeds or seeds:
            try:
                p = make_point(c.scenario, {}, seed, c.windows)
            except ScenarioError as e:
                raise ExperimentUnavailable(f"{exp.name}: case {c.label}: {e}") from None
            owner[len(points)] = c.label
            points.append(p)

    out_dir = Path(out) if out is not None else None
    # Showcase cases run here first with every table (for plots and a
    # report); their summaries go into the cache, so the batch skips them.
    cache = Cache(cache_dir) if cache_dir is not None else None
    showcased: dict[str, Any] = {}
    showcase_keys: set[str] = set()
    for label in exp.showcase(quick):
        case = next(c for c in cases if c.label == label)
        if on_case is not None:
            on_case(label)
        r = run_one(case.scenario, seed=seeds[0])
        if case.windows:
            from aqmlab.windows import result_window_stats

            r.summary["windows"] = result_window_stats(r, case.windows)
        showcased[label] = r
        key = next(p.key for i, p in enumerate(points) if owner[i] == label and p.seed == seeds[0])
        showcase_keys.add(key)
        if cache is not None:
            cache.put(key, r.summary)
    outcomes: list[Outcome] = run_points(points, jobs=jobs, cache_dir=cache_dir, progress=progress)
    for o in outcomes:  # simulated above, in this call: count them as runs
        if o.point.key in showcase_keys and o.status == "cached":
            o.status = "ran"
    if cache is None:  # no cache: the showcase runs still count
        for i, o in enumerate(outcomes):
            if owner[i] in showcased and o.point.seed == seeds[0] and o.summary is None:
                o.summary = showcased[owner[i]].summary
    by_label: dict[str, list[dict[str, Any]]] = {c.label: [] for c in cases}
    seeds_of: dict[str, list[int]] = {c.label: [] for c in cases}
    counts = {"cached": 0, "ran": 0, "failed": 0}
    for i, o in enumerate(outcomes):
        counts[o.status] += 1
        if o.summary is not None:
            by_label[owner[i]].append(o.summary)
            seeds_of[owner[i]].append(o.point.seed)
    runs = Runs(cases, by_label, seeds_of)
    runs.showcased = showcased
    if out is not None and exp.probe_views(quick):
        from aqmlab.reproduce.latency_view import run_probe_views

        runs.probe_views = run_probe_views(cases, exp.probe_views(quick), seeds[0])
    judgements = [claim.judge(runs) for claim in exp.claims()]
    result = ReproduceResult(exp, quick, runs, judgements, out_dir, counts)
    if out_dir is not None:
        _write_outputs(result, outcomes, owner, showcased, formats=plot_formats, size_in=plot_size_in, dpi=plot_dpi)
    return result


def _write_outputs(res: ReproduceResult, outcomes: list[Outcome], owner: dict[int, str], showcased: dict[str, Any], *,
                   formats: Sequence[str] = ("png",), size_in: tuple[float, float] | None = None,
                   dpi: int = 110) -> None:  # fmt: skip
    import html

    import matplotlib.pyplot as plt

    from aqmlab.htmlpage import data_files_in, data_links, image, page, table
    from aqmlab.plots import FORMATS, PAPER_RC, figure_bytes, png_bytes
    from aqmlab.results import _atomic_write_parquet
    from aqmlab.scenario import atomic_write_bytes
    from aqmlab.sweep import flatten_summary

    exp, out = res.experiment, res.out_dir
    assert out is not None
    import pandas as pd

    tags_of = {c.label: c.tags for c in res.runs.cases}
    rows = []
    for i, o in enumerate(outcomes):
        row = {"case": owner[i], **{k: _scalar(v) for k, v in tags_of[owner[i]].items()}, "seed": o.point.seed,
               "status": o.status, "error": o.error or ""}  # fmt: skip
        if o.summary is not None:
            row.update(flatten_summary(o.summary))
        rows.append(row)
    _atomic_write_parquet(out / "runs.parquet", pd.DataFrame(rows))
    from aqmlab import _engine

    claims = exp.claims()
    doc = {
        "experiment": exp.name,
        "title": exp.title,
        "source": exp.source,
        "version": _engine.__version__,
        "quick": res.quick,
        "quick_skips": exp.quick_skips() if res.quick else [],
        "seeds": exp.seeds(res.quick),
        "cases": len(res.runs.cases),
        "runs": res.counts,
        "claims": [{**j.as_dict(), "paper": c.paper} for c, j in zip(claims, res.judgements, strict=True)],
    }
    atomic_write_text(out / "claims.json", json.dumps(doc, indent=2, sort_keys=True, allow_nan=False) + "\n")
    bad = [f for f in formats if f not in FORMATS]
    if bad:
        raise ValueError(f"plot format {', '.join(bad)}: allowed {', '.join(FORMATS)}")
    formats = ("png", *[f for f in formats if f != "png"])  # the report embeds the PNGs
    figs = {}
    with plt.rc_context(PAPER_RC if size_in is not None else {}):  # fonts are fixed when a figure is drawn
        for name, fig in exp.figures(res.runs).items():
            if fig is None:
                continue
            try:
                if size_in is not None:
                    fig.set_size_inches(*size_in)
                for fmt in formats:
                    data = figure_bytes(fig, fmt, dpi=dpi)
                    atomic_write_bytes(out / "plots" / f"{name}.{fmt}", data)
                    if fmt == "png":
                        figs[name] = data
                for other in set(FORMATS) - set(formats):  # an earlier run's copy would show other numbers
                    (out / "plots" / f"{name}.{other}").unlink(missing_ok=True)
            finally:
                plt.close(fig)
    tables = {name: md for name, md in exp.tables(res.runs).items() if md}
    for name, md in tables.items():
        atomic_write_text(out / "tables" / f"{_slug(name)}.md", md)
    if tables:
        atomic_write_text(out / "tables.md", "".join(f"**{title}**\n\n{body}\n" for title, body in tables.items()))
    case_links = []
    for label, r in showcased.items():
        d = out / "cases" / _slug(label)
        r.save(d)
        case_links.append(f'<li><a href="cases/{_slug(label)}/report.html">{html.escape(label)}</a></li>')
    parts = [f"<h1>{html.escape(exp.title)}</h1>", f"<p>{html.escape(exp.description)}</p>",
             f'<p class="muted">Source: {html.escape(exp.source)}. Mode: {"quick" if res.quick else "full"}; '
             f"{len(res.runs.cases)} cases × {len(exp.seeds(res.quick))} seed(s).</p>", "<h2>Claims</h2>"]  # fmt: skip
    if res.quick and exp.quick_skips():
        parts.append("<p class=\"muted\">Quick mode skipped " + html.escape("; ".join(exp.quick_skips())) + ".</p>")
    rows_html = [[c.text, c.paper, j.tolerance.band.describe(j.unit), j.tolerance.basis, j.counts_text(), j.worst_text(),
                  f'<span class="{_css_class(j.verdict)}">{j.verdict.value}</span>']
                 for c, j in zip(claims, res.judgements, strict=True)]  # fmt: skip
    parts.append(table(["claim", "seed", "band", "basis", "cases passed", "worst case", "verdict"], rows_html, left=6,
                       raw_cols=(6,)))  # fmt: skip
    parts.append("<h2>Sources of the tolerances</h2><p class=\"muted\">" + "<br>".join(
        html.escape(f"{c.text}: {c.source}") for c in claims) + "</p>")  # fmt: skip
    parts.append("<h2>Every case</h2>")
    for c, j in zip(claims, res.judgements, strict=True):
        keys = sorted({k for cr in j.cases for k in cr.tags})
        body = [[*(cr.tags.get(k, "") for k in keys), cr.measured, *(cr.interval or ("", "")),
                 f'<span class="{_css_class(cr.verdict)}">{cr.verdict.value}</span>'] for cr in j.cases]  # fmt: skip
        parts.append(f"<details><summary>{html.escape(c.text)}: {html.escape(j.summary_line())}</summary>")
        parts.append(table([*keys, f"measured {j.unit}".strip(), "95% CI low", "95% CI high", "verdict"], body,
                           left=len(keys), raw_cols=(len(keys) + 3,)))  # fmt: skip
        grid = verdict_grid(j)
        if grid is not None:
            try:
                parts.append(image(png_bytes(grid), f"{c.text}: every case"))
            finally:
                plt.close(grid)
        parts.append("</details>")
    if figs:
        parts.append("<h2>Figures</h2>")
        parts += [image(png, name) for name, png in figs.items()]
    if tables:
        parts.append("<h2>Tables (the figures' numbers)</h2>")
        parts += [f"<details><summary>{html.escape(name)}</summary><pre>{html.escape(md)}</pre></details>"
                  for name, md in tables.items()]  # fmt: skip
    if case_links:
        parts.append("<h2>Example runs (full results)</h2><ul>" + "".join(case_links) + "</ul>")
    if res.runs.probe_views:
        from aqmlab.reproduce.latency_view import probe_view_html

        parts.append(probe_view_html(out, res.runs.probe_views, _slug))
    plot_files = sorted((out / "plots").glob("*.*")) if (out / "plots").is_dir() else []
    parts.append(data_links(out, [*data_files_in(out, "tables"), *plot_files], "Data files and plots"))
    atomic_write_text(out / "report.html", page(f"aqmlab reproduce {exp.name}", "\n".join(parts)))


def verdict_grid(j: Judgement) -> Any:
    """A claim's cases on their two-dimensional grid (e.g. the 10 × 10
    L4S × Classic flow mixes, as the seed lays out its panels): the measured
    value in each cell, failing cells outlined in red. None unless exactly
    two tags vary and both are numbers."""
    import matplotlib.pyplot as plt
    import numpy as np

    varying = [k for k in sorted({k for c in j.cases for k in c.tags}) if len({c.tags.get(k) for c in j.cases}) > 1]
    if len(varying) != 2 or not all(isinstance(c.tags.get(k), (int, float)) for c in j.cases for k in varying):
        return None
    ky, kx = varying
    xs = sorted({c.tags[kx] for c in j.cases})
    ys = sorted({c.tags[ky] for c in j.cases})
    z = np.full((len(ys), len(xs)), np.nan)
    fig, ax = plt.subplots(figsize=(0.55 * len(xs) + 2.6, 0.45 * len(ys) + 1.6), layout="constrained")
    for c in j.cases:
        yi, xi = ys.index(c.tags[ky]), xs.index(c.tags[kx])
        if c.measured is not None:
            z[yi, xi] = c.measured
        if c.verdict is Verdict.FAIL:
            ax.add_patch(plt.Rectangle((xi - 0.5, yi - 0.5), 1, 1, fill=False, ec="red", lw=2))
    im = ax.imshow(z, origin="lower", cmap="viridis", aspect="auto")
    for yi in range(len(ys)):
        for xi in range(len(xs)):
            if np.isfinite(z[yi, xi]):
                ax.text(xi, yi, f"{z[yi, xi]:.2g}", ha="center", va="center", color="w", fontsize=7)
    ax.set_xticks(range(len(xs)), [str(v) for v in xs])
    ax.set_yticks(range(len(ys)), [str(v) for v in ys])
    ax.set(xlabel=kx, ylabel=ky, title=f"{j.verdict.value}: {j.counts_text()} (band {j.tolerance.band.describe(j.unit)})")
    fig.colorbar(im, ax=ax, label=j.unit or "measured")
    return fig


def _css_class(v: Verdict) -> str:
    return {"PASS": "pass", "FAIL": "differs", "DEVIATES-KNOWN": "differs", "N/A": "na"}[v.value]


def _scalar(v: Any) -> Any:
    return v if isinstance(v, (str, int, float, bool)) or v is None else json.dumps(v, sort_keys=True)


def _slug(label: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in label)


# ---------------------------------------------------------------------------
# Helpers for experiments.


def queue_of(summary: dict[str, Any], name: str = "bottleneck") -> dict[str, Any]:
    return next(q for q in summary["queues"] if q["name"] == name)


def subqueue(summary: dict[str, Any], prefix: str, name: str = "bottleneck") -> dict[str, Any]:
    """Statistics of the sub-queue whose name starts with ``prefix`` (e.g. "l4s")."""
    subs = queue_of(summary, name).get("subqueues") or {}
    for k, v in subs.items():
        if k.lower().startswith(prefix.lower()):
            return dict(v)
    raise KeyError(prefix)


def total_goodput(summary: dict[str, Any]) -> float:
    return sum(f["goodput_bps"] for f in summary["flows"] if f["goodput_bps"] is not None)


def aqm_param_names(aqm: str) -> set[str]:
    import aqmlab

    return set(aqmlab.registry()["aqm"].get(aqm, {}).get("defaults", {}))


def ecn_params(aqm: str) -> dict[str, Any]:
    """Turn on ECN marking in an AQM that has an ``ecn`` switch."""
    return {"ecn": True} if "ecn" in aqm_param_names(aqm) else {}
