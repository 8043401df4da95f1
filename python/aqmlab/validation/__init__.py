"""Model validation: aqmlab against analytic laws, itself, and ns-3.

    from aqmlab.validation import run_suite
    report = run_suite(quick=True)        # Report: judgements per group
    report.failed                          # any row FAIL?

``aqmlab validation [--quick] [--out DIR] [--json]`` is the command. The rows
and their tolerances are in :mod:`aqmlab.validation.suite`, the arguments for
them in docs/validation.md.
"""

from aqmlab.validation.report import Report, run_suite

__all__ = ["Report", "run_suite"]
