#!/usr/bin/env python3
"""Instructions per unit of work in steady state, as docs/performance.md
measures them: the engine runs a scenario at two lengths under callgrind, and
the difference of the instruction counts is divided by the difference of the
work (bottleneck packets, packet-hops or events). Start-up, set-up and the
summary cancel out; instruction counts do not depend on the host.

    python scripts/instructions.py A-10-ack1                # 1 s and 2 s
    python scripts/instructions.py D --lines 30             # and where they go
    python scripts/instructions.py my.json --lengths 1s 3s --per events
    python scripts/instructions.py D-1024 --cache           # and cache misses
    python scripts/instructions.py D-1024 --cache --lines 30 --lines-by DLmr  # where the L2 read misses are
    python scripts/instructions.py D --cache --caches host  # this machine's L1 and L2, not the reference's
    python scripts/instructions.py D --branches --lines 20 --lines-by Bcm   # where branches mispredict

A name is a benchmark scenario of ``aqmlab bench`` (at the lengths below
unless ``--lengths`` says otherwise); anything else is a scenario file in
JSON. ``--lines N`` records per instruction (``--dump-instr=yes``) and
attributes each one, through ``addr2line -i``, to the innermost line of the
engine's own source it was inlined from: the standard library's helpers are
charged to the engine line that called them. It prints the N costliest
lines and the cost per source file. ``--cache`` also simulates two levels
of data cache and prints the misses per unit of each. Which two is
``--caches``: ``reference`` (the default, ``CACHE_GEOMETRY``: the 48 KB L1
data cache and, as callgrind's last level, the 2 MB L2 of the machine the
figures in docs/performance.md were first taken on), ``host`` (the L1 data
cache and L2 of the machine running the script, read from
``/sys/devices/system/cpu/cpu0/cache``) or ``host-llc`` (its L1 data cache
and its last level, usually the L3, shared by all cores). The simulation
ignores software prefetches: a miss it counts may be one the engine's
prefetch hints have already started. ``--branches`` also simulates a branch
predictor (callgrind's ``--branch-sim=yes``: two-bit counters indexed by a
branch's address and the last few outcomes, a last-target cache for
indirect branches; a predictor of about 2004, so its counts compare
builds, not hosts) and prints the
mispredicted branches per unit; ``--lines-by Bcm`` ranks the source lines
by their mispredicted conditional branches.

Needs valgrind and binutils' addr2line; builds the engine's ``runjson``
example (release, the profile-guided build when pgo/ holds a profile for
this tree, see docs/performance.md) unless ``--exe`` names one.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from summary_fingerprint import bench_module  # noqa: E402  (the one loader of python/aqmlab/bench.py)

#: python/aqmlab/bench.py, loaded once: the benchmarks' scenarios and units.
BENCH = bench_module()

#: The two lengths per benchmark scenario (docs/performance.md's figures):
#: long enough that the flows are in steady state in both.
LENGTHS = {
    "A-10": ("1s", "2s"), "A-100": ("1s", "2s"), "A-10-ack1": ("1s", "2s"), "A-100-ack1": ("1s", "2s"),
    "B": ("1s", "2s"), "C-10": ("1s", "2s"), "C-1000": ("100ms", "200ms"), "C-10000": ("25ms", "50ms"),
    "A-10-access": ("1s", "2s"), "C-10000-access": ("25ms", "50ms"),
    # The web workloads: flows start and finish at the same pace from the
    # first second on, so the difference is a packet's steady cost, its
    # share of flow starts and samples included.
    "W": ("4s", "8s"), "W-access": ("4s", "8s"),
    "D": ("5ms", "10ms"), "D-ack1": ("5ms", "10ms"), "D-codel": ("5ms", "10ms"),
    "D-1024": ("1.5ms", "3ms"), "D-1024-ack1": ("1.5ms", "3ms"),
    **{name: ("5ms", "10ms") for name in BENCH.ON_REQUEST},  # D-codel's tree, another discipline
    # A chain of N links: about 1 M and 2 M packet-hops at every length.
    **{name: (f"{800_000 // links}us", f"{1_600_000 // links}us")
       for name, links in ((name, int(name.removeprefix("chain-"))) for name in BENCH.CHAINS)},
}

#: What a unit of work is, per benchmark: a packet through the bottleneck, or
#: a packet-hop in a fat tree or a chain (a packet leaving a queue,
#: ``perf.packet_hops``), as the benchmark's own headline rate counts it
#: (``bench.headline``).
PER = {name: ("hops" if BENCH.headline(name) == "hops" else "packets") for name in LENGTHS}


def scenario_tree(name: str, length: str) -> dict:
    """A benchmark scenario at ``length``, or a JSON scenario file with its duration set."""
    if name in LENGTHS:
        return BENCH.scenario(name, length)
    try:
        tree = json.loads(Path(name).read_text())
    except ValueError as e:
        print(f"instructions.py: {name}: not a scenario in JSON ({e})", file=sys.stderr)
        raise SystemExit(2) from None
    tree["duration"] = length
    return tree


def work_units(runjson_line: str, per: str, perf: dict | None = None) -> int:
    """The work a run did, from ``runjson``'s line ("pkts N events M ... {kinds}"),
    or for packet-hops from its summary's ``perf`` (the line has no count of
    them; a fat tree's line arrivals match its packet-hops, a chain's do not)."""
    if per == "packets":
        return int(float(re.search(r"pkts (\S+)", runjson_line).group(1)))
    if per == "events":
        return int(re.search(r"events (\d+)", runjson_line).group(1))
    if perf is None:
        raise ValueError("packet-hops are counted in the summary's perf.packet_hops")
    return int(perf["packet_hops"])


def perf_of(exe: Path, scen: Path, summary_file: Path) -> dict:
    """The summary's ``perf`` of a native run of the scenario file ``scen``
    (the one :func:`run` wrote; the same counts as under callgrind: the
    engine is deterministic)."""
    proc = subprocess.run([str(exe), str(scen), str(summary_file)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"instructions.py: {exe.name} {scen.name} failed: {proc.stderr.strip()[-400:]}")
    return json.loads(summary_file.read_text())["perf"]


#: The caches ``--cache`` simulates by default (docs/performance.md,
#: Method): the first host's L1 data cache, and its per-core L2 as
#: callgrind's "LL".
CACHE_GEOMETRY = ("--D1=49152,12,64", "--LL=2097152,16,64")

#: Where Linux describes the first CPU's caches.
SYSFS_CACHES = Path("/sys/devices/system/cpu/cpu0/cache")


def host_cache_geometry(last: str, sysfs: Path = SYSFS_CACHES) -> tuple[str, str]:
    """Callgrind's ``--D1`` and ``--LL`` for this machine: its L1 data cache,
    and as the last level its L2 (``last="l2"``) or its largest cache
    (``last="llc"``). Raises SystemExit with one line if sysfs does not
    describe them or callgrind could not simulate them (it needs a power
    of two sets)."""
    caches = []
    for d in sorted(sysfs.glob("index*")):
        try:
            level = int((d / "level").read_text())
            kind = (d / "type").read_text().strip()
            size = (d / "size").read_text().strip()
            ways = int((d / "ways_of_associativity").read_text())
            line = int((d / "coherency_line_size").read_text())
            units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
            size_bytes = int(size[:-1]) * units[size[-1]] if size[-1:] in units else int(size)
        except (OSError, ValueError) as e:
            raise SystemExit(f"instructions.py: --caches host: cannot read {d}: {e}")
        if kind in ("Data", "Unified"):
            caches.append((level, size_bytes, ways, line))
    l1 = [c for c in caches if c[0] == 1]
    rest = sorted(c for c in caches if c[0] >= 2)
    if not l1 or not rest:
        raise SystemExit(f"instructions.py: --caches host: {sysfs} describes no L1 data cache and a level below it")
    lower = rest[-1] if last == "llc" else rest[0]
    geometry = []
    for flag, (level, size_bytes, ways, line) in (("--D1", l1[0]), ("--LL", lower)):
        sets = size_bytes // (ways * line)
        if sets * ways * line != size_bytes or sets & (sets - 1):
            raise SystemExit(f"instructions.py: --caches host: the L{level} cache ({size_bytes} bytes, {ways} ways, "
                             f"{line}-byte lines) has {size_bytes / (ways * line):g} sets; callgrind needs a power of two")
        geometry.append(f"{flag}={size_bytes},{ways},{line}")
    return geometry[0], geometry[1]

#: What ``--cache`` reports, by callgrind's event names.
MISS_EVENTS = {"D1mr": "L1 data read misses", "D1mw": "L1 data write misses",
               "DLmr": "L2 read misses", "DLmw": "L2 write misses"}

#: What ``--branches`` reports, by callgrind's event names.
BRANCH_EVENTS = {"Bc": "conditional branches", "Bcm": "mispredicted conditional branches",
                 "Bi": "indirect branches", "Bim": "mispredicted indirect branches"}


def event_totals(callgrind_out: str) -> dict[str, int]:
    """The whole run's count of each event, from the ``events:`` and
    ``summary:`` lines (events missing from the end of a line count 0)."""
    names = re.search(r"^events: (.*)$", callgrind_out, re.M).group(1).split()
    counts = [int(x) for x in re.search(r"^summary: (.*)$", callgrind_out, re.M).group(1).split()]
    return {name: counts[i] if i < len(counts) else 0 for i, name in enumerate(names)}


def total_instructions(callgrind_out: str) -> int:
    """The program's instructions, from a callgrind output's ``summary:`` line."""
    return event_totals(callgrind_out)["Ir"]


def costs_by_address(callgrind_out: str, object_name: str, event: str = "Ir") -> collections.Counter:
    """Self cost of ``event`` per instruction address within ``object_name``, from a
    callgrind output written with ``--dump-instr=yes --dump-line=no``
    (positions are addresses, absolute or relative to the previous line;
    object names are compressed to ``(id)`` after their first mention; the
    line after ``calls=`` is a call's inclusive cost, not a self cost)."""
    column = 1 + re.search(r"^events: (.*)$", callgrind_out, re.M).group(1).split().index(event)
    names: dict[str, str] = {}
    cost: collections.Counter = collections.Counter()
    current = ""
    addr = 0
    after_call = False
    for line in callgrind_out.splitlines():
        m = re.match(r"(c?ob)=\((\d+)\)(?: (.*))?$", line)
        if m:
            if m.group(3):
                names[m.group(2)] = m.group(3)
            if m.group(1) == "ob":
                current = names.get(m.group(2), "")
            continue
        if line.startswith("calls="):
            after_call = True
            continue
        if not line or line[0] not in "0123456789+-*":
            continue
        fields = line.split()
        pos = fields[0]
        if pos.startswith("0x"):
            addr = int(pos, 16)
        elif pos[0] in "+-":
            addr += int(pos)
        if after_call:
            after_call = False
            continue
        if len(fields) > column and current.endswith(object_name):
            cost[addr] += int(fields[column])
    return cost


def own_line(chain: list[str]) -> str:
    """The innermost frame of an ``addr2line -i`` chain that lies in the
    engine's own source (``crates/...``), as ``path:line``. Else, for code
    of Rust's library that the compiler kept out of line (a slice sort
    instantiated for the engine's type), the outermost frame, the library
    function's own line, as ``library core/src/...:line``; else ``?`` (no
    line information: libc, the allocator)."""
    def path_line(frame: str) -> tuple[str, str]:
        path, _, line = frame.partition(" (discriminator")[0].rpartition(":")
        return path, line

    for frame in chain:
        if "/crates/" in frame:
            path, line = path_line(frame)
            return f"{path.split('/src/')[-1]}:{line}"
    if chain and "/library/" in chain[-1]:
        path, line = path_line(chain[-1])
        return f"library {path.split('/library/')[-1]}:{line}"
    return "?"


def inline_chains(exe: Path, addresses: list[int]) -> dict[int, list[str]]:
    """``addr2line -a -i``: for each address, its frames, innermost first."""
    out = subprocess.run(["addr2line", "-a", "-i", "-e", str(exe), *(f"{a:x}" for a in addresses)],
                         capture_output=True, text=True, check=True).stdout
    chains: dict[int, list[str]] = {}
    current: list[str] = []
    for line in out.splitlines():
        if line.startswith("0x"):
            current = chains.setdefault(int(line, 16), [])
        else:
            current.append(line)
    return chains


def run(exe: Path, tree: dict, out_file: Path, by_address: bool, caches: tuple[str, ...], branches: bool = False) -> str:
    """Run ``exe`` on ``tree`` under callgrind, simulating ``caches``
    (callgrind's ``--D1`` and ``--LL``) if any, and the branch predictor
    if ``branches``."""
    scen = out_file.with_suffix(".json")
    scen.write_text(json.dumps(tree))
    extra = ["--dump-instr=yes", "--dump-line=no"] if by_address else []
    if caches:
        extra += ["--cache-sim=yes", *caches]
    if branches:
        extra.append("--branch-sim=yes")
    proc = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}", *extra, str(exe), str(scen)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"instructions.py: {exe.name} {scen.name} failed: {proc.stderr.strip()[-400:]}")
    return proc.stdout.strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenario", help=f"a benchmark ({', '.join(LENGTHS)}) or a scenario JSON file")
    ap.add_argument("--lengths", nargs=2, metavar=("SHORT", "LONG"), help="the two run lengths")
    ap.add_argument("--per", choices=("packets", "hops", "events"), help="the unit of work (default: packet-hops for the topologies, D* and chain-*, else packets)")
    ap.add_argument("--exe", type=Path, help="a runjson binary built elsewhere")
    ap.add_argument("--lines", type=int, default=0, metavar="N", help="also print the N costliest source lines")
    ap.add_argument("--cache", action="store_true", help="also simulate the L1 and L2 data caches and print their misses")
    ap.add_argument("--branches", action="store_true", help="also simulate the branch predictor and print the mispredicted branches")
    ap.add_argument("--lines-by", choices=("Ir", *MISS_EVENTS, "Bcm", "Bim"), default="Ir",
                    help="what --lines ranks the source lines by: instructions (default), one kind of --cache's misses "
                         "or --branches' mispredicted conditional (Bcm) or indirect (Bim) branches")
    ap.add_argument("--caches", choices=("reference", "host", "host-llc"), default="reference",
                    help="the two cache levels --cache simulates: the reference machine's L1 data cache and 2 MB L2 "
                         "(default), this machine's L1 data cache and L2, or its L1 data cache and last level")
    a = ap.parse_args()
    if a.scenario not in LENGTHS and not Path(a.scenario).is_file():
        ap.error(f"scenario: '{a.scenario}' is neither a benchmark ({', '.join(LENGTHS)}) nor a file")
    lengths = a.lengths or LENGTHS.get(a.scenario)
    if lengths is None:
        ap.error("--lengths: a scenario file needs its two run lengths")
    per = a.per or PER.get(a.scenario, "packets")
    if a.lines_by in MISS_EVENTS and not (a.cache and a.lines):
        ap.error(f"--lines-by {a.lines_by}: needs --cache and --lines")
    if a.lines_by in BRANCH_EVENTS and not (a.branches and a.lines):
        ap.error(f"--lines-by {a.lines_by}: needs --branches and --lines")
    if a.caches != "reference" and not a.cache:
        ap.error(f"--caches {a.caches}: needs --cache")
    caches: tuple[str, ...] = ()
    if a.cache:
        caches = CACHE_GEOMETRY if a.caches == "reference" else host_cache_geometry("llc" if a.caches == "host-llc" else "l2")
    last_level = "last-level" if a.caches == "host-llc" else "L2"
    exe = a.exe
    if exe is None:
        subprocess.run(["cargo", "build", "-q", "--release", "-p", "aqmlab-engine", "--example", "runjson"], cwd=ROOT, check=True)
        exe = ROOT / "target/release/examples/runjson"
    with tempfile.TemporaryDirectory() as tmp:
        outs = [Path(tmp) / f"cg-{i}.out" for i in range(2)]
        trees = [scenario_tree(a.scenario, length) for length in lengths]
        with ThreadPoolExecutor(2) as pool:  # the two lengths at once, one core each
            lines = list(pool.map(lambda i: run(exe, trees[i], outs[i], a.lines > 0, caches, a.branches), range(2)))
        texts = [o.read_text() for o in outs]
        perfs = [perf_of(exe, o.with_suffix(".json"), o.with_suffix(".summary.json")) if per == "hops" else None for o in outs]
        units = work_units(lines[1], per, perfs[1]) - work_units(lines[0], per, perfs[0])
        total = (total_instructions(texts[1]) - total_instructions(texts[0])) / units
        print(f"{a.scenario}: {total:.1f} instructions per {per[:-1]} ({lengths[1]} minus {lengths[0]}: {units:,} {per})")
        short, long = (event_totals(t) for t in texts)
        for on, title, events in ((a.cache, f"simulated caches ({a.caches}): {' '.join(caches)}", MISS_EVENTS),
                                  (a.branches, "simulated branch predictor (callgrind --branch-sim=yes)", BRANCH_EVENTS)):
            if on:
                print(title)
                for event, what in events.items():
                    print(f"{(long[event] - short[event]) / units:9.2f}  {what.replace('L2', last_level)} per {per[:-1]}")
        if a.lines:
            short, long = (costs_by_address(t, exe.name, a.lines_by) for t in texts)
            diff = {k: (v - short.get(k, 0)) / units for k, v in long.items() if v != short.get(k, 0)}
            chains = inline_chains(exe, sorted(diff))
            by_line: collections.Counter = collections.Counter()
            for addr, c in diff.items():
                by_line[own_line(chains.get(addr, []))] += c
            by_file: collections.Counter = collections.Counter()
            for k, c in by_line.items():
                by_file[k.rpartition(":")[0] or k] += c
            what = "instructions" if a.lines_by == "Ir" else {**MISS_EVENTS, **BRANCH_EVENTS}[a.lines_by].replace("L2", last_level)
            print(f"\nthe {a.lines} costliest lines of the engine's source ({what} per {per[:-1]}, inlined helpers included):")
            for k, c in by_line.most_common(a.lines):
                print(f"{c:9.2f}  {k}")
            print("\nper source file:")
            for k, c in by_file.most_common():
                if abs(c) >= 0.05:
                    print(f"{c:9.2f}  {k}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
