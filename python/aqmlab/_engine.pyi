"""Type stubs for the compiled engine bindings (crates/aqmlab-py).

The bindings only convert types: strings in, typed columns out.
"""

from collections.abc import Callable
from typing import Any

__version__: str
BUILD: str
"""'pgo' if built with the recorded profile (pgo/rustc-wrapper), else 'plain'."""
SOURCE_DIGEST: str
"""SHA-256 of the engine sources this extension was built from (aqmlab._provenance)."""

class ScenarioError(ValueError):
    """The scenario is invalid; the message is one line naming the field."""

# A numeric column: (numpy dtype string such as "<f8", little-endian bytes);
# a text column: ("text", each row's index into the values as little-endian
# u32 bytes, the distinct values in order of first appearance).
Column = tuple[str, bytes] | tuple[str, bytes, list[str]]

def validate(json: str) -> str:
    """Validate a scenario given as JSON text, routes included (a graph's: every
    TCP flow crosses a link with a rate); return it normalised (JSON text,
    every default filled in). Raises ScenarioError."""

def run(json: str, progress: Callable[[float], object] | None = None) -> dict[str, Any]:
    """Run a scenario (JSON text). ``progress(sim_seconds_done)`` is called
    every few tens of thousands of events and once at the end; an exception it
    raises aborts the run and propagates. Ctrl-C raises KeyboardInterrupt; an
    engine panic raises RuntimeError("engine panic: ...").

    Returns {"summary": json_text, "tables": {table: {column: Column}}}."""

def registry() -> str:
    """JSON text: {"aqm": {name: {summary, defaults}}, "cc": {name: {summary,
    defaults, default_ecn}}, "ecn": [names]}."""

def scenario_keys() -> str:
    """JSON text: {table path: [keys]} for every table a scenario may hold
    ("" the top, "flows[]" a list of tables), as serde derives them."""

def _panic_for_test() -> None:
    """Panic inside Rust; raises RuntimeError("engine panic: ...")."""
