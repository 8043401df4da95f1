"""Scenarios as Python objects that mirror the TOML file key by key.

A scenario is plain data: the TOML tree (``tomllib.load``) is exactly what the
engine receives, as JSON. These dataclasses give that tree names and
completion in an editor, and save it back to TOML.

Python never restates a default. A field left at ``None`` is simply absent
from the file, and the engine fills it in: :meth:`Scenario.normalized` (or
:func:`validate`) returns the scenario with every default written out, as the
engine will run it. Checking (unknown keys, unknown AQM or CC names, bad units,
warm-up longer than the run, ...) is the engine's job too; its errors are one
line naming the field, e.g. ``bottleneck.aqm: unknown AQM 'fifp' (did you mean
'fifo'? ...)``, raised here as :class:`ScenarioError`.

Units stay strings ("10Mbps", "5ms", "1.5MB", "250pkt", "10/s"); the engine
parses them once, at the edge.
"""

from __future__ import annotations

import copy
import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import tomli_w

from aqmlab import _engine
from aqmlab._engine import ScenarioError
from aqmlab._io import (  # noqa: F401 (re-exported: scenario files and results are written through these)
    MAX_FILE_BYTES,
    OutputError,
    atomic_write_bytes,
    atomic_write_text,
    check_writable_dir,
    read_text_file,
)
from aqmlab._paths import get_path, set_path  # noqa: F401 (re-exported)

__all__ = [
    "Scenario",
    "Bottleneck",
    "Reverse",
    "RateChange",
    "Topology",
    "Link",
    "FlowGroup",
    "Marker",
    "Wlan",
    "FatTree",
    "Workload",
    "SizeDist",
    "Tcp",
    "Metrics",
    "Pcap",
    "Engine",
    "ScenarioError",
    "ScenarioLike",
    "load",
    "loads",
    "validate",
    "to_dict",
    "set_path",
    "get_path",
    "dump_toml",
    "atomic_write_text",
    "check_tree",
    "check_writable_dir",
    "OutputError",
]

Params = dict[str, Any]
T = TypeVar("T", bound="_Node")


class _UnknownKey(Exception):
    """Raised inside ``from_dict``; turned into the engine's own message."""


@dataclass(kw_only=True)
class _Node:
    """Shared (de)serialisation for the scenario dataclasses.

    ``_children`` maps a TOML key to the dataclass of its value and whether
    the value is a list of them; every other field holds plain TOML data.
    ``extra`` holds keys this Python layer has no field for but the engine
    accepted (a newer engine); they are written back unchanged.
    """

    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    _children: ClassVar[dict[str, tuple[type[_Node], bool]]] = {}
    #: Keys written first (a subclass's own keys, e.g. a link's ``from`` and
    #: ``to``, before the fields it inherits); the rest in field order.
    _first: ClassVar[tuple[str, ...]] = ()

    def to_dict(self) -> dict[str, Any]:
        """The TOML tree of this node; unset (None) fields are left out."""
        out: dict[str, Any] = dict.fromkeys(self._first)
        for f in fields(self):  # type: ignore[arg-type]
            if f.name == "extra":
                continue
            v = _plain(getattr(self, f.name))
            if v is None:
                continue
            out[f.metadata.get("key", f.name)] = v
        out = {k: v for k, v in out.items() if v is not None}  # unset _first keys
        out.update(_plain(getattr(self, "extra", {}) or {}))
        return out

    @classmethod
    def _from_tree(cls: type[T], d: Mapping[str, Any], unknown: list[str] | None = None) -> T:
        if not isinstance(d, Mapping):
            raise _UnknownKey()
        by_key = {f.metadata.get("key", f.name): f for f in fields(cls) if f.name != "extra"}  # type: ignore[arg-type]
        kwargs: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for k, v in d.items():
            f = by_key.get(k)
            if f is None:
                if unknown is None:
                    raise _UnknownKey()
                unknown.append(k)
                extra[k] = copy.deepcopy(v)
                continue
            child = cls._children.get(k)
            if child is not None and v is not None:
                sub, is_list = child
                if is_list:
                    if not isinstance(v, list):
                        raise _UnknownKey()
                    v = [sub._from_tree(x, unknown) for x in v]
                else:
                    v = sub._from_tree(v, unknown)
            elif isinstance(v, (dict, list)):
                v = copy.deepcopy(v)
            kwargs[f.name] = v
        if extra:
            kwargs["extra"] = extra
        try:
            return cls(**kwargs)
        except TypeError as e:  # a required key is missing
            raise _UnknownKey() from e


