"""The parts every aqmlab HTML page shares: one stylesheet, the page frame,
tables, embedded images and links to the data files beside the page.

Used by the run report (aqmlab.report), ``compare.html`` (aqmlab.compare),
``sweep_report.html`` (aqmlab.sweep_report) and a reproduction's
``report.html`` (aqmlab.reproduce.framework). The pages are self-contained:
PNGs embedded as base64, no scripts, styles or fonts from elsewhere (a page
can be mailed or archived; the data links work when its directory comes
along).

Layout: readable from a 390 px phone to a desktop. The viewport meta makes a
phone lay the page out at its own width; images shrink to the column;
a table sits in a box that scrolls sideways rather than widening the page;
long names without spaces may break anywhere. tests/test_browser.py checks
this in a real browser (no horizontal overflow at 390 px).
"""

from __future__ import annotations

import base64
import html
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

__all__ = ["CSS", "page", "table", "image", "fmt", "data_links", "data_files_in", "link", "DATA_SUFFIXES"]

CSS = """
*,*::before,*::after{box-sizing:border-box}
html{-webkit-text-size-adjust:100%;text-size-adjust:100%}
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:0 auto;max-width:72rem;
color:#222;padding:1rem 1.25rem;line-height:1.4;overflow-wrap:anywhere}
h1{font-size:1.6rem;margin:.5rem 0 .2rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}
.scroll{overflow-x:auto;max-width:100%;margin:.5rem 0}
table{border-collapse:collapse;font-size:.9rem}
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:right;overflow-wrap:normal;white-space:nowrap}
th{background:#f3f3f3}td.l,th.l{text-align:left;white-space:normal;min-width:6rem;max-width:32rem}
pre{background:#f7f7f7;padding:.75rem;overflow-x:auto;max-width:100%;font-size:.85rem;overflow-wrap:normal}
img{max-width:100%;height:auto;border:1px solid #eee;margin:.5rem 0}.muted{color:#777;font-size:.85rem}
.pass{color:#176f2c;font-weight:600}.differs{color:#a33;font-weight:600}.na{color:#777}
ul.files{padding-left:1.2rem}ul.files li{margin:.15rem 0}
@media (max-width:40rem){body{padding:.5rem .75rem}h1{font-size:1.3rem}h2{font-size:1.05rem}
table{font-size:.8rem}th,td{padding:.2rem .35rem}}
"""

#: Files a page links to as its data: tables, summaries, scenarios, notes.
DATA_SUFFIXES = (".json", ".parquet", ".csv", ".toml", ".md", ".pcap", ".gz")  # .gz: Flent's .flent.gz


def fmt(v: Any, digits: int = 3) -> str:
    """Numbers to short text; None/NaN to an en dash."""
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if v != v:
            return "–"
        if abs(v) >= 1e4:
            return f"{v:,.0f}"
        return f"{v:.{digits + 1}g}"
    return str(v)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], left: int = 1, raw_cols: Sequence[int] = ()) -> str:
    """An HTML table in a sideways-scrolling box; the first ``left`` columns
    are left-aligned text. Columns in ``raw_cols`` hold trusted HTML (already
    escaped); everything else is escaped here."""
    out = ['<div class="scroll"><table><tr>']
    out += [f'<th class="{"l" if i < left else ""}">{html.escape(h)}</th>' for i, h in enumerate(headers)]
    out.append("</tr>")
    for row in rows:
        out.append("<tr>")
        for i, v in enumerate(row):
            text = v if i in raw_cols else html.escape(fmt(v))
            out.append(f'<td class="{"l" if i < left else ""}">{text}</td>')
        out.append("</tr>")
    out.append("</table></div>")
    return "".join(out)


def image(png: bytes | str | os.PathLike[str], alt: str) -> str:
    """A PNG embedded as base64 (the page needs no file beside it)."""
    data = png if isinstance(png, bytes) else Path(png).read_bytes()
    b64 = base64.b64encode(data).decode()
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{b64}">'


def data_links(page_dir: str | os.PathLike[str], files: Iterable[str | os.PathLike[str]],
               title: str = "Data files") -> str:  # fmt: skip
    """A list of links to those of ``files`` that exist (ordinary paths, e.g.
    ``page_dir / "summary.json"``), with their sizes; empty text when none
    does. The links are relative, so the directory can be moved as a whole."""
    base = Path(page_dir)
    items, seen = [], set()
    for f in files:
        p = Path(f)
        if not p.is_file() or p.resolve() in seen:
            continue
        seen.add(p.resolve())
        items.append(f'<li>{link(base, p)} <span class="muted">({_size_text(p.stat().st_size)})</span></li>')
    if not items:
        return ""
    return f'<h2>{html.escape(title)}</h2><ul class="files">' + "".join(items) + "</ul>"


def link(page_dir: str | os.PathLike[str], target: str | os.PathLike[str], text: str | None = None) -> str:
    """``<a>`` to the file ``target`` (an ordinary path) by its path relative
    to ``page_dir`` (URL-quoted, so spaces and ``#`` in names work); the text
    defaults to that relative path."""
    rel = Path(os.path.relpath(target, page_dir)).as_posix()
    return f'<a href="{html.escape(quote(rel))}">{html.escape(rel if text is None else text)}</a>'


def data_files_in(directory: str | os.PathLike[str], *subdirs: str) -> list[Path]:
    """The data files (:data:`DATA_SUFFIXES`) in ``directory`` and the given
    sub-directories, sorted by name within each."""
    d = Path(directory)
    out: list[Path] = []
    for sub in ("", *subdirs):
        where = d / sub
        if where.is_dir():
            out += sorted(p for p in where.iterdir() if p.is_file() and p.suffix in DATA_SUFFIXES)
    return out


def _size_text(n: int) -> str:
    for unit, scale in (("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def page(title: str, body: str) -> str:
    """A whole page: doctype, language, charset, the viewport meta (phones
    lay it out at their own width), the stylesheet and a footer."""
    from aqmlab import _engine

    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>\n"
        f'{body}\n<p class="muted">Generated by aqmlab {html.escape(_engine.__version__)}.</p>'
        "</body></html>\n"
    )
