"""Sweeps: a base scenario × parameter grids × seeds, cached and resumable.

A sweep file (docs/cli.md has the full format)::

    [sweep]
    name = "step-threshold"
    base = "dumbbell.toml"          # relative to this file; or an inline [base] table
    seeds = 3                       # seeds 1, 2, 3; or a list: [1, 7, 42]

    [grid]                          # every combination of these values
    "bottleneck.params.threshold" = ["20pkt", "65pkt"]
    "flows[0].count" = [1, 4]

Every point is validated by the engine before anything runs. Each run is
cached under a content hash of the normalised scenario (seed included) and
the engine version, one file per run written atomically; a re-run, or a run
after an interruption, simulates only what is missing. Failed runs are
reported and never cached; they never remove cached successes.

Points, the cache and the two backends are in :mod:`aqmlab.runner`, the
tables and statistics in :mod:`aqmlab.tables`; this module re-exports their
public names.

Results: ``runs`` (one row per run: parameters, seed, flattened summary),
``flows`` (one row per flow per run) and ``stats`` (mean, standard
deviation and 95% Student-t confidence interval across seeds, per grid point
and metric; :mod:`aqmlab.tables`), written as Parquet.

``aqmlab.sweep`` is the function :func:`sweep` (the package imports it
eagerly, so that attribute is never replaced by this module). The module's
other names: ``from aqmlab.sweep import SweepSpec``; note that
``import aqmlab.sweep as m`` binds the function, not the module.

This module imports pandas lazily: ``import aqmlab`` stays light.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from difflib import get_close_matches
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aqmlab import _engine
from aqmlab.runner import (
    DEFAULT_CACHE_DIR,
    Cache,
    Outcome,
    Point,
    SweepError,
    SweepProgress,
    _show,
    content_hash,
    make_point,
    run_points,
)
from aqmlab.scenario import (
    ScenarioError,
    ScenarioLike,
    atomic_write_text,
    to_dict,
)
from aqmlab.tables import flatten_summary, flows_table, runs_table, stats_table, t_quantile_975

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "Cache",
    "Outcome",
    "Point",
    "SweepError",
    "SweepFailed",
    "SweepResult",
    "SweepProgress",
    "SweepSpec",
    "DEFAULT_CACHE_DIR",
    "content_hash",
    "flatten_summary",
    "flows_table",
    "make_point",
    "run_points",
    "runs_table",
    "stats_table",
    "sweep",
    "t_quantile_975",
]

#: Most runs one sweep may hold (grid points × seeds). Our choice: far above
#: any reproduction (the largest full mode has a few thousand), low enough
#: that a typo (seeds = 1000000000) is refused instead of exhausting memory
#: while the points are built and validated.
MAX_RUNS = 100_000


class SweepFailed(RuntimeError):
    """Some runs of a sweep failed. ``result`` holds everything that did run
    (failed points are rows with status "failed"); ``result.errors`` says why."""

    def __init__(self, result: SweepResult):
        self.result = result
        first = result.errors[0] if result.errors else ("?", "?")
        super().__init__(
            f"{result.failed} of {result.total} runs failed (first: {first[0]}: {first[1]}); "
            "the runs that succeeded are in this exception's .result; "
            "pass allow_failures=True to get the result back instead of this error"
        )


# ---------------------------------------------------------------------------
# The sweep file.

_SWEEP_KEYS = ("name", "description", "base", "seeds")
_TOP_KEYS = ("sweep", "grid", "base")


def _unknown(where: str, key: str, allowed: Sequence[str]) -> SweepError:
    close = get_close_matches(key, allowed, n=1, cutoff=0.6)
    hint = f"did you mean '{close[0]}'? " if close else ""
    return SweepError(f"{where}: unknown key '{key}' ({hint}allowed: {', '.join(allowed)})")


@dataclass
class SweepSpec:
    """A base scenario, a grid (path -> values) and seeds."""

    base: dict[str, Any]
    grid: dict[str, list[Any]] = field(default_factory=dict)
    seeds: list[int] = field(default_factory=lambda: [1])
    name: str = "sweep"
    description: str = ""

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SweepSpec:
        from aqmlab.scenario import read_text_file

        p = Path(path)
        try:
            tree = tomllib.loads(read_text_file(p, "sweep"))
        except ScenarioError as e:
            raise SweepError(str(e)) from None
        except tomllib.TOMLDecodeError as e:
            raise SweepError(f"{p}: invalid TOML: {e}") from None
        except RecursionError:
            raise SweepError(f"{p}: nested too deeply (a sweep file is a few tables of values)") from None
        if not any(k in tree for k in _TOP_KEYS) and any(k in tree for k in ("bottleneck", "topology", "flows")):
            raise SweepError(f"{p}: this is a scenario, not a sweep file: run it with `aqmlab run {p}`")
        return cls.from_dict(tree, base_dir=p.parent, default_name=p.stem)

    @classmethod
    def from_dict(
        cls, tree: Mapping[str, Any], *, base_dir: str | os.PathLike[str] = ".", default_name: str = "sweep"
    ) -> SweepSpec:
        for k in tree:
            if k not in _TOP_KEYS:
                raise _unknown("sweep file", k, _TOP_KEYS)
        head = tree.get("sweep", {})
        if not isinstance(head, Mapping):
            raise SweepError("sweep: must be a table")
        for k in head:
            if k not in _SWEEP_KEYS:
                raise _unknown("sweep", k, _SWEEP_KEYS)
        base_ref = head.get("base")
        inline = tree.get("base")
        if base_ref is not None and inline is not None:
            raise SweepError("sweep.base: give either a file name in [sweep] base or an inline [base] table, not both")
        if base_ref is not None:
            if not isinstance(base_ref, str):
                raise SweepError("sweep.base: must be the path of a scenario file")
            bp = Path(base_dir) / base_ref
            if not bp.exists():
                raise SweepError(f"sweep.base: '{base_ref}': no such file (looked in {Path(base_dir)})")
            base = to_dict(bp)
        elif inline is not None:
            if not isinstance(inline, Mapping):
                raise SweepError("base: must be a scenario table")
            base = dict(inline)
        else:
            raise SweepError("sweep.base: required (a scenario file name, or an inline [base] table)")
        grid = tree.get("grid", {})
        if not isinstance(grid, Mapping):
            raise SweepError("grid: must be a table of parameter path = [values]")
        seeds = head.get("seeds", None)
        name = head.get("name", default_name)
        # The name is the default output directory, out/<name>: one plain
        # directory name ("" wrote into out/ itself, "../x" outside it).
        if not isinstance(name, str) or name.strip() in ("", ".", "..") or any(c in name for c in "/\\"):
            raise SweepError(f"sweep.name: {name!r}: give a plain name for the output directory out/<name> "
                             "(not empty, no '/' or '\\', not '.' or '..')")  # fmt: skip
        return cls(
            base=base,
            grid={str(k): v for k, v in grid.items()},
            seeds=_seeds(seeds, base),
            name=name,
            description=str(head.get("description", "")),
        )

    def points(self) -> list[Point]:
        """Every (grid combination, seed), validated. Raises SweepError naming
        the first bad point."""
        for path, values in self.grid.items():
            if not isinstance(values, list) or not values:
                raise SweepError(f"grid.'{path}': must be a non-empty list of values")
            if path.strip() == "seed":
                raise SweepError("grid.'seed': give seeds in [sweep] seeds, not in the grid")
        try:
            make_point(self.base, {}, self.seeds[0])
        except ScenarioError as e:
            raise SweepError(f"base scenario: {e}") from None
        paths = list(self.grid)
        total = math.prod(len(self.grid[p]) for p in paths) * len(self.seeds)
        if total > MAX_RUNS:
            sizes = " × ".join([*(str(len(self.grid[p])) for p in paths), f"{len(self.seeds)} seeds"])
            raise SweepError(f"grid: {sizes} = {total:,} runs, more than a sweep may run ({MAX_RUNS:,}): split it")
        out = []
        seen: dict[str, Point] = {}
        for combo in itertools.product(*(self.grid[p] for p in paths)):
            params = dict(zip(paths, combo, strict=True))
            for seed in self.seeds:
                where = ", ".join(f"'{k}' = {_show(v)}" for k, v in params.items())
                try:
                    pt = make_point(self.base, params, seed)
                except ScenarioError as e:
                    raise SweepError(f"grid {where}: {e}") from None
                # Two points that normalise to one scenario would run it twice
                # and count both runs as samples of it (as seeds = [1, 1] would).
                if pt.key in seen:
                    raise SweepError(f"grid {where}: the same scenario as {seen[pt.key].label} "
                                     "(a value repeated, or two spellings of one value): give each value once")  # fmt: skip
                seen[pt.key] = pt
                out.append(pt)
        return out


def _seeds(value: Any, base: Mapping[str, Any]) -> list[int]:
    if value is None:
        return [int(base.get("seed", 1))]
    if isinstance(value, bool):
        raise SweepError("sweep.seeds: a count (e.g. 5) or a list of seeds")
    if isinstance(value, int):
        if value < 1:
            raise SweepError(f"sweep.seeds: must be at least 1 (got {value})")
        if value > MAX_RUNS:  # before building the list: 10^9 seeds took all memory
            raise SweepError(f"sweep.seeds: {value:,} seeds is more than a sweep may run ({MAX_RUNS:,} runs)")
        return list(range(1, value + 1))
    if isinstance(value, list) and value and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in value):
        if len(set(value)) != len(value):
            raise SweepError("sweep.seeds: seeds must be distinct")
        return list(value)
    raise SweepError(f"sweep.seeds: a count (e.g. 5) or a non-empty list of non-negative integers (got {value!r})")


# ---------------------------------------------------------------------------
# The sweep.


@dataclass(repr=False)
class SweepResult:
    """What a sweep returns. ``runs``, ``flows``, ``stats`` are DataFrames."""

    spec: SweepSpec
    outcomes: list[Outcome]
    runs: pd.DataFrame
    flows: pd.DataFrame
    stats: pd.DataFrame

    @property
    def total(self) -> int:
        return len(self.outcomes)

    @property
    def cached(self) -> int:
        """Runs read from the cache (not simulated)."""
        return sum(o.status == "cached" for o in self.outcomes)

    @property
    def ran(self) -> int:
        """Runs simulated by this call."""
        return sum(o.status == "ran" for o in self.outcomes)

    @property
    def failed(self) -> int:
        return sum(o.status == "failed" for o in self.outcomes)

    @property
    def errors(self) -> list[tuple[str, str]]:
        return [(o.point.label, o.error or "") for o in self.outcomes if o.status == "failed"]

    def __repr__(self) -> str:
        # Short whatever the sweep's size (the dataclass default printed
        # every outcome and DataFrame).
        grid = " × ".join(f"{k} ({len(v)})" for k, v in self.spec.grid.items()) or "no grid"
        failed = f", {self.failed} FAILED" if self.failed else ""
        return (f"<aqmlab.SweepResult {self.spec.name!r}: {self.total} runs ({self.ran} ran, {self.cached} cached"
                f"{failed}); grid {grid}; seeds {self.spec.seeds}; tables .runs .flows .stats>")  # fmt: skip

    def plot(self, x: str, y: str, hue: str | None = None, ax: Any = None) -> Any:
        """Metric ``y`` against the swept parameter ``x`` (one line per value
        of ``hue``), mean and 95 % interval over seeds; returns the Figure.
        The numbers are ``self.stats`` (metric == y)."""
        from aqmlab.sweep_report import plot_metric

        return plot_metric(self.stats, y, x, hue, grid=self.spec.grid, ax=ax)

    def _repr_html_(self) -> str:
        import html

        head = html.escape(repr(self))
        table = self.stats.head(40).to_html(index=False, float_format=lambda x: f"{x:.4g}") if not self.stats.empty else ""
        return f"<p><code>{head}</code></p>{table}"

    def save(self, out_dir: str | os.PathLike[str]) -> dict[str, Path]:
        """``runs.parquet``, ``flows.parquet``, ``stats.parquet`` and
        ``sweep.json`` (spec and counts), each written atomically."""
        from aqmlab.results import _atomic_write_parquet

        out = Path(out_dir)
        names = ("runs", "flows", "stats")
        files = {name: _atomic_write_parquet(out / f"{name}.parquet", getattr(self, name)) for name in names}
        meta = {
            "name": self.spec.name,
            "description": self.spec.description,
            "version": _engine.__version__,
            "grid": self.spec.grid,
            "seeds": self.spec.seeds,
            "base": self.spec.base,
            "total": self.total,
            "cached": self.cached,
            "ran": self.ran,
            "failed": self.failed,
            "errors": [{"point": p, "error": e} for p, e in self.errors],
        }
        files["sweep"] = atomic_write_text(out / "sweep.json", json.dumps(meta, indent=2, sort_keys=True) + "\n")
        return files


def sweep(
    spec: SweepSpec | ScenarioLike,
    grid: Mapping[str, Sequence[Any]] | None = None,
    *,
    seeds: int | Sequence[int] | None = None,
    jobs: int | None = None,
    cache_dir: str | os.PathLike[str] | None = DEFAULT_CACHE_DIR,
    backend: str = "local",
    scheduler: str | None = None,
    progress: SweepProgress | None = None,
    out: str | os.PathLike[str] | None = None,
    allow_failures: bool = False,
) -> SweepResult:
    """Run a sweep and return its tables.

    Either ``sweep("sweep.toml")`` / ``sweep(SweepSpec(...))``, or a base
    scenario with a grid: ``sweep(scenario, {"bottleneck.aqm": ["fifo",
    "step"]}, seeds=3)``. See :func:`run_points` for ``jobs``, ``cache_dir``,
    ``backend`` and ``scheduler``; ``progress(done, total, point, status)``
    is called after each run (raise from it to stop; finished runs stay
    cached). With ``out`` the tables are also written there.

    If any run fails, :class:`SweepFailed` is raised (after ``out`` is
    written) carrying the partial result, unless ``allow_failures=True``:
    then check ``result.failed`` yourself.
    """
    if isinstance(spec, SweepSpec):
        s = spec
    elif grid is None and isinstance(spec, (str, os.PathLike)) and _looks_like_sweep(spec):
        s = SweepSpec.load(spec)
    else:
        base = to_dict(spec)
        # Tuples and other sequences become lists; text or a single value stays
        # as given, for points() to refuse in one line (list("fifo") was letters).
        s = SweepSpec(base=base, grid={k: _as_values(v) for k, v in (grid or {}).items()},
                      seeds=_seeds(None, base), name=str(base.get("name") or "sweep"))  # fmt: skip
    if seeds is not None:
        s.seeds = _seeds(seeds if isinstance(seeds, int) else list(seeds), s.base)
    points = s.points()
    outcomes = run_points(points, jobs=jobs, cache_dir=cache_dir, backend=backend, scheduler=scheduler, progress=progress)
    names = list(s.grid)
    runs = runs_table(outcomes, names)
    result = SweepResult(s, outcomes, runs, flows_table(outcomes, names), stats_table(runs, names))
    if out is not None:
        result.save(out)
    if result.failed and not allow_failures:
        raise SweepFailed(result)
    return result


def _as_values(v: Any) -> Any:
    if isinstance(v, (str, bytes, Mapping)) or not hasattr(v, "__iter__"):
        return v
    return list(v)  # a tuple, a range, a NumPy array


def _looks_like_sweep(path: str | os.PathLike[str]) -> bool:
    from aqmlab.scenario import read_text_file

    try:
        tree = tomllib.loads(read_text_file(Path(path), "sweep"))
    except (ScenarioError, ValueError, RecursionError):  # TOMLDecodeError, UnicodeDecodeError are ValueErrors
        return True  # let SweepSpec.load report it
    return "sweep" in tree or "grid" in tree