def _plain(v: Any) -> Any:
    """Dataclasses to dicts; drop None (TOML has no null: None means 'unset')."""
    if isinstance(v, _Node):
        return v.to_dict()
    if isinstance(v, Mapping):
        return {k: _plain(x) for k, x in v.items() if x is not None}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v if x is not None]
    return v


def _key(name: str) -> Any:
    return field(default=None, metadata={"key": name})


# ---------------------------------------------------------------------------
# The tree. Field names are the TOML keys (``from_`` is ``from``).


@dataclass(kw_only=True)
class RateChange(_Node):
    """``rate_schedule`` entry: from time ``at`` the link runs at ``rate``."""

    at: str
    rate: str


@dataclass(kw_only=True)
class Reverse(_Node):
    """``[bottleneck.reverse]``: a queue on the ACK path."""

    rate: str
    aqm: str | None = None
    params: Params | None = None
    buffer: str | None = None


@dataclass(kw_only=True)
class _Queue(_Node):
    """The keys a dumbbell's bottleneck and a topology link share: the wire
    (delay, random loss and marks, a rate schedule) and its queue."""

    delay: str | None = None
    buffer: str | None = None
    aqm: str | None = None
    params: Params | None = None
    loss: float | None = None
    mark: float | None = None
    rate_schedule: list[RateChange] | None = None

    _children: ClassVar[dict[str, tuple[type[_Node], bool]]] = {"rate_schedule": (RateChange, True)}


@dataclass(kw_only=True)
class Bottleneck(_Queue):
    """``[bottleneck]``: the dumbbell's shared link."""

    rate: str
    access_rate: str | None = None
    reverse: Reverse | None = None

    _first: ClassVar[tuple[str, ...]] = ("rate",)
    _children: ClassVar[dict[str, tuple[type[_Node], bool]]] = {**_Queue._children, "reverse": (Reverse, False)}


@dataclass(kw_only=True)
class Wlan(_Node):
    """``[topology.links.wlan]``: the link is one shared half-duplex WLAN medium
    (docs/algorithms/wlan.md); defaults are 802.11g."""

    overhead: str | None = None
    mac_header: int | None = None
    aqm_rate: str | None = None
    stations: int | None = None


@dataclass(kw_only=True)
class Link(_Queue):
    """``[[topology.links]]`` entry. ``from_`` is written as ``from``."""

    from_: str = field(metadata={"key": "from"})
    to: str
    name: str | None = None
    rate: str | None = None
    duplex: bool | None = None
    wlan: Wlan | None = None

    _first: ClassVar[tuple[str, ...]] = ("from", "to", "name", "rate")
    _children: ClassVar[dict[str, tuple[type[_Node], bool]]] = {**_Queue._children, "wlan": (Wlan, False)}


@dataclass(kw_only=True)
class FatTree(_Node):
    """``[topology.fat_tree]``: a k-ary fat tree (k³/4 hosts ``h0``…, 5k²/4
    switches), every link alike, per-flow ECMP (docs/scenario.md)."""

    k: int
    rate: str
    delay: str | None = None
    buffer: str | None = None
    aqm: str | None = None
    params: Params | None = None


