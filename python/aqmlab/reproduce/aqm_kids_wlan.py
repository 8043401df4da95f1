"""The 802.11 slides of seed 002 (slides 12-14), a part of the aqm-kids
experiment: a shared half-duplex WLAN medium (docs/algorithms/wlan.md) with
the AQM on the access point's queue, 802.11g, target 5 ms, 4 senders with
1/4/8/16 flows each, downlink and mixed up/downlink traffic, 180 s runs;
CoDel, PIE and ARED with the wired cases' parameters (see "802.11 WLAN" in
docs/results/aqm-kids.md). Judged: ARED's uplink goodput with mixed traffic
(the seed's 'Conclusive Remarks') and the uplink's ACK loss at ARED's queue
(slide 14).
"""

from __future__ import annotations

import math
from typing import Any

from aqmlab.judging import Band, Tolerance
from aqmlab.reproduce.framework import Case, Claim, Runs, queue_of

DOC = "docs/results/aqm-kids.md"
SRC = "seed 002, 'Conclusive Remarks'"
#: The AQMs of the 802.11 slides: the seed's three (aqm_kids.SEED_AQMS).
AQMS = ("codel", "pie", "ared")
#: Goodput per 5 s interval, as the seed (and the wired cases).
GOODPUT_INTERVAL = "5s"

WLAN_MIXES = ("down", "mixed")
WLAN_PER_SENDER = (1, 4, 8, 16)
WLAN_SENDERS = 4
WLAN_TARGET_MS = 5
#: 802.11g's highest PHY rate; the seed gives no rate trace (Minstrel ran).
WLAN_PHY = "54Mbps"
#: "We use TCP max achievable BW for testing (e.g. 27 Mbps in .11g)".
WLAN_AQM_RATE = "27Mbps"
#: Stations behind the stations' queue (DCF: equal access per station). The
#: seed's 4 wireless stations first (judged), plain alternation (shown).
WLAN_STATIONS = (4, 1)
WLAN_DURATION_S = 180  # "60/180/300 sec (wired/wireless/RTT 500 ms)"
WLAN_WARMUP_S = 20  # our choice


def uplink_goodput(s: dict[str, Any]) -> float:
    return sum(f["goodput_bps"] or 0.0 for f in s["flows"] if f["label"] == "up")


def downlink_goodput(s: dict[str, Any]) -> float:
    return sum(f["goodput_bps"] or 0.0 for f in s["flows"] if f["label"] == "down")


def uplink_ack_loss(s: dict[str, Any]) -> float | None:
    """Share of the uplink flows' ACKs the AP's queue dropped (their only queue)."""
    up = [f for f in s["flows"] if f["label"] == "up"]
    dropped = sum(f["ack_drops"] for f in up)
    sent = dropped + sum(f["acks_received"] for f in up)
    return dropped / sent if sent else None


def wlan_queue(s: dict[str, Any], which: str = "wlan") -> dict[str, Any]:
    return queue_of(s, which)


def scenario(exp: Any, aqm: str, mix: str, per_sender: int, stations: int) -> dict[str, Any]:
    """The seed's 802.11 setup: wired senders 50 ms from the AP, the AP's
    queue (the AQM) and the stations' FIFO sharing one 802.11g medium."""
    engine, params = exp.aqm_params(aqm, WLAN_TARGET_MS)
    down = WLAN_SENDERS if mix == "down" else WLAN_SENDERS // 2
    flows = [{"cc": "reno", "label": "down", "count": down * per_sender, "src": "wired", "dst": "sta",
              "start_jitter": "2s"}]  # fmt: skip
    if mix == "mixed":
        flows.append({"cc": "reno", "label": "up", "count": (WLAN_SENDERS - down) * per_sender, "src": "sta",
                      "dst": "wired", "start_jitter": "2s"})  # fmt: skip
    return {
        "name": f"aqm-kids-wlan-{mix}-{aqm}-{per_sender}x{WLAN_SENDERS}-stations-{stations}",
        "duration": f"{WLAN_DURATION_S}s",
        "warmup": f"{WLAN_WARMUP_S}s",
        "topology": {"links": [
            {"from": "wired", "to": "ap", "delay": "50ms"},
            {"from": "ap", "to": "sta", "name": "wlan", "rate": WLAN_PHY, "buffer": "1000pkt", "aqm": engine,
             "params": params, "wlan": {"aqm_rate": WLAN_AQM_RATE, "stations": stations}},
        ]},
        "flows": flows,
        "metrics": {"interval": "500ms", "goodput_interval": GOODPUT_INTERVAL},
    }  # fmt: skip


