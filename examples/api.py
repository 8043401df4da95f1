"""The Python API: build a scenario in code, run it, look at the results.

    python examples/api.py [OUT_DIR]
"""

import sys

import aqmlab
from aqmlab import Bottleneck, FlowGroup, Scenario

scenario = Scenario(
    name="api-example",
    duration="5s",
    warmup="1s",
    bottleneck=Bottleneck(rate="10Mbps", delay="1ms", buffer="40ms", aqm="step", params={"threshold": "2ms"}),
    flows=[
        FlowGroup(cc="dctcp", rtt="10ms"),
        FlowGroup(cc="cubic", rtt="10ms", ecn="classic", params={"beta_ecn": 0.85}),
    ],
)

# Every default the engine fills in, as TOML (Python restates none of them).
print(scenario.normalized().to_toml())

result = aqmlab.run(scenario)
print(result.flows[["id", "cc", "ecn", "goodput_bps", "retransmits", "marks"]])
print(result.queues[["queue", "subqueue", "sojourn_p50_ms", "sojourn_p99_ms", "mark_rate", "utilization"]])
print("Jain's index:", result.fairness["jain"])

# A variation is one call away; so is a small sweep (cached in .aqmlab-cache/).
deeper = scenario.set("bottleneck.params.threshold", "5ms")
print("p99 sojourn at 5 ms threshold:", aqmlab.run(deeper).queue()["sojourn_ms"]["p99"], "ms")
sweep = aqmlab.sweep(scenario, {"bottleneck.params.threshold": ["1ms", "2ms", "5ms"]}, seeds=2, jobs=1)
print(sweep.stats[sweep.stats["metric"] == "queues.bottleneck.sojourn_ms.p99"])

if len(sys.argv) > 1:
    files = result.save(sys.argv[1])  # summary.json, Parquet tables, plots/, report.html
    print("wrote", files["report"])
