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

Results: ``runs`` (one row per run: parameters, seed, flattened summary),
``flows`` (one row per flow per run) and ``stats`` (mean, standard
deviation and 95% Student-t confidence interval across seeds, per grid point
and metric), written as Parquet.

This module imports pandas lazily: ``import aqmlab`` stays light.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
import os
import sys
import tomllib
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from difflib import get_close_matches
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aqmlab import _engine
from aqmlab.scenario import (
    ScenarioError,
    ScenarioLike,
    atomic_write_text,
    check_tree,
    set_path,
    to_dict,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "Cache",
    "Point",
    "SweepError",
    "SweepFailed",
    "SweepResult",
    "SweepSpec",
    "DEFAULT_CACHE_DIR",
    "content_hash",
    "flatten_summary",
    "make_point",
    "run_points",
    "sweep",
    "t_quantile_975",
]

DEFAULT_CACHE_DIR = ".aqmlab-cache"

#: Most runs one sweep may hold (grid points × seeds). Our choice: far above
#: any reproduction (the largest full mode has a few thousand), low enough
#: that a typo (seeds = 1000000000) is refused instead of exhausting memory
#: while the points are built and validated.
MAX_RUNS = 100_000


class SweepError(ScenarioError):
    """A sweep file or grid is invalid (one line; the CLI exits with code 2)."""


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
# Points and content hashes.


