"""Figures of the vdq-csaqm reproduction, laid out like the seed's slides:
per-flow throughput over time with the phase boundaries (the showcased runs'
time series), and per phase: the per-flow ratio, the L4S-side share, the
utilisation and the L4S/Classic queue delay. Every number drawn here is also
in the experiment's tables (VdqCsaqm.tables)."""

from __future__ import annotations

from typing import Any

from aqmlab.reproduce.framework import Runs
from aqmlab.windows import binned_goodput_mbps

COLORS = {"vdq_csaqm": "#2a7", "dualpi2": "#c84"}
CLASS_COLORS = ("#1f77b4", "#d62728")


def _timeseries(ax: Any, r: Any, exp: Any, phases: list[str], l4s: str) -> None:
    import numpy as np

    ts = r.timeseries
    step = 1.0  # s: per-flow goodput averaged over 1 s, as iperf reports it
    for label, color in ((l4s, CLASS_COLORS[0]), ("cubic", CLASS_COLORS[1])):
        d = ts[ts["label"] == label]
        means: dict[float, list[float]] = {}
        for _, f in d.groupby("flow"):
            grid, g = binned_goodput_mbps(f["t_ns"].to_numpy() / 1e9, f["delivered_bytes"], step)
            live = g > 0
            ax.plot(grid[live] - step / 2, g[live], color=color, lw=0.4, alpha=0.35)
            for x, v in zip(grid[live], g[live], strict=True):
                means.setdefault(float(x), []).append(float(v))
        full = np.arange(step, ts["t_s"].max() + 1e-9, step)  # a gap (no flow of the class) breaks the line
        mean = [sum(means[float(x)]) / len(means[float(x)]) if float(x) in means else np.nan for x in full]
        ax.plot(full - step / 2, mean, color=color, lw=1.6, label=f"{label} (mean per flow)")
    for i, name in enumerate(phases):
        ax.axvline(i * exp.phase_s, color="k", lw=0.6, ls=":")
        ax.text((i + 0.5) * exp.phase_s, 1.01, name, transform=ax.get_xaxis_transform(), ha="center", fontsize=7)
        ax.axvspan(i * exp.phase_s, i * exp.phase_s + exp.settle_s, color="0.9", lw=0)
    ax.set_yscale("log")
    ax.set_ylim(1, 2000)
    ax.set_xlabel("time (s); grey: settle time, not judged")
    ax.set_ylabel("goodput per flow (Mbit/s)")


