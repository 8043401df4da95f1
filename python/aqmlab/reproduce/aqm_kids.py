"""aqm-kids: CoDel vs PIE vs ARED (Khademi, Ros, Welzl, IETF 88, 2013).

Seed 002: "Evaluating CoDel, FQ CoDel and PIE: how good are they really?"
(and the UiO technical report "The New AQM Kids on the Block"). Dumbbell
with 4 senders, 10 Mbit/s bottleneck, base RTT 100 ms, Linux NewReno,
txqueuelen 1000; 1, 4, 16 or 64 concurrent TCP flows; ECN off and on.
AQMs at the paper's settings: CoDel target 5 ms / interval 100 ms; PIE as
in Linux 3.14 (target 20 ms, tupdate 30 ms, alpha 0.125, beta 1.25); ARED
as in Floyd et al. 2001 (interval 500 ms). Claims (the paper's conclusions):

* "ARED outperforms CoDel and PIE in all other studied scenarios, most
  notably regarding delay" (the exceptions being very few flows, wireless,
  and ECN).
* "ARED only performed worse than CoDel or PIE ... with very small number
  of flows".
* With ECN, ARED "CE-marking 3.5-6.6 times more than dropping (w/o ECN)".
* "with ECN, ARED's goodput drops significantly as congestion level
  decreases".

Per-packet RTT is reported as base RTT + bottleneck queueing delay (the
reverse path is uncongested in this set-up); the paper measured it with
synthetic packet pairs.
"""

from __future__ import annotations

from typing import Any

from aqmlab.judging import Band, Tolerance
from aqmlab.reproduce.framework import (
    Case,
    Claim,
    Experiment,
    Runs,
    aqm_param_names,
    ecn_params,
    queue_of,
    total_goodput,
)

AQMS = ("codel", "pie", "ared")
BASE_RTT_MS = 100.0


def pie_linux_314() -> dict[str, Any]:
    """PIE with the Linux 3.14 parameter set the paper used."""
    if "preset" in aqm_param_names("pie"):
        return {"preset": "linux-3.14"}
    return {"target": "20ms", "tupdate": "30ms", "max_burst": "100ms"}


def rtt_p(p: str) -> Any:
    def f(s: dict[str, Any]) -> float | None:
        soj = queue_of(s).get("sojourn_ms") or {}
        v = soj.get(p)
        return None if v is None else BASE_RTT_MS + v

    return f


def drop_rate(s: dict[str, Any]) -> float:
    return float(queue_of(s)["drop_rate"])


def mark_rate(s: dict[str, Any]) -> float:
    return float(queue_of(s)["mark_rate"])


#: Seed 002's 'ECN' slide: ARED's CE marks per drop, ECN on vs off, by flow count.
SEED_MARK_TO_DROP = {4: 6.62, 16: 3.46, 32: 4.30, 64: 3.87}


