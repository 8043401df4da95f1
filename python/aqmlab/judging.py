"""Judging a measured figure against a reference, case by case.

Shared by the reproductions (a seed's claim over a grid of cases) and the
model validation (aqmlab against an analytic law or another simulator). The
rules, fixed here once so that no experiment can bend them:

* A :class:`Tolerance` is a :class:`Band` plus *where the band comes from*:
  a quote from the seed (``basis="seed"``), an argument from theory written in
  docs (``basis="theory"``), or, when the source gives no number, a band
  argued in docs for a qualitative statement (``basis="qualitative"``). The
  band is stated before anyone looks at aqmlab's figure.
* Every case is judged on its own. A case whose figure could not be measured
  is ``N/A``, never a pass.
* A claim is ``PASS`` only if every case in its scope passes; any failing case
  makes it ``FAIL``, or ``DEVIATES-KNOWN`` when the claim carries a written
  analysis of the difference (a path into docs/ and the reason). Some cases
  unmeasured and none failing gives ``N/A``: an incomplete claim is not a pass.
* The judged figure of a case is the mean over its replications; replications
  must use distinct seeds (:func:`replicate_mean` refuses copies), and an
  interval is only drawn from two or more of them.

This module sits at the bottom of the Python layers: it imports nothing from
aqmlab.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

__all__ = [
    "Band",
    "CaseResult",
    "Judgement",
    "KnownDeviation",
    "Replicates",
    "Tolerance",
    "Verdict",
    "judge",
    "replicate_mean",
]


class Verdict(str, Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    DEVIATES_KNOWN = "DEVIATES-KNOWN"
    NA = "N/A"

    def __str__(self) -> str:
        return self.value


def _finite(x: float | None) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


@dataclass(frozen=True)
class Band:
    """A closed interval ``[low, high]``; ``None`` leaves that side open."""

    low: float | None = None
    high: float | None = None

    def __post_init__(self) -> None:
        if self.low is None and self.high is None:
            raise ValueError("a band needs at least one bound")
        if self.low is not None and self.high is not None and self.low > self.high:
            raise ValueError(f"band low {self.low} is above high {self.high}")

    @classmethod
    def at_least(cls, low: float) -> Band:
        return cls(low=low)

    @classmethod
    def at_most(cls, high: float) -> Band:
        return cls(high=high)

    @classmethod
    def between(cls, low: float, high: float) -> Band:
        return cls(low=low, high=high)

    @classmethod
    def around(cls, reference: float, *, rel: float = 0.0, abs: float = 0.0) -> Band:  # noqa: A002
        """``reference`` ± (``rel``·|reference| + ``abs``)."""
        half = rel * math.fabs(reference) + abs
        if half <= 0:
            raise ValueError("around() needs a positive rel or abs width")
        return cls(low=reference - half, high=reference + half)

    def contains(self, x: float) -> bool:
        return (self.low is None or x >= self.low) and (self.high is None or x <= self.high)

    def margin(self, x: float) -> float:
        """Signed distance to the nearest bound, scaled by the band's size:
        positive inside, negative outside. Used to name the worst case."""
        if self.low is not None and self.high is not None:
            scale = (self.high - self.low) or max(math.fabs(self.low), 1e-12)
        else:
            edge = self.low if self.low is not None else self.high
            assert edge is not None
            scale = math.fabs(edge) or 1.0
        sides = []
        if self.low is not None:
            sides.append(x - self.low)
        if self.high is not None:
            sides.append(self.high - x)
        return min(sides) / scale

    def describe(self, unit: str = "", digits: int = 3) -> str:
        u = f" {unit}" if unit else ""

        def f(v: float) -> str:
            return f"{v:.{digits}g}"

        if self.low is not None and self.high is not None:
            return f"{f(self.low)}–{f(self.high)}{u}"
        if self.low is not None:
            return f"≥ {f(self.low)}{u}"
        assert self.high is not None
        return f"≤ {f(self.high)}{u}"


@dataclass(frozen=True)
class Tolerance:
    """A band and the reason for it, quoted or argued before measuring."""

    band: Band
    basis: Literal["seed", "theory", "qualitative"]
    #: The seed's words (slide or section) or the docs/ section with the argument.
    source: str

    def __post_init__(self) -> None:
        if self.basis not in ("seed", "theory", "qualitative"):
            raise ValueError(f"tolerance basis must be seed, theory or qualitative, not {self.basis!r}")
        if not self.source.strip():
            raise ValueError("a tolerance needs its source (a quote from the seed or a docs/ reference)")


@dataclass(frozen=True)
class KnownDeviation:
    """A documented, understood reason why the model differs from the seed."""

    reason: str
    #: Where the analysis is written, e.g. "docs/results/dualq-coexistence.md#coupling".
    analysis: str

    def __post_init__(self) -> None:
        if not self.analysis.startswith("docs/"):
            raise ValueError("a known deviation points to its written analysis under docs/")


@dataclass(frozen=True)
class Replicates:
    """A case's figure over distinct seeds: the mean is judged."""

    values: tuple[float, ...]
    seeds: tuple[int, ...]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)

    @property
    def identical(self) -> bool:
        """Every seed gave the same figure: a case the seed's randomness
        does not reach (one flow, no jitter: the runs are copies) or a figure
        quantised coarser than the seeds' spread (a histogram bin)."""
        return len(self.values) > 1 and min(self.values) == max(self.values)

    def interval95(self) -> tuple[float, float] | None:
        """Student-t 95% interval of the mean; None with fewer than two seeds
        or when the seeds gave identical figures (a zero-width interval would
        claim a precision nobody measured)."""
        n = len(self.values)
        if n < 2 or self.identical:
            return None
        # Two-sided 97.5% quantiles of Student's t for small n (n-1 dof);
        # beyond 30 dof the normal 1.96 is within 4%.
        t = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}.get(n - 1)
        if t is None:
            t = 2.045 if n - 1 < 30 else 1.96
        half = t * statistics.stdev(self.values) / math.sqrt(n)
        return (self.mean - half, self.mean + half)


