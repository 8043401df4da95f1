"""qcn-hotspot: QCN at an output-generated hotspot, with and without Fb-hat.

Seed 003: Kabbani, Pan, Prabhakar, Seaman, "QCN Transience and Equilibrium:
Response and Stability" (IEEE 802.1Qau presentation). The scenario is the
seed's "0.5G Hotspot": 10 sources share a 10 Gbit/s link whose capacity
drops to 0.5 Gbit/s from 2 s to 4 s; maximum offered rate 1.05 Gbit/s per
source; RTT 40 µs; buffer 100 packets; Q_eq = 22 packets; Fb-hat saturated
at 31; byte-counter cycles of 100 packets, 50 when Fb-hat is 0 or 1, in Fast
Recovery and Active Increase alike; AI amount 25 Mbit/s. The rest is
802.1Qau's (w = 2, G_d = 1/128, R_HAI 50 Mbit/s, 15 ms timer). Claims, as
the seed and the spec digest (§14(3)) state them:

* Equilibrium: the queue is driven to Q_eq and the link is fully used.
* After the capacity drop the sources' rates converge to the new capacity
  and the buffer does not overflow except briefly at the transition.
* After capacity returns, Fast Recovery / Active / Hyper-Active Increase
  restore full utilisation within tens of milliseconds.
* Fb-hat "allows a source to recover available bandwidth quicker", and "in
  equilibrium, Fb-hat will be more than 1, hence no cycle-shrinking should
  occur, hence stability is preserved".

The engine's summary covers a measurement window [warmup, duration], so
each phase is its own case: the same scenario (deterministic, so every
window sees the same run) stopped at the window's end with the warm-up at
its start. The full timeline runs once per setting with 1 ms time series for
the figures. Quick: the 0.5 Gbit/s hotspot, one seed; full: also the seed's
1 and 2 Gbit/s hotspots, three seeds.
"""

from __future__ import annotations

from typing import Any

from aqmlab.judging import Band
from aqmlab.reproduce.framework import Case, Claim, Experiment, Runs, queue_of, total_goodput, whole_run_claim

LINK_BPS = 10e9
PKT_BITS = 1500 * 8
Q_EQ = 22
#: name -> (warm-up, end): the measurement windows, seconds.
WINDOWS = {
    "10g": (1.0, 2.0),  # equilibrium at 10 Gbit/s
    "drop": (2.0, 2.1),  # the first 100 ms after the capacity drop
    "low": (2.1, 4.0),  # the reduced capacity, once past the transition
    "recovery": (4.0, 4.2),  # the first 200 ms after capacity returns
    "timeline": (0.0, 6.0),  # everything, with time series (figures)
}


def _window_rate(window: str, drop_gbps: float) -> float:
    return drop_gbps * 1e9 if window in ("drop", "low") else LINK_BPS


def mean_queue_pkts(s: dict[str, Any], rate_bps: float) -> float | None:
    """Mean queue in packets seen by departing packets (Little: mean sojourn x rate)."""
    soj = queue_of(s).get("sojourn_ms") or {}
    m = soj.get("mean")
    return None if m is None else m * 1e-3 * rate_bps / PKT_BITS


def lost_capacity_ms(s: dict[str, Any]) -> float:
    """Unused link time in the window: (1 - utilisation) x window length, ms.

    For a link that is idle until t and then full this is t; for a ramp it
    is the time-equivalent of the capacity not used ("capacity-equivalent
    recovery time").
    """
    warm, end = s["warmup_s"], s["duration_s"]
    return (1.0 - queue_of(s)["utilization"]) * (end - warm) * 1e3


