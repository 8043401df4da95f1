"""aqmlab: packet-level AQM and congestion-control experiments.

    import aqmlab
    r = aqmlab.run("examples/dumbbell.toml")     # or a Scenario, or a dict
    r.flows                                       # pandas DataFrame, one row per flow
    r.plot.goodput()                              # matplotlib Figure
    r.save("out/dumbbell")                        # summary.json, Parquet, PNG, report.html

    s = aqmlab.sweep("examples/sweep.toml", jobs=2)
    s.stats                                       # mean ± 95% CI across seeds

The simulation runs in the Rust engine (``aqmlab._engine``); this package
reads scenarios, drives runs and sweeps, and turns results into tables,
plots and reports. Heavy modules (pandas, matplotlib) load on first use.
"""

from __future__ import annotations

import importlib
import json
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from aqmlab import _engine
from aqmlab._engine import ScenarioError

__version__: str = _engine.__version__

__all__ = [
    "__version__",
    "Bottleneck",
    "FlowGroup",
    "Link",
    "Metrics",
    "RateChange",
    "Result",
    "Reverse",
    "Scenario",
    "ScenarioError",
    "SizeDist",
    "SweepFailed",
    "SweepResult",
    "Tcp",
    "Topology",
    "Workload",
    "compare",
    "load",
    "loads",
    "registry",
    "run",
    "sweep",
    "validate",
]

# `aqmlab.sweep` is a module that is also callable: aqmlab.sweep(...) is
# aqmlab.sweep.sweep(...), whichever way it was imported. Like the rest it
# loads on first use (`aqmlab run` does not need it).
_LAZY_MODULES = {"sweep": "aqmlab.sweep"}

_LAZY = {
    "SweepResult": "aqmlab.sweep",
    "SweepFailed": "aqmlab.sweep",
    "compare": "aqmlab.compare",
    "Result": "aqmlab.results",
    "run": "aqmlab.results",
    "Scenario": "aqmlab.scenario",
    "Bottleneck": "aqmlab.scenario",
    "Reverse": "aqmlab.scenario",
    "RateChange": "aqmlab.scenario",
    "Topology": "aqmlab.scenario",
    "Link": "aqmlab.scenario",
    "FlowGroup": "aqmlab.scenario",
    "Workload": "aqmlab.scenario",
    "SizeDist": "aqmlab.scenario",
    "Tcp": "aqmlab.scenario",
    "Metrics": "aqmlab.scenario",
    "load": "aqmlab.scenario",
    "loads": "aqmlab.scenario",
    "validate": "aqmlab.scenario",
}

if TYPE_CHECKING:
    from aqmlab import sweep
    from aqmlab.compare import compare
    from aqmlab.results import Result, run
    from aqmlab.scenario import (
        Bottleneck,
        FlowGroup,
        Link,
        Metrics,
        RateChange,
        Reverse,
        Scenario,
        SizeDist,
        Tcp,
        Topology,
        Workload,
        load,
        loads,
        validate,
    )
    from aqmlab.sweep import SweepFailed, SweepResult


def __getattr__(name: str) -> Any:
    if name in _LAZY_MODULES:
        return importlib.import_module(_LAZY_MODULES[name])
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'aqmlab' has no attribute '{name}'")
    value = getattr(importlib.import_module(mod), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


@lru_cache(maxsize=1)
def _registry_cached() -> str:
    return _engine.registry()


def registry() -> dict[str, Any]:
    """Every AQM and congestion control the engine knows, with summaries and
    default parameters: ``{"aqm": {name: {...}}, "cc": {...}, "ecn": [...]}``."""
    return json.loads(_registry_cached())
