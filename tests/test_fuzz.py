"""Fuzzing the scenario front door: whatever tree or bytes a user gives,
validation answers with a valid scenario or one ScenarioError line, never a
panic, a traceback or another exception (issue 23). Hypothesis generates the
inputs from a fixed seed (derandomized), so the run is reproducible."""

from __future__ import annotations

import json
import tomllib
from typing import Any

import aqmlab
import pytest
from aqmlab.scenario import ScenarioError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

BASE: dict[str, Any] = {
    "duration": "1s",
    "bottleneck": {"rate": "10Mbps", "aqm": "fifo"},
    "flows": [{"cc": "cubic", "rtt": "10ms"}],
}
KEYS = ["duration", "warmup", "seed", "bottleneck", "rate", "buffer", "aqm", "params", "flows", "cc", "rtt", "count",
        "ecn", "start", "stop", "size", "metrics", "interval", "engine", "tcp", "topology", "links", "workloads"]  # fmt: skip
UNITS = ["", "ms", "s", "us", "ns", "Mbps", "Gbps", "bps", "pkt", "pkts", "MB", "KiB", "B", "/s", "x", "%"]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.builds(lambda n, u: f"{n}{u}", st.one_of(st.integers(-5, 10**12), st.floats(-1e3, 1e15)), st.sampled_from(UNITS)),
)
trees = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)),
    max_leaves=20,
)
SETTINGS = settings(max_examples=300, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check(tree: Any) -> None:
    try:
        out = aqmlab.validate(tree)
    except ScenarioError as e:
        msg = str(e)
        assert msg and "\n" not in msg, msg
        assert "untagged enum" not in msg and "expected u32" not in msg and "expected f64" not in msg, msg
        return
    except TypeError:
        if not isinstance(tree, dict):  # not a scenario at all: the API's own TypeError
            return
        raise
    assert isinstance(out, dict) and "duration" in out


@SETTINGS
@given(trees)
def test_random_trees_never_crash_validation(tree: Any) -> None:
    _check(tree)


@SETTINGS
@given(st.sampled_from(["duration", "bottleneck", "flows", "metrics", "tcp"]), trees)
def test_a_valid_scenario_with_one_key_replaced_never_crashes(key: str, value: Any) -> None:
    tree = json.loads(json.dumps(BASE))
    tree[key] = value
    _check(tree)


@SETTINGS
@given(st.sampled_from(["rate", "buffer", "aqm", "params", "loss", "delay"]), trees)
def test_bottleneck_fields_never_crash(key: str, value: Any) -> None:
    tree = json.loads(json.dumps(BASE))
    tree["bottleneck"][key] = value
    _check(tree)


@SETTINGS
@given(st.sampled_from(["cc", "rtt", "count", "ecn", "start", "stop", "params", "size", "label"]), trees)
def test_flow_fields_never_crash(key: str, value: Any) -> None:
    tree = json.loads(json.dumps(BASE))
    tree["flows"][0][key] = value
    _check(tree)


@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_as_a_file_are_one_line_exit_2(tmp_path_factory: Any, data: bytes) -> None:
    from aqmlab.scenario import load

    p = tmp_path_factory.mktemp("fuzz") / "s.toml"
    p.write_bytes(data)
    try:
        load(p)
    except ScenarioError as e:
        assert "\n" not in str(e)


# Values a Python caller may put in a dict that no TOML file can hold: sets,
# bytes, dates, tuples, objects, non-text keys, deep nesting.
py_scalars = st.one_of(
    scalars,
    st.frozensets(st.integers(0, 3), max_size=2),
    st.binary(max_size=4),
    st.dates(),
    st.datetimes(),
    st.builds(object),
    st.complex_numbers(max_magnitude=10),
    st.integers(0, 3).map(lambda n: _deep(200 + n)),
)
py_trees = st.recursive(
    py_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(inner),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), st.integers(0, 2)), inner, max_size=4),
    ),
    max_leaves=12,
)


def _deep(n: int) -> Any:
    x: Any = []
    for _ in range(n):
        x = [x]
    return x


@SETTINGS
@given(st.sampled_from(["duration", "bottleneck", "flows", "metrics", "seed"]), py_trees)
def test_python_values_in_a_scenario_dict_never_crash(key: str, value: Any) -> None:
    """aqmlab.validate/run(dict): a ScenarioError line, never a TypeError,
    RecursionError or ValueError from turning the dict into JSON."""
    tree = json.loads(json.dumps(BASE))
    tree[key] = value
    _check(tree)


def test_the_fuzzer_reaches_valid_scenarios() -> None:
    """Guard against a fuzzer that only ever produces rejections."""
    assert aqmlab.validate(BASE)["duration"] == "1s"
    with pytest.raises(ScenarioError):
        aqmlab.validate({**BASE, "duration": "1.5ns"})
    assert tomllib.loads('duration = "1s"')  # the TOML reader the CLI uses
