"""dualq-coexistence: DCTCP and CUBIC through DualPI2 vs single-queue AQMs.

Seed 000: De Schepper, Tsang, Bondarenko, Briscoe, "DualQ Coupled AQM"
(2015 slides; the DCttH preprint). A 40 Mbit/s bottleneck carries 1-10
DCTCP and 1-10 CUBIC flows. Claims, as the slides state them:

* DualQ Coupled AQM (k = 2): "Equal throughput between DCTCP and Cubic/Reno".
* A single RED queue: "No throughput equality: 40x less" for CUBIC; a single
  PIE queue behaves alike (both mark ECT packets where CUBIC's are dropped).
* FQ-CoDel: "Equal throughput as Qs are large enough".
* DualQ: "Extreme small queue size for DCTCP"; the Linux DualPI2 evaluation
  (arXiv 2209.01078) puts the L4S queue's median below 1 ms and its 99th
  percentile below 2 ms.

The backup slide's "X RTTs per drop event: for Reno X = 45 RTTs on 40Mbps
20ms" is checked on one Reno flow through PIE with a 20 ms round trip
(5 ms base plus PIE's 15 ms target).

TCP Prague, the L4S reference congestion control that came after the seed,
is run against CUBIC through DualPI2 on the same grid (issue 17: Prague's
validation in this setup); its claims are the DCTCP claims carried over, not
the seed's.

Assumptions where the slides are silent: base RTT 20 ms for every flow (the
slides' own worked example uses 40 Mbit/s and 20 ms), a 200 ms buffer, flows
starting within the first second, every AQM at its engine default except
that ECN marking is switched on where the AQM has a switch for it.
"""

from __future__ import annotations

import math
from typing import Any

from aqmlab.judging import Band, Tolerance
from aqmlab.reproduce.framework import (
    Case,
    Claim,
    Experiment,
    Runs,
    ecn_params,
    queue_of,
    subqueue,
)

#: Where the tolerances are argued (generated table and analysis).
DOC = "docs/results/dualq-coexistence.md"

#: Curvy RED is the seed's own DualQ (its four parameters S_L, T, S_C, f are
#: the engine's s_c - k_prime, l4s_step, s_c and g_c, defaults from RFC 9332
#: Appendix B); DualPI2 is the Linux successor, a second row.
AQMS = ("curvy_red", "dualpi2", "pie", "red", "fq_codel")

#: (AQM, L4S congestion control) pairs: DCTCP through every AQM, as the seed;
#: TCP Prague through DualPI2, the deployed pairing (RFC 9332 with Prague).
RUNS = tuple((aqm, "dctcp") for aqm in AQMS) + (("dualpi2", "prague"),)


def _pairing(aqm: str, cc: str) -> str:
    """A grid panel's name: the AQM, and the L4S congestion control when it is not DCTCP."""
    return aqm if cc == "dctcp" else f"{aqm} + {cc}"


#: The per-mix grid figures' axes: Classic flows across, L4S flows up, a panel per pairing.
GRID_AXES: dict[str, Any] = {"x": "n_classic", "y": "n_l4s", "panel": "pairing",
                             "order": [_pairing(a, c) for a, c in RUNS]}  # fmt: skip
GRID_LABELS = {"xlabel": "Classic (CUBIC) flows", "ylabel": "L4S flows (DCTCP or Prague)"}


def _bounds(b: Band) -> tuple[float | None, float | None]:
    return (b.low, b.high)


def _ratio(s: dict[str, Any]) -> float | None:
    v = s["fairness"].get("l4s_classic_ratio")
    return None if v is None else float(v)


def _l4s_soj(p: str) -> Any:
    def f(s: dict[str, Any]) -> float | None:
        soj = subqueue(s, "l4s").get("sojourn_ms") or {}
        return soj.get(p)

    return f


BASE_RTT_S = 0.020

#: The throughput bands of the claims (argued in claims()): "equal"
#: throughput, and the single queues' "40x less" less a factor 4.
EQUAL = Band.between(0.5, 2.0)
UNEQUAL = Band.at_least(10.0)
#: L4S queue delay 99th percentile bound of the DualQ claims (ms).
L4S_P99_MAX_MS = 2.0


