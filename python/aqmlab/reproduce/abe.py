"""abe: Alternative Backoff with ECN (Khademi et al., IETF 93, 2015; RFC 8511).

Seed 004: one NewReno (or CUBIC) flow over a 10 Mbit/s bottleneck with a
100 ms base RTT, through CoDel or PIE with ECN; the sender backs off by
beta_ecn on a CE mark (and by its usual beta on loss). Claims, as the slides
state them:

* "Significant throughput gain with lightly-multiplexed traffic": goodput
  rises with beta_ecn from 0.5 to 0.9 (AQMs' small targets under-utilise a
  long-RTT path when the sender halves its window).
* "Increased beta_ecn causes insignificant change in median RTT".
* The motivation ("The Problem with using AQMs"): with loss-based TCP
  (β = 0.5) and the AQMs' default thresholds, "Link under-utilization ...
  when RTTs head above 60ms~80ms" (one NewReno flow at 10 Mbit/s), and
  "Under-utilization still a problem when RTT increases" (one CUBIC flow at
  20 Mbit/s, real-life tests).

Per-packet RTT is base RTT + bottleneck queueing delay. AQMs run at their
engine defaults (CoDel 5 ms / 100 ms; PIE per RFC 8033, 15 ms) with ECN on.
"""

from __future__ import annotations

from typing import Any

from aqmlab.judging import Band, Tolerance
from aqmlab.reproduce.framework import (
    Case,
    Claim,
    Experiment,
    Runs,
    ecn_params,
    queue_of,
    total_goodput,
)

AQMS = ("codel", "pie")
#: beta_ecn values: the seed's range, with 0.85 (draft-khademi-alternativebackoff-ecn's value for CUBIC).
BETAS = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9)
BASE_RTT_MS = 100.0
#: The motivation's RTT axis (ms). 60 and 80 ms are the seed's transition
#: ("above 60ms~80ms") and are run but not judged.
MOTIVATION_RTTS_MS = (10, 20, 40, 60, 80, 100, 160, 240)
MOTIVATION_QUICK_RTTS_MS = (10, 40, 100, 160, 240)
#: (cc, link rate) of the two motivation figures.
MOTIVATION_FLOWS = (("reno", "10Mbps"), ("cubic", "20Mbps"))
#: "Under-utilised": more than 5 % of the link unused, the same 5 % as the
#: "significant" gain below (docs/results/abe.md#motivation).
FULL_UTILISATION = 0.95
#: "Simulation vs. model" (one NewReno flow @ 10 Mbps, RTT 100 ms, DropTail):
#: DropTail buffers as fractions of the bandwidth-delay product. The seed's
#: x axis is not legible; these span "1 BDP for full utilization" from below.
MODEL_BUFFERS_BDP = (0.1, 0.25, 0.5, 0.75, 1.0)
MODEL_RATE_BPS, MODEL_PKT_BYTES = 10e6, 1500
#: The fluid model ignores the window's granularity (one packet in a BDP of
#: 83, 1.2 %) and the round trip a loss takes to be detected (the window
#: overshoots by about one packet per RTT of detection): within 0.03 of it.
MODEL_TOLERANCE = 0.03


def bdp_pkts(rtt_ms: float = BASE_RTT_MS) -> float:
    return MODEL_RATE_BPS * rtt_ms / 1e3 / (8 * MODEL_PKT_BYTES)


def sawtooth_utilisation(buffer_pkts: float, bdp: float, beta: float = 0.5) -> float:
    """Link utilisation of one AIMD flow over a DropTail buffer (fluid
    sawtooth, docs/results/abe.md#model): the window climbs one packet per
    round trip from beta·(P+B) to P+B and is cut at the overflow. Below P the
    link idles (round trip = base RTT); above P it is busy and the round trip
    grows to W/C, so both parts are integrated in time. 1 when beta·(P+B) >= P."""
    p, top = bdp, bdp + buffer_pkts
    w0 = beta * top
    if w0 >= p:
        return 1.0
    sent_idle, t_idle = (p * p - w0 * w0) / 2, p * (p - w0)  # packets; time in P-packet units of RTT/P
    sent_busy = (top * top - p * p) / 2  # the link is saturated: packets = time
    return (sent_idle + sent_busy) / (t_idle + sent_busy)


def utilisation(s: dict[str, Any]) -> float | None:
    return queue_of(s).get("utilization")


def median_rtt(s: dict[str, Any]) -> float | None:
    v = (queue_of(s).get("sojourn_ms") or {}).get("p50")
    return None if v is None else BASE_RTT_MS + v


