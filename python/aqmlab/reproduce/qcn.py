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

The seed's second part, "Scalability, Stability", is a grid: N sources
share a 10 Gbit/s link, "Starting rate of each source = 100/N G", RTT 40,
100, 200, 300, 400 µs, the same buffer, Q_eq, Fb-hat and RP settings. Its
claim: "QCN shows good stability when both the number of sources and RTT
are varied", and, at 100 sources and 400 µs, "increasing w weights the
derivative more and hence leads to less wiggly queues". Each (N, RTT) is a
case of its own (docs/results/qcn-hotspot.md gives every band's argument).

The engine's summary covers a measurement window [warmup, duration], so
each phase is its own case: the same scenario (deterministic, so every
window sees the same run) stopped at the window's end with the warm-up at
its start. The full timeline runs once per setting with 1 ms time series for
the figures. Quick: the 0.5 and 2 Gbit/s hotspots (the extremes of the
seed's three), the grid's corners (N 10 and 100 at 40 and 400 µs) and the
w = 4 case, one seed; full: every hotspot depth and grid point, three seeds.
"""

from __future__ import annotations

from typing import Any

from aqmlab.judging import Band, Tolerance
from aqmlab.reproduce.framework import Case, Claim, Experiment, Runs, queue_of, total_goodput

LINK_BPS = 10e9
PKT_BITS = 1500 * 8
Q_EQ = 22
#: The hotspot depths the seed shows ("0.5G, 1G, 2G Bottleneck"), Gbit/s.
DROPS_GBPS = (0.5, 1.0, 2.0)
#: The scalability grid (seed 003, "Simulations" under "Scalability, Stability"):
#: RTTs as listed; N = 10 ("Number of Sources = 10"), 100 ("100 sources, RTT =
#: 400 usecs") and 50 (issue 16's "50-100 sources"; the seed's legends are not
#: in its text).
GRID_N = (10, 50, 100)
GRID_RTT_US = (40, 100, 200, 300, 400)
#: The grid's measurement window, seconds: from 1 s (the start-up overload of
#: 10x the link, 100/N G per source, long absorbed) to 3 s. aqmlab's choice.
GRID_WARMUP_S = 1.0
GRID_END_S = 3.0
#: The CP weight of the seed's comparison at 100 sources, 400 µs ("w=2 vs w=4").
W_SEED = 2.0
W_ALT = 4.0
#: Jain's index a grid point's per-source goodput (over the window) must reach:
#: aqmlab's band for "sources share the link equally", argued in
#: docs/results/qcn-hotspot.md (J = 1/(1 + CV²): 0.9 is a spread of one third of
#: the fair share).
FAIR_JAIN_MIN = 0.9
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




def _hotspot(c: Case) -> bool:
    return c.tags.get("part") == "hotspot"


def grid_scenario(n: int, rtt_us: float, w: float = W_SEED) -> dict[str, Any]:
    """Seed 003's scalability case: N sources from 100/N Gbit/s each, one RTT."""
    start_bps = 100e9 / n
    return {
        "name": f"qcn-grid-n{n}-rtt{rtt_us:g}us" + ("" if w == W_SEED else f"-w{w:g}"),
        "description": f"{n} QCN sources starting at {start_bps / 1e9:g} Gbit/s each on a 10 Gbit/s link, RTT {rtt_us:g} µs",
        "duration": f"{GRID_END_S}s",
        "warmup": f"{GRID_WARMUP_S}s",
        "bottleneck": {"rate": "10Gbps", "buffer": "100pkt", "aqm": "qcn", "params": {"q_eq": f"{Q_EQ}pkt", "w": w}},
        "flows": [
            {
                "cc": "qcn",
                "label": "qcn",
                "count": n,
                "rtt": f"{rtt_us:g}us",
                # "Starting rate of each source = 100/N G": the source's line rate, at
                # which it sends until its first CNM installs the limiter.
                "rate": f"{start_bps:.0f}bps",
                "packet_size": "1500B",
                "start_jitter": "10us",
                # The seed's RP: AI amount 25 Mbit/s, 50/100-packet cycles in FR and AI
                # alike, Fb-hat saturated at 31.
                "params": {"r_ai": "25Mbps", "halve_ai_cycles": False, "fbhat": True},
            }
        ],
        "metrics": {"interval": "1ms", "timeseries": True},
    }


def jain(xs: list[float]) -> float | None:
    """Jain's fairness index of the values (1 = equal)."""
    sq = sum(x * x for x in xs)
    return None if not xs or sq == 0 else sum(xs) ** 2 / (len(xs) * sq)


def source_jain(s: dict[str, Any]) -> float | None:
    return jain([f["goodput_bps"] for f in s["flows"] if f["goodput_bps"] is not None])


def queue_spread_pkts(s: dict[str, Any]) -> float | None:
    """p99 − p50 of the queue seen by departing packets, packets (the wiggle)."""
    soj = queue_of(s).get("sojourn_ms") or {}
    if soj.get("p99") is None or soj.get("p50") is None:
        return None
    return (soj["p99"] - soj["p50"]) * 1e-3 * LINK_BPS / PKT_BITS


class QcnHotspot(Experiment):
    name = "qcn-hotspot"
    title = "QCN: transience and equilibrium at a hotspot, and scalability over N and RTT (Kabbani, Pan, Prabhakar, Seaman)"
    source = "seed 003: Kabbani, Pan, Prabhakar, Seaman, 'QCN Transience and Equilibrium: Response and Stability'"
    description = (
        "Hotspot: ten QCN sources (1.05 Gbit/s each) share a 10 Gbit/s link whose capacity drops to 0.5, 1 or "
        "2 Gbit/s from 2 s to 4 s (RTT 40 µs, buffer 100 packets, Q_eq 22 packets), with and without Fb-hat; each "
        "phase is measured in its own window of the same run. Scalability: N = 10, 50, 100 sources from 100/N Gbit/s "
        "each at RTT 40-400 µs, judged per (N, RTT) over 1-3 s. Quick: the 0.5 and 2 Gbit/s hotspots, the grid's "
        "corners and w = 4 at 100 sources, 400 µs, one seed; full: everything, three seeds."
    )
    requires_aqm = ("qcn",)
    requires_cc = ("qcn",)

    def drops(self, quick: bool) -> tuple[float, ...]:
        return (DROPS_GBPS[0], DROPS_GBPS[-1]) if quick else DROPS_GBPS

    def grid(self, quick: bool) -> list[tuple[int, float]]:
        ns = (GRID_N[0], GRID_N[-1]) if quick else GRID_N
        rtts = (GRID_RTT_US[0], GRID_RTT_US[-1]) if quick else GRID_RTT_US
        return [(n, r) for n in ns for r in rtts]

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
        hot = [
            Case(f"{d}g/{'fbhat' if fb else 'base'}/{w}", self.scenario(d, fb, w),
                 {"part": "hotspot", "drop_gbps": d, "fbhat": fb, "window": w})
            for d in self.drops(quick)
            for fb in (True, False)
            for w in WINDOWS
        ]  # fmt: skip
        grid = [Case(f"grid/n{n}/rtt{r:g}us", grid_scenario(n, r), {"part": "grid", "n": n, "rtt_us": r, "w": W_SEED})
                for n, r in self.grid(quick)]  # fmt: skip
        n, r = GRID_N[-1], GRID_RTT_US[-1]
        grid.append(Case(f"grid/n{n}/rtt{r:g}us/w{W_ALT:g}", grid_scenario(n, r, W_ALT),
                         {"part": "grid-w", "n": n, "rtt_us": r, "w": W_ALT}))  # fmt: skip
        return hot + grid

    def quick_skips(self) -> list[str]:
        skipped_grid = [f"N={n}/{r:g} µs" for n, r in self.grid(False) if (n, r) not in self.grid(True)]
        return [
            f"hotspot depth 1 Gbit/s (quick keeps 0.5 and 2, the extremes of {', '.join(f'{d:g}' for d in DROPS_GBPS)})",
            f"{len(skipped_grid)} of {len(self.grid(False))} grid points (quick keeps N {GRID_N[0]} and {GRID_N[-1]} "
            f"at {GRID_RTT_US[0]:g} and {GRID_RTT_US[-1]:g} µs): {', '.join(skipped_grid)}",
            "seeds 2 and 3 (quick: seed 1)",
        ]

    def showcase(self, quick: bool) -> list[str]:
        hot = [f"{d}g/{fb}/timeline" for d in self.drops(quick) for fb in ("fbhat", "base")]
        n, r = GRID_N[-1], GRID_RTT_US[-1]
        grid = [f"grid/n{n}/rtt{r:g}us" for n, r in self.grid(quick)] + [f"grid/n{n}/rtt{r:g}us/w{W_ALT:g}"]
        return hot + grid

    def claims(self) -> list[Claim]:
        def each(fn: Any, **scope: Any) -> Any:
            """fn(summary, tags) for every case in scope, over seeds."""
            return lambda runs: [(dict(c.tags), runs.value(c.label, lambda s, t=c.tags: fn(s, t)))
                                 for c in runs.select(**scope)]  # fmt: skip

        def hot(window: str, fn: Any, fbhat: bool = True) -> Any:
            return each(fn, part="hotspot", fbhat=fbhat, window=window)

        def queue(window: str) -> Any:
            return lambda s, t: mean_queue_pkts(s, t["drop_gbps"] * 1e9 if window in ("drop", "low") else LINK_BPS)

        def fbhat_ratio(window: str, fn: Any) -> Any:
            def evaluate(runs: Runs) -> list[Any]:
                def cmp(m: dict[str, Case]) -> float | None:
                    a = runs.mean(m["True"].label, lambda s: fn(s, m["True"].tags))
                    b = runs.mean(m["False"].label, lambda s: fn(s, m["False"].tags))
                    return None if not b else a / b

                return runs.per_group(["drop_gbps"], cmp, "fbhat", part="hotspot", window=window)

            return evaluate

        def w_ratio(runs: Runs) -> list[Any]:
            def cmp(m: dict[str, Case]) -> float | None:
                a = runs.mean(m[str(W_ALT)].label, queue_spread_pkts)
                b = runs.mean(m[str(W_SEED)].label, queue_spread_pkts)
                return None if not b else a / b

            return runs.per_group(["n", "rtt_us"], cmp, "w", n=GRID_N[-1], rtt_us=GRID_RTT_US[-1])

        util = lambda s, t: queue_of(s)["utilization"]  # noqa: E731
        drops = lambda s, t: queue_of(s)["drops"]  # noqa: E731
        grid = {"part": "grid"}
        src = "seed 003, '0.5G, 1G, 2G Bottleneck' simulations; spec digest §14(3)"
        scal = 'seed 003 "Conclusions": "QCN shows good stability when both the number of sources and RTT are varied"'
        eq = ("theory: the fluid model's fixed point is q* = Q_eq to within a fraction of a packet "
              "(docs/algorithms/qcn.md, 'Equilibrium tolerance'); a regulator whose mean misses its set point by "
              "more than half of it is not settling at Q_eq")  # fmt: skip
        return [
            Claim("Hotspot, 10 Gbit/s before the drop: the link is fully used", "≈ 1 (rate plot: sources share 10 Gbit/s)",
                  Tolerance(Band.at_least(0.95), "qualitative", f"{src}; pass if utilisation ≥ 0.95 (1-2 s)"),
                  hot("10g", util)),
            Claim("Hotspot, 10 Gbit/s before the drop: the queue is held near Q_eq", "≈ 22 packets (Q_eq)",
                  Tolerance(Band.between(0.5 * Q_EQ, 1.5 * Q_EQ), "theory", f"seed 003: 'Goal: Drive Q to Q_eq'; {eq}; "
                            "pass if 11-33 packets (1-2 s)"), hot("10g", queue("10g")), "pkt"),
            Claim("Hotspot: the sources' total rate converges to the reduced capacity", "≈ the hotspot's capacity",
                  Tolerance(Band.between(0.9, 1.1), "qualitative", f"{src}; pass if 0.9-1.1 × capacity (2.1-4 s)"),
                  hot("low", lambda s, t: total_goodput(s) / (t["drop_gbps"] * 1e9)), "× C"),
            Claim("Hotspot: the queue is held near Q_eq at the reduced capacity", "≈ 22 packets (Q_eq)",
                  Tolerance(Band.between(0.5 * Q_EQ, 1.5 * Q_EQ), "theory", f"{src}; {eq}; pass if 11-33 packets (2.1-4 s)"),
                  hot("low", queue("low")), "pkt"),
            Claim("Hotspot: no buffer overflow once past the transition", "little or no loss",
                  Tolerance(Band.at_most(0.0), "qualitative", "spec digest §14(3); pass if 0 drops in 2.1-4 s"),
                  hot("low", drops), "pkt", digits=4),
            Claim("Hotspot, capacity drop: overflow only briefly, at the transition", "brief (not quantified)",
                  Tolerance(Band.at_most(2000.0), "qualitative", "spec digest §14(3); pass if ≤ 2000 drops in 2.0-2.1 s "
                            "(≈ 2.4 ms of 10 Gbit/s arrivals)"), hot("drop", drops), "pkt", digits=4),
            Claim("Hotspot recovery: full utilisation within tens of ms after capacity returns (Fb-hat)", "tens of ms",
                  Tolerance(Band.at_most(100.0), "qualitative", "spec digest §14(3); seed 003 '0.5G Bottleneck: Rate, "
                            "Zoomed-in'; pass if lost capacity in 4.0-4.2 s < 100 ms"),
                  hot("recovery", lambda s, t: lost_capacity_ms(s)), "ms"),
            Claim("Fb-hat recovers the bandwidth quicker", "quicker (rate zoomed-in plot)",
                  Tolerance(Band.at_most(0.95), "qualitative", "seed 003: 'Improvement in Transience'; pass if lost "
                            "capacity with / without Fb-hat < 0.95 (4.0-4.2 s)"),
                  fbhat_ratio("recovery", lambda s, t: lost_capacity_ms(s)), "×"),
            Claim("Fb-hat keeps the equilibrium: same queue as without", "unchanged ('stability is preserved')",
                  Tolerance(Band.between(0.75, 1.33), "qualitative", "seed 003: 'in equilibrium, Fb-hat will be more "
                            "than 1'; pass if mean queue with / without Fb-hat within 0.75-1.33 (2.1-4 s)"),
                  fbhat_ratio("low", queue("low")), "×"),
            Claim("Scalability: no buffer overflow at any N and RTT", "stable (queue plots over N and RTT)",
                  Tolerance(Band.at_most(0.0), "qualitative", f"{scal}; an unstable loop overflows the 100-packet buffer; "
                            "pass if 0 drops in 1-3 s"), each(drops, **grid), "pkt", digits=4),
            Claim("Scalability: the queue is held near Q_eq at every N and RTT", "≈ 22 packets (Q_eq)",
                  Tolerance(Band.between(0.5 * Q_EQ, 1.5 * Q_EQ), "theory", f"{scal}; {eq}; pass if 11-33 packets (1-3 s)"),
                  each(lambda s, t: mean_queue_pkts(s, LINK_BPS), **grid), "pkt"),
            Claim("Scalability: the link stays fully used at every N and RTT", "≈ 1 (rate plots: sum at 10 Gbit/s)",
                  Tolerance(Band.at_least(0.95), "qualitative", f"{scal}; a loop that empties the queue loses link time; "
                            "pass if utilisation ≥ 0.95 (1-3 s)"), each(util, **grid)),
            Claim("Scalability: 50-100 sources share the link fairly", "equal shares of 10 Gbit/s (rate plots)",
                  Tolerance(Band.at_least(FAIR_JAIN_MIN), "qualitative", 'seed 003 "Varying # of Sources: Rate" and '
                            '"Drift ... improves fairness"; no number in the text; pass if Jain\'s index of the '
                            "sources' goodput over 1-3 s ≥ 0.9 (a spread of one third of the fair share)"),
                  each(lambda s, t: source_jain(s), part="grid", n=[n for n in GRID_N if n >= 50])),
            Claim("w = 4 gives a less wiggly queue than w = 2 (100 sources, 400 µs)", "less wiggly ('w=2 vs w=4')",
                  Tolerance(Band.at_most(0.95), "qualitative", 'seed 003 "100 sources, RTT = 400 usecs w=2 vs w=4": "increasing '
                            'w weights the derivative more and hence leads to less wiggly queues"; pass if the queue\'s '
                            "p99 − p50 at w = 4 / at w = 2 < 0.95 (1-3 s)"), w_ratio, "×"),
        ]  # fmt: skip

    def figures(self, runs: Runs) -> dict[str, Any]:
        from aqmlab.reproduce.qcn_figures import grid_figures, hotspot_figures

        return {**hotspot_figures(runs), **grid_figures(runs)}

    def tables(self, runs: Runs) -> dict[str, str]:
        from aqmlab.reproduce.qcn_figures import grid_tables

        return grid_tables(runs)