#: Reno's X: one flow through PIE, 5 ms base RTT + PIE's 15 ms target = the slide's 20 ms.
RENO_X_BASE_RTT_S = 0.005
RENO_X_PAPER = 45.0


def _rtts_per_drop(s: dict[str, Any]) -> float | None:
    """Round trips (base RTT plus the queue's mean sojourn) per AQM drop in
    the measurement window."""
    q = queue_of(s)
    drops = q["drops"]
    rtt_s = RENO_X_BASE_RTT_S + (q.get("sojourn_ms") or {}).get("mean", 0.0) / 1e3
    window_s = s["duration_s"] - s["warmup_s"]
    return (window_s / rtt_s) / drops if drops else None


def _marks_per_rtt_per_l4s_flow(s: dict[str, Any]) -> float | None:
    """L4S-queue CE marks in the measurement window, per L4S flow and per
    round trip (base RTT plus the L4S queue's mean sojourn)."""
    sub = subqueue(s, "l4s")
    n = s["scenario"]["flows"][0]["count"]  # the L4S group comes first
    rtt_s = BASE_RTT_S + (sub.get("sojourn_ms") or {}).get("mean", 0.0) / 1e3
    window_s = s["duration_s"] - s["warmup_s"]
    return sub["marks"] / n / (window_s / rtt_s) if window_s > 0 else None


