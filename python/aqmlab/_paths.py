"""Dotted paths into a scenario tree: "bottleneck.params.threshold",
"flows[0].count" (sweep grids, `aqmlab run --set`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from aqmlab._engine import ScenarioError

__all__ = ["get_path", "set_path"]

_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _parse_path(path: str) -> list[str | int]:
    parts: list[str | int] = []
    pos = 0
    s = path.strip()
    while pos < len(s):
        if s[pos] == "." and parts:
            pos += 1
        m = _PART.match(s, pos)
        if not m:
            raise ScenarioError(f"'{path}': not a parameter path (write e.g. bottleneck.aqm or flows[0].count)")
        parts.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
        pos = m.end()
    if not parts or not isinstance(parts[0], str):
        raise ScenarioError(f"'{path}': not a parameter path (write e.g. bottleneck.aqm or flows[0].count)")
    return parts


def set_path(tree: dict[str, Any], path: str, value: Any) -> None:
    """Set ``value`` at ``path`` in ``tree`` (in place), creating tables on
    the way. Whether the key exists is left to the engine's validation, which
    names unknown keys with a "did you mean"."""
    parts = _parse_path(path)
    node: Any = tree
    where = ""
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(part, int):
            if not isinstance(node, list):
                raise ScenarioError(f"'{path}': {where or 'scenario'} is not a list")
            if part >= len(node):
                raise ScenarioError(f"'{path}': {where} has {len(node)} entries, so [{part}] is out of range")
            if last:
                node[part] = value
            else:
                node = node[part]
            where += f"[{part}]"
        else:
            if not isinstance(node, dict):
                raise ScenarioError(f"'{path}': {where or 'scenario'} is not a table")
            if last:
                node[part] = value
            else:
                nxt = node.get(part)
                if nxt is None:
                    nxt = [] if isinstance(parts[i + 1], int) else {}
                    node[part] = nxt
                node = nxt
            where = f"{where}.{part}" if where else part


def get_path(tree: Mapping[str, Any], path: str) -> Any:
    """The value at ``path``, or None when absent."""
    node: Any = tree
    for part in _parse_path(path):
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return None
    return node
