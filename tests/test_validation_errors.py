"""Every validation error: one line on stderr, naming field, value and what is
allowed, exit code 2, no traceback, nothing run or written."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import cli

BASE = """
name = "bad"
duration = "10s"
warmup = "2s"

[bottleneck]
rate = "10Mbps"
aqm = "fifo"

[[flows]]
cc = "cubic"
rtt = "20ms"
"""

# (id, edit of BASE, expected start of the message after "aqmlab: error: ", must also contain)
CASES = [
    ("unknown-top-level-key", ("duration =", "durration ="), "unknown key 'durration' (did you mean 'duration'?", "allowed:"),
    ("unknown-nested-key", ('rate = "10Mbps"', 'rtae = "10Mbps"'), "bottleneck: unknown key 'rtae' (did you mean 'rate'?", "allowed:"),
    ("unknown-aqm", ('aqm = "fifo"', 'aqm = "fifp"'), "bottleneck.aqm: unknown AQM 'fifp' (did you mean 'fifo'?", "allowed: fifo"),
    ("unknown-cc", ('cc = "cubic"', 'cc = "cubci"'), "flows[0].cc: unknown congestion control 'cubci' (did you mean 'cubic'?", "allowed:"),
    ("negative-rate", ('rate = "10Mbps"', 'rate = "-10Mbps"'), "bottleneck.rate: '-10Mbps': a rate cannot be negative", ""),
    ("warmup-longer-than-duration", ('warmup = "2s"', 'warmup = "20s"'), "warmup: 20s must be shorter than duration 10s", ""),
    ("unknown-aqm-parameter", ('aqm = "fifo"', 'aqm = "step"\nparams = { treshold = "5pkt" }'),
     "bottleneck.params: unknown key 'treshold' (did you mean 'threshold'?", "allowed:"),
    ("unknown-ecn", ('rtt = "20ms"', 'rtt = "20ms"\necn = "l4"'), "flows[0].ecn: unknown ECN setting 'l4' (did you mean 'l4s'?", "allowed:"),
    ("missing-unit", ('duration = "10s"', "duration = 10"), "duration: '10' needs a unit", "units: ns, us"),
    # No serde or Rust type names ("expected u32", "untagged enum Raw") reach the user.
    ("fractional-count", ('rtt = "20ms"', 'rtt = "20ms"\ncount = 1.5'),
     "flows[0].count: '1.5' is not allowed here: expected a whole number, 0 or more", ""),
    ("negative-count", ('rtt = "20ms"', 'rtt = "20ms"\ncount = -1'),
     "flows[0].count: '-1' is not allowed here: expected a whole number, 0 or more", ""),
    ("unit-field-given-a-boolean", ('duration = "10s"', "duration = true"), "duration: expected text with a unit", "'5ms'"),
    ("list-given-text", ('[bottleneck]\nrate = "10Mbps"\naqm = "fifo"\n\n[[flows]]\ncc = "cubic"\nrtt = "20ms"',
                         'flows = "x"\n[bottleneck]\nrate = "10Mbps"'),
     "flows: 'x' is not allowed here: expected a list", ""),
    ("number-param-given-text", ('rtt = "20ms"', 'rtt = "20ms"\nparams = { beta = "x" }'),
     "flows[0].params.beta: 'x' is not allowed here: expected a number", ""),
    # No silent rounding where the unit is discrete; only documented spellings.
    ("fractional-packets", ('aqm = "fifo"', 'aqm = "fifo"\nbuffer = "1.5pkt"'),
     "bottleneck.buffer: '1.5pkt' is not a whole number of packets", "never rounds"),
    ("fractional-bps", ('rate = "10Mbps"', 'rate = "0.5bps"'), "bottleneck.rate: '0.5bps' is not a whole number of bit/s", ""),
    ("ared-max-th-not-above-min-th", ('aqm = "fifo"', 'aqm = "ared"\nparams = { min_th = 8, max_th = 4 }'),
     "bottleneck.params.max_th: 4 is not allowed: must be greater than min_th (8 packets)", ""),
    ("goodput-interval-not-a-multiple", ('rtt = "20ms"', 'rtt = "20ms"\n\n[metrics]\ninterval = "500ms"\ngoodput_interval = "1250ms"'),
     "metrics.goodput_interval: 1250ms is not allowed here", "multiple of metrics.interval (500ms)"),
    ("step-zero-threshold-in-time", ('aqm = "fifo"', 'aqm = "step"\nparams = { threshold = "0s" }'),
     "bottleneck.params.threshold: must be positive", ""),
    ("step-zero-threshold-in-packets", ('aqm = "fifo"', 'aqm = "step"\nparams = { threshold = "0pkt" }'),
     "bottleneck.params.threshold: must be positive", ""),
    ("undocumented-packet-unit", ('aqm = "fifo"', 'aqm = "fifo"\nbuffer = "1000p"'), "bottleneck.buffer: '1000p' is not a buffer size", ""),
    ("early-hand-off-without-lookahead", ('rtt = "20ms"', 'rtt = "20ms"\n\n[engine]\nlookahead = false\nearly_hand_off = true'),
     "engine.early_hand_off: true is one of the lookahead shortcuts", "engine.lookahead = true only"),
    ("early-hand-off-not-a-bool", ('rtt = "20ms"', 'rtt = "20ms"\n\n[engine]\nearly_hand_off = "auto"'),
     "engine.early_hand_off: 'auto' is not allowed here", ""),
]  # fmt: skip


def _write(tmp_path: Path, edit: tuple[str, str]) -> Path:
    old, new = edit
    assert old in BASE
    p = tmp_path / "bad.toml"
    p.write_text(BASE.replace(old, new, 1))
    return p


def _assert_one_line_error(proc, expected: str, also: str) -> None:  # type: ignore[no-untyped-def]
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    prefix = "aqmlab: error: "
    assert lines[0].startswith(prefix + expected), lines[0]
    assert also in lines[0]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("command", ["validate", "run"])
def test_validation_error_is_one_line_exit_2(case, command: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _, edit, expected, also = case
    f = _write(tmp_path, edit)
    out = tmp_path / "out"
    proc = cli(command, str(f), *(["--out", str(out)] if command == "run" else []), cwd=tmp_path)
    _assert_one_line_error(proc, expected, also)
    assert not out.exists(), "nothing may be written for an invalid scenario"
    assert proc.stdout == ""


def test_toml_syntax_error_is_one_line_exit_2(tmp_path: Path) -> None:
    f = tmp_path / "broken.toml"
    f.write_text('duration = "10s"\n[bottleneck\nrate = "1Mbps"\n')
    for command in ("validate", "run"):
        proc = cli(command, str(f), cwd=tmp_path)
        _assert_one_line_error(proc, f"{f}: invalid TOML: ", "line 2")


def test_missing_file_is_one_line_exit_2(tmp_path: Path) -> None:
    proc = cli("run", str(tmp_path / "nope.toml"), cwd=tmp_path)
    _assert_one_line_error(proc, f"{tmp_path / 'nope.toml'}: no such file", "")


def test_validate_only_validates(tmp_path: Path) -> None:
    f = tmp_path / "ok.toml"
    f.write_text(BASE)
    proc = cli("validate", str(f), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"{f}: ok"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.toml"]
    shown = cli("validate", str(f), "--show", cwd=tmp_path)
    assert 'buffer = "100ms"' in shown.stdout  # the engine's default, shown, not restated in Python


def test_bad_set_override_is_a_validation_error(tmp_path: Path) -> None:
    f = tmp_path / "ok.toml"
    f.write_text(BASE)
    proc = cli("validate", str(f), "--set", "bottleneck.aqm=codle", cwd=tmp_path)
    _assert_one_line_error(proc, "bottleneck.aqm: unknown AQM 'codle'", "allowed:")
    ok = cli("validate", str(f), "--set", "bottleneck.aqm=step", "--set", "flows[0].count=3", "--show", cwd=tmp_path)
    assert ok.returncode == 0 and 'aqm = "step"' in ok.stdout and "count = 3" in ok.stdout


def test_durations_are_exact_end_to_end(tmp_path: Path) -> None:
    f = tmp_path / "s.toml"
    f.write_text(BASE.replace('duration = "10s"', 'duration = "0.3s"').replace('warmup = "2s"', 'warmup = "0.1s"'))
    proc = cli("run", str(f), "--out", str(tmp_path / "o"), "-q")
    assert proc.returncode == 0, proc.stderr
    import json

    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert (s["duration_s"], s["warmup_s"]) == (0.3, 0.1)


def test_wrong_kind_of_file_names_the_right_command(tmp_path: Path) -> None:
    from conftest import EXAMPLES

    for cmd in ("validate", "run"):
        proc = cli(cmd, str(EXAMPLES / "sweep.toml"), cwd=tmp_path)
        assert proc.returncode == 2 and "this is a sweep file" in proc.stderr and "aqmlab sweep" in proc.stderr
    proc = cli("sweep", str(EXAMPLES / "dumbbell.toml"), cwd=tmp_path)
    assert proc.returncode == 2 and "this is a scenario" in proc.stderr and "aqmlab run" in proc.stderr


def test_binary_file_is_one_line_exit_2(tmp_path: Path) -> None:
    f = tmp_path / "blob.toml"
    f.write_bytes(b"\xff\xfe\x00binary\x80")
    for cmd in ("validate", "run", "sweep"):
        proc = cli(cmd, str(f), cwd=tmp_path)
        _assert_one_line_error(proc, f"{f}: not a text file", "UTF-8")
