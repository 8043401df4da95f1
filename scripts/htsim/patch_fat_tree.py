#!/usr/bin/env python3
"""Write a copy of htsim's sim/datacenter/fat_tree_topology.cpp with the two
changes scenario D needs (README.md, "The two changes to htsim"):

1. The ECN queue's marking threshold, hard-coded as ``memFromPkt(15)`` in
   ``alloc_queue``'s ``case ECN``, becomes the global ``fat_tree_ecn_k``
   (bytes; default 15 x 1500, the stock value), which htsim_d sets to 65
   packets.
2. ``alloc_src_queue`` (a host's NIC queue) gains a ``case ECN``: the same
   ECNQueue as the switch ports (the ToR tier's buffer, K = fat_tree_ecn_k),
   instead of a 1 000-packet queue without marking.

    python scripts/htsim/patch_fat_tree.py SRC DEST

Each edit is anchored on text of htsim at the pinned commit; the anchor must
occur exactly once (whitespace may differ), else the script names it on one
line and exits with 2, writing nothing. SRC is never modified.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

#: The marker our edits carry, so a patched file is recognised as such.
MARK = "aqmlab scripts/htsim"
HINT = " (htsim differs from the pinned commit?)"


class PatchError(Exception):
    """An anchor is missing or ambiguous: the message is the one line printed."""


@dataclass(frozen=True)
class Edit:
    name: str  # what the anchor is, for the error line
    anchor: str  # literal text; any run of whitespace matches any whitespace
    replacement: str  # replaces the anchor; "{anchor}" stands for the matched text
    within: str | None = None  # a literal that must open the region (a function's head)


def _pattern(text: str) -> re.Pattern[str]:
    parts = [re.escape(p) for p in text.split()]
    return re.compile(r"\s+".join(parts))


EDITS = (
    Edit(
        name="the definition of FatTreeTopology::_tiers",
        anchor="uint32_t FatTreeTopology::_tiers = 3;",
        replacement=(
            "{anchor}\n"
            f"// {MARK}: the ECN marking threshold (bytes) of case ECN, set by the driver.\n"
            "mem_b fat_tree_ecn_k = 15 * 1500;"
        ),
    ),
    Edit(
        name="alloc_queue's case ECN with memFromPkt(15)",
        anchor="case ECN: return new ECNQueue(speed, queuesize, *_eventlist, queueLogger, memFromPkt(15));",
        replacement=(
            f"case ECN:\n        // {MARK}: the marking threshold is fat_tree_ecn_k (was memFromPkt(15)).\n"
            "        return new ECNQueue(speed, queuesize, *_eventlist, queueLogger, fat_tree_ecn_k);"
        ),
    ),
    Edit(
        name="alloc_src_queue's default case",
        anchor="default: abort();",
        replacement=(
            f"case ECN:\n        // {MARK}: a host NIC can be the switch ports' ECN queue (ToR buffer, same K).\n"
            "        return new ECNQueue(linkspeed, _queue_up[TOR_TIER], *_eventlist, queueLogger, fat_tree_ecn_k);\n"
            "    {anchor}"
        ),
        within="BaseQueue* FatTreeTopology::alloc_src_queue(",
    ),
)


def _region(text: str, edit: Edit) -> tuple[int, int]:
    """The span an edit's anchor is searched in: the whole file, or the
    function that ``within`` opens (up to the next line that is a lone "}")."""
    if edit.within is None:
        return 0, len(text)
    heads = [m.start() for m in _pattern(edit.within).finditer(text)]
    if len(heads) != 1:
        raise PatchError(f"anchor '{edit.within}' (for {edit.name}) found {len(heads)} times, expected once{HINT}")
    end = re.compile(r"^\}\s*$", re.M).search(text, heads[0])
    return heads[0], end.end() if end else len(text)


def patch(text: str) -> str:
    """The patched source; PatchError if an anchor is not found exactly once
    or the text carries our edits already."""
    if MARK in text:
        raise PatchError("already patched (it contains our marker); give the unmodified htsim file")
    for edit in EDITS:
        lo, hi = _region(text, edit)
        hits = list(_pattern(edit.anchor).finditer(text, lo, hi))
        if len(hits) != 1:
            where = f" in {edit.within.rstrip('(')}" if edit.within else ""
            raise PatchError(f"anchor for {edit.name} found {len(hits)} times{where}, expected once: '{edit.anchor}'{HINT}")
        m = hits[0]
        text = text[: m.start()] + edit.replacement.replace("{anchor}", m.group(0)) + text[m.end() :]
    return text


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("patch_fat_tree: usage: patch_fat_tree.py SRC DEST", file=sys.stderr)
        return 2
    src, dest = Path(argv[0]), Path(argv[1])
    try:
        text = src.read_text()
    except OSError as e:
        print(f"patch_fat_tree: cannot read {src}: {e.strerror}", file=sys.stderr)
        return 2
    try:
        out = patch(text)
    except PatchError as e:
        print(f"patch_fat_tree: {src}: {e}", file=sys.stderr)
        return 2
    if dest.resolve() == src.resolve():
        print("patch_fat_tree: DEST must differ from SRC (htsim's source is never modified)", file=sys.stderr)
        return 2
    dest.write_text(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
