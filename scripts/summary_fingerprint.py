#!/usr/bin/env python3
"""Fingerprint every example and benchmark scenario's summary, to check that a
refactoring of the engine leaves results bit-identical.

    python scripts/summary_fingerprint.py > before.txt
    ... change the engine ...
    python scripts/summary_fingerprint.py > after.txt && diff before.txt after.txt

Each scenario (examples/*.toml, every point of examples/sweep.toml's grid and
seeds, and every benchmark scenario of ``aqmlab bench``, those on request
included, at a shortened length)
is written as JSON and run by the engine's ``results_digest`` example
(release build), which writes the summary without its wall-clock fields and
every table; the script prints one line per scenario: the SHA-256 of the
summary, that of the tables, and the scenario's name.
Needs no Python extension (only the engine crate and the standard library).
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import itertools
import json
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

#: Benchmark scenarios are long (10-30 s of a 10 Gbit/s link); a shorter run
#: exercises the same code paths. The length per benchmark name: D's 12 ms
#: include its first incast (at 10 ms); D-1024 shares D's code paths, so 2 ms.
BENCH_DURATION = {
    "A-10": "2s", "A-100": "1s", "A-10-ack1": "2s", "A-100-ack1": "1s", "B": "5s",
    "C-10": "2s", "C-1000": "200ms", "C-10000": "50ms",
    "D": "12ms", "D-ack1": "12ms", "D-1024": "2ms", "D-1024-ack1": "2ms", "D-codel": "12ms",
    # The trees with another discipline on every port (on request in `aqmlab
    # bench`): D-codel's length, so that each discipline's path is checked.
    "D-pie": "12ms", "D-pi2": "12ms", "D-red": "12ms", "D-dualpi2": "12ms", "D-curvy_red": "12ms",
    "D-vdq_csaqm": "12ms",
    # The chains (on request): every packet crosses every link, so 20 ms covers them.
    "chain-1": "20ms", "chain-4": "20ms", "chain-16": "20ms", "chain-64": "20ms",
    # The dumbbells with access links (on request): their base scenario's length.
    "A-10-access": "2s", "C-10000-access": "50ms",
    # The web workloads (on request): 2 s, about 4 000 flows.
    "W": "2s", "W-access": "2s",
}


def _set_path(tree: dict[str, Any], path: str, value: Any) -> None:
    """Set ``a.b[0].c``-style paths (the sweep grid's keys)."""
    parts: list[str | int] = []
    for piece in path.split("."):
        m = re.fullmatch(r"([^\[]+)((?:\[\d+\])*)", piece)
        assert m, path
        parts.append(m.group(1))
        parts += [int(i) for i in re.findall(r"\[(\d+)\]", m.group(2))]
    node: Any = tree
    for p in parts[:-1]:
        node = node[p]
    node[parts[-1]] = value


def _sweep_points(path: Path) -> dict[str, dict[str, Any]]:
    with path.open("rb") as f:
        sweep = tomllib.load(f)
    with (path.parent / sweep["sweep"]["base"]).open("rb") as f:
        base = tomllib.load(f)
    grid = sweep.get("grid", {})
    out = {}
    for values in itertools.product(*grid.values()):
        for seed in range(1, int(sweep["sweep"].get("seeds", 1)) + 1):
            s = copy.deepcopy(base)
            for k, v in zip(grid, values):
                _set_path(s, k, v)
            s["seed"] = seed
            tag = ",".join(f"{k}={v}" for k, v in zip(grid, values))
            out[f"{path.stem}[{tag},seed={seed}]"] = s
    return out


def bench_module() -> Any:
    """python/aqmlab/bench.py, loaded alone (no compiled extension needed):
    the benchmark scenarios' trees (``scenario(name, duration, metrics)``)."""
    spec = importlib.util.spec_from_file_location("_aqmlab_bench", ROOT / "python/aqmlab/bench.py")
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def scenarios() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for p in sorted(EXAMPLES.glob("*.toml")):
        with p.open("rb") as f:
            tree = tomllib.load(f)
        if "sweep" in tree:
            out.update(_sweep_points(p))
        else:
            out[p.stem] = tree
    bench = bench_module()
    missing = sorted(set(bench.ALL_SCENARIOS) - set(BENCH_DURATION))
    if missing:
        # A benchmark left out would go unchecked without anyone noticing.
        raise SystemExit(f"summary_fingerprint.py: no shortened length for bench scenario(s) {', '.join(missing)}; add them to BENCH_DURATION")
    for name in bench.ALL_SCENARIOS:
        for metrics in ("default", "samples"):
            out[f"bench-{name}-{metrics}"] = bench.scenario(name, BENCH_DURATION[name], metrics)
    return out


def main() -> int:
    # ``--exe PATH``: a results_digest binary built elsewhere (e.g. from main, kept
    # aside) instead of building this tree's.
    if len(sys.argv) == 3 and sys.argv[1] == "--exe":
        exe = Path(sys.argv[2])
    else:
        subprocess.run(["cargo", "build", "-q", "--release", "-p", "aqmlab-engine", "--example", "results_digest"],
                       cwd=ROOT, check=True)
        exe = ROOT / "target/release/examples/results_digest"
    with tempfile.TemporaryDirectory() as tmp:
        for name, tree in scenarios().items():
            scen = Path(tmp) / "scenario.json"
            summ = Path(tmp) / "summary.json"
            scen.write_text(json.dumps(tree))
            proc = subprocess.run([str(exe), str(scen), str(summ)], capture_output=True, text=True)
            if proc.returncode != 0:
                print(f"FAILED {name}: {proc.stderr.strip()[-500:]}", file=sys.stderr)
                print(f"FAILED {name}")
                continue
            summary, _, tables = summ.read_bytes().partition(b"\n")
            print(f"{hashlib.sha256(summary).hexdigest()[:32]} {hashlib.sha256(tables).hexdigest()[:32]} {name}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
