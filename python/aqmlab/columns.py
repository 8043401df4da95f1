"""A run's tables as columns, and as Arrow tables and files.

The run path (``aqmlab.results``, the runner's cache) builds, enriches and
writes the engine's tables without pandas (~0.4 s to import): columns are
numpy arrays (numpy comes with pyarrow anyway) and lists of str, turned into
Arrow arrays from their buffers, because pa.array() and Array.to_numpy()
import pandas whenever it is installed. pyarrow.compute is avoided too
(~0.1 s). The names keep their leading underscore: they are the package's
own plumbing, re-exported by ``aqmlab.results`` where callers import them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    import pyarrow as pa

#: A table as columns: numpy arrays (numbers) or sequences of str/None (text:
#: lists, or the engine's coded columns).
Columns = dict[str, Any]

#: Integer columns where the engine writes -1 for "none"; null in the tables.
NULLABLE = {"flows": ("size_bytes", "fct_ns")}


class _CodedText(Sequence[str | None]):
    """A text column as codes into its distinct values: the engine's text
    columns, and those :func:`_enrich` takes from them. The Arrow
    conversion builds its buffers from the codes, and the run path reads
    nothing else; the rows as str (each sharing its value's object) are made
    on first use, for callers that read a column row by row (128 s of 2 000
    web flows a second: 0.02 s for the flows table's four text columns,
    which a run that only saves never reads). Not to be changed."""

    __slots__ = ("codes", "values", "_rows")

    def __init__(self, codes: np.ndarray, values: list[str | None]):
        self.codes, self.values = codes, values
        self._rows: list[str | None] | None = None

    def _list(self) -> list[str | None]:
        if self._rows is None:
            import numpy as np

            # Gathered by numpy: five times as fast as mapping the codes (2
            # million rows of a fat tree's sojourn histograms, 0.15 s -> 0.03 s).
            self._rows = np.array(self.values, dtype=object)[self.codes].tolist()
        return self._rows

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, i: Any) -> Any:
        return self._list()[i]

    def __iter__(self) -> Iterator[str | None]:
        return iter(self._list())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, _CodedText)):
            return self._list() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"_CodedText({self._list()!r})"


def _coded(rows: list[str | None]) -> tuple[np.ndarray, list[str | None]]:
    """A text column's codes and distinct values: those it came with, or
    found (a column read back from Parquet)."""
    import numpy as np

    if isinstance(rows, _CodedText):
        return rows.codes, rows.values
    index: dict[str | None, int] = {}
    codes = np.fromiter((index.setdefault(v, len(index)) for v in rows), dtype=np.int64, count=len(rows))
    return codes, list(index)


def _engine_columns(cols: dict[str, Any]) -> Columns:
    """An engine table: numeric columns come as (dtype, little-endian
    bytes), read without copying; text columns as ("text", u32 codes,
    distinct values) (a fat tree's tables name thousands of queues over
    millions of rows)."""
    import numpy as np

    def column(c: tuple[Any, ...]) -> Any:
        if c[0] == "text":
            return _CodedText(np.frombuffer(c[1], dtype="<u4"), c[2])
        return np.frombuffer(c[1], dtype=np.dtype(c[0]))

    return {name: column(c) for name, c in cols.items()}


def _table_columns(t: pa.Table) -> Columns:
    """An Arrow table as columns (nulls of numeric columns as NaN)."""
    import numpy as np
    import pyarrow as pa

    return {name: col.to_pylist() if pa.types.is_string(col.type) or pa.types.is_large_string(col.type)
            else np.asarray(col.to_numpy()) for name, col in zip(t.column_names, t.columns, strict=True)}  # fmt: skip


def _bitmap(valid: np.ndarray) -> pa.Buffer | None:
    import numpy as np
    import pyarrow as pa

    return None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))


def _arrow_array(values: Any, nullable: bool = False) -> pa.Array:
    """A column as an Arrow array, from its buffers (Arrow's columnar
    layout). Text is large_string, as pandas wrote it; a nullable integer
    column is null where the value is negative (or NaN)."""
    import numpy as np
    import pyarrow as pa

    if isinstance(values, list):  # text from elsewhere (read back) repeats its values too
        values = _CodedText(*_coded(values))
    if isinstance(values, _CodedText):
        # From the codes: each value encoded once, offsets by numpy (0.41 s
        # -> 0.04 s for 1.3 million rows of a fat tree's queue names).
        encoded = [b"" if v is None else v.encode() for v in values.values]
        codes = values.codes
        offsets = np.zeros(len(values) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))[codes], out=offsets[1:])
        firsts = np.flatnonzero(np.concatenate(([True], codes[1:] != codes[:-1]))) if len(codes) else codes
        if 2 * len(firsts) < len(codes):
            # Rows in runs of one value (a queue's buckets): a run is one
            # repetition of its bytes.
            runs = np.diff(np.append(firsts, len(codes)))
            data = b"".join(encoded[c] * n for c, n in zip(codes[firsts].tolist(), runs.tolist(), strict=True))
        else:  # a value a row (a flow's label in its time series): joined without a Python loop
            data = b"".join(map(encoded.__getitem__, codes.tolist()))
        nulls = [i for i, v in enumerate(values.values) if v is None]
        validity = _bitmap(~np.isin(codes, nulls)) if nulls else None
        return pa.Array.from_buffers(pa.large_string(), len(values), [validity, pa.py_buffer(offsets), pa.py_buffer(data)])
    a = np.ascontiguousarray(values)
    validity = None
    if nullable:
        valid = a >= 0  # False for NaN
        validity = _bitmap(valid)
        a = np.where(valid, a, -1).astype(np.int64)
    return pa.Array.from_buffers(pa.from_numpy_dtype(a.dtype), len(a), [validity, pa.py_buffer(a)])


def _nullable_meta(nullable: Sequence[str]) -> dict[bytes, bytes]:
    """Schema metadata in pandas' documented Parquet format declaring
    ``nullable`` integer columns as pandas ``Int64``, so ``pd.read_parquet``
    and :class:`Result` give ``Int64`` (not float64) for them, as when pandas
    wrote the files. Other columns take pandas' defaults."""
    cols = [{"name": c, "field_name": c, "pandas_type": "int64", "numpy_type": "Int64", "metadata": None} for c in nullable]
    doc = {"index_columns": [], "column_indexes": [], "columns": cols}
    return {b"pandas": json.dumps(doc).encode()}


def _arrow_table(name: str, cols: Columns) -> pa.Table:
    import pyarrow as pa

    nullable = NULLABLE.get(name, ())
    arrays = [_arrow_array(v, c in nullable) for c, v in cols.items()]
    return pa.Table.from_arrays(arrays, names=list(cols), metadata=_nullable_meta(nullable) if nullable else None)


def _f64(values: np.ndarray) -> np.ndarray:
    import numpy as np

    return np.asarray(values, dtype=np.float64)


def _per_interval_diff(keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values[i]`` minus the value of the previous row with the same key;
    NaN for each key's first row (pandas' ``groupby(keys).diff()``)."""
    import numpy as np

    values = _f64(values)
    order = np.argsort(keys, kind="stable")
    v, k = values[order], keys[order]
    d = np.full(len(v), np.nan)
    if len(v) > 1:
        d[1:] = np.where(k[1:] == k[:-1], v[1:] - v[:-1], np.nan)
    out = np.empty_like(d)
    out[order] = d
    return out


def _group_codes(*cols: list[Any]) -> np.ndarray:
    """One integer per distinct combination of the text columns' values
    (not necessarily consecutive), from their codes."""
    import numpy as np

    key = np.zeros(len(cols[0]), dtype=np.int64)
    for col in cols:
        codes, values = _coded(col)
        key = key * max(len(values), 1) + codes
    return key


def _enrich(tables: dict[str, Columns], summary: dict[str, Any]) -> dict[str, Columns]:
    """Add convenience columns (seconds, milliseconds, per-interval rates)."""
    import numpy as np

    nan = float("nan")
    t = {name: dict(cols) for name, cols in tables.items()}
    f = t.get("flows")
    if f is not None:
        f["base_rtt_ms"] = _f64(f["base_rtt_ns"]) / 1e6
        f["srtt_ms"] = _f64(f["srtt_ns"]) / 1e6
        fct = _f64(f["fct_ns"])
        f["fct_s"] = np.where(fct >= 0, fct / 1e9, nan)  # -1: unbounded or unfinished
    q = t.get("queues")
    if q is not None:
        by_name = {x["name"]: x for x in summary.get("queues", [])}
        util, drop_rate, mark_rate = [], [], []
        for name, sub in zip(q["queue"], q["subqueue"], strict=True):
            qs = by_name.get(name, {})
            stats = qs.get("subqueues", {}).get(sub, qs) if sub != "all" else qs
            util.append(qs.get("utilization", nan))
            drop_rate.append(stats.get("drop_rate", nan))
            mark_rate.append(stats.get("mark_rate", nan))
        q["utilization"] = _f64(util)
        q["drop_rate"] = _f64(drop_rate)
        q["mark_rate"] = _f64(mark_rate)
        for p in ("mean", "p50", "p90", "p99"):
            q[f"sojourn_{p}_ms"] = _f64(q[f"sojourn_{p}_ns"]) / 1e6
    ts = t.get("flow_ts")
    if ts is not None:
        flow = ts["flow"]
        ts["t_s"] = _f64(ts["t_ns"]) / 1e9
        dt = _per_interval_diff(flow, ts["t_ns"]) / 1e9
        ts["goodput_bps"] = _per_interval_diff(flow, ts["delivered_bytes"]) * 8 / dt
        ts["srtt_ms"] = _f64(ts["srtt_ns"]) / 1e6
        if f is not None and len(f["id"]):
            # Each row's flow in the flows table, by id (the last row of an
            # id given twice); -1 for an unknown id.
            ids = np.asarray(f["id"])
            by_id = np.argsort(ids, kind="stable")
            at = np.searchsorted(ids[by_id], flow, side="right") - 1
            known = (at >= 0) & (ids[by_id][np.maximum(at, 0)] == flow)
            rows = np.where(known, by_id[np.maximum(at, 0)], -1)
            for col in ("label", "cc"):  # the flow's, by id; null for an unknown id
                codes, values = _coded(f[col])
                ts[col] = _CodedText(np.where(known, codes[np.maximum(rows, 0)], len(values)), [*values, None])
    qt = t.get("queue_ts")
    if qt is not None:
        keys = _group_codes(qt["queue"], qt["subqueue"])
        d = {c: _per_interval_diff(keys, qt[c]) for c in ("arrived_pkts", "departed_pkts", "dropped_pkts", "marked_pkts")}
        qt["t_s"] = _f64(qt["t_ns"]) / 1e9
        with np.errstate(divide="ignore", invalid="ignore"):  # no arrivals / departures in an interval: NaN
            qt["drop_prob"] = d["dropped_pkts"] / np.where(d["arrived_pkts"] > 0, d["arrived_pkts"], nan)
            qt["mark_prob"] = d["marked_pkts"] / np.where(d["departed_pkts"] > 0, d["departed_pkts"], nan)
            if "sojourn_sum_ns" in qt:  # mean queue delay of the packets that departed in the interval
                soj = _per_interval_diff(keys, qt["sojourn_sum_ns"])
                qt["sojourn_mean_ms"] = soj / np.where(d["departed_pkts"] > 0, d["departed_pkts"], nan) / 1e6
                qt["sojourn_max_ms"] = np.where(d["departed_pkts"] > 0, _f64(qt["sojourn_max_ns"]) / 1e6, nan)
    pr = t.get("probes")
    if pr is not None:
        pr["t_s"] = _f64(pr["t_ns"]) / 1e9
    pp = t.get("probe_rtt")
    if pp is not None:
        pp["t_s"] = _f64(pp["t_ns"]) / 1e9
        pp["rtt_ms"] = _f64(pp["rtt_ns"]) / 1e6
    sh = t.get("sojourn_hist")
    if sh is not None:
        sh["lo_ms"] = _f64(sh["lo_ns"]) / 1e6
        sh["hi_ms"] = _f64(sh["hi_ns"]) / 1e6
    return t


#: A column each table gets from :func:`_enrich`: present means enriched
#: (a table read back from Parquet, or given as a saved DataFrame). Other
#: tables (sojourn_samples) get nothing.
_ENRICHED_BY = {"flows": "base_rtt_ms", "queues": "utilization", "flow_ts": "t_s", "queue_ts": "t_s",
                "probes": "t_s", "sojourn_hist": "hi_ms", "probe_rtt": "t_s"}  # fmt: skip


def _csv_text(table: pa.Table) -> str:
    """A small table as CSV text (header row; text unquoted unless needed)."""
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(table.column_names)
    w.writerows(zip(*(c.to_pylist() for c in table.columns), strict=True))
    return buf.getvalue()


def _parquet_options(table: pa.Table) -> dict[str, Any]:
    """How a table is written as Parquet: dictionary encoding for its text
    columns only, pages compressed with zstd. Arrow's writer buffers a
    dictionary-encoded column's pages until the column's chunk is done, so
    a run's long numeric columns (a flow's figures, its time series) were
    held whole while they encoded: 128 s of 2 000 web flows a second went
    from 199 to 289-311 MB at its peak while its 102 MB of tables encoded.
    Encoded plain, they go to the file page by page (no MB added), and zstd
    makes the files smaller than dictionaries and snappy did (14.9 -> 12.2
    MB), in less time (0.26-0.35 -> 0.15-0.23 s; docs/performance.md,
    stop 67). Text columns repeat a few names: dictionaries suit them."""
    import pyarrow as pa

    text = [f.name for f in table.schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
    return {"use_dictionary": text, "compression": "zstd"}


def _write_parquet(table: pa.Table | pd.DataFrame, file: Any) -> None:
    """Write a table as Parquet to an open binary file, as it encodes: an
    Arrow table (a run's tables), or a DataFrame (sweeps and reproductions)
    converted as ``DataFrame.to_parquet`` does."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not isinstance(table, pa.Table):
        table = pa.Table.from_pandas(table, preserve_index=False)
    pq.write_table(table, file, **_parquet_options(table))
