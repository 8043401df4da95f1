"""QCN scalability grid after seed 003 ("Scalability, Stability"): N sources
share a 10 Gbit/s link from equal starting rates, RTT 40-400 µs, buffer 100
packets, Q_eq 22 packets; the seed's RP settings (R_AI 25 Mbit/s, Fb-hat
saturated at 31, 50/100-packet cycles in FR and AI).

    python examples/qcn_scalability.py [--n 10,50,100] [--rtt-us 40,400]
        [--w 2] [--fb-range-w W] [--efr] [--no-fbhat] [--duration 1s] [--seeds 1]

Prints, per (N, RTT, seed), over [warm-up, duration] (default 1-3 s):
utilisation, mean and standard deviation of the
queue (1 ms samples) after the warm-up, drops after the warm-up, Jain's index
over the sources' goodput, and the shares of sources whose limiter is in
Fast Recovery (no TR change since the last CNM) vs increasing.

Starting rates: the seed gives "Starting rate of each source = 100/N G";
aqmlab models that as each source's line (maximum) rate, where its limiter
starts on the first CNM (the RP has no separate initial rate). The grid
points are the qcn-hotspot reproduction's (`aqmlab reproduce qcn-hotspot`
judges them per (N, RTT)); this script varies what the reproduction fixes.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import aqmlab
from aqmlab import Bottleneck, FlowGroup, Scenario
from aqmlab.reproduce.qcn import grid_scenario

PKT_BITS = 1500 * 8


def scenario(n: int, rtt_us: float, *, w: float = 2.0, fb_range_w: float | None = None, efr: bool = False,
             fbhat: bool = True, duration: str = "3s", warmup: str = "1s", seed: int = 1) -> Scenario:
    """The seed's scalability case for N sources at one RTT: the qcn-hotspot
    reproduction's own grid point (`aqmlab.reproduce.qcn.grid_scenario`), with
    this script's variations on top."""
    d = grid_scenario(n, rtt_us, w)
    if fb_range_w is not None:
        d["bottleneck"]["params"]["fb_range_w"] = fb_range_w
    d["flows"][0]["params"].update({"fbhat": fbhat, "extra_fast_recovery": efr})
    d.update(duration=duration, warmup=warmup, seed=seed)
    d["metrics"] = {"interval": "1ms"}
    return Scenario.from_dict(d)


def hotspot(*, efr: bool = False, fbhat: bool = True, seed: int = 1, drop_bps: str = "500Mbps") -> Scenario:
    """Seed 003's "0.5G Hotspot": 10 sources (1.05 Gbit/s line rate), a 10 Gbit/s link
    at `drop_bps` from 2 s to 4 s, RTT 40 µs, buffer 100 packets, Q_eq 22."""
    return Scenario(
        name="qcn-hotspot-recovery",
        duration="4.5s",
        warmup="3.5s",
        seed=seed,
        bottleneck=Bottleneck(rate="10Gbps", buffer="100pkt", aqm="qcn", params={"q_eq": "22pkt"},
                              rate_schedule=[{"at": "2s", "rate": drop_bps}, {"at": "4s", "rate": "10Gbps"}]),
        flows=[FlowGroup(cc="qcn", count=10, rtt="40us", rate="1.05Gbps", packet_size="1500B", start_jitter="100us",
                         params={"r_ai": "25Mbps", "halve_ai_cycles": False, "fbhat": fbhat,
                                 "extra_fast_recovery": efr})],
        metrics={"interval": "1ms"},
    )


def recovery_ms(res: aqmlab.Result, from_s: float = 4.0, rate_bps: float = 10e9, frac: float = 0.95) -> float:
    """Milliseconds after `from_s` until every 1 ms interval of the next 10 carries
    at least `frac` of `rate_bps` (NaN if never)."""
    qts = res.queue_timeseries
    qts = qts[qts["queue"] == "bottleneck"]
    t = qts["t_ns"].to_numpy(dtype=np.int64)
    dep = np.diff(qts["departed_pkts"].to_numpy(dtype=float), prepend=0.0)
    need = frac * rate_bps * 1e-3 / PKT_BITS
    idx = np.nonzero(t > from_s * 1e9)[0]
    for i in idx[:-10]:
        if (dep[i : i + 10] >= need).all():
            return (t[i] - 1_000_000) / 1e6 - from_s * 1e3
    return float("nan")


