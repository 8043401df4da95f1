"""Export a run for other tools: Flent's data file (``.flent.gz``).

Flent (https://flent.org) stores a test's results as gzipped JSON (its
``resultset`` module, file format version 4):

* ``metadata``: the test ``NAME`` (which selects Flent's plots), ``TITLE``,
  ``TIME`` and ``T0`` (ISO 8601, UTC), ``LENGTH`` and ``TOTAL_LENGTH`` (s),
  ``STEP_SIZE`` (s between ``x_values``), ``TEST_PARAMETERS``,
  ``FLENT_VERSION``, ``HOST(S)``, ``SERIES_META`` (per series);
* ``x_values``: seconds from T0;
* ``results``: series name -> one value (or null) per x value;
* ``raw_values``: series name -> list of ``{"t": unix time, "val": value}``.

A run is written as Flent's ``tcp_nup`` test ("TCP upload - N streams
w/ping"), whose plots (``totals``, ``upload``, ``upload_with_ping``,
``ping_cdf``, ...) fit a dumbbell's senders: ``TCP upload::k`` is flow k's
goodput (Mbit/s) per ``metrics.interval`` (the long-running TCP flows in
id order, k from 1), ``TCP upload sum``/``avg``/``fairness`` (Jain's index)
per interval, and ``Ping (ms) ICMP`` the latency probe's RTT (``cc =
"probe"``; the mean of the replies in each interval; raw values are every
reply), a further probe ``Ping (ms) ICMP::2``, ... The file is the same
for the same run: ``TIME`` and ``T0`` are a fixed reference,
2000-01-01T00:00:00Z (our choice), and simulated seconds count from it.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aqmlab.results import Result

__all__ = ["FLENT_T0", "FLENT_T0_UNIX", "flent_data", "export_flent", "add_cli"]

#: Time origin of an exported run (simulated t = 0), ISO and Unix seconds.
FLENT_T0 = "2000-01-01T00:00:00.000000Z"
FLENT_T0_UNIX = 946_684_800
#: Flent's data file format version this writer follows.
FLENT_FORMAT_VERSION = 4


def _num(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def flent_data(r: Result) -> dict[str, Any]:
    """The run as Flent's data layout (a JSON-serialisable dict)."""
    import numpy as np

    s = r.summary
    ts = r.timeseries
    flows = r.flows
    if ts.empty:
        raise ValueError("no time series in this run (metrics.timeseries = false): Flent needs them")
    step = float(np.diff(np.unique(ts["t_s"]))[0]) if ts["t_s"].nunique() > 1 else float(s["duration_s"])
    x_values = [round(float(x), 9) for x in np.unique(ts["t_s"])]
    index = {x: i for i, x in enumerate(x_values)}
    tcp = flows[(flows["from_workload"] == 0) & ~flows["cc"].isin(["udp", "qcn", "probe"])]["id"].tolist()
    probes = flows[flows["cc"] == "probe"]["id"].tolist()
    results: dict[str, list[float | None]] = {}
    raw: dict[str, list[dict[str, Any]]] = {}
    meta: dict[str, dict[str, Any]] = {}
    label_of = dict(zip(flows["id"], flows["label"], strict=True))
    cc_of = dict(zip(flows["id"], flows["cc"], strict=True))
    per_flow = []
    for k, fid in enumerate(tcp, start=1):
        name = f"TCP upload::{k}"
        g = ts[ts["flow"] == fid]
        vals: list[float | None] = [None] * len(x_values)
        rv = []
        for t, gp in zip(g["t_s"], g["goodput_bps"], strict=True):
            v = _num(gp / 1e6)
            vals[index[round(float(t), 9)]] = v
            if v is not None:
                rv.append({"t": FLENT_T0_UNIX + float(t), "val": v})
        results[name], raw[name] = vals, rv
        meta[name] = {"FLOW_ID": int(fid), "LABEL": str(label_of[fid]), "CC_ALGO": str(cc_of[fid]), "UNITS": "Mbits/s"}
        per_flow.append(vals)
    if per_flow:
        cols = list(zip(*per_flow, strict=True))
        present = [[v for v in c if v is not None] for c in cols]
        results["TCP upload sum"] = [sum(c) if c else None for c in present]
        results["TCP upload avg"] = [sum(c) / len(c) if c else None for c in present]
        results["TCP upload fairness"] = [
            (sum(c) ** 2 / (len(c) * sum(v * v for v in c))) if c and sum(v * v for v in c) > 0 else None for c in present
        ]
    pr = r.probe_rtt
    for k, fid in enumerate(probes, start=1):
        name = "Ping (ms) ICMP" if k == 1 else f"Ping (ms) ICMP::{k}"
        g = pr[pr["flow"] == fid] if not pr.empty else pr
        t = g["t_ns"].to_numpy() / 1e9 if len(g) else np.array([])
        v = g["rtt_ns"].to_numpy() / 1e6 if len(g) else np.array([])
        # Each x value gets the mean of the replies in (x - step, x].
        slot = np.ceil(np.round(t / step, 9)).astype(int) if len(t) else np.array([], dtype=int)
        vals = [None] * len(x_values)
        for i in range(len(x_values)):
            sel = v[slot == i]
            vals[i] = float(sel.mean()) if len(sel) else None
        results[name] = vals
        raw[name] = [{"t": FLENT_T0_UNIX + float(a), "val": float(b), "seq": int(q)}
                     for a, b, q in zip(t, v, g["seq"] if len(g) else [], strict=True)]  # fmt: skip
        meta[name] = {"FLOW_ID": int(fid), "LABEL": str(label_of[fid]), "UNITS": "ms"}
    duration = float(s["duration_s"])
    name = s.get("scenario", {}).get("name") or "aqmlab"
    metadata = {
        "NAME": "tcp_nup",
        "TITLE": name,
        "NOTE": f"simulated by aqmlab {s.get('version', '')}, seed {s.get('seed')}",
        "TIME": FLENT_T0,
        "T0": FLENT_T0,
        "LENGTH": duration,
        "TOTAL_LENGTH": duration,
        "STEP_SIZE": step,
        "TEST_PARAMETERS": {"upload_streams": str(len(tcp))},
        "FLENT_VERSION": f"aqmlab-{s.get('version', '')}",
        "HOST": "aqmlab",
        "HOSTS": ["aqmlab"],
        "LOCAL_HOST": "aqmlab",
        "IP_VERSION": 4,
        "DATA_FILENAME": None,
        "SERIES_META": meta,
    }
    return {"metadata": metadata, "version": FLENT_FORMAT_VERSION, "x_values": x_values, "results": results,
            "raw_values": raw}  # fmt: skip


