"""scripts/instructions.py turns two callgrind runs into instructions per
unit of work, the figures docs/performance.md reports. Its parsing is checked
here on small callgrind outputs written by hand in the format's own terms
(valgrind itself is not needed): a mistake in the address arithmetic, the
name compression or the call lines would move costs between lines."""

from __future__ import annotations

import sys

import pytest
from conftest import ROOT, load_script

from aqmlab.bench import ALL_SCENARIOS

ins = load_script(ROOT / "scripts" / "instructions.py", "instructions_script")

# Two functions of `runjson` and one of libc. The line after `calls=` is the
# call's inclusive cost (1000), not a self cost of 0x1010; positions are
# absolute (0x...), relative (+n, -n) or repeated (*).
CALLGRIND = """\
# callgrind format
version: 1
positions: instr
events: Ir
summary: 1234

ob=(1) /build/release/examples/runjson
fl=(1) /src/a.rs
fn=(1) hot
0x1000 5
+4 7
* 1
cob=(2) /lib/libc.so.6
cfn=(2) memcpy
calls=1 0x9000
+6 1000
-2 3

ob=(2)
fn=(2) memcpy
0x9000 1000

ob=(1)
fn=(3) cold
0x2000 2
"""


def test_self_costs_land_on_their_addresses_and_call_lines_are_not_self_costs():
    cost = ins.costs_by_address(CALLGRIND, "runjson")
    # 0x1000: 5; 0x1004: 7 + 1 (the repeated position); the call at 0x100a
    # carries the callee's 1000, not charged; then 0x1008: 3; 0x2000: 2.
    assert dict(cost) == {0x1000: 5, 0x1004: 8, 0x1008: 3, 0x2000: 2}
    # The other object is kept apart, under its compressed name.
    assert dict(ins.costs_by_address(CALLGRIND, "libc.so.6")) == {0x9000: 1000}
    assert ins.total_instructions(CALLGRIND) == 1234


def test_an_instruction_is_charged_to_the_engines_innermost_line_or_the_library_function_it_lies_in():
    chain = [
        "/rustc/abc/library/core/src/slice/index.rs:278",
        "/work/main/crates/engine/src/sim/ring.rs:128 (discriminator 3)",
        "/work/main/crates/engine/src/net/delay_line.rs:63",
    ]
    assert ins.own_line(chain) == "sim/ring.rs:128"
    # Library code kept out of line is named by its outermost frame: the
    # function the address belongs to, not what was inlined into it.
    sort = [
        "/rustc/abc/library/core/src/ptr/mod.rs:1400",
        "/rustc/abc/library/core/src/slice/sort/shared/smallsort.rs:273",
    ]
    assert ins.own_line(sort) == "library core/src/slice/sort/shared/smallsort.rs:273"
    assert ins.own_line(["??:0"]) == "?"
    assert ins.own_line([]) == "?"


def test_work_is_read_from_runjson_s_line():
    line = 'pkts 833333 events 833400 wall 0.300s -> 2.78 Mpkt/s; events/pkt {"line_arrival":833300,"sender_timer":100}'
    assert ins.work_units(line, "packets") == 833333
    assert ins.work_units(line, "events") == 833400
    # Packet-hops are not on the line (a chain's line arrivals are not its
    # hops): they come from the summary's perf.
    assert ins.work_units(line, "hops", {"packet_hops": 901234}) == 901234
    with pytest.raises(ValueError, match="perf.packet_hops"):
        ins.work_units(line, "hops")


def test_every_benchmark_has_two_lengths_and_a_unit():
    assert set(ins.LENGTHS) == set(ALL_SCENARIOS)
    for name, (short, long) in ins.LENGTHS.items():
        assert short != long, name
    assert ins.PER["D-1024"] == "hops" and ins.PER["A-10-ack1"] == "packets"


def test_cache_misses_are_read_per_event_name_and_missing_trailing_events_count_zero():
    header = "events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw\nsummary: 900 300 100 2 40 9 1 7\n"
    totals = ins.event_totals(header)
    assert totals["Ir"] == 900 and totals["D1mr"] == 40 and totals["D1mw"] == 9
    assert totals["DLmr"] == 7 and totals["DLmw"] == 0
    assert ins.total_instructions(header) == 900
    # Every event --cache reports is one callgrind's cache simulation writes.
    assert set(ins.MISS_EVENTS) <= set(totals)



