"""dualq-dynamic: seed 000's "Dynamic Low Latency Test Scenarios".

Seed 000 (De Schepper, Tsang, Bondarenko, Briscoe, "DualQ Coupled AQM",
2015): short flows arrive with exponential inter-arrival times at a low
(L = 10 requests/s) and a high (H = 100 requests/s) load, their sizes
Pareto-distributed between 1 KB and 1 MB; completion time is plotted
against size (X = log [0.001:1] MB, Y = log [0.01:10] s) and queue delay as
CDFs, for PIE (CUBIC+ECN against CUBIC), the DualQ (DCTCP against CUBIC) and
FQ-CoDel (DCTCP against CUBIC). The claims are the slides' observations:

* PIE: "ECN improves by preventing longest delays caused by retransmission
  timeouts"; "No ECN on SYN → 1s timeout"; "Q sizes around 20ms when long
  flows are active".
* DualQ: "Consistent low latency for DCTCP"; "DCTCP flows get less
  throughput due to exiting too fast slow start and smaller classic queue";
  "Extreme small queues for DCTCP, no slow start overshoot".
* FQ-CoDel: "Almost perfect scheduled".

Not judged: "ECN issue in Linux for sizes < 3KB" (a Linux implementation
defect, not a property of the algorithms), "ECN packets experience slightly
longer delay in queue" and "DCTCP has larger self inflicted queue" under
FQ-CoDel (per-class delay inside one queue or one flow queue is not in the
summary), "Burst allowance is effective due to separate queues" (FQ-CoDel
has no burst allowance; its flow isolation is judged as "almost perfect
scheduled"). PIE's "Burst allowance not effective when long flows are
active" is judged from PIE's burst-allowance probe; full mode adds PIE with
the short flows alone as the unjudged contrast.

Where the slides are silent (aqmlab's choices, docs/results/dualq-dynamic.md):
the steady-state part's 40 Mbit/s, 20 ms base RTT and 200 ms buffer; each
class has its own arrival process at the load's rate; one long-running flow
per class ("when long flows are active"); Pareto shape 1.1 (the slides give
only the range; the full run adds 0.9 and 1.5 as a sensitivity check).
"""

from __future__ import annotations

from typing import Any

from aqmlab.judging import Band, Tolerance
from aqmlab.reproduce.framework import Case, Claim, Experiment, Runs, ecn_params, queue_of, subqueue

DOC = "docs/results/dualq-dynamic.md"
SEED = "seed 000 'Dynamic Low Latency Test Scenarios'"

#: (AQM, the ECN-capable short-flow class, the other class) as the slides pair them.
RUNS = (
    ("pie", "cubic_ecn", "cubic"),
    ("curvy_red", "dctcp", "cubic"),
    ("dualpi2", "dctcp", "cubic"),
    ("fq_codel", "dctcp", "cubic"),
)
#: Requests per second per class: the slides' L and H.
LOADS = {"L": 10, "H": 100}
#: Pareto shape: not given by the slides (aqmlab's choice; sensitivity in full mode).
PARETO_SHAPE = 1.1
SENSITIVITY_SHAPES = (0.9, 1.5)
#: Long-running flows per class, the reading of "when long flows are active".
LONG_FLOWS_PER_CLASS = 1
#: PIE's burst allowance is judged over the measured part of each run (after the warm-up).
WARMUP_S = 5.0
#: Size classes of workload_flows.by_size (summary.json): index 0 is 0-10 kB,
#: 1 is 10-100 kB, 2 is 100 kB-1 MB.
SMALL, MEDIUM, LARGE = 0, 1, 2

_CLASS = {
    "cubic": {"cc": "cubic", "ecn": "off"},
    "cubic_ecn": {"cc": "cubic", "ecn": "classic"},
    "dctcp": {"cc": "dctcp", "ecn": "l4s"},
}


def _by_label(s: dict[str, Any], label: str) -> dict[str, Any]:
    return s["workload_flows"]["by_label"][label]


def _fct(s: dict[str, Any], label: str, size: int | None, stat: str) -> float | None:
    g = _by_label(s, label)
    fct = g["fct_s"] if size is None else g["by_size"][size]["fct_s"]
    return fct.get(stat)


#: "Never available": at most this share of PIE's samples with allowance left (theory: 0).
BURST_SHARE_MAX = 0.01


def burst_share(s: dict[str, Any]) -> float | None:
    """Share of PIE's 100 ms samples in the measured window with burst allowance left."""
    w = next((w for w in s.get("windows", []) if w["name"] == "measured"), None)
    st = ((w or {}).get("probes") or {}).get("bottleneck", {}).get("burst_ms")
    return None if st is None else st["positive_share"]


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b <= 0 else a / b