class QcnHotspot(Experiment):
    name = "qcn-hotspot"
    title = "QCN: transience and equilibrium at a hotspot (Kabbani, Pan, Prabhakar, Seaman)"
    source = "seed 003: Kabbani, Pan, Prabhakar, Seaman, 'QCN Transience and Equilibrium: Response and Stability'"
    description = (
        "Ten QCN sources (1.05 Gbit/s each) share a 10 Gbit/s link whose capacity drops to 0.5 Gbit/s from 2 s "
        "to 4 s (RTT 40 µs, buffer 100 packets, Q_eq 22 packets), with and without the Fb-hat extension. Each "
        "phase is measured in its own window of the same run. Quick: 0.5 Gbit/s, one seed; full: 0.5, 1 and "
        "2 Gbit/s hotspots, three seeds."
    )
    requires_aqm = ("qcn",)
    requires_cc = ("qcn",)

    def drops(self, quick: bool) -> tuple[float, ...]:
        return (0.5,) if quick else (0.5, 1.0, 2.0)

    def scenario(self, drop_gbps: float, fbhat: bool, window: str) -> dict[str, Any]:
        warm, end = WINDOWS[window]
        series = window == "timeline"
        return {
            "name": f"qcn-hotspot-{drop_gbps}g-{'fbhat' if fbhat else 'base'}-{window}",
            "description": f"10 QCN sources, 10 Gbit/s link at {drop_gbps} Gbit/s during 2-4 s; window {window}",
            "duration": f"{end}s",
            "warmup": f"{warm}s",
            "bottleneck": {
                "rate": "10Gbps",
                "buffer": "100pkt",
                "aqm": "qcn",
                "params": {"q_eq": f"{Q_EQ}pkt"},
                "rate_schedule": [{"at": "2s", "rate": f"{drop_gbps}Gbps"}, {"at": "4s", "rate": "10Gbps"}],
            },
            "flows": [
                {
                    "cc": "qcn",
                    "label": "qcn",
                    "count": 10,
                    "rtt": "40us",
                    "rate": "1.05Gbps",
                    "packet_size": "1500B",
                    "start_jitter": "100us",
                    # Seed 003 simulation parameters: AI amount 25 Mbit/s, 100-packet
                    # cycles in FR and AI (no halving), Fb-hat as the case says.
                    "params": {"r_ai": "25Mbps", "halve_ai_cycles": False, "fbhat": fbhat},
                }
            ],
            "metrics": {"interval": "1ms", "timeseries": series, "sojourn_histograms": True},
        }

    def cases(self, quick: bool) -> list[Case]:
        return [
            Case(f"{d}g/{'fbhat' if fb else 'base'}/{w}", self.scenario(d, fb, w), {"drop_gbps": d, "fbhat": fb, "window": w})
            for d in self.drops(quick)
            for fb in (True, False)
            for w in WINDOWS
        ]

    def showcase(self, quick: bool) -> list[str]:
        return [f"{d}g/{fb}/timeline" for d in self.drops(quick) for fb in ("fbhat", "base")]

    def claims(self) -> list[Claim]:
        def on(window: str, fn: Any, fbhat: bool = True) -> Any:
            return lambda runs: runs.mean_over(runs.select(drop_gbps=0.5, fbhat=fbhat, window=window), fn)

        def queue_at(window: str, fbhat: bool = True) -> Any:
            return on(window, lambda s: mean_queue_pkts(s, _window_rate(window, 0.5)), fbhat)

        def ratio(a: Any, b: Any) -> Any:
            def f(runs: Runs) -> float | None:
                x, y = a(runs), b(runs)
                return None if not y else x / y

            return f

        util = lambda s: queue_of(s)["utilization"]  # noqa: E731
        drops = lambda s: queue_of(s)["drops"]  # noqa: E731
        src = "seed 003, '0.5G Hotspot' simulations; spec digest §14(3)"
        return [
            whole_run_claim("10 Gbit/s: the link is fully used", "≈ 1 (rate plot: sources share 10 Gbit/s)", src,
                  on("10g", util), Band.at_least(0.95), "pass if utilisation ≥ 0.95 (1-2 s)"),
            whole_run_claim("10 Gbit/s: the queue is held near Q_eq", "≈ 22 packets (Q_eq)", "seed 003: 'Goal: Drive Q to Q_eq'",
                  queue_at("10g"), Band.between(0.5 * Q_EQ, 2 * Q_EQ), "pass if 11-44 packets (1-2 s)", "pkt"),
            whole_run_claim("0.5 Gbit/s: the sources' total rate converges to the capacity", "≈ 0.5 Gbit/s", src,
                  on("low", lambda s: total_goodput(s) / 0.5e9), Band.between(0.9, 1.1),
                  "pass if 0.9-1.1 × capacity (2.1-4 s)", "× C"),
            whole_run_claim("0.5 Gbit/s: the queue is held near Q_eq", "≈ 22 packets (Q_eq)", src,
                  queue_at("low"), Band.between(0.5 * Q_EQ, 2 * Q_EQ), "pass if 11-44 packets (2.1-4 s)", "pkt"),
            whole_run_claim("0.5 Gbit/s: no buffer overflow once past the transition", "little or no loss", "spec digest §14(3)",
                  on("low", drops), Band.at_most(0.0), "pass if 0 drops in 2.1-4 s", "pkt", 4),
            whole_run_claim("Capacity drop: overflow only briefly, at the transition", "brief (not quantified)", "spec digest §14(3)",
                  on("drop", drops), Band.at_most(2000.0), "pass if ≤ 2000 drops in 2.0-2.1 s (≈ 2.4 ms of 10 Gbit/s arrivals)",
                  "pkt", 4),
            whole_run_claim("Capacity returns: full utilisation within tens of ms (Fb-hat)", "tens of ms", "spec digest §14(3); seed 003",
                  on("recovery", lost_capacity_ms), Band.at_most(100.0), "pass if lost capacity in 4.0-4.2 s < 100 ms", "ms"),
            whole_run_claim("Fb-hat recovers the bandwidth quicker", "quicker (rate zoomed-in plot)", "seed 003: 'Improvement in Transience'",
                  ratio(on("recovery", lost_capacity_ms), on("recovery", lost_capacity_ms, fbhat=False)),
                  Band.at_most(0.95), "pass if lost capacity with / without Fb-hat < 0.95 (4.0-4.2 s)", "×"),
            whole_run_claim("Fb-hat keeps the equilibrium: same queue as without", "unchanged ('stability is preserved')",
                  "seed 003: 'in equilibrium, Fb-hat will be more than 1'",
                  ratio(queue_at("low"), queue_at("low", fbhat=False)), Band.between(0.75, 1.33),
                  "pass if mean queue with / without Fb-hat within 0.75-1.33 (2.1-4 s)", "×"),
        ]  # fmt: skip

    def figures(self, runs: Runs) -> dict[str, Any]:
        import matplotlib.pyplot as plt

        shown = runs.showcased
        if not shown:
            return {}
        drops = sorted({c.tags["drop_gbps"] for c in runs.cases})
        style = {"fbhat": ("#c33", "with Fb-hat"), "base": ("#36c", "without Fb-hat")}
        figs: dict[str, Any] = {}

        def series(label: str) -> tuple[Any, Any]:
            r = shown[label]
            ts = r.timeseries
            total = ts.groupby("t_s")["rate_bps"].sum() / 1e9
            qt = r.queue_timeseries
            q = qt[qt["queue"] == "bottleneck"].set_index("t_s")["backlog_pkts"]
            return total, q

        def capacity(ax: Any, d: float) -> None:
            ax.step([0, 2, 4, 6], [10, d, 10, 10], where="post", color="k", lw=0.8, ls="--", label="capacity")

        fig, axes = plt.subplots(len(drops), 1, figsize=(9, 2.8 * len(drops)), layout="constrained", squeeze=False)
        for ax, d in zip(axes[:, 0], drops, strict=True):
            for key in ("fbhat", "base"):
                label = f"{d}g/{key}/timeline"
                if label in shown:
                    total, _ = series(label)
                    ax.plot(total.index, total.values, color=style[key][0], lw=0.8, label=style[key][1])
            capacity(ax, d)
            ax.set_ylabel("total rate (Gbit/s)")
            ax.set_title(f"{d} Gbit/s hotspot: sum of the 10 sources' rates")
            ax.legend(fontsize="small", loc="lower left")
        axes[-1, 0].set_xlabel("time (s)")
        figs["rate"] = fig

        fig, axes = plt.subplots(1, 2, figsize=(11, 3.6), layout="constrained")
        colors = ("#c33", "#2a7", "#84c")
        for d, color in zip(drops, colors, strict=False):
            for key in ("fbhat", "base"):
                label = f"{d}g/{key}/timeline"
                if label not in shown:
                    continue
                total, q = series(label)
                ls = "-" if key == "fbhat" else ":"
                z = total[(total.index >= 3.98) & (total.index <= 4.3)]
                axes[0].plot(z.index, z.values, ls=ls, lw=1, color=color, label=f"{d}G, {style[key][1]}")
                zq = q[(q.index >= 1.99) & (q.index <= 2.1)]
                axes[1].plot(zq.index, zq.values, ls=ls, lw=1, color=color, label=f"{d}G, {style[key][1]}")
        axes[0].set_title("Recovery after 4 s (rate, zoomed in)")
        axes[0].set_ylabel("total rate (Gbit/s)")
        axes[0].set_xlabel("time (s)")
        axes[0].legend(fontsize="x-small")
        axes[1].axhline(Q_EQ, color="k", lw=0.8, ls="--", label="Q_eq")
        axes[1].axhline(100, color="grey", lw=0.8, ls="-.", label="buffer")
        axes[1].set_title("Capacity drop at 2 s (queue, zoomed in)")
        axes[1].set_ylabel("queue (packets)")
        axes[1].set_xlabel("time (s)")
        axes[1].legend(fontsize="x-small")
        figs["zoom"] = fig

        fig, ax = plt.subplots(figsize=(9, 3.2), layout="constrained")
        d = drops[0]
        for key in ("fbhat", "base"):
            label = f"{d}g/{key}/timeline"
            if label in shown:
                _, q = series(label)
                ax.plot(q.index, q.values, color=style[key][0], lw=0.6, alpha=0.8, label=style[key][1])
        ax.axhline(Q_EQ, color="k", lw=0.8, ls="--", label="Q_eq")
        ax.set_title(f"{d} Gbit/s hotspot: bottleneck queue (1 ms samples)")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("queue (packets)")
        ax.legend(fontsize="small")
        figs["queue"] = fig
        return figs
