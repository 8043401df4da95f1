"""`aqmlab bench`: JSON fields and deterministic work counts (no timing asserts:
speed belongs in the benchmark itself)."""

from __future__ import annotations

import json
from pathlib import Path

import aqmlab
from aqmlab.bench import ACCESS, ACCESS_RATE, ALL_SCENARIOS, CHAINS, SCENARIOS, WORKLOADS, headline, scenario
from aqmlab.scenario import validate
from conftest import cli

FIELDS = {"name", "sim_s", "bottleneck_packets", "events", "wall_s", "pkts_per_s", "events_per_s", "peak_rss_mb"}


def _bench_json(tmp_path: Path, *args: str) -> list[dict]:
    proc = cli("bench", "--json", *args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_bench_json_fields_and_deterministic_work(tmp_path: Path) -> None:
    a = _bench_json(tmp_path, "--only", "A-10", "--only", "C-1000", "--repeat", "2", "--duration", "20ms")
    b = _bench_json(tmp_path, "--only", "A-10", "--only", "C-1000", "--duration", "20ms")
    assert [r["name"] for r in a] == ["A-10", "C-1000"]
    for r in a:
        assert FIELDS <= set(r)
        assert r["sim_s"] == 0.02 and r["events"] > 0 and r["bottleneck_packets"] > 0
        assert r["wall_s"] > 0 and r["pkts_per_s"] > 0 and r["events_per_s"] > 0 and r["peak_rss_mb"] > 1
    for x, y in zip(a, b, strict=True):
        assert (x["events"], x["bottleneck_packets"]) == (y["events"], y["bottleneck_packets"])


def test_every_bench_scenario_matches_its_definition() -> None:
    reg = aqmlab.registry()
    for name in SCENARIOS:
        s = scenario(name)
        assert s["metrics"]["timeseries"] is False
        assert headline(name) == ("hops" if name.startswith("D") else "pkts")
        if name.startswith("D"):
            n = validate(s)
            ft = n["topology"]["fat_tree"]
            k = 16 if name.startswith("D-1024") else 8
            if name == "D-codel":  # D, with CoDel marking on every port
                assert (ft["k"], ft["rate"], ft["delay"], ft["aqm"]) == (8, "10Gbps", "1us", "codel")
                assert ft["params"] == {"target": "20us", "interval": "200us", "ecn": True}
                assert n["duration"] == "50ms" and ft["buffer"] == "250pkt"
            else:
                assert (ft["k"], ft["rate"], ft["delay"], ft["aqm"]) == (k, "10Gbps", "1us", "step")
                assert n["duration"] == ("20ms" if k == 16 else "100ms")
                assert ft["params"]["threshold"] == "65pkt" and ft["buffer"] == "250pkt"
            assert n["tcp"]["delayed_ack"] is (not name.endswith("-ack1"))
            assert n["flows"][0]["pattern"] == "permutation" and n["flows"][0]["cc"] == "dctcp"
            w = n["workloads"][0]
            assert (w["kind"], w["every"], w["senders"], w["cc"]) == ("incast", "10ms", 32, "dctcp")
            continue
        if s["bottleneck"]["aqm"] not in reg["aqm"]:
            continue
        n = validate(s)
        assert n["tcp"]["delayed_ack"] is (not name.endswith("-ack1"))
        if name.startswith(("A", "C")):
            assert n["bottleneck"]["rate"] == "10Gbps" and n["duration"] == "10s"
            assert n["bottleneck"]["buffer"] == "250pkt" and n["bottleneck"]["params"]["threshold"] == "65pkt"
            assert n["tcp"]["mtu_bytes"] == 1500
            assert sum(f["count"] for f in n["flows"]) == int(name.split("-")[1])
            assert n["flows"][0]["rtt"] == "100us" and n["flows"][0]["start_jitter"] == "1ms"
        else:
            assert n["bottleneck"]["rate"] == "1Gbps" and n["duration"] == "30s"
            assert [f["cc"] for f in n["flows"]].count("cubic") == 100


def test_b_is_skipped_with_a_message_without_dualpi2(tmp_path: Path) -> None:
    if "dualpi2" in aqmlab.registry()["aqm"]:
        out = _bench_json(tmp_path, "--only", "B", "--duration", "20ms")
        assert [r["name"] for r in out] == ["B"]
        return
    proc = cli("bench", "--json", "--only", "B", cwd=tmp_path)
    assert proc.returncode == 0 and json.loads(proc.stdout) == []
    assert "B: skipped (needs AQM 'dualpi2'" in proc.stderr


def test_unknown_bench_name_is_exit_2(tmp_path: Path) -> None:
    proc = cli("bench", "--only", "Z", cwd=tmp_path)
    assert proc.returncode == 2 and "aqmlab: error: --only: unknown benchmark 'Z'" in proc.stderr


def test_metric_sets_change_the_cost_not_the_simulation(tmp_path: Path) -> None:
    """--metrics off/samples record less/more, but the packets simulated are the same."""
    runs = {m: _bench_json(tmp_path, "--only", "A-10", "--duration", "20ms", "--metrics", m) for m in ("default", "off", "samples")}
    work = {m: (r[0]["events"], r[0]["bottleneck_packets"], r[0]["metrics"]) for m, r in runs.items()}
    assert {w[:2] for w in work.values()} == {work["default"][:2]}, work
    assert [w[2] for w in work.values()] == ["default", "off", "samples"]
    proc = cli("bench", "--metrics", "all", cwd=tmp_path)
    assert proc.returncode == 2 and "--metrics" in proc.stderr and "default" in proc.stderr


def test_repeats_are_interleaved_and_report_their_range(tmp_path: Path) -> None:
    """Round 1 runs every scenario once, then round 2: a slow spell of a
    shared machine hits all scenarios alike. Each result gives the range of
    its runs and the hypervisor's steal share (None off Linux)."""
    proc = cli("bench", "--json", "--only", "A-10", "--only", "C-10", "--repeat", "2", "--duration", "20ms", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    order = [line.split(" run ")[0] for line in proc.stderr.splitlines() if " run " in line]
    assert order == ["A-10", "C-10", "A-10", "C-10"]
    for r in json.loads(proc.stdout):
        assert r["repeat"] == 2
        assert r["pkts_per_s_min"] <= r["pkts_per_s"] <= r["pkts_per_s_max"]
        assert r["steal_pct"] is None or 0 <= r["steal_pct"] <= 100


def test_rate_override_changes_every_bottleneck_and_a_bad_one_names_the_option(tmp_path: Path) -> None:
    """--rate (the link-rate scaling table of docs/performance.md) replaces the
    bottleneck rate: a full link carries rate × time / 1500 B, so a tenth of
    the rate carries about a tenth of the packets over the same 20 ms."""
    assert scenario("C-1000", rate="40Gbps")["bottleneck"]["rate"] == "40Gbps"
    assert scenario("B", rate="2Gbps")["bottleneck"]["rate"] == "2Gbps"
    fast = _bench_json(tmp_path, "--only", "A-10", "--duration", "20ms")[0]["bottleneck_packets"]
    slow = _bench_json(tmp_path, "--only", "A-10", "--duration", "20ms", "--rate", "1Gbps")[0]["bottleneck_packets"]
    assert fast <= 10e9 * 0.02 / (1500 * 8) + 1 and slow <= 1e9 * 0.02 / (1500 * 8) + 1
    assert 0.09 < slow / fast < 0.11, (slow, fast)
    proc = cli("bench", "--only", "A-10", "--rate", "10Gbs", cwd=tmp_path)
    assert proc.returncode == 2 and "aqmlab: error: --rate: '10Gbs': unknown rate unit 'Gbs'" in proc.stderr


def test_peak_rss_is_the_childs_own_not_the_parents() -> None:
    """A parent holding 400 MB: the child's ru_maxrss as the parent sees it
    starts from that peak across fork+exec; the child's own VmHWM does not."""
    from aqmlab.bench import bench

    ballast = bytearray(400_000_000)
    ballast[::4096] = b"x" * len(ballast[::4096])  # touch every page: resident
    (r,) = bench(["A-10"], duration="20ms")
    assert r["peak_rss_mb"] < 300, r["peak_rss_mb"]
    del ballast


def test_fat_tree_bench_reports_packet_hops(tmp_path: Path) -> None:
    """D counts its work in packet-hops (data and ACKs leaving any queue);
    data packet-hops are its `bottleneck_packets`, a part of them."""
    (r,) = _bench_json(tmp_path, "--only", "D", "--duration", "2ms")
    assert r["name"] == "D" and r["sim_s"] == 0.002
    assert 0 < r["bottleneck_packets"] < r["packet_hops"]
    assert r["hops_per_s"] == r["packet_hops"] / r["wall_s"]
    assert r["events_per_hop"] == r["events"] / r["packet_hops"]


def test_a_chain_s_packets_cross_every_link_and_each_link_keeps_its_own_line() -> None:
    """chain-N (docs/performance.md, "Scaling with path length"): N links in
    a row and N back, every flow from one end to the other, so each data
    packet leaves all N forward queues and each ACK all N queues back; a
    queue can hold back at most its buffer and what is on one line. Every
    link's delay is its own, so that no two queues share a delay line (one
    event per packet-hop, as in a fat tree), and every length moves about as
    many packet-hops (6.4 s / N simulated)."""
    for name in CHAINS:
        n = int(name.removeprefix("chain-"))
        s = validate(scenario(name))
        links = s["topology"]["links"]
        assert len(links) == 2 * n and headline(name) == "hops"
        assert len({link["delay"] for link in links}) == 2 * n and not any(link["duplex"] for link in links)
        assert {(link["rate"], link["aqm"], link["buffer"]) for link in links[:n]} == {("10Gbps", "step", "250pkt")}
        assert [(f["src"], f["dst"], f["count"], f["cc"]) for f in s["flows"]] == [("src", "dst", 10, "dctcp")]
        assert aqmlab.scenario.duration_s(s["duration"]) * n == 6.4
    assert {q["rate"] for q in scenario("chain-16", rate="1Gbps")["topology"]["links"]} == {"1Gbps"}
    r = aqmlab.run(scenario("chain-4", "20ms"))
    departures = {q["name"]: q["departures"] for q in r.summary["queues"]}
    forward = [departures[name] for name in ("src->r1", "r1->r2", "r2->r3", "r3->dst")]
    back = [departures[name] for name in ("dst->r3", "r3->r2", "r2->r1", "r1->src")]
    for path in (forward, back):  # in the order the packets cross them
        assert path[0] > 5_000 and all(0 <= a - b <= 250 + 2 for a, b in zip(path, path[1:])), path
    assert r.perf["packet_hops"] == sum(departures.values())
    # One line arrival per packet-hop, less those still on a line at the
    # end (a queue with departure lookahead puts a packet on its line up to
    # a buffer ahead): each line is fed by one queue. When a link's two
    # directions shared one (duplex links, equal delays), ACKs entering
    # ahead of queued data re-armed its event: 1.087 arrivals per hop.
    arrivals, hops = r.perf["events_by_kind"]["line_arrival"], r.perf["packet_hops"]
    assert hops - 8 * (250 + 2) <= arrivals <= hops, (arrivals, hops)


def test_a_graph_s_equal_delay_links_each_keep_their_own_line() -> None:
    """In a graph, queues whose links have the same delay no longer share a
    delay line (`net::route::compile`, stop 55): a shared line popped
    several packets at one event and sorted every entry, 1.47 times slower
    on chain-16 with every delay 1 µs (docs/performance.md). With a line
    per queue every packet-hop is one line arrival, less the packets still
    on a line at the end; shared, this run had 15 511 arrivals fewer than
    its 98 137 packet-hops."""
    s = scenario("chain-16", "5ms")
    for link in s["topology"]["links"]:
        link["delay"] = "1us"
    r = aqmlab.run(s)
    arrivals, hops = r.perf["events_by_kind"]["line_arrival"], r.perf["packet_hops"]
    assert hops - 32 * (250 + 2) <= arrivals <= hops, (arrivals, hops)


def test_every_ack1_scenario_is_its_base_with_delayed_acks_off() -> None:
    """A-10-ack1 ... D-1024-ack1 are derived from A-10 ... D-1024, not written
    a second time: the trees differ in the one key (and the name)."""
    ack1 = [n for n in SCENARIOS if n.endswith("-ack1")]
    assert ack1 == ["A-10-ack1", "A-100-ack1", "D-ack1", "D-1024-ack1"]
    for name in ack1:
        s, base = scenario(name), scenario(name.removesuffix("-ack1"))
        assert s["tcp"].pop("delayed_ack") is False and "delayed_ack" not in base["tcp"]
        assert s.pop("name") == base.pop("name") + "-ack1"
        assert s == base, name


def test_an_access_benchmark_is_its_dumbbell_with_a_queue_per_flow_that_departs_on_arrival() -> None:
    """A-10-access and C-10000-access are A-10 and C-10000 with one key
    more, `access_rate`: each flow gets a tail-drop FIFO of its own, made
    with the flow. A FIFO decides on arrival, so the access queues take
    departure lookahead as the bottleneck does, and no queue of the run has
    an end-of-transmission event; before stop 56 they were made after the
    shortcuts were handed out, and A-10-access ran one such event per
    packet (20.9 M events for 8.3 M packets, against 12.6 M since)."""
    assert ACCESS == ("A-10-access", "C-10000-access")
    for name in ACCESS:
        s, base = scenario(name), scenario(name.removesuffix("-access"))
        assert s["bottleneck"].pop("access_rate") == ACCESS_RATE and "access_rate" not in base["bottleneck"]
        assert s.pop("name") == base.pop("name") + "-access"
        assert s == base, name
    r = aqmlab.run(scenario("A-10-access", "20ms"))
    by_kind = r.perf["events_by_kind"]
    assert r.perf["bottleneck_packets"] > 10_000 and by_kind.get("link_tx_done", 0) == 0, by_kind
    # A packet crosses its access queue's line, then the bottleneck's: about
    # one line arrival per packet more than A-10's half (an ACK per two).
    assert 1.3 < by_kind["line_arrival"] / r.perf["bottleneck_packets"] < 1.6, by_kind


def test_fat_tree_ack1_sends_an_ack_for_every_data_packet(tmp_path: Path) -> None:
    """D's receivers delay ACKs (RFC 5681 §4.2: at least one ACK for every
    second full-sized segment), so D's ACK packet-hops are about half its data
    packet-hops; D-ack1's about as many. A data packet and its ACK cross
    paths of the same length (a fat tree's paths between two hosts are),
    so ACK hops / data hops is ACKs / data packets, less the data still in
    flight when the run stops: a few per cent of 2 ms of traffic."""
    rows = {r["name"]: r for r in _bench_json(tmp_path, "--only", "D", "D-ack1", "--duration", "2ms", "-q")}
    per_data = {n: (r["packet_hops"] - r["bottleneck_packets"]) / r["bottleneck_packets"] for n, r in rows.items()}
    assert 0.9 < per_data["D-ack1"] <= 1.0, per_data
    assert per_data["D"] < 0.55, per_data  # 0.5, plus the ACKs sent at once (out of order, CE changes)
    for r in rows.values():  # a fat tree's headline and range: packet-hops
        assert r["headline"] == "hops_per_s" and r["hops_per_s_min"] <= r["hops_per_s"] <= r["hops_per_s_max"]


def test_the_workload_benchmarks_sample_a_web_workload_with_and_without_access_links() -> None:
    """W and W-access (on request) are the long web workload of
    docs/performance.md ("Workload flows over long runs"), with time series
    on, since a sample's cost as flows accumulate is what they measure; the
    second differs by `access_rate` alone. Over 2 s, Poisson arrivals at
    2 000 per second start 4 000 flows, within six standard deviations, and
    every one is in the flows table and has time-series rows."""
    assert WORKLOADS == ("W", "W-access")
    s, base = scenario("W-access"), scenario("W")
    assert s["bottleneck"].pop("access_rate") == ACCESS_RATE and s.pop("name") == base.pop("name") + "-access"
    assert s == base and base["metrics"]["timeseries"] is True and scenario("A-10")["metrics"]["timeseries"] is False
    r = aqmlab.run(scenario("W-access", "2s"))
    flows = set(r.flows["id"])
    assert abs(len(flows) - 4_000) < 6 * 4_000**0.5, len(flows)
    assert set(r.timeseries["flow"]) == flows


def test_the_fingerprint_script_shortens_every_bench_scenario() -> None:
    """scripts/summary_fingerprint.py proves that a change of the engine
    leaves every benchmark's results bit-identical, those on request too.
    Scenarios added to the benchmark without a shortened length there once
    crashed it (found at stop 38): every scenario needs one, and no stale
    name may stay."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "scripts/summary_fingerprint.py"
    spec = importlib.util.spec_from_file_location("_fingerprint", path)
    assert spec and spec.loader
    fp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fp)
    assert set(fp.BENCH_DURATION) == set(ALL_SCENARIOS)