def grid(quick: bool) -> list[tuple[str, int, int]]:
    """(mix, flows per sender, stations). Quick: downlink at the extremes
    (1 and 16 per sender); mixed at all four, since 4 and 8 per sender
    (16 and 32 flows) are the ACK-loss claim's own cases."""
    out = []
    for mix in WLAN_MIXES:
        counts = (1, 16) if quick and mix == "down" else WLAN_PER_SENDER
        out += [(mix, n, st) for n in counts for st in WLAN_STATIONS]
    return out


def cases(exp: Any, quick: bool) -> list[Case]:
    """The 802.11 cases. They carry no rtt_ms/ecn/flows tags, so the wired
    claims' scopes never select them."""
    return [
        Case(f"wlan-{mix}/{aqm}/{n}x{WLAN_SENDERS}/stations-{st}", scenario(exp, aqm, mix, n, st),
             {"aqm": aqm, "target_ms": WLAN_TARGET_MS, "medium": mix, "per_sender": n, "stations": st})  # fmt: skip
        for aqm in AQMS
        for mix, n, st in grid(quick)
    ]


def claims() -> list[Claim]:
    def ared_mixed_uplink(g: dict[str, Case], runs: Runs) -> float:
        up = {a: runs.mean(g[a].label, uplink_goodput) for a in AQMS}
        return up["ared"] / max(up["codel"], up["pie"])

    return [
        Claim("802.11, mixed up- and downlink traffic at 5 ms: ARED gives the uplink less goodput than the better "
              "of CoDel and PIE", "ARED worse with mixed traffic",
              Tolerance(Band.at_most(1.0), "qualitative", f"{SRC}: 'ARED only performed worse than CoDel or PIE "
                        "in few scenarios: [...] 2. Public Wi-Fi with mixed (up- and down-link) traffic'; the mixed "
                        f"slide shows the uplink's stats: uplink goodput ARED / best of CoDel, PIE ({DOC}#bands)"),
              lambda runs: runs.per_group(["medium", "per_sender", "stations"], lambda g: ared_mixed_uplink(g, runs),
                                          "aqm", aqm=AQMS, medium="mixed", stations=WLAN_STATIONS[0]), "×"),
        Claim("802.11, mixed traffic: ARED's queue at the AP drops most of the uplink's ACKs with 16 and 32 flows",
              "65 % / 70 % ACK loss at 16 / 32 flows",
              Tolerance(Band.at_least(0.5), "seed", "seed 002 slide 14 (mixed traffic): '65%/ 70% ACK loss at AQM "
                        "(ARED) router for 16/32 flows'; judged as its direction, most ACKs lost (single figures "
                        f"with no spread; the model has no collisions, retries or rate adaptation) ({DOC}#bands)"),
              lambda runs: runs.per_case(uplink_ack_loss, aqm="ared", medium="mixed", stations=WLAN_STATIONS[0],
                                         per_sender=[4, 8]), ""),
    ]  # fmt: skip