def replicate_mean(values: Sequence[float | None], seeds: Sequence[int]) -> Replicates | None:
    """Collect a case's per-seed figures; None when no seed gave a value.

    Raises ValueError when two replications share a seed: copies are not
    replications and must not narrow an interval.
    """
    if len(values) != len(seeds):
        raise ValueError("one value per seed")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"replications must use distinct seeds, got {list(seeds)}")
    pairs = [(float(v), s) for v, s in zip(values, seeds, strict=True) if _finite(v)]
    if not pairs:
        return None
    return Replicates(tuple(v for v, _ in pairs), tuple(s for _, s in pairs))


@dataclass
class CaseResult:
    """One case of a claim: what varies (``tags``), the figure and its verdict."""

    tags: dict[str, Any]
    measured: float | None
    verdict: Verdict
    margin: float | None = None
    interval: tuple[float, float] | None = None
    seeds: tuple[int, ...] = ()
    #: Figures shown beside the judged one (e.g. a law's prediction and the
    #: raw measurement whose ratio is judged); never judged themselves.
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.tags.items()) or "(single case)"

    def as_dict(self) -> dict[str, Any]:
        return {
            "tags": dict(self.tags),
            "measured": self.measured,
            "verdict": self.verdict.value,
            "interval95": list(self.interval) if self.interval else None,
            "seeds": list(self.seeds),
            **({"extra": dict(self.extra)} if self.extra else {}),
        }


