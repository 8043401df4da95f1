"""Running a sweep's points: each point a validated, content-hashed scenario;
finished runs cached one file per run; the rest simulated in a local process
pool (loky) or on a dask cluster.

Each run is cached under a content hash of the normalised scenario (seed
included) and the engine build, written atomically; a re-run, or a run after
an interruption, simulates only what is missing. Failed runs are reported
and never cached; they never remove cached successes.

Below :mod:`aqmlab.tables` (statistics over the outcomes) and
:mod:`aqmlab.sweep` (sweep files, the public ``sweep`` function), which
re-exports the names here.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aqmlab import _engine
from aqmlab._io import remove_orphaned_temporaries
from aqmlab.scenario import ScenarioError, atomic_write_text, check_tree, set_path

__all__ = [
    "Cache",
    "Outcome",
    "Point",
    "SweepError",
    "SweepProgress",
    "DEFAULT_CACHE_DIR",
    "content_hash",
    "engine_build_id",
    "make_point",
    "run_points",
]

DEFAULT_CACHE_DIR = ".aqmlab-cache"


class SweepError(ScenarioError):
    """A sweep file or grid is invalid (one line; the CLI exits with code 2)."""


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

    def remove_orphaned_temporaries(self) -> int:
        """Remove entries' temporary files left by writers killed with
        SIGKILL mid-write (see `aqmlab._io.remove_orphaned_temporaries`);
        every sweep and reproduction does this when it opens the cache."""
        return remove_orphaned_temporaries(self.dir, "*/*.json")


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
    if scheduler is not None and backend != "dask":  # was ignored: the runs went to the local pool
        raise SweepError(f"scheduler: {scheduler!r}: a scheduler address needs backend='dask'")
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
    if cache is not None:
        cache.remove_orphaned_temporaries()
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
    except BaseException as e:
        # Stop now: cancel what has not started and end running workers.
        # Finished runs are already in the cache.
        ex.shutdown(wait=False, kill_workers=True)
        if not isinstance(e, KeyboardInterrupt) and _caused_by_interrupt(e):
            # A Ctrl-C that lands while loky starts a worker comes out of its
            # launch as an UnboundLocalError (loky 3.7, popen_loky_posix.py:
            # the clean-up reads a pipe that was never made). The user
            # pressed Ctrl-C: report that, as for any other moment.
            raise KeyboardInterrupt from e
        raise


def _caused_by_interrupt(e: BaseException) -> bool:
    """Whether a KeyboardInterrupt is among the exceptions `e` was raised from."""
    seen: set[int] = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, KeyboardInterrupt):
            return True
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return False


#: Submissions of one run before an error of the cluster (not of the
#: simulation) makes it a failed run. Our choice: a run lost to a worker or
#: the client twice in a row points to the cluster, not to bad luck.
DASK_TRIES = 3


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
        futures, tries = {}, {}
        for p in todo:
            fut = client.submit(_simulate, *_args(p), key=f"aqmlab-{p.key}", pure=False)
            futures[fut], tries[p.key] = p, 1
        pending = as_completed(list(futures))
        for fut in pending:
            p = futures.pop(fut)
            try:
                res = fut.result()
            except Exception as e:
                # _simulate returns a simulation's failure as ("failed", ...):
                # an exception here is the cluster's (a worker lost beyond
                # dask's own retries, a client-side error). Submit the run
                # again, up to DASK_TRIES times, before calling it failed.
                if tries[p.key] < DASK_TRIES:
                    tries[p.key] += 1
                    again = client.submit(_simulate, *_args(p), key=f"aqmlab-{p.key}-try{tries[p.key]}", pure=False)
                    futures[again] = p
                    pending.add(again)
                    continue
                res = ("failed", f"{type(e).__name__}: {e} (after {DASK_TRIES} submissions)")
            finish(outcome_of(p, res))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
