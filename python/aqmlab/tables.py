"""Tables of a sweep: one row per run, one row per flow per run, and
statistics over replications (mean, standard deviation and 95% Student-t
confidence interval across seeds, per grid point and metric).

This module imports pandas and numpy lazily: ``import aqmlab`` stays light.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from aqmlab.runner import Outcome

__all__ = ["flatten_summary", "flows_table", "runs_table", "stats_table", "t_quantile_975"]


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
    # The logit clip (1e-6 from the bounds) and the mean of logits can leave
    # the arithmetic mean just outside; an interval must hold its own mean.
    m = float(np.mean(x))
    return min(inv(mz - half), m), max(inv(mz + half), m)