@dataclass
class Judgement:
    """A claim judged over every case in its scope."""

    claim: str
    tolerance: Tolerance
    cases: list[CaseResult]
    verdict: Verdict
    unit: str = ""
    known_deviation: KnownDeviation | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(c.verdict is Verdict.PASS for c in self.cases)

    @property
    def measured_count(self) -> int:
        return sum(c.measured is not None for c in self.cases)

    @property
    def total(self) -> int:
        return len(self.cases)

    @property
    def worst(self) -> CaseResult | None:
        """The measured case farthest outside the band (or nearest its edge when all pass)."""
        measured = [c for c in self.cases if c.margin is not None]
        return min(measured, key=lambda c: c.margin) if measured else None  # type: ignore[arg-type,return-value]

    def counts_text(self) -> str:
        return f"{self.passed} of {self.total} cases"

    def worst_text(self, digits: int = 3) -> str:
        w = self.worst
        if w is None or w.measured is None:
            return "–"
        u = f" {self.unit}" if self.unit else ""
        return f"{w.label}: {w.measured:.{digits}g}{u}"

    def summary_line(self) -> str:
        line = f"{self.verdict.value} ({self.counts_text()}"
        if self.verdict in (Verdict.FAIL, Verdict.DEVIATES_KNOWN):
            line += f"; worst {self.worst_text()} vs {self.tolerance.band.describe(self.unit)}"
        return line + ")"

    def as_dict(self) -> dict[str, Any]:
        return {
            "claim": self.claim,
            "verdict": self.verdict.value,
            "passed": self.passed,
            "total": self.total,
            "unit": self.unit,
            "band": self.tolerance.band.describe(self.unit),
            "band_low": self.tolerance.band.low,
            "band_high": self.tolerance.band.high,
            "basis": self.tolerance.basis,
            "source": self.tolerance.source,
            "worst": self.worst.as_dict() if self.worst else None,
            "known_deviation": (
                {"reason": self.known_deviation.reason, "analysis": self.known_deviation.analysis}
                if self.known_deviation
                else None
            ),
            "notes": list(self.notes),
            "cases": [c.as_dict() for c in self.cases],
        }


def judge(
    claim: str,
    tolerance: Tolerance,
    cases: Iterable[
        tuple[Mapping[str, Any], float | Replicates | None]
        | tuple[Mapping[str, Any], float | Replicates | None, Mapping[str, Any]]
    ],
    *,
    unit: str = "",
    known_deviation: KnownDeviation | None = None,
) -> Judgement:
    """Judge ``claim`` on every case: ``(tags, figure)`` pairs, where the figure
    is a plain value, a :class:`Replicates` (its mean is judged) or None
    (not measured). A third element, a mapping, is carried along as the
    case's ``extra`` figures (shown, not judged)."""
    results: list[CaseResult] = []
    for case in cases:
        tags, fig = case[0], case[1]
        extra = dict(case[2]) if len(case) > 2 else {}  # type: ignore[misc]
        interval = None
        seeds: tuple[int, ...] = ()
        if isinstance(fig, Replicates):
            interval, seeds, value = fig.interval95(), fig.seeds, fig.mean
            if fig.identical:
                extra.setdefault("note", f"identical in all {len(fig.seeds)} seeds: no interval")
        else:
            value = float(fig) if _finite(fig) else None  # type: ignore[arg-type]
        if value is None or math.isinf(value):
            results.append(CaseResult(dict(tags), None, Verdict.NA, None, interval, seeds, extra))
            continue
        ok = tolerance.band.contains(value)
        results.append(
            CaseResult(dict(tags), value, Verdict.PASS if ok else Verdict.FAIL,
                       tolerance.band.margin(value), interval, seeds, extra)  # fmt: skip
        )
    if not results:
        raise ValueError(f"claim {claim!r} has no cases in its scope")
    if any(c.verdict is Verdict.FAIL for c in results):
        verdict = Verdict.DEVIATES_KNOWN if known_deviation is not None else Verdict.FAIL
    elif any(c.verdict is Verdict.NA for c in results):
        verdict = Verdict.NA
    else:
        verdict = Verdict.PASS
    return Judgement(claim, tolerance, results, verdict, unit, known_deviation)