class Abe(Experiment):
    name = "abe"
    title = "ABE: Alternative Backoff with ECN (Khademi et al. 2015)"
    source = "seed 004: Khademi, Welzl, Armitage, Kulatunga, Ros, Fairhurst, Gjessing, Zander, 'TCP Alternative Backoff with ECN (ABE)', IETF 93 TCPM"
    description = (
        "One flow over 10 Mbit/s with 100 ms base RTT through CoDel or PIE with ECN; the sender's backoff on CE "
        "(beta_ecn) goes from 0.5 to 0.9. Quick: NewReno and CUBIC at beta_ecn 0.5 and 0.9, 60 s, one seed; full: "
        "every beta_ecn (0.5-0.9 and 0.85), 120 s, 3 seeds. The motivation: one NewReno (10 Mbit/s) or CUBIC "
        "(20 Mbit/s) flow without ECN through each AQM's defaults at base RTTs 10-240 ms (quick: 10, 40, 100, 160, 240)."
    )
    requires_aqm = AQMS
    requires_cc = ("reno", "cubic")

    def ccs(self, quick: bool) -> tuple[str, ...]:
        return ("reno", "cubic")

    def betas(self, quick: bool) -> tuple[float, ...]:
        """Quick: the ends of the range, which the claims compare."""
        return (0.5, 0.9) if quick else BETAS

    def scenario(self, aqm: str, cc: str, beta_ecn: float, quick: bool) -> dict[str, Any]:
        return {
            "name": f"abe-{cc}-{aqm}-beta_ecn-{beta_ecn}",
            "duration": "60s" if quick else "120s",
            "warmup": "10s",
            "bottleneck": {"rate": "10Mbps", "buffer": "1000pkt", "aqm": aqm, "params": ecn_params(aqm)},
            "flows": [{"cc": cc, "label": cc, "rtt": "100ms", "ecn": "classic", "params": {"beta_ecn": beta_ecn}}],
            "metrics": {"interval": "200ms"},
        }

    def motivation_scenario(self, aqm: str, cc: str, rate: str, rtt_ms: int, quick: bool) -> dict[str, Any]:
        # Reno's sawtooth period at 240 ms and 10 Mbit/s is about 24 s: run several.
        return {
            "name": f"abe-motivation-{cc}-{aqm}-rtt{rtt_ms}ms",
            "description": f"one {cc} flow without ECN through {aqm} defaults at {rate}, {rtt_ms} ms",
            "duration": "140s" if quick else "320s",
            "warmup": "20s",
            "bottleneck": {"rate": rate, "buffer": "1000pkt", "aqm": aqm},
            "flows": [{"cc": cc, "label": cc, "rtt": f"{rtt_ms}ms", "ecn": "off"}],
            "metrics": {"interval": "200ms"},
        }

    def model_scenario(self, fraction: float) -> dict[str, Any]:
        # A sawtooth cycle at 1 BDP is about 83 round trips (~12 s): run ~20.
        return {
            "name": f"abe-model-droptail-{fraction:g}bdp",
            "description": f"one NewReno flow at 10 Mbit/s, 100 ms, DropTail buffer of {fraction:g} BDP",
            "duration": "300s",
            "warmup": "30s",
            "bottleneck": {"rate": "10Mbps", "buffer": f"{round(fraction * bdp_pkts())}pkt", "aqm": "fifo"},
            "flows": [{"cc": "reno", "label": "reno", "rtt": "100ms", "ecn": "off"}],
            "metrics": {"interval": "200ms"},
        }

    def cases(self, quick: bool) -> list[Case]:
        backoff = [
            Case(f"{cc}/{aqm}/{b}", self.scenario(aqm, cc, b, quick), {"cc": cc, "aqm": aqm, "beta_ecn": b})
            for cc in self.ccs(quick)
            for aqm in AQMS
            for b in self.betas(quick)
        ]
        motivation = [
            Case(f"motivation/{cc}/{aqm}/{rtt}ms", self.motivation_scenario(aqm, cc, rate, rtt, quick),
                 {"kind": "motivation", "cc": cc, "aqm": aqm, "rtt_ms": rtt})
            for cc, rate in MOTIVATION_FLOWS
            for aqm in AQMS
            for rtt in (MOTIVATION_QUICK_RTTS_MS if quick else MOTIVATION_RTTS_MS)
        ]  # fmt: skip
        model = [Case(f"model/droptail/{f:g}bdp", self.model_scenario(f), {"kind": "model", "buffer_bdp": f})
                 for f in MODEL_BUFFERS_BDP]  # fmt: skip
        return backoff + motivation + model

    def showcase(self, quick: bool) -> list[str]:
        return ["reno/codel/0.5", "reno/codel/0.9"]

    def claims(self) -> list[Claim]:
        def gain(g: dict[str, Case], runs: Runs) -> float:
            return runs.mean(g["0.9"].label, total_goodput) / runs.mean(g["0.5"].label, total_goodput)

        def rtt_change(g: dict[str, Case], runs: Runs) -> float:
            return runs.mean(g["0.9"].label, median_rtt) - runs.mean(g["0.5"].label, median_rtt)

        def per_aqm(fn: Any, aqm: Any) -> Any:
            return lambda runs: runs.per_group(["cc", "aqm"], lambda g: fn(g, runs), "beta_ecn", aqm=aqm,
                                               beta_ecn=[0.5, 0.9])  # fmt: skip

        src = "seed 004, 'ABE Performance' and 'Latency vs. throughput tradeoff' slides"
        doc = "docs/results/abe.md"
        # The AQM, not the backoff, bounds the standing queue: with beta_ecn 0.5 a
        # single flow drains the queue after each mark (median near 0), with 0.9 it
        # sits at the AQM's target. "Insignificant" therefore means: no more than
        # the AQM's delay target (CoDel 5 ms, PIE 15 ms).
        targets = {"codel": 5.0, "pie": 15.0}
        short = [r for r in MOTIVATION_RTTS_MS if r < 60]
        long_ = [r for r in MOTIVATION_RTTS_MS if r > 80]
        motivation_src = "seed 004, 'The Problem with using AQMs'"
        util_why = (f"under-utilised = more than {100 * (1 - FULL_UTILISATION):.0f} % of the link unused, the "
                    f"'significant' threshold of the gain claim ({doc}#motivation)")  # fmt: skip
        motivation = [
            Claim("Without ECN, one NewReno flow fills 10 Mbit/s through CoDel and PIE defaults below 60 ms RTT",
                  "full utilisation below 60–80 ms",
                  Tolerance(Band.at_least(FULL_UTILISATION), "qualitative", f"{motivation_src}: 'Link "
                            f"under-utilization with AQMs' default thresholds when RTTs head above 60ms~80ms'; {util_why}"),
                  lambda runs: runs.per_case(utilisation, kind="motivation", cc="reno", rtt_ms=short), ""),
            Claim("Without ECN, one NewReno flow under-uses 10 Mbit/s through CoDel and PIE defaults above 80 ms RTT",
                  "under-utilisation above 60–80 ms",
                  Tolerance(Band.at_most(FULL_UTILISATION), "qualitative", f"{motivation_src}: 'Link "
                            f"under-utilization with AQMs' default thresholds when RTTs head above 60ms~80ms'; {util_why}"),
                  lambda runs: runs.per_case(utilisation, kind="motivation", cc="reno", rtt_ms=long_), ""),
            Claim("Without ECN, one CUBIC flow at 20 Mbit/s is still under-utilised at the longest RTTs (160, 240 ms)",
                  "under-utilisation still a problem when RTT increases",
                  Tolerance(Band.at_most(FULL_UTILISATION), "qualitative", f"{motivation_src}, one CUBIC flow @ 20 "
                            f"Mbps (real-life tests): 'Under-utilization still a problem when RTT increases'; {util_why}"),
                  lambda runs: runs.per_case(utilisation, kind="motivation", cc="cubic", rtt_ms=[160, 240]), ""),
        ]  # fmt: skip
        def model_gap(s: dict[str, Any]) -> float | None:
            u = utilisation(s)
            b = s["scenario"]["bottleneck"]["buffer"]
            return None if u is None else u - sawtooth_utilisation(float(b.removesuffix("pkt")), bdp_pkts())

        model = Claim(
            "DropTail, one NewReno flow at 10 Mbit/s and 100 ms: utilisation against buffer size follows the sawtooth "
            "model (measured minus model), per buffer size", "simulation vs. model",
            Tolerance(Band.around(0.0, abs=MODEL_TOLERANCE), "theory", "seed 004, 'Simulation vs. model: One NewReno "
                      "flow @ 10 Mbps, RTT 100ms, DropTail' and '1 BDP for full utilization'; the model is the fluid "
                      f"AIMD sawtooth with beta 0.5; within {MODEL_TOLERANCE} of it, the model's own granularity "
                      f"({doc}#model)"),
            lambda runs: runs.per_case(model_gap, kind="model"), "")
        return [
            Claim("With ECN, goodput rises with beta_ecn (0.5 → 0.9), for each CC and AQM", "significant gain",
                  Tolerance(Band.at_least(1.05), "qualitative", f"{src}: a 'significant' gain; at least 5 % ({doc})"),
                  per_aqm(gain, list(AQMS)), "×"),
            *[Claim(f"{aqm}: raising beta_ecn (0.5 → 0.9) barely changes the median RTT, for each CC", "insignificant change",
                    Tolerance(Band.around(0.0, abs=t), "theory", f"{src}: 'insignificant'; at most {aqm}'s delay target "
                              f"({t:g} ms), which bounds the standing queue ({doc})"),
                    per_aqm(rtt_change, aqm), "ms") for aqm, t in targets.items()],
            *motivation,
            model,
        ]  # fmt: skip

    def figures(self, runs: Runs) -> dict[str, Any]:
        import matplotlib.pyplot as plt

        fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
        for cc in sorted({c.tags["cc"] for c in runs.cases if "beta_ecn" in c.tags}):
            for aqm in AQMS:
                g = [runs.mean_over(runs.select(aqm=aqm, beta_ecn=b, cc=cc), total_goodput) / 1e6 for b in BETAS]
                r = [runs.mean_over(runs.select(aqm=aqm, beta_ecn=b, cc=cc), median_rtt) for b in BETAS]
                a1.plot(BETAS, g, marker="o", label=f"{cc} / {aqm}")
                a2.plot(BETAS, r, marker="o", label=f"{cc} / {aqm}")
        a1.set_xlabel("beta_ecn")
        a1.set_ylabel("goodput (Mbit/s)")
        a1.set_title("Goodput against beta_ecn")
        a2.set_xlabel("beta_ecn")
        a2.set_ylabel("median per-packet RTT (ms)")
        a2.set_title("Median RTT against beta_ecn")
        for a in (a1, a2):
            a.grid(alpha=0.3)
            a.legend(fontsize="small")
        figs = {"abe": fig}
        mot = runs.select(kind="motivation")
        if mot:
            fig2, ax = plt.subplots(figsize=(6, 4), layout="constrained")
            for cc, rate in MOTIVATION_FLOWS:
                for aqm in AQMS:
                    pts = sorted((c.tags["rtt_ms"], runs.mean(c.label, utilisation))
                                 for c in runs.select(kind="motivation", cc=cc, aqm=aqm))  # fmt: skip
                    if pts:
                        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{cc} @ {rate} / {aqm}")
            ax.axhline(FULL_UTILISATION, color="k", lw=0.8, ls="--")
            ax.axvspan(60, 80, color="0.9")
            ax.set(xlabel="base RTT (ms)", ylabel="link utilisation",
                   title="Loss-based TCP (β = 0.5, no ECN) through AQM defaults")
            ax.grid(alpha=0.3)
            ax.legend(fontsize="small")
            figs["motivation"] = fig2
        model = sorted(runs.select(kind="model"), key=lambda c: c.tags["buffer_bdp"])
        if model:
            import numpy as np

            fig3, ax = plt.subplots(figsize=(6, 4), layout="constrained")
            xs = np.linspace(0, 1.2, 121)
            ax.plot(xs, [sawtooth_utilisation(x * bdp_pkts(), bdp_pkts()) for x in xs], color="k", label="model (β = 0.5)")
            ax.plot([c.tags["buffer_bdp"] for c in model], [runs.mean(c.label, utilisation) for c in model], "o",
                    label="aqmlab, NewReno")  # fmt: skip
            ax.set(xlabel="DropTail buffer (BDP)", ylabel="link utilisation",
                   title="Simulation vs. model: one NewReno flow, 10 Mbit/s, 100 ms")
            ax.grid(alpha=0.3)
            ax.legend(fontsize="small")
            figs["model"] = fig3
        return figs

    def tables(self, runs: Runs) -> dict[str, str]:
        """The model figure's points: buffer, measured and model utilisation."""
        rows = ["| buffer (BDP) | buffer (packets) | measured utilisation | model | measured − model |",
                "|---|---|---|---|---|"]
        for c in sorted(runs.select(kind="model"), key=lambda c: c.tags["buffer_bdp"]):
            b = round(c.tags["buffer_bdp"] * bdp_pkts())
            u, m = runs.mean(c.label, utilisation), sawtooth_utilisation(b, bdp_pkts())
            rows.append(f"| {c.tags['buffer_bdp']:g} | {b} | {u:.4f} | {m:.4f} | {u - m:+.4f} |")
        return {"simulation vs model": "\n".join(rows) + "\n"} if len(rows) > 2 else {}
