"""python/aqmlab/scenario.py mirrors the engine's scenario tables (serde
structs in crates/engine/src/scenario/spec.rs and friends) by hand. This test
holds the mirror to the engine: every table the engine accepts has a
dataclass with exactly its keys, and every dataclass is a table the engine
accepts, both directions, from ``_engine.scenario_keys()`` (the field lists
serde derives, read from the engine itself)."""

from __future__ import annotations

import json
from dataclasses import fields

from aqmlab import _engine
from aqmlab.scenario import Scenario, _Node

#: Tables the engine reads as structs that Python keeps as plain dicts, with
#: the reason (none today). Their keys would still be checked by the engine
#: (strict, with "did you mean") when the scenario is validated.
PLAIN_TABLES: dict[str, str] = {}


def python_tables(cls: type[_Node] = Scenario, path: str = "") -> dict[str, list[str]]:
    """{path: keys} of the dataclass tree below ``cls``, in the engine's path syntax."""
    out = {path: [f.metadata.get("key", f.name) for f in fields(cls) if f.name != "extra"]}
    for key, (sub, is_list) in cls._children.items():
        out |= python_tables(sub, f"{path}.{key}".lstrip(".") + ("[]" if is_list else ""))
    return out


def engine_tables() -> dict[str, list[str]]:
    return json.loads(_engine.scenario_keys())


def test_every_engine_table_has_a_dataclass_and_every_dataclass_a_table() -> None:
    engine, python = set(engine_tables()), set(python_tables())
    assert not (engine - python - set(PLAIN_TABLES)), f"tables without a dataclass in scenario.py: {sorted(engine - python - set(PLAIN_TABLES))}"
    assert not (python - engine), f"dataclasses the engine has no table for: {sorted(python - engine)}"
    assert set(PLAIN_TABLES) <= engine, f"PLAIN_TABLES names tables the engine no longer has: {sorted(set(PLAIN_TABLES) - engine)}"


def test_each_dataclass_has_exactly_the_engines_keys() -> None:
    engine, python = engine_tables(), python_tables()
    for path in sorted(set(engine) & set(python)):
        missing = [k for k in engine[path] if k not in python[path]]
        extra = [k for k in python[path] if k not in engine[path]]
        where = path or "the top level"
        assert not missing, f"{where}: the engine accepts {missing}, scenario.py has no field for them"
        assert not extra, f"{where}: scenario.py has fields {extra} the engine rejects"


def test_plain_tables_are_fields_of_their_parent() -> None:
    python = python_tables()
    for path in PLAIN_TABLES:
        parent, key = path.rsplit(".", 1)
        assert key in python[parent], path


def test_the_engine_listing_is_serdes() -> None:
    # The listing quotes the same key lists as the engine's own errors.
    t = engine_tables()
    tree = {"duration": "1s", "bottleneck": {"rate": "1Mbps", "reverse": {"rate": "1Mbps", "zz": 1}}}
    try:
        _engine.validate(json.dumps(tree))
    except _engine.ScenarioError as e:
        assert str(e) == f"bottleneck.reverse: unknown key 'zz' (allowed: {', '.join(t['bottleneck.reverse'])})"
    else:
        raise AssertionError("an unknown key was accepted")


def test_the_checker_catches_a_drifted_field(monkeypatch) -> None:
    engine = engine_tables()
    engine["metrics"] = [*engine["metrics"], "new_collector"]
    monkeypatch.setattr(_engine, "scenario_keys", lambda: json.dumps(engine))
    try:
        test_each_dataclass_has_exactly_the_engines_keys()
    except AssertionError as e:
        assert "metrics: the engine accepts ['new_collector']" in str(e)
    else:
        raise AssertionError("a key missing from scenario.py went unnoticed")
