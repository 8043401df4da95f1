"""The validation suite's rows and groups.

Every row is a claim about aqmlab's models with its reference (an analytic
law or another simulator), its tolerance and where that tolerance is argued
(``docs/validation.md``, one section per row). The tolerances are fixed here,
before any figure is measured; ``tests/test_validation.py`` checks that the
page and this table agree.

A *group* is a module of this package with
``judgements(quick: bool, progress=None) -> list[Judgement]``; ``GROUPS``
lists them in report order. A group that cannot be imported (not written
yet) is skipped and said so.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from aqmlab.judging import Band, Judgement, KnownDeviation, Replicates, Tolerance, judge

__all__ = ["GROUPS", "ROWS", "Progress", "Row", "load_groups", "row"]

#: progress(runs, label): a group reports that ``runs`` more simulations
#: finished (``label`` says which row they belong to).
Progress = Callable[[int, str], object]

#: Report order. Each name is a module of aqmlab.validation.
GROUPS = ["laws", "bbr2", "consistency", "ns3"]

DOC = "docs/validation.md"


@dataclass(frozen=True)
class Row:
    """One row of the suite: a claim, its reference and its tolerance."""

    id: str
    group: str
    claim: str
    #: The reference in words and symbols (the law, or the other simulator).
    reference: str
    #: What the judged figure is (e.g. "measured / law").
    figure: str
    tolerance: Tolerance
    unit: str = ""

    def judge(
        self,
        cases: Iterable[tuple[Mapping[str, Any], float | Replicates | None] | tuple[Mapping[str, Any], float | Replicates | None, Mapping[str, Any]]],
        *,
        known_deviation: KnownDeviation | None = None,
        notes: Iterable[str] = (),
    ) -> Judgement:
        j = judge(self.claim, self.tolerance, cases, unit=self.unit, known_deviation=known_deviation)
        j.notes.extend(notes)
        return j

    def not_applicable(self, why: str) -> Judgement:
        """The row cannot be measured in this build (e.g. a CC not yet in the
        registry): one unmeasured case, verdict N/A, the reason in its notes."""
        return self.judge([({"reason": why}, None)], notes=[why])


def _theory(band: Band, anchor: str) -> Tolerance:
    return Tolerance(band, "theory", f"{DOC}#{anchor}")


ROWS: dict[str, Row] = {}


def row(r: Row) -> Row:
    if r.id in ROWS:
        raise ValueError(f"validation row {r.id!r} defined twice")
    ROWS[r.id] = r
    return r


# --- analytic laws (group "laws") -------------------------------------------

RENO_SQRT = row(Row(
    "reno-sqrt", "laws", "Reno follows the square-root law under random loss (p ≤ 1 %)",
    "Mathis et al. 1997: goodput = C·MSS/(RTT·√p), C = 1.31 (random loss, no delayed-ACK penalty)",
    "measured / law", _theory(Band.between(0.85, 1.15), "reno-sqrt")))
RENO_PFTK = row(Row(
    "reno-pftk", "laws", "Reno follows the PFTK model at high loss (p 3–10 %, timeouts)",
    "Padhye et al. 1998 eq. 31 (b = 1, T0 = RTO), times (1 − p) for goodput",
    "measured / law", _theory(Band.between(0.7, 1.3), "reno-pftk")))
CUBIC = row(Row(
    "cubic-response", "laws", "CUBIC follows its response function under random loss",
    "RFC 9438 §5.1: W = max(1.054·(RTT/p)^¾, √(3/(2p))) packets, C = 0.4, β = 0.7",
    "measured / law", _theory(Band.between(0.8, 1.25), "cubic-response")))
DCTCP = row(Row(
    "dctcp-response", "laws", "DCTCP's window is 2/p under probabilistic marking",
    "RFC 9332 §2.1 / Alizadeh 2010: W = 2/p, rate = 2·MSS/(p·RTT)",
    "measured / law", _theory(Band.between(0.9, 1.3), "dctcp-response")))
DCTCP_STEP = row(Row(
    "dctcp-step", "laws", "DCTCP's marking fraction at a step threshold is √(2/W*)",
    "Alizadeh et al. 2010 §3.3: α ≈ √(2/W*), W* = (C·RTT + K)/N packets",
    "measured / law", _theory(Band.between(0.75, 1.33), "dctcp-step")))
PRAGUE = row(Row(
    "prague-response", "laws", "TCP Prague's window is 2/p under probabilistic marking",
    "RFC 9332 §2.1 (scalable CC, DCTCP-like reduction): W = 2/p, with rtt_scaling = none",
    "measured / law", _theory(Band.between(0.9, 1.3), "prague-response")))
PRAGUE_RATE = row(Row(
    "prague-rtt-independence", "laws", "TCP Prague's default RTT scaling gives every RTT below 25 ms the rate of a 25 ms flow",
    "tcp_prague.c v0.6 RTT_CONTROL_RATE: rate = 2·MSS/(p·T), T = 25 ms, RTTs on a 128 µs grid",
    "measured / law", _theory(Band.between(0.9, 1.3), "prague-rtt-independence")))
COUPLING = row(Row(
    "coupling", "laws", "Coupled AQMs signal p_C = (p_L/k)²",
    "RFC 9332 §2.1: p_C = (p_CL/k)²; realised rates, corrected for the variance of p′ (Jensen)",
    "(p_C / (p_L/k)²) / (E[p_c] / (E[p_cl]/k)²)", _theory(Band.between(0.8, 1.25), "coupling")))
CODEL_SPACING = row(Row(
    "codel-spacing", "laws", "CoDel spaces its drops interval/√count",
    "RFC 8289 §5.5: drop k at t_1 + Σ_{j<k} interval/√j while the sojourn stays above target",
    "drops / law (persistent overload)", _theory(Band.between(0.95, 1.05), "codel-spacing")))
QCN_EQUILIBRIUM = row(Row(
    "qcn-equilibrium", "laws", "QCN drives the queue to Q_eq for many sources and long RTTs",
    "seed 003 (Kabbani, Pan, Prabhakar, Seaman): Fb = −(Q_off + w·Q_delta) is zero only at Q = Q_eq, Q_delta = 0",
    "mean queue (Little) / Q_eq", _theory(Band.between(0.5, 2.0), "qcn-equilibrium")))
PI_DELAY = row(Row(
    "pi-equilibrium-delay", "laws", "PIE and PI2 hold the mean queue delay at their target",
    "RFC 8033 §4.2 / De Schepper et al. 2016: the integral term zeroes the delay error",
    "mean sojourn / target", _theory(Band.between(0.8, 1.2), "pi-equilibrium-delay")))
CONSERVATION = row(Row(
    "conservation", "laws", "Packets are conserved at every queue of every run",
    "arrivals − departures − drops = change of the resident packets, |·| ≤ buffer",
    "|residual| / buffer (packets)", _theory(Band.at_most(1.0), "conservation")))

# --- BBRv2 on its own (group "bbr2") ----------------------------------------

BBR2_FILL = row(Row(
    "bbr2-fill", "bbr2", "One BBRv2 flow fills a 1 Gbit/s link (no-ECN and L4S modes)",
    "tcp_bbr2.c v2alpha: cruise at 0.99·bw (pacing margin 1 %), PROBE_RTT ½ rate for 0.2 s + 1 round every 5 s: ≈ 0.97",
    "bottleneck utilisation", _theory(Band.at_least(0.95), "bbr2-fill")))
BBR2_QUEUE = row(Row(
    "bbr2-queue", "bbr2", "…with a small queue: one BBRv2 flow's p99 sojourn stays below a third of the RTT",
    "tcp_bbr2.c v2alpha: only PROBE_UP exceeds the estimate (gain 1.25, ends at inflight ≥ 1.25·BDP): queue ≤ 0.25·BDP",
    "p99 sojourn / base RTT", _theory(Band.at_most(0.3), "bbr2-queue")))
BBR2_CONVERGENCE = row(Row(
    "bbr2-convergence", "bbr2", "Two BBRv2 flows converge to equal shares when loss or ECN bounds inflight",
    "identical flows: no persistent split; v2alpha's inflight_hi headroom and bw_lo/inflight_lo cuts equalise",
    "Jain's index", _theory(Band.at_least(0.95), "bbr2-convergence")))
BBR2_ECN_STEP = row(Row(
    "bbr2-ecn-step", "bbr2", "BBRv2's inflight_hi at a step-marked queue is where a rate sample's CE fraction reaches ecn_thresh",
    "tcp_bbr2.c v2alpha (ecn_thresh ½, inflight_hi = tx_in_flight): B + K ≤ inflight_hi ≤ (B + K)/(1 − ½(1 − 1/1.25))",
    "median inflight_hi / (B + K)", _theory(Band.between(0.97, 1.14), "bbr2-ecn-step")))

# --- self-consistency (group "consistency") ----------------------------------

IDENTICAL_JOBS = row(Row(
    "bit-identical", "consistency", "Same scenario and seed give the identical summary on every backend and job count",
    "determinism (docs/architecture.md): one random stream per component, derived from the seed",
    "differing summary fields", _theory(Band.at_most(0.0), "bit-identical")))
TOPOLOGY = row(Row(
    "dumbbell-topology", "consistency", "A dumbbell and the same network written as [topology] give identical results",
    "the dumbbell is a topology (docs/scenario.md): same links, delays, queues and seeds",
    "max relative difference of flow goodputs and queue counters", _theory(Band.at_most(1e-9), "dumbbell-topology")))
TIME_SCALING = row(Row(
    "time-scaling", "consistency", "Rates ×10 and times ÷10 give the same dimensionless queue behaviour",
    "scale invariance of the packet model: every time constant ÷10 leaves the dynamics in units of RTT unchanged",
    "relative difference of utilisation, drop rate, sojourn/RTT", _theory(Band.at_most(0.05), "time-scaling")))


# --- ns-3 cross-runs (group "ns3") -------------------------------------------
# Each case is one scenario × metric of the ns-3 s1 dumbbell; the judged
# figure is the difference of the 3-seed means over the case's allowance
# (aqmlab.validation.ns3.allowance, argued in docs/validation.md#ns3-allowances).

_NS3_REF = "ns-3.48 (ns-3-dev 140646449a33) s1 dumbbell, 3 runs per scenario (validation/data/ns3_s1.csv)"
_NS3_FIG = "(aqmlab − ns-3) / allowance"
NS3_LINUXRENO_CODEL = row(Row(
    "ns3-linuxreno-codel", "ns3", "aqmlab Reno through CoDel matches ns-3 LinuxReno (goodput, sojourn, drops, Jain)",
    f"{_NS3_REF}: TcpLinuxReno, CoDel 5/100 ms, 4 and 64 flows", _NS3_FIG,
    _theory(Band.between(-1.0, 1.0), "ns3-linuxreno-codel")))
NS3_LINUXRENO_PIE = row(Row(
    "ns3-linuxreno-pie", "ns3", "aqmlab Reno through PIE matches ns-3 LinuxReno (goodput, sojourn, drops, Jain)",
    f"{_NS3_REF}: TcpLinuxReno, PIE old (20/30 ms) and rfc (15/15 ms), 4 and 64 flows", _NS3_FIG,
    _theory(Band.between(-1.0, 1.0), "ns3-linuxreno-pie")))
NS3_LINUXRENO_ARED = row(Row(
    "ns3-linuxreno-ared", "ns3", "aqmlab Reno through Adaptive RED matches ns-3 LinuxReno (goodput, sojourn, drops, Jain)",
    f"{_NS3_REF}: TcpLinuxReno, ARED (target 5 ms), 4 and 64 flows", _NS3_FIG,
    _theory(Band.between(-1.0, 1.0), "ns3-linuxreno-ared")))
NS3_NEWRENO = row(Row(
    "ns3-newreno", "ns3", "aqmlab Reno (per-ACK growth) against ns-3 NewReno on the same dumbbell",
    f"{_NS3_REF}: TcpNewReno, CoDel, PIE old/rfc, ARED, ECN off/on, 4, 16 and 64 flows", _NS3_FIG,
    _theory(Band.between(-1.0, 1.0), "ns3-newreno")))


def load_groups(names: Iterable[str] = GROUPS) -> tuple[list[tuple[str, Any]], list[str]]:
    """Import the group modules; returns ([(name, module)], [names skipped])."""
    loaded, skipped = [], []
    for name in names:
        try:
            mod = importlib.import_module(f"aqmlab.validation.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"aqmlab.validation.{name}":
                raise
            skipped.append(name)
            continue
        loaded.append((name, mod))
    return loaded, skipped