def jain(x: np.ndarray) -> float:
    return float(x.sum() ** 2 / (len(x) * (x**2).sum()))


def measure(res: aqmlab.Result, warmup_s: float) -> dict[str, float]:
    fl = res.flows
    good = fl["goodput_bps"].to_numpy(dtype=float)
    qts = res.queue_timeseries
    qts = qts[qts["queue"] == "bottleneck"]
    t = qts["t_ns"].to_numpy(dtype=float) * 1e-9
    after = t > warmup_s
    backlog = qts["backlog_pkts"].to_numpy(dtype=float)[after]
    q = res.queue()
    pr = res.probes
    st = pr[(pr["probe"] == "stage") & (pr["t_s"] > warmup_s)]["value"].to_numpy(dtype=float)
    return {
        "fr": float((st == 1).mean()),
        "ai": float((st >= 2).mean()),
        "released": float((st == 0).mean()),
        "util": float(q.get("utilization", float("nan"))),
        "q_mean": float(backlog.mean()),
        "q_std": float(backlog.std()),
        "q_max": float(backlog.max()),
        "drops": float(q.get("drops", q.get("dropped_pkts", float("nan")))),
        "jain": jain(good),
    }


def _seconds(text: str) -> float:
    """'500ms' or '1s' in seconds (the script's own two units)."""
    if text.endswith("ms"):
        return float(text[:-2]) * 1e-3
    if text.endswith("s"):
        return float(text[:-1])
    raise SystemExit(f"--warmup: give a time like '500ms' or '1s' (got {text!r})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", default="10,50,100")
    ap.add_argument("--rtt-us", default="40,100,200,300,400")
    ap.add_argument("--w", type=float, default=2.0)
    ap.add_argument("--fb-range-w", type=float, default=None)
    ap.add_argument("--efr", action="store_true", help="extra fast recovery on")
    ap.add_argument("--no-fbhat", action="store_true")
    ap.add_argument("--duration", default="3s")
    ap.add_argument("--warmup", default="1s")
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--hotspot", action="store_true",
                    help="instead: the 0.5G hotspot's recovery time after 4 s, Fb-hat and extra fast recovery on/off")
    a = ap.parse_args()
    if a.hotspot:
        print("fbhat\tefr\tseed\trecovery_ms")
        for fbhat in (True, False):
            for efr in (False, True):
                for seed in range(1, a.seeds + 1):
                    ms = recovery_ms(aqmlab.run(hotspot(efr=efr, fbhat=fbhat, seed=seed)))
                    print(f"{fbhat}\t{efr}\t{seed}\t{ms:.0f}", flush=True)
        return
    warm_s = _seconds(a.warmup)
    print("N\trtt_us\tseed\tutil\tq_mean\tq_std\tq_max\tdrops\tjain\tFR\tAI+HAI\treleased\twall_s")
    for n in [int(x) for x in a.n.split(",")]:
        for rtt in [float(x) for x in a.rtt_us.split(",")]:
            for seed in range(1, a.seeds + 1):
                sc = scenario(n, rtt, w=a.w, fb_range_w=a.fb_range_w, efr=a.efr, fbhat=not a.no_fbhat,
                              duration=a.duration, warmup=a.warmup, seed=seed)
                t0 = time.time()
                m = measure(aqmlab.run(sc), warm_s)
                print(f"{n}\t{rtt:g}\t{seed}\t{m['util']:.4f}\t{m['q_mean']:.1f}\t{m['q_std']:.1f}\t{m['q_max']:.0f}\t"
                      f"{m['drops']:.0f}\t{m['jain']:.3f}\t{m['fr']:.2f}\t{m['ai']:.2f}\t{m['released']:.2f}\t"
                      f"{time.time() - t0:.1f}", flush=True)


if __name__ == "__main__":
    main()