class DualqCoexistence(Experiment):
    name = "dualq-coexistence"
    title = "DualQ Coupled AQM: DCTCP and CUBIC coexistence (De Schepper et al. 2015)"
    source = "seed 000: De Schepper, Tsang, Bondarenko, Briscoe, 'DualQ Coupled AQM' (2015); latency figures from arXiv 2209.01078"
    description = (
        "DCTCP (L4S ECN) and CUBIC (no ECN) flows share a 40 Mbit/s bottleneck with a 20 ms base RTT, "
        "through the seed's Curvy RED DualQ, DualPI2, or a single PIE, RED or FQ-CoDel queue; TCP Prague and CUBIC through "
        "DualPI2 on the same grid. Every claim is judged on every flow mix. Quick: the grid's corners (1D1C, 1D10C, 10D1C, 10D10C) for 30 s, one seed; full: every "
        "combination of 1-10 DCTCP and 1-10 CUBIC flows for 250 s, seeds 1-3."
    )
    requires_aqm = AQMS
    requires_cc = ("dctcp", "cubic", "prague")

    def combos(self, quick: bool) -> list[tuple[int, int]]:
        if quick:  # the decisive cases: every corner of the 10 x 10 grid
            return [(1, 1), (1, 10), (10, 1), (10, 10)]
        return [(nl, nc) for nl in range(1, 11) for nc in range(1, 11)]

    def scenario(self, aqm: str, n_l4s: int, n_classic: int, quick: bool, l4s_cc: str = "dctcp") -> dict[str, Any]:
        return {
            "name": f"dualq-{aqm}-{n_l4s}{l4s_cc}-{n_classic}cubic",
            "description": f"{n_l4s} {l4s_cc} + {n_classic} CUBIC through {aqm} at 40 Mbit/s, 20 ms",
            "duration": "30s" if quick else "250s",
            "warmup": "10s" if quick else "50s",
            "bottleneck": {"rate": "40Mbps", "buffer": "200ms", "aqm": aqm, "params": ecn_params(aqm)},
            "flows": [
                {"cc": l4s_cc, "label": l4s_cc, "count": n_l4s, "rtt": "20ms", "ecn": "l4s", "start_jitter": "1s"},
                {"cc": "cubic", "label": "cubic", "count": n_classic, "rtt": "20ms", "ecn": "off", "start_jitter": "1s"},
            ],
            "metrics": {"interval": "100ms"},
        }

    def reno_x_scenario(self, quick: bool) -> dict[str, Any]:
        return {
            "name": "dualq-reno-x-pie",
            "description": "one Reno flow through PIE at 40 Mbit/s, 20 ms round trip: round trips per drop",
            "duration": "130s" if quick else "250s",
            "warmup": "10s",
            "bottleneck": {"rate": "40Mbps", "buffer": "200ms", "aqm": "pie"},
            "flows": [{"cc": "reno", "label": "reno", "rtt": f"{RENO_X_BASE_RTT_S * 1e3:g}ms", "ecn": "off"}],
            "metrics": {"interval": "100ms"},
        }

    def cases(self, quick: bool) -> list[Case]:
        grid = [
            Case(f"{aqm}/{nl}{cc[0]}{nc}c", self.scenario(aqm, nl, nc, quick, cc),
                 {"aqm": aqm, "l4s_cc": cc, "n_l4s": nl, "n_classic": nc})
            for aqm, cc in RUNS
            for nl, nc in self.combos(quick)
        ]  # fmt: skip
        return [*grid, Case("pie/reno-x", self.reno_x_scenario(quick), {"aqm": "pie", "kind": "reno-x"})]

    def showcase(self, quick: bool) -> list[str]:
        # 1+1 of every pairing, PIE with 10+10 for its drop probability, and
        # the two DualQs' 10+1 (their hardest mix) and 10+10 for the seed's
        # per-flow throughput panels.
        return ([f"{aqm}/1{cc[0]}1c" for aqm, cc in RUNS] + ["pie/10d10c"]
                + [f"{aqm}/{m}" for aqm in ("curvy_red", "dualpi2") for m in ("10d1c", "10d10c")])  # fmt: skip

    def probe_views(self, quick: bool) -> list[str]:
        # Latency under load in DualPI2 at the grid's lightest and heaviest
        # mixes (shown, not judged: the seed has no probe figure).
        return ["dualpi2/1d1c", "dualpi2/10p10c"]

    def claims(self) -> list[Claim]:
        equal = EQUAL
        equal_why = (f"per-flow throughput plots on Y = [0:80/N] Mbps, 0 to twice the fair share: equality readable "
                     f"there means neither class beyond twice the other ({DOC}#equal-throughput)")  # fmt: skip
        unequal = UNEQUAL
        unequal_why = (f"the slide's 40x, less a factor 4 because RED*/PIE* settings are not given "
                       f"({DOC}#no-throughput-equality)")  # fmt: skip
        dualqs = [
            claim
            for aqm, name in (("curvy_red", "Curvy RED DualQ"), ("dualpi2", "DualPI2"))
            for claim in self._dualq_claims(aqm, name, equal, equal_why)
        ]
        reno_x = Claim(
            "Reno at 40 Mbit/s and 20 ms: about 45 round trips between drops", "X = 45 RTTs per drop",
            Tolerance(Band.between(33.0, 51.5), "theory", 'seed 000 backup "Classic Congestion Controller Family": '
                      '"for Reno: X=45 RTTs on 40Mbps 20ms", from r = C/(√p·RTT): X = W/C² with W = 66.7 packets; C '
                      "between 1.31 (random loss, Mathis et al. Table 1) and the slide's 1.22 gives 38.9–44.8, widened "
                      f"by the ±15 % of docs/validation.md#reno-sqrt ({DOC}#reno-x)"),
            lambda runs: runs.per_case(_rtts_per_drop, kind="reno-x"), "RTTs")  # fmt: skip
        return [*dualqs, *self._single_queue_claims(equal, equal_why, unequal, unequal_why),
                *self._prague_claims(equal, equal_why), reno_x]  # fmt: skip

    def _dualq_claims(self, aqm: str, name: str, equal: Band, equal_why: str) -> list[Claim]:
        def l4s_per_mix(p: str) -> Any:
            return lambda runs: runs.per_case(_l4s_soj(p), aqm=aqm, l4s_cc="dctcp")

        delay_src = ('seed 000 QSIZE CDF DUALQ: "Extreme small queue size for DCTCP"; the number from the Linux '
                     f'DualPI2 evaluation (arXiv 2209.01078) ({DOC}#l4s-delay)')  # fmt: skip
        return [
            Claim(f"{name}: per-flow throughput DCTCP ≈ CUBIC, in every flow mix", "≈ 1 (equal throughput, k = 2)",
                  Tolerance(equal, "qualitative", f'seed 000 THROUGHPUT DUALQ: "Equal throughput between DCTCP and '
                            f'Cubic/Reno"; {equal_why}'),
                  lambda runs: runs.per_case(_ratio, aqm=aqm, l4s_cc="dctcp"), "×"),
            Claim(f"{name}: L4S queue delay median below 1 ms, in every flow mix", "'extreme small queue size'",
                  Tolerance(Band.at_most(1.0), "qualitative", delay_src), l4s_per_mix("p50"), "ms"),
            Claim(f"{name}: L4S queue delay 99th percentile below 2 ms, in every flow mix", "'extreme small queue size'",
                  Tolerance(Band.at_most(L4S_P99_MAX_MS), "qualitative", delay_src), l4s_per_mix("p99"), "ms"),
            Claim(f"{name}: DCTCP gets about 2 marks per RTT per flow, in every flow mix", "C = 2 marks per RTT",
                  Tolerance(Band.between(1.0, 4.0), "qualitative", 'seed 000 backup "Scalable Congestion Controllers": '
                            '"C marked per RTT (C=2 for DCTCP)", from r = C/(p·RTT); within a factor 2, since the '
                            f"slide contrasts O(1) marks per RTT with Reno's 1 drop per 45 RTTs ({DOC}#marks-per-rtt)"),
                  lambda runs: runs.per_case(_marks_per_rtt_per_l4s_flow, aqm=aqm, l4s_cc="dctcp"), "/RTT"),
        ]  # fmt: skip

    def _prague_claims(self, equal: Band, equal_why: str) -> list[Claim]:
        """The DCTCP claims carried over to TCP Prague through DualPI2: not the
        seed's (it predates Prague) but RFC 9332's, whose coupling (k = 2) is
        designed for the L4S reference congestion control."""
        scope = {"aqm": "dualpi2", "l4s_cc": "prague"}
        delay_src = (f"RFC 9332 §1.3 'consistently low queuing delay' for L4S traffic; the numbers from the Linux "
                     f"DualPI2 evaluation with Prague (arXiv 2209.01078) ({DOC}#prague)")  # fmt: skip
        return [
            Claim("DualPI2: per-flow throughput Prague ≈ CUBIC, in every flow mix", "≈ 1 (RFC 9332 §2.1, k = 2)",
                  Tolerance(equal, "qualitative", "RFC 9332 §2.1: with k = 2 the coupling gives 'roughly equal' rates to "
                            f"Reno-friendly and scalable flows, the seed's claim for DCTCP; {equal_why}; "
                            f"not a seed claim ({DOC}#prague)"),
                  lambda runs: runs.per_case(_ratio, **scope), "×"),
            Claim("DualPI2: L4S queue delay 99th percentile below 2 ms with Prague, in every flow mix", "'consistently low'",
                  Tolerance(Band.at_most(L4S_P99_MAX_MS), "qualitative", delay_src),
                  lambda runs: runs.per_case(_l4s_soj("p99"), **scope), "ms"),
        ]  # fmt: skip

    def _single_queue_claims(self, equal: Band, equal_why: str, unequal: Band, unequal_why: str) -> list[Claim]:
        def ratio_per_mix(aqm: str) -> Any:
            return lambda runs: runs.per_case(_ratio, aqm=aqm, l4s_cc="dctcp")

        return [
            Claim("Single-queue RED: DCTCP takes far more than CUBIC, in every flow mix", "40× ('40x less' for CUBIC)",
                  Tolerance(unequal, "seed", f'seed 000 THROUGHPUT RED*: "No throughput equality: 40x less"; {unequal_why}'),
                  ratio_per_mix("red"), "×"),
            Claim("Single-queue PIE: DCTCP takes far more than CUBIC, in every flow mix", "40× ('40x less' for CUBIC)",
                  Tolerance(unequal, "seed", f'seed 000 THROUGHPUT PIE*: "No throughput equality: 40x less"; {unequal_why}'),
                  ratio_per_mix("pie"), "×"),
            Claim("FQ-CoDel: per-flow throughput DCTCP ≈ CUBIC, in every flow mix", "≈ 1 ('equal throughput')",
                  Tolerance(equal, "qualitative", f'seed 000 THROUGHPUT FQ_CODEL*: "Equal throughput as Qs are large '
                            f'enough"; {equal_why}'),
                  ratio_per_mix("fq_codel"), "×"),
        ]  # fmt: skip

    def figures(self, runs: Runs) -> dict[str, Any]:
        import matplotlib.pyplot as plt
        import numpy as np

        fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
        means, lo, hi = [], [], []
        names = [aqm if cc == "dctcp" else f"{aqm}\n+{cc}" for aqm, cc in RUNS]
        for aqm, cc in RUNS:
            vals = [runs.mean(c.label, _ratio) for c in runs.select(aqm=aqm, l4s_cc=cc)]
            vals = [v for v in vals if not math.isnan(v)]
            m = float(np.mean(vals)) if vals else math.nan
            means.append(m)
            lo.append(m - min(vals) if vals else 0)
            hi.append(max(vals) - m if vals else 0)
        x = np.arange(len(RUNS))
        a1.bar(x, means, yerr=[lo, hi], color=["#1a5", "#2a7", "#c84", "#c44", "#48c", "#a4c"], capsize=4)
        a1.axhline(1.0, color="k", lw=0.8, ls="--")
        a1.set_yscale("log")
        a1.set_xticks(x, names)
        a1.set_ylabel("L4S (DCTCP or Prague) : CUBIC per-flow throughput")
        a1.set_title("Throughput balance (whiskers: range over flow mixes)")
        width = 0.2
        for i, (sub, p) in enumerate([("l4s", "p50"), ("l4s", "p99"), ("classic", "p50"), ("classic", "p99")]):
            vals = []
            for aqm, cc in RUNS:

                def f(s: dict[str, Any], sub: str = sub, p: str = p) -> float | None:
                    try:
                        st = subqueue(s, sub)
                    except KeyError:  # single queue: the whole queue
                        st = queue_of(s)
                    return (st.get("sojourn_ms") or {}).get(p)

                vals.append(runs.mean_over(runs.select(aqm=aqm, l4s_cc=cc), f))
            a2.bar(x + (i - 1.5) * width, vals, width, label=f"{sub} {p}")
        a2.set_xticks(x, names)
        a2.set_yscale("log")
        a2.set_ylabel("queue delay (ms)")
        a2.set_title("Queue delay by sub-queue (single queues: whole queue)")
        a2.set_ylim(top=a2.get_ylim()[1] * 4)
        a2.legend(fontsize="small", ncols=4, loc="upper center")
        from aqmlab.reproduce.dualq_figures import figures as seed_figures

        from aqmlab.panels import heatmap_panels

        grids = {name: heatmap_panels(df, **GRID_AXES, **style) for name, (df, style, _) in self.grids(runs).items()}
        return {"coexistence": fig, **seed_figures(runs), **grids}

    def grids(self, runs: Runs) -> dict[str, tuple[Any, dict[str, Any], str]]:
        """The per-mix grids, as the seed lays out its 10 × 10 panels: one
        panel per AQM and congestion control, L4S flows up, Classic flows
        across, on shared axes and one colour scale; cells outside the
        claim's band outlined in red. Per grid: the numbers (a DataFrame, the
        mean over seeds per case), the figure's style and the unit; the
        figure and its table (:meth:`tables`) come from the same numbers."""

        def frame(fn: Any, **scope: Any) -> Any:
            df = runs.frame(fn, "aqm", "l4s_cc", "n_l4s", "n_classic", **scope)
            df["pairing"] = [_pairing(a, c) for a, c in zip(df["aqm"], df["l4s_cc"], strict=True)]
            return df

        out: dict[str, tuple[Any, dict[str, Any], str]] = {}
        ratio = frame(_ratio, l4s_cc=["dctcp", "prague"])
        if not ratio.empty:
            bands = {_pairing(a, c): _bounds(UNEQUAL if a in ("red", "pie") else EQUAL) for a, c in RUNS}
            out["ratio-grid"] = (ratio, {"log": True, "center": 1.0, "band": bands, **GRID_LABELS,
                                         "label": "L4S : Classic per-flow throughput (×)"}, "×")  # fmt: skip
        p99 = frame(_l4s_soj("p99"), aqm=["curvy_red", "dualpi2"])
        if not p99.empty:
            out["l4s-p99-grid"] = (p99, {"band": (None, L4S_P99_MAX_MS), "label": "L4S queue delay p99 (ms)",
                                         **GRID_LABELS}, "ms")  # fmt: skip
        return out

    def tables(self, runs: Runs) -> dict[str, str]:
        from aqmlab.panels import grid_markdown
        from aqmlab.reproduce.dualq_figures import tables

        grids = {name: grid_markdown(df, **GRID_AXES, unit=unit) for name, (df, _, unit) in self.grids(runs).items()}
        return {**tables(runs), **grids}