def figures(exp: Any, runs: Runs) -> dict[str, Any]:
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib import ticker

    from aqmlab.reproduce.vdq_csaqm import (
        AQMS,
        CCS,
        HET_PHASES,
        PHASES,
        RATES,
        delay,
        per_flow,
        phase_name,
        predicted_util,
        ratio,
        share,
        utilization,
    )

    names = [phase_name(p) for p in PHASES]
    out: dict[str, Any] = {}
    shown = [(label, r) for label, r in runs.showcased.items() if label.count("/") == 2]
    if shown:
        fig, axes = plt.subplots(len(shown), 1, figsize=(12, 3.1 * len(shown)), layout="constrained", squeeze=False)
        for ax, (label, r) in zip(axes[:, 0], shown, strict=True):
            aqm, cc, _ = label.split("/")
            _timeseries(ax, r, exp, names, cc)
            ax.set_title(f"{aqm}: {cc} vs CUBIC, 1 Gbit/s, 5 ms (#L4S-side - #Classic per phase)", fontsize=9, pad=12)
            ax.legend(fontsize=7, loc="lower left")
        out["vdq-csaqm-timeseries"] = fig
    x = np.arange(len(PHASES))
    for rate in RATES:
        ccs = [cc for cc in CCS if runs.select(kind="phased", cc=cc, rate=rate)]
        if not ccs:
            continue
        fig, axes = plt.subplots(len(ccs), 4, figsize=(17, 2.9 * len(ccs)), layout="constrained", squeeze=False)
        for row, cc in enumerate(ccs):
            a1, a2, a3, a4 = axes[row]
            for i, aqm in enumerate(AQMS):
                label = f"{aqm}/{cc}/{rate}"
                if not runs.select(kind="phased", cc=cc, rate=rate, aqm=aqm):
                    continue
                col = COLORS[aqm]

                def m(fn: Any, label: str = label) -> list[float]:
                    return [runs.mean(label, lambda s, ph=ph: fn(s, ph)) for ph in names]

                a1.plot(x, m(lambda s, ph: ratio(s, ph, cc)), "o-", color=col, label=aqm)
                a2.bar(x + (i - 0.5) * 0.38, m(lambda s, ph: share(s, ph, cc)), 0.38, color=col, label=aqm)
                a3.plot(x, m(lambda s, ph: utilization(s, ph)), "o-", color=col, label=aqm)
                a4.plot(x, m(lambda s, ph: delay(s, ph, "l4s", "p99")), "o-", color=col, label=f"{aqm} L4S p99")
                a4.plot(x, m(lambda s, ph: delay(s, ph, "classic", "p99")), "s--", color=col, label=f"{aqm} Classic p99")
            a1.axhspan(3 / 7, 7 / 3, color="0.9", lw=0, label="7:3 .. 3:7")
            a1.axhline(1, color="k", lw=0.6)
            a1.set_yscale("log")
            a1.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            a1.yaxis.set_minor_formatter(ticker.NullFormatter())
            a1.set_ylabel(f"{cc}\nper-flow ratio L4S-side:CUBIC")
            a2.set_ylabel("L4S-side share of goodput")
            a2.set_ylim(0, 1)
            a3.plot(x, [predicted_util(p) for p in PHASES], "k:", lw=0.8, label="C_v/C (VDQ)")
            a3.set_ylabel("utilisation")
            a4.set_yscale("log")
            a4.set_ylabel("queue delay p99 (ms)")
            for a in (a1, a2, a3, a4):
                a.set_xticks(x, names, fontsize=7)
            if row == 0:
                for a in (a1, a2, a3, a4):
                    a.legend(fontsize=6)
        for a in axes[-1]:
            a.set_xlabel("phase (#L4S-side - #Classic)")
        fig.suptitle(f"Per phase, {RATES[rate]}, 5 ms (mean over seeds; judged window: phase minus settle time)")
        out[f"vdq-csaqm-phases-{rate}"] = fig
    het = runs.select(kind="het")
    if het:
        ccs = sorted({c.tags["cc"] for c in het})
        fig, axes = plt.subplots(1, len(ccs), figsize=(6 * len(ccs), 3.6), layout="constrained", squeeze=False)
        hx = np.arange(len(HET_PHASES))
        for ax, cc in zip(axes[0], ccs, strict=True):
            labs = (f"{cc}-5ms", f"{cc}-40ms", "cubic-5ms", "cubic-40ms")
            for i, aqm in enumerate(AQMS):
                label = f"{aqm}/{cc}/het-rtt"
                for j, lab in enumerate(labs):
                    vals = [runs.mean(label, lambda s, ph=phase_name(p), lab=lab: per_flow(s, ph, lab) / 1e6)
                            for p in HET_PHASES]  # fmt: skip
                    off = (i * 4 + j - 3.5) * 0.1
                    ax.bar(hx + off, vals, 0.1, color=COLORS[aqm], alpha=0.35 + 0.65 * (j % 2 == 0),
                           hatch="" if j < 2 else "//", label=f"{aqm} {lab}")  # fmt: skip
            ax.set_yscale("log")
            ax.set_xticks(hx, [phase_name(p) for p in HET_PHASES])
            ax.set_xlabel("#flows (L4S-5ms, L4S-40ms, Cl-5ms, Cl-40ms)")
            ax.set_ylabel("goodput per flow (Mbit/s)")
            ax.set_title(f"Heterogeneous RTT: {cc} - CUBIC, 1 Gbit/s")
            ax.legend(fontsize=6, ncol=2)
        out["vdq-csaqm-het-rtt"] = fig
    return out
