"""`[metrics] pcap`: the capture read back with real readers (dpkt, and
Debian's tshark when installed) against the engine's own record of the
same run: dequeue times and flows (the raw sojourn samples), marks and
drops per flow (the flow table), segment numbers (the flow's size)."""

import shutil
import subprocess
from collections import Counter, defaultdict

import pytest

import aqmlab

dpkt = pytest.importorskip("dpkt")

MSS = 1448


def _packets(data: bytes) -> list[tuple[int, object, int]]:
    """(time ns, IPv4 packet, original length) for each record."""
    import io

    rd = dpkt.pcap.Reader(io.BytesIO(data))
    assert rd.datalink() == 101  # LINKTYPE_RAW (dpkt: DLT_RAW on Linux is 101 in the file)
    out = []
    for ts, buf in rd:
        out.append((int(ts * 1_000_000_000), dpkt.ip.IP(buf), None))  # ns pcap: dpkt gives a Decimal
    return out


def _fifo_run(**pcap):
    return aqmlab.run({
        "duration": "4s", "warmup": "1s", "seed": 3,
        "bottleneck": {"rate": "10Mbps", "buffer": "30ms", "aqm": "fifo", "reverse": {"rate": "10Mbps"}},
        "flows": [{"cc": "cubic", "rtt": "20ms", "size": "1MB"}, {"cc": "cubic", "rtt": "30ms"},
                  {"cc": "probe", "rtt": "20ms"}],
        "metrics": {"sojourn_samples_every": 1, "pcap": pcap},
    })  # fmt: skip


def test_dequeue_capture_is_the_queues_departures_flow_by_flow() -> None:
    r = _fifo_run(max_packets=1_000_000)
    pk = _packets(r.files["capture.pcap"])
    soj = r.sojourn_samples
    soj = soj[soj["queue"] == "bottleneck"]
    # Flow of a record: the sender's address 10.1.x.y (data), receiver's 10.2.x.y (replies).
    flow_of = lambda ip: ip.src[2] * 256 + ip.src[3] if ip.src[1] == 1 else ip.dst[2] * 256 + ip.dst[3]  # noqa: E731
    got = defaultdict(list)
    for t, ip, _ in pk:
        got[flow_of(ip)].append(t)
    want = {f: g["t_ns"].tolist() for f, g in soj.groupby("flow")}
    assert set(got) == set(want)
    for f in want:  # same dequeue instants, to the nanosecond, in the same order
        assert got[f] == want[f], f
    # Sizes: the IP total length is the simulated size (segments, the 1 MB flow's last one of
    # 1e6 - 690 * 1448 = 880 B + 52 B headers, probes, SYNs); the capture keeps headers only.
    assert {ip.len for _, ip, _ in pk} == {1500, 932, 84, 64}