@dataclass(kw_only=True)
class Topology(_Node):
    """``[topology]``: an explicit graph (``links``) or a generated fat tree
    (``fat_tree = {k, rate, delay, buffer, aqm, params}``) instead of ``[bottleneck]``."""

    links: list[Link] = field(default_factory=list)
    fat_tree: FatTree | None = None

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        if d.get("links") == [] and "fat_tree" in d:
            del d["links"]
        return d

    _children: ClassVar[dict[str, tuple[type[_Node], bool]]] = {"links": (Link, True), "fat_tree": (FatTree, False)}


@dataclass(kw_only=True)
class Marker(_Node):
    """``[flows.marker]``: the Per Packet Value edge marker of each flow of
    the group (docs/algorithms/ppv.md); ``tvf`` is a list of ``[rate, value]``."""

    policy: str | None = None
    weight: float | None = None
    tvf: list[list[Any]] | None = None
    method: str | None = None
    rate_window: str | None = None
    levels_per_octave: float | None = None
    min_rate: str | None = None
    max_rate: str | None = None
    bucket_depth: str | None = None


@dataclass(kw_only=True)
class FlowGroup(_Node):
    """``[[flows]]`` entry: ``count`` flows alike."""

    cc: str
    count: int | None = None
    label: str | None = None
    rtt: str | None = None
    src: str | None = None
    dst: str | None = None
    pattern: str | None = None
    ecn: str | None = None
    params: Params | None = None
    start: str | None = None
    start_jitter: str | None = None
    stop: str | None = None
    size: str | None = None
    rate: str | None = None
    packet_size: str | None = None
    marker: Marker | None = None

    _children: ClassVar[dict[str, tuple[type[_Node], bool]]] = {"marker": (Marker, False)}


@dataclass(kw_only=True)
class SizeDist(_Node):
    """``[workloads.size]``: flow-size distribution."""

    dist: str
    min: str | None = None
    max: str | None = None
    mean: str | None = None
    shape: float | None = None


@dataclass(kw_only=True)
class Workload(_Node):
    """``[[workloads]]`` entry: finite flows arriving over time (``web``:
    Poisson at ``rate``; ``incast``: ``senders`` flows to one host ``every``)."""

    kind: str
    size: SizeDist
    cc: str
    rate: str | None = None
    every: str | None = None
    senders: int | None = None
    arrival: str | None = None
    label: str | None = None
    rtt: str | None = None
    src: str | None = None
    dst: str | None = None
    ecn: str | None = None
    params: Params | None = None
    start: str | None = None
    stop: str | None = None

    _children: ClassVar[dict[str, tuple[type[_Node], bool]]] = {"size": (SizeDist, False)}


@dataclass(kw_only=True)
class Tcp(_Node):
    """``[tcp]``: TCP knobs shared by all flows."""

    mtu_bytes: int | None = None
    header_bytes: int | None = None
    delayed_ack: bool | None = None
    delack_count: int | None = None
    delack_timeout: str | None = None
    rto_min: str | None = None
    rto_max: str | None = None
    rto_initial: str | None = None
    dupthresh: int | None = None
    pacing: bool | None = None
    pacing_ss_ratio: float | None = None
    pacing_ca_ratio: float | None = None
    receiver_ecn: bool | None = None
    rwnd: str | None = None


@dataclass(kw_only=True)
class Pcap(_Node):
    """``[metrics.pcap]``: capture one queue's packets (docs/results.md#pcap-export)."""

    queue: str | None = None
    direction: str | None = None
    max_packets: int | None = None


@dataclass(kw_only=True)
class Metrics(_Node):
    """``[metrics]``: which collectors run."""

    _children: ClassVar[dict[str, tuple[type[_Node], bool]]] = {"pcap": (Pcap, False)}

    interval: str | None = None
    timeseries: bool | None = None
    sojourn_histograms: bool | None = None
    sojourn_samples_every: int | None = None
    rtt_histogram: bool | None = None
    goodput_interval: str | None = None
    pcap: Pcap | None = None