class AqmKids(Experiment):
    name = "aqm-kids"
    title = "The new AQM kids on the block: CoDel vs PIE vs ARED (Khademi, Ros, Welzl 2013)"
    source = "seed 002: Khademi, Ros, Welzl, 'Evaluating CoDel, FQ CoDel and PIE: how good are they really?', IETF 88 ICCRG"
    description = (
        "NewReno flows over a 10 Mbit/s bottleneck with 100 ms base RTT and a 1000-packet buffer; 1, 4, 16 or 64 flows "
        "(4 senders), through CoDel, PIE (Linux 3.14 set) or ARED at equal target delays (5, 10, 20, 30 ms, as the "
        "seed's parameter-sensitivity slides), ECN off; and ECN on at 5 ms (the seed's ECN slides). "
        "Quick: targets 5 and 30 ms, 30 s, one seed; full: every target, 60 s as in the paper, 10 seeds."
    )
    requires_aqm = AQMS
    requires_cc = ("reno",)

    flow_counts = (1, 4, 16, 64)


    def seeds(self, quick: bool) -> list[int]:
        return [1] if quick else list(range(1, 11))

    #: The seed's 'Parameter Sensitivity' slides: every AQM at each target delay.
    targets_ms = (5, 10, 20, 30)
    #: The seed's ECN slides use target 5 ms.
    ecn_target_ms = 5

    def grid(self, quick: bool) -> list[tuple[int, int, bool]]:
        """(target ms, flows, ECN): every target without ECN, ECN on at 5 ms.
        Quick: the extreme targets (5 and 30 ms), every flow count."""
        targets = (5, 30) if quick else self.targets_ms
        cells = [(t, n, False) for t in targets for n in self.flow_counts]
        return cells + [(self.ecn_target_ms, n, True) for n in self.flow_counts]

    def scenario(self, aqm: str, flows: int, ecn: bool, quick: bool, target_ms: int = 5) -> dict[str, Any]:
        params: dict[str, Any] = pie_linux_314() if aqm == "pie" else {}
        # Equal target delays for all three, as the seed compares them.
        params[{"codel": "target", "pie": "target", "ared": "target_delay"}[aqm]] = f"{target_ms}ms"
        if aqm == "ared":
            # The paper ran Linux `tc red adaptive`: no gentle region (above
            # max_th every packet is dropped, or CE-marked with ECN, since Linux
            # has no `harddrop` by default); aqmlab's RED defaults follow ns-3
            # (gentle on, UseHardDrop on).
            params.update({"gentle": False, "hard_drop": False})
        if ecn:
            params.update(ecn_params(aqm))
        return {
            "name": f"aqm-kids-{aqm}-{target_ms}ms-{flows}flows-ecn-{'on' if ecn else 'off'}",
            "duration": "30s" if quick else "60s",
            "warmup": "10s",
            "bottleneck": {"rate": "10Mbps", "buffer": "1000pkt", "aqm": aqm, "params": params},
            "flows": [{"cc": "reno", "label": "reno", "count": flows, "rtt": "100ms",
                       "ecn": "classic" if ecn else "off", "start_jitter": "2s"}],  # fmt: skip
            "metrics": {"interval": "500ms"},
        }

    def cases(self, quick: bool) -> list[Case]:
        return [
            Case(f"{aqm}/{t}ms/{n}/ecn-{'on' if ecn else 'off'}", self.scenario(aqm, n, ecn, quick, t),
                 {"aqm": aqm, "target_ms": t, "flows": n, "ecn": ecn})  # fmt: skip
            for aqm in AQMS
            for t, n, ecn in self.grid(quick)
        ]

    def showcase(self, quick: bool) -> list[str]:
        return [f"{aqm}/5ms/16/ecn-off" for aqm in AQMS]

    def claims(self) -> list[Claim]:
        def rtt_p50(runs: Runs, c: Case) -> float:
            return runs.mean(c.label, rtt_p("p50"))

        def ared_delay_edge(g: dict[str, Case], runs: Runs) -> float:
            return rtt_p50(runs, g["ared"]) - min(rtt_p50(runs, g["codel"]), rtt_p50(runs, g["pie"]))

        def ared_single_flow(g: dict[str, Case], runs: Runs) -> float:
            gp = {a: runs.mean(g[a].label, total_goodput) for a in AQMS}
            return gp["ared"] / max(gp["codel"], gp["pie"])

        def ared_mark_vs_drop(g: dict[str, Case], runs: Runs) -> float | None:
            on, off = g["True"], g["False"]
            n = on.tags["flows"]
            drops = runs.mean(off.label, drop_rate)
            if not drops or n not in SEED_MARK_TO_DROP:
                return None
            return runs.mean(on.label, mark_rate) / drops / SEED_MARK_TO_DROP[n]

        def ared_ecn_goodput(g: dict[str, Case], runs: Runs) -> float:
            return runs.mean(g["4"].label, total_goodput) / runs.mean(g["64"].label, total_goodput)

        src = "seed 002, 'Conclusive Remarks' and 'ECN' slides"
        doc = "docs/results/aqm-kids.md"
        return [
            Claim("At equal targets, ARED has lower median per-packet RTT than CoDel and PIE (16, 64 flows, no ECN)",
                  "ARED lowest ('most notably regarding delay')",
                  Tolerance(Band.at_most(1.0), "qualitative", f"{src}: 'most notably regarding delay'; ties within 1 ms "
                            f"(1 % of the 100 ms base RTT) do not contradict it ({doc})"),
                  lambda runs: runs.per_group(["target_ms", "flows", "ecn"], lambda g: ared_delay_edge(g, runs), "aqm",
                                              flows=[16, 64], ecn=False), "ms"),
            Claim("At equal targets, with a single flow ARED gets less goodput than CoDel or PIE", "ARED worse with very few flows",
                  Tolerance(Band.at_most(1.0), "qualitative", f"{src}: ARED worse with very few flows ({doc})"),
                  lambda runs: runs.per_group(["target_ms", "flows", "ecn"], lambda g: ared_single_flow(g, runs), "aqm",
                                              flows=1, ecn=False), "×"),
            Claim("ARED's CE-mark-to-drop ratio (ECN on vs off) per flow count, against the seed's",
                  "6.62, 3.46, 3.87 at 4, 16, 64 flows",
                  Tolerance(Band.between(0.5, 2.0), "seed", "seed 002 'ECN' slide: marks/drops 6.62, 3.46, 4.30, 3.87 "
                            f"at 4, 16, 32, 64 flows; measured / seed within a factor 2 ({doc})"),
                  lambda runs: runs.per_group(["aqm", "target_ms", "flows"], lambda g: ared_mark_vs_drop(g, runs), "ecn",
                                              aqm="ared", target_ms=5, flows=[4, 16, 64]), "× seed"),
            Claim("With ECN, ARED's goodput falls as congestion decreases (4 vs 64 flows)", "drops 'significantly'",
                  Tolerance(Band.at_most(0.95), "qualitative", f"{src}: goodput drops 'significantly'; at least 5 % "
                            f"lower ({doc})"),
                  lambda runs: runs.per_group(["aqm", "target_ms", "ecn"], lambda g: ared_ecn_goodput(g, runs), "flows",
                                              aqm="ared", target_ms=5, ecn=True, flows=[4, 64]), "×"),
        ]  # fmt: skip

    def figures(self, runs: Runs) -> dict[str, Any]:
        import matplotlib.pyplot as plt
        import numpy as np

        figs = {}
        for what, fn, ylabel in (
            ("rtt", None, "per-packet RTT (ms): median, whisker to p90"),
            ("goodput", total_goodput, "total goodput (Mbit/s)"),
        ):
            fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True, layout="constrained")
            for ax, ecn in zip(axes, (False, True), strict=True):
                x = np.arange(len(self.flow_counts))
                for i, aqm in enumerate(AQMS):
                    if fn is None:
                        med = [runs.mean_over(runs.select(aqm=aqm, target_ms=5, flows=n, ecn=ecn), rtt_p("p50")) for n in self.flow_counts]
                        p90 = [runs.mean_over(runs.select(aqm=aqm, target_ms=5, flows=n, ecn=ecn), rtt_p("p90")) for n in self.flow_counts]
                        err = [np.zeros(len(med)), np.maximum(np.subtract(p90, med), 0)]
                        ax.bar(x + (i - 1) * 0.27, med, 0.27, yerr=err, capsize=3, label=aqm)
                    else:
                        vals = [runs.mean_over(runs.select(aqm=aqm, target_ms=5, flows=n, ecn=ecn), fn) / 1e6 for n in self.flow_counts]
                        ax.bar(x + (i - 1) * 0.27, vals, 0.27, label=aqm)
                ax.set_xticks(x, [str(n) for n in self.flow_counts])
                ax.set_xlabel("concurrent flows")
                ax.set_title(f"ECN {'on' if ecn else 'off'}")
                ax.grid(alpha=0.3, axis="y")
            axes[0].set_ylabel(ylabel)
            if what == "rtt":
                axes[0].set_ylim(bottom=BASE_RTT_MS * 0.9)
            axes[0].legend(fontsize="small")
            figs[what] = fig
        return figs