def figure(runs: Runs, colors: dict[str, str]) -> Any:
    """Slides 13-14's layout: per flow count per sender, the AP queue's
    delay (box p10-p90, line p50) and goodput (downlink for the downlink
    scenario, uplink for the mixed one, as the seed plots them)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 7), layout="constrained")
    width = 0.8 / len(AQMS)
    for row, mix in enumerate(WLAN_MIXES):
        counts = sorted({c.tags["per_sender"] for c in runs.select(medium=mix)})
        gp_fn = downlink_goodput if mix == "down" else uplink_goodput
        for i, aqm in enumerate(AQMS):
            for j, n in enumerate(counts):
                cs = runs.select(medium=mix, aqm=aqm, per_sender=n, stations=WLAN_STATIONS[0])
                if not cs:
                    continue
                x = j + (i - (len(AQMS) - 1) / 2) * width
                lo, mid, hi = (runs.mean(cs[0].label, lambda s, p=p: wlan_queue(s)["sojourn_ms"][p])
                               for p in ("p10", "p50", "p90"))  # fmt: skip
                axes[row][0].bar(x, hi - lo, width * 0.9, bottom=lo, color=colors[aqm], alpha=0.8,
                                 label=aqm if j == 0 else None)  # fmt: skip
                axes[row][0].plot([x - width * 0.45, x + width * 0.45], [mid, mid], color="k", lw=1)
                axes[row][1].bar(x, runs.mean(cs[0].label, gp_fn) / 1e6, width * 0.9, color=colors[aqm],
                                 label=aqm if j == 0 else None)  # fmt: skip
        for col, yl in enumerate(("AP queue sojourn (ms)\nbox p10-p90, line p50",
                                  f"{'downlink' if mix == 'down' else 'uplink'} goodput (Mbit/s)")):  # fmt: skip
            ax = axes[row][col]
            ax.set_xticks(range(len(counts)), [str(n) for n in counts])
            ax.set(xlabel="flows per sender (4 senders)", ylabel=yl, title=f"802.11 {mix}, target 5 ms")
            ax.grid(alpha=0.3, axis="y")
        axes[row][0].legend(fontsize="x-small")
    fig.suptitle(f"802.11g medium model, stations = {WLAN_STATIONS[0]}, base RTT 100 ms")
    return fig


def table(runs: Runs) -> str:
    """802.11 cases: goodput each way, the AP's and the stations' queue
    delay, drops at the AP, the uplink's ACK loss (means over seeds)."""
    rows = ["| traffic | flows per sender | stations | AQM | downlink goodput (Mbit/s) | uplink goodput (Mbit/s) | "
            "AP queue sojourn p10 / p50 / p90 (ms) | stations' queue p50 (ms) | AP drop % | uplink ACK loss % |",
            "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    order = {a: i for i, a in enumerate(AQMS)}
    cases = sorted(runs.select(medium=list(WLAN_MIXES)),
                   key=lambda c: (c.tags["medium"], -c.tags["stations"], c.tags["per_sender"], order[c.tags["aqm"]]))  # fmt: skip
    for c in cases:
        def m(fn: Any) -> float:
            return runs.mean(c.label, fn)

        ap = [m(lambda s, p=p: wlan_queue(s)["sojourn_ms"][p]) for p in ("p10", "p50", "p90")]
        st = m(lambda s: wlan_queue(s, "wlan:rev")["sojourn_ms"]["p50"])
        loss = m(uplink_ack_loss) if c.tags["medium"] == "mixed" else math.nan
        rows.append(f"| {c.tags['medium']} | {c.tags['per_sender']} | {c.tags['stations']} | {c.tags['aqm']} | "
                    f"{m(downlink_goodput) / 1e6:.2f} | {m(uplink_goodput) / 1e6:.2f} | "
                    f"{ap[0]:.1f} / {ap[1]:.1f} / {ap[2]:.1f} | {st:.0f} | "
                    f"{100 * m(lambda s: wlan_queue(s)['drop_rate']):.2f} | "
                    f"{'' if math.isnan(loss) else f'{100 * loss:.1f}'} |")  # fmt: skip
    return "\n".join(rows) + "\n"