class DualqDynamic(Experiment):
    name = "dualq-dynamic"
    title = "DualQ Coupled AQM: dynamic low-latency scenarios (De Schepper et al. 2015)"
    source = "seed 000: De Schepper, Tsang, Bondarenko, Briscoe, 'DualQ Coupled AQM' (2015), dynamic test scenarios"
    description = (
        "Short flows with Poisson arrivals at 10 (L) or 100 (H) requests/s per class and bounded-Pareto sizes "
        "(1 KB-1 MB), next to one long-running flow per class, over 40 Mbit/s and 20 ms: CUBIC+ECN against CUBIC "
        "through PIE, DCTCP against CUBIC through Curvy RED, DualPI2 and FQ-CoDel. Quick: both loads, Pareto "
        "shape 1.1, 40 s, one seed; full: 150 s, seeds 1-3, plus shapes 0.9 and 1.5 at H."
    )
    requires_aqm = tuple(a for a, _, _ in RUNS)
    requires_cc = ("cubic", "dctcp")

    def scenario(self, aqm: str, ecn_class: str, other: str, load: str, shape: float, quick: bool,
                 long_flows: int = LONG_FLOWS_PER_CLASS) -> dict[str, Any]:  # fmt: skip
        rate = LOADS[load]
        flows, workloads = [], []
        for label in (ecn_class, other):
            spec = _CLASS[label]
            if long_flows:
                flows.append({**spec, "label": f"{label}-long", "count": long_flows, "rtt": "20ms",
                              "start_jitter": "1s"})  # fmt: skip
            workloads.append({**spec, "kind": "web", "label": label, "rate": f"{rate}/s", "rtt": "20ms",
                              "size": {"dist": "pareto", "min": "1KB", "max": "1MB", "shape": shape}})  # fmt: skip
        return {
            "name": f"dualq-dynamic-{aqm}-{ecn_class}-{load}-shape{shape:g}",
            "description": f"{ecn_class} and {other} short flows at {rate}/s each through {aqm}, 40 Mbit/s, 20 ms",
            "duration": "40s" if quick else "150s",
            "warmup": f"{WARMUP_S:g}s",
            "bottleneck": {"rate": "40Mbps", "buffer": "200ms", "aqm": aqm, "params": ecn_params(aqm)},
            "flows": flows,
            "workloads": workloads,
            "metrics": {"interval": "100ms"},
        }

    def cases(self, quick: bool) -> list[Case]:
        points = [(load, PARETO_SHAPE) for load in LOADS]
        if not quick:
            points += [("H", s) for s in SENSITIVITY_SHAPES]
        end_s = 40.0 if quick else 150.0
        # PIE's runs carry a window over the measured part: its probes
        # (burst allowance) per window ride in the summary.
        out = [
            Case(f"{aqm}/{load}/shape{shape:g}", self.scenario(aqm, ecn, other, load, shape, quick),
                 {"aqm": aqm, "load": load, "shape": shape, "ecn_class": ecn, "other": other},
                 (("measured", WARMUP_S, end_s),) if aqm == "pie" else ())
            for aqm, ecn, other in RUNS
            for load, shape in points
        ]  # fmt: skip
        if not quick:
            # The contrast the slide implies (shown, not judged): PIE with the
            # short flows alone, where the burst allowance can re-arm.
            aqm, ecn, other = RUNS[0]
            out += [Case(f"{aqm}/{load}/no-long-flows", self.scenario(aqm, ecn, other, load, PARETO_SHAPE, quick, 0),
                         {"aqm": aqm, "load": load, "shape": PARETO_SHAPE, "ecn_class": ecn, "other": other,
                          "long_flows": 0}, (("measured", WARMUP_S, end_s),))
                    for load in LOADS]  # fmt: skip
        return out

    def showcase(self, quick: bool) -> list[str]:
        return [f"{aqm}/H/shape{PARETO_SHAPE:g}" for aqm, _, _ in RUNS]

    def claims(self) -> list[Claim]:
        main = {"shape": PARETO_SHAPE, "long_flows": None}

        def per_case(fn: Any, **scope: Any) -> Any:
            return lambda runs: runs.per_case(fn, **main, **scope)

        def tail_gain(s: dict[str, Any]) -> float | None:
            return _ratio(_fct(s, "cubic", None, "p99"), _fct(s, "cubic_ecn", None, "p99"))

        def ecn_syn_timeouts(s: dict[str, Any]) -> float:
            return float(_by_label(s, "cubic_ecn")["syn_timeouts"])

        def pie_median_ms(s: dict[str, Any]) -> float | None:
            return (queue_of(s).get("sojourn_ms") or {}).get("p50")

        def dctcp_timeout_share(s: dict[str, Any]) -> float | None:
            g = _by_label(s, "dctcp")
            return g["timeout_flows"] / g["started"] if g["started"] else None

        def large_flow_slowdown(s: dict[str, Any]) -> float | None:
            return _ratio(_fct(s, "dctcp", LARGE, "p50"), _fct(s, "cubic", LARGE, "p50"))

        def l4s_p99_ms(s: dict[str, Any]) -> float | None:
            return (subqueue(s, "l4s").get("sojourn_ms") or {}).get("p99")

        def fq_balance(size: int) -> Any:
            return lambda s: _ratio(_fct(s, "dctcp", size, "p50"), _fct(s, "cubic", size, "p50"))

        dualqs = ["curvy_red", "dualpi2"]
        tail_why = (f"a timeout (rto_min 200 ms, 1 s for a SYN) is 10-50 round trips at 20 ms, so DCTCP's "
                    f"completion times are consistent (their 99th percentile free of timeouts) only if fewer than 1 % "
                    f"of its flows wait one ({DOC}#consistent-low-latency)")  # fmt: skip
        return [
            Claim("PIE: ECN shortens the longest completion times (CUBIC p99 FCT over CUBIC+ECN's), at each load",
                  "ECN prevents the longest delays",
                  Tolerance(Band.at_least(1.0), "qualitative", f"{SEED}, COMPLETION TIMES PIE: 'ECN improves by "
                            f"preventing longest delays caused by retransmission timeouts' ({DOC}#pie)"),
                  per_case(tail_gain, aqm="pie"), "×"),
            Claim("PIE: CUBIC+ECN flows still lose SYNs (Not-ECT) and wait the 1 s initial RTO, at each load",
                  "No ECN on SYN → 1 s timeout",
                  Tolerance(Band.at_least(1.0), "qualitative", f"{SEED}, COMPLETION TIMES PIE: 'No ECN on SYN → 1s "
                            f"timeout'; at least one ECN flow with a SYN timeout ({DOC}#pie)"),
                  per_case(ecn_syn_timeouts, aqm="pie"), "flows", digits=0),
            Claim("PIE: the queue delay median is around 20 ms while long flows are active, at each load",
                  "Q sizes around 20 ms",
                  Tolerance(Band.between(10.0, 30.0), "qualitative", f"{SEED}, QSIZE CDF PIE: 'Q sizes around 20ms "
                            f"when long flows are active'; 'around' read as within ±50 % ({DOC}#pie)"),
                  per_case(pie_median_ms, aqm="pie"), "ms"),
            Claim("PIE: the burst allowance is never available while long flows are active (share of the "
                  "controller's samples with allowance left), at each load",
                  "Burst allowance not effective when long flows are active",
                  Tolerance(Band.at_most(BURST_SHARE_MAX), "theory", f"{SEED}, COMPLETION TIMES PIE: 'Burst allowance "
                            "not effective when long flows are active'. RFC 8033 §4.4 re-arms the allowance only when "
                            "the drop probability is 0 and the queue delay (now and at the last update) is below half "
                            "the target; long-running flows hold a standing queue at the target, so the share is 0 in "
                            f"theory; at most {BURST_SHARE_MAX:.0%} of the 100 ms samples allows for the start of the "
                            f"measured part ({DOC}#pie)"),
                  per_case(burst_share, aqm="pie"), "of samples"),
            Claim("DualQ: at most 1 % of DCTCP's short flows wait a timeout (SYN or data), per AQM and load",
                  "consistent low latency for DCTCP",
                  Tolerance(Band.at_most(0.01), "theory", f"{SEED}, COMPLETION TIMES DUALQ: 'Consistent low latency "
                            f"for DCTCP'; {tail_why}"),
                  per_case(dctcp_timeout_share, aqm=dualqs), "of flows"),
            Claim("DualQ: DCTCP's large flows (100 kB-1 MB) take longer than CUBIC's (median FCT ratio), per AQM and load",
                  "DCTCP flows get less throughput",
                  Tolerance(Band.at_least(1.0), "qualitative", f"{SEED}, COMPLETION TIMES DUALQ: 'DCTCP flows get "
                            f"less throughput due to exiting too fast slow start and smaller classic queue' ({DOC}#dualq)"),
                  per_case(large_flow_slowdown, aqm=dualqs), "×"),
            Claim("DualQ: L4S queue delay 99th percentile below 2 ms under web traffic, per AQM and load",
                  "extreme small queues, no slow-start overshoot",
                  Tolerance(Band.at_most(2.0), "qualitative", f"{SEED}, QSIZE CDF DUALQ: 'Extreme small queues for "
                            f"DCTCP, no slow start overshoot'; the number as in dualq-coexistence (arXiv 2209.01078) "
                            f"({DOC}#dualq)"),
                  per_case(l4s_p99_ms, aqm=dualqs), "ms"),
            *[Claim(f"FQ-CoDel: DCTCP and CUBIC {name} complete alike (median FCT ratio), at each load",
                    "almost perfectly scheduled",
                    Tolerance(Band.between(0.5, 2.0), "qualitative", f"{SEED}, COMPLETION TIMES FQ_CODEL: 'Almost "
                              f"perfect scheduled'; on the slides' log axes, within a factor 2 ({DOC}#fq-codel)"),
                    per_case(fq_balance(size), aqm="fq_codel"), "×")
              for size, name in ((SMALL, "flows under 10 kB"), (LARGE, "flows of 100 kB-1 MB"))],
        ]  # fmt: skip

    def tables(self, runs: Runs) -> dict[str, str]:
        """PIE's burst allowance with and without long flows (the latter in full mode only)."""
        rows = []
        for c in runs.select(aqm="pie", shape=PARETO_SHAPE):
            def m(fn: Any) -> str:
                v = runs.mean(c.label, fn)
                return "–" if v != v else f"{v:.3g}"

            rows.append(f"| {c.tags['load']} | {'no' if c.tags.get('long_flows') == 0 else 'yes'} | {m(burst_share)} | "
                        f"{m(lambda s: _fct(s, 'cubic_ecn', SMALL, 'p50'))} | {m(lambda s: _fct(s, 'cubic_ecn', SMALL, 'p99'))} | "
                        f"{m(lambda s: (queue_of(s).get('sojourn_ms') or {}).get('p50'))} |")  # fmt: skip
        head = ("| load | long flows | burst allowance available (share of samples) | CUBIC+ECN < 10 kB FCT p50 s | "
                "p99 s | queue delay p50 ms |\n|---|---|---|---|---|---|\n")
        return {"PIE burst allowance": head + "\n".join(rows) + "\n"} if rows else {}

    def figures(self, runs: Runs) -> dict[str, Any]:
        import matplotlib.pyplot as plt
        import numpy as np

        figs: dict[str, Any] = {}
        shown = [(label, r) for label, r in runs.showcased.items() if "/H/" in label]
        if shown:
            fig, axes = plt.subplots(1, len(shown), figsize=(4.2 * len(shown), 4), layout="constrained", squeeze=False)
            for ax, (label, r) in zip(axes[0], shown, strict=True):
                fl = r.tables["flows"]
                fl = fl[(fl.from_workload == 1) & (fl.fct_ns >= 0)]
                for cls, g in fl.groupby("label"):
                    ax.scatter(g.size_bytes / 1e6, g.fct_ns / 1e9, s=4, alpha=0.5, label=str(cls))
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_xlim(1e-3, 1)
                ax.set_ylim(1e-2, 10)
                ax.set_xlabel("flow size (MB)")
                ax.set_ylabel("completion time (s)")
                ax.set_title(label.split("/")[0] + ", high load")
                ax.grid(alpha=0.3, which="both")
                ax.legend(fontsize="small", markerscale=3)
            figs["fct-vs-size"] = fig
        fig, ax = plt.subplots(figsize=(8, 4), layout="constrained")
        width = 0.2
        labels = [f"{aqm}/{load}" for aqm, _, _ in RUNS for load in LOADS]
        x = np.arange(len(labels))
        for i, (size, name) in enumerate(((SMALL, "<10 kB"), (MEDIUM, "10-100 kB"), (LARGE, "0.1-1 MB"))):
            for j, cls in enumerate(("ecn", "other")):
                vals = []
                for aqm, ecn, other in RUNS:
                    for load in LOADS:
                        lab = ecn if cls == "ecn" else other
                        cs = runs.select(aqm=aqm, load=load, shape=PARETO_SHAPE, long_flows=None)
                        vals.append(runs.mean_over(cs, lambda s, lab=lab, size=size: _fct(s, lab, size, "p50")))
                ax.bar(x + (2 * i + j - 2.5) * width / 2, vals, width / 2,
                       label=f"{name} {'ECN class' if cls == 'ecn' else 'CUBIC'}")  # fmt: skip
        ax.set_xticks(x, labels, rotation=20)
        ax.set_yscale("log")
        ax.set_ylabel("median completion time (s)")
        ax.set_title("Median FCT per size class (ECN class: CUBIC+ECN under PIE, DCTCP otherwise)")
        ax.legend(fontsize="x-small", ncols=3)
        figs["fct-by-size"] = fig
        return figs
