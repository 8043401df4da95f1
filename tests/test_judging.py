"""The judging rules every reproduction and validation row relies on."""

import math

import pytest

from aqmlab.judging import Band, KnownDeviation, Replicates, Tolerance, Verdict, judge, replicate_mean

TOL = Tolerance(Band.between(0.8, 1.25), "seed", 'slide 9: "Equal throughput between DCTCP and Cubic/Reno"')


def test_one_failing_case_fails_the_claim_and_is_named_worst():
    j = judge("ratio ≈ 1", TOL, [({"mix": "1D1C"}, 1.0), ({"mix": "10D1C"}, 0.44), ({"mix": "5D5C"}, 0.9)])
    assert j.verdict is Verdict.FAIL
    assert (j.passed, j.total) == (2, 3)
    assert j.worst is not None and j.worst.tags == {"mix": "10D1C"}
    assert "2 of 3 cases" in j.summary_line() and "mix=10D1C" in j.summary_line()


def test_mean_inside_band_does_not_rescue_a_failing_case():
    # The mean of 0.6, 1.2, 1.2 is 1.0 (inside the band) but one case is out.
    j = judge("ratio ≈ 1", TOL, [({"i": 0}, 0.6), ({"i": 1}, 1.2), ({"i": 2}, 1.2)])
    assert j.verdict is Verdict.FAIL


def test_all_pass_and_unmeasured_cases():
    assert judge("c", TOL, [({"i": 0}, 0.9), ({"i": 1}, 1.1)]).verdict is Verdict.PASS
    j = judge("c", TOL, [({"i": 0}, 0.9), ({"i": 1}, None), ({"i": 2}, math.nan)])
    assert j.verdict is Verdict.NA and j.passed == 1


def test_known_deviation_needs_a_written_analysis():
    dev = KnownDeviation("DCTCP's native step marking dominates", "docs/results/dualq-coexistence.md#coupling")
    j = judge("c", TOL, [({"i": 0}, 0.5)], known_deviation=dev)
    assert j.verdict is Verdict.DEVIATES_KNOWN
    with pytest.raises(ValueError):
        KnownDeviation("because", "somewhere")
    # A known deviation does not turn passing cases into anything else.
    assert judge("c", TOL, [({"i": 0}, 1.0)], known_deviation=dev).verdict is Verdict.PASS


def test_tolerance_needs_a_source_and_band_bounds():
    with pytest.raises(ValueError):
        Tolerance(Band.at_most(2.0), "seed", " ")
    with pytest.raises(ValueError):
        Band()
    with pytest.raises(ValueError):
        Band(2.0, 1.0)
    assert Band.around(10.0, rel=0.1).describe("ms") == "9–11 ms"
    assert Band.at_most(2.0).margin(3.0) == pytest.approx(-0.5)


def test_replications_must_use_distinct_seeds():
    with pytest.raises(ValueError, match="distinct seeds"):
        replicate_mean([1.0, 1.0, 1.0], [1, 1, 1])
    r = replicate_mean([1.0, 2.0, 3.0], [1, 2, 3])
    assert r is not None and r.mean == 2.0
    lo, hi = r.interval95()
    # t(0.975, 2) = 4.303, s = 1: half-width 4.303/sqrt(3).
    assert hi - 2.0 == pytest.approx(4.303 / math.sqrt(3), rel=1e-6) and lo < 2.0
    assert Replicates((1.0,), (7,)).interval95() is None
    j = judge("c", TOL, [({"i": 0}, r)])
    assert j.cases[0].interval == (lo, hi) and j.cases[0].seeds == (1, 2, 3)


def test_extra_figures_ride_along_unjudged():
    j = judge("c", TOL, [({"i": 0}, 1.0, {"law_bps": 5e6}), ({"i": 1}, 0.5)])
    assert j.cases[0].extra == {"law_bps": 5e6} and j.cases[1].extra == {}
    assert j.verdict is Verdict.FAIL
    assert j.as_dict()["cases"][0]["extra"] == {"law_bps": 5e6} and "extra" not in j.as_dict()["cases"][1]


def test_seeds_that_give_identical_figures_get_no_interval():
    # A case with no randomness the seed reaches (one flow, no jitter): three
    # "replications" are copies, so no interval, and the case says so.
    same = replicate_mean([0.8022, 0.8022, 0.8022], [1, 2, 3])
    assert same is not None and same.identical and same.interval95() is None
    j = judge("c", TOL, [({"i": 0}, same)])
    (case,) = j.cases
    assert case.interval is None and "identical in all 3 seeds" in case.extra["note"]
    varied = replicate_mean([0.80, 0.81, 0.82], [1, 2, 3])
    assert varied is not None and not varied.identical and varied.interval95() is not None