def export_flent(run: Result | str | os.PathLike[str], out: str | os.PathLike[str] | None = None) -> Path:
    """Write a run (a Result, or a directory written by ``aqmlab run``) as
    Flent's data file; ``out`` is the file (default: ``DIR/<name>.flent.gz``
    for a directory, ``<name>.flent.gz`` otherwise). Returns the path. The
    bytes are the same for the same run (gzip without a time stamp)."""
    from aqmlab.results import Result
    from aqmlab.scenario import atomic_write_bytes

    base = None
    if not isinstance(run, Result):
        base = Path(run)
        if not (base / "summary.json").is_file():
            raise ValueError(f"{base}: no summary.json here (give a directory written by aqmlab run)")
        run = Result.load(base)
    name = run.summary.get("scenario", {}).get("name") or "aqmlab"
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
    path = Path(out) if out is not None else (base or Path(".")) / f"{safe}.flent.gz"
    text = json.dumps(flent_data(run), indent=2, sort_keys=True).encode()
    return atomic_write_bytes(path, gzip.compress(text, mtime=0))


def add_cli(sub: Any) -> None:
    """Register ``aqmlab export flent DIR [--out FILE]`` on the CLI's subparsers."""
    e = sub.add_parser("export", help="export a saved run for other tools (Flent)",
                       description="Export a directory written by aqmlab run in another tool's format.")  # fmt: skip
    fmt = e.add_subparsers(dest="format", required=True, parser_class=type(e))
    f = fmt.add_parser("flent", help="Flent data file (.flent.gz): goodput per flow and probe pings")
    f.add_argument("dir", metavar="DIR", help="output directory of aqmlab run (with summary.json)")
    f.add_argument("--out", metavar="FILE", help="the file to write (default: DIR/<scenario name>.flent.gz)")
    f.set_defaults(func=cmd_export_flent)


def cmd_export_flent(args: argparse.Namespace) -> int:
    from aqmlab.scenario import ScenarioError

    try:
        path = export_flent(args.dir, args.out)
    except ValueError as e:
        raise ScenarioError(str(e)) from None
    print(f"wrote {path}")
    return 0