@dataclass(kw_only=True)
class Engine(_Node):
    """``[engine]``: how the engine runs (never what it simulates)."""

    lookahead: bool | None = None
    prefetch: bool | None = None
    early_hand_off: bool | None = None


@dataclass(kw_only=True)
class Scenario(_Node):
    """A whole scenario file. See docs/scenario.md for every field."""

    duration: str
    name: str | None = None
    description: str | None = None
    warmup: str | None = None
    seed: int | None = None
    bottleneck: Bottleneck | None = None
    topology: Topology | None = None
    flows: list[FlowGroup] = field(default_factory=list)
    workloads: list[Workload] = field(default_factory=list)
    tcp: Tcp | None = None
    metrics: Metrics | None = None
    engine: Engine | None = None

    _children: ClassVar[dict[str, tuple[type[_Node], bool]]] = {
        "bottleneck": (Bottleneck, False),
        "topology": (Topology, False),
        "flows": (FlowGroup, True),
        "workloads": (Workload, True),
        "tcp": (Tcp, False),
        "metrics": (Metrics, False),
        "engine": (Engine, False),
    }

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        # Empty lists say nothing; leave them out so a round trip is exact.
        for k in ("flows", "workloads"):
            if d.get(k) == []:
                del d[k]
        return d

    @classmethod
    def from_dict(cls, tree: Mapping[str, Any]) -> Scenario:
        """Build from a TOML/JSON tree. Keys the engine does not know raise
        :class:`ScenarioError` with the engine's one-line message; keys it
        knows but this Python layer has no field for are kept in ``extra``."""
        unknown: list[str] = []
        try:
            s = cls._from_tree(tree, unknown)
        except _UnknownKey:
            _engine.validate(json.dumps(_plain(tree)))  # raises the precise error
            raise ScenarioError("scenario: not a valid scenario tree (a table where a value belongs?)") from None
        if unknown:
            _engine.validate(json.dumps(_plain(tree)))  # unknown to the engine too: its error, with "did you mean"
        return s

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Scenario:
        """Read a TOML scenario file (not yet validated: see :meth:`normalized`)."""
        return cls.from_dict(_read_toml(path))

    def normalized(self) -> Scenario:
        """Validated by the engine, with every default filled in."""
        return Scenario.from_dict(validate(self))

    def to_toml(self) -> str:
        return dump_toml(self.to_dict())

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the scenario as TOML (atomically: temp file, then rename)."""
        return atomic_write_text(path, self.to_toml())

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def set(self, path: str, value: Any) -> Scenario:
        """A copy with the value at a dotted path replaced, e.g.
        ``s.set("bottleneck.aqm", "step")`` or ``s.set("flows[0].count", 4)``."""
        tree = self.to_dict()
        set_path(tree, path, value)
        return Scenario.from_dict(tree)


ScenarioLike = Scenario | Mapping[str, Any] | str | os.PathLike[str]


# ---------------------------------------------------------------------------
# Reading, validating, writing.


def duration_s(text: str) -> float | None:
    """Display only (a progress bar's length, a benchmark's description): a
    duration in the engine's normalised form, e.g. "30s", "1500ms" or
    "100us", in seconds. Parsing for the simulation is the engine's; None
    when the text is not in that form."""
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|min)", text.strip())
    if not m:
        return None
    scale = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0}[m.group(2)]
    return float(m.group(1)) * scale


def _read_toml(path: str | os.PathLike[str]) -> dict[str, Any]:
    p = Path(path)
    text = read_text_file(p, "scenario")
    try:
        tree = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{p}: invalid TOML: {e}") from None
    except RecursionError:
        raise ScenarioError(f"{p}: nested more than {MAX_DEPTH} levels deep (a scenario has at most 6)") from None
    if "sweep" in tree or "grid" in tree:  # keys no scenario has
        raise ScenarioError(f"{p}: this is a sweep file, not a scenario: run it with `aqmlab sweep {p}`")
    return tree


def loads(text: str) -> Scenario:
    """Parse TOML text into a :class:`Scenario`."""
    try:
        return Scenario.from_dict(tomllib.loads(text))
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"invalid TOML: {e}") from None


def load(path: str | os.PathLike[str]) -> Scenario:
    """Read a TOML scenario file."""
    return Scenario.load(path)


def to_dict(scenario: ScenarioLike) -> dict[str, Any]:
    """The plain tree of a scenario given as an object, a tree or a TOML path.
    Raises ScenarioError (one line, with the key path) for a tree nested too
    deeply (or containing itself) or holding a value no scenario file can
    (a set, a date, NaN, an object): every input reaches the engine as
    checked JSON."""
    if not isinstance(scenario, (Scenario, Mapping, str, os.PathLike)):
        raise TypeError(f"expected a Scenario, a dict or a path to a TOML file, got {type(scenario).__name__}")
    if isinstance(scenario, Mapping):
        check_tree(scenario)  # before _plain, which recurses
    try:
        if isinstance(scenario, Scenario):
            tree = scenario.to_dict()
        elif isinstance(scenario, Mapping):
            tree = _plain(scenario)
        else:
            tree = _read_toml(scenario)
    except RecursionError:
        raise ScenarioError(f"scenario: nested more than {MAX_DEPTH} levels deep (a scenario has at most 6)") from None
    check_tree(tree)
    return tree


#: Deepest nesting of tables and lists a scenario tree may have. Real ones
#: have at most 6 (topology.links[i].rate_schedule[j].at); the engine's JSON
#: reader stops at 128, Python's recursion at ~1,000.
MAX_DEPTH = 64

_SCALARS = (str, bool, int, float, type(None))


def check_tree(tree: Any, where: str = "") -> None:
    """Raise ScenarioError naming the first value a scenario cannot hold:
    nesting deeper than MAX_DEPTH, a non-text key, a non-finite number, or a
    value that is not text, a number, a boolean, a list or a table (a set, a
    date from TOML, an object). Iterative: any depth is safe to check."""
    import math

    # A cycle is infinitely deep: it ends as "nested more than 64 levels".
    stack: list[tuple[str, Any, int]] = [(where, tree, 0)]
    while stack:
        path, v, depth = stack.pop()
        shown = path or "scenario"
        if depth > MAX_DEPTH:
            short = shown if len(shown) <= 60 else shown[:60] + "…"
            raise ScenarioError(f"{short}: nested more than {MAX_DEPTH} levels deep (a scenario has at most 6)")
        if isinstance(v, float) and not math.isfinite(v):
            raise ScenarioError(f"{shown}: {v} is not a number a scenario can hold (finite numbers only)")
        if isinstance(v, _SCALARS):
            continue
        if isinstance(v, (Mapping, list, tuple)):
            if isinstance(v, Mapping):
                for k, x in v.items():
                    if not isinstance(k, str):
                        raise ScenarioError(f"{shown}: key {k!r} is not text (keys are text)")
                    stack.append((f"{path}.{k}" if path else k, x, depth + 1))
            else:
                for i, x in enumerate(v):
                    stack.append((f"{path}[{i}]", x, depth + 1))
            continue
        if isinstance(v, _Node):
            continue  # a scenario dataclass inside a tree: _plain turns it into a table
        raise ScenarioError(
            f"{shown}: {v!r} ({type(v).__name__}) is not a scenario value: text, numbers, true/false, lists and tables are"
        )


def validate(scenario: ScenarioLike) -> dict[str, Any]:
    """Check a scenario with the engine; return it normalised (all defaults
    filled in). Raises :class:`ScenarioError` with a one-line message."""
    return json.loads(_engine.validate(json.dumps(to_dict(scenario))))


def dump_toml(tree: Mapping[str, Any]) -> str:
    """TOML text of a scenario tree (None values, which TOML cannot hold, are
    left out: for the engine an absent key and null are the same)."""
    return tomli_w.dumps(_plain(tree))