def test_sequence_numbers_and_drops_round_trip() -> None:
    r = _fifo_run(max_packets=1_000_000)
    flows = r.flows.set_index("id")
    pk = _packets(r.files["capture.pcap"])
    data = defaultdict(list)
    for _, ip, _ in pk:
        if ip.p == 6 and ip.src[1] == 1 and len(ip.data.data) == 0 and ip.len > 100:
            data[ip.src[3]].append(ip.data.seq)
    # The finite flow (1 MB = 691 segments) completed: every segment crossed the queue.
    assert flows.loc[0, "fct_ns"] > 0
    nseg = -(-1_000_000 // MSS)
    assert set(data[0]) == {1 + k * MSS for k in range(nseg)}
    # Segments captured = segments sent - the queue's drops of that flow (no ACK crosses it),
    # less, for the unbounded flow, what was still queued at the end (at most the 30 ms buffer: 25 packets).
    drops = r.pcap_drops
    assert len(data[0]) == flows.loc[0, "segs_sent"] - flows.loc[0, "drops"]
    assert 0 <= flows.loc[1, "segs_sent"] - flows.loc[1, "drops"] - len(data[1]) <= 25 + 1
    for f in (0, 1):
        assert (drops["flow"] == f).sum() == flows.loc[f, "drops"]
    # Every dropped segment is retransmitted later: its sequence number reappears.
    d0 = drops[(drops["flow"] == 0) & (drops["kind"] == "data")]
    assert set(d0["seq"]) <= set(data[0])
    assert set(drops["reason"]) <= {"overflow"}


def test_reverse_queue_capture_has_the_cumulative_acks() -> None:
    r = _fifo_run(queue="bottleneck_rev")
    acks = defaultdict(list)
    for _, ip, _ in _packets(r.files["capture.pcap"]):
        if ip.p == 6:
            assert ip.data.flags & dpkt.tcp.TH_ACK
            acks[ip.dst[3]].append(ip.data.ack)
    a0 = acks[0]
    assert a0 == sorted(a0)  # cumulative ACKs never go back
    assert a0[-1] == 1 + 1_000_000  # the last ACK acknowledges the whole 1 MB (ISN 0, SYN counts 1)


def test_dualpi2_capture_carries_each_flows_ecn_codepoint_and_the_marks() -> None:
    r = aqmlab.run({
        "duration": "3s", "warmup": "1s",
        "bottleneck": {"rate": "10Mbps", "buffer": "100ms", "aqm": "dualpi2"},
        "flows": [{"cc": "prague", "rtt": "20ms"}, {"cc": "cubic", "rtt": "20ms", "ecn": "classic"},
                  {"cc": "cubic", "rtt": "20ms", "ecn": "off"}, {"cc": "probe", "rtt": "20ms", "ecn": "l4s"}],
        "metrics": {"pcap": {"max_packets": 1_000_000}},
    })  # fmt: skip
    by = defaultdict(Counter)
    for _, ip, _ in _packets(r.files["capture.pcap"]):
        f = ip.src[3] if ip.src[1] == 1 else ip.dst[3]
        by[f][ip.tos & 3] += 1
    # Prague data: ECT(1) or CE; classic CUBIC: ECT(0) or CE; CUBIC without ECN: Not-ECT (its SYN too);
    # the L4S probe: ECT(1) or CE. The handshake's SYN is Not-ECT for every TCP flow (RFC 3168 §6.1.1).
    assert set(by[0]) <= {0, 1, 3} and by[0][1] > 100
    assert set(by[1]) <= {0, 2, 3} and by[1][2] > 100
    assert set(by[2]) == {0}
    assert set(by[3]) <= {1, 3}
    # CE marks in the capture = the queue's marks of each flow (all at this queue).
    marks = r.flows.set_index("id")["marks"]
    for f in range(4):
        assert by[f][3] == marks[f], f


def test_capture_is_deterministic_and_independent_of_lookahead() -> None:
    a = _fifo_run(max_packets=3000)
    b = _fifo_run(max_packets=3000)
    assert a.files["capture.pcap"] == b.files["capture.pcap"]
    s = {"duration": "2s", "bottleneck": {"rate": "10Mbps", "buffer": "20ms"}, "flows": [{"cc": "reno", "rtt": "20ms"}],
         "metrics": {"pcap": {}}}  # fmt: skip
    on = aqmlab.run(s)
    off = aqmlab.run({**s, "engine": {"lookahead": False}})
    assert on.files["capture.pcap"] == off.files["capture.pcap"]
    assert len(_packets(on.files["capture.pcap"])) > 1000


def test_max_packets_bounds_the_capture_and_pcap_is_off_by_default() -> None:
    r = _fifo_run(max_packets=100)
    assert len(_packets(r.files["capture.pcap"])) == 100
    plain = aqmlab.run({"duration": "1s", "bottleneck": {"rate": "10Mbps"}, "flows": [{"cc": "reno", "rtt": "20ms"}]})
    assert plain.files == {} and plain.pcap_drops.empty


def test_bad_pcap_keys_are_one_line() -> None:
    base = {"duration": "1s", "bottleneck": {"rate": "10Mbps"}, "flows": [{"cc": "reno", "rtt": "20ms"}]}
    with pytest.raises(aqmlab.ScenarioError, match=r"metrics\.pcap\.queue: unknown queue 'botleneck' \(did you mean 'bottleneck'"):
        aqmlab.run({**base, "metrics": {"pcap": {"queue": "botleneck"}}})
    with pytest.raises(aqmlab.ScenarioError, match=r"metrics\.pcap\.direction: unknown direction 'out'"):
        aqmlab.run({**base, "metrics": {"pcap": {"direction": "out"}}})


def test_saved_run_has_the_capture_and_the_drops_csv(tmp_path) -> None:
    r = _fifo_run(max_packets=2000)
    r.save(tmp_path, plots=False, report=False)
    assert (tmp_path / "capture.pcap").read_bytes() == r.files["capture.pcap"]
    back = aqmlab.Result.load(tmp_path)
    assert back.files["capture.pcap"] == r.files["capture.pcap"]
    assert back.pcap_drops["seq"].tolist() == r.pcap_drops["seq"].tolist()
    text = (tmp_path / "capture_drops.csv").read_text().splitlines()
    assert text[0] == "t_ns,flow,kind,seq,ecn,reason"
    assert len(text) == len(r.pcap_drops) + 1


@pytest.mark.skipif(shutil.which("tshark") is None, reason="Debian's tshark is not installed")
def test_tshark_reads_the_dualpi2_capture_with_its_ecn_fields(tmp_path) -> None:
    r = aqmlab.run({
        "duration": "2s",
        "bottleneck": {"rate": "10Mbps", "aqm": "dualpi2"},
        "flows": [{"cc": "prague", "rtt": "20ms"}, {"cc": "cubic", "rtt": "20ms", "ecn": "classic"}],
        "metrics": {"pcap": {"max_packets": 1000}},
    })  # fmt: skip
    p = tmp_path / "dualpi2.pcap"
    p.write_bytes(r.files["capture.pcap"])
    # The command docs/results.md shows.
    out = subprocess.run(["tshark", "-r", str(p), "-T", "fields", "-E", "separator=,", "-e", "frame.time_epoch",
                          "-e", "ip.src", "-e", "ip.dsfield.ecn", "-e", "tcp.seq_raw", "-e", "ip.len"],
                         capture_output=True, text=True, check=True, timeout=120)  # fmt: skip
    rows = [line.split(",") for line in out.stdout.splitlines()]
    ref = _packets(r.files["capture.pcap"])
    assert len(rows) == len(ref) == 1000
    for (t, ip, _), (tt, src, ecn, seq, ln) in zip(ref, rows, strict=True):
        assert abs(float(tt) * 1e9 - t) < 1e3  # tshark prints µs..ns; the float loses below that
        assert src == ".".join(map(str, ip.src))
        assert int(ecn) == ip.tos & 3
        assert int(seq) == ip.data.seq
        assert int(ln) == ip.len
    ecns = Counter(int(row[2]) for row in rows)
    assert ecns[1] > 0 and ecns[2] > 0  # ECT(1) from Prague, ECT(0) from classic CUBIC


def test_fat_tree_port_capture_and_a_bad_port_name() -> None:
    """A fat tree names its ports as the world builds them: the capture of a
    host's NIC holds that host's packets; a wrong name is one line."""
    base = {"duration": "200ms",
            "topology": {"fat_tree": {"k": 4, "rate": "1Gbps", "delay": "1us", "buffer": "100pkt"}},
            "flows": [{"cc": "dctcp", "src": "h0", "dst": "h5"}, {"cc": "dctcp", "src": "h1", "dst": "h9"}]}  # fmt: skip
    r = aqmlab.run({**base, "metrics": {"pcap": {"queue": "h0->e0.0", "max_packets": 500}}})
    pk = _packets(r.files["capture.pcap"])
    assert len(pk) == 500 and {tuple(ip.src) for _, ip, _ in pk} == {(10, 1, 0, 0)}  # only flow 0's sender
    with pytest.raises(aqmlab.ScenarioError, match=r"^metrics\.pcap\.queue: no queue 'h0->e9' \(queues are named"):
        aqmlab.run({**base, "metrics": {"pcap": {"queue": "h0->e9"}}})
