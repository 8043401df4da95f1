"""dualq-coexistence's seed-style figures from the showcased runs: the
queue-delay CDF per class (the seed's QSIZE CDF slides, X = [0:100] ms) and
PIE's drop probability over time (the DROP PROBABILITY PIE* backup slide),
each with the table of its numbers."""

from __future__ import annotations

from typing import Any

import numpy as np

from aqmlab.reproduce.framework import Runs

#: The seed's x axis for the queue-size CDFs.
CDF_MAX_MS = 100.0
#: "PIE only drops above 10%" (seed 000, DROP PROBABILITY PIE*).
PIE_DROP_ABOVE = 0.10


def _cdfs(result: Any) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per sub-queue (or the whole queue when it has none): upper bucket
    edges in ms and the cumulative fraction of packets."""
    h = result.tables["sojourn_hist"]
    h = h[h["queue"] == "bottleneck"]
    subs = sorted(set(h["subqueue"]) - {"all"}) or ["all"]
    out = {}
    for sub in subs:
        g = h[h["subqueue"] == sub].sort_values("hi_ns")
        counts = g["count"].to_numpy(dtype=float)
        if counts.sum() > 0:
            out[sub] = (g["hi_ns"].to_numpy() / 1e6, np.cumsum(counts) / counts.sum())
    return out


def _quantile(edges_ms: np.ndarray, cdf: np.ndarray, q: float) -> float:
    return float(edges_ms[min(int(np.searchsorted(cdf, q)), len(edges_ms) - 1)])


def _pie_p(result: Any) -> tuple[np.ndarray, np.ndarray]:
    p = result.tables["probes"]
    p = p[(p["owner"] == "bottleneck") & (p["probe"] == "p")]
    return p["t_s"].to_numpy(), p["value"].to_numpy()


#: Per-flow throughput bins (s) of the throughput panels.
BIN_S = 5.0


def _per_flow_mbps(result: Any) -> dict[int, tuple[str, np.ndarray, np.ndarray]]:
    """Flow id -> (label, bin end times in s, goodput in Mbit/s per BIN_S bin),
    from each flow's cumulative delivered bytes."""
    from aqmlab.windows import binned_goodput_mbps

    ts = result.tables["flow_ts"]
    out = {}
    for fid, g in ts.groupby("flow"):
        ends, mbps = binned_goodput_mbps(g["t_ns"].to_numpy() / 1e9, g["delivered_bytes"], BIN_S)
        out[int(fid)] = (str(g["label"].iloc[0]), ends, mbps)
    return out


def _panel_runs(runs: Runs) -> list[tuple[str, Any]]:
    return sorted((label, r) for label, r in runs.showcased.items() if label.split("/")[0] in ("curvy_red", "dualpi2"))


def throughput_panels(runs: Runs) -> Any:
    """The seed's THROUGHPUT DUALQ slides: each flow's throughput over the
    run (5 s bins), one panel per showcased mix, Y = [0:80/N] Mbit/s."""
    import matplotlib.pyplot as plt

    shown = _panel_runs(runs)
    if not shown:
        return None
    cols = 3
    rows = (len(shown) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.6 * rows), layout="constrained", squeeze=False)
    for ax, (label, r) in zip(axes.flat, shown):
        flows = _per_flow_mbps(r)
        for label_f, t, mbps in flows.values():
            ax.plot(t, mbps, lw=0.7, color="#1f77b4" if label_f != "cubic" else "#d62728")
        ax.set_ylim(0, 80 / max(1, len(flows)))
        ax.set_xlim(0, r.summary["duration_s"])
        ax.set_title(label, fontsize="small")
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(shown):]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel("Mbit/s per flow")
    for ax in axes[-1]:
        ax.set_xlabel("time (s)")
    fig.suptitle("Per-flow throughput (blue: L4S, red: CUBIC; Y = [0:80/N] as the seed)", fontsize="medium")
    return fig


def figures(runs: Runs) -> dict[str, Any]:
    import matplotlib.pyplot as plt

    figs: dict[str, Any] = {"throughput-panels": throughput_panels(runs)}
    shown = {label: r for label, r in runs.showcased.items() if label.endswith("/1d1c")}
    if shown:
        fig, axes = plt.subplots(1, len(shown), figsize=(3.2 * len(shown), 3.2), layout="constrained", squeeze=False)
        for ax, (label, r) in zip(axes[0], sorted(shown.items()), strict=True):
            for sub, (x, y) in _cdfs(r).items():
                ax.step(x, 100 * y, where="post", label={"all": "whole queue"}.get(sub, sub))
            ax.set_xlim(0, CDF_MAX_MS)
            ax.set_ylim(0, 105)
            ax.set_title(label.split("/")[0] + ", 1 DCTCP + 1 CUBIC")
            ax.set_xlabel("queue delay (ms)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize="small")
        axes[0][0].set_ylabel("packets (%)")
        figs["qsize-cdf"] = fig
    pie = {label: r for label, r in runs.showcased.items() if label.startswith("pie/")}
    if pie:
        fig, ax = plt.subplots(figsize=(8, 3.2), layout="constrained")
        for label, r in sorted(pie.items()):
            t, p = _pie_p(r)
            ax.plot(t, 100 * p, lw=0.8, label=label)
        ax.axhline(100 * PIE_DROP_ABOVE, color="k", lw=0.8, ls="--", label="10 %: PIE drops instead of marking above")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("PIE probability (%)")
        ax.set_title("PIE's drop/mark probability (the seed's DROP PROBABILITY PIE* slide)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
        figs["pie-probability"] = fig
    return figs


def tables(runs: Runs) -> dict[str, str]:
    out: dict[str, str] = {}
    rows = ["| case | sub-queue | p10 (ms) | p50 (ms) | p90 (ms) | p99 (ms) |", "|---|---|---|---|---|---|"]
    for label, r in sorted(runs.showcased.items()):
        if label.endswith("/1d1c"):
            for sub, (x, y) in _cdfs(r).items():
                q = [_quantile(x, y, v) for v in (0.1, 0.5, 0.9, 0.99)]
                rows.append(f"| {label} | {sub} | " + " | ".join(f"{v:.3g}" for v in q) + " |")
    if len(rows) > 2:
        out["qsize-cdf"] = "\n".join(rows) + "\n"
    rows = ["| case | mean p (%) | time above 10 % (share of samples) | max p (%) |", "|---|---|---|---|"]
    for label, r in sorted(runs.showcased.items()):
        if label.startswith("pie/"):
            t, p = _pie_p(r)
            warm = t >= r.summary["warmup_s"]
            if warm.any():
                pw = p[warm]
                rows.append(f"| {label} | {100 * pw.mean():.3g} | {(pw > PIE_DROP_ABOVE).mean():.3g} | {100 * pw.max():.3g} |")
    if len(rows) > 2:
        out["pie-probability"] = "\n".join(rows) + "\n"
    rows = ["| case | class | flows | mean Mbit/s per flow (after warm-up) | lowest flow | highest flow |",
            "|---|---|---|---|---|---|"]
    for label, r in _panel_runs(runs):
        flows = _per_flow_mbps(r)
        for cls in sorted({f[0] for f in flows.values()}):
            means = [float(m[t > r.summary["warmup_s"]].mean()) for lab, t, m in flows.values() if lab == cls]
            rows.append(f"| {label} | {cls} | {len(means)} | {np.mean(means):.3g} | {min(means):.3g} | {max(means):.3g} |")
    if len(rows) > 2:
        out["throughput-panels"] = "\n".join(rows) + "\n"
    return out