@functools.cache
def engine_build_id() -> str:
    """sha256 of the compiled engine itself. The version number alone would let
    a rebuilt development engine (same version, different code) read results
    the old one cached; the binary's hash changes with any change of the code."""
    h = hashlib.sha256()
    with open(_engine.__file__, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def content_hash(normalized: Mapping[str, Any]) -> str:
    """sha256 of the normalised scenario (which includes the seed), the engine
    version and the engine build: the identity of a run's result."""
    doc = {"scenario": normalized, "version": _engine.__version__, "build": engine_build_id()}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@dataclass(frozen=True)
class Point:
    """One run of a sweep: grid parameters, seed, the normalised scenario."""

    params: dict[str, Any]
    seed: int
    normalized: dict[str, Any] = field(repr=False)
    key: str = ""
    #: Time windows whose statistics the run adds to its summary as
    #: ``windows`` (aqmlab.windows); part of the key.
    windows: tuple[tuple[str, float, float], ...] = ()

    @property
    def label(self) -> str:
        ps = ", ".join(f"{k}={_show(v)}" for k, v in self.params.items())
        return f"{ps}, seed={self.seed}" if ps else f"seed={self.seed}"


def _show(v: Any) -> str:
    if isinstance(v, str):
        return v
    try:
        text = json.dumps(v, sort_keys=True)
    except (TypeError, ValueError, RecursionError):  # a value no scenario can hold: say what it is
        text = repr(v) if not isinstance(v, (list, dict)) else type(v).__name__
    return text if len(text) <= 80 else text[:80] + "…"


def make_point(base: Mapping[str, Any], params: Mapping[str, Any], seed: int | None = None,
               windows: Sequence[tuple[str, float, float]] = ()) -> Point:  # fmt: skip
    """Apply ``params`` (path -> value) and ``seed`` to a copy of ``base``,
    validate with the engine and hash. ``windows``: (name, start_s, end_s)
    whose statistics the run adds to its summary (aqmlab.windows). Raises
    ScenarioError."""
    check_tree(base)
    tree = json.loads(json.dumps(base))
    for path, value in params.items():
        check_tree(value, path)  # a grid value a scenario cannot hold (a date, a set): one line
        set_path(tree, path, value)
    if seed is not None:
        tree["seed"] = seed
    normalized = json.loads(_engine.validate(json.dumps(tree)))
    win = tuple((str(n), float(a), float(b)) for n, a, b in windows)
    key = content_hash(normalized) if not win else content_hash({"scenario": normalized, "windows": [list(w) for w in win]})
    return Point(dict(params), int(normalized["seed"]), normalized, key, win)


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
        return cls(
            base=base,
            grid={str(k): v for k, v in grid.items()},
            seeds=_seeds(seeds, base),
            name=str(head.get("name", default_name)),
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
        for combo in itertools.product(*(self.grid[p] for p in paths)):
            params = dict(zip(paths, combo, strict=True))
            for seed in self.seeds:
                try:
                    out.append(make_point(self.base, params, seed))
                except ScenarioError as e:
                    where = ", ".join(f"'{k}' = {_show(v)}" for k, v in params.items())
                    raise SweepError(f"grid {where}: {e}") from None
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
# The cache.


class Cache:
    """One JSON file per finished run: ``<dir>/<key[:2]>/<key>.json``."""

    def __init__(self, directory: str | os.PathLike[str] = DEFAULT_CACHE_DIR):
        self.dir = Path(directory)

    def path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        p = self.path(key)
        try:
            doc = json.loads(p.read_text())
        except (OSError, ValueError):  # missing, unreadable, truncated, not UTF-8
            return None
        # Anything but a whole entry (a foreign or damaged file) is a miss: recomputed.
        if not isinstance(doc, dict) or doc.get("key") != key or not isinstance(doc.get("summary"), dict):
            return None
        summary: dict[str, Any] = doc["summary"]
        return summary

    def put(self, key: str, summary: Mapping[str, Any]) -> Path:
        return atomic_write_text(self.path(key), json.dumps({"key": key, "summary": summary}, sort_keys=True))

    def __len__(self) -> int:
        return sum(1 for _ in self.dir.glob("*/*.json")) if self.dir.exists() else 0


# ---------------------------------------------------------------------------
# Running points.


def _simulate(normalized_json: str, windows: Sequence[tuple[str, float, float]] = ()) -> tuple[str, Any]:
    """Run one scenario (in a worker). ('ok', summary) or ('failed', message).
    With ``windows``, the summary gets their statistics as ``windows``."""
    from aqmlab.results import _engine_columns, build_summary

    try:
        raw = _engine.run(normalized_json)
    except (RuntimeError, ValueError) as e:
        return ("failed", f"{type(e).__name__}: {e}")
    summary = build_summary(json.loads(raw["summary"]), json.loads(normalized_json))
    if windows:
        from aqmlab.windows import window_stats

        tables = {n: _engine_columns(c) for n, c in raw["tables"].items()}
        summary["windows"] = window_stats(tables, summary, windows)
    return ("ok", summary)


def _args(p: Point) -> tuple[Any, ...]:
    """``_simulate``'s arguments for a point (the windows only when it has any)."""
    return (json.dumps(p.normalized), p.windows) if p.windows else (json.dumps(p.normalized),)


def _ignore_sigint() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


#: progress(done, total, point, status) with status "cached" | "ran" | "failed";
#: raising from it stops the sweep (finished runs stay cached).
SweepProgress = Callable[[int, int, Point, str], object]


@dataclass
class Outcome:
    point: Point
    status: str  # "cached" | "ran" | "failed"
    summary: dict[str, Any] | None = None
    error: str | None = None


def run_points(
    points: Sequence[Point],
    *,
    jobs: int | None = None,
    cache_dir: str | os.PathLike[str] | None = DEFAULT_CACHE_DIR,
    backend: str = "local",
    scheduler: str | None = None,
    progress: SweepProgress | None = None,
) -> list[Outcome]:
    """Run points (cached ones are read, not simulated), in parallel.

    ``jobs``: worker processes (default: all cores; 1 runs in this process).
    ``cache_dir=None`` disables the cache. ``backend``: "local" (a process
    pool) or "dask" (``scheduler`` is a dask scheduler address; without one a
    local dask cluster with ``jobs`` workers is started).
    """
    if backend not in ("local", "dask"):
        raise SweepError(f"backend: unknown backend '{backend}' (allowed: local, dask)")
    if jobs is not None:
        import operator

        try:
            n = -1 if isinstance(jobs, bool) else operator.index(jobs)  # numpy integers too
        except TypeError:
            n = -1
        if n < 1:
            raise SweepError(f"jobs: {jobs!r}: must be a whole number, at least 1 (leave it out to use every core)")
        jobs = n
    cache = Cache(cache_dir) if cache_dir is not None else None
    total = len(points)
    outcomes: dict[str, Outcome] = {}
    done = 0

    def finish(o: Outcome) -> None:
        nonlocal done
        if o.status == "ran" and cache is not None and o.summary is not None:
            cache.put(o.point.key, o.summary)
        outcomes[o.point.key] = o
        done += 1
        if progress is not None:
            progress(done, total, o.point, o.status)

    unique: dict[str, Point] = {}
    for p in points:
        unique.setdefault(p.key, p)
    todo = []
    for p in unique.values():
        s = cache.get(p.key) if cache is not None else None
        if s is not None:
            finish(Outcome(p, "cached", s))
        else:
            todo.append(p)

    def outcome_of(p: Point, result: tuple[str, Any]) -> Outcome:
        status, payload = result
        if status == "ok":
            return Outcome(p, "ran", payload)
        return Outcome(p, "failed", error=payload)

    n_jobs = jobs or (os.cpu_count() or 1)
    if backend == "dask":
        _run_dask(todo, n_jobs, scheduler, finish, outcome_of)
    elif n_jobs == 1 or len(todo) <= 1:
        for p in todo:
            finish(outcome_of(p, _simulate(*_args(p))))
    else:
        _run_pool(todo, n_jobs, finish, outcome_of)
    # Every input point, in input order (duplicates share one run).
    out = []
    for p in points:
        o = outcomes[p.key]
        out.append(o if o.point is p else Outcome(p, o.status, o.summary, o.error))
    return out


def _run_pool(todo: list[Point], n_jobs: int, finish: Callable[[Outcome], None], outcome_of: Any) -> None:
    # loky (joblib's executor) rather than multiprocessing: its workers do
    # not re-import the caller's ``__main__``, so a sweep works from an
    # unguarded script and from a notebook cell, and the reusable executor
    # keeps warm workers between calls. Workers ignore SIGINT: the parent
    # decides, and stops them.
    from concurrent.futures import FIRST_COMPLETED, wait

    from loky import get_reusable_executor

    ex = get_reusable_executor(max_workers=min(n_jobs, len(todo)), initializer=_ignore_sigint, reuse=True)
    try:
        pending = {ex.submit(_simulate, *_args(p)): p for p in todo}
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                p = pending.pop(fut)
                try:
                    res = fut.result()
                except Exception as e:  # a worker died (e.g. killed by the OS)
                    res = ("failed", f"{type(e).__name__}: {e}")
                finish(outcome_of(p, res))
    except BaseException:
        # Stop now: cancel what has not started and end running workers.
        # Finished runs are already in the cache.
        ex.shutdown(wait=False, kill_workers=True)
        raise


def _run_dask(
    todo: list[Point], n_jobs: int, scheduler: str | None, finish: Callable[[Outcome], None], outcome_of: Any
) -> None:
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise SweepError("backend 'dask' needs the optional dependency: pip install 'aqmlab[dask]'") from None
    if not todo:
        return
    cluster = None
    if scheduler:
        client = Client(scheduler)
    else:
        cluster = LocalCluster(n_workers=n_jobs, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    try:
        futures = {}
        for p in todo:
            fut = client.submit(_simulate, *_args(p), key=f"aqmlab-{p.key}", pure=False)
            futures[fut] = p
        for fut in as_completed(list(futures)):
            p = futures[fut]
            try:
                res = fut.result()
            except Exception as e:
                res = ("failed", f"{type(e).__name__}: {e}")
            finish(outcome_of(p, res))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


# ---------------------------------------------------------------------------
# Tables.


def flatten_summary(s: Mapping[str, Any]) -> dict[str, Any]:
    """One run's summary as flat scalar columns (see docs/results.md)."""
    out: dict[str, Any] = {}

    def leaves(prefix: str, v: Any) -> None:
        if isinstance(v, Mapping):
            for k, x in v.items():
                leaves(f"{prefix}.{k}" if prefix else str(k), x)
        elif isinstance(v, bool):
            out[prefix] = int(v)
        elif isinstance(v, (int, float)) or v is None:
            out[prefix] = math.nan if v is None else v

    for k in ("duration_s", "warmup_s"):
        leaves(k, s.get(k))
    leaves("perf", s.get("perf", {}))
    fairness = dict(s.get("fairness", {}))
    fairness.setdefault("l4s_classic_ratio", None)
    leaves("fairness", fairness)
    leaves("workload_flows", s.get("workload_flows", {}))
    for q in s.get("queues", []):
        q = dict(q)
        name = q.pop("name")
        for k in ("aqm", "rate_bps"):
            q.pop(k, None)
        subs = q.pop("subqueues", {}) or {}
        leaves(f"queues.{name}", q)
        for sub, stats in subs.items():
            leaves(f"queues.{name}.{sub}", stats)
    flows = s.get("flows", [])
    groups: dict[str, list[Mapping[str, Any]]] = {"all": list(flows)}
    for f in flows:
        groups.setdefault(str(f.get("label") or f.get("cc")), []).append(f)
    for g, fs in groups.items():
        gp = [f["goodput_bps"] for f in fs if f.get("goodput_bps") is not None]
        out[f"flows.{g}.count"] = len(fs)
        out[f"flows.{g}.goodput_bps.sum"] = sum(gp) if gp else math.nan
        out[f"flows.{g}.goodput_bps.mean"] = sum(gp) / len(gp) if gp else math.nan
        out[f"flows.{g}.retransmits.sum"] = sum(f.get("retransmits", 0) for f in fs)
        srtt = [f["srtt_ms"] for f in fs if f.get("srtt_ms") is not None]
        out[f"flows.{g}.srtt_ms.mean"] = sum(srtt) / len(srtt) if srtt else math.nan
        fct = [f["fct_s"] for f in fs if f.get("fct_s") is not None]
        out[f"flows.{g}.fct_s.mean"] = sum(fct) / len(fct) if fct else math.nan
    return out


# Two-sided 95% quantiles of Student's t, t_{0.975, df}, df = 1..30.
_T975 = [
    12.706204736, 4.302652730, 3.182446305, 2.776445105, 2.570581836, 2.446911851, 2.364624252, 2.306004135,
    2.262157163, 2.228138852, 2.200985160, 2.178812830, 2.160368656, 2.144786688, 2.131449546, 2.119905299,
    2.109815578, 2.100922040, 2.093024054, 2.085963447, 2.079613845, 2.073873068, 2.068657610, 2.063898562,
    2.059538553, 2.055529439, 2.051830516, 2.048407142, 2.045229642, 2.042272456,
]  # fmt: skip


def t_quantile_975(df: int) -> float:
    """t_{0.975, df}: exact table to df = 30, then the Cornish-Fisher
    expansion around the normal quantile (error < 1e-6 there)."""
    if df < 1:
        return math.nan
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959963984540054
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def _param_value(v: Any) -> Any:
    return v if isinstance(v, (str, int, float, bool)) else json.dumps(v, sort_keys=True)


def runs_table(outcomes: Sequence[Outcome], param_names: Sequence[str]) -> pd.DataFrame:
    import pandas as pd

    rows = []
    for o in outcomes:
        row: dict[str, Any] = {p: _param_value(o.point.params.get(p)) for p in param_names}
        row["seed"] = o.point.seed
        row["run"] = o.point.key
        row["status"] = "failed" if o.status == "failed" else "ok"
        row["error"] = o.error or ""
        if o.summary is not None:
            row.update(flatten_summary(o.summary))
        rows.append(row)
    return pd.DataFrame(rows)


def flows_table(outcomes: Sequence[Outcome], param_names: Sequence[str]) -> pd.DataFrame:
    import pandas as pd

    rows = []
    for o in outcomes:
        if o.summary is None:
            continue
        base = {p: _param_value(o.point.params.get(p)) for p in param_names}
        for f in o.summary.get("flows", []):
            rows.append({**base, "seed": o.point.seed, "run": o.point.key, **f})
    return pd.DataFrame(rows)


def stats_table(runs: pd.DataFrame, param_names: Sequence[str]) -> pd.DataFrame:
    """Mean ± 95% CI (Student t, n-1 degrees of freedom) across seeds."""
    import numpy as np
    import pandas as pd

    ok = runs[runs["status"] == "ok"] if "status" in runs else runs
    skip = set(param_names) | {"seed", "run", "status", "error"}
    # Metrics no run has (e.g. the L4S:Classic ratio without L4S flows) are left out.
    metrics = [c for c in ok.columns if c not in skip and pd.api.types.is_numeric_dtype(ok[c]) and ok[c].notna().any()]
    if ok.empty or not metrics:
        return pd.DataFrame(columns=[*param_names, "metric", "n", "mean", "std", "ci95", "ci95_lo", "ci95_hi"])
    keys = list(param_names)
    groups = ok.groupby(keys, sort=False, dropna=False) if keys else [((), ok)]
    rows = []
    for key, g in groups:
        key_t = key if isinstance(key, tuple) else (key,)
        # Replications are distinct seeds; copies of one run (a grid that
        # repeats a seed) narrow nothing.
        distinct_seeds = g["seed"].nunique() if "seed" in g else len(g)
        for m in metrics:
            x = g[m].to_numpy(dtype=float)
            x = x[~np.isnan(x)]
            n = len(x)
            n_distinct = min(len(np.unique(x)), distinct_seeds) if n else 0
            mean = float(x.mean()) if n else math.nan
            std = float(x.std(ddof=1)) if n > 1 else math.nan
            lo, hi = _interval95(x, bounded=_is_fraction(m)) if n_distinct > 1 else (math.nan, math.nan)
            rows.append(
                {**dict(zip(keys, key_t, strict=True)), "metric": m, "n": n, "n_distinct": n_distinct, "mean": mean,
                 "std": std, "ci95": (hi - lo) / 2, "ci95_lo": lo, "ci95_hi": hi}
            )  # fmt: skip
    return pd.DataFrame(rows)


#: Metrics that live in [0, 1]: their intervals must too.
_FRACTION_SUFFIXES = ("jain", "utilization", "drop_rate", "mark_rate", "loss_rate")


def _is_fraction(metric: str) -> bool:
    return metric.rsplit(".", 1)[-1] in _FRACTION_SUFFIXES


def _interval95(x: Any, *, bounded: bool) -> tuple[float, float]:
    """Student-t 95% interval of the mean; for a metric bounded in [0, 1],
    the t-interval of the logit of the values, mapped back (it stays inside
    (0, 1) and is asymmetric near the bounds, where a plain t-interval would
    cross them)."""
    import numpy as np

    n = len(x)
    t = t_quantile_975(n - 1)
    if not bounded:
        half = t * float(np.std(x, ddof=1)) / math.sqrt(n)
        m = float(np.mean(x))
        return m - half, m + half
    eps = 1e-6
    z = np.log(np.clip(x, eps, 1 - eps) / (1 - np.clip(x, eps, 1 - eps)))
    half = t * float(np.std(z, ddof=1)) / math.sqrt(n)
    mz = float(np.mean(z))
    inv = lambda v: 1.0 / (1.0 + math.exp(-v))  # noqa: E731
    return inv(mz - half), inv(mz + half)


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
        from aqmlab.results import _parquet_bytes
        from aqmlab.scenario import atomic_write_bytes

        out = Path(out_dir)
        files = {name: atomic_write_bytes(out / f"{name}.parquet", _parquet_bytes(getattr(self, name)))
                 for name in ("runs", "flows", "stats")}  # fmt: skip
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
        s = SweepSpec(base=base, grid={k: list(v) for k, v in (grid or {}).items()},
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


def _looks_like_sweep(path: str | os.PathLike[str]) -> bool:
    from aqmlab.scenario import read_text_file

    try:
        tree = tomllib.loads(read_text_file(Path(path), "sweep"))
    except (ScenarioError, ValueError, RecursionError):  # TOMLDecodeError, UnicodeDecodeError are ValueErrors
        return True  # let SweepSpec.load report it
    return "sweep" in tree or "grid" in tree


class _CallableModule(types.ModuleType):
    """Lets ``aqmlab.sweep(...)`` call :func:`sweep` while ``aqmlab.sweep``
    stays this module (so ``import aqmlab.sweep as m; m.SweepSpec`` works too)."""

    def __call__(self, *args: Any, **kwargs: Any) -> SweepResult:
        return sweep(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
