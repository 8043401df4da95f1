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

_LAZY = {
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


def __getattr__(name: str) -> Any:
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


# `aqmlab.sweep` is the function, imported eagerly and last: importing the
# submodule `aqmlab.sweep` for the first time binds the package attribute
# `sweep` to the module, and this import runs that first import before it
# rebinds the name to the function, so nothing imported later replaces it.
# Lazily, a later `from aqmlab.sweep import ...` would. The module is light
# (standard library and aqmlab.scenario; pandas loads on first use).
from aqmlab.sweep import SweepFailed, SweepResult, sweep  # noqa: E402