def test_a_miss_event_is_charged_to_its_address_and_a_cost_line_may_end_early():
    # --lines-by DLmr: the same positions, another column. A cost line may
    # stop before the last events (they are 0), as callgrind writes them.
    out = """\
positions: instr
events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
summary: 30 10 4 0 5 2 0 3 1

ob=(1) /build/release/examples/runjson
fn=(1) hot
0x1000 10 4 1 0 2 0 0 1
+8 20 6 3 0 3 2 0 2 1
"""
    assert dict(ins.costs_by_address(out, "runjson", "DLmr")) == {0x1000: 1, 0x1008: 2}
    assert dict(ins.costs_by_address(out, "runjson", "DLmw")) == {0x1008: 1}
    assert dict(ins.costs_by_address(out, "runjson")) == {0x1000: 10, 0x1008: 20}


def test_branch_events_are_read_alone_or_after_the_cache_events():
    # As callgrind 3.19 writes them: --branch-sim=yes alone, then with --cache-sim=yes.
    alone = ins.event_totals("events: Ir Bc Bcm Bi Bim\nsummary: 126559 25647 3136 280 151\n")
    both = ins.event_totals("events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw Bc Bcm Bi Bim\n"
                            "summary: 126561 27888 11769 1083 916 573 1065 780 548 25647 3136 280 151\n")
    for totals in (alone, both):
        assert set(ins.BRANCH_EVENTS) <= set(totals)
        assert (totals["Bc"], totals["Bcm"], totals["Bi"], totals["Bim"]) == (25647, 3136, 280, 151)
    assert both["DLmw"] == 548
    out = """\
positions: instr
events: Ir Bc Bcm Bi Bim
summary: 30 6 3 1 1

ob=(1) /build/release/examples/runjson
fn=(1) hot
0x1000 10 2 2
+8 20 4 1 1 1
"""
    assert dict(ins.costs_by_address(out, "runjson", "Bcm")) == {0x1000: 2, 0x1008: 1}
    assert dict(ins.costs_by_address(out, "runjson", "Bim")) == {0x1008: 1}


@pytest.mark.parametrize("argv, message", [
    (["D", "--lines", "5", "--lines-by", "Bcm"], "--lines-by Bcm: needs --branches and --lines"),
    (["D", "--branches", "--lines-by", "Bim"], "--lines-by Bim: needs --branches and --lines"),
    (["D", "--branches", "--lines", "5", "--lines-by", "DLmr"], "--lines-by DLmr: needs --cache and --lines"),
])
def test_ranking_by_an_event_not_simulated_is_one_clear_line(argv, message, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["instructions.py", *argv])
    with pytest.raises(SystemExit) as exit_info:
        ins.main()
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def _sysfs(tmp_path, caches):
    """A fake /sys/devices/system/cpu/cpu0/cache with the given caches."""
    for i, (level, kind, size, ways) in enumerate(caches):
        d = tmp_path / f"index{i}"
        d.mkdir(parents=True)
        for name, value in (("level", level), ("type", kind), ("size", size),
                            ("ways_of_associativity", ways), ("coherency_line_size", 64)):
            (d / name).write_text(f"{value}\n")
    return tmp_path


def test_the_host_caches_are_read_from_sysfs_skipping_the_instruction_cache(tmp_path):
    # An AMD EPYC of family 25 as this repository's third host reports it.
    sysfs = _sysfs(tmp_path, [(1, "Data", "32K", 8), (1, "Instruction", "32K", 8),
                              (2, "Unified", "512K", 8), (3, "Unified", "32768K", 16)])
    assert ins.host_cache_geometry("l2", sysfs) == ("--D1=32768,8,64", "--LL=524288,8,64")
    assert ins.host_cache_geometry("llc", sysfs) == ("--D1=32768,8,64", "--LL=33554432,16,64")


def test_a_cache_callgrind_cannot_simulate_is_one_clear_line(tmp_path):
    # 30 MB in 20 ways of 64 bytes is 24 576 sets: not a power of two.
    sysfs = _sysfs(tmp_path, [(1, "Data", "48K", 12), (2, "Unified", "30M", 20)])
    with pytest.raises(SystemExit, match=r"the L2 cache \(31457280 bytes, 20 ways, 64-byte lines\) has 24576 sets; callgrind needs a power of two"):
        ins.host_cache_geometry("l2", sysfs)
    with pytest.raises(SystemExit, match="describes no L1 data cache and a level below it"):
        ins.host_cache_geometry("l2", _sysfs(tmp_path / "only-l1", [(1, "Data", "48K", 12)]))
